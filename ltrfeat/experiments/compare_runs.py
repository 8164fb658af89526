"""Several systems (TREC runs, or rankers scored on one test set) compared on the same queries: means, changes
against the first system with 95% bootstrap intervals, the paired randomisation test Holm-adjusted across every
comparison printed, and per-query wins/ties/losses -- what ranx's ``compare`` or PyTerrier's ``Experiment``
give, with this project's statistics (:func:`ltrfeat.experiments.summary.head_to_head`)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ltrfeat.experiments.in_words import lift_words
from ltrfeat.core.errors import LtrfeatError
from ltrfeat.experiments.summary import head_to_head
from ltrfeat.experiments.stats import bootstrap_cis
from ltrfeat.experiments.summary_types import Comparison

COMPARISON_FORMAT = "ltrfeat.compare-runs/1"


def compare_systems(
    per_query: dict[str, pd.DataFrame], metrics, *, seed: int = 0, n_resamples: int = 10_000, conventions=None
) -> dict:
    """Compare every system of ``per_query`` (name -> per-query metrics indexed by qid, e.g. from
    :func:`ltrfeat.core.trec.evaluate_run`) with the first one.

    Only the queries every system has are used (a query with a NaN metric, excluded by the no-relevant
    convention, is left out of that metric). Returns ``{"format", "baseline", "systems", "metrics",
    "n_queries", "means": {system: {metric: {"mean", "ci95"}}}, "comparisons": [...], "statistics",
    "conventions", "summary"}``; comparisons carry the fields of an ablation report's.
    """
    names = list(per_query)
    if len(names) < 2:
        raise LtrfeatError("compare-runs needs at least two systems", fix="give a baseline and one or more variants")
    metrics = list(metrics)
    common = None
    for name, frame in per_query.items():
        missing = [m for m in metrics if m not in frame.columns]
        if missing:
            raise LtrfeatError(
                f"system {name!r} has no {missing[0]} values", fix="evaluate every system on the metrics"
            )
        index = pd.Index(frame.index.astype(str))
        common = index if common is None else common.intersection(index, sort=False)
    if common is None or not len(common):
        raise LtrfeatError("the systems share no query", fix="compare systems of one test set")
    rows = []
    for name, frame in per_query.items():
        part = frame.set_axis(frame.index.astype(str)).loc[common, metrics].astype(np.float64).reset_index(names="qid")
        rows.append(part.assign(feature_set=name, fold="all", n_docs=0, n_relevant=0))
    table = pd.concat(rows, ignore_index=True)
    baseline = names[0]
    comparisons = head_to_head(table, [(baseline, n) for n in names[1:]], metrics, seed=seed, n_resamples=n_resamples)
    means: dict[str, dict[str, dict]] = {}
    for name in names:
        values = table[table["feature_set"] == name]
        means[name] = {}
        for m in metrics:
            v = values[m].dropna().to_numpy()
            lo, hi = bootstrap_cis(v[:, None], seed=seed, n_resamples=n_resamples)[0] if len(v) else (np.nan, np.nan)
            means[name][m] = {"mean": float(v.mean()) if len(v) else float("nan"), "ci95": [float(lo), float(hi)]}
    data = {
        "format": COMPARISON_FORMAT,
        "baseline": baseline,
        "systems": names,
        "metrics": metrics,
        "n_queries": int(len(common)),
        "means": means,
        "comparisons": [c.to_dict() for c in comparisons],
        "statistics": {
            "marks_test": f"paired randomisation (sign-flip) test, two-sided, Holm-adjusted over the "
            f"{len(comparisons)} comparisons printed",
            "marks": {"*": 0.05, "**": 0.01},
            "bootstrap": {"method": "percentile", "level": 0.95, "n_resamples": n_resamples, "seed": seed},
            "randomization": {"n_resamples": n_resamples, "seed": seed, "exact_up_to_queries": 16},
        },
        "conventions": conventions,
    }
    data["summary"] = " ".join(
        f"`{n}` against `{baseline}` {lift_words([c for c in comparisons if c.variant == n])}." for n in names[1:]
    ) + (
        f" Every p is a paired randomisation test over {len(common)} queries, Holm-adjusted over the "
        f"{len(comparisons)} comparisons printed."
    )
    return data


def markdown(data: dict) -> str:
    """The comparison as Markdown: the means table, the comparisons table and the statistics used."""
    from ltrfeat.experiments._plots import mark
    from ltrfeat.experiments.report import format_p

    metrics = data["metrics"]
    lines = [data["summary"], "", "| system | " + " | ".join(metrics) + " |", "|---" * (len(metrics) + 1) + "|"]
    for name in data["systems"]:
        lines.append(f"| `{name}` | " + " | ".join(f"{data['means'][name][m]['mean']:.4f}" for m in metrics) + " |")
    lines += [
        "",
        "| variant | metric | baseline | variant | delta [95% CI] | relative | p (randomisation) | p (Holm) | W/T/L |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for c in map(Comparison.from_dict, data["comparisons"]):
        lo, hi = c.ci95_delta
        rel = "n/a" if c.relative is None or not np.isfinite(c.relative) else f"{100 * c.relative:+.1f}%"
        lines.append(
            f"| `{c.variant}` | {c.metric} | {c.base_mean:.4f} | {c.variant_mean:.4f} | "
            f"{c.delta:+.4f} [{lo:+.4f}, {hi:+.4f}] | {rel} | {format_p(c.p_randomization)} | "
            f"{format_p(c.p_holm)}{mark(c.p_holm)} | {c.wins}/{c.ties}/{c.losses} |"
        )
    b = data["statistics"]["bootstrap"]
    lines += [
        "",
        f"Baseline `{data['baseline']}`; {data['n_queries']} queries every system has; "
        f"{data['statistics']['marks_test']}: * p < 0.05, ** p < 0.01; {b['method']} bootstrap intervals "
        f"({b['n_resamples']} resamples, seed {b['seed']}).",
    ]
    if data.get("conventions"):
        lines.append(f"Conventions: {data['conventions']}.")
    return "\n".join(lines) + "\n"
