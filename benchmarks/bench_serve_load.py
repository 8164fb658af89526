"""`ltrfeat serve` under load and under attack: latency and error rate at 50 and 200 concurrent clients,
slow-client (slowloris) resistance, the server's memory after 10k requests and after a large one, and a
soak with hostile bodies in flight.

One server on 127.0.0.1 with the default limits (``--max-concurrent 64``, ``--client-timeout 10``
unless stated) scores requests of 100 candidates (lexical features + a CLSM cosine, the world of
tests/serving/test_scorer.py), fresh texts per request. The baseline, measured in the same run against the
same server, is one client sending requests one after another. Clients and server share this
machine's cores, so at 200 clients part of the latency is the clients' own work. Clients that get
503 wait its ``Retry-After`` and try again; p50/p99 are of answered (200) requests, from the first
attempt. The slowloris phase opens 300 connections that drip request headers one byte per second.
The hostile soak measures one normal client's p50/p99 alone, then again while two other clients
keep sending 1 MB pathological bodies (an unterminated string of escaped quotes, 1 MB of brackets,
5,000-digit integers), each answered 400; the target is a p99 within 2x of the calm one.

Run: python benchmarks/bench_serve_load.py [--quick] [--hostile-only]
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
import numpy as np
import psutil

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from benchmarks._common import write_results  # noqa: E402
from ltrfeat.serving.process import served  # noqa: E402
from builders import WORDS, build_world  # noqa: E402

N_CANDIDATES = 100
CLIENT_TIMEOUT = 10


def _request(rng, n=N_CANDIDATES, body_words=(5, 30)) -> dict:
    return {
        "query": " ".join(rng.choice(WORDS, size=rng.integers(1, 4))),
        "candidates": [
            {
                "docid": f"d{i}",
                "title": " ".join(rng.choice(WORDS, size=rng.integers(2, 8))),
                "body": " ".join(rng.choice(WORDS, size=rng.integers(*body_words))),
            }
            for i in range(n)
        ],
    }


def _percentiles(ms) -> dict:
    ms = np.asarray(ms, dtype=float)
    if not len(ms):
        return {"p50_ms": float("nan"), "p99_ms": float("nan")}
    return {"p50_ms": float(np.percentile(ms, 50)), "p99_ms": float(np.percentile(ms, 99))}


async def _load(base_url: str, clients: int, total: int, seed: int) -> dict:
    """``clients`` concurrent clients send ``total`` requests; 503s are retried after Retry-After."""
    rng = np.random.default_rng(seed)
    bodies = [_request(rng) for _ in range(min(total, 400))]
    latencies, counts = [], {"ok": 0, "busy_503": 0, "errors": 0}
    next_index = iter(range(total))

    async def client(http: httpx.AsyncClient):
        for i in next_index:
            start = time.perf_counter()
            while True:
                try:
                    resp = await http.post("/score", json=bodies[i % len(bodies)])
                except httpx.HTTPError:
                    counts["errors"] += 1
                    break
                if resp.status_code == 503:
                    counts["busy_503"] += 1
                    await asyncio.sleep(float(resp.headers.get("retry-after", "1")))
                    continue
                if resp.status_code == 200:
                    counts["ok"] += 1
                    latencies.append((time.perf_counter() - start) * 1000)
                else:
                    counts["errors"] += 1
                break

    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    async with httpx.AsyncClient(base_url=base_url, limits=limits, timeout=120) as http:
        start = time.perf_counter()
        await asyncio.gather(*(client(http) for _ in range(clients)))
        seconds = time.perf_counter() - start
    return {
        "clients": clients,
        "requests": total,
        **counts,
        "error_rate": counts["errors"] / total,
        "busy_rate": counts["busy_503"] / (total + counts["busy_503"]),
        "seconds": seconds,
        "requests_per_s": counts["ok"] / seconds,
        **_percentiles(latencies),
    }


async def _slowloris(host: str, port: int, n: int, seconds: float) -> dict:
    """Open ``n`` connections that drip header bytes; count how many the server still holds open."""
    header = b"POST /score HTTP/1.1\r\nHost: x\r\nX-Padding: " + b"a" * 1000
    conns = []
    for _ in range(n):
        reader, writer = await asyncio.open_connection(host, port)
        conns.append((reader, writer))
    open_at = {}
    start = time.monotonic()
    position = 0
    while time.monotonic() - start < seconds:
        for reader, writer in conns:
            if not reader.at_eof() and not writer.is_closing():
                writer.write(header[position : position + 1])
        position += 1
        await asyncio.sleep(1.0)
        for reader, _ in conns:
            try:
                await asyncio.wait_for(reader.read(1), timeout=0.001)
            except (TimeoutError, ConnectionError):
                pass
        still = sum(not reader.at_eof() for reader, _ in conns)
        open_at[round(time.monotonic() - start)] = still
    for _, writer in conns:
        writer.close()
    return {"connections": n, "open_after_s": open_at}


def _serial(http: httpx.Client, n: int, seed: int) -> list[float]:
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        body = _request(rng)
        start = time.perf_counter()
        http.post("/score", json=body).raise_for_status()
        out.append((time.perf_counter() - start) * 1000)
    return out


HOSTILE_BODIES = [
    b'{"query": "' + b'\\"' * 499_000,  # unterminated string of escaped quotes (was quadratic: hours)
    b'{"query": "q", "candidates": ' + b"[" * 1_000_000,
    b'{"query": "q", "candidates": [' + b",".join([b"9" * 5000] * 190) + b"]}",
]


def _hostile_soak(http: httpx.Client, base_url: str, n: int) -> dict:
    """One normal client's latency alone and with two clients sending :data:`HOSTILE_BODIES` meanwhile."""
    import threading

    calm = _percentiles(_serial(http, n, seed=11))
    stop = threading.Event()
    sent = {"hostile": 0, "not_400": 0}

    def attacker(offset: int):
        with httpx.Client(base_url=base_url, timeout=120) as own:
            i = offset
            while not stop.is_set():
                resp = own.post(
                    "/score",
                    content=HOSTILE_BODIES[i % len(HOSTILE_BODIES)],
                    headers={"content-type": "application/json"},
                )
                sent["hostile"] += 1
                sent["not_400"] += resp.status_code != 400
                i += 1

    threads = [threading.Thread(target=attacker, args=(k,), daemon=True) for k in range(2)]
    for t in threads:
        t.start()
    time.sleep(1.0)  # the attack is under way
    hostile = _percentiles(_serial(http, n, seed=11))
    stop.set()
    for t in threads:
        t.join(120)
    return {
        "requests": n,
        "calm": calm,
        "with_hostile_bodies": hostile,
        "hostile_bodies_sent": sent["hostile"],
        "hostile_not_400": sent["not_400"],
        "p99_ratio": hostile["p99_ms"] / calm["p99_ms"],
    }


