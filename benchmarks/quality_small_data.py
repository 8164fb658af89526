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
  collection+ST  clsm:generalized+spans+teacher   the same in one step inside the ablation: MiniLM distilled on
                 --collection collection.tsv      the positive span -> title pairs only (--spans-teacher-per-doc
                                                  spans per title, default 1), then the span training, then
                                                  every fold fine-tunes

beside ``sbert`` (zero-shot MiniLM) and the lexical features (BM25 and others) in one ``ltrfeat ablate`` run:
3 query folds (split seed 0), ranker seeds 0,1,2, default selection. Printed per variant: NDCG@1/@10 alone
(test queries of every fold), the LambdaMART lift over lexical, and paired randomisation tests (Holm over the
printed comparisons) of lexical+variant against lexical+sbert and of the variant alone against BM25 alone and
MiniLM alone; the pre-training costs in seconds. ``--variants`` picks the variants (default: scratch, teacher,
collection); collection+ST runs in a second ablation on the same folds (its spans per title differ), with ``sbert``
as its reference, ``--st-option KEY=VALUE`` passing it more encoder options (e.g. distill_epochs=16). With
collection+ST, the scoring speed of its pre-trained CLSM (document tower, hashing included) against MiniLM on the
same 1,000 titles, one torch thread each, in CPU seconds (steadier than wall time on a shared machine).
``--st-spec dssm:generalized+spans+teacher`` runs collection+ST with the DSSM instead.
``--cache DIR`` keeps the ablations' cache (the MiniLM teacher store included) for reruns; ``--collection-docs N``
takes the collection's first N titles only.

Run: python benchmarks/quality_small_data.py [--queries 300] [--spans-per-doc 4] [--epochs 5] [--teacher-spans]
     python benchmarks/quality_small_data.py --variants collection+ST [--cache DIR] [--st-option distill_epochs=16]
         [--st-spec dssm:generalized+spans+teacher]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT)]

from benchmarks._common import HOME_DEPOT, run_ltrfeat, scoring_speed, write_results  # noqa: E402

SPECS = {
    "scratch": "clsm:generalized",
    "teacher": "clsm:generalized+teacher",
    "collection": "clsm:generalized+spans",
    "collection+ST": "clsm:generalized+spans+teacher",
}


ENCODING = "utf-8"  # of the judged and collection files _data writes and the ablations read


def _data(tmp: Path, n_queries: int, seed: int, n_docs: int, *, raw_path: Path = HOME_DEPOT) -> tuple[Path, Path]:
    """The collection (``collection.tsv``) and the judged pairs of ``n_queries`` queries (``judged.csv``) in ``tmp``,
    written in :data:`ENCODING` from Home Depot's latin-1 ``train.csv``."""
    raw = pd.read_csv(raw_path, encoding="latin-1", dtype=str)
    titles = raw.drop_duplicates("product_uid")[["product_uid", "product_title"]]
    titles.columns = ["docid", "title"]
    (titles.head(n_docs) if n_docs else titles).to_csv(tmp / "collection.tsv", sep="\t", index=False, encoding=ENCODING)
    sizes = raw.groupby("search_term").size()
    eligible = np.sort(sizes[sizes >= 2].index.to_numpy())
    chosen = set(np.random.default_rng(seed).choice(eligible, n_queries, replace=False))
    sub = raw[raw["search_term"].isin(chosen)]
    sub.to_csv(tmp / "judged.csv", index=False, encoding=ENCODING)
    return tmp / "collection.tsv", tmp / "judged.csv"


def _ablate(judged, collection, report, variants: dict, options: list[str], cache) -> float:
    return run_ltrfeat(
        "ablate",
        "--pairs",
        judged,
        "--encoding",
        ENCODING,
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
        *[a for option in options for a in ("--encoder-option", option)],
        *(("--cache", cache) if cache else ()),
        "--report",
        report,
    )


