"""Where `+spans+teacher` loses to MiniLM: its pre-training alone, before any per-fold fine-tuning.

On the sample world (``data/judged.tsv``; the spans of its 758 judged titles), a CLSM is distilled from MiniLM on
query-like span -> title pairs (positives only, KL on in-batch cosine rankings, as the ablation's ``+spans+teacher``
pre-training), optionally followed by ``--span-epochs`` of the softmax span training under the keep-start rule, and
scored alone (cosine) on all 240 judged queries: NDCG@1 and @10 beside zero-shot MiniLM on the same pairs. No fold,
no query or label is read by the training, so every query is a test query. Each run adds its variant to
results/quality_span_distill.json (``--reset`` starts it afresh).

``--world hd300``: the same on Home Depot, 300 judged queries (quality_small_data's seed-0 draw) with all 54,667
distinct titles as the collection (the spans of every title), scored alone on the 300 queries. ``--loss vector``
regresses each text's student vector onto MiniLM's (``--out 384``: the towers as wide as MiniLM's vectors);
``--model dssm`` distils a DSSM instead.

``--world long``: the long-query world of quality_long_queries.py (240 needs of 5-25 words over 800 descriptions,
20 BM25 candidates each), the descriptions as the collection, scored alone on all 240 needs; ``--span-words MIN-MAX``
sets the spans' lengths and ``--whole`` adds each whole description as one more span (``span_whole``).

Run: python benchmarks/quality_span_distill.py --per-doc 16 --epochs 20 --temperature 0.1 [--span-epochs 5]
     python benchmarks/quality_span_distill.py --world hd300 --per-doc 1 --loss vector --out 384 --batch-size 1024 \
         --teacher-store DIR
     python benchmarks/quality_span_distill.py --world long --per-doc 16 --epochs 20 --loss vector --out 384 \
         --batch-size 1024 --whole [--span-words 8-24] --teacher-store DIR
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT)]

from benchmarks._common import RESULTS, write_results  # noqa: E402

NAME = "quality_span_distill"


def _ndcg(pairs: pd.DataFrame, scores) -> dict:
    from ltrfeat.core.metrics import evaluate_queries

    per_query = evaluate_queries(
        pairs["qid"].to_numpy(),
        pairs["label"].to_numpy(float),
        np.asarray(scores, float),
        ["ndcg@1", "ndcg@10"],
        relevance_threshold=float(np.finfo(np.float64).tiny),
    )
    return {k: round(float(per_query[k].mean()), 4) for k in ("ndcg@1", "ndcg@10")}


def _world(name: str) -> tuple[pd.DataFrame, list[str]]:
    """The judged pairs (grouped by query) and the collection's titles of a world."""
    from ltrfeat.core.text import read_docs, read_judged_pairs
    from ltrfeat.experiments.fold_plans import group_pairs

    if name == "sample":
        return group_pairs(read_judged_pairs(ROOT / "data" / "judged.tsv")), []
    if name == "long":
        from benchmarks._common import run_ltrfeat

        with tempfile.TemporaryDirectory() as tmp:
            world = Path(tmp)
            run_ltrfeat(
                *("datasets", "synth", "--out", world, "--seed", 0, "--long-queries", "--queries", 240, "--docs", 800),
                *("--click-queries", 0, "--candidates", "20-20"),
            )
            pairs = read_judged_pairs(world / "judged.tsv")
            descriptions = read_docs(world / "docs.tsv", fields=["description"], missing="drop")["description"]
        return group_pairs(pairs), descriptions.tolist()
    from benchmarks.quality_small_data import ENCODING, _data

    with tempfile.TemporaryDirectory() as tmp:
        collection, judged = _data(Path(tmp), 300, 0, 0)
        pairs = read_judged_pairs(
            judged,
            columns="query=search_term,doc=product_title,docid=product_uid,label=relevance",
            encoding=ENCODING,
            label_map="linear:1:3:7",
        )
        titles = read_docs(collection, fields=["title"], encoding=ENCODING, missing="drop")["title"].tolist()
    return group_pairs(pairs), titles


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--per-doc", type=int, default=4, help="spans per title")
    ap.add_argument("--epochs", type=int, default=4, help="distillation epochs")
    ap.add_argument("--temperature", type=float, default=0.05)
    ap.add_argument("--loss", default="kl", choices=["kl", "mse", "vector"])
    ap.add_argument("--world", default="sample", choices=["sample", "hd300", "long"])
    ap.add_argument("--span-words", default="1-4", help="MIN-MAX words per span")
    ap.add_argument("--whole", action="store_true", help="each whole document also one of its spans")
    ap.add_argument("--model", default="clsm", choices=["clsm", "dssm"])
    ap.add_argument("--out", type=int, default=128, help="the towers' output width")
    ap.add_argument("--conv", type=int, default=0, help="CLSM convolution width (0: its default); DSSM hidden width")
    ap.add_argument("--batch-size", type=int, default=256, help="distillation pairs per mini-batch")
    ap.add_argument("--lr", type=float, default=3e-3, help="distillation learning rate")
    ap.add_argument("--span-epochs", type=int, default=0, help="softmax span training after the distillation")
    ap.add_argument("--distill-weight", type=float, default=0.0, help="the KL term kept during the span training")
    ap.add_argument("--teacher-store", type=Path, default=None, help="a --cache DIR/teacher store, read and updated")
    ap.add_argument("--reset", action="store_true")
    ap.add_argument("--save", type=Path, default=None, help="also write the pre-trained encoder here")
    args = ap.parse_args()

    import torch

    from ltrfeat.encoders import distill
    from ltrfeat.encoders.training import train_encoder
    from ltrfeat.encoders.weak import span_pairs

    torch.set_num_threads(1)
    if args.teacher_store is not None:
        distill.load_vectors(args.teacher_store)
    pairs, collection = _world(args.world)
    # the long world's descriptions hold every judged document: the collection alone, in its file's order
    texts = collection if args.world == "long" else list(pairs["doc"]) + collection
    titles = list(dict.fromkeys(t for t in texts if isinstance(t, str)))
    docs = pd.DataFrame({"docid": [str(i) for i in range(len(titles))], "text": titles})
    low, high = map(int, args.span_words.split("-"))
    spans = span_pairs(
        docs, field="text", per_doc=args.per_doc, min_words=low, max_words=high, whole=args.whole, negatives=4, seed=0
    )
    start = time.process_time()
    sizes = {"out": args.out} | (
        {} if not args.conv else {"conv": args.conv} if args.model == "clsm" else {"hidden": [args.conv, args.conv]}
    )
    encoder, _ = train_encoder(
        spans,
        model=args.model,
        sizes=sizes,
        distill_lr=args.lr,
        distill_batch_size=args.batch_size,
        loss="softmax",
        epochs=args.span_epochs,
        val_fraction=0.02,
        seed=0,
        teacher="sbert",
        distill_rows="positives",
        distill_epochs=args.epochs,
        distill_loss=args.loss,
        distill_temperature=args.temperature,
        distill_weight=args.distill_weight,
        threads=1,
        progress=False,
    )
    seconds = time.process_time() - start
    record = encoder.training
    if args.save:
        encoder.save(args.save)
    queries, texts = pairs["query"].tolist(), pairs["doc"].tolist()
    variant = {
        "settings": {k: v for k, v in vars(args).items() if k not in ("teacher_store", "reset", "save")},
        "span_pairs": int((spans["label"] > 0).sum()),
        "titles": len(titles),
        "student": _ndcg(pairs, encoder.similarity(queries, texts)),
        "minilm": _ndcg(pairs, distill.CachedTeacher("sbert").similarity(queries, texts)),
        "agreement_after": record["pretrain"]["agreement"]["after"],
        "keep_start": record.get("keep_start"),
        "cpu_seconds": round(seconds, 1),
    }
    print(json.dumps(variant))
    if args.teacher_store is not None:  # MiniLM's vectors of new spans, for the next variant
        distill.save_vectors(args.teacher_store)
    path = RESULTS / f"{NAME}.json"
    variant["settings"]["world"] = args.world
    runs = [] if args.reset or not path.exists() else json.loads(path.read_text())["figures"]["runs"]
    write_results(NAME, {"world": "pre-training alone, scored on all judged queries", "runs": runs + [variant]})


if __name__ == "__main__":
    main()
