"""Position-debiased click-trained encoders checked against judgments, on generated worlds.

Worlds (``ltrfeat.datasets.synth.generate_world``, the demo's quick size: 240 judged queries, 800 products, 800
click-log queries disjoint from the judged ones), examination P(rank r) = r^-e:

  e=0            control: no position bias (debiasing should change nothing)
  e=0.8          the default world
  e=1.5          steep bias
  e=0.8 titles   --title-attraction 0.5: clicks follow the query-title overlap of the snippet besides relevance (a
                 bias of attractiveness, not of position: no position correction removes it)

In each world (world seeds ``--seeds``, default 0 1 2): the impression-level log ``clicks_impressions.tsv`` is read
with ``read_click_log``; the propensity curve is estimated by intervention harvesting (95% interval: bootstrap over
queries, 200 resamples) and compared with the true r^-e (also on logs of 800, 3,000 and 9,000 click queries:
``propensity_accuracy``); a CLSM (the demo's quick towers, 2 epochs) is trained
with the GDSSM generalized loss on the click labels of each correction -- ``none`` (click counts), ``ipw`` (clipped,
self-normalised inverse-propensity-weighted counts) and ``pbm`` (attractiveness estimated by the position-based
model with the harvested curve) -- and extracted beside the demo's lexical features for the judged pairs. Rankers:
LambdaMART (LightGBM, 100 trees, no model selection), 3 query folds over the judged queries (split seed = world
seed), ranker seeds = world seed + 1000 j for j < ``--ranker-seeds`` (per-query NDCG@10 averaged over them: one
ranker seed alone moves NDCG@10 by as much as the corrections do, see ``ranker_mean``); every judged query is a
test query once, never trained on by the ranker of its fold, and no encoder saw a judged query. Test: paired
randomisation tests of NDCG@10 over the test queries pooled across the world seeds (10,000 resamples),
Holm-adjusted across every comparison of the run:
lexical+ipw and lexical+pbm against lexical+none (the criterion: not worse where there is position bias, not
different at e=0), each encoder against lexical (the lift), and, with two ranker seeds or more, the control:
lexical+none under ranker seed j=0 against j=1 (the same features; what the ranker's seed alone moves). The spread of
the ``ipw`` click weights is kept per world and seed (``ipw_weights``).

A stronger setting: ``--click-queries`` (the log's queries), ``--epochs`` (at most; training keeps the epoch of best
NDCG@10 on the held-out click queries and stops after 2 without improvement) and ``--towers quick|full`` (the demo's
CLSM sizes). ``--curves-from FILE`` takes ``propensity_accuracy`` (which does not depend on them) from an earlier
results file instead of re-running it.

Run: python benchmarks/clicks_debias.py [--seeds 0 1 2] [--worlds e0 e0.8 e1.5 titles] [--ranker-seeds 1]
     [--click-queries 800] [--epochs 2] [--towers quick] [--curves-from FILE] [--keep DIR] [--results NAME]
Writes benchmarks/results/clicks_debias.json (``--results``: another name). ``--keep DIR`` saves each world and
seed's results in DIR and re-uses those of the same settings, so world seeds can run in separate processes
(``--seeds 0 --keep DIR``, ...) that a last run over every seed pools.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks")]

WORLDS = {
    "e0": {"examination_exponent": 0.0},
    "e0.8": {"examination_exponent": 0.8},
    "e1.5": {"examination_exponent": 1.5},
    "titles": {"examination_exponent": 0.8, "title_attraction": 0.5},
}
CORRECTIONS = ("none", "ipw", "pbm")
METRIC = "ndcg@10"
QUICK = {
    "world": {"n_queries": 240, "n_docs": 800, "n_click_queries": 800},
    "encoder": {"epochs": 2, "batch_size": 256},
}
RANKER_SEED_STEP = 1000  # ranker seeds of world seed s: s, s + 1000, s + 2000, ...
CONTROL = "lexical+clsm-none"  # the set whose runs under two ranker seeds are compared (the control)
RANKER = {"n_estimators": 100, "n_jobs": 1, "params": {"bagging_fraction": 0.8, "bagging_freq": 1}}


def world_run(
    name: str, seed: int, work: Path, *, sizes: dict, encoder: dict, world_size: dict, resamples: int, ranker_seeds=1
):
    """One world: its propensity curve against the truth, the ``ipw`` weights' spread and the per-query NDCG of every
    feature set (see :func:`ranker_mean`)."""
    from ltrfeat.experiments.demo import demo_features as _features, demo_folds as _folds
    from ltrfeat.clicks.log import read_click_log
    from ltrfeat.clicks.propensity import estimate_propensity
    from ltrfeat.datasets.synth import generate_world, write_world
    from ltrfeat.experiments.feature_sets import plan_feature_sets
    from ltrfeat.experiments.ablation import run_ablation

    options = WORLDS[name]
    world = generate_world(seed=seed, **world_size, **options)
    write_world(world, work / "world")
    log = read_click_log(work / "world" / "clicks_impressions.tsv", docs=work / "world" / "docs.tsv")
    curve = estimate_propensity(log, method="harvest", seed=seed, resamples=resamples)
    truth = curve.positions.astype(float) ** -options["examination_exponent"]
    models, trained = train_corrected(log, curve, work, seed=seed, sizes=sizes, encoder=encoder)
    data = _features(world, models)
    neural = {name: [f"{name}_doc_cos"] for name in models}
    base = ",".join(f.name for f in data.feature_map if f.source.startswith("lexical"))
    folds = _folds(data, k=3, seed=seed)
    sets = [s for s in plan_feature_sets(data.feature_map, base=base, neural=neural) if s.name != "lexical+all"]
    runs = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for j in range(ranker_seeds):
            ranker_seed = seed + RANKER_SEED_STEP * j
            runs.append(run_ablation(folds, sets, seeds=(ranker_seed,), ranker_params=RANKER, progress=False).per_query)
    per_query = ranker_mean(runs).assign(qid=lambda f: f"s{seed}:" + f["qid"].astype(str))
    return {
        "propensity": curve_figures(curve, truth),
        "ipw_weights": weight_spread(log, curve),
        "encoders": trained,
        "log": {"impressions": int(log.totals["impressions"].sum()), "clicks": int(log.totals["clicks"].sum())},
    }, per_query


def weight_spread(log, curve) -> dict:
    """How far the ``ipw`` click weights of ``log`` under ``curve`` lie from 1: their range over the rows with clicks
    and their root-mean-square deviation per click."""
    from ltrfeat.clicks.debias import ipw_weights

    weights = ipw_weights(log.positioned, curve)
    clicks = log.positioned["clicks"].to_numpy(np.float64)
    return {
        "min": round(float(weights[clicks > 0].min()), 4),
        "max": round(float(weights[clicks > 0].max()), 4),
        "sd_per_click": round(float(np.sqrt(np.average((weights - 1) ** 2, weights=clicks))), 4),
    }


def kept(keep: Path | None, name: str, signature: dict, compute) -> tuple[dict, pd.DataFrame]:
    """``compute()`` (figures and a per-query table), or what a run of the same ``signature`` saved as ``name`` in
    ``keep``; saved there when ``keep`` is given. Lets the seeds of a benchmark run in separate processes that a
    last run pools."""
    if keep is None:
        return compute()
    saved, table = keep / f"{name}.json", keep / f"{name}.parquet"
    if saved.is_file() and table.is_file():
        found = json.loads(saved.read_text())
        if found.pop("signature") == signature:
            return found, pd.read_parquet(table)
    found, per_query = compute()
    keep.mkdir(parents=True, exist_ok=True)
    per_query.to_parquet(table)
    saved.write_text(json.dumps({**found, "signature": signature}))
    return found, per_query


def ranker_mean(runs: list[pd.DataFrame]) -> pd.DataFrame:
    """Per (feature set, fold, query) of an ablation run under each ranker seed (``runs``): the metrics averaged over
    the runs; with two runs or more also ``CONTROL`` of the first run and of the second alone, as ``CONTROL@r0`` and
    ``CONTROL@r1``. LightGBM's bagging draw is shared by every query of a fold, so a per-query test of one ranker
    seed against another finds "significant" differences between identical features: averaging over ranker seeds
    shrinks them, and the control shows their size."""
    keys = ["feature_set", "fold", "qid"]
    frame = pd.concat(runs, ignore_index=True)
    mean = frame.groupby(keys, sort=False).agg(
        n_docs=("n_docs", "first"), n_relevant=("n_relevant", "first"), **{METRIC: (METRIC, "mean")}
    )
    frames = [mean.reset_index()]
    for j, run in enumerate(runs[:2] if len(runs) > 1 else []):
        control = run[run["feature_set"] == CONTROL]
        frames.append(control[[*keys, "n_docs", "n_relevant", METRIC]].assign(feature_set=f"{CONTROL}@r{j}"))
    return pd.concat(frames, ignore_index=True)


def train_corrected(log, curve, work: Path, *, seed: int, sizes: dict, encoder: dict) -> tuple[dict, dict]:
    """A CLSM (GDSSM generalized loss) trained on ``log``'s click labels under each correction, ``curve`` the
    propensities: ``(encoder name -> saved bundle, correction -> validation NDCG@10 and seconds)``."""
    from ltrfeat.clicks.debias import click_labels
    from ltrfeat.encoders.training import train_encoder

    models, trained = {}, {}
    for debias in CORRECTIONS:
        start = time.perf_counter()
        labels = click_labels(log, debias=debias, loss="generalized", propensity=curve, seed=seed)
        model, history = train_encoder(
            labels.pairs,
            model="clsm",
            loss="generalized",
            soft_labels=labels.soft_labels,
            seed=seed,
            sizes=sizes,
            progress=False,
            threads=1,
            **encoder,
        )
        models[f"clsm-{debias}"] = work / f"clsm-{debias}.ltrenc"
        model.save(models[f"clsm-{debias}"])
        trained[debias] = {
            "validation_ndcg@10": max(h["val_ndcg@10"] for h in history),
            "seconds": round(time.perf_counter() - start, 1),
        }
    return models, trained


def curve_accuracy(curve, truth, *, intervals: bool = True) -> dict:
    """The estimated propensity ``curve`` against the ``truth`` rank by rank: relative error, whether it is within
    10%, and whether the 95% interval holds the truth (None without bootstrap ``intervals``)."""
    error = curve.values / truth - 1
    inside = (curve.lower <= truth) & (truth <= curve.upper)
    return {
        "relative_error": [round(float(v), 4) for v in error],
        "within_10pct": [bool(v) for v in np.abs(error) <= 0.1],
        "truth_inside_interval": [bool(v) for v in inside] if intervals else None,
    }


def curve_figures(curve, truth) -> dict:
    """The estimated propensity ``curve`` beside the ``truth``: relative errors and whether the interval holds it."""
    accuracy = curve_accuracy(curve, truth)
    return {
        "estimate": curve.to_dict(),
        "truth": [round(float(v), 6) for v in truth],
        "relative_error": accuracy["relative_error"],
        "truth_inside_interval": accuracy["truth_inside_interval"],
    }


def propensity_accuracy(seeds, work: Path, *, sizes=(800, 3000, 9000), resamples: int = 200, log=print) -> list[dict]:
    """The harvested curve against the truth on logs of growing size (``n_click_queries``; 60 judged queries, 800
    products): relative error at ranks 1-10 and whether the truth lies in the 95% interval."""
    from ltrfeat.clicks.log import read_click_log
    from ltrfeat.clicks.propensity import estimate_propensity
    from ltrfeat.datasets.synth import generate_world, write_world

    rows = []
    for exponent in (0.8, 1.5):
        for n_click in sizes:
            for seed in seeds:
                world_dir = work / f"curve-{exponent}-{n_click}-{seed}"
                world = generate_world(
                    seed=seed, n_queries=60, n_docs=800, n_click_queries=n_click, examination_exponent=exponent
                )
                write_world(world, world_dir)
                click_log = read_click_log(world_dir / "clicks_impressions.tsv", docs=world_dir / "docs.tsv")
                curve = estimate_propensity(click_log, seed=seed, resamples=resamples)
                accuracy = curve_accuracy(curve, curve.positions.astype(float) ** -exponent)
                rows.append(
                    {
                        "exponent": exponent,
                        "click_queries": n_click,
                        "seed": seed,
                        "impressions": int(click_log.totals["impressions"].sum()),
                        **accuracy,
                    }
                )
                log(
                    f"curve e={exponent} {n_click} click queries seed {seed}: |error| <= 10% at ranks "
                    f"{[int(k) for k in curve.positions[accuracy['within_10pct']]]}, truth in interval at "
                    f"{sum(accuracy['truth_inside_interval'])}/10"
                )
    return rows


def comparisons(per_query: dict[str, pd.DataFrame], *, n_resamples: int = 10_000) -> list[dict]:
    """Every world's comparisons (debiased against naive, each against lexical), Holm across all of them."""
    from ltrfeat.experiments.summary import head_to_head
    from ltrfeat.experiments.stats import holm

    pairs = [("lexical+clsm-none", "lexical+clsm-ipw"), ("lexical+clsm-none", "lexical+clsm-pbm")]
    pairs += [("lexical", f"lexical+clsm-{c}") for c in CORRECTIONS]
    pairs += [("clsm-none_doc_cos", f"clsm-{c}_doc_cos") for c in CORRECTIONS[1:]]
    rows = []
    for world, frame in per_query.items():
        control = [(f"{CONTROL}@r0", f"{CONTROL}@r1")] if f"{CONTROL}@r0" in set(frame["feature_set"]) else []
        for row in head_to_head(frame, pairs + control, [METRIC], n_resamples=n_resamples):
            rows.append({"world": world, **row.to_dict()})
    adjusted = holm([r["p_randomization"] for r in rows])
    for row, p in zip(rows, adjusted):
        row["p_holm"] = float(p)
    return rows


