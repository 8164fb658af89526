"""Ablation report: contract of report.json, reproducibility, Markdown content, plots, atomic directory."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from ltrfeat.core.errors import LtrfeatError
from ltrfeat.experiments import report
from ltrfeat.experiments.feature_sets import plan_feature_sets
from ltrfeat.experiments.ablation import run_ablation
from ltrfeat.experiments.summary import summarise
from ltrfeat.experiments.summary_types import Summary
from ltrfeat.experiments.report import headline_table, significance_mark, write_report
from builders import FAST, planted_folds


def _ablation(seeds=(0, 1)):
    folds = planted_folds(n_folds=3, queries_per_fold=30)
    sets = plan_feature_sets(folds[0].train.feature_map, base="1-3", neural={"clsm": "clsm_title_cos"})
    result = run_ablation(folds, sets, seeds=seeds, ranker_params=FAST, progress=False)
    return result, summarise(result, n_resamples=2000)


@pytest.fixture(scope="module")
def ablation():
    return _ablation()


@pytest.fixture(scope="module")
def written(ablation, tmp_path_factory):
    out = tmp_path_factory.mktemp("reports") / "report"
    return write_report(*ablation, out)


def test_report_files(written):
    assert sorted(p.name for p in written.iterdir()) == [
        ".ltrfeat-output",
        "deltas.png",
        "importance.png",
        "metrics.png",
        "per_query.tsv",
        "report.html",
        "report.json",
        "report.md",
        "timings.json",
    ]
    for png in ("deltas.png", "importance.png", "metrics.png"):
        assert (written / png).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert not [p for p in written.parent.iterdir() if p.name.startswith(".")]  # no temp dirs left


def test_a_saved_report_renders_as_it_was_written(written, ablation):
    """report.json read back (``Summary.from_report``) gives the summary's objects and the same report.md."""
    result, summary = ablation
    data = json.loads((written / "report.json").read_text())
    again = Summary.from_report(data)
    assert again.comparisons == summary.comparisons and again.baseline == summary.baseline
    assert [r.to_dict() for r in again.results] == data["results"]
    assert report.report_markdown(result, again, data=data) == (written / "report.md").read_text()


def test_report_json_contract(written, ablation):
    result, _ = ablation
    data = json.loads((written / "report.json").read_text())
    assert {"config", "results", "comparisons"} <= set(data)
    cfg = data["config"]
    assert cfg["seeds"] == [0, 1] and cfg["engine"] == "lightgbm" and cfg["baseline"] == "lexical"
    assert cfg["versions"]["lightgbm"] and cfg["conventions"]["gain"] == "exp2"
    assert cfg["statistics"]["bootstrap"]["n_resamples"] == 2000
    for r in data["results"]:
        assert isinstance(r["feature_set"], str) and isinstance(r["mean"], float)
        assert len(r["ci95"]) == 2 and isinstance(r["n_queries"], int)
    names = {r["feature_set"] for r in data["results"]}
    assert names == {"lexical", "lexical+clsm", "clsm_title_cos", "bm25_title"}
    types = {
        "baseline": str,
        "variant": str,
        "metric": str,
        "delta": float,
        "relative": float,
        "p_ttest": float,
        "p_randomization": float,
        "p_holm": float,
        "wins": int,
        "ties": int,
        "losses": int,
    }
    assert len(data["comparisons"]) == len(result.metrics)
    for c in data["comparisons"]:
        for key, kind in types.items():
            assert isinstance(c[key], kind), key
    assert all("seconds" not in r for r in data["runs"])
    assert data["seed_effect"] == {"lexical": False, "lexical+clsm": False}
    timings = json.loads((written / "timings.json").read_text())
    assert len(timings["runs"]) == len(data["runs"]) and timings["total_seconds"] > 0


def test_report_json_is_identical_on_rerun(written, tmp_path):
    again = write_report(*_ablation(), tmp_path / "again")
    assert (again / "report.json").read_bytes() == (written / "report.json").read_bytes()
    assert (again / "per_query.tsv").read_bytes() == (written / "per_query.tsv").read_bytes()
    assert (again / "report.md").read_text() == (written / "report.md").read_text()
    assert (again / "report.html").read_bytes() == (written / "report.html").read_bytes()


def test_per_query_tsv_matches_result(written, ablation):
    result, _ = ablation
    table = pd.read_csv(written / "per_query.tsv", sep="\t", dtype={"qid": str})
    assert list(table.columns) == list(result.per_query.columns)
    assert len(table) == len(result.per_query)
    pd.testing.assert_series_equal(table["ndcg@10"], result.per_query["ndcg@10"].astype(float), rtol=1e-9)


def test_report_markdown_states_the_setup(written):
    text = (written / "report.md").read_text()
    for needle in [
        "Fold1",
        "generated part 1",
        "**Seeds**: 0, 1",
        "lightgbm LambdaMART",
        '"n_estimators": 30',
        "NDCG gain 2^rel-1",
        "tied scores: expected value over every order of the tied documents",
        "without a relevant document excluded",
        "randomisation (sign-flip) test",
        "Holm-adjusted",
        "adjusted p < 0.05",
        "adjusted p < 0.01",
        "percentile bootstrap, 95% level, 2000 resamples",
        "smallest attainable",
        "`lexical+clsm`",
        "## Single features",
        "the seeds changed nothing for `lexical`, `lexical+clsm`",
        "clsm_title_cos",
        "![per-query deltas](deltas.png)",
        "W/T/L",
    ]:
        assert needle in text, needle
    assert "(+" in text and "**" in text.split("## Rankers")[1]  # the planted lift is marked


