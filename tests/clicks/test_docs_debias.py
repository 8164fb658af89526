"""docs/experiments.md and the README quote the debiasing benchmarks' figures as benchmarks/results/clicks_debias.json
(generated worlds) and clicks_homedepot.json (Home Depot, simulated clicks) have them, and the demo's default
correction follows them."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from benchmarks import clicks_debias, clicks_heldout, clicks_homedepot, clicks_ranker_noise  # noqa: E402


def _figures(benchmark) -> dict:
    name = benchmark.__name__.rsplit(".", 1)[-1]
    return json.loads((ROOT / "benchmarks" / "results" / f"{name}.json").read_text())["figures"]


@pytest.mark.parametrize(
    "benchmark, name",
    [
        (clicks_debias, "clicks_debias"),
        (clicks_debias, "clicks_debias_full"),
        (clicks_ranker_noise, "clicks_ranker_noise"),
        (clicks_homedepot, "clicks_homedepot"),
        (clicks_heldout, "clicks_heldout"),
    ],
    ids=["clicks_debias", "clicks_debias_full", "clicks_ranker_noise", "clicks_homedepot", "clicks_heldout"],
)
def test_the_experiments_page_quotes_the_results_file(benchmark, name):
    figures = json.loads((ROOT / "benchmarks" / "results" / f"{name}.json").read_text())["figures"]
    page = (ROOT / "docs" / "experiments.md").read_text(encoding="utf-8")
    for line in benchmark.markdown_table(figures):
        assert line in page, f"docs/experiments.md does not quote: {line}"
    assert (figures.get("setup") or figures)["command"] in page


def test_the_readme_quotes_the_click_results_and_the_demo_default_follows_them():
    from ltrfeat.cli.main import cli

    demo = cli.commands["demo"]

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    worlds, homedepot = _figures(clicks_debias), _figures(clicks_homedepot)
    table = clicks_debias.README_HEADER + clicks_debias.readme_rows(worlds) + clicks_homedepot.readme_rows(homedepot)
    assert "\n".join(table) in readme
    for figures in (worlds, homedepot):
        assert f"`{figures['setup']['command']}`" in readme
    better = [c for w in worlds["criterion"].values() for c in w.values() if c["better"]]
    better += [c for c in homedepot["criterion"].values() if c["better"]]
    default = next(p.default for p in demo.params if p.name == "debias")
    # "debiased by default if and only if the measurements support it": none is significantly better, so none
    assert not better and default == "none"
    assert "`ltrfeat demo` trains uncorrected by default" in " ".join(readme.split())


def test_the_readme_quotes_the_ranker_noise_at_e0():
    readme = " ".join((ROOT / "README.md").read_text(encoding="utf-8").split())
    noise = _figures(clicks_ranker_noise)
    others = [r["ipw - none"]["delta"] for r in noise["per_ranker_seed"][1:]]
    assert all(r["ipw - none"]["p"] >= 0.05 for r in noise["per_ranker_seed"][1:])  # "none significant"
    assert f"under {len(others)} other seeds `ipw - none` is {min(others):+.4f} to {max(others):+.4f}" in readme
    weights = noise["ipw_weights"].values()
    assert f"weights there are {min(w['min'] for w in weights):.2f} to {max(w['max'] for w in weights):.2f}" in readme
