"""The cheap distilled feature against MiniLM on all of Home Depot: alone and as a LambdaMART feature.

One ``ltrfeat ablate`` over Home Depot's 74,067 judged pairs (11,795 queries; labels ``linear:1:3:7``) with
``clsm:generalized+spans+teacher`` (span pre-training on the 54,667 titles distilled from MiniLM's vectors, then
fine-tuned per fold on the fold's training queries) and ``sbert`` (zero-shot MiniLM); 3 query folds, ranker seeds
0,1,2, the CLI's default selection. Then paired randomisation tests (Holm) over the test queries: the distilled
feature alone against MiniLM alone and BM25 alone, lexical + it against lexical + MiniLM, each lexical + X against
lexical. Issue 35's criterion: alone within 1% of zero-shot MiniLM; as a feature a lift at least MiniLM's.

``--encoder`` names another cheap spec (``dssm:generalized+spans+teacher``), ``--option KEY=VALUE`` passes an
``--encoder-option`` (``clsm.fold_distill_epochs=5``: each fold training first distils MiniLM's vectors of its own
training pairs, the default on long documents only), ``--tag`` names the results file
(``quality_spans_teacher_homedepot_TAG.json``).

Run: python benchmarks/quality_spans_teacher_homedepot.py [--cache DIR] [--from-report DIR] [--encoder SPEC]
         [--option KEY=VALUE] [--tag TAG]
(``--from-report``: summarise a report this command's ablation already wrote instead of running it.)
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT)]

from benchmarks._common import HOME_DEPOT, HOME_DEPOT_COLUMNS, report_means, run_ltrfeat, write_results  # noqa: E402

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


def _ablate(report: Path, cache: Path, encoder: str, options: list[str]) -> float:
    return run_ltrfeat(
        *("ablate", "--pairs", HOME_DEPOT, "--encoding", "latin-1", "--label-map", "linear:1:3:7"),
        *("--conflicts", "first", "--columns", HOME_DEPOT_COLUMNS),
        *("--encoder", encoder, "--encoder", MINILM, "--cache", cache, "--report", report, "--overwrite"),
        *[a for option in options for a in ("--encoder-option", option)],
    )


def _summary(report: Path, name: str) -> dict:
    rep = json.loads((report / "report.json").read_text())
    means = report_means(report, METRICS)
    compared = json.loads(
        run_ltrfeat("compare", report, *_pairs(name), "--metrics", ",".join(METRICS), "--json", capture=True)
    )
    stages = rep["stage_seconds"]
    return {
        "means": means,
        "compare": compared,
        "verdict": rep.get("verdict", {}).get("recommended"),
        "seconds": {
            "encoder columns": stages["encoder columns"],
            "rankers": stages["rankers"],
            "MiniLM vectors (texts not cached)": stages.get("teacher_encoding"),
            "jobs": stages["encoders"][name]["jobs"],
        },
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cache", type=Path, default=None, help="the ablation's --cache (MiniLM vectors are reused)")
    ap.add_argument("--from-report", type=Path, default=None)
    ap.add_argument("--encoder", default=DISTILLED, help="the cheap encoder's spec")
    ap.add_argument("--option", action="append", default=[], help="an --encoder-option of the ablation")
    ap.add_argument("--tag", default="", help="suffix of the results file")
    args = ap.parse_args()
    name = args.encoder.replace(":", "-").replace("+", "-")
    if not HOME_DEPOT.exists():
        sys.exit(f"Home Depot data not found at {HOME_DEPOT}")
    with tempfile.TemporaryDirectory() as tmp_name:
        report, wall = args.from_report, None
        if report is None:
            report = Path(tmp_name) / "report"
            wall = _ablate(report, args.cache or Path(tmp_name) / "cache", args.encoder, args.option)
        out = {"encoders": [args.encoder, MINILM], "options": args.option, "wall_seconds": wall} | _summary(
            report, name
        )
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
