"""Position-debiased click-trained encoders on real text: Home Depot queries and products, simulated clicks.

The semi-synthetic protocol of Joachims, Swaminathan and Schnabel (WSDM 2017) on the Home Depot judged pairs
(``/work/shared/datasets/home_depot``, grades 0..6 = ``linear:1:3:7`` of the averaged 1..3 ratings; the benchmark
says so and exits when the file is absent):

- queries with at least 2 judged products, ``--queries`` of them drawn (split seed 0), are split in two disjoint
  halves: click queries (their clicks train the encoders; their judgments are used only to simulate the clicks)
  and judged test queries (their judgments score the rankers; no encoder ever sees them);
- production ranker: BM25 of the query against the product titles (corpus statistics of every Home Depot title);
  each of ``--sessions`` result pages of a click query shows the query's judged products, at most ``--depth``,
  ordered by BM25 plus Gaussian noise of ``--jitter`` times the query's BM25 spread (the reshuffles that let the
  examination curve be harvested from the log);
- clicks under the position-based model: rank r is examined with probability r^-eta (``--eta``), an examined
  product of grade g is clicked with probability noise + (1 - noise) (2^g - 1) / (2^6 - 1) (``--noise``: clicks on
  irrelevant results);
- the impression-level log (``session, query, docid, position, clicked``: docs/clicks.md) is written as JSON lines
  and read back with ``read_click_log``; the curve is harvested from it (95% bootstrap interval over queries) and
  compared with the true r^-eta;
- a CLSM (the demo's quick towers, GDSSM generalized loss, ``--epochs``) is trained on the click labels of each
  correction (``none``, ``ipw``, ``pbm``) and its cosine joins the lexical features (title field) of the test pairs;
- LambdaMART (LightGBM, 100 trees, no model selection) over ``--folds`` query folds of the test queries, per seed
  (``--seeds``: click simulation, encoder, folds and ranker); per-query NDCG@10 averaged over the seeds, paired
  randomisation tests (10,000 resamples), Holm across the comparisons (those of ``clicks_debias.py``).

``--keep DIR`` saves each seed's figures and per-query table in DIR and re-uses those of the same setup, so seeds can
run in separate processes (``--seeds 0 --keep DIR``, ``--seeds 1 --keep DIR``, ...) and a last run over every seed
pools them.

Run: python benchmarks/clicks_homedepot.py [--queries 2000] [--seeds 0] [--folds 3] [--epochs 2] [--keep DIR]
Writes benchmarks/results/clicks_homedepot.json.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import tempfile
import time
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks")]

from clicks_debias import (  # noqa: E402
    CORRECTIONS,
    METRIC,
    RANKER,
    comparisons,
    criterion,
    curve_figures,
    kept,
    readme_row,
    train_corrected,
)

MAX_GRADE = 6
CLICKS = {"sessions": 20, "depth": 10, "jitter": 0.5, "eta": 1.0, "noise": 0.1}


def split_queries(pairs: pd.DataFrame, n_queries: int, *, seed: int = 0) -> tuple[set, set]:
    """``(click queries, test queries)``: ``n_queries`` of the queries with >= 2 judged products, halved."""
    size = pairs.groupby("qid")["qid"].size()
    eligible = np.array(sorted(size.index[size >= 2]))
    drawn = np.random.default_rng(seed).permutation(eligible)[: min(n_queries, len(eligible))]
    half = len(drawn) // 2
    return set(drawn[:half]), set(drawn[half:])


def production_scores(pairs: pd.DataFrame, docs: pd.DataFrame) -> np.ndarray:
    """BM25 of each pair's query against its product title, with corpus statistics of every title in ``docs``."""
    from ltrfeat.features.lexical import LexicalExtractor

    bm25 = LexicalExtractor(features=("bm25",), fields=("doc",)).fit(docs)
    return bm25.transform(pairs[["query", "doc"]])[:, 0]


