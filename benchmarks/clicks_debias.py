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
seed), ranker seed = world seed; every judged query is a test query once, never trained on by the ranker of its
fold, and no encoder saw a judged query. Test: paired randomisation tests of NDCG@10 over the test queries pooled
across the world seeds (10,000 resamples), Holm-adjusted across every comparison of the run:
lexical+ipw and lexical+pbm against lexical+none (the criterion: not worse where there is position bias, not
different at e=0) and each encoder against lexical (the lift).

Run: python benchmarks/clicks_debias.py [--seeds 0 1 2] [--worlds e0 e0.8 e1.5 titles]
Writes benchmarks/results/clicks_debias.json.
"""

from __future__ import annotations

import argparse
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
RANKER = {"n_estimators": 100, "n_jobs": 1, "params": {"bagging_fraction": 0.8, "bagging_freq": 1}}


def world_run(name: str, seed: int, work: Path, *, sizes: dict, encoder: dict, world_size: dict, resamples: int):
    """One world: its propensity curve against the truth and the per-query NDCG of every feature set."""
    from ltrfeat.experiments.demo import demo_features as _features, demo_folds as _folds
    from ltrfeat.clicks.log import read_click_log
    from ltrfeat.clicks.propensity import estimate_propensity
    from ltrfeat.datasets.synth import generate_world, write_world
    from ltrfeat.experiments.ablation import plan_feature_sets, run_ablation

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
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = run_ablation(
            _folds(data, k=3, seed=seed),
            [s for s in plan_feature_sets(data.feature_map, base=base, neural=neural) if s.name != "lexical+all"],
            seeds=(seed,),
            ranker_params=RANKER,
            progress=False,
        )
    per_query = result.per_query.assign(qid=lambda f: f"s{seed}:" + f["qid"].astype(str))
    return {
        "propensity": curve_figures(curve, truth),
        "encoders": trained,
        "log": {"impressions": int(log.totals["impressions"].sum()), "clicks": int(log.totals["clicks"].sum())},
    }, per_query


def train_corrected(log, curve, work: Path, *, seed: int, sizes: dict, encoder: dict) -> tuple[dict, dict]:
    """A CLSM (GDSSM generalized loss) trained on ``log``'s click labels under each correction, ``curve`` the
    propensities: ``(encoder name -> saved bundle, correction -> validation NDCG@10 and seconds)``."""
    from ltrfeat.clicks.debias import click_labels
    from ltrfeat.features.encoders.training import train_encoder

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


def curve_figures(curve, truth) -> dict:
    """The estimated propensity ``curve`` beside the ``truth``: relative errors and whether the interval holds it."""
    return {
        "estimate": curve.to_dict(),
        "truth": [round(float(v), 6) for v in truth],
        "relative_error": [round(float(v), 4) for v in curve.values / truth - 1],
        "truth_inside_interval": [bool(v) for v in (curve.lower <= truth) & (truth <= curve.upper)],
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
                truth = curve.positions.astype(float) ** -exponent
                error = curve.values / truth - 1
                inside = (curve.lower <= truth) & (truth <= curve.upper)
                rows.append(
                    {
                        "exponent": exponent,
                        "click_queries": n_click,
                        "seed": seed,
                        "impressions": int(click_log.totals["impressions"].sum()),
                        "relative_error": [round(float(v), 4) for v in error],
                        "within_10pct": [bool(v) for v in np.abs(error) <= 0.1],
                        "truth_inside_interval": [bool(v) for v in inside],
                    }
                )
                log(
                    f"curve e={exponent} {n_click} click queries seed {seed}: |error| <= 10% at ranks "
                    f"{[int(k) for k in curve.positions[np.abs(error) <= 0.1]]}, truth in interval at "
                    f"{int(inside.sum())}/10"
                )
    return rows


def comparisons(per_query: dict[str, pd.DataFrame], *, n_resamples: int = 10_000) -> list[dict]:
    """Every world's comparisons (debiased against naive, each against lexical), Holm across all of them."""
    from ltrfeat.experiments.ablation import head_to_head
    from ltrfeat.experiments.stats import holm

    pairs = [("lexical+clsm-none", "lexical+clsm-ipw"), ("lexical+clsm-none", "lexical+clsm-pbm")]
    pairs += [("lexical", f"lexical+clsm-{c}") for c in CORRECTIONS]
    pairs += [("clsm-none_doc_cos", f"clsm-{c}_doc_cos") for c in CORRECTIONS[1:]]
    rows = []
    for world, frame in per_query.items():
        for row in head_to_head(frame, pairs, [METRIC], n_resamples=n_resamples):
            rows.append({"world": world, **row})
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


