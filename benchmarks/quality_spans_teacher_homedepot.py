"""The cheap distilled feature against MiniLM on all of Home Depot: alone and as a LambdaMART feature.

One ``ltrfeat ablate`` over Home Depot's 74,067 judged pairs (11,795 queries; labels ``linear:1:3:7``) with
``clsm:generalized+spans+teacher`` (span pre-training on the 54,667 titles distilled from MiniLM's vectors, then
fine-tuned per fold on the fold's training queries) and ``sbert`` (zero-shot MiniLM); 3 query folds, ranker seeds
0,1,2, the CLI's default selection. Then paired randomisation tests (Holm) over the test queries: the distilled
feature alone against MiniLM alone and BM25 alone, lexical + it against lexical + MiniLM, each lexical + X against
lexical. Issue 35's criterion: alone within 1% of zero-shot MiniLM; as a feature a lift at least MiniLM's.

``--encoder`` names another cheap spec (``dssm:generalized+spans+teacher``). Given twice or more, the ablation has
every one of them beside MiniLM, and a second ablation from the same cache has the cheap ones only: its lexical + all
(``lexical+cheap``: every cheap column, no MiniLM) is compared with lexical + MiniLM on the same queries.
``--option KEY=VALUE`` passes an ``--encoder-option`` (``clsm.fold_distill_epochs=5``: each fold training first distils
MiniLM's vectors of its own training pairs, the default on long documents only), ``--split-seed N`` draws other query
folds and encoder seeds (a replicate of the whole comparison), ``--tag`` names the results file
(``quality_spans_teacher_homedepot_TAG.json``).

Run: python benchmarks/quality_spans_teacher_homedepot.py [--cache DIR] [--encoder SPEC ...] [--option KEY=VALUE]
         [--split-seed N] [--tag TAG] [--from-report DIR [--cheap-report DIR]]
(``--from-report``: summarise a report this command's ablation already wrote instead of running it;
``--cheap-report``: the cheap-only one.) With a cache (always when the ablation runs here; ``--cache`` with
``--from-report``) it also times the pre-trained cheap encoders' document towers against MiniLM on 1,000 titles
(CPU seconds, one thread; every cheap tower in turn as ``all``).
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT)]

from benchmarks._common import (  # noqa: E402
    HOME_DEPOT,
    HOME_DEPOT_COLUMNS,
    report_means,
    run_ltrfeat,
    scoring_speed,
    write_results,
)

DISTILLED, MINILM = "clsm:generalized+spans+teacher", "sbert"
METRICS = ("ndcg@1", "ndcg@3", "ndcg@10")


def _pairs(name: str) -> tuple[str, ...]:
    """The comparisons of the encoder ``name`` (its column name) against MiniLM, BM25 and the lexical set."""
    return (
        f"sbert_doc_cos:{name}_doc_cos",
        f"bm25_doc:{name}_doc_cos",
        f"lexical+sbert:lexical+{name}",
        f"lexical:lexical+{name}",
        "lexical:lexical+sbert",
    )


def _ablate(report: Path, cache: Path, encoders: list[str], options: list[str], split_seed: int) -> float:
    return run_ltrfeat(
        *("ablate", "--pairs", HOME_DEPOT, "--encoding", "latin-1", "--label-map", "linear:1:3:7"),
        *("--conflicts", "first", "--columns", HOME_DEPOT_COLUMNS),
        *[a for encoder in encoders for a in ("--encoder", encoder)],
        *("--cache", cache, "--report", report, "--overwrite", "--split-seed", split_seed),
        *[a for option in options for a in ("--encoder-option", option)],
    )


def _with_cheap(report: Path, cheap: Path, out: Path) -> Path:
    """A copy of ``report`` whose per-query table also holds ``cheap``'s lexical + all as ``lexical+cheap``
    (the same folds and queries: both ablations split the same pairs with the same seed)."""
    out.mkdir()
    shutil.copy(report / "report.json", out / "report.json")
    rows = (cheap / "per_query.tsv").read_text().splitlines()[1:]
    extra = ["lexical+cheap" + row[len("lexical+all") :] for row in rows if row.startswith("lexical+all\t")]
    (out / "per_query.tsv").write_text(
        (report / "per_query.tsv").read_text().rstrip("\n") + "\n" + "\n".join(extra) + "\n"
    )
    return out


def _summary(report: Path, names: list[str]) -> dict:
    rep = json.loads((report / "report.json").read_text())
    means = report_means(report, METRICS)
    pairs = list(dict.fromkeys(pair for name in names for pair in _pairs(name)))
    if len(names) > 1:
        pairs += ["lexical+sbert:lexical+all", "lexical+sbert:lexical+cheap", "lexical:lexical+cheap"]
    compared = json.loads(
        run_ltrfeat("compare", report, *pairs, "--metrics", ",".join(METRICS), "--json", capture=True)
    )
    means |= {
        f"{row['variant']}|{row['metric']}": row["variant_mean"]
        for row in compared
        if row["variant"] == "lexical+cheap"
    }
    stages = rep["stage_seconds"]
    return {
        "means": means,
        "compare": compared,
        "verdict": rep.get("verdict", {}).get("recommended"),
        "seconds": {
            "encoder columns": stages["encoder columns"],
            "rankers": stages["rankers"],
            "MiniLM vectors (texts not cached)": stages.get("teacher_encoding"),
            "jobs": {name: stages["encoders"][name]["jobs"] for name in names},
        },
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cache", type=Path, default=None, help="the ablation's --cache (MiniLM vectors are reused)")
    ap.add_argument("--from-report", type=Path, default=None)
    ap.add_argument("--cheap-report", type=Path, default=None, help="with --from-report: the cheap-only ablation")
    ap.add_argument("--encoder", action="append", default=[], help=f"a cheap encoder's spec [{DISTILLED}]")
    ap.add_argument("--option", action="append", default=[], help="an --encoder-option of the ablation")
    ap.add_argument("--split-seed", type=int, default=0, help="the ablation's --split-seed (folds and encoders)")
    ap.add_argument("--tag", default="", help="suffix of the results file")
    args = ap.parse_args()
    encoders = args.encoder or [DISTILLED]
    names = [encoder.replace(":", "-").replace("+", "-") for encoder in encoders]
    if not HOME_DEPOT.exists():
        sys.exit(f"Home Depot data not found at {HOME_DEPOT}")
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        report, cheap, cache, wall = args.from_report, args.cheap_report, args.cache, None
        if report is None:
            report, cheap, cache = tmp / "report", tmp / "cheap-report", args.cache or tmp / "cache"
            wall = _ablate(report, cache, [*encoders, MINILM], args.option, args.split_seed)
            if len(encoders) > 1:
                wall += _ablate(cheap, cache, encoders, args.option, args.split_seed)
        if len(encoders) > 1:
            if cheap is None:
                sys.exit("--from-report with two or more --encoder needs --cheap-report (the cheap-only ablation)")
            report = _with_cheap(report, cheap, tmp / "merged")
        out = {"encoders": [*encoders, MINILM], "options": args.option, "split_seed": args.split_seed}
        out |= {"wall_seconds": wall} | _summary(report, names)
        if cache is not None:
            raw = pd.read_csv(HOME_DEPOT, encoding="latin-1", usecols=["product_title"])["product_title"]
            out["speed"] = scoring_speed(cache, raw.drop_duplicates().head(1000).tolist(), encoders)
    m = out["means"]
    for name in sorted({key.split("|")[0] for key in m}):
        print(
            f"{name:<48}" + "  ".join(f"{metric} {m.get(f'{name}|{metric}', float('nan')):.4f}" for metric in METRICS)
        )
    for row in out["compare"]:
        print(
            f"{row['variant']} vs {row['baseline']} {row['metric']}: {row['delta']:+.4f} "
            f"[{row['ci95_delta'][0]:+.4f}, {row['ci95_delta'][1]:+.4f}] Holm p {row['p_holm']:.3g}"
        )
    write_results("quality_spans_teacher_homedepot" + (f"_{args.tag}" if args.tag else ""), out)


if __name__ == "__main__":
    main()
