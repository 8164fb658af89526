"""Soak (slow tier): a real ``ltrfeat serve`` on loopback, normal clients beside hostile ones -- bodies sent a
byte at a time, requests of ~900 KB of words no one has sent before, normalisation bombs. Quiet and hostile
phases alternate (so a change in the machine's load hits both alike); the normal clients' p99 under attack
stays within 2x of their quiet p99, and the server's RSS within a fixed bound."""

from __future__ import annotations

import multiprocessing
import os
import socket
import threading
import time

import numpy as np
import pytest

pytest.importorskip("httpx")
pytest.importorskip("uvicorn")

import httpx  # noqa: E402

from ltrfeat.serving.process import served  # noqa: E402
from builders import build_world, candidates_of  # noqa: E402

ROUNDS, QUIET, HOSTILE = 3, 6.0, 8.0  # phases of seconds; about a minute of traffic in all
RSS_BOUND_MB = 250  # over the server's RSS after warm-up (the service used to grow ~20 MB per such request)


def _rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmRSS:")) / 1024


# --- hostile clients: a separate process, so that their work does not slow the normal client's own timing ---


def _slow_bodies(port: int, until: float, counts: dict) -> None:
    def connect():
        s = socket.create_connection(("127.0.0.1", port))
        s.sendall(
            b"POST /score HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
            b'Content-Length: 100000\r\n\r\n{"query": "'
        )
        s.setblocking(False)
        return s

    conns = [connect() for _ in range(30)]
    while time.monotonic() < until:
        for i, s in enumerate(conns):
            try:
                s.send(b"x")
            except OSError:  # cut off by the server: come back
                s.close()
                conns[i] = connect()
                counts["slow bodies cut off"] = counts.get("slow bodies cut off", 0) + 1
        time.sleep(0.2)
    for s in conns:
        s.close()


def _unseen_words(n_bytes: int) -> str:
    hexed = os.urandom(n_bytes // 2).hex()
    return " ".join(hexed[i : i + 8] for i in range(0, len(hexed), 8))


def _posting(body_of, name: str):
    def client(port: int, until: float, counts: dict) -> None:
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=60) as http:
            while time.monotonic() < until:
                status = http.post("/score", json=body_of()).status_code
                counts[f"{name} {status}"] = counts.get(f"{name} {status}", 0) + 1

    return client


_vocabularies = _posting(
    lambda: {
        "query": _unseen_words(200),
        "candidates": [{"docid": str(i), "title": _unseen_words(600), "body": _unseen_words(7000)} for i in range(110)],
    },
    "vocabulary",
)
_BOMB = "a" + "\u0301\u0316" * 9_999  # 19,999 characters: within --max-text-chars
_bombs = _posting(lambda: {"query": _BOMB, "candidates": [{"docid": "d", "title": _BOMB, "body": _BOMB}]}, "bomb")


def _hostile(port: int, seconds: float, results) -> None:
    os.nice(10)  # attackers use their own machines' CPU, not the normal client's share of this one
    until, counts = time.monotonic() + seconds, {}
    workers = [threading.Thread(target=f, args=(port, until, counts)) for f in (_slow_bodies, _vocabularies, _bombs)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    results.put(counts)


# --- the normal client --------------------------------------------------------------------------------------


def _normal(http, request: dict, seconds: float) -> list[float]:
    latencies, until = [], time.monotonic() + seconds
    while time.monotonic() < until:
        start = time.perf_counter()
        answer = http.post("/score", json=request)
        latencies.append(time.perf_counter() - start)
        assert answer.status_code == 200, answer.text
        time.sleep(0.01)
    return latencies


@pytest.mark.slow
def test_normal_clients_keep_their_latency_and_the_server_its_memory_under_attack(tmp_path):
    world = build_world(tmp_path, n_queries=8)
    _, candidates = candidates_of(world, "q3")
    request = {"query": world["queries"]["query"][3], "candidates": candidates}
    args = ["--ranker", world["ranker"], "--corpus-stats", world["corpus"], "--encoder", f"clsm={world['encoder']}"]
    spawn = multiprocessing.get_context("spawn")
    with served(args) as (proc, http):
        _normal(http, request, 3.0)  # warm up
        base = peak = _rss_mb(proc.pid)
        quiet, hostile, counts = [], [], {}
        for _ in range(ROUNDS):
            quiet += _normal(http, request, QUIET)
            results = spawn.Queue()
            attack = spawn.Process(target=_hostile, args=(http.base_url.port, HOSTILE, results))
            attack.start()
            time.sleep(1.0)  # the attack under way
            hostile += _normal(http, request, HOSTILE - 1.5)
            for key, n in results.get(timeout=120).items():
                counts[key] = counts.get(key, 0) + n
            attack.join(30)
            peak = max(peak, _rss_mb(proc.pid))
    p99 = {name: float(np.percentile(ms, 99)) * 1000 for name, ms in (("quiet", quiet), ("hostile", hostile))}
    report = (
        f"p99 {p99}, {len(quiet)} + {len(hostile)} normal requests, hostile {counts}, RSS {base:.0f} -> {peak:.0f} MB"
    )
    print(report)
    assert counts.get("vocabulary 200", 0) >= ROUNDS and counts.get("bomb 200", 0) >= ROUNDS, report
    assert counts.get("slow bodies cut off", 0) >= 30 * ROUNDS, report
    assert p99["hostile"] <= 2 * p99["quiet"], report
    assert peak - base < RSS_BOUND_MB, report