def run(worlds, seeds, *, work: Path, quick_sizes: dict, encoder: dict, world_size: dict, resamples: int, log=print):
    figures: dict = {"worlds": {}, "seeds": list(seeds)}
    pooled = {}
    for name in worlds:
        frames = []
        for seed in seeds:
            start = time.perf_counter()
            run_dir = work / f"{name}-{seed}"
            run_dir.mkdir(parents=True)
            found, per_query = world_run(
                name, seed, run_dir, sizes=quick_sizes, encoder=encoder, world_size=world_size, resamples=resamples
            )
            figures["worlds"].setdefault(name, {"options": WORLDS[name], "seeds": {}})["seeds"][str(seed)] = found
            frames.append(per_query)
            errors = np.abs(found["propensity"]["relative_error"])
            log(
                f"{name} seed {seed}: max |propensity error| ranks 1-10 {errors.max():.1%} ({time.perf_counter() - start:.0f} s)"
            )
        pooled[name] = pd.concat(frames, ignore_index=True)
        means = pooled[name].groupby("feature_set")[METRIC].mean()
        figures["worlds"][name]["ndcg@10"] = {k: round(float(v), 4) for k, v in means.items()}
        log(f"{name}: NDCG@10 " + ", ".join(f"{k} {v:.4f}" for k, v in means.items()))
    rows = comparisons(pooled)
    figures["comparisons"] = rows
    figures["criterion"] = criterion(rows)
    return figures


def markdown_table(figures: dict) -> list[str]:
    """The lines docs/experiments.md quotes (checked against the results file by tests/clicks/test_docs_debias.py):
    per world, NDCG@10 of lexical and of lexical + each encoder, the corrections' changes against the uncorrected
    encoder (ranker and feature alone) with their Holm-adjusted p-values, and the curve's largest error."""
    rows = {(r["world"], r["baseline"], r["variant"]): r for r in figures["comparisons"]}
    lines = [
        "| world | lexical | +none | +ipw | +pbm | ipw - none (p Holm) | pbm - none (p Holm) | alone: ipw - none | "
        "alone: pbm - none | curve error, ranks 1-5 / 6-10 |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for world, found in figures["worlds"].items():
        ndcg = found["ndcg@10"]

        def change(base, variant):
            r = rows[(world, base, variant)]
            return f"{r['delta']:+.4f} ({r['p_holm']:.2f})"

        errors = np.array([s["propensity"]["relative_error"] for s in found["seeds"].values()])
        top, tail = np.abs(errors[:, :5]).max(), np.abs(errors[:, 5:]).max()
        lines.append(
            f"| {world} | {ndcg['lexical']:.4f} | "
            + " | ".join(f"{ndcg[f'lexical+clsm-{c}']:.4f}" for c in CORRECTIONS)
            + f" | {change('lexical+clsm-none', 'lexical+clsm-ipw')} | {change('lexical+clsm-none', 'lexical+clsm-pbm')}"
            + f" | {change('clsm-none_doc_cos', 'clsm-ipw_doc_cos')} | {change('clsm-none_doc_cos', 'clsm-pbm_doc_cos')}"
            + f" | {top:.0%} / {tail:.0%} |"
        )
    return lines


def main() -> None:
    from _common import write_results
    from ltrfeat.experiments.demo import SIZES

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--worlds", nargs="+", default=list(WORLDS), choices=list(WORLDS))
    args = parser.parse_args()
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        figures = run(
            args.worlds,
            args.seeds,
            work=Path(tmp),
            quick_sizes=SIZES["quick"]["clsm"],
            encoder=QUICK["encoder"],
            world_size=QUICK["world"],
            resamples=200,
        )
    with tempfile.TemporaryDirectory() as tmp:
        figures["propensity_accuracy"] = propensity_accuracy(args.seeds, Path(tmp))
    figures["setup"] = {
        "world": QUICK["world"],
        "encoder": {"model": "clsm", "loss": "generalized", **QUICK["encoder"], "sizes": SIZES["quick"]["clsm"]},
        "ranker": RANKER,
        "folds": 3,
        "test": "paired randomisation test of NDCG@10 over the judged test queries pooled across world seeds, "
        "10,000 resamples, Holm across every comparison",
        "command": "python benchmarks/clicks_debias.py --seeds " + " ".join(map(str, args.seeds)),
        "seconds": round(time.perf_counter() - started),
    }
    for row in figures["comparisons"]:
        print(
            f"{row['world']:7s} {row['variant']:13s} vs {row['baseline']:13s} "
            f"delta {row['delta']:+.4f} p_holm {row['p_holm']:.3f}"
        )
    print("\n".join(markdown_table(figures)))
    print(write_results("clicks_debias", figures))


if __name__ == "__main__":
    main()
