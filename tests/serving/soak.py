"""The soak's traffic (tests/serving/test_serve_soak.py, benchmarks/bench_serve_soak.py): a real ``ltrfeat serve``
on loopback, a normal client sending a query's 10 candidates (~1,000 characters) again and again, and the hostile
clients of :mod:`hostile_clients` in a process of their own. Quiet and hostile phases alternate, so that a change in
the machine's load hits both alike."""

from __future__ import annotations

import multiprocessing
import time

import numpy as np

from builders import candidates_of
from hostile_clients import attack
from ltrfeat.serving.process import served

ROUNDS, PHASE = 8, 4.0  # about a minute of traffic in all


def rss_mb(pid: int) -> float:
    """The RSS of the process and its children (serve's large-request worker)."""
    with open(f"/proc/{pid}/status") as f:
        own = next(int(line.split()[1]) for line in f if line.startswith("VmRSS:")) / 1024
    with open(f"/proc/{pid}/task/{pid}/children") as f:
        return own + sum(rss_mb(int(child)) for child in f.read().split())


def _normal(http, request: dict, seconds: float) -> list[float]:
    latencies, until = [], time.monotonic() + seconds
    while time.monotonic() < until:
        start = time.perf_counter()
        answer = http.post("/score", json=request)
        latencies.append(time.perf_counter() - start)
        assert answer.status_code == 200, answer.text
        time.sleep(0.01)
    return latencies


def soak(world: dict, serve_args=(), *, rounds: int = ROUNDS, phase: float = PHASE, before=None) -> dict:
    """Serve ``world`` (tests/builders.py) with ``serve_args`` added and run the soak: the normal client's p99 (ms)
    in the quiet and the hostile phases, its request counts, what the hostile clients got, and the server's RSS
    (its worker's included, MB) after warm-up and at its peak; ``before(proc, http)``: a dict of other figures,
    measured after warm-up, added to the answer."""
    _, candidates = candidates_of(world, "q3")
    request = {"query": world["queries"]["query"][3], "candidates": candidates}
    args = ["--ranker", world["ranker"], "--corpus-stats", world["corpus"], "--encoder", f"clsm={world['encoder']}"]
    spawn = multiprocessing.get_context("spawn")
    active, done, results = spawn.Event(), spawn.Event(), spawn.Queue()
    with served([*args, *serve_args], startup_timeout=300) as (proc, http):  # a busy machine starts it slowly
        attacker = spawn.Process(target=attack, args=(http.base_url.port, active, done, results))
        attacker.start()
        _normal(http, request, 3.0)  # warm up (and the attacker's process starts)
        large = {"query": request["query"], "candidates": candidates * 10}  # over --lane-chars: the worker is up
        assert http.post("/score", json=large, timeout=120).status_code == 200
        figures = before(proc, http) if before is not None else {}
        base = peak = rss_mb(proc.pid)
        quiet, hostile = [], []
        for _ in range(rounds):
            quiet += _normal(http, request, phase)
            active.set()
            time.sleep(1.0)  # the attack under way
            hostile += _normal(http, request, phase)
            active.clear()
            time.sleep(0.5)  # the attack's last requests answered
            peak = max(peak, rss_mb(proc.pid))
        done.set()
        counts = results.get(timeout=120)
        attacker.join(30)
    p99 = {name: float(np.percentile(s, 99)) * 1000 for name, s in (("quiet", quiet), ("hostile", hostile))}
    return {
        "p99_quiet_ms": p99["quiet"],
        "p99_hostile_ms": p99["hostile"],
        "ratio": p99["hostile"] / p99["quiet"],
        "normal_requests": {"quiet": len(quiet), "hostile": len(hostile)},
        "hostile_answers": counts,
        "rss_base_mb": base,
        "rss_peak_mb": peak,
        **figures,
    }
