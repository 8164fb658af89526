"""How close ``ablate``'s cost estimate (the plan every run starts with) comes to the run's own time.

Each case is one ``ltrfeat ablate`` process: on the committed sample world (``data/judged.tsv``: 3,553 pairs, 240
queries, the README's command and variants of it), or ``--big``: the five-encoder command of
``bench_ablation.py`` on its generated 10k-pair set (``bench10k``) and on Home Depot (``homedepot``, about 20
minutes), each with a new cache. The estimate is the one the run printed first (its ``timings.json``
``estimate``), the measured figures the process's wall time and CPU seconds (user + system, its worker processes
included). The cases run in order: ``warm`` reruns ``cache`` with the same cache directory.

Run: python benchmarks/bench_plan.py [--only NAME,...] | --big [--only bench10k,homedepot]
Writes benchmarks/results/bench_plan.json (``--big``: bench_plan_big.json); with ``--only`` the file's other cases
are kept.
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
sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks")]

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
BIG = ("bench10k", "homedepot")


def _big_case(name: str, tmp: Path) -> list[str]:
    """The arguments of ``bench_ablation.py``'s cold run: its data (``homedepot`` or the 10k-pair set, generated
    in ``tmp``), its five encoders and a new cache."""
    import bench_ablation

    data = bench_ablation._data(tmp, name == "homedepot")
    encoders = [a for e in bench_ablation.ENCODERS for a in ("--encoder", e)]
    return [*map(str, data), *encoders, "--cache", str(tmp / f"cache-{name}")]


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


LABELS = {
    "readme": "the README's command (`--encoder dssm:generalized --encoder clsm:softmax --quick`)",
    "cache": "the same with a new `--cache`",
    "warm": "rerun on that cache (every training and ranker run stored)",
    "defaults": "the two encoders at the defaults (3 seeds, 500 rounds, 10,000 resamples, 4 epochs)",
    "sbert": "`--quick` with `--encoder sbert` too (the MiniLM pass)",
    "sbert-ft": "`--encoder sbert --encoder sbert-ft:generalized --quick` (MiniLM fine-tuning)",
    "bench10k": "the 10k-pair bench (`bench_ablation.py --skip-warm`'s cold run: five encoders, 3 folds x 3 seeds)",
    "homedepot": "Home Depot (`bench_ablation.py --homedepot --skip-warm`'s cold run)",
}


def quoted_lines(figures: dict) -> list[str]:
    """The table rows docs/performance.md quotes from ``bench_plan.json`` or ``bench_plan_big.json``: per case the
    estimate, the measured run and the errors."""
    return [
        f"| {LABELS[name]} | {_duration(row['estimate_wall'])}, {row['estimate_cpu']:,.0f} | "
        f"{_duration(row['wall'])}, {row['cpu']:,.1f} | {row['wall_error']:+.0%}, {row['cpu_error']:+.0%} |"
        for name, row in figures.items()
    ]


def _duration(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds < 600 else f"{int(seconds // 60)}:{int(seconds % 60):02d}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--big", action="store_true", help="the 10k-pair bench and Home Depot instead")
    parser.add_argument("--only", default=None, help="comma-separated cases: " + ", ".join([*CASES, *BIG]))
    options = parser.parse_args()
    names = [n.strip() for n in (options.only or ",".join(BIG if options.big else CASES)).split(",") if n.strip()]
    figures: dict = {}
    with tempfile.TemporaryDirectory(prefix="bench-plan-") as tmp:
        for name in names:
            if name in BIG:
                args = _big_case(name, Path(tmp))
            else:
                args = [a.format(cache=Path(tmp) / "cache") for a in CASES[name]]
            figures[name] = _run(args, Path(tmp) / f"report-{name}")
            row = figures[name]
            print(
                f"{name:9s} estimate {row['estimate_wall']:6.1f} s wall {row['estimate_cpu']:6.1f} CPU-s | measured "
                f"{row['wall']:6.1f} s {row['cpu']:6.1f} CPU-s | error wall {row['wall_error']:+.0%} "
                f"CPU {row['cpu_error']:+.0%} (share {row['machine']['share']:.2f}, load {row['machine']['load']:.1f})",
                flush=True,
            )
    name = "bench_plan_big" if options.big else "bench_plan"
    if options.only:  # the other cases of the results file stay as they were measured
        known = ROOT / "benchmarks" / "results" / f"{name}.json"
        figures = (json.loads(known.read_text())["figures"] if known.exists() else {}) | figures
    write_results(name, figures)


if __name__ == "__main__":
    main()