def criterion(rows: list[dict], *, alpha: float = 0.05) -> dict:
    """Per world and correction: ``not_worse`` (debiased - naive NDCG@10 >= 0, or the difference not significant
    after Holm) where there is position bias, ``same`` (not significantly different) at e=0, and ``better``."""
    out: dict = {}
    for r in rows:
        if r["baseline"] != "lexical+clsm-none":
            continue
        significant = r["p_holm"] < alpha
        out.setdefault(r["world"], {})[r["variant"].removeprefix("lexical+clsm-")] = {
            "delta": r["delta"],
            "p_holm": r["p_holm"],
            "not_worse": bool(r["delta"] >= 0 or not significant),
            "same": not significant,
            "better": bool(r["delta"] > 0 and significant),
        }
    return out


def run(
    worlds,
    seeds,
    *,
    work: Path,
    quick_sizes: dict,
    encoder: dict,
    world_size: dict,
    resamples: int,
    ranker_seeds: int = 1,
    keep: Path | None = None,
    log=print,
):
    figures: dict = {"worlds": {}, "seeds": list(seeds)}
    pooled = {}
    for name in worlds:
        frames = []
        for seed in seeds:
            start = time.perf_counter()
            run_dir = work / f"{name}-{seed}"
            run_dir.mkdir(parents=True)
            settings = {"sizes": quick_sizes, "encoder": encoder, "world_size": world_size, "resamples": resamples}
            found, per_query = kept(
                keep,
                f"{name}-{seed}",
                {**settings, "ranker_seeds": ranker_seeds},
                lambda: world_run(name, seed, run_dir, **settings, ranker_seeds=ranker_seeds),
            )
            figures["worlds"].setdefault(name, {"options": WORLDS[name], "seeds": {}})["seeds"][str(seed)] = found
            frames.append(per_query)
            errors = np.abs(found["propensity"]["relative_error"])
            log(
                f"{name} seed {seed}: max |propensity error| ranks 1-10 {errors.max():.1%} ({time.perf_counter() - start:.0f} s)"
            )
        pooled[name] = pd.concat(frames, ignore_index=True)
        means = pooled[name].groupby("feature_set")[METRIC].mean()
        means = means.drop([f"{CONTROL}@r0", f"{CONTROL}@r1"], errors="ignore")
        figures["worlds"][name]["ndcg@10"] = {k: round(float(v), 4) for k, v in means.items()}
        log(f"{name}: NDCG@10 " + ", ".join(f"{k} {v:.4f}" for k, v in means.items()))
    rows = comparisons(pooled)
    figures["comparisons"] = rows
    figures["criterion"] = criterion(rows)
    return figures


