"""An ablation's verdict in plain words, and how much its numbers depend on the tie-break.

:func:`verdict_words` gives the verdict in two sentences (what helps, what to ship), :func:`reconcile_words`
why the pick can differ from a lift, :func:`results_words` and :func:`selection_words` the details the page shows
beside its results and its model selection, :func:`report_warnings` the warning box. :func:`summary_in_words`
joins them; it reads a ``report.json`` object (fresh or from disk), so ``ltrfeat report DIR`` words an
old report the same way the ablation did. :func:`tie_analysis` needs the scores and labels of the test folds:
it measures, for the baseline and the recommended set, how many queries have tied scores that change a
headline metric, and the metric's mean over every order of the ties (the default convention), in input order, in
trec_eval's docid order and in the worst and best order of the ties.
"""

from __future__ import annotations

import math

import numpy as np

from ltrfeat.core.metrics import Conventions, evaluate_queries
from ltrfeat.rankers.choices import RECOMMENDED
from ltrfeat.experiments.click_training import uncorrected_warnings
from ltrfeat.experiments.summary_types import Comparison
from ltrfeat.experiments.set_kind import SetKind

HEADLINE = ("ndcg@1", "ndcg@3", "ndcg@10")
TIE_SHARE = 0.05  # ties that change a headline metric for more than this share of queries are warned about
# the tie-breaks the analysis measures, by the ``ties`` convention that gives each
TIE_ORDERS = {
    "expected": "expected",
    "input_order": "input",
    "trec_eval": "docid",
    "worst": "pessimistic",
    "best": "optimistic",
}
_TIE_ORDER_WORDS = {
    "expected": "is the mean over every order of its ties (what a shuffled copy of the data would give too)",
    "input_order": "breaks its ties by input order",
    "trec_eval": "breaks its ties by docid, as trec_eval does",
    "worst": "puts the lower labels first in its ties",
    "best": "puts the higher labels first in its ties",
}
INTERVALS_UNADJUSTED = (
    "The 95% intervals are not adjusted: each is a bootstrap interval of one comparison on its own, while the marks "
    "are Holm-adjusted over the whole report, so an interval can exclude 0 without a mark."
)


def headline(metrics) -> list[str]:
    """NDCG@1/3/10 when measured, else the first three metrics."""
    return [m for m in HEADLINE if m in metrics] or list(metrics)[:3]


def p_words(p) -> str:
    """``p < .001``, ``p < .01``, ``p = .03`` or ``p = 1`` (Holm-adjusted p in prose)."""
    if p is None or not math.isfinite(p):
        return "p n/a"
    if p < 0.001:
        return "p < .001"
    if p < 0.01:
        return "p < .01"
    return "p = 1" if p >= 0.995 else "p = " + f"{p:.2f}".lstrip("0")


def _pct(rel) -> str:
    return "n/a" if rel is None or not math.isfinite(rel) else f"{100 * rel:+.1f}%"


def _metric_name(m: str) -> str:
    family, _, k = m.partition("@")
    pretty = {"ndcg": "NDCG", "recall": "recall", "map": "MAP", "mrr": "MRR", "p": "P", "err": "ERR"}
    return pretty.get(family, family) + (f"@{k}" if k else "")


def _and(items: list[str], word: str = "and") -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + f" {word} " + items[-1]


def lift_words(comps: list[Comparison]) -> str:
    """'lifts NDCG@10 by 3.0% (.8012 -> .8252, Holm p < .01) and changes nothing significant at NDCG@1 (...)'."""
    up = [c for c in comps if c.better()]
    down = [c for c in comps if c.worse()]
    flat = [c for c in comps if c not in up and c not in down]
    parts = []
    if up:
        parts.append(
            "lifts "
            + _and(
                [
                    f"{_metric_name(c.metric)} by {_pct(c.relative).lstrip('+')} ({c.base_mean:.4f} → "
                    f"{c.variant_mean:.4f}, Holm {p_words(c.p_holm)})"
                    for c in up
                ]
            )
        )
    if down:
        parts.append(
            "lowers "
            + _and(
                [f"{_metric_name(c.metric)} by {_pct(c.relative).lstrip('-')} (Holm {p_words(c.p_holm)})" for c in down]
            )
        )
    if flat:
        parts.append(
            "changes nothing significant at "
            + _and(
                [f"{_metric_name(c.metric)} ({_pct(c.relative)}, Holm {p_words(c.p_holm)})" for c in flat],
                "or",
            )
        )
    return _and(parts) if len(parts) < 3 else "; ".join(parts[:-1]) + " and " + parts[-1]


