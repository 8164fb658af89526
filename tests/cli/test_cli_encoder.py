"""``ltrfeat train-encoder`` end to end on small generated tables."""

from __future__ import annotations

import json

import numpy as np
from click.testing import CliRunner

from ltrfeat.cli.main import cli
from ltrfeat.encoders import Encoder
from builders import make_pairs

FAST = ["--epochs", "2", "--batch-size", "32", "--lr", "0.01", "--threads", "1", "--val-fraction", "0.25"]


def write_table(tmp_path, pairs=None):
    path = tmp_path / "pairs.tsv"
    (make_pairs() if pairs is None else pairs).to_csv(path, sep="\t", index=False)
    return path


def test_help_shows_a_runnable_example():
    result = CliRunner().invoke(cli, ["train-encoder", "--help"])
    assert result.exit_code == 0
    assert "ltrfeat train-encoder" in result.output and "--out" in result.output


def test_trains_and_writes_a_loadable_bundle(tmp_path):
    path, out = write_table(tmp_path), tmp_path / "m.ltrenc"
    args = ["train-encoder", str(path), "--model", "dssm", "--loss", "generalized", "--out", str(out), *FAST]
    result = CliRunner().invoke(cli, [*args, "--json"])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.output.strip().splitlines()[-1])
    assert summary["best_epoch"] >= 1 and len(summary["epochs"]) == 3
    encoder = Encoder.load(out)
    assert encoder.training["params"]["loss"] == "generalized"
    assert encoder.encode(["a b"]).shape == (1, 128)
    assert not (tmp_path / "m.ltrenc.ckpt").exists()  # default checkpoint removed on success


def test_column_mapping_and_resume(tmp_path):
    pairs = make_pairs().rename(columns={"query": "search_term", "doc": "title", "label": "relevance"})
    path, out, ckpt = write_table(tmp_path, pairs), tmp_path / "m.ltrenc", tmp_path / "run.ckpt"
    args = [
        "train-encoder",
        str(path),
        "--columns",
        "query=search_term,doc=title,label=relevance",
        "--model",
        "clsm",
        "--out",
        str(out),
        "--checkpoint",
        str(ckpt),
        *FAST,
    ]
    first = CliRunner().invoke(cli, args)
    assert first.exit_code == 0, first.output
    assert ckpt.exists()
    vectors = Encoder.load(out).encode(["x y z"], side="doc")
    again = CliRunner().invoke(cli, [*args, "--resume", str(ckpt)])
    assert again.exit_code == 0, again.output
    np.testing.assert_array_equal(Encoder.load(out).encode(["x y z"], side="doc"), vectors)


def test_bad_table_gives_one_line_error_and_no_output(tmp_path):
    path = tmp_path / "pairs.tsv"
    path.write_text("qid\tquery\tlabel\nq1\tdrill\t1\n")
    out = tmp_path / "m.ltrenc"
    result = CliRunner().invoke(cli, ["train-encoder", str(path), "--out", str(out), *FAST])
    assert result.exit_code == 2
    assert result.output.startswith("error: ") and len(result.output.strip().splitlines()) == 1
    assert not out.exists()


def test_prints_text_and_json_only_when_asked(tmp_path):
    path, out = write_table(tmp_path), tmp_path / "m.ltrenc"
    result = CliRunner().invoke(cli, ["train-encoder", str(path), "--model", "dssm", "--out", str(out), *FAST])
    assert result.exit_code == 0, result.output
    lines = result.output.strip().splitlines()
    assert not any(line.lstrip().startswith("{") for line in lines)
    assert lines[0].startswith("best epoch ") and "validation NDCG@10 " in lines[0]
    assert lines[1].startswith("  epoch 0: ") and lines[-1] == f"wrote {out}"


def test_too_few_queries_for_the_validation_share_names_the_flag_before_training(tmp_path, monkeypatch):
    from ltrfeat.encoders import training_pairs

    def no_training(*args, **kwargs):
        raise AssertionError("training started")

    monkeypatch.setattr(training_pairs, "prepare_pairs", no_training)
    pairs = make_pairs()
    path = write_table(tmp_path, pairs[pairs["qid"].isin(pairs["qid"].unique()[:4])])
    result = CliRunner().invoke(cli, ["train-encoder", str(path), "--out", str(tmp_path / "m.ltrenc")])
    assert result.exit_code == 2
    (line,) = result.output.strip().splitlines()
    assert "4 queries cannot be split into training and validation" in line
    assert line.endswith("give more queries or --val-fraction 0 (no early stopping)")
