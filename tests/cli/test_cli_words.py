"""The CLI speaks its own option names: errors name the option to use, ``ablate --help`` fits on two screens
in titled sections, and docs/ablate.md holds every option in full."""

from __future__ import annotations

from pathlib import Path

import click
from click.testing import CliRunner

from ltrfeat.cli.main import cli

ROOT = Path(__file__).resolve().parents[2]


def _error(args) -> str:
    res = CliRunner().invoke(cli, args)
    assert res.exit_code == 2, res.output
    return res.output


def test_errors_name_the_command_options(tmp_path):
    table = tmp_path / "pairs.tsv"
    table.write_text("a\tb\n1\t2\n")
    out = _error(["ablate", "--pairs", str(table), "--encoder", "clsm:softmax", "--report", str(tmp_path / "r")])
    assert "map it with --columns query=<column>" in out and "columns={" not in out
    out = _error(
        [
            "ablate",
            "--pairs",
            str(ROOT / "data" / "train.letor"),
            "--encoder",
            "clsm:softmax",
            "--report",
            str(tmp_path / "r"),
        ]
    )
    assert "(LETOR fold directories go to --folds)" in out and "pass the format" not in out
    out = _error(
        [
            "extract",
            str(ROOT / "data" / "test.letor"),
            "--queries",
            str(table),
            "--docs",
            str(ROOT / "data" / "docs.tsv"),
        ]
        + ["--out", str(tmp_path / "x.letor")]
    )
    assert "pick the column with --qid-col <column>" in out and "qid_col=" not in out
    out = _error(["train-ranker", str(ROOT / "data" / "train.letor"), "--out", str(tmp_path / "m.txt")])
    assert "the training data has no feature columns" in out and "None" not in out


def test_library_errors_keep_the_python_words(tmp_path):
    import pytest

    from ltrfeat.core.errors import LtrfeatError
    from ltrfeat.core.text import read_judged_pairs

    table = tmp_path / "pairs.tsv"
    table.write_text("a\tb\n1\t2\n")
    with pytest.raises(LtrfeatError, match=r"map it with columns=\{'query': <column>\}"):
        read_judged_pairs(table)


def test_ablate_help_is_short_and_in_sections():
    res = CliRunner().invoke(cli, ["ablate", "--help"], terminal_width=80)
    assert res.exit_code == 0
    lines = res.output.splitlines()
    assert len(lines) <= 120
    for title in ("Input (one of):", "Text mode (--pairs):", "LETOR mode (--folds):", "Model selection:", "Output:"):
        assert title in lines
    assert "docs/ablate.md" in lines[-1]


def test_docs_ablate_lists_every_option_in_full():
    text = (ROOT / "docs" / "ablate.md").read_text(encoding="utf-8")
    command = cli.commands["ablate"]
    root = click.Context(cli, info_name="ltrfeat", **cli.context_settings)  # as `ltrfeat` makes it: defaults shown
    ctx = click.Context(command, info_name="ablate", parent=root)
    for param in command.params:  # --help aside
        record = param.get_help_record(ctx)
        if record is not None:
            assert f"- `{record[0]}`: {record[1]}" in text, record[0]
