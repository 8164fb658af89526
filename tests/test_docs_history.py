"""docs/history.md holds how the costs moved; README, docs/performance.md and docs/experiments.md quote the current
figures only, taken from ``benchmarks/results/bench_ablation*.json``, and link to the history (a re-run that moves
the figures fails here until the prose follows it; an earlier figure a page drops stays in the history)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
HISTORY = ROOT / "docs" / "history.md"
PAGES = {"README.md": "docs/history.md", "docs/performance.md": "history.md", "docs/experiments.md": "history.md"}


def _squash(text: str) -> str:
    return " ".join(text.split())


def _cold(name: str) -> tuple[dict, str]:
    run = json.loads((RESULTS / name).read_text(encoding="utf-8"))
    return run["figures"]["cold"], run["environment"]["git_head"][:7]


def _wall(seconds: float) -> str:
    """``95 s`` below ten minutes, else ``20:28``."""
    seconds = round(seconds)
    return f"{seconds} s" if seconds < 600 else f"{seconds // 60}:{seconds % 60:02d}"


@pytest.mark.parametrize("page", PAGES)
def test_the_pages_quote_the_last_runs_and_link_the_history(page):
    text = _squash((ROOT / page).read_text(encoding="utf-8"))
    for name in ("bench_ablation.json", "bench_ablation_homedepot.json"):
        cold, _ = _cold(name)
        assert _wall(cold["wall_seconds"]) in text, (page, name)
        assert f"{round(cold['cpu_seconds']):,} CPU-s" in text, (page, name)
    assert f"]({PAGES[page]}" in text


def test_performance_names_the_commit_and_stages_of_the_last_runs():
    text = _squash((ROOT / "docs" / "performance.md").read_text(encoding="utf-8"))
    for name in ("bench_ablation.json", "bench_ablation_homedepot.json"):
        cold, commit = _cold(name)
        stages = cold["stages"]
        assert f"encoder columns {round(stages['encoder columns']):,} s, rankers {round(stages['rankers'])} s" in text
    assert f"main {commit}" in text


def test_the_history_keeps_the_figures_the_pages_dropped():
    history = _squash(HISTORY.read_text(encoding="utf-8"))
    for figure in ("552 s", "175 s", "38 s", "29:25", "60:32", "34:14", "33:23", "3,744 CPU-s", "164 s and 297 CPU-s"):
        assert figure in history, figure
    anchors = {re.sub(r"[^\w\- ]", "", h).strip().lower().replace(" ", "-") for h in re.findall(r"^## (.+)$",
               HISTORY.read_text(encoding="utf-8"), re.M)}  # fmt: skip
    linked = set()
    for page in PAGES:
        linked |= set(re.findall(r"history\.md#([\w-]+)", (ROOT / page).read_text(encoding="utf-8")))
    assert linked and linked <= anchors