def simulate_clicks(
    pairs: pd.DataFrame,
    scores: np.ndarray,
    *,
    sessions: int,
    depth: int,
    jitter: float,
    eta: float,
    noise: float,
    seed: int,
) -> pd.DataFrame:
    """The impression-level log of ``sessions`` result pages per query of ``pairs`` (``qid, query, docid, label``):
    BM25 ``scores`` plus noise order the page, rank r is examined with probability r^-eta, an examined result of
    grade g is clicked with probability noise + (1 - noise) (2^g - 1) / (2^6 - 1)."""
    rng = np.random.default_rng(seed)
    frames = []
    session = 0
    attraction = noise + (1 - noise) * (2.0 ** pairs["label"].to_numpy(dtype=float) - 1) / (2.0**MAX_GRADE - 1)
    for rows in pairs.groupby("qid", sort=True).indices.values():
        spread = max(float(np.std(scores[rows])), 1e-3)
        for _ in range(sessions):
            session += 1
            shown = rows[np.argsort(-(scores[rows] + rng.normal(0, jitter * spread, len(rows))), kind="stable")][:depth]
            position = np.arange(1, len(shown) + 1)
            clicked = (rng.random(len(shown)) < position.astype(float) ** -eta) & (
                rng.random(len(shown)) < attraction[shown]
            )
            frames.append(
                pd.DataFrame(
                    {
                        "session": session,
                        "query": pairs["query"].to_numpy()[shown],
                        "docid": pairs["docid"].to_numpy()[shown],
                        "position": position,
                        "clicked": clicked.astype(int),
                    }
                )
            )
    return pd.concat(frames, ignore_index=True)


@dataclass(frozen=True)
class Setup:
    """What a run simulates and trains: ``CLICKS``-like click options, the CLSM's sizes and training options, the
    ranker's query folds and the propensity interval's bootstrap resamples."""

    clicks: dict
    sizes: dict
    encoder: dict
    folds: int = 3
    resamples: int = 200


def seed_run(pairs, docs, queries: tuple[set, set], seed: int, work: Path, setup: Setup) -> tuple[dict, pd.DataFrame]:
    """One seed: clicks simulated on the click queries (``queries``: click, test), the curve against the truth,
    three encoders trained on the log and the per-query NDCG@10 of every feature set on the test queries."""
    from ltrfeat.experiments.demo import demo_folds as _folds
    from ltrfeat.clicks.log import read_click_log
    from ltrfeat.clicks.propensity import estimate_propensity
    from ltrfeat.experiments.feature_sets import plan_feature_sets
    from ltrfeat.experiments.ablation import run_ablation
    from ltrfeat.features.extract import extract_pairs, lexical_extractors
    from ltrfeat.features.neural import EncoderExtractor

    start, cpu = time.perf_counter(), time.process_time()
    click_qids, test_qids = queries
    click_pairs = pairs[pairs["qid"].isin(click_qids)].reset_index(drop=True)
    impressions = simulate_clicks(click_pairs, production_scores(click_pairs, docs), seed=seed, **setup.clicks)
    log_path = work / "clicks_impressions.jsonl"
    impressions.to_json(log_path, orient="records", lines=True)
    log = read_click_log(log_path, docs=docs[["docid", "doc"]])
    curve = estimate_propensity(log, method="harvest", seed=seed, resamples=setup.resamples)
    truth = curve.positions.astype(float) ** -setup.clicks["eta"]
    models, trained = train_corrected(log, curve, work, seed=seed, sizes=setup.sizes, encoder=setup.encoder)
    test = pairs[pairs["qid"].isin(test_qids)][["qid", "query", "docid", "doc", "label"]]
    extractors = lexical_extractors("all", fields=["doc"])
    extractors += [EncoderExtractor(name=name, path=str(path), field="doc") for name, path in models.items()]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        data = extract_pairs(test, extractors, conflicts="first")
        neural = {name: [f"{name}_doc_cos"] for name in models}
        base = ",".join(f.name for f in data.feature_map if f.source.startswith("lexical"))
        result = run_ablation(
            _folds(data, k=setup.folds, seed=seed),
            [s for s in plan_feature_sets(data.feature_map, base=base, neural=neural) if s.name != "lexical+all"],
            seeds=(seed,),
            ranker_params=RANKER,
            progress=False,
        )
    return {
        "propensity": curve_figures(curve, truth),
        "encoders": trained,
        "log": {
            "impressions": int(log.totals["impressions"].sum()),
            "clicks": int(log.totals["clicks"].sum()),
            "pairs": len(log.totals),
        },
        "seconds": round(time.perf_counter() - start),
        "cpu_seconds": round(time.process_time() - cpu),
    }, result.per_query


