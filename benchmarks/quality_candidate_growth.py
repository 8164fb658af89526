"""Does the recommendation get worse when more candidates are offered? (issue 35, item 1)

One model-selection ablation per data set holds every feature set and every candidate; the recommendation is
then re-made from its inner cross-validation (training queries only, :func:`ltrfeat.rankers.selection.recommend`)
for growing offers — feature sets added one by one, then ranker kinds added one by one — under each rule
(``joint``: margin growing with the number of configurations; ``one-se``; ``best``). A set's own inner CV does
not depend on the other sets, so each step equals an ablation run with only that offer. Printed per step and
rule: the recommended configuration's test NDCG@1 / NDCG@10 (test queries of every fold, pooled), its change
against the previous step with the paired standard error (``!`` marks a drop larger than two SEs), the best
fixed configuration of the step in hindsight (picked on the test queries: what selection cost) and BM25 alone.

Data (``--data``):
  sample        the committed synthetic world (data/judged.tsv, 240 queries): lexical features, then DSSM,
                CLSM from scratch, CLSM +spans (pre-trained on the 800 document texts) and zero-shot MiniLM,
                each cross-fitted (3 query folds)
  homedepot300  300 / 1,000 Home Depot queries (seeded, among queries with two or more judged products), the
  homedepot1000 same encoders
  mq2008        LETOR 4.0 MQ2008, 5 folds, no texts: BM25 (21-25), then TF-IDF (11-15), the language models
                (26-40), link and URL features (41-46), TF/IDF/length (1-10, 16-20)

    python benchmarks/quality_candidate_growth.py [--data sample|homedepot300|homedepot1000|mq2008]
        [--seeds 0] [--cache DIR] [--rounds N]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks")]

from _common import RESULTS, write_results  # noqa: E402

METRICS = ("ndcg@1", "ndcg@10")
RULES = ("joint", "one-se", "best", "tiered")
ENCODERS = ("dssm:generalized", "clsm:generalized", "clsm:generalized+spans", "sbert")
MQ2008_GROUPS = {"tfidf": "11-15", "lmir": "26-40", "links": "41-46", "tf-idf-dl": "1-10,16-20"}


def text_data(name: str, cache):
    """Cross-fitted folds and feature sets for the sample world or a Home Depot subset."""
    from ltrfeat.core.text import read_judged_pairs
    from ltrfeat.experiments.ablation import FeatureSet
    from ltrfeat.experiments.crossfit import EncoderSpec, text_folds
    from ltrfeat.features.extract import lexical_extractors

    if name == "sample":
        pairs = read_judged_pairs(ROOT / "data" / "judged.tsv")
    else:
        from _common import home_depot_pairs

        pairs, _ = home_depot_pairs()
        n = int(name.removeprefix("homedepot"))
        judged = pairs.groupby("qid").size()
        rng = np.random.default_rng(0)
        keep = rng.choice(judged.index[judged >= 2].to_numpy(), size=n, replace=False)
        pairs = pairs[pairs["qid"].isin(set(keep))].reset_index(drop=True)
    folds, groups, base, _ = text_folds(
        pairs,
        lexical=lexical_extractors("all", fields=["doc"]),
        specs=[EncoderSpec.parse(s) for s in ENCODERS],
        k=3,
        valid_fraction=0.1,
        seed=0,
        cache=cache,
        conflicts="first",
        progress=False,
    )
    sets = [FeatureSet("lexical", list(base))]
    sets += [FeatureSet(f"lexical+{g}", list(base) + list(cols)) for g, cols in groups.items()]
    bm25 = [c for c in base if c.startswith("bm25")][:1]
    return list(folds), sets + [FeatureSet(c, [c], "alone") for c in bm25]


def mq2008_data():
    from ltrfeat.experiments.ablation import FeatureSet
    from quality_selection import mq2008_folds

    loaded = mq2008_folds()
    if loaded is None:
        sys.exit("MQ2008 is absent (../shared/datasets/letor4_mq2008)")
    folds = loaded[0]
    fmap = folds[0].train.feature_map

    def names(spec):
        return [fmap.features[j].name for j in sorted(fmap.resolve(spec))]

    columns = names("21-25")
    sets = [FeatureSet("bm25", list(columns))]
    for group, spec in MQ2008_GROUPS.items():
        columns = columns + names(spec)
        sets.append(FeatureSet(f"{sets[-1].name}+{group}", list(columns)))
    return folds, sets + [FeatureSet(names("25")[0], names("25"), "alone")]


def test_values(per_query, name: str, fold: str, metric: str) -> np.ndarray:
    rows = per_query[(per_query["feature_set"] == name) & (per_query["fold"] == fold)]
    return rows.sort_values("qid")[metric].to_numpy(dtype=np.float64)


def pooled(per_query, choice: dict, metric: str) -> np.ndarray:
    """Test values of each fold's chosen configuration, folds concatenated (NaN = excluded query)."""
    return np.concatenate([test_values(per_query, name, fold, metric) for fold, name in choice.items()])