def _sets(data: dict) -> dict:
    return {s["name"]: s for s in data["config"].get("feature_sets", [])}


def _lifts(comps: list[Comparison], name: str) -> bool:
    return any(c.variant == name and c.better() for c in comps)


def _headline_comparisons(data: dict) -> tuple[str, list[str], list[Comparison], list[str]]:
    """The baseline, the headline metrics, their comparisons against the baseline and the base+neural sets."""
    baseline = data["config"].get("baseline")
    metrics = headline(data["config"]["metrics"])
    comps = [
        c for c in map(Comparison.from_dict, data["comparisons"]) if c.baseline == baseline and c.metric in metrics
    ]
    variants = list(dict.fromkeys(c.variant for c in comps if c.variant != RECOMMENDED))
    return baseline, metrics, comps, variants


def _strongest(comps: list[Comparison], variants: list[str]) -> str:
    """The base+neural set with the most significant lifts, then the highest mean relative change."""

    def strength(name):
        mine = [c for c in comps if c.variant == name]
        wins = sum(c.better() for c in mine)
        return wins, float(np.nanmean([c.relative if c.relative is not None else np.nan for c in mine]))

    return max(variants, key=strength)


def verdict_words(data: dict) -> list[str]:
    """The verdict in two sentences: what helps (the strongest base+neural set at the headline metrics, or that
    no neural feature lifts one) and what to ship, with the number of warnings (:func:`report_warnings`)."""
    baseline, metrics, comps, variants = _headline_comparisons(data)
    sets = _sets(data)
    if not variants:
        first = "This report has no base+neural set to compare with the base set, so it draws no verdict."
    else:
        best = _strongest(comps, variants)
        base_cols = set(sets.get(baseline, {}).get("columns", []))
        added = [c for c in sets.get(best, {}).get("columns", []) if c not in base_cols]
        named = ", ".join(added) if len(added) <= 2 else f"all {len(added)} neural features"
        what = f"adding {named} to the `{baseline}` features" if added else f"`{best}` against `{baseline}`"
        mine = sorted((c for c in comps if c.variant == best), key=lambda c: metrics.index(c.metric))
        if _lifts(comps, best):
            first = f"{what[0].upper()}{what[1:]} (set `{best}`) {lift_words(mine)}."
        else:
            first = (
                f"No neural feature lifts {_and([_metric_name(m) for m in metrics], 'or')} significantly; the "
                f"strongest set, {what} (set `{best}`), {lift_words(mine)}."
            )
    verdict = data.get("verdict")
    if not verdict:
        return [first, "This run names nothing to ship: it ran without model selection (`ablate --no-select`)."]
    text = (
        f"To ship: `{verdict['recommended']}` (chosen on training queries by inner cross-validation in "
        f"{verdict['chosen_in_folds']} of {verdict['n_folds']} folds"
        + ("; the folds disagree, see Model selection)" if verdict["chosen_in_folds"] < verdict["n_folds"] else ")")
    )
    rows = [r for r in verdict["metrics"] if r.get("untuned") is not None]
    if rows:
        row = rows[-1]
        text += (
            f"; at {_metric_name(row['metric'])} it scores {row['recommended']:.4f} against {row['untuned']:.4f} "
            f"for the untuned `{verdict['untuned']}` (Holm {p_words(row['p_holm_vs_untuned'])})"
        )
    n_warn = len(report_warnings(data))
    text += f"; {n_warn} warning{'s' if n_warn != 1 else ''} below." if n_warn else "."
    return [first, text]


