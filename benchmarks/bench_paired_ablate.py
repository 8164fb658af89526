"""One ``ltrfeat ablate`` command run from two source trees side by side (same load), CPU seconds and reports compared.

Each tree (e.g. ``git archive`` of main and of a branch) runs the command in its own process at the same time, so
both see the same machine; the figures are each process's wall time and CPU seconds (user + system, its workers
included) and the plan's estimate (``timings.json``), and the two reports are compared: ``per_query.tsv`` byte for
byte and every mean of ``report.json`` at four decimals.

Run: python benchmarks/bench_paired_ablate.py --before TREE --after TREE --name NAME -- ABLATE-ARGS...
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT)]

from benchmarks._common import write_results  # noqa: E402

_RUN = """import json, os, resource, subprocess, sys, time
root, out, *args = sys.argv[1:]
t0 = time.perf_counter()
done = subprocess.run([sys.executable, "-m", "ltrfeat.cli.main", "ablate", *args, "--report", out, "--overwrite"],
                      cwd=root, capture_output=True, text=True, env={**os.environ, "CI": "1"})
usage = resource.getrusage(resource.RUSAGE_CHILDREN)
print(json.dumps({"rc": done.returncode, "wall": time.perf_counter() - t0, "cpu": usage.ru_utime + usage.ru_stime,
                  "stderr": done.stderr[-2000:]}))
"""


def _means(report: Path) -> dict:
    results = json.loads((report / "report.json").read_text())["results"]
    return {f"{r['feature_set']} {r['metric']}": r["mean"] for r in results}


def compare(before: Path, after: Path) -> dict:
    """``per_query.tsv`` identical or not, the means that differ at four decimals and the largest difference."""
    a, b = _means(before), _means(after)
    differ = sorted(
        k for k in a.keys() | b.keys() if f"{a.get(k, float('nan')):.4f}" != f"{b.get(k, float('nan')):.4f}"
    )
    return {
        "per_query_identical": (before / "per_query.tsv").read_bytes() == (after / "per_query.tsv").read_bytes(),
        "means": len(a),
        "differ_at_4_decimals": differ,
        "largest_difference": max((abs(a[k] - b[k]) for k in a.keys() & b.keys()), default=0.0),
    }


def quoted(figures: dict) -> str:
    """The sentence the docs quote of a results file (docs/performance.md; tests/test_docs_cost.py checks it)."""
    before, after, reports = figures["before"], figures["after"], figures["reports"]
    same = "identical" if reports["per_query_identical"] else "different"
    differ = len(reports["differ_at_4_decimals"])
    return (
        f"{before['cpu']:.1f} → {after['cpu']:.1f} CPU-s ({after['cpu'] / before['cpu']:.2f}×; wall "
        f"{before['wall']:.0f} / {after['wall']:.0f} s at load {figures['load_average_at_end'][2]:.0f}), plan "
        f"{before['estimate']['cpu_seconds']:.0f} / {after['estimate']['cpu_seconds']:.0f} CPU-s and "
        f"{before['estimate']['wall_seconds']:.0f} / {after['estimate']['wall_seconds']:.0f} s; per_query.tsv {same}, "
        f"{reports['means'] - differ} of {reports['means']} means equal at four decimals"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", type=Path, required=True, help="source tree of the reference (e.g. main)")
    parser.add_argument("--after", type=Path, required=True, help="source tree of the change")
    parser.add_argument("--name", required=True, help="results file: benchmarks/results/paired_NAME.json")
    parser.add_argument("args", nargs=argparse.REMAINDER, help="-- then the ablate arguments")
    args = parser.parse_args()
    ablate = [a for a in args.args if a != "--"]
    with tempfile.TemporaryDirectory() as tmp:
        procs = {
            side: subprocess.Popen(
                [sys.executable, "-c", _RUN, str(tree.resolve()), str(Path(tmp) / side), *ablate],
                stdout=subprocess.PIPE,
                text=True,
            )
            for side, tree in (("before", args.before), ("after", args.after))
        }
        runs = {side: json.loads(p.communicate()[0]) for side, p in procs.items()}
        for side, run in runs.items():
            if run["rc"]:
                sys.exit(f"{side}: ablate failed: {run['stderr']}")
            timings = json.loads((Path(tmp) / side / "timings.json").read_text())
            run.update(estimate=timings["estimate"], stages=timings["stages"])
            del run["stderr"]
        figures = {
            "command": "ltrfeat ablate " + " ".join(ablate),
            "load_average_at_end": os.getloadavg(),
            "at": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
            **runs,
            "reports": compare(Path(tmp) / "before", Path(tmp) / "after"),
        }
    path = write_results(f"paired_{args.name}", figures)
    print(
        json.dumps(figures["reports"], indent=1),
        f"\nbefore {runs['before']['cpu']:.1f} cpu-s, after {runs['after']['cpu']:.1f} cpu-s; {path}",
    )


if __name__ == "__main__":
    main()
