"""Single-feature ranking quality on Home Depot: BM25, DSSM, CLSM (softmax and generalized loss) and MiniLM.

Queries (search terms) are split with a fixed seed into encoder-training (70 %), validation (15 %) and
test (15 %) queries. Each encoder is trained on the training and validation queries' judged pairs
(grades 0..6 = ``linear:1:3:7`` of the 1..3 relevance averages) with the validation queries held out
for early stopping on NDCG@10 (``train_encoder``'s ``val_fraction`` set to their share -- its own
seeded split by query, so the validation queries are chosen there); no test query is ever trained on.
On the test queries with at least two judged products each feature alone ranks the products: mean
NDCG@1/3/10 from ``ltrfeat.core.metrics.evaluate_queries`` (gain 2^rel - 1, the expected value over the orders of
tied scores, queries without a relevant product excluded). BM25 uses corpus statistics of all product titles (no labels);
MiniLM (all-MiniLM-L6-v2) is used zero-shot.

Epochs are capped (``--epochs``; early stopping usually ends CLSM runs at epoch 2-5). Target: CLSM alone
beats BM25 alone at NDCG@1, judged on "CLSM (tuned)", whose options were chosen on the validation queries
by ``tune_clsm_homedepot.py``.

Run: python benchmarks/quality_homedepot.py [--epochs 8] [--seed 0] [--only 'CLSM (tuned)' ...]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._common import home_depot_pairs, write_results  # noqa: E402
from ltrfeat.encoders.sbert import SbertEncoder  # noqa: E402
from ltrfeat.encoders.training import train_encoder  # noqa: E402
from ltrfeat.features.lexical import LexicalExtractor  # noqa: E402
from ltrfeat.core.metrics import evaluate_queries, summarise_queries  # noqa: E402

SPLIT = {"train": 0.70, "valid": 0.15, "test": 0.15}
METRICS = "ndcg@1,3,10"
ENCODERS = {  # name -> train_encoder options (J = 4 random negatives + in-batch negatives, gamma 10)
    "DSSM (softmax)": {"model": "dssm", "loss": "softmax"},
    "CLSM (softmax)": {"model": "clsm", "loss": "softmax"},
    "CLSM (generalized)": {"model": "clsm", "loss": "generalized"},
    # chosen on validation queries by tune_clsm_homedepot.py: one shared tower, trigrams seen < 3 times unknown
    "CLSM (tuned)": {"model": "clsm", "loss": "softmax", "shared": True, "min_count": 3},
    # distilled from MiniLM first (--teacher sbert), then trained on the judgments
    "CLSM (generalized, MiniLM teacher)": {"model": "clsm", "loss": "generalized", "teacher": "sbert"},
}
TARGET = "CLSM (tuned)"


def load():
    pairs, docs = home_depot_pairs()
    title = docs.set_index("docid")["doc"]
    pairs = pairs.assign(doc=title.loc[pairs["docid"]].to_numpy()).reset_index(drop=True)
    return pairs, docs.reset_index(drop=True)


def split_queries(qids, seed: int) -> dict[str, set]:
    distinct = np.array(sorted(set(qids)))
    order = np.random.default_rng(seed).permutation(len(distinct))
    n_train = int(SPLIT["train"] * len(distinct))
    n_valid = int(SPLIT["valid"] * len(distinct))
    parts = np.split(distinct[order], [n_train, n_train + n_valid])
    return dict(zip(SPLIT, map(set, parts)))


def held_out_test(pairs: pd.DataFrame, seed: int):
    """``(split, fit_rows, test)``: the query split, the rows encoders may train on (training and validation
    queries) and the test rows of queries with at least two judged products."""
    split = split_queries(pairs["qid"], seed)
    fit_rows = pairs["qid"].isin(split["train"] | split["valid"]).to_numpy()
    test = pairs[pairs["qid"].isin(split["test"]).to_numpy()]
    test = test[test.groupby("qid")["qid"].transform("size") >= 2].reset_index(drop=True)
    assert not set(test["qid"]) & set(pairs.loc[fit_rows, "qid"])
    return split, fit_rows, test


def ndcg(test: pd.DataFrame, scores) -> dict:
    per_query = evaluate_queries(test["qid"], test["label"], np.asarray(scores, dtype=np.float64), METRICS)
    return summarise_queries(per_query)


def single_feature_table(test: pd.DataFrame, scores: dict, *, extra: dict | None = None, width: int = 20) -> dict:
    """NDCG of each feature's scores on the test rows, printed as a table with the ratio to BM25 (``scores``
    must hold "BM25"); ``extra`` maps a feature name to a trailing cell, ``{"_header": title}`` names it."""
    extra = extra or {}
    results = {name: ndcg(test, s) for name, s in scores.items()}
    base = results["BM25"]["metrics"]
    print(
        f"\nsingle-feature ranking on {results['BM25']['n_evaluated']} test queries "
        f"({results['BM25']['conventions']['description'].split(';')[0]}):"
    )
    cell = width - 6
    print(
        f"  {'feature':<{width}} {'NDCG@1':>{cell}} {'NDCG@3':>{cell}} {'NDCG@10':>{cell}}"
        + (f"  {extra['_header']}" if "_header" in extra else "")
    )
    for name, res in results.items():
        m = res["metrics"]
        cells = [f"{m[k]:.4f} ({m[k] / base[k]:.3f}x)" for k in ("ndcg@1", "ndcg@3", "ndcg@10")]
        print(
            f"  {name:<{width}} "
            + " ".join(f"{c:>{cell}}" for c in cells)
            + (f"  {extra[name]}" if name in extra else "")
        )
    return results


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--epochs", type=int, default=8, help="maximum epochs per encoder")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--only",
        action="append",
        choices=list(ENCODERS),
        default=None,
        help="train only these encoders (repeatable; BM25 and MiniLM are always scored)",
    )
    args = parser.parse_args()
    encoders = {name: ENCODERS[name] for name in (args.only or ENCODERS)}
    start = time.perf_counter()
    pairs, docs = load()
    split, fit_rows, test = held_out_test(pairs, args.seed)
    print(
        f"Home Depot: {len(pairs)} pairs; queries train {len(split['train'])} / valid {len(split['valid'])} / "
        f"test {len(split['test'])} (seed {args.seed}); test rows scored {len(test)} over "
        f"{test['qid'].nunique()} queries with >= 2 products; torch threads {torch.get_num_threads()}"
    )

    scores, records = {}, {}
    bm25 = LexicalExtractor(features=("bm25",), fields=("doc",)).fit(docs)
    scores["BM25"] = bm25.transform(test)[:, 0]

    table = pairs.loc[fit_rows, ["qid", "query", "doc", "label"]]
    val_fraction = SPLIT["valid"] / (SPLIT["train"] + SPLIT["valid"])
    for name, options in encoders.items():
        t0 = time.perf_counter()
        encoder, history = train_encoder(
            table,
            epochs=args.epochs,
            negatives=4,
            val_fraction=val_fraction,
            patience=2,
            seed=args.seed,
            progress=False,
            **options,
        )
        scores[name] = encoder.similarity(test["query"], test["doc"])
        records[name] = {
            "options": options,
            "best_epoch": encoder.training["best_epoch"],
            "history": history,
            "train_seconds": time.perf_counter() - t0,
        }
        print(
            f"  trained {name}: best epoch {encoder.training['best_epoch']} of {len(history) - 1}, "
            f"validation NDCG@10 {encoder.training['validation']['ndcg@10']:.4f}, "
            f"{time.perf_counter() - t0:.0f} s"
        )

    t0 = time.perf_counter()
    scores["MiniLM (zero-shot)"] = SbertEncoder.load().similarity(test["query"], test["doc"])
    print(f"  MiniLM scored {len(test)} pairs in {time.perf_counter() - t0:.0f} s")

    results = single_feature_table(test, scores)
    base = results["BM25"]["metrics"]
    clsm_wins = results[TARGET]["metrics"]["ndcg@1"] > base["ndcg@1"] if TARGET in results else None
    verdict = {True: "met", False: "NOT met", None: f"not measured ({TARGET} not trained)"}[clsm_wins]
    print(f"target CLSM alone beats BM25 alone at NDCG@1 ({TARGET}, options chosen on validation queries): {verdict}")
    total = time.perf_counter() - start
    print(f"total {total / 60:.1f} min")
    figures = {
        "split": SPLIT,
        "seed": args.seed,
        "epochs_cap": args.epochs,
        "n_test_queries_scored": results["BM25"]["n_evaluated"],
        "results": results,
        "training": records,
        "clsm_beats_bm25_at_ndcg1": clsm_wins,
        "target_encoder": TARGET,
        "total_seconds": total,
    }
    print(f"wrote {write_results('quality_homedepot', figures)}")


if __name__ == "__main__":
    main()