def reconcile_words(data: dict) -> str | None:
    """Why the set to ship is not the set that lifts a metric (or holds neural features none of which lifts one),
    when that is so: the lift is a test-query comparison, the pick an inner cross-validation on training queries."""
    verdict = data.get("verdict")
    baseline, _, comps, variants = _headline_comparisons(data)
    if not verdict or not variants:
        return None
    picked = verdict["recommended"].split(" / ")[0]
    lifting = [v for v in variants if _lifts(comps, v)]
    how = (
        "the pick is made in each fold on its training queries only, by inner cross-validation that takes the "
        "simplest configuration it cannot tell from the best"
    )
    if lifting and picked not in lifting:
        best = _strongest(comps, lifting)
        return (
            f"Why ship `{verdict['recommended']}` when `{best}` lifts a metric: the lift compares `{best}` with "
            f"`{baseline}` on the test queries of all folds pooled, while {how}; a lead that shows only over all the "
            "test queries can stay within that margin on a fold's training queries, so the simpler configuration is "
            "shipped (Model selection has each fold's figures)."
        )
    if not lifting and picked != baseline:
        return (
            f"Why ship `{verdict['recommended']}` when no neural feature lifts a metric significantly: {how}, and "
            f"it need not beat `{baseline}` significantly on the test queries to be that configuration."
        )
    return None


def results_words(data: dict) -> list[str]:
    """How many base+neural sets lift a headline metric, and the Holm family with what the intervals are."""
    _, metrics, comps, variants = _headline_comparisons(data)
    sentences = []
    if len(variants) > 1:
        lifting = [v for v in variants if _lifts(comps, v)]
        worse = [v for v in variants if any(c.worse() for c in comps if c.variant == v)]
        text = (
            f"{len(lifting)} of the {len(variants)} base+neural sets lift at least one of "
            f"{', '.join(map(_metric_name, metrics))} significantly"
        )
        text += (
            f"; {', '.join(f'`{v}`' for v in worse)} {'is' if len(worse) == 1 else 'are'} significantly worse somewhere."
            if worse
            else "; none is significantly worse."
        )
        sentences.append(text)
    n = len(data["comparisons"])
    if n:
        sentences.append(
            f"Every p is a paired randomisation test, Holm-adjusted over the {n} comparisons in this report "
            "(a mark can change when the report compares more or fewer sets)."
        )
        sentences.append(INTERVALS_UNADJUSTED)
    return sentences


def selection_words(data: dict) -> list[str]:
    """How the pick was made and what it cost: the lighter set to serve, the rule and the selection cost."""
    verdict = data.get("verdict")
    if not verdict:
        return []
    sentences = []
    rows = [r for r in verdict["metrics"] if r.get("untuned") is not None]
    lighter = verdict.get("lighter")
    if lighter and rows and lighter["means"].get(rows[-1]["metric"]) is not None:
        row = rows[-1]
        sentences.append(
            f"Lighter to serve: `{lighter['feature_set']}` needs no transformer encoder, and inner "
            f"cross-validation could not tell it from the fold's pick in {lighter['kept_in_folds']} of "
            f"{lighter['n_folds']} folds; at {_metric_name(row['metric'])} it scores "
            f"{lighter['means'][row['metric']]:.4f} against {row['recommended']:.4f}."
        )
    costed = [r for r in verdict["metrics"] if r.get("best_fixed")]
    if costed:
        row = costed[0]
        sentences.append(
            f"Rule {verdict['rule']}: the simplest configuration inner cross-validation cannot tell from the best"
            + (
                ", with a margin that grows with the number of close configurations"
                if verdict["rule"] in ("joint", "tiered")
                else ""
            )
            + f"; at {_metric_name(row['metric'])} this procedure scores {row['recommended']:.4f} on the test "
            f"queries, the best fixed configuration in hindsight (`{row['best_fixed']['name']}`) "
            f"{row['best_fixed']['mean']:.4f}: selection cost {row['selection_cost']:+.4f}."
        )
    return sentences


def report_warnings(data: dict) -> list[str]:
    """Every warning of a report, as its warning box shows and the verdict counts them: the verdict's, the tie
    warnings (:func:`tie_warnings`) and those on encoders trained on uncorrected clicks
    (:func:`~ltrfeat.experiments.click_training.uncorrected_warnings`)."""
    warnings = list((data.get("verdict") or {}).get("warnings") or [])
    warnings += [w for w in tie_warnings(data.get("ties")) if w not in warnings]
    return warnings + uncorrected_warnings((data.get("config") or {}).get("click_training") or {})


