"""What moved `ipw - none` at e=0: the inverse-propensity weights, the encoder, or the ranker's seed?

In the generated worlds without position bias (e=0; the quick size of ``clicks_debias.py``, world seeds ``--seeds``),
the click log's curve is harvested and the ``ipw`` click weights' spread recorded; CLSMs are trained uncorrected and
``ipw`` exactly as in ``clicks_debias.py`` (``train_corrected``), and LambdaMART (the same 3 folds and settings) is
trained on lexical, lexical+clsm-none and lexical+clsm-ipw under ``--ranker-seeds`` ranker seeds (world seed +
1000 j). Per ranker seed j: each set's NDCG@10 over the judged test queries of every world seed pooled, and
``ipw - none`` with its paired randomisation test (10,000 resamples, raw p); the same set under ranker seed 0
against seed j (identical features: only LightGBM's bagging draw differs); and ``ipw - none`` with each query's
NDCG@10 averaged over the ranker seeds.

Run: python benchmarks/clicks_ranker_noise.py [--seeds 0 1 2] [--ranker-seeds 5]
     (``--saved DIR`` summarises the per-query table and weights an earlier run kept in DIR, ``--keep DIR`` keeps them)
Writes benchmarks/results/clicks_ranker_noise.json.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks")]

from clicks_debias import METRIC, QUICK, RANKER, RANKER_SEED_STEP, train_corrected, weight_spread  # noqa: E402

SETS = ("lexical", "lexical+clsm-none", "lexical+clsm-ipw")


def world_seed(seed: int, ranker_seeds: int, work: Path) -> tuple[dict, pd.DataFrame]:
    """One e=0 world: the ``ipw`` weights' spread and the per-query NDCG@10 of ``SETS`` under each ranker seed
    (column ``ranker_seed``: j)."""
    from ltrfeat.experiments.demo import SIZES, demo_features as _features, demo_folds as _folds
    from ltrfeat.clicks.log import read_click_log
    from ltrfeat.clicks.propensity import estimate_propensity
    from ltrfeat.datasets.synth import generate_world, write_world
    from ltrfeat.experiments.feature_sets import plan_feature_sets
    from ltrfeat.experiments.ablation import run_ablation

    world = generate_world(seed=seed, **QUICK["world"], examination_exponent=0.0)
    write_world(world, work / "world")
    log = read_click_log(work / "world" / "clicks_impressions.tsv", docs=work / "world" / "docs.tsv")
    curve = estimate_propensity(log, method="harvest", seed=seed, resamples=0)
    spread = {"curve": [round(float(v), 4) for v in curve.values], **weight_spread(log, curve)}
    models, _ = train_corrected(log, curve, work, seed=seed, sizes=SIZES["quick"]["clsm"], encoder=QUICK["encoder"])
    models = {name: path for name, path in models.items() if f"lexical+{name}" in SETS}
    data = _features(world, models)
    base = ",".join(f.name for f in data.feature_map if f.source.startswith("lexical"))
    neural = {name: [f"{name}_doc_cos"] for name in models}
    sets = [s for s in plan_feature_sets(data.feature_map, base=base, neural=neural) if s.name in SETS]
    frames = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for j in range(ranker_seeds):
            result = run_ablation(
                _folds(data, k=3, seed=seed),
                sets,
                seeds=(seed + RANKER_SEED_STEP * j,),
                ranker_params=RANKER,
                progress=False,
            )
            frames.append(result.per_query.assign(qid=lambda f: f"s{seed}:" + f["qid"].astype(str), ranker_seed=j))
    return spread, pd.concat(frames, ignore_index=True)


def _test(base: np.ndarray, variant: np.ndarray) -> dict:
    from ltrfeat.experiments.stats import compare_many

    stats = compare_many(base[:, None], variant[:, None], seed=0, n_resamples=10_000)[0]
    return {"delta": round(float(stats["delta"]), 4), "p": round(float(stats["p_randomization"]), 4)}


def summary(per_query: pd.DataFrame) -> dict:
    """Per ranker seed: each set's NDCG@10, ``ipw - none`` and each set against itself under ranker seed 0; and
    ``ipw - none`` of the per-query means over the ranker seeds (paired randomisation tests, raw p)."""
    wide = per_query.pivot_table(index="qid", columns=["feature_set", "ranker_seed"], values=METRIC)
    seeds = sorted(per_query["ranker_seed"].unique())
    rows = []
    for j in seeds:
        row = {"ranker_seed": int(j), "ndcg@10": {s: round(float(wide[(s, j)].mean()), 4) for s in SETS}}
        row["ipw - none"] = _test(wide[("lexical+clsm-none", j)].to_numpy(), wide[("lexical+clsm-ipw", j)].to_numpy())
        if j != seeds[0]:
            row["against ranker seed 0"] = {
                s: _test(wide[(s, seeds[0])].to_numpy(), wide[(s, j)].to_numpy()) for s in SETS
            }
        rows.append(row)
    mean = per_query.groupby(["feature_set", "qid"])[METRIC].mean().unstack(0)
    return {
        "per_ranker_seed": rows,
        "mean_over_ranker_seeds": {
            "ndcg@10": {s: round(float(mean[s].mean()), 4) for s in SETS},
            "ipw - none": _test(mean["lexical+clsm-none"].to_numpy(), mean["lexical+clsm-ipw"].to_numpy()),
            "none - lexical": _test(mean["lexical"].to_numpy(), mean["lexical+clsm-none"].to_numpy()),
        },
        "test_queries": int(mean.shape[0]),
    }


def markdown_table(figures: dict) -> list[str]:
    """The lines docs/experiments.md quotes (checked by tests/clicks/test_docs_debias.py): per ranker seed, NDCG@10
    of lexical+none and lexical+ipw, ``ipw - none`` (raw p), and how far each set moved from ranker seed 0."""
    lines = [
        "| ranker seed | lexical+none | lexical+ipw | ipw - none (p) | none: seed j - seed 0 (p) | "
        "ipw: seed j - seed 0 (p) |",
        "| ---: | ---: | ---: | ---: | ---: | ---: |",
    ]

    def cell(test: dict) -> str:
        return f"{test['delta']:+.4f} ({test['p']:.3f})"

    for row in figures["per_ranker_seed"]:
        moved = row.get("against ranker seed 0")
        against = [cell(moved[s]) if moved else "" for s in SETS[1:]]
        lines.append(
            f"| {row['ranker_seed']} | {row['ndcg@10']['lexical+clsm-none']:.4f} | "
            f"{row['ndcg@10']['lexical+clsm-ipw']:.4f} | {cell(row['ipw - none'])} | " + " | ".join(against) + " |"
        )
    mean = figures["mean_over_ranker_seeds"]
    lines.append(
        f"| mean of {len(figures['per_ranker_seed'])} | {mean['ndcg@10']['lexical+clsm-none']:.4f} | "
        f"{mean['ndcg@10']['lexical+clsm-ipw']:.4f} | {cell(mean['ipw - none'])} | | |"
    )
    return lines


def main() -> None:
    from _common import write_results

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--ranker-seeds", type=int, default=5)
    parser.add_argument("--saved", type=Path, help="summarise the per_query.parquet and weights.json kept here")
    parser.add_argument("--keep", type=Path, help="keep the per-query table and weights here")
    args = parser.parse_args()
    if args.saved:
        per_query = pd.read_parquet(args.saved / "per_query.parquet")
        weights = json.loads((args.saved / "weights.json").read_text())
    else:
        frames, weights = [], {}
        for seed in args.seeds:
            with tempfile.TemporaryDirectory() as tmp:
                weights[str(seed)], frame = world_seed(seed, args.ranker_seeds, Path(tmp))
            frames.append(frame)
        per_query = pd.concat(frames, ignore_index=True)
        if args.keep:
            args.keep.mkdir(parents=True, exist_ok=True)
            per_query.to_parquet(args.keep / "per_query.parquet")
            (args.keep / "weights.json").write_text(json.dumps(weights))
    figures = {"ipw_weights": weights, **summary(per_query)}
    figures["setup"] = {
        "world": {**QUICK["world"], "examination_exponent": 0.0},
        "encoder": {"model": "clsm", "loss": "generalized", **QUICK["encoder"]},
        "ranker": RANKER,
        "command": f"python benchmarks/clicks_ranker_noise.py --seeds {' '.join(map(str, args.seeds))} "
        f"--ranker-seeds {args.ranker_seeds}",
        "summarised_from": str(args.saved) if args.saved else None,
    }
    print("\n".join(markdown_table(figures)))
    print(write_results("clicks_ranker_noise", figures))


if __name__ == "__main__":
    main()