def test_headline_table_marks_the_lift(ablation):
    lines = headline_table(*ablation)
    assert lines[0].split() == ["feature", "set", "ndcg@1", "ndcg@3", "ndcg@10"]
    lift = next(line for line in lines if line.startswith("lexical+clsm"))
    assert lift.count("**") == 3 and "(+" in lift
    assert any(line.startswith("clsm_title_cos (alone)") for line in lines)


@pytest.mark.parametrize("p, mark", [(0.2, ""), (0.049, "*"), (0.0099, "**"), (None, ""), (float("nan"), "")])
def test_significance_mark(p, mark):
    assert significance_mark(p) == mark


def test_existing_dir_is_refused_or_replaced_atomically(ablation, tmp_path, monkeypatch):
    out = tmp_path / "rep"
    out.mkdir()
    (out / "old.txt").write_text("previous")
    with pytest.raises(LtrfeatError, match="report directory exists and is not empty"):
        write_report(*ablation, out)

    def boom(*args, **kwargs):
        raise RuntimeError("disk full")

    with pytest.raises(LtrfeatError, match="no .ltrfeat-output marker"):
        write_report(*ablation, out, overwrite=True)  # not a directory ltrfeat wrote
    (out / ".ltrfeat-output").write_text("{}")
    monkeypatch.setattr(report, "plot_importance", boom)
    with pytest.raises(RuntimeError):
        write_report(*ablation, out, overwrite=True)
    assert sorted(p.name for p in out.iterdir()) == [".ltrfeat-output", "old.txt"]  # old report untouched
    assert sorted(p.name for p in tmp_path.iterdir()) == ["rep"]  # temp dir removed
    with pytest.raises(RuntimeError):
        write_report(*ablation, tmp_path / "new")
    assert not (tmp_path / "new").exists()
    monkeypatch.undo()
    write_report(*ablation, out, overwrite=True)
    assert (out / "report.md").exists() and not (out / "old.txt").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["rep"]


def test_report_without_comparisons(tmp_path):
    folds = planted_folds(n_folds=2, queries_per_fold=10)
    sets = [
        s for s in plan_feature_sets(folds[0].train.feature_map, base="1-3", neural={"c": "4"}) if s.kind == "alone"
    ]
    result = run_ablation(folds, sets, progress=False)
    out = write_report(result, summarise(result, n_resamples=200), tmp_path / "r")
    assert json.loads((out / "report.json").read_text())["comparisons"] == []
    assert sorted(p.name for p in out.glob("*.png")) == []  # the forest plot needs a baseline to compare with
    text = (out / "report.md").read_text()
    assert "metrics.png" not in text and "importance.png" not in text and "## Single features" in text
    assert "no base+neural set to compare" in json.loads((out / "report.json").read_text())["summary"]


def test_selection_report_opens_with_the_verdict_and_shows_every_candidate(tmp_path):
    from ltrfeat.rankers.selection import SelectionConfig

    folds = planted_folds(n_folds=3, queries_per_fold=30)
    sets = plan_feature_sets(folds[0].train.feature_map, base="1-3", neural={"clsm": "clsm_title_cos"})
    result = run_ablation(
        folds, sets, seeds=(0,), ranker_params=FAST, progress=False, selection=SelectionConfig.default("lightgbm")
    )
    out = write_report(result, summarise(result, n_resamples=1000), tmp_path / "report")
    md = (out / "report.md").read_text()
    # the verdict in two sentences first; the rule, the selection cost and the verdict's lines under Model selection
    assert md.startswith("# Feature ablation\n\n**Verdict**: ") and md.index("To ship: `") < md.index("## Setup")
    selection = md.index("## Model selection")
    assert selection < md.index("verdict: recommended ") and selection < md.index("Rule tiered")
    assert selection < md.index("selection cost")
    assert "## Model selection" in md and "`lexical/linear`" in md and "`lexical+clsm/best-single`" in md
    data = json.loads((out / "report.json").read_text())
    assert data["verdict"]["n_folds"] == 3 and set(data["config"]["selection"]["chosen"]) == {"Fold1", "Fold2", "Fold3"}
    # the recommendation is tested against BM25 alone too (same Holm family)
    assert set(data["verdict"]["metrics"][0]["bm25_alone"]) == {"bm25_title"}
    assert "vs bm25_title alone" in md
    per_query = pd.read_csv(out / "per_query.tsv", sep="\t")
    assert {"recommended", "best-single", "lexical/lightgbm"} <= set(per_query["feature_set"])
    # the headline table leaves the candidates to the report
    assert not any("/" in line.split()[0] for line in headline_table(result, summarise(result, n_resamples=500))[1:])