def markdown_table(figures: dict) -> list[str]:
    """The lines docs/experiments.md quotes (checked against the results file by tests/clicks/test_docs_debias.py):
    per world, NDCG@10 of lexical and of lexical + each encoder, the corrections' changes against the uncorrected
    encoder (ranker and feature alone) with their Holm-adjusted p-values and the curve's largest error; from a run
    of two ranker seeds or more also the control (the uncorrected set under ranker seeds 0 and 1) and the range of
    the ``ipw`` click weights."""
    rows = {(r["world"], r["baseline"], r["variant"]): r for r in figures["comparisons"]}
    control = any(variant == f"{CONTROL}@r1" for _, _, variant in rows)
    extra = " control: ranker seed 0 vs 1 (p Holm) | ipw weights |" if control else ""
    lines = [
        "| world | lexical | +none | +ipw | +pbm | ipw - none (p Holm) | pbm - none (p Holm) | alone: ipw - none | "
        f"alone: pbm - none |{extra} curve error, ranks 1-5 / 6-10 |",
        "| --- |" + " ---: |" * (11 if control else 9),
    ]
    for world, found in figures["worlds"].items():
        ndcg = found["ndcg@10"]

        def change(base, variant):
            r = rows[(world, base, variant)]
            return f"{r['delta']:+.4f} ({r['p_holm']:.2f})"

        errors = np.array([s["propensity"]["relative_error"] for s in found["seeds"].values()])
        top, tail = np.abs(errors[:, :5]).max(), np.abs(errors[:, 5:]).max()
        if control:
            weights = [s["ipw_weights"] for s in found["seeds"].values()]
            low, high = min(w["min"] for w in weights), max(w["max"] for w in weights)
            extra = f" {change(f'{CONTROL}@r0', f'{CONTROL}@r1')} | {low:.2f}-{high:.2f} |"
        lines.append(
            f"| {world} | {ndcg['lexical']:.4f} | "
            + " | ".join(f"{ndcg[f'lexical+clsm-{c}']:.4f}" for c in CORRECTIONS)
            + f" | {change('lexical+clsm-none', 'lexical+clsm-ipw')} | {change('lexical+clsm-none', 'lexical+clsm-pbm')}"
            + f" | {change('clsm-none_doc_cos', 'clsm-ipw_doc_cos')} | {change('clsm-none_doc_cos', 'clsm-pbm_doc_cos')} |"
            + f"{extra} {top:.0%} / {tail:.0%} |"
        )
    return lines