def summary_in_words(data: dict) -> str:
    """The report in words, as ``ablate`` prints it last and ``ltrfeat report DIR`` words it again: the verdict
    (:func:`verdict_words`), why the pick differs from a lift (:func:`reconcile_words`), how many sets lift
    anything and the Holm family (:func:`results_words`), how the pick was made (:func:`selection_words`), the
    encoders that kept their start, and the tie warnings the verdict's warnings do not hold. ``data`` is a
    ``report.json`` object."""
    sentences = verdict_words(data)
    sentences += [s for s in [reconcile_words(data)] if s]
    sentences += results_words(data) + selection_words(data)
    sentences += kept_start_words(data["config"].get("cross_fitting"))
    verdict = data.get("verdict") or {}
    if not verdict.get("tie_warnings"):  # else the warning box holds them
        sentences += [w for w in tie_warnings(data.get("ties")) if w not in (verdict.get("warnings") or [])]
    return " ".join(sentences)


def _fold_list(names: list[str]) -> str:
    """'folds 1, 3 and 4' for the names fold1, fold3, fold4 (other names as they are)."""
    numbers = [n[4:] for n in names if n.startswith("fold") and n[4:].isdigit()]
    if len(numbers) == len(names):
        return ("fold " if len(names) == 1 else "folds ") + _and(numbers)
    return _and(names)


def kept_start_words(cross_fitting: dict | None, *, per_fold: bool = False) -> list[str]:
    """One sentence per encoder that starts from a model worth keeping (the cross-fitting's ``keep_start``):
    in how many folds, and which, its fine-tuning kept the start because no trained epoch beat it by more than
    the margin on the fold's validation queries; ``per_fold`` adds the figures (:func:`kept_start_folds`)."""
    out = []
    for name, entry in ((cross_fitting or {}).get("keep_start") or {}).items():
        decided = [fold for fold, record in entry["folds"].items() if record.get("start_kept") is not None]
        if not decided:
            continue
        kept = [fold for fold in decided if entry["folds"][fold]["start_kept"]]
        which = f" ({_fold_list(kept)})" if kept and len(kept) < len(decided) else ""
        margin = entry["margin"]
        out.append(
            f"`{name}` kept its start ({entry['start']}) in {len(kept)} of {len(decided)} folds{which}: a trained "
            f"checkpoint replaces it only when it beats it on the fold's validation queries by more than {margin:g} "
            f"paired standard error{'s' if margin != 1 else ''} of NDCG@10, and training stops after a few "
            "checkpoints that do not." + (f" Per fold: {kept_start_folds(entry)}." if per_fold else "")
        )
    return out


def kept_start_folds(entry: dict) -> str:
    """Per fold, the keep-start decision in figures: 'fold1 kept it (start .8120, epoch 0.25 .8200, gain +.0080 ±
    .0120 SE over 17 queries; stopped at checkpoint 2 of 8, 24 of 96 steps); ...' (``entry``: one encoder of the
    cross-fitting's ``keep_start``; where training stopped only for records that count checkpoints)."""

    def num(x) -> str:
        return "n/a" if x is None or not math.isfinite(x) else f"{x:.4f}".replace("0.", ".", 1)

    def signed(x) -> str:
        return "n/a" if x is None or not math.isfinite(x) else f"{x:+.4f}".replace("0.", ".", 1)

    def figures(r: dict) -> str:
        text = f"start {num(r['start_ndcg@10'])}"
        if r.get("best_epoch") is not None:
            text += (
                f", epoch {r['best_epoch']} {num(r['best_ndcg@10'])}, gain {signed(r['mean_diff'])} ± {num(r['se'])} "
                f"SE over {r['queries']} queries"
            )
        if r.get("planned_checkpoints"):
            done, planned = r["checkpoints"], r["planned_checkpoints"]
            text += (
                f"; stopped at checkpoint {done} of {planned}, {r['steps']} of {r['planned_steps']} steps"
                if done < planned
                else f"; all {planned} checkpoints, {r['steps']} steps"
            )
        return text

    def verb(kept) -> str:
        return "kept" if kept else "replaced"

    parts = []
    for fold, r in entry["folds"].items():
        inner = r.get("continued")
        if r.get("start_kept") is None:
            parts.append(f"{fold} no validation queries")
        elif inner:
            parts.append(
                f"{fold} {verb(r['start_kept'])} it: the inner encoder {verb(inner['kept'])} it ({figures(inner)}), "
                f"the training continuing it {verb(r['kept'])} the inner encoder ({figures(r)})"
            )
        else:
            parts.append(f"{fold} {verb(r['kept'])} it ({figures(r)})")
    return "; ".join(parts)


