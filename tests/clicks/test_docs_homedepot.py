"""docs/experiments.md quotes the Home Depot click benchmark's figures as benchmarks/results/clicks_homedepot.json
has them."""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from benchmarks.clicks_homedepot import markdown_table  # noqa: E402


def test_the_experiments_page_quotes_the_results_file():
    figures = json.loads((ROOT / "benchmarks" / "results" / "clicks_homedepot.json").read_text())["figures"]
    page = (ROOT / "docs" / "experiments.md").read_text(encoding="utf-8")
    for line in markdown_table(figures):
        assert line in page, f"docs/experiments.md does not quote: {line}"
    assert figures["setup"]["command"] in page
