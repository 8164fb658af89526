"""docs/experiments.md quotes the debiasing benchmarks' figures as benchmarks/results/clicks_debias.json (generated
worlds) and clicks_homedepot.json (Home Depot, simulated clicks) have them."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from benchmarks import clicks_debias, clicks_homedepot  # noqa: E402


@pytest.mark.parametrize("benchmark", [clicks_debias, clicks_homedepot], ids=["clicks_debias", "clicks_homedepot"])
def test_the_experiments_page_quotes_the_results_file(benchmark):
    name = benchmark.__name__.rsplit(".", 1)[-1]
    figures = json.loads((ROOT / "benchmarks" / "results" / f"{name}.json").read_text())["figures"]
    page = (ROOT / "docs" / "experiments.md").read_text(encoding="utf-8")
    for line in benchmark.markdown_table(figures):
        assert line in page, f"docs/experiments.md does not quote: {line}"
    assert figures["setup"]["command"] in page
