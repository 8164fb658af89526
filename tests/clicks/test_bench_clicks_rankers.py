"""The click-rankers benchmark end to end on a tiny generated world (slow)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from benchmarks import clicks_rankers  # noqa: E402

TINY = {"n_queries": 60, "n_docs": 300, "n_click_queries": 150}


@pytest.mark.slow
def test_naive_and_unbiased_rankers_are_compared_on_the_judged_queries():
    record, scores = clicks_rankers.world_run("e1.5", 0, world_size=TINY)
    assert set(scores) == {f"{e}-{m}" for e in clicks_rankers.ENGINES for m in ("naive", "unbiased")}
    assert record["shown_rows"] == 10 * record["sessions"] and record["judged_queries"] == 60
    assert all(len(frame) == 60 and frame["qid"].str.startswith("s0:").all() for frame in scores.values())
    rows = clicks_rankers.comparisons({"e1.5": scores}, n_resamples=200)
    assert [(r["world"], r["engine"]) for r in rows] == [("e1.5", "lightgbm"), ("e1.5", "xgboost")]
    assert all(r["p_holm"] >= r["p_randomization"] and r["queries"] == 60 for r in rows)
