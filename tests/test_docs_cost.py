"""docs/performance.md quotes the paired ablate runs of issue 54's cuts as benchmarks/results/paired_*.json hold them
(rerun ``python benchmarks/bench_paired_ablate.py`` and update both when it changes), and those runs kept the report."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.bench_paired_ablate import quoted  # noqa: E402


@pytest.mark.parametrize(
    "name",
    [
        "paired_sbert_ft_demo",
        "paired_sbert_ft_demo_head",
        "paired_sbert_top_onnx_hd300",
        "paired_sbert_ft_demo_per_call",
    ],
)
def test_the_performance_page_quotes_the_paired_run_and_the_report_was_kept(name):
    figures = json.loads((ROOT / "benchmarks" / "results" / f"{name}.json").read_text())["figures"]
    text = " ".join((ROOT / "docs" / "performance.md").read_text(encoding="utf-8").split())
    assert quoted(figures) in text, quoted(figures)
    assert figures["reports"]["per_query_identical"] and not figures["reports"]["differ_at_4_decimals"]


@pytest.mark.parametrize("name", ["bench_plan", "bench_plan_big"])
def test_the_performance_page_quotes_the_plan_against_the_real_runs(name):
    from benchmarks.bench_plan import quoted_lines

    figures = json.loads((ROOT / "benchmarks" / "results" / f"{name}.json").read_text())["figures"]
    assert set(figures) == (
        {"bench10k", "homedepot"}
        if name.endswith("big")
        else {"readme", "cache", "warm", "defaults", "sbert", "sbert-ft"}
    )
    # measured on a quiet machine, every case within the +-30% the docs promise
    assert all(abs(row["wall_error"]) <= 0.3 and abs(row["cpu_error"]) <= 0.3 for row in figures.values())
    page = (ROOT / "docs" / "performance.md").read_text(encoding="utf-8")
    for line in quoted_lines(figures):
        assert line in page, line