def seed_mean(frames: list[pd.DataFrame]) -> pd.DataFrame:
    """Per (feature set, test query): NDCG@10 averaged over the seeds (one pooled fold, for the paired test)."""
    frame = pd.concat(frames, ignore_index=True)
    means = frame.groupby(["feature_set", "qid"], sort=False).agg(
        n_docs=("n_docs", "first"), n_relevant=("n_relevant", "first"), **{METRIC: (METRIC, "mean")}
    )
    return means.reset_index().assign(fold="seeds")


def kept_seed_run(pairs, docs, queries: tuple[set, set], seed: int, work: Path, setup: Setup, keep: Path | None):
    """:func:`seed_run`, or its figures and per-query table from ``keep`` (see :func:`clicks_debias.kept`)."""
    signature = {"setup": dataclasses.asdict(setup), "queries": sorted(map(str, queries[0] | queries[1]))}
    return kept(keep, f"seed-{seed}", signature, lambda: seed_run(pairs, docs, queries, seed, work, setup))


def run(pairs, docs, *, n_queries: int, seeds, work: Path, setup: Setup, keep: Path | None = None, log=print) -> dict:
    """The benchmark on ``pairs`` (``qid, query, docid, doc, label``) and the products table ``docs``; ``keep``: see
    ``--keep``."""
    click_qids, test_qids = split_queries(pairs, n_queries)
    assert not click_qids & test_qids
    figures: dict = {
        "queries": {"click": len(click_qids), "test": len(test_qids)},
        "pairs": {
            "click": int(pairs["qid"].isin(click_qids).sum()),
            "test": int(pairs["qid"].isin(test_qids).sum()),
        },
        "seeds": {},
    }
    frames = []
    for seed in seeds:
        start = time.perf_counter()
        run_dir = work / f"seed-{seed}"
        run_dir.mkdir(parents=True)
        found, per_query = kept_seed_run(pairs, docs, (click_qids, test_qids), seed, run_dir, setup, keep)
        figures["seeds"][str(seed)] = found
        frames.append(per_query)
        errors = np.abs(found["propensity"]["relative_error"])
        log(
            f"seed {seed}: {found['log']['impressions']} impressions, {found['log']['clicks']} clicks; max |propensity "
            f"error| ranks 1-10 {errors.max():.1%} ({time.perf_counter() - start:.0f} s)"
        )
    pooled = seed_mean(frames)
    means = pooled.groupby("feature_set")[METRIC].mean()
    figures["ndcg@10"] = {k: round(float(v), 4) for k, v in means.items()}
    figures["test_queries_scored"] = int(pooled["qid"].nunique())
    log("NDCG@10 " + ", ".join(f"{k} {v:.4f}" for k, v in means.items()))
    rows = comparisons({"homedepot": pooled})
    figures["comparisons"] = rows
    figures["criterion"] = criterion(rows)["homedepot"]
    return figures


