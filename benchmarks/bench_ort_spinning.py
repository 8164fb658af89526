"""MiniLM's ONNX Runtime pass with idle threads spinning (ONNX Runtime's default) or sleeping, quiet and beside a
busy process, paired.

Samples distinct Home Depot titles (seeded), exports MiniLM once per setting at ``--threads`` intra-op threads
(``OnnxMiniLM.export(spin=...)``) and encodes the titles with each in turn, the order alternating every round,
first alone and then beside one process that spins on a core (``python -c "while 1: pass"`` at this process's
nice). Records each pass's CPU seconds (user + sys of this process, ONNX Runtime's threads included) and wall
seconds, the paired ratios (sleeping over spinning) and whether the vectors are identical.

    python benchmarks/bench_ort_spinning.py [--texts 1500] [--threads 2] [--rounds 3]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time

import numpy as np
import pandas as pd

from _common import HOME_DEPOT, write_results


def _cpu() -> float:
    times = os.times()
    return times.user + times.system


def _titles(n: int, seed: int) -> list[str]:
    rows = pd.read_csv(HOME_DEPOT, encoding="latin-1", usecols=["product_title"]).drop_duplicates()
    return rows.sample(frac=1.0, random_state=seed)["product_title"].head(n).tolist()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--texts", type=int, default=1500, help="distinct titles per pass")
    parser.add_argument("--threads", type=int, default=2, help="ONNX Runtime intra-op threads")
    parser.add_argument("--rounds", type=int, default=3, help="paired rounds per load")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    import torch

    from ltrfeat.encoders.sbert import SbertEncoder
    from ltrfeat.encoders.sbert_onnx import OnnxMiniLM

    torch.set_num_threads(args.threads)
    titles = _titles(args.texts, args.seed)
    model = SbertEncoder.load().model
    runners = {name: OnnxMiniLM.export(model, threads=args.threads, spin=name == "spin") for name in ("spin", "sleep")}
    vectors = {}
    passes: dict = {"quiet": {"spin": [], "sleep": []}, "busy": {"spin": [], "sleep": []}}
    for load in ("quiet", "busy"):
        busy = subprocess.Popen([sys.executable, "-c", "while 1: pass"]) if load == "busy" else None
        try:
            time.sleep(0.5 if busy else 0.0)
            for turn in range(args.rounds):
                for name in ("spin", "sleep") if turn % 2 == 0 else ("sleep", "spin"):
                    cpu, wall = _cpu(), time.perf_counter()
                    got = runners[name].encode(titles)
                    cpu, wall = _cpu() - cpu, time.perf_counter() - wall
                    vectors.setdefault(name, got)
                    passes[load][name].append({"cpu_seconds": cpu, "wall_seconds": wall})
                    print(f"{load:5s} round {turn} {name:5s} {cpu:6.1f} cpu-s {wall:6.1f} s", flush=True)
        finally:
            if busy is not None:
                busy.kill()
                busy.wait()
    summary = {}
    for load, runs in passes.items():
        ratio = {
            k: float(np.mean([b[k] / a[k] for a, b in zip(runs["spin"], runs["sleep"])]))
            for k in ("cpu_seconds", "wall_seconds")
        }
        summary[load] = {
            "spin": {k: float(np.mean([r[k] for r in runs["spin"]])) for k in ("cpu_seconds", "wall_seconds")},
            "sleep": {k: float(np.mean([r[k] for r in runs["sleep"]])) for k in ("cpu_seconds", "wall_seconds")},
            "sleep_over_spin": ratio,
        }
        print(
            f"{load}: CPU sleep/spin {ratio['cpu_seconds']:.3f}, wall {ratio['wall_seconds']:.3f} "
            f"(means over {args.rounds} paired rounds)"
        )
    identical = bool(np.array_equal(vectors["spin"], vectors["sleep"]))
    print(f"vectors identical: {identical}")
    figures = {
        "texts": len(titles),
        "threads": args.threads,
        "rounds": args.rounds,
        "onnxruntime": __import__("onnxruntime").__version__,
        "load_average": list(os.getloadavg()),
        "passes": passes,
        "summary": summary,
        "vectors_identical": identical,
    }
    print(write_results("ort_spinning", figures))


if __name__ == "__main__":
    main()
