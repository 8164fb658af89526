"""Early stopping against the start, where training helps: ``sbert-ft:generalized`` and
``clsm:generalized+teacher`` trained alone on 1,000 Home Depot queries (``quality_distill_epochs.py``'s sample),
three encoder seeds, scored on held-out test queries; the ablation's defaults otherwise (keep-start rule,
``val_fraction`` 0.1). Run it in two source trees (before / after a change) and pair the runs by seed.

Test queries: a seeded sample of ``--test-queries`` of the 1,770 held-out ones (MiniLM scores every test text of a
fine-tuning that replaced its start). A fine-tuning that kept the zero-shot model scores as the zero-shot model
does (``sbert_training.is_zero_shot``): those scores come from the MiniLM vectors computed once. MiniLM vectors are
read from and written to ``--teacher-store`` (:func:`ltrfeat.encoders.distill.save_vectors`), so a second
tree's run encodes nothing again.

Run: python benchmarks/quality_early_stop.py --out results.json [--queries 1000] [--seeds 0,1,2]
     [--encoders sbert-ft,teacher] [--test-queries 300] [--teacher-store DIR]
(``--encoders ""``: only the MiniLM vectors, into the store.)
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.quality_homedepot import load, ndcg, split_queries  # noqa: E402
from ltrfeat.encoders import distill  # noqa: E402
from ltrfeat.encoders.sbert_training import train_sbert  # noqa: E402
from ltrfeat.encoders.training import train_encoder  # noqa: E402


def _sample(queries: int, test_queries: int):
    pairs, _ = load()
    split = split_queries(pairs["qid"], 0)
    share = queries / (len(split["train"]) + len(split["valid"]))
    rng = np.random.default_rng([0, 9])  # quality_distill_epochs.py's training sample
    test_all = split["test"]
    split = {k: set(rng.choice(sorted(v), int(round(share * len(v))), replace=False)) for k, v in split.items()}
    test_ids = set(np.random.default_rng([0, 10]).choice(sorted(test_all), test_queries, replace=False))
    table = pairs[pairs["qid"].isin(split["train"] | split["valid"]).to_numpy()][["qid", "query", "doc", "label"]]
    test = pairs[pairs["qid"].isin(test_ids).to_numpy()].reset_index(drop=True)
    return table.reset_index(drop=True), test


def _train(kind: str, table, seed: int):
    if kind == "sbert-ft":
        return train_sbert(table, loss="generalized", seed=seed, threads=1, progress=False)
    return train_encoder(table, model="clsm", loss="generalized", seed=seed, teacher="sbert", threads=1, progress=False)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True, help="results JSON")
    parser.add_argument("--queries", type=int, default=1000, help="training+validation queries sampled")
    parser.add_argument("--test-queries", type=int, default=300, help="held-out test queries sampled")
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument("--encoders", default="sbert-ft,teacher")
    parser.add_argument("--teacher-store", default=None, help="MiniLM vectors to read first and write back")
    args = parser.parse_args()
    table, test = _sample(args.queries, args.test_queries)
    print(f"{len(table)} training pairs, {test['qid'].nunique()} test queries ({len(test)} pairs)", flush=True)
    if args.teacher_store:
        print(f"{distill.load_vectors(args.teacher_store)} MiniLM vectors read", flush=True)
    zero_shot = distill.CachedTeacher("sbert").similarity(test["query"].tolist(), test["doc"].tolist())
    for side in ("query", "doc"):  # the distillation's, made once
        distill.teacher_vectors("sbert", table[side].tolist(), side=side, key="sbert")
    if args.teacher_store:
        distill.save_vectors(args.teacher_store)
    runs = [{"encoder": "sbert", "test": ndcg(test, zero_shot)["metrics"]}]
    print(f"zero-shot MiniLM: {runs[0]['test']}", flush=True)
    for kind in filter(None, args.encoders.split(",")):
        for seed in [int(s) for s in args.seeds.split(",")]:
            start = time.process_time()
            encoder, history = _train(kind, table, seed)
            cpu = time.process_time() - start
            record = encoder.training
            if record.get("zero_shot"):
                scores = zero_shot
            else:
                scores = encoder.similarity(test["query"].tolist(), test["doc"].tolist())
            keep = record.get("keep_start") or {}
            runs.append(
                {
                    "encoder": kind,
                    "seed": seed,
                    "test": ndcg(test, scores)["metrics"],
                    "training_cpu_seconds": cpu,
                    "kept_start": keep.get("kept"),
                    "best_epoch": record["best_epoch"],
                    "validations": len(history) - 1,
                    "steps": keep.get("steps"),
                    "planned_steps": keep.get("planned_steps"),
                    "distillation": {
                        k: (record.get("pretrain") or {}).get(k) for k in ("seconds", "best_epoch", "steps")
                    },
                    "history": [
                        {k: h.get(k) for k in ("epoch", "val_ndcg@10", "step", "val_seconds")} for h in history
                    ],
                }
            )
            r = runs[-1]
            print(
                f"{kind} seed {seed}: test NDCG@1 {r['test']['ndcg@1']:.4f} @10 {r['test']['ndcg@10']:.4f}; "
                f"kept start {r['kept_start']}, best epoch {r['best_epoch']}, {r['validations']} validations, "
                f"steps {r['steps']} of {r['planned_steps']}; cpu {cpu:.1f} s",
                flush=True,
            )
            Path(args.out).write_text(json.dumps(runs, indent=1))
    if args.teacher_store:
        distill.save_vectors(args.teacher_store)


if __name__ == "__main__":
    main()
