"""Issue 21 (part A) regressions: each test reproduces one reported defect through the CLI."""

from __future__ import annotations

import math

import numpy as np
import pytest
from click.testing import CliRunner

from ltrfeat.cli.main import cli
from ltrfeat.core.letor import write_letor
from builders import small, synthetic


def run(*args):
    return CliRunner().invoke(cli, [str(a) for a in args])


def one_line_error(result, *needles):
    """Exit 2, a single ``error:`` line holding every needle, no traceback."""
    assert result.exit_code == 2, (result.exit_code, result.output, result.exception)
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), result.output
    assert "Traceback" not in result.output
    for needle in needles:
        assert str(needle) in lines[0], (needle, lines[0])
    return lines[0]


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("rank")
    small("lightgbm", n_estimators=10, early_stopping_rounds=0).fit(synthetic(seed=0, n_features=4)).save(tmp / "m.txt")
    return tmp / "m.txt"


def test_evaluate_with_label_1024_reports_the_exact_ndcg(model, tmp_path):
    # before: 2^1024 overflowed, query a's NDCG was NaN and dropped, the tool printed query b's value alone
    data = synthetic(seed=3, n_queries=2, docs=2, n_features=4)
    data.label[:] = [1024, 0, 1, 0]
    path = tmp_path / "big.letor"
    write_letor(path, data)
    from ltrfeat.rankers.lambdamart import LambdaMART

    scores = LambdaMART.load(model).predict(data)
    expected = []
    for q in (slice(0, 2), slice(2, 4)):
        lab, sc = data.label[q], scores[q]
        first = lab[np.argmax(sc)] if sc[0] != sc[1] else lab[0]
        expected.append(1.0 if first > 0 else 1 / math.log2(3))
    res = run("evaluate", model, path, "--metrics", "ndcg@10", "--json")
    assert res.exit_code == 0, res.output
    import json

    summary = json.loads(res.output)
    assert summary["n_evaluated"] == 2
    assert summary["metrics"]["ndcg@10"] == pytest.approx(np.mean(expected), rel=1e-12)


def test_evaluate_negative_label_is_one_line(model, tmp_path):
    data = synthetic(seed=3, n_queries=2, docs=3, n_features=4)
    data.label[1] = -1
    path = tmp_path / "neg.letor"
    write_letor(path, data)
    one_line_error(run("evaluate", model, path), path, "row 2 has label -1")


@pytest.mark.parametrize("label", [1100, 1e300])
def test_train_ranker_absurd_labels_are_one_line(tmp_path, label):
    data = synthetic(seed=0, n_queries=5, docs=4, n_features=3)
    data.label[6] = label
    path = tmp_path / "train.letor"
    write_letor(path, data)
    out = tmp_path / "m.txt"
    one_line_error(run("train-ranker", path, "--out", out, "--n-estimators", "2"), path, "above 1023", "row 7")
    assert not out.exists()


def test_cr_only_line_endings_are_refused_not_read_as_one_row(tmp_path):
    # before: validate said "ok: 1 rows" for this 4-row file, convert raised a ValueError traceback
    path = tmp_path / "mac.letor"
    path.write_bytes(b"".join(b"%d qid:1 1:0.5 #docid = d%d\r" % (i % 2, i) for i in range(4)))
    one_line_error(run("letor", "validate", path), f"{path}:1:", "carriage return")
    out = tmp_path / "out.svm"
    one_line_error(run("letor", "convert", path, out, "--to", "svmlight"), f"{path}:1:")
    assert not out.exists()


def test_extract_refuses_to_append_ids_of_ten_digits(tmp_path):
    # before: extract wrote ids of 1e9 and more that its own validate rejects
    from pathlib import Path

    data = Path(__file__).resolve().parents[2] / "data"
    lines = (data / "test.letor").read_text().splitlines()[:40]
    path = tmp_path / "wide.letor"
    path.write_text("".join(line.replace(" #", " 999999999:1 #", 1) + "\n" for line in lines))
    out = tmp_path / "out.letor"
    one_line_error(
        run(
            "extract",
            path,
            "--queries",
            data / "queries.tsv",
            "--docs",
            data / "docs.tsv",
            "--lexical",
            "bm25",
            "--out",
            out,
        ),
        "above 999999999",
    )
    assert not out.exists()


