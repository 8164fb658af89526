"""How far a MiniLM fine-tuning step runs from this CPU's limit: the dense fp32 multiply-adds of one step of
``sbert-ft``'s trained top layers against the multiply-adds per second a large fp32 matrix product reaches here.

Peak: torch's 1024 x 1024 @ 1024 x 1024 fp32 product at one thread (the pool's workers run one thread each), best
of ``--repeat``. Both are timed in CPU seconds of the process (one thread), so other jobs on the machine do not
count. Step: the packaged all-MiniLM-L6-v2 with its embeddings and 4 lower layers frozen and their states
kept (as an ablation trains it), a batch of ``--batch`` (query, title) pairs of Home Depot's (else ``--pairs``),
forward through the 2 trained layers on the real tokens packed end to end, mean pooling, the in-batch softmax loss
over cosines, backward, AdamW; best of ``--repeat`` steps. Multiply-adds counted per real token and trained
layer: Q, K, V and output projections 4 x 384 x 384, feed-forward 2 x 384 x 1536 (1.77 M), plus attention 2 x
tokens-of-the-text x 384; backward twice the forward (gradients of the inputs and of the weights).

Run: python benchmarks/bench_minilm_limit.py [--pairs FILE] [--batch 32] [--repeat 5]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT)]

from benchmarks._common import HOME_DEPOT, write_results  # noqa: E402


def _peak(repeat: int) -> float:
    """Multiply-adds per second of a 1024^3 fp32 product at one thread (best of ``repeat``)."""
    import torch

    a, b = torch.randn(1024, 1024), torch.randn(1024, 1024)
    best = float("inf")
    for _ in range(repeat):
        start = time.process_time()
        a @ b
        best = min(best, time.process_time() - start)
    return 1024**3 / best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pairs", type=Path, default=HOME_DEPOT)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()

    import pandas as pd
    import torch
    import torch.nn.functional as F
    from sentence_transformers import SentenceTransformer

    from ltrfeat.encoders import sbert_prefix
    from ltrfeat.encoders.sbert import packaged_model_path
    from ltrfeat.encoders.sbert_training import _transformer, frozen_key

    torch.set_num_threads(1)
    torch.manual_seed(0)
    if args.pairs.suffix == ".tsv":
        pairs = pd.read_csv(args.pairs, sep="\t")
    else:
        pairs = pd.read_csv(args.pairs, encoding="latin-1").rename(
            columns={"search_term": "query", "product_title": "doc"}
        )
    batch = pairs.drop_duplicates("query").head(args.batch)
    queries, docs = batch["query"].astype(str).tolist(), batch["doc"].astype(str).tolist()
    base = str(packaged_model_path())
    model = SentenceTransformer(base, device="cpu")
    hf = _transformer(model, base)
    for p in model.parameters():
        p.requires_grad_(False)
    for layer in hf.encoder.layer[4:]:
        for p in layer.parameters():
            p.requires_grad_(True)
    key = frozen_key(model, 4, base=base, max_seq_length=model.max_seq_length)
    prefix = sbert_prefix.FrozenPrefix(model, 4, key=key, transformer=hf)
    states = prefix.states(queries + docs)
    lengths = [len(s) for s in states]
    width, inner, trained = 384, 1536, 2
    dense = 4 * width * width + 2 * width * inner
    forward = sum(n * (dense + 2 * n * width) for n in lengths) * trained
    step_macs = 3 * forward  # forward, then backward: gradients of inputs and of weights
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=2e-5, fused=True)
    model.train()
    best = float("inf")
    for _ in range(args.repeat):
        start = time.process_time()
        q, d = F.normalize(prefix.forward(queries), dim=1), F.normalize(prefix.forward(docs), dim=1)
        loss = F.cross_entropy(20.0 * q @ d.T, torch.arange(len(queries)))
        opt.zero_grad()
        loss.backward()
        opt.step()
        best = min(best, time.process_time() - start)
    peak = _peak(args.repeat)
    figures = {
        "texts": len(lengths),
        "tokens": int(sum(lengths)),
        "step_seconds": round(best, 4),
        "step_multiply_adds": int(step_macs),
        "step_gmacs_per_second": round(step_macs / best / 1e9, 2),
        "peak_gmacs_per_second": round(peak / 1e9, 2),
        "share_of_peak": round(step_macs / best / peak, 3),
    }
    print(
        f"{figures['texts']} texts, {figures['tokens']} tokens: a step of the 2 trained layers {best * 1e3:.1f} ms, "
        f"{step_macs / 1e9:.2f} G multiply-adds = {figures['step_gmacs_per_second']} G/s; one thread's fp32 peak "
        f"{figures['peak_gmacs_per_second']} G/s: {figures['share_of_peak']:.0%} of it"
    )
    write_results("bench_minilm_limit", figures)


if __name__ == "__main__":
    main()