def tie_warnings(ties: dict | None) -> list[str]:
    """One sentence per set whose tied scores change a headline metric for more than the threshold share of the
    queries: the report's figure, what input order and trec_eval's docid order would give, and the bounds."""
    if not ties:
        return []
    out = []
    reported = ties.get("reported", "input_order")  # reports written before ties="expected" was the default
    for name, per_metric in ties["sets"].items():
        worst = max(per_metric.items(), key=lambda kv: kv[1]["share"], default=None)
        if worst is None or worst[1]["share"] <= ties["threshold"]:
            continue
        metric, t = worst
        m, metric_name = t["mean"], _metric_name(metric)
        here = m[reported]
        others = [
            f"{words} {m[key]:.4f} ({m[key] - here:+.4f})"
            for key, words in (("input_order", "input order"), ("trec_eval", "trec_eval's docid order"))
            if key != reported
        ]
        out.append(
            f"Ties: `{name}` has tied scores that change {metric_name} for {t['tied_queries']} of {t['queries']} "
            f"queries ({100 * t['share']:.0f}%). This report's {metric_name}, {here:.4f}, "
            f"{_TIE_ORDER_WORDS[reported]}; breaking them by {' or by '.join(others)} would change it, and "
            f"the order of the ties alone moves it anywhere in {m['worst']:.4f}–{m['best']:.4f}."
        )
    return out


def tie_analysis(result, folds, *, sets=None, metrics=None, threshold: float = TIE_SHARE) -> dict:
    """How tied scores move the headline metrics of ``sets`` (default: the baseline, i.e. the first ranker set,
    and ``recommended`` when there is one), from the first seed's test scores of every fold.

    Returns ``{"threshold", "scores", "reported", "sets": {set: {metric: {"tied_queries", "queries", "share",
    "mean": {"expected", "input_order", "trec_eval", "worst", "best"}}}}}``: ``reported`` names the mean the
    report's conventions give, ``tied_queries`` counts the queries whose metric differs between the worst and
    the best order of their ties.
    """
    from ltrfeat.experiments._fold_runs import _ids

    conv = Conventions.from_dict(result.config["conventions"])
    metrics = list(metrics or headline(result.metrics))
    if sets is None:
        rankers = [s.name for s in result.feature_sets if s.kind == SetKind.RANKER]
        sets = rankers[:1] + ([RECOMMENDED] if RECOMMENDED in result.test_scores else [])
    qids, docids, _ = _ids(folds)
    qid = np.concatenate([qids[f.name] for f in folds])
    docid = np.concatenate([docids[f.name] for f in folds])
    label = np.concatenate([np.asarray(f.test.label, dtype=np.float64) for f in folds])
    reported = {v: k for k, v in TIE_ORDERS.items()}.get(conv.ties)
    out: dict = {"threshold": threshold, "scores": "first seed of every fold", "reported": reported, "sets": {}}
    for name in sets:
        if name not in result.test_scores:
            continue
        score = np.concatenate([result.test_scores[name][f.name]["scores"][0] for f in folds])
        frames = {
            key: evaluate_queries(
                qid, label, score, metrics, gain=conv.gain, no_relevant=conv.no_relevant, ties=ties, docid=docid
            )
            for key, ties in TIE_ORDERS.items()
        }
        per_metric = {}
        for m in metrics:
            lo, hi = frames["worst"][m], frames["best"][m]
            known = lo.notna()
            tied = int(((hi - lo).abs() > 1e-12)[known].sum())
            per_metric[m] = {
                "tied_queries": tied,
                "queries": int(known.sum()),
                "share": tied / max(int(known.sum()), 1),
                "mean": {k: float(frame[m].mean()) for k, frame in frames.items()},
            }
        out["sets"][name] = per_metric
    return out
