"""DeepMatch scoring throughput on Home Depot (query, product title) pairs, beside CLSM's.

DeepMatch scores pairs (no per-text vectors), CLSM encodes each distinct text once and takes cosines,
so pairs/s is the comparable unit. Three figures on the same N pairs, all in this run:

* DeepMatch (``DeepMatch.similarity``): analyzer, vocabulary bags, the active-patch expansion and the
  sparse network, everything included. Its patches come from a real fit (LDA on 20k training pairs, one
  epoch); weights do not change the speed.
* BASELINE CLSM (``Encoder.similarity``, random weights, trigram hasher fitted on the same texts).
* BASELINE dense DeepMatch: the same network evaluated for *every* (pair, patch) -- dense (B, P, N)
  patch inputs, einsum, then the overlap gate -- the direct implementation the sparse one replaces. The
  script checks both give the same scores. Both start from the same word bags (text analysis excluded),
  at the default resolution (50/10 topics, 10 words) and at the paper's (200/50 topics, 20 words).

Also printed: the share of fine patches active per pair (the paper reports ~5% of neurons active).

Run: python benchmarks/bench_deepmatch.py
"""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._common import SHARED, timed, write_results  # noqa: E402
from ltrfeat.encoders._deepmatch import _mixed, score_rows, train_deepmatch  # noqa: E402
from ltrfeat.encoders.encoder import Encoder  # noqa: E402
from ltrfeat.encoders.model import TwoTowerModel, model_config  # noqa: E402
from ltrfeat.encoders.hashing import TrigramHasher  # noqa: E402
from ltrfeat.core.text import read_judged_pairs  # noqa: E402

N_FIT = 20_000
N_SCORE = 20_000
N_DENSE = 4_096


def load_pairs():
    path = SHARED / "datasets" / "home_depot" / "raw" / "train.csv"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return read_judged_pairs(
            path,
            columns="query=search_term,doc=product_title,docid=product_uid,label=relevance",
            encoding="ISO-8859-1",
            label_map="linear:1:3:7",
        )


@torch.inference_mode()
def dense_scores(net, q_bags, d_bags, batch_size=512) -> np.ndarray:
    """Every patch of every pair computed densely, then gated (the baseline)."""
    cfg = net.config
    n_fine, n, k1, latent = cfg["n_fine"], cfg["patch_words"], cfg["units"][0], cfg["latent"]
    lx = net.lx.view(n_fine, n, k1, latent)
    ly = net.ly.view(n_fine, n, k1, latent)
    links, mask = net.links.clamp(min=0), (net.links >= 0).float()
    out = []
    for start in range(0, len(q_bags), batch_size):
        rows = np.arange(start, min(start + batch_size, len(q_bags)))
        x = _patch_inputs(q_bags.take(rows), net.fine_q, cfg["n_query_words"])
        y = _patch_inputs(d_bags.take(rows), net.fine_d, cfg["n_doc_words"])
        pot = (torch.einsum("bpn,pnkd->bpkd", x, lx) * torch.einsum("bpn,pnkd->bpkd", y, ly)).sum(-1) + net.b1
        gate1 = ((x.sum(-1) > 0) & (y.sum(-1) > 0)).float()  # (B, P)
        s1 = _mixed(pot) * gate1[..., None]
        phi = s1[:, links] * mask[None, :, :, None]  # (B, C, W, K1)
        gate2 = ((gate1[:, links] * mask).sum(-1) > 0).float()
        s2 = _mixed(torch.einsum("bcwk,cwkj->bcj", phi, net.w2) + net.b2) * gate2[..., None]
        out.append(torch.sigmoid(net.out(_mixed(net.committee(s2.flatten(1))))).squeeze(-1))
    return torch.cat(out).numpy()


def _patch_inputs(bag, words, n_vocab) -> torch.Tensor:
    onehot = np.zeros((len(bag), n_vocab + 1), dtype=np.float32)  # last column: the -1 padding
    onehot[np.repeat(np.arange(len(bag)), bag.lengths), bag.words] = 1.0
    return torch.from_numpy(onehot[:, words.numpy()])  # (B, P, N)