def test_feature_ranges_beyond_the_file_are_refused(tmp_path):
    from ltrfeat.core.dataset import FeatureMap

    fmap = FeatureMap.dense(46)
    with pytest.raises(KeyError, match="beyond"):
        fmap.resolve("1-99")
    with pytest.raises(KeyError, match="beyond"):
        fmap.resolve("5-99")
    assert len(fmap.resolve("1-46")) == 46


def test_column_mapping_of_only_commas_is_refused():
    from ltrfeat.core.errors import TextTableError
    from ltrfeat.core.text import parse_column_mapping

    with pytest.raises(TextTableError, match="names no column"):
        parse_column_mapping(",,,")
    assert parse_column_mapping("") == {}


def test_damaged_gzip_and_unwritable_output_are_one_line(tmp_path, model):
    import gzip

    good = gzip.compress(b"1 qid:1 1:0.5\n0 qid:1 1:0.1\n" * 50)
    cut = tmp_path / "cut.letor.gz"
    cut.write_bytes(good[: len(good) // 2])  # before: a bare "Aborted!" (EOFError caught by click)
    one_line_error(run("letor", "validate", cut), cut, "gzip data is damaged")
    method = tmp_path / "method.letor.gz"
    method.write_bytes(good[:2] + b"\x07" + good[3:])  # before: BadGzipFile traceback
    one_line_error(run("letor", "validate", method), method, "gzip data is damaged")
    src = tmp_path / "ok.letor"
    src.write_bytes(gzip.decompress(good))
    blocker = tmp_path / "file"
    blocker.write_text("x")
    one_line_error(run("letor", "convert", src, blocker / "sub" / "out.letor"), "cannot write the output")


def test_bad_param_values_are_one_line(tmp_path):
    path = tmp_path / "t.letor"
    write_letor(path, synthetic(seed=0, n_queries=5, docs=4, n_features=3))
    for param, needle in (("num_leaves=abc", "num_leaves"), ("objective=nonsense", "nonsense")):
        one_line_error(run("train-ranker", path, "--out", tmp_path / "m.txt", "--param", param), needle, "--param")
    one_line_error(
        run("train-ranker", path, "--out", tmp_path / "m.json", "--engine", "xgboost", "--param", "learning_rate=x"),
        "learning_rate",
    )
    assert not (tmp_path / "m.txt").exists() and not (tmp_path / "m.json").exists()


def test_flipped_byte_in_encoder_weights_is_refused(tmp_path):
    # before: a flipped byte in an .ltrenc weight file loaded silently (no weight checksum)
    from builders import tiny_encoder as make

    path = tmp_path / "m.ltrenc"
    make("dssm").save(path)
    raw = bytearray(path.read_bytes())
    raw[-5] ^= 0x01  # inside the last tensor's bytes; the safetensors layout stays valid
    bad = tmp_path / "bad.ltrenc"
    bad.write_bytes(bytes(raw))
    one_line_error(run("explain", bad, "red hose", "garden hose"), bad, "does not match its SHA-256")
    assert run("explain", path, "red hose", "garden hose").exit_code == 0


def test_serve_checks_encoder_paths_and_names_before_starting(model, tmp_path):
    missing = tmp_path / "nope.ltrenc"
    one_line_error(run("serve", "--ranker", model, "--encoder", f"clsm={missing}"), missing, "--encoder clsm")
    from builders import tiny_encoder as make

    path = tmp_path / "m.ltrenc"
    make("dssm").save(path)
    one_line_error(run("serve", "--ranker", model, "--encoder", f"dssm={path}"), "encoder dssm is given")
