"""`ltrfeat serve`'s soak (tests/serving/soak.py) with and without its large-request worker, paired in one sitting.

A normal client sends a query's 10 candidates (~1,000 characters) again and again, in quiet phases and in phases
when hostile clients send bodies a byte at a time, ~900 KB requests of unseen words and normalisation bombs; the
figure is its p99 under attack over its p99 in the quiet phases of the same run (target: at most 2). Each run
serves once with ``--lane-chars 0`` (every request scored in the service's process, as before the worker) and once
with the default (requests over 4,096 characters scored by the worker), in alternating order. The machine is
shared: the load average before and after each run is recorded beside it; latencies are wall times.

Before each soak, after warm-up, the same server answers 200 requests of 100 candidates (~14,000 characters: over
``--lane-chars``, so with the worker these are its requests) from 50 concurrent clients (bench_serve_load.py's load
phase): answered/s (wall) and the server's CPU-seconds per request, its worker's included (comparable under load).

Run: python benchmarks/bench_serve_soak.py [--runs N]
"""

from __future__ import annotations

import asyncio
import os
import sys
import tempfile
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests"), str(ROOT / "tests" / "serving")]

from benchmarks._common import write_results  # noqa: E402
from benchmarks.bench_serve_load import _load  # noqa: E402
from builders import build_world  # noqa: E402
from soak import PHASE, ROUNDS, soak  # noqa: E402

SETTINGS = {"one process": ["--lane-chars", "0"], "worker": []}
CLIENTS, REQUESTS = 50, 200


def _cpu_seconds(pid: int) -> float:
    server = psutil.Process(pid)
    return sum(sum(p.cpu_times()[:2]) for p in [server, *server.children(recursive=True)])


def _throughput(proc, http) -> dict:
    cpu = _cpu_seconds(proc.pid)
    load = asyncio.run(_load(str(http.base_url).rstrip("/"), CLIENTS, REQUESTS, seed=CLIENTS))
    return {
        "load_requests_per_s": load["requests_per_s"],
        "load_cpu_s_per_request": (_cpu_seconds(proc.pid) - cpu) / max(load["ok"], 1),
        "load_ok": load["ok"],
        "load_errors": load["errors"],
    }


def main() -> None:
    runs = int(sys.argv[sys.argv.index("--runs") + 1]) if "--runs" in sys.argv else 3
    out = []
    with tempfile.TemporaryDirectory() as tmp:
        world = build_world(Path(tmp), n_queries=8)
        for i in range(runs):
            order = list(SETTINGS) if i % 2 == 0 else list(SETTINGS)[::-1]
            for setting in order:
                load = os.getloadavg()[0]
                run = soak(world, SETTINGS[setting], before=_throughput)
                out.append(
                    {"run": i + 1, "serve": setting, "load_before": load, "load_after": os.getloadavg()[0], **run}
                )
                print(
                    f"run {i + 1} {setting:>11}: p99 quiet {run['p99_quiet_ms']:.1f} ms, under attack "
                    f"{run['p99_hostile_ms']:.1f} ms ({run['ratio']:.2f}x); load {load:.1f} -> "
                    f"{out[-1]['load_after']:.1f}; RSS {run['rss_base_mb']:.0f} -> {run['rss_peak_mb']:.0f} MB; "
                    f"{CLIENTS} clients of 100 candidates: {run['load_requests_per_s']:.0f} req/s, "
                    f"{run['load_cpu_s_per_request'] * 1000:.1f} CPU-ms a request",
                    flush=True,
                )
                write_results(
                    "bench_serve_soak", {"rounds": ROUNDS, "phase_s": PHASE, "load_clients": CLIENTS, "runs": out}
                )


if __name__ == "__main__":
    main()
