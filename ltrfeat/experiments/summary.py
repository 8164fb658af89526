"""An ablation's statistics: means with bootstrap intervals per set and metric, and paired comparisons (Holm-adjusted
across the report) of the base set against each other ranker set, of the zero-shot MiniLM feature against the other
neural features, and with model selection of the recommendation against the baselines it must beat.

Queries are pooled over all folds (identified by fold and qid); NaN (excluded) queries are left out.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd

from ltrfeat.core.errors import LtrfeatError
from ltrfeat.experiments.ablation_result import AblationResult
from ltrfeat.experiments.feature_sets import FeatureSet
from ltrfeat.experiments.per_query import ID_COLUMNS
from ltrfeat.experiments.set_kind import SetKind
from ltrfeat.experiments.stats import bootstrap_cis, compare_many, holm
from ltrfeat.experiments.summary_types import Comparison, SetResult, Summary
from ltrfeat.experiments.verdict import verdict
from ltrfeat.rankers.choices import BEST_SINGLE, RECOMMENDED


def _comparisons(per_query: pd.DataFrame, groups, *, seed: int, n_resamples: int) -> list[Comparison]:
    """Paired statistics of each ``(baseline, variant)`` pair on each metric of its group (``groups``:
    ``(pairs, metrics)`` tuples) over the queries both have (pooled over folds by (fold, qid), NaN left
    out), Holm-adjusted across all of them."""
    comparisons: list[Comparison] = []
    tasks = [(metric, pair) for pairs, metrics in groups for metric in metrics for pair in pairs]
    for metric in dict.fromkeys(m for m, _ in tasks):
        wide = per_query.pivot(index=["fold", "qid"], columns="feature_set", values=metric)
        known = wide.notna().to_numpy()
        position = {name: i for i, name in enumerate(wide.columns)}
        # comparisons over the same queries share their resamples (compare_many): grouped by that query set
        batches: dict[bytes, tuple[np.ndarray, list[tuple[str, str]]]] = {}
        for baseline, variant in (pair for m, pair in tasks if m == metric):
            both = known[:, position[baseline]] & known[:, position[variant]]
            if both.any():
                batches.setdefault(both.tobytes(), (both, []))[1].append((baseline, variant))
        for both, pairs in batches.values():
            a = wide.loc[both, [b for b, _ in pairs]].to_numpy()
            b = wide.loc[both, [v for _, v in pairs]].to_numpy()
            for (baseline, variant), stats, base_values, variant_values in zip(
                pairs, compare_many(a, b, seed=seed, n_resamples=n_resamples), a.T, b.T
            ):
                comparisons.append(
                    Comparison(
                        baseline,
                        variant,
                        metric,
                        base_mean=float(base_values.mean()),
                        variant_mean=float(variant_values.mean()),
                        delta=stats["delta"],
                        ci95_delta=stats["ci95_delta"],
                        relative=stats["relative"],
                        p_ttest=stats["p_ttest"],
                        p_randomization=stats["p_randomization"],
                        wins=stats["wins"],
                        ties=stats["ties"],
                        losses=stats["losses"],
                        n_queries=stats["n_queries"],
                    )
                )
    adjusted = holm([c.p_randomization for c in comparisons])
    return [dataclasses.replace(c, p_holm=float(p)) for c, p in zip(comparisons, adjusted)]


def head_to_head(
    per_query: pd.DataFrame, pairs, metrics, *, seed: int = 0, n_resamples: int = 10_000
) -> list[Comparison]:
    """Paired comparisons of chosen feature sets, e.g. ``[("lexical+sbert", "lexical+sbert-ft")]``, from an
    ablation's per-query table (``per_query.tsv``): the same statistics as :func:`summarise`, Holm-adjusted
    across the given pairs and metrics only."""
    available = sorted(set(per_query["feature_set"]))
    for name in {n for pair in pairs for n in pair}:
        if name not in available:
            raise LtrfeatError(
                f"feature set {name!r} is not in this ablation", fix=f"use one of {', '.join(available)}"
            )
    for metric in metrics:
        if metric not in per_query.columns:
            raise LtrfeatError(
                f"metric {metric!r} was not computed in this ablation",
                fix=f"use one of {', '.join(c for c in per_query.columns if c not in ID_COLUMNS)}",
            )
    return _comparisons(per_query, [(pairs, metrics)], seed=seed, n_resamples=n_resamples)


def _rows_by_set(per_query: pd.DataFrame, names: list[str]) -> list[pd.DataFrame]:
    groups = dict(tuple(per_query.groupby("feature_set", sort=False)))
    return [groups.get(name, per_query.iloc[:0]) for name in names]


MINILM = "sbert"  # the zero-shot MiniLM encoder's group name, the reference every other neural feature meets


def minilm_pairs(feature_sets, baseline: str | None) -> list[tuple[str, str]]:
    """``(MiniLM set, other set)`` pairs: the zero-shot MiniLM feature against every other neural feature,
    alone and added to the base set, when the ablation has it (``sbert``); else none."""
    sets = {s.name: s for s in feature_sets}
    if baseline is None or baseline not in sets:
        return []
    base = set(sets[baseline].columns)
    single = {  # base + one neural column -> that column
        s.name: extra[0]
        for s in feature_sets
        if s.kind == SetKind.RANKER and len(extra := [c for c in s.columns if c not in base]) == 1
    }
    neural = set(single.values())
    reference = [c for c in neural if c.startswith(f"{MINILM}_")]
    if len(reference) != 1:
        return []
    ref_ranker = next(name for name, c in single.items() if c == reference[0])
    alone = {s.columns[0]: s.name for s in feature_sets if s.kind == SetKind.ALONE and s.columns[0] in neural}
    pairs = [(ref_ranker, name) for name, c in single.items() if c != reference[0]]
    if reference[0] in alone:
        pairs += [(alone[reference[0]], alone[c]) for c in single.values() if c != reference[0] and c in alone]
    return pairs


def summarise(
    result: AblationResult, *, baseline: str | None = None, seed: int = 0, n_resamples: int = 10_000
) -> Summary:
    """Means with bootstrap intervals per set and metric, and paired comparisons.

    Parameters
    ----------
    result : an :class:`AblationResult`.
    baseline : the ranker set every other ranker set is compared against; default the first
        (no comparisons when there is no ranker set).
    seed : seed of the bootstrap and randomisation resampling.
    n_resamples : bootstrap and randomisation resamples.

    Returns
    -------
    A :class:`~ltrfeat.experiments.summary_types.Summary`: a :class:`~ltrfeat.experiments.summary_types.SetResult`
    per set and metric, the :class:`~ltrfeat.experiments.summary_types.Comparison` s and the verdict. Queries are
    pooled over all folds (identified by fold and qid); NaN (excluded) queries are left out; ``p_holm`` adjusts
    ``p_randomization`` across all comparisons.
    """
    rankers = [s.name for s in result.feature_sets if s.kind == SetKind.RANKER]
    if baseline is None:
        baseline = rankers[0] if rankers else None
    elif baseline not in rankers:
        raise LtrfeatError(
            f"baseline {baseline!r} is not a ranker set of this ablation", fix=f"use one of {', '.join(rankers)}"
        )
    groups = _comparison_groups(result, rankers, baseline)
    statistics = {
        "pooling": "test queries of all folds pooled, identified by (fold, qid); per-query values averaged over seeds",
        "marks_test": "paired randomisation (sign-flip) test, two-sided, Holm-adjusted across all comparisons",
        "marks": {"*": 0.05, "**": 0.01},
        "also_reported": "paired t-test p-values (unadjusted), per-query wins/ties/losses",
        "bootstrap": {"method": "percentile", "level": 0.95, "n_resamples": n_resamples, "seed": seed},
        "randomization": {"n_resamples": n_resamples, "seed": seed, "exact_up_to_queries": 16},
    }
    summary = Summary(
        baseline,
        statistics,
        _set_results(result, seed=seed, n_resamples=n_resamples),
        _comparisons(result.per_query, groups, seed=seed, n_resamples=n_resamples),
    )
    return dataclasses.replace(summary, verdict=verdict(result, summary))


def _set_results(result: AblationResult, *, seed: int, n_resamples: int) -> list[SetResult]:
    """Each set's mean and bootstrap interval per metric, in set then metric order."""
    rows: list[tuple[FeatureSet, str, np.ndarray]] = []
    drawn: dict[int, list[tuple[int, np.ndarray]]] = {}  # intervals of equally many queries share their draws
    for fs, table in zip(result.feature_sets, _rows_by_set(result.per_query, [s.name for s in result.feature_sets])):
        for metric in result.metrics:
            values = table[metric].to_numpy(dtype=np.float64)
            values = values[np.isfinite(values)]
            # candidates' intervals would cost a bootstrap each and are not shown: means only
            if len(values) and fs.kind != SetKind.CANDIDATE:
                drawn.setdefault(len(values), []).append((len(rows), values))
            rows.append((fs, metric, values))
    intervals = {}
    for same_size in drawn.values():
        columns = np.stack([values for _, values in same_size], axis=1)
        for (i, _), (lo, hi) in zip(same_size, bootstrap_cis(columns, seed=seed, n_resamples=n_resamples)):
            intervals[i] = (float(lo), float(hi))
    return [
        SetResult(
            fs.name,
            fs.kind,
            metric,
            mean=float(values.mean()) if len(values) else float("nan"),
            ci95=intervals.get(i, (float("nan"), float("nan"))),
            n_queries=int(len(values)),
        )
        for i, (fs, metric, values) in enumerate(rows)
    ]


