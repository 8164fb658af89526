"""Library errors about a setting, re-worded as the command's option (``cli_settings``)."""

from __future__ import annotations

import pytest

from ltrfeat.core.errors import LtrfeatError, ParameterError, cli_settings


def _raise(fix: str, param: str | None):
    raise ParameterError("bad", fix=fix, param=param)


@pytest.mark.parametrize(
    "fix, param, expected",
    [
        ("give more queries or val_fraction=0 (no early stopping)", "val_fraction", "--val-fraction 0 (no"),
        ("use soft_labels='linear' for graded labels", "soft_labels", "use --soft-labels linear for"),
        ("use freeze_layers=0, or not", "freeze_layers", "use --freeze-layers 0, or"),
    ],
)
def test_the_fix_names_the_option(fix, param, expected):
    with pytest.raises(LtrfeatError) as caught, cli_settings(lambda k, v: f"--{k.replace('_', '-')} {v}", {param}):
        _raise(fix, param)
    assert expected in str(caught.value) and f"{param}=" not in str(caught.value)


def test_other_settings_and_other_words_are_left_alone():
    spell = lambda k, v: f"--encoder-option {k}={v}"  # noqa: E731
    with pytest.raises(LtrfeatError) as caught, cli_settings(spell, {"epochs"}):
        _raise("use conflicts='first'", "conflicts")
    assert str(caught.value) == "bad; use conflicts='first'"
    with pytest.raises(LtrfeatError) as caught, cli_settings(spell, {"epochs"}):
        _raise("e.g. max_epochs=3 or epochs=2", "epochs")
    assert str(caught.value) == "bad; e.g. max_epochs=3 or --encoder-option epochs=2"


def test_a_command_names_its_own_option_in_a_library_fix(tmp_path):
    """``ablate`` on pairs whose qid has two texts: the library says conflicts='first', the command --conflicts first."""
    from pathlib import Path

    from click.testing import CliRunner

    from ltrfeat.cli.main import cli

    lines = (Path(__file__).resolve().parents[2] / "data" / "judged.tsv").read_text().splitlines()[:40]
    lines[2] = lines[2].replace("26 in wiper blades", "wiper blades 26 in")
    (tmp_path / "p.tsv").write_text("\n".join(lines) + "\n")
    result = CliRunner().invoke(
        cli,
        ["ablate", "--pairs", str(tmp_path / "p.tsv"), "--encoder", "dssm:softmax", "--report", str(tmp_path / "r")],
    )
    assert result.exit_code == 2
    error = result.output.strip().splitlines()[-1]
    assert "choose --conflicts first to keep each id's first text" in error and "conflicts=" not in error, error