def markdown_table(figures: dict) -> list[str]:
    """The lines docs/experiments.md quotes (checked against the results file by tests/clicks/test_docs_debias.py):
    NDCG@10 of BM25 alone, lexical and lexical + each encoder, the corrections' changes against the uncorrected encoder (ranker
    and cosine alone) with Holm-adjusted p-values, and the harvested curve against the truth."""
    rows = {(r["baseline"], r["variant"]): r for r in figures["comparisons"]}

    def change(base, variant):
        r = rows[(base, variant)]
        return f"{r['delta']:+.4f} ({r['p_holm']:.2f})"

    ndcg = figures["ndcg@10"]
    lines = [
        "| BM25 alone | lexical | +none | +ipw | +pbm | none - lexical (p Holm) | ipw - none (p Holm) | "
        "pbm - none (p Holm) | alone: ipw - none | alone: pbm - none |",
        "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
        f"| {ndcg['bm25_doc']:.4f} | {ndcg['lexical']:.4f} | "
        + " | ".join(f"{ndcg[f'lexical+clsm-{c}']:.4f}" for c in CORRECTIONS)
        + f" | {change('lexical', 'lexical+clsm-none')}"
        + f" | {change('lexical+clsm-none', 'lexical+clsm-ipw')} | {change('lexical+clsm-none', 'lexical+clsm-pbm')}"
        + f" | {change('clsm-none_doc_cos', 'clsm-ipw_doc_cos')} | {change('clsm-none_doc_cos', 'clsm-pbm_doc_cos')} |",
        "",
        "| rank | " + " | ".join(str(r) for r in range(1, 11)) + " |",
        "| --- | " + " | ".join("---:" for _ in range(10)) + " |",
    ]
    seeds = list(figures["seeds"].values())
    lines.append("| truth | " + " | ".join(f"{v:.3f}" for v in seeds[0]["propensity"]["truth"]) + " |")
    for seed, found in figures["seeds"].items():
        values = found["propensity"]["estimate"]["values"]
        lines.append(f"| harvested, seed {seed} | " + " | ".join(f"{v:.3f}" for v in values) + " |")
    return lines


def readme_rows(figures: dict) -> list[str]:
    """The README's line for Home Depot (:func:`clicks_debias.readme_row`)."""
    return [readme_row("Home Depot, simulated", figures["comparisons"])]


def main() -> None:
    from _common import HOME_DEPOT, home_depot_pairs, write_results
    from ltrfeat.experiments.demo import SIZES

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--queries", type=int, default=2000, help="queries drawn (half click, half test)")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    parser.add_argument("--folds", type=int, default=3)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--resamples", type=int, default=200, help="bootstrap resamples of the propensity interval")
    parser.add_argument("--keep", type=Path, help="save and re-use each seed's results in this directory")
    for name, value in CLICKS.items():
        parser.add_argument(f"--{name}", type=type(value), default=value)
    args = parser.parse_args()
    if not HOME_DEPOT.exists():
        print(f"skipped: {HOME_DEPOT} is absent (see /work/shared/datasets/home_depot/SOURCE.md)")
        return
    started = time.perf_counter()
    pairs, docs = home_depot_pairs()
    title = docs.set_index("docid")["doc"]
    pairs = pairs.assign(doc=title.loc[pairs["docid"]].to_numpy())
    clicks = {name: getattr(args, name) for name in CLICKS}
    encoder = {"epochs": args.epochs, "batch_size": 256}
    with tempfile.TemporaryDirectory() as tmp:
        figures = run(
            pairs,
            docs,
            n_queries=args.queries,
            seeds=args.seeds,
            work=Path(tmp),
            setup=Setup(clicks, SIZES["quick"]["clsm"], encoder, folds=args.folds, resamples=args.resamples),
            keep=args.keep,
        )
    command = f"python benchmarks/clicks_homedepot.py --queries {args.queries} --seeds " + " ".join(
        map(str, args.seeds)
    )
    defaults = {"folds": 3, "epochs": 2, "resamples": 200, **CLICKS}
    changed = {k: getattr(args, k) for k, v in defaults.items() if getattr(args, k) != v}
    figures["setup"] = {
        "clicks": clicks,
        "encoder": {"model": "clsm", "loss": "generalized", **encoder, "sizes": SIZES["quick"]["clsm"]},
        "ranker": RANKER,
        "folds": args.folds,
        "test": "paired randomisation test of NDCG@10 over the judged test queries (per-query mean over the seeds), "
        "10,000 resamples, Holm across every comparison",
        "command": command + "".join(f" --{k} {v}" for k, v in changed.items()),
        "seconds": round(time.perf_counter() - started),
    }
    for row in figures["comparisons"]:
        print(f"{row['variant']:17s} vs {row['baseline']:17s} delta {row['delta']:+.4f} p_holm {row['p_holm']:.3f}")
    print("\n".join(markdown_table(figures)))
    print(write_results("clicks_homedepot", figures))


if __name__ == "__main__":
    main()
