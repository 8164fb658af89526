"""MiniLM's zero-shot pass, torch (sentence-transformers) against ONNX Runtime, on Home Depot texts.

Samples judged (query, title) pairs of Home Depot (seeded), then in one process, at each thread count, encodes
the distinct titles and the distinct queries with each engine in turn (the order alternates between thread counts)
and records CPU seconds (user + sys of the process) and wall seconds per pass, the ONNX export's cost, the largest
vector difference and the largest cosine difference over the sampled pairs, and the frozen-layer states' largest
difference (after ``freeze_layers`` layers, the states sbert-ft's shared pass keeps). The Home Depot estimate is
its 54,667 titles and 11,795 queries at the measured CPU seconds per text.

    python benchmarks/bench_minilm_engine.py [--texts 3000] [--threads 1,2]
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np
import pandas as pd

from _common import HOME_DEPOT, write_results

HD_TITLES, HD_QUERIES = 54_667, 11_795


def _sample(n: int, seed: int) -> tuple[list[str], list[str], list[tuple[str, str]]]:
    rows = pd.read_csv(HOME_DEPOT, encoding="latin-1", usecols=["product_title", "search_term"]).drop_duplicates()
    rows = rows.sample(frac=1.0, random_state=seed)
    titles = list(dict.fromkeys(rows["product_title"]))[:n]
    queries = list(dict.fromkeys(rows["search_term"]))[:n]
    kept_t, kept_q = set(titles), set(queries)
    pairs = [(q, t) for q, t in zip(rows["search_term"], rows["product_title"]) if q in kept_q and t in kept_t]
    return titles, queries, pairs


def _cpu() -> float:
    times = os.times()
    return times.user + times.system


def _timed(fn):
    cpu, wall = _cpu(), time.perf_counter()
    result = fn()
    return result, _cpu() - cpu, time.perf_counter() - wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--texts", type=int, default=3000, help="distinct titles and distinct queries each")
    parser.add_argument("--threads", default="1,2", help="torch / onnxruntime intra-op thread counts")
    parser.add_argument("--freeze-layers", type=int, default=4)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    import torch

    from ltrfeat.encoders import sbert_onnx, sbert_prefix
    from ltrfeat.encoders.sbert import SbertEncoder

    titles, queries, pairs = _sample(args.texts, args.seed)
    model = SbertEncoder.load()
    kinds = {"titles": titles, "queries": queries}
    runs: dict = {}
    vectors: dict = {}
    for turn, threads in enumerate(int(t) for t in args.threads.split(",")):
        torch.set_num_threads(threads)
        runner, export_cpu, export_wall = _timed(lambda: sbert_onnx.runner(model.model))
        figures = runs[str(threads)] = {"export": {"cpu_seconds": export_cpu, "wall_seconds": export_wall}}
        order = ("torch", "onnx") if turn % 2 == 0 else ("onnx", "torch")
        for kind, texts in kinds.items():
            for engine in order:
                encode = model.encode if engine == "torch" else runner.encode
                got, cpu, wall = _timed(lambda: encode(texts))
                vectors.setdefault((engine, kind), got)
                figures.setdefault(kind, {})[engine] = {
                    "texts": len(texts),
                    "cpu_seconds": cpu,
                    "wall_seconds": wall,
                    "texts_per_cpu_second": len(texts) / cpu,
                }
                print(f"{threads} thread(s) {kind:8s} {engine:5s} {cpu:7.1f} cpu-s {wall:7.1f} s", flush=True)
            figures[kind]["cpu_torch_over_onnx"] = (
                figures[kind]["torch"]["cpu_seconds"] / figures[kind]["onnx"]["cpu_seconds"]
            )
        for engine in ("torch", "onnx"):
            per_text = {k: figures[k][engine]["cpu_seconds"] / figures[k][engine]["texts"] for k in kinds}
            figures.setdefault("home_depot_estimate_cpu_seconds", {})[engine] = (
                HD_TITLES * per_text["titles"] + HD_QUERIES * per_text["queries"]
            )

    index = {kind: {t: i for i, t in enumerate(texts)} for kind, texts in kinds.items()}

    def cosines(engine: str) -> np.ndarray:
        q = vectors[(engine, "queries")][[index["queries"][p[0]] for p in pairs]]
        t = vectors[(engine, "titles")][[index["titles"][p[1]] for p in pairs]]
        return (q * t).sum(1)

    sample = titles[:256] + queries[:256]
    hf = model.model[0].auto_model
    torch_states = [
        s.numpy()
        for start in range(0, len(sample), 64)
        for s in sbert_prefix.lower(model.model, hf, args.freeze_layers, sample[start : start + 64])
    ]
    onnx_states = [
        s
        for start in range(0, len(sample), 64)
        for s in runner.run(sample[start : start + 64], layer=args.freeze_layers)[1]
    ]
    figures = {
        "titles": len(titles),
        "queries": len(queries),
        "pairs": len(pairs),
        "batch_size": 64,
        "onnxruntime": __import__("onnxruntime").__version__,
        "threads": runs,
        "max_abs_diff": {
            "vectors": max(float(np.abs(vectors[("torch", k)] - vectors[("onnx", k)]).max()) for k in kinds),
            "pair_cosines": float(np.abs(cosines("torch") - cosines("onnx")).max()),
            f"states_after_{args.freeze_layers}_layers": max(
                float(np.abs(a - b).max()) for a, b in zip(torch_states, onnx_states)
            ),
        },
    }
    path = write_results("minilm_engine", figures)
    print(f"max |d| vectors {figures['max_abs_diff']} -> {path}")


if __name__ == "__main__":
    main()
