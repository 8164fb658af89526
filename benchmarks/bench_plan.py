"""How close ``ablate``'s cost estimate (the plan every run starts with) comes to the run's own time.

Each case is one ``ltrfeat ablate`` process on the committed sample world (``data/judged.tsv``: 3,553 pairs, 240
queries, the README's command and variants of it); the estimate is the one the run printed first (its
``timings.json`` ``estimate``), the measured figures the process's wall time and CPU seconds (user + system, its
worker processes included). The cases run in order: ``warm`` reruns ``cache`` with the same cache directory.

Run: python benchmarks/bench_plan.py [--only NAME,...]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT)]

from benchmarks._common import write_results  # noqa: E402

README = ["--pairs", "data/judged.tsv", "--encoder", "dssm:generalized", "--encoder", "clsm:softmax"]
CASES = {
    "readme": [*README, "--quick"],
    "cache": [*README, "--quick", "--cache", "{cache}"],
    "warm": [*README, "--quick", "--cache", "{cache}"],
    "defaults": README,
    "sbert": [*README, "--encoder", "sbert", "--quick"],
    "sbert-ft": ["--pairs", "data/judged.tsv", "--encoder", "sbert", "--encoder", "sbert-ft:generalized", "--quick"],
}


def _run(args: list[str], report: Path) -> dict:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "ltrfeat.cli.main", "ablate", *args, "--report", str(report), "--overwrite"],
        cwd=ROOT,
        text=True,
        capture_output=True,
        env={**os.environ, "CI": "1"},
    )
    wall = time.perf_counter() - start
    if done.returncode:
        sys.exit(f"ablate {' '.join(args)} failed: {done.stderr[-3000:]}")
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    estimate = json.loads((report / "timings.json").read_text())["estimate"]
    return {
        "command": "ltrfeat ablate " + " ".join(args),
        "estimate_wall": estimate["wall_seconds"],
        "estimate_cpu": estimate["cpu_seconds"],
        "wall": round(wall, 1),
        "cpu": round(cpu, 1),
        "wall_error": round(estimate["wall_seconds"] / wall - 1, 3),
        "cpu_error": round(estimate["cpu_seconds"] / cpu - 1, 3),
        "machine": estimate["machine"],
        "load_after": os.getloadavg()[0],
        "plan": done.stderr.split("cross-fitting")[0].strip().splitlines(),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", default=",".join(CASES), help="comma-separated cases: " + ", ".join(CASES))
    names = [n.strip() for n in parser.parse_args().only.split(",") if n.strip()]
    figures: dict = {}
    with tempfile.TemporaryDirectory(prefix="bench-plan-") as tmp:
        for name in names:
            args = [a.format(cache=Path(tmp) / "cache") for a in CASES[name]]
            figures[name] = _run(args, Path(tmp) / f"report-{name}")
            row = figures[name]
            print(
                f"{name:9s} estimate {row['estimate_wall']:6.1f} s wall {row['estimate_cpu']:6.1f} CPU-s | measured "
                f"{row['wall']:6.1f} s {row['cpu']:6.1f} CPU-s | error wall {row['wall_error']:+.0%} "
                f"CPU {row['cpu_error']:+.0%} (share {row['machine']['share']:.2f}, load {row['machine']['load']:.1f})",
                flush=True,
            )
    write_results("bench_plan", figures)


if __name__ == "__main__":
    main()
