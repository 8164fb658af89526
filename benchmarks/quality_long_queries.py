"""Long natural-language queries over long documents: do the span-pre-trained encoders hold up?

The issue's second held-out set (225 long needs over 1,398 scientific abstracts, BM25 top-100 candidates) showed
``+spans`` below BM25 alone there, and no lift, while zero-shot MiniLM beat BM25. This benchmark rebuilds that
setting from the project's own generator: ``ltrfeat datasets synth --long-queries`` -- needs of 5 to 25 words
("i need a sturdy writing desk for small apartments in espresso"), judged 0-3 from the generator's latent intent
against the products' descriptions (30-50 words), each query's candidates the BM25 top-k of the descriptions
(hard negatives: lexically close, wrong type or attribute; one fully matching product swapped in where none made
it). Then one ``ltrfeat ablate`` on the judged pairs, descriptions as the document field and ``--collection
docs.tsv --collection-field description`` for the span pre-training: ``sbert`` (zero-shot MiniLM),
``clsm:generalized+spans``, ``dssm:generalized+spans``, ``clsm:generalized+spans+teacher``; 3 query folds, ranker
seeds 0,1,2; ``--spans-per-doc`` 4 spans per description (3,132 spans at 800 descriptions: MiniLM encodes each
for ``+spans+teacher``; 0 for the ablation's default, 16 there). ``--span-words MIN-MAX`` runs the span encoders again in a second ablation on the same folds with spans
of MIN to MAX words (the default spans are 1-4 words, cut for title-like queries).

Printed per ablation: NDCG@1/@10 of every feature alone (BM25 among the lexical ones) and of lexical + each feature
(the lexical set's ranker, model selection as the CLI's default), and paired randomisation tests (Holm) of each
neural feature alone against BM25 alone and against MiniLM alone, and of lexical+X against lexical and against
lexical+MiniLM.

``--encoders`` names the span encoders beside ``sbert`` (default: the three above); ``--spans-per-doc 0`` keeps each
encoder's own default (``+spans+teacher``: 16 spans per description here, and the whole descriptions as spans too,
``span_whole``, since the collection's documents are long, and each fold training first distils MiniLM's vectors of
its own training needs, ``fold_distill_epochs``).

Run: python benchmarks/quality_long_queries.py [--queries 240] [--docs 800] [--span-words 8-24] [--cache DIR]
         [--spans-per-doc 0] [--encoders clsm:generalized+spans+teacher] [--option fold_distill_epochs=0] [--tag TAG]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT)]

from benchmarks._common import report_means, run_ltrfeat, write_results  # noqa: E402

SPAN_SPECS = ("clsm:generalized+spans", "dssm:generalized+spans", "clsm:generalized+spans+teacher")
METRICS = ("ndcg@10", "ndcg@1")


def _ablate(world: Path, report: Path, options: list[str], cache, specs) -> float:
    return run_ltrfeat(
        "ablate",
        *("--pairs", world / "judged.tsv"),
        *("--k-folds", 3, "--seeds", "0,1,2"),
        *[a for spec in ("sbert", *specs) for a in ("--encoder", spec)],
        *("--collection", world / "docs.tsv", "--collection-field", "description"),
        *[a for option in options for a in ("--encoder-option", option)],
        *(("--cache", cache) if cache else ()),
        *("--report", report),
    )


def _summary(report: Path) -> dict:
    """Means of every feature set (no ranker variants) at METRICS, span pre-training seconds, paired tests."""
    rep = json.loads((report / "report.json").read_text())
    means = report_means(report, METRICS)
    sets = sorted({key.split("|")[0] for key in means})
    alone = [s for s in sets if s.endswith("_doc_cos") and not s.startswith("sbert")]
    pairs = [f"{reference}:{s}" for reference in ("bm25_doc", "sbert_doc_cos") for s in alone]
    pairs += [f"lexical:{s}" for s in sets if s.startswith("lexical+")]
    pairs += [f"lexical+sbert:lexical+{s.removesuffix('_doc_cos')}" for s in alone]  # each lift against MiniLM's
    compared = json.loads(
        run_ltrfeat("compare", report, *pairs, "--metrics", ",".join(METRICS), "--json", capture=True)
    )
    pretraining = {
        name: e["jobs"]["span pre-training"]
        for name, e in rep["stage_seconds"]["encoders"].items()
        if "span pre-training" in e.get("jobs", {})
    }
    return {"means": means, "compare": compared, "pretraining_seconds": pretraining}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--queries", type=int, default=240)
    ap.add_argument("--docs", type=int, default=800)
    ap.add_argument("--candidates", default="20-20", help="candidates per query (BM25 top-k), MIN-MAX")
    ap.add_argument("--seed", type=int, default=0, help="the world's seed")
    ap.add_argument("--spans-per-doc", type=int, default=4, help="0: the ablation's default (16 at 800 documents)")
    ap.add_argument("--span-words", default="", help="MIN-MAX: a second ablation with spans of this many words")
    ap.add_argument("--skip-default-spans", action="store_true", help="only the --span-words ablation")
    ap.add_argument("--cache", type=Path, default=None)
    ap.add_argument("--encoders", default=",".join(SPAN_SPECS), help="the span encoders beside sbert, comma-separated")
    ap.add_argument("--option", action="append", default=[], help="KEY=VALUE: one more --encoder-option (repeatable)")
    ap.add_argument("--tag", default="", help="results/quality_long_queries[_TAG].json")
    args = ap.parse_args()
    runs: dict[str, list[str]] = {}
    if not args.skip_default_spans:
        runs["spans 1-4 words"] = []
    if args.span_words:
        low, high = args.span_words.split("-")
        runs[f"spans {low}-{high} words"] = [f"span_min_words={low}", f"span_max_words={high}"]
    out: dict = {"settings": vars(args) | {"cache": str(args.cache)}, "seconds": {}, "runs": {}}
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        world = tmp / "world"
        out["seconds"]["world"] = run_ltrfeat(
            *("datasets", "synth", "--out", world, "--seed", args.seed, "--long-queries"),
            *("--queries", args.queries, "--docs", args.docs, "--click-queries", 0, "--candidates", args.candidates),
        )
        out["world"] = json.loads((world / "world.json").read_text())["counts"]
        cache = args.cache or tmp / "cache"  # one MiniLM teacher store for both ablations
        for run, options in runs.items():
            report = tmp / run.replace(" ", "-")
            options = [f"spans_per_doc={args.spans_per_doc}"] * bool(args.spans_per_doc) + options + args.option
            out["seconds"][run] = _ablate(world, report, options, cache, args.encoders.split(","))
            out["runs"][run] = _summary(report)
    print(
        f"long-query world (seed {args.seed}): {args.queries} needs over {args.docs} descriptions, "
        f"{args.candidates} BM25 candidates each; 3 folds, ranker seeds 0,1,2"
    )
    for run, result in out["runs"].items():
        print(f"{run}:")
        for name in sorted({key.split("|")[0] for key in result["means"]}):
            figures = "  ".join(f"{m} {result['means'].get(f'{name}|{m}', float('nan')):.4f}" for m in METRICS)
            print(f"  {name:<52} {figures}")
        print(json.dumps(result["compare"], indent=1))
    print("seconds:", {k: round(v) for k, v in out["seconds"].items()})
    write_results("quality_long_queries" + (f"_{args.tag}" if args.tag else ""), out)


if __name__ == "__main__":
    main()
