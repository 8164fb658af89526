"""`ltrfeat serve` latency: p50/p99 of POST /score with 100 candidates over loopback, versus calling
``Scorer.score`` in-process (the baseline) on the same requests in this run.

The ranker uses lexical features (bm25, tf, coverage, query_len on title and body) and a CLSM cosine
(a small random-weight encoder, the test world of tests/serving/test_scorer.py). One client sends a bounded
number of sequential requests to a server on 127.0.0.1 (a fresh query and fresh candidate texts
each, so the encoder caches do not hide the work); the server is always stopped. Both sides use one
torch thread: on this 2-core machine two intra-op threads made 100-candidate batches ~8x slower.

Run: python benchmarks/bench_serve.py [N_REQUESTS]
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from benchmarks._common import write_results  # noqa: E402
from ltrfeat.serving.process import served  # noqa: E402
from ltrfeat.serving.scorer import Scorer  # noqa: E402
from builders import WORDS, build_world  # noqa: E402

N_CANDIDATES = 100


def _requests(n: int) -> list[dict]:
    rng = np.random.default_rng(1)
    return [
        {
            "query": " ".join(rng.choice(WORDS, size=rng.integers(1, 4))),
            "candidates": [
                {
                    "docid": f"r{r}d{i}",
                    "title": " ".join(rng.choice(WORDS, size=rng.integers(2, 8))),
                    "body": " ".join(rng.choice(WORDS, size=rng.integers(5, 30))),
                }
                for i in range(N_CANDIDATES)
            ],
        }
        for r in range(n)
    ]


def _percentiles(ms: list[float]) -> dict:
    return {
        "p50_ms": float(np.percentile(ms, 50)),
        "p99_ms": float(np.percentile(ms, 99)),
        "mean_ms": float(np.mean(ms)),
    }


def main() -> None:
    if sys.argv[1:2] == ["--build"]:
        build_world(Path(sys.argv[2]), n_queries=40)
        return
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 500
    reqs = _requests(n)
    with tempfile.TemporaryDirectory() as tmp:
        # trained in another process: LightGBM training leaves OpenMP threads that slow torch here
        subprocess.run([sys.executable, __file__, "--build", tmp], check=True, timeout=300)
        world = {
            "ranker": Path(tmp) / "ranker.txt",
            "encoder": Path(tmp) / "clsm.ltrenc",
            "corpus": Path(tmp) / "corpus.npz",
        }
        torch.set_num_threads(1)  # as `ltrfeat serve --threads 1` (the default)
        scorer = Scorer.load(world["ranker"], encoders={"clsm": world["encoder"]}, corpus_stats=world["corpus"])
        scorer.score(reqs[0]["query"], reqs[0]["candidates"])  # warm-up
        local = []
        for r in reqs:
            start = time.perf_counter()
            scorer.score(r["query"], r["candidates"])
            local.append((time.perf_counter() - start) * 1000)

        remote = []
        args = ["--ranker", world["ranker"], "--corpus-stats", world["corpus"], "--encoder", f"clsm={world['encoder']}"]
        with served(args) as (_, http):
            http.post("/score", json=reqs[0]).raise_for_status()  # warm-up
            for r in reqs:
                start = time.perf_counter()
                http.post("/score", json=r).raise_for_status()
                remote.append((time.perf_counter() - start) * 1000)
    base, http_ = _percentiles(local), _percentiles(remote)
    figures = {
        "requests": n,
        "candidates": N_CANDIDATES,
        "features": len(scorer.feature_names),
        "in_process": base,
        "http_loopback": http_,
        "ratio_p50_http_over_in_process": http_["p50_ms"] / base["p50_ms"],
        "ratio_p99_http_over_in_process": http_["p99_ms"] / base["p99_ms"],
    }
    print(f"{n} requests x {N_CANDIDATES} candidates, {len(scorer.feature_names)} features (lexical + CLSM cosine)")
    print(f"  in-process Scorer.score (baseline): p50 {base['p50_ms']:.2f} ms  p99 {base['p99_ms']:.2f} ms")
    print(f"  HTTP /score on 127.0.0.1:           p50 {http_['p50_ms']:.2f} ms  p99 {http_['p99_ms']:.2f} ms")
    print(
        f"  ratio http/in-process: p50 {figures['ratio_p50_http_over_in_process']:.2f}x  "
        f"p99 {figures['ratio_p99_http_over_in_process']:.2f}x"
    )
    print(f"results: {write_results('bench_serve', figures)}")


if __name__ == "__main__":
    main()
