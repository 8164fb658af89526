"""The Home Depot semi-synthetic click benchmark: its click simulation, and its whole code path on a tiny generated
stand-in for the Home Depot pairs (slow)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from benchmarks import clicks_homedepot  # noqa: E402


def _stand_in():
    """A generated world's judged pairs (grades 0..3 doubled to Home Depot's 0..6) and titles."""
    from ltrfeat.datasets.synth import generate_world

    world = generate_world(seed=0, n_queries=120, n_docs=300, n_click_queries=10)
    pairs = world.judged[["qid", "query", "docid", "doc", "label"]].assign(label=lambda f: 2 * f["label"])
    return pairs.reset_index(drop=True), world.docs.rename(columns={"title": "doc"})[["docid", "doc"]]


def test_simulated_clicks_follow_the_examination_curve():
    pairs = pd.DataFrame(
        {
            "qid": np.repeat(np.arange(40), 10).astype(str),
            "query": np.repeat([f"q{i}" for i in range(40)], 10),
            "docid": [f"d{i}" for i in range(400)],
            "label": np.tile([6, 0, 3, 1, 6, 2, 0, 4, 5, 1], 40),
        }
    )
    scores = np.random.default_rng(1).random(400)
    log = clicks_homedepot.simulate_clicks(pairs, scores, sessions=200, depth=8, jitter=0.5, eta=1.0, noise=1.0, seed=0)
    assert len(log) == 40 * 200 * 8 and log["session"].nunique() == 40 * 200
    # noise 1: every examined result is clicked, so the click rate at rank r is r^-1
    rate = log.groupby("position")["clicked"].mean().to_numpy()
    assert np.allclose(rate, 1 / np.arange(1, 9), rtol=0.1)
    # noise 0: a grade-0 result is never clicked, wherever it is shown
    log = clicks_homedepot.simulate_clicks(pairs, scores, sessions=5, depth=10, jitter=0.5, eta=1.0, noise=0.0, seed=0)
    grade = pairs.set_index("docid")["label"]
    assert not log.loc[grade.loc[log["docid"]].to_numpy() == 0, "clicked"].any()
    assert log.loc[grade.loc[log["docid"]].to_numpy() == 6, "clicked"].any()


def test_click_and_test_queries_are_disjoint():
    pairs, _ = _stand_in()
    click, test = clicks_homedepot.split_queries(pairs, 100)
    assert len(click) == len(test) == 50 and not click & test


@pytest.mark.slow
def test_the_benchmark_runs_on_a_generated_stand_in(tmp_path):
    pairs, docs = _stand_in()
    figures = clicks_homedepot.run(
        pairs,
        docs,
        n_queries=120,
        seeds=[0],
        work=tmp_path,
        setup=clicks_homedepot.Setup(
            {**clicks_homedepot.CLICKS, "sessions": 40},
            {"conv": 32, "out": 16},
            {"epochs": 1, "batch_size": 256},
            resamples=50,
        ),
        log=lambda line: None,
    )
    assert figures["queries"] == {"click": 60, "test": 60} and figures["test_queries_scored"] <= 60
    assert set(figures["criterion"]) == {"ipw", "pbm"}
    assert set(figures["ndcg@10"]) >= {"lexical", *(f"lexical+clsm-{c}" for c in ("none", "ipw", "pbm"))}
    curve = figures["seeds"]["0"]["propensity"]
    assert all(abs(e) <= 0.15 for e in curve["relative_error"][:3])  # the top of the curve, from a small log
    assert all(r["p_holm"] >= r["p_randomization"] for r in figures["comparisons"])
    lines = clicks_homedepot.markdown_table(figures)
    assert lines[-1].startswith("| harvested, seed 0 |")