def growth(result, steps: list[tuple[str, list[str], list[str]]], bm25: str | None) -> list[dict]:
    """Per step (label, offered sets, offered candidates) and rule: the recommendation and its test scores."""
    from ltrfeat.rankers.selection import recommend

    folds = list(result.inner_cv)
    out, previous = [], {}
    for label, sets, kinds in steps:
        row = {"step": label, "configurations": len(sets) * len(kinds), "rules": {}}
        configs = [f"{s}/{c}" for s in sets for c in kinds]
        for metric in METRICS:
            fixed = {c: np.nanmean(pooled(result.per_query, dict.fromkeys(folds, c), metric)) for c in configs}
            best = max(fixed, key=fixed.get)
            row.setdefault("best_fixed", {})[metric] = {"name": best, "mean": float(fixed[best])}
            if bm25:
                row.setdefault("bm25_alone", {})[metric] = float(
                    np.nanmean(pooled(result.per_query, dict.fromkeys(folds, bm25), metric))
                )
        for rule in RULES:
            choice = {}
            for fold in folds:
                cv = {s: {c: result.inner_cv[fold][s][1][c] for c in kinds} for s in sets}
                rec = recommend(cv, rule, sets)
                choice[fold] = f"{rec['feature_set']}/{rec['candidate']}"
            entry = {"chosen": choice, "margin_z": rec["margin_z"]}
            for metric in METRICS:
                values = pooled(result.per_query, choice, metric)
                entry[metric] = float(np.nanmean(values))
                if rule in previous:
                    d = values - pooled(result.per_query, previous[rule], metric)
                    d = d[np.isfinite(d)]
                    entry[f"{metric}_change"] = float(d.mean())
                    entry[f"{metric}_change_se"] = float(d.std(ddof=1) / np.sqrt(len(d)))
            previous[rule] = choice
            row["rules"][rule] = entry
        out.append(row)
    return out


def show(title: str, rows: list[dict]) -> None:
    print(f"\n-- {title}")
    for row in rows:
        fixed = "  ".join(f"{m} {row['best_fixed'][m]['mean']:.4f}" for m in METRICS)
        bm25 = "  ".join(f"{m} {v:.4f}" for m, v in row.get("bm25_alone", {}).items())
        print(
            f"{row['step']} ({row['configurations']} configurations): best fixed in hindsight "
            f"{row['best_fixed'][METRICS[0]]['name']} {fixed}" + (f"; bm25 alone {bm25}" if bm25 else "")
        )
        for rule, e in row["rules"].items():
            parts = []
            for m in METRICS:
                text = f"{m} {e[m]:.4f}"
                if f"{m}_change" in e:
                    change, se = e[f"{m}_change"], e[f"{m}_change_se"]
                    text += f" ({change:+.4f} ± {se:.4f}{' !' if change < -2 * se else ''})"
                parts.append(text)
            chosen = ", ".join(sorted(set(e["chosen"].values())))
            print(f"   {rule:<7} z {e['margin_z']:.2f}  {'  '.join(parts)}  [{chosen}]")