def main():
    torch.set_num_threads(2)
    pairs = load_pairs()
    rng = np.random.default_rng(0)
    fit_rows = rng.choice(len(pairs), N_FIT, replace=False)
    model, history = train_deepmatch(pairs.iloc[np.sort(fit_rows)], epochs=1, val_fraction=0, seed=0, progress=False)
    paper_model, _ = train_deepmatch(
        pairs.iloc[np.sort(fit_rows)],
        topics=(200, 50),
        patch_words=20,
        epochs=1,
        val_fraction=0,
        seed=0,
        progress=False,
    )
    picked = rng.choice(len(pairs), N_SCORE, replace=False)
    queries, docs = pairs["query"].iloc[picked].tolist(), pairs["doc"].iloc[picked].tolist()

    dm_s, dm_scores = timed(lambda: model.similarity(queries, docs))
    hasher = TrigramHasher().fit(queries + docs)
    torch.manual_seed(0)
    clsm = Encoder(hasher, TwoTowerModel(model_config("clsm", hasher.n_features_)))
    clsm_s, _ = timed(lambda: clsm.similarity(queries, docs))

    sparse_vs_dense = {}
    for label, m in (("default", model), ("paper", paper_model)):
        q_bags, d_bags = m.bags(queries[:N_DENSE], "query"), m.bags(docs[:N_DENSE], "doc")
        rows = np.arange(N_DENSE)
        dense_s, dense = timed(lambda: dense_scores(m.net, q_bags, d_bags))
        sparse_s, sparse = timed(lambda: score_rows(m.net, q_bags, d_bags, rows, rows))
        assert np.allclose(dense, sparse, atol=1e-5), "dense and sparse DeepMatch disagree"
        batch = m.net.batch(q_bags, d_bags)
        sparse_vs_dense[label] = {
            "topics": [m.net.config["n_fine"], m.net.config["n_coarse"]],
            "patch_words": m.net.config["patch_words"],
            "sparse_pairs_per_s": N_DENSE / sparse_s,
            "dense_pairs_per_s": N_DENSE / dense_s,
            "sparse_vs_dense": dense_s / sparse_s,
            "active_fine_patch_share": len(batch.active) / (N_DENSE * m.net.config["n_fine"]),
            "active_coarse_patch_share": len(batch.active2) / (N_DENSE * m.net.config["n_coarse"]),
        }

    figures = {
        "n_pairs": N_SCORE,
        "config": model.net.config,
        "lda_and_one_epoch_s": sum(h["seconds"] for h in history),
        "deepmatch_pairs_per_s": N_SCORE / dm_s,
        "clsm_pairs_per_s": N_SCORE / clsm_s,
        "deepmatch_vs_clsm": clsm_s / dm_s,
        "sparse_vs_dense": sparse_vs_dense,
    }
    print(
        f"DeepMatch scoring, {N_SCORE} Home Depot pairs (topics {model.net.config['n_fine']}/"
        f"{model.net.config['n_coarse']}, {model.net.config['patch_words']} words per side):"
    )
    print(
        f"  DeepMatch            {figures['deepmatch_pairs_per_s']:>10,.0f} pairs/s  "
        f"= {figures['deepmatch_vs_clsm']:.2f}x CLSM"
    )
    print(f"  BASELINE CLSM        {figures['clsm_pairs_per_s']:>10,.0f} pairs/s  (encode distinct texts + cosine)")
    for label, f in sparse_vs_dense.items():
        print(
            f"  sparse vs BASELINE dense network, {label} size ({f['topics'][0]}/{f['topics'][1]} topics, "
            f"{f['patch_words']} words), {N_DENSE} pairs from word bags: {f['sparse_pairs_per_s']:,.0f} vs "
            f"{f['dense_pairs_per_s']:,.0f} pairs/s = {f['sparse_vs_dense']:.1f}x (same scores); active patches "
            f"per pair: fine {f['active_fine_patch_share']:.1%}, coarse {f['active_coarse_patch_share']:.1%}"
        )
    print(f"wrote {write_results('bench_deepmatch', figures)}")


if __name__ == "__main__":
    main()
