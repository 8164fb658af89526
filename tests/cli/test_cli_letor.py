"""``ltrfeat letor info|validate|convert`` through click's CliRunner on small generated files."""

from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner

from ltrfeat.cli.main import cli
from ltrfeat.core.dataset import FeatureMap
from ltrfeat.core.letor import read_letor

LETOR = (
    "2 qid:10 1:0.5 2:1 #docid = A inc = 1\n"
    "0 qid:10 1:0.25 2:0 #docid = B inc = 0\n"
    "0 qid:11 1:0 2:3 #docid = C inc = 0\n"
)


@pytest.fixture
def runner():
    return CliRunner()


@pytest.fixture
def letor_file(tmp_path):
    path = tmp_path / "train.txt"
    path.write_text(LETOR)
    return path


def test_info_text(runner, letor_file):
    result = runner.invoke(cli, ["letor", "info", str(letor_file)])
    assert result.exit_code == 0, result.output
    assert "rows:          3" in result.output
    assert "queries:       2" in result.output
    assert "features:      2 (max id 2" in result.output
    assert "labels:        0: 2, 2: 1" in result.output
    assert "docs/query:    min 1, median 1.5, max 2" in result.output
    assert "queries with no relevant doc (label > 0): 1" in result.output


def test_info_lists_feature_names_by_source(runner, letor_file):
    FeatureMap.dense(1).append(["bm25_title"], source="lexical").save(FeatureMap.sidecar_path(letor_file))
    result = runner.invoke(cli, ["letor", "info", str(letor_file)])
    assert result.exit_code == 0, result.output
    assert "  input: 1:f1\n  lexical: 2:bm25_title\n" in result.output


def test_info_json(runner, letor_file):
    result = runner.invoke(cli, ["letor", "info", str(letor_file), "--json"])
    assert result.exit_code == 0, result.output
    stats = json.loads(result.output)
    assert stats["rows"] == 3 and stats["queries"] == 2 and stats["queries_without_relevant"] == 1
    assert stats["label_histogram"] == {"0": 2, "2": 1} and stats["rows_with_docid"] == 3


def test_validate_ok_and_bad(runner, letor_file, tmp_path):
    result = runner.invoke(cli, ["letor", "validate", str(letor_file)])
    assert result.exit_code == 0 and result.output.startswith("ok: ")
    bad = tmp_path / "bad.txt"
    bad.write_text("1 qid:1 1:1\n1 qid:1 2:1 1:3\n")
    result = runner.invoke(cli, ["letor", "validate", str(bad)])
    assert result.exit_code == 2
    assert result.output.strip().splitlines() == [
        f"error: {bad}:2: feature ids are not increasing (2 then 1); sort each line's features by id and drop duplicates"
    ]


def test_validate_noncontiguous_and_regroup_flag(runner, tmp_path):
    path = tmp_path / "mixed.txt"
    path.write_text("1 qid:a 1:1\n0 qid:b 1:1\n0 qid:a 1:2\n")
    result = runner.invoke(cli, ["letor", "validate", str(path)])
    assert result.exit_code == 2 and "mixed.txt:3: rows of qid 'a' are not contiguous" in result.output
    result = runner.invoke(cli, ["letor", "info", str(path), "--regroup"])
    assert result.exit_code == 0 and "regrouped:     1 queries were not contiguous" in result.output


def test_nan_policy_option(runner, tmp_path):
    path = tmp_path / "nan.txt"
    path.write_text("1 qid:a 1:nan\n")
    assert runner.invoke(cli, ["letor", "validate", str(path)]).exit_code == 2
    assert runner.invoke(cli, ["letor", "validate", str(path), "--nan-policy", "zero"]).exit_code == 0


def test_convert_round_trip_keeps_sidecar(runner, letor_file, tmp_path):
    fmap = FeatureMap.from_ids([1]).append(["bm25_title"], "lexical")
    fmap.save(FeatureMap.sidecar_path(letor_file))
    svm = tmp_path / "out" / "train.svm.gz"
    result = runner.invoke(
        cli, ["letor", "convert", str(letor_file), str(svm), "--to", "svmlight", "--sparse", "--chunk-queries", "1"]
    )
    assert result.exit_code == 0, result.output
    assert (tmp_path / "out" / "train.svm.gz.query").read_text() == "2\n1\n"
    assert FeatureMap.load(FeatureMap.sidecar_path(svm)) == fmap
    back = tmp_path / "back.txt"
    assert runner.invoke(cli, ["letor", "convert", str(svm), str(back)]).exit_code == 0
    original, converted = read_letor(letor_file), read_letor(back)
    np.testing.assert_array_equal(original.X, converted.X)
    assert converted.comment.tolist() == original.comment.tolist()
    assert converted.feature_map == fmap and converted.qid.tolist() == ["1", "1", "2"]


