"""An ablation's test-fold scores as TREC runs: files, ids, and parity with the report's numbers."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from ltrfeat.cli.main import cli
from ltrfeat.experiments.folds import Fold
from ltrfeat.experiments.feature_sets import plan_feature_sets
from ltrfeat.experiments.ablation import run_ablation
from ltrfeat.experiments.summary import summarise
from ltrfeat.experiments.report import write_report
from ltrfeat.rankers.selection import SelectionConfig
from ltrfeat.experiments._fold_runs import run_slug
from ltrfeat.core.trec import evaluate_run, read_qrels, read_run
from builders import FAST, planted_folds, write_folds

METRICS = ["ndcg@1", "ndcg@3", "ndcg@10", "map"]


def _ablate(folds, seeds, selection=None):
    sets = plan_feature_sets(folds[0].train.feature_map, base="1-3", neural={"clsm": "clsm_title_cos"})
    return run_ablation(
        folds, sets, seeds=seeds, ranker_params=FAST, progress=False, metrics=METRICS, selection=selection
    )


def _per_query_from_run(runs_dir, name):
    return evaluate_run(read_qrels(runs_dir / "qrels.txt"), read_run(runs_dir / name), METRICS, gain="exp2")


def _tied(run_path) -> set:
    """Queries where documents of different grades share a score (the tie-break then matters)."""
    run = read_run(run_path)
    qrels = read_qrels(run_path.parent / "qrels.txt")
    run = run.merge(qrels[["qid", "docid", "label"]], on=["qid", "docid"], how="left")
    grades = run.groupby(["qid", "score"])["label"].nunique()
    return set(grades[grades > 1].index.get_level_values("qid"))


@pytest.fixture(scope="module")
def plain(tmp_path_factory):
    folds = planted_folds(n_folds=3, queries_per_fold=20)
    result = _ablate(folds, seeds=(0, 1))
    out = write_report(
        result, summarise(result, n_resamples=200), tmp_path_factory.mktemp("r") / "report", runs_of=folds
    )
    return folds, result, out


def test_every_set_gets_a_run_per_seed_and_qrels(plain):
    folds, result, out = plain
    runs = out / "runs"
    assert sorted(p.name for p in runs.iterdir()) == sorted(
        [
            "qrels.txt",
            "lexical.run",
            "lexical.seed1.run",
            "lexical_clsm.run",
            "lexical_clsm.seed1.run",
            "clsm_title_cos.run",
            "bm25_title.run",
        ]
    )
    record = json.loads((out / "report.json").read_text())["runs"]
    assert record["files"]["lexical"] == {"lexical.run": [0, 0, 0], "lexical.seed1.run": [1, 1, 1]}
    assert record["docids"] == "the data's docids"
    qrels = read_qrels(runs / "qrels.txt")
    test_rows = sum(len(f.test) for f in folds)
    assert len(qrels) == test_rows and set(qrels["qid"]) == {q for f in folds for q in f.test.qid}
    run = read_run(runs / "lexical.run")
    assert len(run) == test_rows and set(run["tag"]) == {"lexical"}
    assert not [p for p in out.parent.iterdir() if p.name.startswith(".")]


def test_runs_reproduce_the_report_per_query(plain):
    """Mean over the seed runs of trec-style per-query metrics == the report's per-query values,
    on every query with a relevant document and no tied scores."""
    _, result, out = plain
    runs = out / "runs"
    record = json.loads((out / "report.json").read_text())["runs"]
    checked = 0
    for name, files in record["files"].items():
        frames = [_per_query_from_run(runs, f) for f in files]
        tied = set().union(*(_tied(runs / f) for f in files))
        mine = result.per_query[result.per_query["feature_set"] == name].set_index("qid")
        keep = [q for q in mine.index if q not in tied and mine.loc[q, "n_relevant"] > 0]
        assert len(keep) >= 10
        mean = sum(f.loc[keep, METRICS] for f in frames) / len(frames)
        np.testing.assert_allclose(mean.to_numpy(float), mine.loc[keep, METRICS].to_numpy(float), atol=1e-9)
        checked += len(keep)
    assert checked > 100


def test_selection_runs_cover_candidates_and_recommendation(tmp_path):
    folds = planted_folds(n_folds=3, queries_per_fold=20)
    config = SelectionConfig(candidates=("lightgbm", "linear", "best-single"), inner_folds=2)
    result = _ablate(folds, seeds=(0,), selection=config)
    out = write_report(result, summarise(result, n_resamples=200), tmp_path / "report", runs_of=folds)
    files = json.loads((out / "report.json").read_text())["runs"]["files"]
    assert {
        "lexical",
        "lexical+clsm",
        "recommended",
        "best-single",
        "lexical/linear",
        "lexical+clsm/best-single",
    } <= set(files)
    assert files["lexical/linear"] == {"lexical__linear.run": [0, 0, 0]}
    assert files["best-single"] == {"best-single.run": [None, None, None]}
    chosen = result.config["selection"]["recommended"]
    for fold in folds:  # the recommended run holds, per fold, the chosen set's scores
        pick = chosen[fold.name]["feature_set"]
        a = read_run(out / "runs" / "recommended.run")
        b = read_run(out / "runs" / f"{run_slug(pick)}.run")
        qids = set(fold.test.qid)
        a, b = (r[r["qid"].isin(qids)].set_index(["qid", "docid"])["score"].sort_index() for r in (a, b))
        pd.testing.assert_series_equal(a, b)


def test_rows_without_docids_are_numbered_within_their_query(tmp_path):
    folds = [
        Fold(f.name, f.train, f.valid, type(f.test)(f.test.qid, f.test.label, f.test.X, f.test.feature_map), f.origin)
        for f in planted_folds(n_folds=3, queries_per_fold=10)
    ]  # test parts without docids
    result = _ablate(folds, seeds=(0,))
    out = write_report(result, summarise(result, n_resamples=100), tmp_path / "report", runs_of=folds)
    assert json.loads((out / "report.json").read_text())["runs"]["docids"].startswith("r<n>")
    run = read_run(out / "runs" / "lexical.run")
    assert run["docid"].str.fullmatch(r"r\d+").all() and run["docid"].nunique() == 15 and len(run) == 30 * 15
    qrels = read_qrels(out / "runs" / "qrels.txt")
    assert set(zip(qrels["qid"], qrels["docid"])) == set(zip(run["qid"], run["docid"]))


def test_fractional_labels_write_runs_but_no_qrels(tmp_path):
    folds = planted_folds(n_folds=3, queries_per_fold=10)
    result = _ablate(folds, seeds=(0,))
    for f in folds:
        f.test.label[:] = f.test.label + 0.5
    out = write_report(result, summarise(result, n_resamples=100), tmp_path / "report", runs_of=folds)
    record = json.loads((out / "report.json").read_text())["runs"]
    assert record["qrels"] is None and "not integer" in record["qrels_note"]
    assert not (out / "runs" / "qrels.txt").exists() and (out / "runs" / "lexical.run").exists()


def test_cli_write_runs_then_evaluate(tmp_path):
    write_folds(tmp_path / "folds", planted_folds(n_folds=3, queries_per_fold=15), ext=".letor", sidecars=True)
    out = tmp_path / "report"
    runner = CliRunner()
    result = runner.invoke(
        cli,
        [
            "ablate",
            "--folds",
            str(tmp_path / "folds"),
            "--base",
            "1-3",
            "--neural",
            "clsm=clsm_title_cos",
            "--seeds",
            "0",
            "--resamples",
            "200",
            "--no-select",
            "--write-runs",
            "--report",
            str(out),
            "--metrics",
            "ndcg@10",
            "--n-estimators",
            "20",
            "--num-leaves",
            "7",
            "--threads",
            "1",
        ],
    )
    assert result.exit_code == 0, result.output
    table = tmp_path / "pq.tsv"
    result = runner.invoke(
        cli,
        [
            "evaluate",
            "--qrels",
            str(out / "runs" / "qrels.txt"),
            "--run",
            str(out / "runs" / "lexical_clsm.run"),
            "--metrics",
            "ndcg@10",
            "--gain",
            "exp2",
            "--per-query",
            str(table),
        ],
    )
    assert result.exit_code == 0, result.output
    theirs = pd.read_csv(table, sep="\t", comment="#", dtype={"qid": str}).set_index("qid")["ndcg@10"]
    ours = pd.read_csv(out / "per_query.tsv", sep="\t", dtype={"qid": str})
    ours = ours[ours["feature_set"] == "lexical+clsm"].set_index("qid")
    keep = [
        q for q in ours.index if ours.loc[q, "n_relevant"] > 0 and q not in _tied(out / "runs" / "lexical_clsm.run")
    ]
    assert len(keep) > 30
    np.testing.assert_allclose(theirs.loc[keep].to_numpy(float), ours.loc[keep, "ndcg@10"].to_numpy(float), atol=1e-6)