def _print_soak(soak: dict) -> None:
    calm, hostile = soak["calm"], soak["with_hostile_bodies"]
    print(
        f"hostile soak, one client x {soak['requests']} requests: calm p50 {calm['p50_ms']:.1f} ms p99 "
        f"{calm['p99_ms']:.1f} ms; with 2 clients sending 1 MB pathological bodies ({soak['hostile_bodies_sent']} sent, "
        f"{soak['hostile_not_400']} not 400): p50 {hostile['p50_ms']:.1f} ms p99 {hostile['p99_ms']:.1f} ms "
        f"(p99 {soak['p99_ratio']:.2f}x; target <= 2x)"
    )


def _rss_mb(pid: int) -> float:
    """The server's RSS, its large-request worker's included."""
    server = psutil.Process(pid)
    return sum(p.memory_info().rss for p in [server, *server.children(recursive=True)]) / 2**20


def main() -> None:
    if sys.argv[1:2] == ["--build"]:
        build_world(Path(sys.argv[2]), n_queries=40)
        return
    quick = "--quick" in sys.argv
    scale = 0.1 if quick else 1.0
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([sys.executable, __file__, "--build", tmp], check=True, timeout=300)
        args = [
            "--ranker",
            Path(tmp) / "ranker.txt",
            "--corpus-stats",
            Path(tmp) / "corpus.npz",
            "--encoder",
            f"clsm={Path(tmp) / 'clsm.ltrenc'}",
            "--client-timeout",
            CLIENT_TIMEOUT,
            "--max-bytes",
            30_000_000,
            "--max-candidates",
            5000,
        ]
        with served(args, request_timeout=120) as (proc, http):
            base_url = str(http.base_url).rstrip("/")
            host, port = http.base_url.host, http.base_url.port
            _serial(http, 20, seed=0)  # warm-up
            if "--hostile-only" in sys.argv:
                soak = _hostile_soak(http, base_url, int(300 * scale) or 30)
                _print_soak(soak)
                write_results("bench_serve_hostile" + ("_quick" if quick else ""), {"hostile_soak": soak})
                return
            rss_start = _rss_mb(proc.pid)
            baseline = _percentiles(_serial(http, int(300 * scale), seed=1))
            load = [asyncio.run(_load(base_url, c, int(n * scale), seed=c)) for c, n in ((50, 2000), (200, 4000))]

            small = np.random.default_rng(7)
            smalls = [_request(small, n=20) for _ in range(200)]
            requests_before = sum(p["ok"] for p in load) + int(320 * scale)
            for i in range(int(10_000 * scale)):
                http.post("/score", json=smalls[i % len(smalls)]).raise_for_status()
            rss_10k = _rss_mb(proc.pid)

            big = _request(np.random.default_rng(3), n=5000, body_words=(700, 900))
            http.post("/score", json=big).raise_for_status()
            rss_peak = _rss_mb(proc.pid)
            del big
            time.sleep(2)
            rss_after_large = _rss_mb(proc.pid)

            loop = asyncio.new_event_loop()
            attack = loop.create_task(_slowloris(host, port, 300, CLIENT_TIMEOUT + 5))
            loop.run_until_complete(asyncio.sleep(2))
            under_attack = _percentiles(_serial(http, int(100 * scale) or 10, seed=9))
            slowloris = loop.run_until_complete(attack)
            loop.close()
            soak = _hostile_soak(http, base_url, int(300 * scale) or 30)
    memory = {
        "rss_start_mb": rss_start,
        "rss_after_10k_mb": rss_10k,
        "rss_peak_large_mb": rss_peak,
        "rss_2s_after_large_mb": rss_after_large,
        "requests_before_10k": requests_before,
    }
    figures = {
        "candidates": N_CANDIDATES,
        "client_timeout_s": CLIENT_TIMEOUT,
        "max_concurrent": 64,
        "single_client": baseline,
        "load": load,
        "slowloris": slowloris,
        "single_client_under_slowloris": under_attack,
        "memory": memory,
        "hostile_soak": soak,
    }
    print(
        f"requests of {N_CANDIDATES} candidates; one client in sequence (baseline): "
        f"p50 {baseline['p50_ms']:.1f} ms  p99 {baseline['p99_ms']:.1f} ms"
    )
    for p in load:
        print(
            f"  {p['clients']:>3} clients, {p['requests']} requests: p50 {p['p50_ms']:.0f} ms "
            f"({p['p50_ms'] / baseline['p50_ms']:.1f}x)  p99 {p['p99_ms']:.0f} ms  "
            f"{p['requests_per_s']:.0f} req/s  errors {p['error_rate']:.2%}  503 {p['busy_rate']:.1%} of attempts"
        )
    held = slowloris["open_after_s"]
    print(
        f"slowloris, 300 connections dripping headers: still open after {', '.join(f'{s}s: {n}' for s, n in held.items())}"
    )
    print(
        f"  one client meanwhile: p50 {under_attack['p50_ms']:.1f} ms "
        f"({under_attack['p50_ms'] / baseline['p50_ms']:.2f}x the baseline)"
    )
    print(
        f"server RSS: {rss_start:.0f} MB at start, {rss_10k:.0f} MB after {requests_before} + "
        f"{int(10_000 * scale)} requests, {rss_peak:.0f} MB right after a 5000-candidate 26 MB request, "
        f"{rss_after_large:.0f} MB 2 s later"
    )
    _print_soak(soak)
    write_results("bench_serve_load" + ("_quick" if quick else ""), figures)


if __name__ == "__main__":
    main()
