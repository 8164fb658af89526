"""Scoring a fine-tuned MiniLM's rows over its kept frozen states: the trained top layers in torch (the
default) against the same layers exported to ONNX Runtime (``sbert.engine=onnx``), paired in one process.

The model is the packaged all-MiniLM-L6-v2 with its 4 lower layers frozen, as ``sbert-ft`` trains it (the top 2
layers are what a fold training changes; their weights do not change the cost); the texts are distinct titles and
queries of a judged-pairs table (default: Home Depot's, else ``--pairs``). The frozen states are made first and
are not timed (an ablation makes them once, in its shared MiniLM pass). Each engine runs ``--rounds`` times,
alternating, at one thread (as the pool's workers do); CPU seconds are the process's. Also printed: the largest
difference between the two engines' vectors and the export's CPU seconds (once per trained encoder).

Run: python benchmarks/bench_minilm_top.py [--pairs FILE] [--titles 3000] [--rounds 2]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT)]

from benchmarks._common import HOME_DEPOT, write_results  # noqa: E402


def _texts(path: Path, titles: int) -> list[str]:
    import pandas as pd

    if path.suffix == ".tsv":
        pairs = pd.read_csv(path, sep="\t")
    else:
        pairs = pd.read_csv(path, encoding="latin-1").rename(columns={"search_term": "query", "product_title": "doc"})
    docs = list(dict.fromkeys(pairs["doc"].astype(str)))[:titles]
    return docs + list(dict.fromkeys(pairs["query"].astype(str)))[: titles // 3]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pairs", type=Path, default=HOME_DEPOT)
    parser.add_argument("--titles", type=int, default=3000)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()

    import numpy as np
    import torch
    from sentence_transformers import SentenceTransformer

    from ltrfeat.encoders import sbert_prefix
    from ltrfeat.encoders._sbert_finetuned import encode_with_prefix
    from ltrfeat.encoders.sbert import packaged_model_path
    from ltrfeat.encoders.sbert_top_onnx import OnnxTop
    from ltrfeat.encoders.sbert_training import _transformer, frozen_key

    torch.set_num_threads(1)
    texts = _texts(args.pairs, args.titles)
    base = str(packaged_model_path())
    model = SentenceTransformer(base, device="cpu")
    model.eval()
    key = frozen_key(model, 4, base=base, max_seq_length=model.max_seq_length)
    prefix = sbert_prefix.FrozenPrefix(model, 4, key=key, transformer=_transformer(model, base))
    prefix.states(texts)
    cpu = time.process_time()
    top = OnnxTop.export(prefix, threads=1)
    export = time.process_time() - cpu
    engines = {"torch": lambda: encode_with_prefix(prefix, texts, batch_size=64), "onnx": lambda: top.encode(texts)}
    seconds: dict[str, list] = {name: [] for name in engines}
    vectors = {}
    for _ in range(args.rounds):
        for name, run in engines.items():
            cpu, wall = time.process_time(), time.perf_counter()
            vectors[name] = run()
            seconds[name].append([round(time.process_time() - cpu, 3), round(time.perf_counter() - wall, 3)])
    ratios = [o[0] / t[0] for o, t in zip(seconds["onnx"], seconds["torch"])]
    figures = {
        "texts": len(texts),
        "pairs": str(args.pairs.name),
        "export_cpu_seconds": round(export, 3),
        "cpu_wall_seconds": seconds,
        "onnx_over_torch_cpu": [round(r, 3) for r in ratios],
        "max_abs_difference": float(np.abs(vectors["onnx"] - vectors["torch"]).max()),
    }
    print(
        f"{len(texts)} texts: torch {[s[0] for s in seconds['torch']]} CPU-s, onnx {[s[0] for s in seconds['onnx']]} "
        f"CPU-s (onnx/torch {', '.join(f'{r:.2f}' for r in ratios)}); export {export:.2f} CPU-s; "
        f"largest difference {figures['max_abs_difference']:.1e}"
    )
    write_results("bench_minilm_top", figures)


if __name__ == "__main__":
    main()
