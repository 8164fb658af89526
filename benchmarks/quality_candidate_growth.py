"""Does the recommendation get worse when more candidates are offered? (issues 35 and 55)

One model-selection ablation per data set holds every feature set and every candidate; the recommendation is
then re-made from its inner cross-validation (training queries only, :func:`ltrfeat.rankers.selection.recommend`,
with the features each fitted candidate uses) for growing offers — feature sets added one by one, MiniLM's set
offered beside lexical first and then the others, and ranker kinds added one by one — under each rule
(``joint``: margin growing with the number of distinct configurations; ``one-se``; ``best``; ``tiered``). A set's
own inner CV does not depend on the other sets, so each step equals an ablation run with only that offer. Printed
per step and rule: the recommended configuration's test NDCG@1 / NDCG@10 (test queries of every fold, pooled), its
change against the previous step with the paired standard error (``!`` marks a drop larger than two SEs), the best
fixed configuration of the step in hindsight (picked on the test queries: what selection cost), BM25 alone and the
best single feature (over every ranker column, chosen per fold on training queries).

Data (``--data``):
  sample        the committed synthetic world (data/judged.tsv, 240 queries): lexical features, then DSSM,
                CLSM from scratch, CLSM +spans (pre-trained on the 800 document texts) and zero-shot MiniLM,
                each cross-fitted (3 query folds)
  homedepot300  300 / 1,000 Home Depot queries (seeded, among queries with two or more judged products), and
  homedepot1000 all of them (``homedepot``), the same encoders
  long0..2      the long-query worlds of ``benchmarks/quality_long_queries.py`` (``datasets synth --long-queries``,
                seeds 0-2: 240 needs over 800 descriptions, 20 BM25 candidates each)
  mq2008        LETOR 4.0 MQ2008, 5 folds, no texts: BM25 (21-25), then TF-IDF (11-15), the language models
                (26-40), link and URL features (41-46), TF/IDF/length (1-10, 16-20)

``--encoders readme`` offers the encoders of the README's Home Depot command instead (clsm:softmax,
dssm:generalized, sbert, sbert-ft:generalized, clsm:generalized+teacher; results under ``DATA/readme``).
Checked per rule at the last step (everything offered; issue 55's done-criterion): the recommendation scores at
least the best single feature's test mean minus one paired standard error (the ``best-single`` row: chosen per fold
on training queries; the paired randomisation p beside it) and at least BM25 alone, per metric over the pooled test
queries. The last line is the default rule's verdict against the whole criterion: at least BM25 alone at every step
of every offer, within one SE of the best single feature with everything offered, and no step lowering the
recommendation by more than two paired SEs (its worst step quoted); every rule's verdict is in the results.
``--keep FILE`` saves the ablation's per-query table and inner cross-validation (JSON) and re-uses it when it
exists, so a changed rule is re-measured without re-running the ablation.

    python benchmarks/quality_candidate_growth.py [--data sample|homedepot300|homedepot1000|homedepot|mq2008|long0]
        [--encoders growth|readme|SPEC,SPEC...] [--seeds 0] [--cache DIR] [--rounds N] [--keep FILE]
"""

from __future__ import annotations

import argparse
import io
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks")]

from _common import RESULTS, write_results  # noqa: E402

METRICS = ("ndcg@1", "ndcg@10")
RULES = ("joint", "one-se", "best", "tiered")
ENCODERS = {
    "growth": ("dssm:generalized", "clsm:generalized", "clsm:generalized+spans", "sbert"),
    "readme": ("clsm:softmax", "dssm:generalized", "sbert", "sbert-ft:generalized", "clsm:generalized+teacher"),
}
DATA = ("sample", "homedepot300", "homedepot1000", "homedepot", "mq2008", "long0", "long1", "long2")
MQ2008_GROUPS = {"tfidf": "11-15", "lmir": "26-40", "links": "41-46", "tf-idf-dl": "1-10,16-20"}


