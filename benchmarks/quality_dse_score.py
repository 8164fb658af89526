"""DSE on Home Depot: DSSM with the hinge loss -- RBM pre-trained with the dot-product score (the paper's
DSE), the same with cosine, and without RBM pre-training -- each alone as a ranker on held-out queries.

Split, labels and metric are those of ``quality_homedepot.py``: search terms split with a fixed seed into
encoder-training (70 %), validation (15 %, early stopping on NDCG@10 of the encoder's own score) and
test (15 %) queries; test queries with at least two judged products are ranked by the encoder's score
alone; mean NDCG@1/3/10 (gain 2^rel - 1, grades 0..6 = ``linear:1:3:7``). Hinge margin 1 throughout
(for dot this is the paper's setting; for cosine it is half the score's range). BM25 is the reference.

Epochs are capped (``--epochs``, default 4) and torch runs on ``--threads`` (default 1) so the script
stays near 5 minutes on a shared 2-core machine: the figures compare the settings at equal, small
budgets, not converged models.

Run: python benchmarks/quality_dse_score.py [--epochs 4] [--seed 0] [--threads 1]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._common import write_results  # noqa: E402
from benchmarks.quality_homedepot import SPLIT, held_out_test, load, single_feature_table  # noqa: E402
from ltrfeat.encoders.training import train_encoder  # noqa: E402
from ltrfeat.features.lexical import LexicalExtractor  # noqa: E402

CONFIGS = {  # name -> train_encoder options of a DSSM with the hinge loss
    "rbm+dot (DSE)": {"pretrain": "rbm", "score": "dot"},
    "rbm+cosine": {"pretrain": "rbm", "score": "cosine"},
    "dot (no RBM)": {"score": "dot"},
    "cosine (no RBM)": {"score": "cosine"},
}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--epochs", type=int, default=4, help="maximum epochs per encoder")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=1, help="torch threads")
    parser.add_argument("--configs", default=",".join(CONFIGS), help="comma-separated subset of: " + ", ".join(CONFIGS))
    args = parser.parse_args()
    names = [n.strip() for n in args.configs.split(",") if n.strip()]
    start = time.perf_counter()
    pairs, docs = load()
    split, fit_rows, test = held_out_test(pairs, args.seed)
    print(
        f"Home Depot: {len(pairs)} pairs; queries train {len(split['train'])} / valid {len(split['valid'])} / "
        f"test {len(split['test'])} (seed {args.seed}); test rows {len(test)} over {test['qid'].nunique()} "
        f"queries with >= 2 products; {args.epochs} epochs max, {args.threads} torch thread(s)",
        flush=True,
    )

    scores, records = {}, {}
    scores["BM25"] = LexicalExtractor(features=("bm25",), fields=("doc",)).fit(docs).transform(test)[:, 0]
    table = pairs.loc[fit_rows, ["qid", "query", "doc", "label"]]
    val_fraction = SPLIT["valid"] / (SPLIT["train"] + SPLIT["valid"])
    for name in names:
        options = CONFIGS[name]
        t0 = time.perf_counter()
        encoder, history = train_encoder(
            table,
            model="dssm",
            loss="hinge",
            margin=1.0,
            epochs=args.epochs,
            negatives=4,
            val_fraction=val_fraction,
            patience=2,
            seed=args.seed,
            threads=args.threads,
            progress=False,
            **options,
        )
        scores[name] = encoder.similarity(test["query"].tolist(), test["doc"].tolist())
        records[name] = {
            "options": options,
            "best_epoch": encoder.training["best_epoch"],
            "history": history,
            "train_seconds": time.perf_counter() - t0,
        }
        print(
            f"  trained {name}: best epoch {encoder.training['best_epoch']} of {len(history) - 1}, validation "
            f"NDCG@10 {encoder.training['validation']['ndcg@10']:.4f} (epoch 0: {history[0]['val_ndcg@10']:.4f}), "
            f"{time.perf_counter() - t0:.0f} s",
            flush=True,
        )

    validation = {name: f"{r['history'][r['best_epoch']]['val_ndcg@10']:.4f}" for name, r in records.items()}
    results = single_feature_table(test, scores, extra={"_header": "val NDCG@10", **validation}, width=24)
    total = time.perf_counter() - start
    print(f"total {total / 60:.1f} min")
    figures = {
        "split": SPLIT,
        "seed": args.seed,
        "epochs_cap": args.epochs,
        "threads": args.threads,
        "n_test_queries_scored": results["BM25"]["n_evaluated"],
        "results": results,
        "training": records,
        "total_seconds": total,
    }
    print(f"wrote {write_results('quality_dse_score', figures)}")


if __name__ == "__main__":
    main()
