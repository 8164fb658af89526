"""Every command that scores with encoders (``extract``, ``serve``, ``rerank``, ``export-ranker``, ``embed``) reads
``--encoder NAME[=PATH]`` by one grammar (``ltrfeat.encoders.spec.parse_encoder_specs``): the same texts
are accepted and refused with the same one-line error, before any model or table is loaded."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from ltrfeat.cli.main import cli


def _commands(tmp_path) -> dict[str, list[str]]:
    pairs = tmp_path / "pairs.tsv"
    pairs.write_text("query\tdocid\tdoc\tlabel\na b\td1\ta c\t1\na b\td2\tc d\t0\n")
    nope = str(tmp_path / "nope.txt")  # never read: the --encoder texts are refused first
    return {
        "extract": ["extract", "--pairs", str(pairs), "--out", str(tmp_path / "out.letor")],
        "serve": ["serve", "--ranker", nope],
        "rerank": ["rerank", nope, "--run", nope, "--queries", nope, "--docs", nope, "--out", str(tmp_path / "o")],
        "export-ranker": ["export-ranker", nope, "--to", "es-ltr", "--out", str(tmp_path / "o.json")],
        "embed": ["embed", "--docs", nope, "--index", "i", "--out", str(tmp_path / "o.ndjson")],
    }


@pytest.mark.parametrize(
    "specs, message",
    [
        (["clsm"], "error: encoder 'clsm' needs a model file"),
        (["clsm="], "error: encoder 'clsm=' has an empty path"),
        (["klingon=x.ltrenc"], "error: unknown encoder 'klingon=x.ltrenc'"),
        (["clsm--x=y"], "error: unknown encoder 'clsm--x=y'"),
        (["clsm=nope.ltrenc"], "error: nope.ltrenc: --encoder clsm: no such file or directory"),
        (["sbert", "sbert"], "error: --encoder sbert is given twice"),
    ],
)
def test_every_scoring_command_refuses_a_bad_encoder_alike(tmp_path, monkeypatch, specs, message):
    monkeypatch.chdir(tmp_path)
    for command, args in _commands(tmp_path).items():
        given = [word for spec in specs for word in ("--encoder", spec)]
        result = CliRunner().invoke(cli, args + given)
        assert result.exit_code == 2, (command, result.output)
        assert result.output.splitlines()[0].startswith(message), (command, result.output)
        assert not any(p.name.startswith("o") for p in tmp_path.iterdir()), command


def test_a_labelled_name_and_a_zero_shot_kind_alone_pass_the_grammar(tmp_path):
    bundle = tmp_path / "m.ltrenc"
    bundle.write_text("")
    for command, args in _commands(tmp_path).items():
        result = CliRunner().invoke(cli, [*args, "--encoder", f"clsm-gen={bundle}", "--encoder", "sbert"])
        assert "--encoder" not in result.output and "unknown encoder" not in result.output, (command, result.output)