def text_data(name: str, cache, encoders):
    """Cross-fitted folds and feature sets for the sample world or a Home Depot subset."""
    from ltrfeat.core.text import read_judged_pairs
    from ltrfeat.experiments.feature_sets import FeatureSet
    from ltrfeat.encoders.spec import EncoderSpec
    from ltrfeat.experiments.crossfit import text_folds
    from ltrfeat.features.extract import lexical_extractors

    if name == "sample":
        pairs = read_judged_pairs(ROOT / "data" / "judged.tsv")
    elif name.startswith("long"):
        from _common import run_ltrfeat

        with tempfile.TemporaryDirectory() as tmp:
            run_ltrfeat(
                *("datasets", "synth", "--out", tmp, "--seed", int(name[4:]), "--long-queries"),
                *("--queries", 240, "--docs", 800, "--click-queries", 0, "--candidates", "20-20"),
            )
            pairs = read_judged_pairs(Path(tmp) / "judged.tsv")
    elif name == "homedepot":
        from _common import home_depot_pairs

        pairs, _ = home_depot_pairs()
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
        specs=[EncoderSpec.parse(s) for s in encoders],
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
    from ltrfeat.experiments.feature_sets import FeatureSet
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
    """Per step (label, offered sets, offered candidates) and rule: the recommendation and its test scores, beside
    BM25 alone and the best single feature (over every ranker column, chosen per fold on training queries)."""
    from ltrfeat.rankers.choices import BEST_SINGLE
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
            row.setdefault("best_single", {})[metric] = float(
                np.nanmean(pooled(result.per_query, dict.fromkeys(folds, BEST_SINGLE), metric))
            )
        for rule in RULES:
            choice = {}
            for fold in folds:
                cv = {s: {c: result.inner_cv[fold][s][1][c] for c in kinds} for s in sets}
                used = {s: {c: result.used[fold][s][c] for c in kinds} for s in sets}
                rec = recommend(cv, rule, sets, used=used)
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
        single = "  ".join(f"{m} {v:.4f}" for m, v in row["best_single"].items())
        print(
            f"{row['step']} ({row['configurations']} configurations): best fixed in hindsight "
            f"{row['best_fixed'][METRICS[0]]['name']} {fixed}"
            + (f"; bm25 alone {bm25}" if bm25 else "")
            + f"; best single feature {single}"
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


def criterion(per_query, row: dict, bm25: str | None) -> dict:
    """Per rule and metric at ``row`` (the last step): the recommendation against the best single feature
    (at least its test mean minus one paired standard error; the two-sided paired randomisation p beside it) and
    BM25 alone (a mean at least as high)."""
    from ltrfeat.experiments.stats import randomization_test
    from ltrfeat.rankers.choices import BEST_SINGLE

    out = {}
    for rule, e in row["rules"].items():
        folds = list(e["chosen"])
        for m in METRICS:
            mine = pooled(per_query, e["chosen"], m)
            entry = {"recommended": float(np.nanmean(mine))}
            for label, name in (("best_single", BEST_SINGLE), ("bm25_alone", bm25)):
                if name is None:
                    continue
                other = pooled(per_query, dict.fromkeys(folds, name), m)
                both = np.isfinite(mine) & np.isfinite(other)
                d = mine[both] - other[both]
                entry[label] = {
                    "name": name,
                    "mean": float(other[both].mean()),
                    "delta": float(d.mean()),
                    "se": float(d.std(ddof=1) / np.sqrt(len(d))),
                    "p": randomization_test(other[both], mine[both]),
                }
            single, plain = entry["best_single"], entry.get("bm25_alone")
            entry["pass"] = bool(single["delta"] >= -single["se"] and (plain is None or plain["delta"] >= 0))
            out[f"{rule}|{m}"] = entry
    return out


def verdict(figures: dict, rule: str) -> dict:
    """``rule`` against the issue's done-criterion, per metric: at least BM25 alone at every step of both
    offers (the smallest lead), not significantly below the best single feature with everything offered
    (:func:`criterion`), and no step lowering the recommendation by more than two paired SEs (the worst step)."""
    steps = figures["by_feature_set"] + figures["by_ranker_kind"] + figures.get("minilm_first", [])
    out = {"rule": rule, "metrics": {}}
    for m in METRICS:
        entry = {"best_single": figures["criterion"][f"{rule}|{m}"]["best_single"]}
        if steps[0].get("bm25_alone"):
            leads = [(r["rules"][rule][m] - r["bm25_alone"][m], r["step"]) for r in steps]
            lead, step = min(leads)
            entry["bm25_lead"] = {"min": lead, "step": step}
        changes = [
            {"step": r["step"], "change": e[f"{m}_change"], "se": e[f"{m}_change_se"]}
            for r in steps
            if f"{m}_change" in (e := r["rules"][rule])
        ]
        entry["worst_step"] = min(changes, key=lambda c: c["change"], default=None)
        single = entry["best_single"]
        entry["pass"] = {
            "bm25": "bm25_lead" not in entry or entry["bm25_lead"]["min"] >= 0,
            "best_single": single["delta"] >= -single["se"],
            "noise": all(c["change"] >= -2 * c["se"] for c in changes),
        }
        out["metrics"][m] = entry
    out["pass"] = all(all(e["pass"].values()) for e in out["metrics"].values())
    return out


def verdict_line(name: str, v: dict) -> str:
    """One line quoting :func:`verdict` (NDCG@1, NDCG@10 side by side)."""
    ms = v["metrics"]
    bm25 = (
        ">= BM25 alone at every step (smallest lead "
        + ", ".join(f"{m} {e['bm25_lead']['min']:+.4f}" for m, e in ms.items())
        + ")"
        if all("bm25_lead" in e for e in ms.values())
        else "no BM25 alone"
    )
    if not all(e["pass"]["bm25"] for e in ms.values()):
        bm25 = bm25.replace(">=", "BELOW", 1)
    single = "vs best single, everything offered: " + ", ".join(
        f"{m} {e['best_single']['delta']:+.4f} ± {e['best_single']['se']:.4f} p {e['best_single']['p']:.2g}"
        for m, e in ms.items()
    )
    worst = "worst step: " + ", ".join(
        f"{m} {e['worst_step']['change']:+.4f} ± {e['worst_step']['se']:.4f} ({e['worst_step']['step']})"
        for m, e in ms.items()
        if e["worst_step"]
    )
    noise = "within 2 SE" if all(e["pass"]["noise"] for e in ms.values()) else "BEYOND 2 SE"
    return f"verdict {name} ({v['rule']}): {'PASS' if v['pass'] else 'FAIL'}; {bm25}; {single}; {worst} {noise}"


def measure(args, encoders) -> dict:
    """The selection ablation's per-query table, inner cross-validation, ranker sets, BM25 set and candidates
    (from ``--keep`` when it holds them)."""
    keep = Path(args.keep) if args.keep else None
    if keep is not None and keep.is_file():
        saved = json.loads(keep.read_text())
        saved["per_query"] = pd.read_json(io.StringIO(saved["per_query"]), orient="split")
        saved["used"] = saved.get("used") or sys.exit(f"{keep} predates the complexity rule: remove it to re-run")
        saved["inner_cv"] = {
            fold: {
                s: (np.asarray(q), {c: np.asarray(v, dtype=np.float64) for c, v in cv.items()})
                for s, (q, cv) in sets.items()
            }
            for fold, sets in saved["inner_cv"].items()
        }
        print(f"re-using the ablation in {keep}")
        return saved
    from ltrfeat.experiments.ablation import run_ablation
    from ltrfeat.rankers.selection import SelectionConfig

    started = time.perf_counter()
    folds, sets = mq2008_data() if args.data == "mq2008" else text_data(args.data, args.cache, encoders)
    features_s = time.perf_counter() - started
    print(
        f"{args.data}: {len(folds)} folds, {sum(f.test.n_queries for f in folds)} test queries; features {features_s:.0f} s",
        flush=True,
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
    out = {
        "per_query": result.per_query,
        "inner_cv": result.inner_cv,
        "rankers": [s.name for s in sets if s.kind == "ranker"],
        "bm25": next((s.name for s in sets if s.kind == "alone"), None),
        "kinds": list(selection.candidates),
        "used": {
            fold: {s: chosen["used"] for s, chosen in sets.items()}
            for fold, sets in result.config["selection"]["chosen"].items()
        },
        "seconds": {"features": round(features_s, 1), "ablation": round(time.perf_counter() - started, 1)},
    }
    if keep is not None:
        saved = out | {
            "per_query": out["per_query"].to_json(orient="split"),
            "inner_cv": {
                fold: {s: [q.tolist(), {c: v.tolist() for c, v in cv.items()}] for s, (q, cv) in sets.items()}
                for fold, sets in out["inner_cv"].items()
            },
        }
        keep.write_text(json.dumps(saved))
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", choices=DATA, default="sample")
    parser.add_argument("--encoders", default="growth", help="growth, readme or comma-separated specs (text data)")
    parser.add_argument("--seeds", default="0", help="ranker seeds, comma-separated")
    parser.add_argument("--cache", default=None, help="encoder cache directory (text data)")
    parser.add_argument("--rounds", type=int, default=None, help="LambdaMART rounds (default: the library's)")
    parser.add_argument("--keep", default=None, help="JSON file keeping the ablation (re-used when it exists)")
    args = parser.parse_args(argv)
    from ltrfeat.rankers import registry
    from ltrfeat.rankers.selection import SelectionConfig

    encoders = ENCODERS.get(args.encoders) or tuple(args.encoders.split(","))
    key = args.data if args.data == "mq2008" or args.encoders == "growth" else f"{args.data}/{args.encoders}"
    measured = measure(args, encoders)
    per_query, rankers, bm25, kinds = (measured[k] for k in ("per_query", "rankers", "bm25", "kinds"))
    result = argparse.Namespace(per_query=per_query, inner_cv=measured["inner_cv"], used=measured["used"])
    by_set = growth(result, [(f"+{s}" if i else s, rankers[: i + 1], kinds) for i, s in enumerate(rankers)], bm25)
    # MiniLM offered beside lexical first, then the others: the offer where a cheaper set's tie used to win
    minilm = [s for s in rankers if s == "lexical+sbert"]
    first = rankers[:1] + minilm + [s for s in rankers[1:] if s not in minilm]
    by_minilm = (
        growth(result, [(f"+{s}" if i else s, first[: i + 1], kinds) for i, s in enumerate(first)], bm25)
        if minilm
        else []
    )
    simplest = [k for k in registry.simplicity_order() if k in kinds]  # best-single first
    by_kind = growth(result, [(f"+{k}" if i else k, rankers, simplest[: i + 1]) for i, k in enumerate(simplest)], bm25)
    show("feature sets added one by one (every candidate)", by_set)
    show("ranker kinds added one by one (every feature set)", by_kind)
    if by_minilm:
        show("MiniLM beside lexical first, then the other sets one by one", by_minilm)
    figures = {
        "data": args.data,
        "encoders": None if args.data == "mq2008" else list(encoders),
        "seeds": args.seeds,
        "rounds": args.rounds,
        "seconds": measured["seconds"],
        "by_feature_set": by_set,
        "by_ranker_kind": by_kind,
        "minilm_first": by_minilm,
        "summary_by_feature_set": summary(by_set),
        "summary_by_ranker_kind": summary(by_kind),
        "criterion": criterion(per_query, by_set[-1], bm25),
    }
    print("\nsummary (feature sets added):")
    for key_, v in figures["summary_by_feature_set"].items():
        print(
            f"  {key_:<16} first {v['first']:.4f} last {v['last']:.4f} worst change {v['worst_change']:+.4f} "
            f"drops beyond 2 SE {v['drops_beyond_2se'] or 'none'}  selection cost {v['selection_cost_last']:+.4f}"
        )
    print("\ndone-criterion at the last step (not significantly below the best single feature, >= BM25 alone):")
    for key_, v in figures["criterion"].items():
        parts = [
            f"vs {label.replace('_', ' ')} {c['mean']:.4f} ({c['delta']:+.4f}, p {c['p']:.3g})"
            for label in ("best_single", "bm25_alone")
            if (c := v.get(label))
        ]
        print(f"  {key_:<16} {v['recommended']:.4f}  {'  '.join(parts)}  {'pass' if v['pass'] else 'FAIL'}")
    figures["verdict"] = {rule: verdict(figures, rule) for rule in RULES}
    print("\n" + verdict_line(key, figures["verdict"][SelectionConfig().rule]))
    path = RESULTS / "quality_candidate_growth.json"
    previous = json.loads(path.read_text())["figures"] if path.is_file() else {}
    write_results("quality_candidate_growth", previous | {key: figures})


if __name__ == "__main__":
    main()