def _comparison_groups(result: AblationResult, rankers: list[str], baseline: str | None) -> list[tuple[list, list]]:
    """``(pairs, metrics)``: the baseline against every other ranker set on every metric; on the headline metrics
    the zero-shot MiniLM feature against the other neural features, and with model selection the baselines the
    recommendation must beat (the best single feature, the untuned engine, BM25 alone)."""
    groups = [
        ([(baseline, variant) for variant in rankers if baseline is not None and variant != baseline], result.metrics)
    ]
    headline = result.metrics[:3]
    if "selection" in result.config:
        headline = [m for m in result.config["selection"]["criterion"] if m in result.metrics] or headline
    against_minilm = minilm_pairs(result.feature_sets, baseline)
    if against_minilm:
        groups.append((against_minilm, headline))
    if "selection" in result.config and rankers:
        untuned = f"{baseline}/{result.config['engine']}"
        bm25 = [s.name for s in result.feature_sets if s.kind == SetKind.ALONE and s.name.startswith("bm25")]
        groups.append(
            (
                [(BEST_SINGLE, name) for name in rankers]
                + [(BEST_SINGLE, RECOMMENDED)]
                + ([(untuned, RECOMMENDED)] if untuned in set(result.per_query["feature_set"]) else [])
                + [(name, RECOMMENDED) for name in bm25],
                headline,
            )
        )
    return groups
