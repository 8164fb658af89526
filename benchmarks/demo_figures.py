"""The figures the README and docs/experiments.md quote from `make demo`, taken from a fresh demo run.

Runs ``ltrfeat demo`` (the full preset, seed 0) into a temporary directory and writes
``benchmarks/results/demo.json``: the demo's printed output (the table and the verdict; paths and the wall time
left out, as they vary), the headline means of every feature set, the relative NDCG lifts of the neural sets
with their Holm-adjusted p-values, and what the verdict recommends. ``tests/test_docs_demo.py`` checks every
figure the README and docs quote against this file (and, in the slow tier, this file against a fresh demo), so a
change that moves the demo's numbers fails until this is re-run and the prose follows.

    python benchmarks/demo_figures.py
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks")]

from _common import run_ltrfeat, write_results  # noqa: E402

VARYING = ("report:", "models:", "world:", "time:")  # printed lines that name paths or the wall time


def figures_of(report: dict) -> dict:
    """What the prose quotes, from a demo's ``report.json``."""
    means = {(r["feature_set"], r["metric"]): r["mean"] for r in report["results"]}
    sets = list(dict.fromkeys(s for s, _ in means))
    metrics = list(dict.fromkeys(m for _, m in means))
    lifts = {
        f"{c['variant']}|{c['metric']}": {"relative": c["relative"], "p_holm": c["p_holm"]}
        for c in report["comparisons"]
        if c["baseline"] == "lexical" and c["variant"].startswith("lexical+")
    }
    verdict = report["verdict"]
    return {
        "means": {s: {m: means[(s, m)] for m in metrics if (s, m) in means} for s in sets},
        "lifts": lifts,
        "recommended": verdict["recommended"],
        "chosen_in_folds": verdict["chosen_in_folds"],
        "n_folds": verdict["n_folds"],
        "all_choices": verdict["all_choices"],
    }


def printed(stdout: str) -> list[str]:
    """The demo's output without the lines that vary between runs (paths, wall time)."""
    return [line.rstrip() for line in stdout.splitlines() if not line.startswith(VARYING)]


def main() -> None:
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "demo-out"
        stdout = run_ltrfeat("demo", "--out", out, capture=True)
        report = json.loads((out / "report" / "report.json").read_text())
    seconds = round(time.perf_counter() - started, 1)
    results = {"seconds": seconds, "output": printed(stdout)} | figures_of(report)
    print("\n".join(results["output"]))
    print(f"\n{seconds:.0f} s; wrote {write_results('demo', results)}")


if __name__ == "__main__":
    main()
