"""How many distillation epochs a ``+teacher`` CLSM needs on Home Depot: the distilled-then-trained CLSM
(generalized loss, the ablation's defaults otherwise: up to 10 epochs, patience 2, keep-start rule) with
``distill_epochs`` 2, 4 and 8, three encoder seeds each, scored alone on held-out test queries, paired by seed.

Split: ``quality_homedepot.py``'s (seed 0: 70 % training, 15 % validation, 15 % test queries), a seeded sample
of ``--queries`` training+validation queries, and all the test queries; ``train_encoder``
holds out its own 10 % of the training queries for early stopping, as in an ablation. MiniLM vectors are
computed once (the process's teacher cache) and shared by every training.

Run: python benchmarks/quality_distill_epochs.py [--queries 1000] [--epochs 2,4,8] [--seeds 0,1,2]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._common import write_results  # noqa: E402
from benchmarks.quality_homedepot import load, ndcg, split_queries  # noqa: E402
from ltrfeat.encoders.training import train_encoder  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--queries", type=int, default=1000, help="training+validation queries sampled")
    parser.add_argument("--epochs", default="2,4,8", help="distillation epochs to compare (comma-separated)")
    parser.add_argument("--seeds", default="0,1,2", help="encoder seeds (comma-separated)")
    args = parser.parse_args()
    epochs = [int(e) for e in args.epochs.split(",")]
    seeds = [int(s) for s in args.seeds.split(",")]
    pairs, _ = load()
    split = split_queries(pairs["qid"], 0)
    share = args.queries / (len(split["train"]) + len(split["valid"]))
    rng = np.random.default_rng([0, 9])
    test_queries = split["test"]  # all of them: CLSM scores them in seconds, and the comparison is paired
    split = {k: set(rng.choice(sorted(v), int(round(share * len(v))), replace=False)) for k, v in split.items()}
    split["test"] = test_queries
    table = pairs[pairs["qid"].isin(split["train"] | split["valid"]).to_numpy()][["qid", "query", "doc", "label"]]
    table = table.reset_index(drop=True)
    test = pairs[pairs["qid"].isin(split["test"]).to_numpy()].reset_index(drop=True)
    print(f"Home Depot sample: {len(table)} training pairs, {test['qid'].nunique()} test queries", flush=True)
    runs = []
    for seed in seeds:
        for n in epochs:
            start = time.process_time()
            encoder, history = train_encoder(
                table, model="clsm", loss="generalized", seed=seed, teacher="sbert", distill_epochs=n, threads=1
            )
            cpu = time.process_time() - start
            pre = encoder.training["pretrain"]
            m = ndcg(test, encoder.similarity(test["query"], test["doc"]))["metrics"]
            runs.append(
                {
                    "seed": seed,
                    "distill_epochs": n,
                    "test_ndcg@1": m["ndcg@1"],
                    "test_ndcg@10": m["ndcg@10"],
                    "best_epoch": encoder.training["best_epoch"],
                    "epochs_run": len(history) - 1,
                    "kept_start": (encoder.training.get("keep_start") or {}).get("kept"),
                    "distill_seconds": pre["seconds"],
                    "teacher_seconds": pre["teacher_seconds"],
                    "training_cpu_seconds": cpu,
                    "agreement_after": pre["agreement"]["after"]["pearson"],
                }
            )
            r = runs[-1]
            print(
                f"seed {seed} distill {n}: test NDCG@1 {r['test_ndcg@1']:.4f} @10 {r['test_ndcg@10']:.4f}; "
                f"ranking epochs {r['epochs_run']} (best {r['best_epoch']}, kept start {r['kept_start']}); "
                f"distil {r['distill_seconds']:.1f} s, cpu {cpu:.1f} s (teacher {r['teacher_seconds']:.1f} s)",
                flush=True,
            )
    summary = {}
    ref = max(epochs)
    for n in epochs:
        mine = [r for r in runs if r["distill_epochs"] == n]
        base = {r["seed"]: r for r in runs if r["distill_epochs"] == ref}
        summary[n] = {
            f"mean_{k}": float(np.mean([r[k] for r in mine]))
            for k in ("test_ndcg@1", "test_ndcg@10", "distill_seconds", "training_cpu_seconds")
        } | {
            f"paired_diff_{k}_vs_{ref}": [r[k] - base[r["seed"]][k] for r in mine]
            for k in ("test_ndcg@1", "test_ndcg@10")
        }
        print(n, summary[n], flush=True)
    write_results("quality_distill_epochs", {"queries": args.queries, "runs": runs, "summary": summary})


if __name__ == "__main__":
    main()
