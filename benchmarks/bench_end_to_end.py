"""End-to-end wall time: ``ltrfeat demo`` (full and ``--quick``) and the Home Depot ablation.

Each demo runs as a fresh ``python -m ltrfeat.cli.main demo`` subprocess; its stage times are read from the
moments its ``k/4`` progress lines appear on stderr. The figures are ratios against the issue's budgets
(full demo 5 min, quick 1 min): below 1.0 is within budget. The full demo's time is also given as a
ratio to the quick one measured in the same run.

The Home Depot ablation takes longer than ``make bench`` may (45 min target); it is not run here. Pass
its report directory (``--homedepot-report DIR`` or ``LTRFEAT_HOMEDEPOT_REPORT=DIR``) to read the time
from its ``timings.json``; without one the result says "not run". ``timings.json`` sums the ranker runs'
seconds (``total_seconds``); a ``wall_seconds`` entry, when present, is preferred.

    python benchmarks/bench_end_to_end.py                 # full and quick demo
    python benchmarks/bench_end_to_end.py --quick-only    # quick demo only (a loaded machine)
    python benchmarks/bench_end_to_end.py --homedepot-report out/hd-ablation
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks._common import write_results  # noqa: E402

BUDGETS_S = {"demo": 300.0, "demo_quick": 60.0, "homedepot_ablation": 45 * 60.0}
STAGE_LINE = re.compile(r"^([1-4])/4 ")
STAGES = {"1": "world", "2": "encoders", "3": "extraction", "4": "ablation"}


def stage_seconds(events: list[tuple[float, str]], end: float) -> dict[str, float]:
    """Seconds per stage from (time, stderr line) events: each ``k/4`` line starts stage k."""
    starts = [(t, STAGES[m.group(1)]) for t, line in events if (m := STAGE_LINE.match(line))]
    return {name: (starts[i + 1][0] if i + 1 < len(starts) else end) - t for i, (t, name) in enumerate(starts)}


def run_demo(*, quick: bool, timeout: float) -> dict:
    """Wall time and stage times of one demo run in a fresh process."""
    with tempfile.TemporaryDirectory(prefix="bench-demo-") as tmp:
        cmd = [sys.executable, "-m", "ltrfeat.cli.main", "demo", "--out", str(Path(tmp) / "demo")]
        cmd += ["--quick"] if quick else []
        env = dict(os.environ, PYTHONPATH=str(ROOT), CI="1")
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        killer = threading.Timer(timeout, proc.kill)  # stderr lines may stop coming: a timer, not a check
        killer.start()
        events = []
        try:
            for line in proc.stderr:  # the headline table on stdout is small: the pipe does not fill
                events.append((time.perf_counter() - start, line.rstrip("\n")))
            proc.stdout.read()
            proc.wait()
        finally:
            killer.cancel()
        if proc.returncode < 0 and time.perf_counter() - start >= timeout:
            return {"status": f"timed out after {timeout:.0f} s"}
        wall = time.perf_counter() - start
    if proc.returncode != 0:
        return {"status": f"failed (exit {proc.returncode}): " + (events[-1][1] if events else "")[:300]}
    return {"status": "ok", "wall_s": wall, "stages_s": stage_seconds(events, wall)}


def homedepot_ablation(report) -> dict:
    """The ablation's time from ``REPORT/timings.json``, or ``not run``."""
    if not report:
        return {
            "status": "not run",
            "how": "pass --homedepot-report DIR (or LTRFEAT_HOMEDEPOT_REPORT) of a run of ltrfeat ablate on Home Depot",
        }
    path = Path(report) / "timings.json"
    if not path.is_file():
        return {"status": f"not run: {path} is absent"}
    timings = json.loads(path.read_text())
    if "wall_seconds" in timings:
        return {"status": "ok", "wall_s": float(timings["wall_seconds"]), "source": str(path)}
    return {
        "status": "ok",
        "wall_s": float(timings["total_seconds"]),
        "source": str(path),
        "note": "sum of the ranker runs in timings.json: encoder training is not included (a lower bound)",
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick-only", action="store_true", help="run only `ltrfeat demo --quick`")
    parser.add_argument(
        "--homedepot-report",
        default=os.environ.get("LTRFEAT_HOMEDEPOT_REPORT"),
        help="report directory of a Home Depot `ltrfeat ablate` run",
    )
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds before a demo run is stopped")
    args = parser.parse_args()

    runs = {"demo_quick": run_demo(quick=True, timeout=args.timeout)}
    runs["demo"] = (
        {"status": "not run (--quick-only)"} if args.quick_only else run_demo(quick=False, timeout=args.timeout)
    )
    runs["homedepot_ablation"] = homedepot_ablation(args.homedepot_report)
    for name, run in runs.items():
        run["budget_s"] = BUDGETS_S[name]
        if run["status"] == "ok":
            run["ratio_to_budget"] = run["wall_s"] / BUDGETS_S[name]
    figures = dict(runs)
    if runs["demo"]["status"] == "ok" and runs["demo_quick"]["status"] == "ok":
        figures["full_over_quick"] = runs["demo"]["wall_s"] / runs["demo_quick"]["wall_s"]
    path = write_results("end_to_end", figures)
    for name, run in runs.items():
        if run["status"] != "ok":
            print(f"{name:20s} {run['status']}")
            continue
        stages = "  ".join(f"{k} {v:.0f} s" for k, v in run.get("stages_s", {}).items())
        print(
            f"{name:20s} {run['wall_s']:8.1f} s = {run['ratio_to_budget']:.2f}x the {run['budget_s']:.0f} s budget"
            + (f"   ({stages})" if stages else "")
            + (f"   [{run['note']}]" if "note" in run else "")
        )
    print(f"wrote {path}")
    if "full_over_quick" in figures:
        print(f"full demo / quick demo wall time: {figures['full_over_quick']:.2f}x")


if __name__ == "__main__":
    main()