def test_convert_bad_input_leaves_no_output(runner, tmp_path):
    src = tmp_path / "src.txt"
    src.write_text("1 qid:1 1:1\n" * 5 + "1 qid:2 1:x\n")
    out = tmp_path / "out.txt"
    result = runner.invoke(cli, ["letor", "convert", str(src), str(out), "--chunk-queries", "1"])
    assert result.exit_code == 2 and "src.txt:6: value 'x' of feature 1 is not a number" in result.output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["src.txt"]


def test_missing_file_and_svmlight_without_groups(runner, tmp_path):
    result = runner.invoke(cli, ["letor", "info", str(tmp_path / "none.txt")])
    assert result.exit_code == 2 and "none.txt: no such file" in result.output
    path = tmp_path / "plain.svm"
    path.write_text("1 1:1\n")
    result = runner.invoke(cli, ["letor", "info", str(path), "--from", "svmlight"])
    assert result.exit_code == 2 and "svmlight file without a group file" in result.output


@pytest.mark.parametrize("command", [["letor"], ["letor", "info"], ["letor", "validate"], ["letor", "convert"]])
def test_help_shows_an_example(runner, command):
    result = runner.invoke(cli, [*command, "--help"])
    assert result.exit_code == 0 and "ltrfeat letor" in result.output and "Example" in result.output


def test_qrels_from_a_letor_file_evaluate_a_reranked_run(tmp_path):
    from pathlib import Path

    from ltrfeat.core.trec import read_qrels, write_trec_run

    data = Path(__file__).resolve().parents[2] / "data"
    run = CliRunner().invoke
    texts = ["--queries", str(data / "queries.tsv"), "--docs", str(data / "docs.tsv"), "--fields", "title"]
    done = run(cli, ["letor", "qrels", str(data / "test.letor"), "--out", str(tmp_path / "qrels.txt")])
    assert done.exit_code == 0, done.output
    test = read_letor(data / "test.letor")
    lines = (tmp_path / "qrels.txt").read_text().splitlines()
    assert lines == [f"{q} 0 {d} {int(g)}" for q, d, g in zip(test.qid, test.docid, test.label)]
    assert read_qrels(tmp_path / "qrels.txt")["qid"].nunique() == test.n_queries
    # a first-stage run over the test candidates, re-ranked by a lexical ranker, evaluated with those qrels
    write_trec_run(tmp_path / "first.run", test.qid, test.docid, -np.arange(len(test), dtype=float), "first")
    for args in (
        ["extract", str(data / "vali.letor"), *texts, "--lexical", "bm25,tf", "--save-corpus-stats",
         str(tmp_path / "c.npz"), "--out", str(tmp_path / "v.letor")],
        ["train-ranker", str(tmp_path / "v.letor"), "--n-estimators", "10", "--out", str(tmp_path / "r.txt")],
        ["rerank", str(tmp_path / "r.txt"), "--run", str(tmp_path / "first.run"), "--queries",
         str(data / "queries.tsv"), "--docs", str(data / "docs.tsv"), "--corpus-stats", str(tmp_path / "c.npz"),
         "--out", str(tmp_path / "reranked.run")],
    ):  # fmt: skip
        done = run(cli, args)
        assert done.exit_code == 0, done.output
    done = run(cli, ["evaluate", "--qrels", str(tmp_path / "qrels.txt"), "--run", str(tmp_path / "reranked.run"),
                     "--metrics", "ndcg@10,map", "--json"])  # fmt: skip
    assert done.exit_code == 0, done.output
    result = json.loads(done.output)
    assert result["n_queries"] == test.n_queries and not any(result["skipped"].values())
    assert 0.5 < result["metrics"]["ndcg@10"] <= 1


def test_qrels_names_the_line_of_a_row_without_docid(tmp_path):
    source = tmp_path / "s.letor"
    source.write_text("2 qid:1 1:0.5 #docid = a\n# a comment line\n0 qid:1 1:0.1 #docid = b\n\n1 qid:2 1:0.3\n")
    done = CliRunner().invoke(cli, ["letor", "qrels", str(source), "--out", str(tmp_path / "q.txt")])
    assert done.exit_code == 2
    assert done.output.strip().splitlines()[-1].startswith(f"error: {source}:5: no docid in the comment of this row;")
    assert not (tmp_path / "q.txt").exists()
    source.write_text("1.5 qid:1 1:0.5 #docid = a\n")
    done = CliRunner().invoke(cli, ["letor", "qrels", str(source), "--out", str(tmp_path / "q.txt")])
    assert done.exit_code == 2 and f"error: {source}: qrels grades must be integers" in done.output