def summary(rows: list[dict]) -> dict:
    """Per rule and metric: the last step's score, the worst change beyond two SEs, and the selection cost."""
    out = {}
    for rule in RULES:
        for m in METRICS:
            drops = [r["rules"][rule].get(f"{m}_change", 0.0) for r in rows]
            beyond = [
                r["step"]
                for r in rows
                if r["rules"][rule].get(f"{m}_change", 0.0) < -2 * r["rules"][rule].get(f"{m}_change_se", 0.0)
            ]
            out[f"{rule}|{m}"] = {
                "first": rows[0]["rules"][rule][m],
                "last": rows[-1]["rules"][rule][m],
                "worst_change": float(min(drops)),
                "drops_beyond_2se": beyond,
                "selection_cost_last": rows[-1]["best_fixed"][m]["mean"] - rows[-1]["rules"][rule][m],
            }
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", choices=["sample", "homedepot300", "homedepot1000", "mq2008"], default="sample")
    parser.add_argument("--seeds", default="0", help="ranker seeds, comma-separated")
    parser.add_argument("--cache", default=None, help="encoder cache directory (text data)")
    parser.add_argument("--rounds", type=int, default=None, help="LambdaMART rounds (default: the library's)")
    args = parser.parse_args(argv)
    from ltrfeat.experiments.ablation import run_ablation
    from ltrfeat.rankers import registry
    from ltrfeat.rankers.selection import SelectionConfig

    started = time.perf_counter()
    folds, sets = mq2008_data() if args.data == "mq2008" else text_data(args.data, args.cache)
    features_s = time.perf_counter() - started
    print(
        f"{args.data}: {len(folds)} folds, {sum(f.test.n_queries for f in folds)} test queries; features {features_s:.0f} s"
    )
    selection = SelectionConfig.default("lightgbm")
    started = time.perf_counter()
    result = run_ablation(
        folds,
        sets,
        seeds=[int(s) for s in args.seeds.split(",")],
        metrics=list(METRICS),
        ranker_params=None if args.rounds is None else {"n_estimators": args.rounds},
        selection=selection,
        progress=False,
    )
    ablation_s = time.perf_counter() - started
    rankers = [s.name for s in sets if s.kind == "ranker"]
    bm25 = next((s.name for s in sets if s.kind == "alone"), None)
    kinds = list(selection.candidates)
    by_set = growth(result, [(f"+{s}" if i else s, rankers[: i + 1], kinds) for i, s in enumerate(rankers)], bm25)
    simplest = [k for k in registry.simplicity_order() if k in kinds]  # best-single first
    by_kind = growth(result, [(f"+{k}" if i else k, rankers, simplest[: i + 1]) for i, k in enumerate(simplest)], bm25)
    show("feature sets added one by one (every candidate)", by_set)
    show("ranker kinds added one by one (every feature set)", by_kind)
    figures = {
        "data": args.data,
        "seeds": args.seeds,
        "seconds": {"features": round(features_s, 1), "ablation": round(ablation_s, 1)},
        "by_feature_set": by_set,
        "by_ranker_kind": by_kind,
        "summary_by_feature_set": summary(by_set),
        "summary_by_ranker_kind": summary(by_kind),
    }
    print("\nsummary (feature sets added):")
    for key, v in figures["summary_by_feature_set"].items():
        print(
            f"  {key:<16} first {v['first']:.4f} last {v['last']:.4f} worst change {v['worst_change']:+.4f} "
            f"drops beyond 2 SE {v['drops_beyond_2se'] or 'none'}  selection cost {v['selection_cost_last']:+.4f}"
        )
    path = RESULTS / "quality_candidate_growth.json"
    previous = json.loads(path.read_text())["figures"] if path.is_file() else {}
    write_results("quality_candidate_growth", previous | {args.data: figures})


if __name__ == "__main__":
    main()