def _compare(report: Path) -> tuple[dict, dict, dict | str]:
    """The run's means, its span pre-training seconds per encoder and the paired tests of every CLSM/DSSM variant."""
    rep = json.loads((report / "report.json").read_text())
    sets = sorted({r["feature_set"] for r in rep["results"]})
    means = {f"{r['feature_set']}|{r['metric']}": r["mean"] for r in rep["results"]}
    pretraining = {
        name: e["jobs"]["span pre-training"]
        for name, e in rep["stage_seconds"]["encoders"].items()
        if "span pre-training" in e.get("jobs", {})
    }
    pairs = [
        f"lexical+sbert:lexical+{s.split('lexical+', 1)[1]}"
        for s in sets
        if s.startswith(("lexical+clsm", "lexical+dssm")) and "/" not in s
    ]
    alone = [s for s in sets if s.startswith(("clsm", "dssm")) and s.endswith("_doc_cos")]
    pairs += [f"{reference}:{s}" for reference in ("bm25_doc", "sbert_doc_cos") for s in alone]
    done = subprocess.run(
        [sys.executable, "-m", "ltrfeat.cli.main", "compare", report, *pairs, "--metrics", "ndcg@1,10", "--json"],
        cwd=ROOT,
        text=True,
        capture_output=True,
    )
    return means, pretraining, json.loads(done.stdout) if done.returncode == 0 else done.stderr


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--queries", type=int, default=300)
    ap.add_argument("--spans-per-doc", type=int, default=4)
    ap.add_argument("--teacher-spans-per-doc", type=int, default=2)
    ap.add_argument("--spans-teacher-per-doc", type=int, default=1)
    ap.add_argument("--epochs", type=int, default=5)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--teacher-spans", action="store_true", help="also the MiniLM-distilled span pre-training")
    ap.add_argument("--variants", default="scratch,teacher,collection", help=f"among {', '.join(SPECS)}")
    ap.add_argument("--st-option", action="append", default=[], help="collection+ST: one more --encoder-option")
    ap.add_argument("--st-spec", default=SPECS["collection+ST"], help="collection+ST's spec (a +spans+teacher one)")
    ap.add_argument("--cache", type=Path, default=None)
    ap.add_argument("--collection-docs", type=int, default=0, help="the collection's first N titles (0: all)")
    ap.add_argument("--tag", default="", help="results/quality_small_data[_spans_teacher][_TAG].json")
    args = ap.parse_args()
    if not HOME_DEPOT.exists():
        sys.exit(f"Home Depot data not found at {HOME_DEPOT}")
    chosen = args.variants.split(",")
    if set(chosen) - set(SPECS):
        sys.exit(f"--variants: choose among {', '.join(SPECS)}")
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        collection, judged = _data(tmp, args.queries, args.seed, args.collection_docs)
        seconds = {}
        variants = {name: SPECS[name] for name in chosen if name != "collection+ST"}
        if args.teacher_spans:
            seconds["collection+T"] = run_ltrfeat(
                "train-encoder",
                *("--from-docs", collection, "--pair", "spans:title", "--model", "clsm", "--loss", "softmax"),
                *("--epochs", args.epochs, "--val-fraction", 0.02, "--spans-per-doc", args.teacher_spans_per_doc),
                *("--teacher", "sbert", "--out", tmp / "spans_t.ltrenc"),
            )
            variants["collection+T"] = f"clsm:generalized+init={tmp / 'spans_t.ltrenc'}"
        runs = {}
        if variants:
            options = [f"spans_per_doc={args.spans_per_doc}", f"span_epochs={args.epochs}"]
            seconds["ablation"] = _ablate(judged, collection, tmp / "report", variants, options, args.cache)
            runs["ablation"] = tmp / "report"
        if "collection+ST" in chosen:
            options = [f"spans_per_doc={args.spans_teacher_per_doc}", *args.st_option]  # span_epochs: its default
            spec = {"collection+ST": args.st_spec}
            cache = args.cache or tmp / "cache"
            seconds["ablation+ST"] = _ablate(judged, collection, tmp / "report-st", spec, options, cache)
            runs["ablation+ST"] = tmp / "report-st"
        n_titles = sum(1 for _ in open(collection)) - 1
        print(
            f"Home Depot, {args.queries} judged queries (seed {args.seed}), collection of {n_titles} titles; "
            "3 folds, ranker seeds 0,1,2"
        )
        out: dict = {"settings": vars(args) | {"cache": str(args.cache)}, "seconds": seconds, "runs": {}}
        for run, report in runs.items():
            means, pretraining, compared = _compare(report)
            seconds.update({f"{run}: {name} pre-training": s for name, s in pretraining.items()})
            out["runs"][run] = {"means": means, "compare": compared}
            print(f"{run}:")
            for name in sorted({key.split("|")[0] for key in means}):
                if "/" not in name:
                    print(
                        f"  {name:<45} NDCG@1 {means.get(f'{name}|ndcg@1', float('nan')):.4f}  "
                        f"NDCG@10 {means.get(f'{name}|ndcg@10', float('nan')):.4f}"
                    )
            print(json.dumps(compared, indent=1) if isinstance(compared, (dict, list)) else compared)
        if "collection+ST" in chosen:
            titles = pd.read_csv(collection, sep="\t", dtype=str)["title"].dropna().drop_duplicates().head(1000)
            out["speed"] = scoring_speed(args.cache or tmp / "cache", titles.tolist(), [args.st_spec])
            print("scoring speed (texts per CPU second, one thread):", out["speed"])
        print("seconds:", {k: round(v) for k, v in seconds.items()})
        name = "quality_small_data" + ("_spans_teacher" if chosen == ["collection+ST"] else "")
        write_results(name + (f"_{args.tag}" if args.tag else ""), out)


if __name__ == "__main__":
    main()
