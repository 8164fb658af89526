"""The debiasing benchmark's criterion, computed end to end on tiny generated worlds (slow)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from benchmarks import clicks_debias  # noqa: E402

TINY = {"n_queries": 90, "n_docs": 300, "n_click_queries": 300}


@pytest.mark.slow
def test_the_criterion_holds_on_tiny_worlds(tmp_path):
    figures = clicks_debias.run(
        ["e0", "e1.5"],
        [0],
        work=tmp_path,
        quick_sizes={"conv": 32, "out": 16},
        encoder={"epochs": 1, "batch_size": 256},
        world_size=TINY,
        resamples=100,
        log=lambda line: None,
    )
    criterion = figures["criterion"]
    assert set(criterion) == {"e0", "e1.5"} and set(criterion["e0"]) == {"ipw", "pbm"}
    # no bias: a correction changes nothing significant; steep bias: a correction is not worse than none
    assert all(c["same"] for c in criterion["e0"].values())
    assert all(c["not_worse"] for c in criterion["e1.5"].values())
    curve = figures["worlds"]["e1.5"]["seeds"]["0"]["propensity"]
    assert all(abs(e) <= 0.1 for e in curve["relative_error"][:3])  # the top of the curve, even from a tiny log
    holm = [c["p_holm"] for c in figures["comparisons"]]
    assert all(h >= c["p_randomization"] for h, c in zip(holm, figures["comparisons"]))