README_HEADER = [
    "| clicks from | test queries | lexical | +none | +ipw | +pbm | ipw - none | pbm - none |",
    "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
]


def readme_row(label: str, comparisons: list[dict]) -> str:
    """One line of the README's click table (checked by tests/clicks/test_docs_debias.py): NDCG@10 of the lexical
    ranker, each encoder's lift over it and each correction's change against the uncorrected encoder, Holm-adjusted
    p-values in parentheses, from ``comparisons`` (one world's)."""
    rows = {(r["baseline"], r["variant"]): r for r in comparisons}

    def change(base, variant):
        r = rows[(base, variant)]
        return f"{r['delta']:+.4f} ({r['p_holm']:.3f})"

    lexical = rows[("lexical", "lexical+clsm-none")]
    return (
        f"| {label} | {lexical['n_queries']:,} | {lexical['base_mean']:.4f} | "
        + " | ".join(change("lexical", f"lexical+clsm-{c}") for c in CORRECTIONS)
        + f" | {change('lexical+clsm-none', 'lexical+clsm-ipw')} | {change('lexical+clsm-none', 'lexical+clsm-pbm')} |"
    )


def readme_rows(figures: dict) -> list[str]:
    """The README's lines for the generated worlds (:func:`readme_row` of each)."""
    return [
        readme_row(f"generated, e = {world.removeprefix('e')}" if world != "titles" else "generated, titles", rows)
        for world in figures["worlds"]
        for rows in [[r for r in figures["comparisons"] if r["world"] == world]]
    ]


