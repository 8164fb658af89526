"""LambdaMART trained on clicks: the engines' own unbiased lambdarank against the naive one, checked against judgments.

Worlds (``ltrfeat.datasets.synth.generate_world``, the demo's quick size: 240 judged queries, 800 products, 800
click-log queries disjoint from the judged ones), examination P(rank r) = r^-e, as in ``clicks_debias.py``:
e=0 (control: no position bias), e=0.8 (the default world), e=1.5 (steep), and e=0.8 with title attraction 0.5
(clicks follow the snippet's query-title overlap besides relevance: a bias no position correction removes).

Training data: the impression-level log ``clicks_impressions.tsv``, every session one shown list (qid = session, rows
= its results, label = clicked, ``position`` = where each was shown), with the demo's lexical features of the query
against the title and the description (corpus statistics fitted once on the catalogue). Test: every judged query with
its graded labels (the click log holds none of them). Rankers: LightGBM and XGBoost LambdaMART (100 trees, 31 leaves,
learning rate 0.05, no early stopping, seed = world seed), naive (positions left out) and unbiased (positions handed
to the engine: LightGBM ``Dataset(position=...)``, XGBoost ``lambdarank_unbiased``). Test: paired randomisation
tests of NDCG@10 over the judged queries pooled across the world seeds (10,000 resamples), Holm-adjusted across every
comparison of the run (unbiased against naive, per world and engine).

Run: python benchmarks/clicks_rankers.py [--seeds 0 1 2] [--worlds e0 e0.8 e1.5 titles]
Writes benchmarks/results/clicks_rankers.json.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks")]

from clicks_debias import QUICK, WORLDS  # noqa: E402 (the same worlds as the encoders' benchmark)

WORLD_SIZE = QUICK["world"]
ENGINES = ("lightgbm", "xgboost")
METRIC = "ndcg@10"
RANKER = {"n_estimators": 100, "early_stopping_rounds": None, "n_jobs": 1}


def _with_texts(pairs: pd.DataFrame, docs: pd.DataFrame) -> pd.DataFrame:
    """``pairs`` (qid, query, docid, label) with the title as ``doc`` and the ``description``, as the demo extracts."""
    docs = docs.set_index("docid")
    return pairs.assign(
        doc=docs.loc[pairs["docid"], "title"].to_numpy(), description=docs.loc[pairs["docid"], "description"].to_numpy()
    )[["qid", "query", "docid", "doc", "label", "description"]]


def world_run(name: str, seed: int, *, world_size: dict = WORLD_SIZE) -> tuple[dict, dict[str, pd.DataFrame]]:
    """One world: the click data's size and every ranker's per-query NDCG@10 on the judged queries."""
    from ltrfeat.core.metrics import evaluate_queries
    from ltrfeat.datasets.synth import generate_world
    from ltrfeat.features.extract import extract_pairs, fit_extractors, lexical_extractors
    from ltrfeat.rankers.lambdamart import LambdaMART

    world = generate_world(seed=seed, **world_size, **WORLDS[name])
    shown = world.impressions.rename(columns={"session": "qid", "clicked": "label"})
    clicks = _with_texts(shown, world.docs)
    judged = _with_texts(world.judged[["qid", "query", "docid", "label"]], world.docs)
    catalogue = world.docs.rename(columns={"title": "doc"})[["docid", "doc", "description"]]
    extractors = fit_extractors(lexical_extractors("all", fields=["doc", "description"]), catalogue)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        train, test = extract_pairs(clicks, extractors), extract_pairs(judged, extractors)
    where = dict(zip(zip(shown["qid"].astype(str), shown["docid"].astype(str)), shown["position"]))
    train.position = np.array([where[(q, d)] for q, d in zip(train.qid.tolist(), train.docid.tolist())])
    naive = type(train)(train.qid, train.label, train.X, train.feature_map, docid=train.docid)
    per_query: dict[str, pd.DataFrame] = {}
    seconds: dict[str, float] = {}
    for engine in ENGINES:
        for mode, data in (("naive", naive), ("unbiased", train)):
            start = time.perf_counter()
            model = LambdaMART(engine=engine, seed=seed, **RANKER).fit(data)
            seconds[f"{engine}-{mode}"] = round(time.perf_counter() - start, 1)
            frame = evaluate_queries(test.qid, test.label, model.predict(test), [METRIC])
            per_query[f"{engine}-{mode}"] = frame.assign(qid=lambda f: f"s{seed}:" + f.index.astype(str))
    record = {
        "sessions": int(shown["qid"].nunique()),
        "shown_rows": len(shown),
        "clicks": int(shown["label"].sum()),
        "judged_queries": int(judged["qid"].nunique()),
        "train_seconds": seconds,
    }
    return record, per_query


def comparisons(per_query: dict[str, dict[str, pd.DataFrame]], *, n_resamples: int = 10_000) -> list[dict]:
    """Unbiased against naive per world and engine (queries pooled over seeds), Holm across all of them."""
    from ltrfeat.experiments.stats import bootstrap_ci, holm, randomization_test, win_tie_loss

    rows = []
    for world, frames in per_query.items():
        for engine in ENGINES:
            a = frames[f"{engine}-naive"].set_index("qid")[METRIC]
            b = frames[f"{engine}-unbiased"].set_index("qid")[METRIC].loc[a.index]
            delta = (b - a).to_numpy()
            low, high = bootstrap_ci(delta, n_resamples=n_resamples)
            rows.append(
                {
                    "world": world,
                    "engine": engine,
                    "queries": len(a),
                    "naive": round(float(a.mean()), 4),
                    "unbiased": round(float(b.mean()), 4),
                    "delta": round(float(delta.mean()), 4),
                    "ci95": [round(float(low), 4), round(float(high), 4)],
                    "wins_ties_losses": list(win_tie_loss(b.to_numpy(), a.to_numpy())),
                    "p_randomization": float(randomization_test(b.to_numpy(), a.to_numpy(), n_resamples=n_resamples)),
                }
            )
    for row, p in zip(rows, holm([r["p_randomization"] for r in rows])):
        row["p_holm"] = float(p)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--worlds", nargs="+", default=list(WORLDS), choices=list(WORLDS))
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "clicks_rankers.json")
    args = parser.parse_args()
    started = time.perf_counter()
    worlds: dict = {}
    per_query: dict = {}
    for name in args.worlds:
        frames: dict[str, list] = {}
        for seed in args.seeds:
            record, scores = world_run(name, seed)
            worlds.setdefault(name, {})[f"seed{seed}"] = record
            for key, frame in scores.items():
                frames.setdefault(key, []).append(frame)
            print(f"{name} seed {seed}: " + ", ".join(f"{k} {f[METRIC].mean():.4f}" for k, f in scores.items()))
        per_query[name] = {k: pd.concat(v, ignore_index=True) for k, v in frames.items()}
    rows = comparisons(per_query)
    for r in rows:
        print(
            f"{r['world']:>6} {r['engine']:<8} naive {r['naive']:.4f} unbiased {r['unbiased']:.4f} "
            f"delta {r['delta']:+.4f} [{r['ci95'][0]:+.4f}, {r['ci95'][1]:+.4f}] p Holm {r['p_holm']:.4g}"
        )
    result = {
        "command": "python benchmarks/clicks_rankers.py " + " ".join(sys.argv[1:]),
        "seeds": args.seeds,
        "world_size": WORLD_SIZE,
        "ranker": RANKER,
        "metric": METRIC,
        "worlds": worlds,
        "comparisons": rows,
        "wall_seconds": round(time.perf_counter() - started, 1),
    }
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
