"""docs/clicks.md quotes benchmarks/results/clicks_propensity.json (``python benchmarks/clicks_propensity.py``): the
worst errors per exponent, estimator and log (click queries x median sessions per query), the intervals' coverage and the information limit, as
``quoted_lines`` makes them from the file."""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from benchmarks import clicks_propensity  # noqa: E402

FIGURES = json.loads((ROOT / "benchmarks" / "results" / "clicks_propensity.json").read_text())["figures"]


def test_the_results_hold_every_exponent_estimator_size_and_seed():
    runs = FIGURES["runs"]
    for exponent, logs in clicks_propensity.LOGS.items():
        for size, sessions in logs:
            for method in clicks_propensity.ESTIMATORS:
                seeds = sorted(
                    r["seed"]
                    for r in runs
                    if (r["exponent"], r["click_queries"], r["median_sessions"], r["estimator"])
                    == (exponent, size, sessions, method)
                )
                assert seeds == FIGURES["setup"]["seeds"], (exponent, size, sessions, method)
    assert FIGURES["summary"] == clicks_propensity.summary(runs)
    # the bootstrap intervals stay honest: they hold the truth at (about) their level
    inside = [
        v
        for r in runs
        if r["estimator"] == "harvest" and r["truth_inside_interval"]
        for v in r["truth_inside_interval"]
    ]
    assert len(inside) >= 100 and sum(inside) / len(inside) >= 0.9


def test_docs_quote_the_results():
    page = (ROOT / "docs" / "clicks.md").read_text(encoding="utf-8")
    for line in clicks_propensity.quoted_lines(FIGURES):
        assert line in page, f"docs/clicks.md does not quote: {line}"