def main() -> None:
    from _common import write_results
    from ltrfeat.experiments.demo import SIZES

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--worlds", nargs="+", default=list(WORLDS), choices=list(WORLDS))
    options = {"ranker_seeds": 1, "click_queries": QUICK["world"]["n_click_queries"], "epochs": 2, "towers": "quick"}
    for name, value in options.items():
        parser.add_argument(f"--{name.replace('_', '-')}", type=type(value), default=value)
    parser.add_argument("--curves-from", type=Path, help="take propensity_accuracy from this results file")
    parser.add_argument("--keep", type=Path, help="save and re-use each world and seed's results in this directory")
    parser.add_argument("--results", default="clicks_debias", help="the results file's name")
    args = parser.parse_args()
    started = time.perf_counter()
    world_size = {**QUICK["world"], "n_click_queries": args.click_queries}
    encoder = {**QUICK["encoder"], "epochs": args.epochs}
    sizes = SIZES[args.towers]["clsm"]
    with tempfile.TemporaryDirectory() as tmp:
        figures = run(
            args.worlds,
            args.seeds,
            work=Path(tmp),
            quick_sizes=sizes,
            encoder=encoder,
            world_size=world_size,
            resamples=200,
            ranker_seeds=args.ranker_seeds,
            keep=args.keep,
        )
    if args.curves_from:
        figures["propensity_accuracy"] = json.loads(args.curves_from.read_text())["figures"]["propensity_accuracy"]
    else:
        with tempfile.TemporaryDirectory() as tmp:
            figures["propensity_accuracy"] = propensity_accuracy(args.seeds, Path(tmp))
    changed = "".join(
        f" --{k.replace('_', '-')} {getattr(args, k)}" for k, v in options.items() if getattr(args, k) != v
    )
    figures["setup"] = {
        "world": world_size,
        "encoder": {"model": "clsm", "loss": "generalized", **encoder, "sizes": sizes},
        "ranker": RANKER,
        "ranker_seeds": args.ranker_seeds,
        "folds": 3,
        "test": "paired randomisation test of NDCG@10 over the judged test queries pooled across world seeds "
        "(per query, the mean over the ranker seeds), 10,000 resamples, Holm across every comparison",
        "command": "python benchmarks/clicks_debias.py --seeds "
        + " ".join(map(str, args.seeds))
        + (" --worlds " + " ".join(args.worlds) if args.worlds != list(WORLDS) else "")
        + changed,
        "curves_from": str(args.curves_from) if args.curves_from else None,
        "seconds": round(time.perf_counter() - started),
    }
    for row in figures["comparisons"]:
        print(
            f"{row['world']:7s} {row['variant']:13s} vs {row['baseline']:13s} "
            f"delta {row['delta']:+.4f} p_holm {row['p_holm']:.3f}"
        )
    print("\n".join(markdown_table(figures)))
    print(write_results(args.results, figures))


if __name__ == "__main__":
    main()
