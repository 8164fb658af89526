"""docs/interleaving.md and the README quote the simulation's figures as benchmarks/results/interleave_power.json
holds them (rerun ``python benchmarks/interleave_power.py`` and update both when it changes)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.interleave_power import quoted, sessions_for  # noqa: E402


def _figures() -> dict:
    return json.loads((ROOT / "benchmarks" / "results" / "interleave_power.json").read_text())["figures"]


def test_the_docs_quote_the_results_file():
    text = (ROOT / "docs" / "interleaving.md").read_text(encoding="utf-8")
    for key, value in quoted(_figures()).items():
        assert value in text, f"docs/interleaving.md does not quote {key} as the results file holds it:\n{value}"
    assert "[" + "TABLE" not in text


def test_the_readme_quotes_the_comparison():
    text = " ".join((ROOT / "README.md").read_text(encoding="utf-8").split())
    assert quoted(_figures())["COMPARISON"] in text


def test_the_results_meet_the_issue():
    figures = _figures()
    for null in figures["null"]:
        assert null["experiments"] >= 500
        for row in null["by_impressions"]:  # the sign test keeps its level (3 standard errors of slack)
            rate = row["interleaving_prefers_a"] + row["interleaving_prefers_b"]
            assert rate <= 0.05 + 3 * (0.05 * 0.95 / null["experiments"]) ** 0.5
    best = max(figures["power"], key=lambda r: r["delta_ndcg"])
    assert best["by_impressions"][-1]["interleaving_prefers_b"] >= 0.8


def test_sessions_for_interpolates_on_log_sessions():
    rows = [{"impressions": 100, "p": 0.5}, {"impressions": 10_000, "p": 1.1}]
    assert sessions_for(rows, "p") == pytest.approx(1000.0)
    assert sessions_for([{"impressions": 100, "p": 0.9}], "p") == 100.0
    assert sessions_for([{"impressions": 100, "p": 0.1}], "p") is None
