"""Choose CLSM training options on Home Depot VALIDATION queries (never the test queries).

Uses the query split of ``quality_homedepot.py`` (same seed): encoders train on the 70 % training queries
(``train_encoder``'s own 15 % of them held out for early stopping) and are scored, each cosine alone as a
ranker, on the 15 % validation queries with at least two judged products, beside BM25 on the same queries.
The test queries are not loaded. The chosen options go into ``quality_homedepot.py`` as "CLSM (tuned)".

Run: python benchmarks/tune_clsm_homedepot.py [--configs JSON] [--seed 0]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from benchmarks._common import write_results  # noqa: E402
from ltrfeat.encoders.training import train_encoder  # noqa: E402
from ltrfeat.features.lexical import LexicalExtractor  # noqa: E402
from quality_homedepot import load, ndcg, split_queries  # noqa: E402

CONFIGS = {  # name -> train_encoder options (each with J = 4 random + in-batch negatives)
    "softmax": {"loss": "softmax"},
    "generalized + 1 hard negative": {"loss": "generalized", "hard_negatives": 1},
    "softmax, shared tower": {"loss": "softmax", "shared": True},
    "generalized, shared tower": {"loss": "generalized", "shared": True},
    "softmax, shared tower, min_count 3": {"loss": "softmax", "shared": True, "min_count": 3},
}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--configs", default=None, help="JSON {name: train_encoder options} instead of the built-in grid"
    )
    parser.add_argument("--epochs", type=int, default=8)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    configs = json.loads(args.configs) if args.configs else CONFIGS
    pairs, docs = load()
    split = split_queries(pairs["qid"], args.seed)
    train = pairs[pairs["qid"].isin(split["train"])][["qid", "query", "doc", "label"]]
    valid = pairs[pairs["qid"].isin(split["valid"])]
    valid = valid[valid.groupby("qid")["qid"].transform("size") >= 2].reset_index(drop=True)
    bm25 = LexicalExtractor(features=("bm25",), fields=("doc",)).fit(docs)
    results = {"BM25": ndcg(valid, bm25.transform(valid)[:, 0])["metrics"]}
    print(f"validation queries scored: {valid['qid'].nunique()}; BM25 NDCG@1 {results['BM25']['ndcg@1']:.4f}")
    for name, options in configs.items():
        t0 = time.perf_counter()
        encoder, history = train_encoder(
            train,
            model="clsm",
            epochs=args.epochs,
            negatives=4,
            val_fraction=0.15,
            patience=2,
            seed=args.seed,
            progress=False,
            **options,
        )
        results[name] = ndcg(valid, encoder.similarity(valid["query"], valid["doc"]))["metrics"]
        print(
            f"  {name:<40} NDCG@1 {results[name]['ndcg@1']:.4f}  NDCG@10 {results[name]['ndcg@10']:.4f}  "
            f"best epoch {encoder.training['best_epoch']}  {time.perf_counter() - t0:.0f} s",
            flush=True,
        )
    best = max((n for n in results if n != "BM25"), key=lambda n: results[n]["ndcg@1"])
    print(f"chosen on validation NDCG@1: {best}")
    print(
        f"wrote {write_results('tune_clsm_homedepot', {'seed': args.seed, 'configs': configs, 'results': results, 'chosen': best})}"
    )


if __name__ == "__main__":
    main()
