"""Small-data neural features: does pre-training the CLSM on the collection's own text make it earn its place?

Setting (the issue's "few judged queries, larger unlabelled collection"): 300 Home Depot queries drawn with a
seed (``--queries``, among queries with at least two judged products) are the judged data; the collection is
every distinct product title of train.csv (54,667 titles, no judgment and no query read). Variants, all CLSM
with the GDSSM generalized loss on each fold's judged training pairs:

  scratch        clsm:generalized                 trained from random weights on the fold's pairs
  teacher        clsm:generalized+teacher         distilled from MiniLM on the fold's pairs, then trained
  collection     clsm:generalized+spans           pre-trained inside the ablation on query-like spans of the
                 --collection collection.tsv      collection's titles (softmax loss, in-batch and random
                                                  negatives), then trained
  collection+T   clsm:generalized+init=SPANS_T    (with --teacher-spans) the span pre-training first distilled
                                                  from MiniLM, made by train-encoder --from-docs --teacher sbert

beside ``sbert`` (zero-shot MiniLM) and the lexical features (BM25 and others) in one ``ltrfeat ablate`` run:
3 query folds (split seed 0), ranker seeds 0,1,2, default selection. Printed per variant: NDCG@1/@10 alone
(test queries of every fold), the LambdaMART lift over lexical, and paired randomisation tests (Holm over the
printed comparisons) of lexical+variant against lexical+sbert and of the variant alone against BM25 alone and
MiniLM alone; the pre-training costs in seconds.

Run: python benchmarks/quality_small_data.py [--queries 300] [--spans-per-doc 4] [--epochs 5] [--teacher-spans]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT)]

from benchmarks._common import HOME_DEPOT, write_results  # noqa: E402


def _ltrfeat(*args) -> float:
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "ltrfeat.cli.main", *map(str, args)],
        cwd=ROOT,
        text=True,
        capture_output=True,
        env={**__import__("os").environ, "CI": "1"},
    )
    if done.returncode:
        sys.exit(f"ltrfeat {' '.join(map(str, args[:3]))} failed: {done.stderr[-3000:]}")
    return time.perf_counter() - start


def _data(tmp: Path, n_queries: int, seed: int) -> tuple[Path, Path]:
    raw = pd.read_csv(HOME_DEPOT, encoding="latin-1", dtype=str)
    titles = raw.drop_duplicates("product_uid")[["product_uid", "product_title"]]
    titles.columns = ["docid", "title"]
    titles.to_csv(tmp / "collection.tsv", sep="\t", index=False)
    sizes = raw.groupby("search_term").size()
    eligible = np.sort(sizes[sizes >= 2].index.to_numpy())
    chosen = set(np.random.default_rng(seed).choice(eligible, n_queries, replace=False))
    sub = raw[raw["search_term"].isin(chosen)]
    sub.to_csv(tmp / "judged.csv", index=False)
    return tmp / "collection.tsv", tmp / "judged.csv"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--queries", type=int, default=300)
    ap.add_argument("--spans-per-doc", type=int, default=4)
    ap.add_argument("--teacher-spans-per-doc", type=int, default=2)
    ap.add_argument("--epochs", type=int, default=5)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--teacher-spans", action="store_true", help="also the MiniLM-distilled span pre-training")
    args = ap.parse_args()
    if not HOME_DEPOT.exists():
        sys.exit(f"Home Depot data not found at {HOME_DEPOT}")
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        collection, judged = _data(tmp, args.queries, args.seed)
        common = [
            "--from-docs",
            collection,
            "--pair",
            "spans:title",
            "--model",
            "clsm",
            "--loss",
            "softmax",
            "--epochs",
            args.epochs,
            "--val-fraction",
            0.02,
        ]
        seconds = {}
        variants = {
            "scratch": "clsm:generalized",
            "teacher": "clsm:generalized+teacher",
            "collection": "clsm:generalized+spans",
        }
        if args.teacher_spans:
            seconds["collection+T"] = _ltrfeat(
                "train-encoder",
                *common,
                "--spans-per-doc",
                args.teacher_spans_per_doc,
                "--teacher",
                "sbert",
                "--out",
                tmp / "spans_t.ltrenc",
            )
            variants["collection+T"] = f"clsm:generalized+init={tmp / 'spans_t.ltrenc'}"
        report = tmp / "report"
        seconds["ablation"] = _ltrfeat(
            "ablate",
            "--pairs",
            judged,
            "--encoding",
            "latin-1",
            "--label-map",
            "linear:1:3:7",
            "--columns",
            "query=search_term,doc=product_title,docid=product_uid,label=relevance",
            "--k-folds",
            3,
            "--seeds",
            "0,1,2",
            *[a for v in variants.values() for a in ("--encoder", v)],
            "--encoder",
            "sbert",
            "--collection",
            collection,
            "--encoder-option",
            f"spans_per_doc={args.spans_per_doc}",
            "--encoder-option",
            f"span_epochs={args.epochs}",
            "--report",
            report,
        )
        encoders = json.loads((report / "report.json").read_text())["stage_seconds"]["encoders"]
        seconds["collection"] = encoders["clsm-generalized-spans"]["jobs"]["span pre-training"]
        rep = json.loads((report / "report.json").read_text())
        sets = sorted({r["feature_set"] for r in rep["results"]})
        means = {(r["feature_set"], r["metric"]): r["mean"] for r in rep["results"]}
        print(
            f"Home Depot, {args.queries} judged queries (seed {args.seed}), collection of "
            f"{sum(1 for _ in open(collection)) - 1} titles; 3 folds, ranker seeds 0,1,2"
        )
        print("feature sets:", ", ".join(sets))
        out = {
            "settings": vars(args),
            "seconds": seconds,
            "sets": sets,
            "means": {f"{s}|{m}": v for (s, m), v in means.items()},
        }
        pairs = [
            f"lexical+sbert:lexical+{s.split('lexical+', 1)[1]}"
            for s in sets
            if s.startswith("lexical+clsm") and "/" not in s
        ]
        alone = [s for s in sets if s.startswith("clsm") and s.endswith("_doc_cos")]
        pairs += [f"{reference}:{s}" for reference in ("bm25_doc", "sbert_doc_cos") for s in alone]
        done = subprocess.run(
            [sys.executable, "-m", "ltrfeat.cli.main", "compare", report, *pairs, "--metrics", "ndcg@1,10", "--json"],
            cwd=ROOT,
            text=True,
            capture_output=True,
        )
        out["compare"] = json.loads(done.stdout) if done.returncode == 0 else done.stderr
        for s in sets:
            print(
                f"  {s:<45} NDCG@1 {means.get((s, 'ndcg@1'), float('nan')):.4f}  "
                f"NDCG@10 {means.get((s, 'ndcg@10'), float('nan')):.4f}"
            )
        print("seconds:", {k: round(v) for k, v in seconds.items()})
        print(done.stdout if done.returncode == 0 else done.stderr)
        write_results("quality_small_data", out)


if __name__ == "__main__":
    main()
