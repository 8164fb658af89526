"""Honest baselines on real data: model selection against untuned LambdaMART and the best single feature.

Home Depot (shared): judged pairs -> lexical features + a cross-fitted DSSM (generalized loss, 4 epochs),
3 query folds (split seed 0, 10% of each fold's training queries for early stopping), ranker seeds 0,1,2.
MQ2008 (shared): the 5-fold LETOR rotation (train S1-S3, vali S4, test S5, ...), base 1-40, group 41-46.

The ablation runs in this process once without selection (today's plain LambdaMART, the time baseline)
and once per tuning method with selection; each selection run's report holds the untuned LambdaMART as
candidate ``SET/lightgbm``, so "tuned vs untuned" and "vs BM25 alone" are paired comparisons of one report
(paired randomisation test, Holm over the comparisons printed here).

    python benchmarks/quality_selection.py [--only homedepot|mq2008] [--tune none,grid] [--cache DIR]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _common import RESULTS, SHARED, write_results  # noqa: E402
from ltrfeat.experiments.folds import Fold  # noqa: E402
from ltrfeat.experiments.summary import head_to_head, summarise  # noqa: E402
from ltrfeat.experiments.feature_sets import plan_feature_sets  # noqa: E402
from ltrfeat.experiments.ablation import run_ablation  # noqa: E402
from ltrfeat.rankers.selection import SelectionConfig  # noqa: E402
from ltrfeat.experiments.verdict import verdict_lines  # noqa: E402

SEEDS = (0, 1, 2)
SUBSAMPLE = {"params": {"bagging_fraction": 0.8, "bagging_freq": 1}}  # as ltrfeat ablate
METRICS = ["ndcg@1", "ndcg@10"]


def homedepot_folds(cache):
    from ltrfeat.encoders.spec import EncoderSpec
    from ltrfeat.experiments.crossfit import text_folds
    from ltrfeat.features.extract import lexical_extractors
    from ltrfeat.core.text import read_judged_pairs

    path = SHARED / "datasets" / "home_depot" / "raw" / "train.csv"
    if not path.is_file():
        return None
    pairs = read_judged_pairs(
        path,
        columns="query=search_term,doc=product_title,docid=product_uid,label=relevance",
        encoding="latin-1",
        label_map="linear:1:3:7",
    )
    folds, groups, base, _ = text_folds(
        pairs,
        lexical=lexical_extractors("all", fields=["doc"]),
        specs=[EncoderSpec.parse("dssm:generalized")],
        k=3,
        valid_fraction=0.1,
        seed=0,
        options={"epochs": 4},
        cache=cache,
        conflicts="first",
        progress=False,
    )
    folds = [Fold(*f) for f in folds]
    return folds, plan_feature_sets(folds[0].train.feature_map, base=",".join(base), neural=groups)


def mq2008_folds():
    from ltrfeat.experiments.letor_folds import load_letor_folds

    raw = SHARED / "datasets" / "letor4_mq2008" / "raw"
    if not raw.is_dir():
        return None
    parts = [(raw / f"S{i}.txt").read_bytes() for i in range(1, 6)]
    with tempfile.TemporaryDirectory() as tmp:
        for k in range(5):
            d = Path(tmp) / f"Fold{k + 1}"
            d.mkdir()
            (d / "train.txt").write_bytes(b"".join(parts[(k + j) % 5] for j in range(3)))
            (d / "vali.txt").write_bytes(parts[(k + 3) % 5])
            (d / "test.txt").write_bytes(parts[(k + 4) % 5])
        folds = load_letor_folds(tmp)
    return folds, plan_feature_sets(folds[0].train.feature_map, base="1-40", neural={"g": "41-46"})


def measure(name: str, folds, sets, tunes: list[str]) -> dict:
    print(
        f"\n== {name}: {len(folds)} folds, {sum(f.test.n_queries for f in folds)} test queries, seeds "
        f"{','.join(map(str, SEEDS))}",
        flush=True,
    )
    out = {}
    start = time.perf_counter()
    run_ablation(folds, sets, seeds=SEEDS, ranker_params=SUBSAMPLE, progress=False)
    plain = time.perf_counter() - start
    print(f"ranker stage without selection: {plain:.1f} s", flush=True)
    out["seconds_without_selection"] = round(plain, 1)
    base = sets[0].name
    bm25 = next((s.name for s in sets if s.kind == "alone" and s.name.startswith("bm25")), None)
    for tune in tunes:
        start = time.perf_counter()
        result = run_ablation(
            folds,
            sets,
            seeds=SEEDS,
            ranker_params=SUBSAMPLE,
            progress=False,
            selection=SelectionConfig.default("lightgbm", tune=tune),
        )
        seconds = time.perf_counter() - start
        summary = summarise(result, n_resamples=10_000)
        pairs = [(f"{base}/lightgbm", base), (f"{base}/lightgbm", "recommended"), ("best-single", "recommended")]
        if bm25:
            pairs += [(bm25, base), (bm25, "recommended")]
        comps = head_to_head(result.per_query, pairs, METRICS, n_resamples=10_000)
        means = {key: r.mean for key, r in summary.means().items()}
        print(f"-- selection, tune={tune}: ranker stage {seconds:.1f} s = {seconds / plain:.1f}x without selection")
        for metric in METRICS:
            row = "  ".join(
                f"{s.name} {means[(s.name, metric)]:.4f}" for s in result.feature_sets if s.kind != "candidate"
            )
            print(f"  {metric}: {row}")
            print(
                "  "
                + "  ".join(
                    f"{s.name} {means[(s.name, metric)]:.4f}" for s in result.feature_sets if s.kind == "candidate"
                )
            )
        for c in comps:
            print(
                f"  {c.metric}: {c.variant} - {c.baseline} = {c.delta:+.4f} "
                f"[{c.ci95_delta[0]:+.4f}, {c.ci95_delta[1]:+.4f}], p {c.p_randomization:.2g}, "
                f"Holm {c.p_holm:.2g}, W/T/L {c.wins}/{c.ties}/{c.losses}"
            )
        for line in verdict_lines(summary.verdict):
            print("  " + line)
        out[f"tune_{tune}"] = {
            "seconds": round(seconds, 1),
            "ratio_to_plain": round(seconds / plain, 2),
            "means": {f"{k[0]}|{k[1]}": v for k, v in means.items() if k[1] in METRICS},
            "comparisons": [c.to_dict() for c in comps],
            "verdict": summary.verdict,
        }
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", choices=["homedepot", "mq2008"], default=None)
    parser.add_argument("--tune", default="none,grid", help="comma-separated tuning methods of the selection runs")
    parser.add_argument("--cache", default=None, help="encoder cache directory (Home Depot DSSM bundles)")
    args = parser.parse_args(argv)
    tunes = [t for t in args.tune.split(",") if t]
    figures = {}
    if args.only in (None, "mq2008"):
        loaded = mq2008_folds()
        if loaded is None:
            print("MQ2008 is absent: skipped")
        else:
            figures["mq2008"] = measure("MQ2008", *loaded, tunes)
    if args.only in (None, "homedepot"):
        started = time.perf_counter()
        loaded = homedepot_folds(args.cache)
        if loaded is None:
            print("Home Depot is absent: skipped")
        else:
            print(f"Home Depot features and cross-fitted DSSM: {time.perf_counter() - started:.0f} s")
            figures["homedepot"] = measure("Home Depot", *loaded, tunes)
    previous = RESULTS / "quality_selection.json"
    if args.only and previous.is_file():  # keep the other data set's figures of an earlier run
        figures = json.loads(previous.read_text())["figures"] | figures
    write_results("quality_selection", figures)


if __name__ == "__main__":
    main()
