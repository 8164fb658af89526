"""The report's figures, drawn from a ``report.json`` object and the per-query table, so an old report directory
gets the same pictures (``ltrfeat report DIR --html``): a forest plot of every set's change against the baseline
with 95% intervals and Holm marks on a zoomed axis, per-query deltas per set with their mean and wins/ties/losses,
and the feature importance as one heat map. Every figure saves as PNG or as compact SVG (text kept as text).
"""

from __future__ import annotations

import functools
import io
import math

import matplotlib
import numpy as np
import pandas as pd
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from ltrfeat.experiments.in_words import headline
from ltrfeat.experiments.summary_types import Comparison
from ltrfeat.core.fileio import atomic_output

MARKS = {"*": 0.05, "**": 0.01}
_TOP_FEATURES = 15
# Names (sets, systems, features) are the user's text: a "$" in one must not start matplotlib math, nor
# a user's matplotlibrc send it to LaTeX. Text artists take these at creation, tick labels at drawing.
_PLAIN_TEXT = {"text.parse_math": False, "text.usetex": False}


def _plain_text(draw):
    """``draw`` with every text artist it makes shown as written (see ``_PLAIN_TEXT``)."""

    @functools.wraps(draw)
    def wrapper(*args, **kwargs):
        with matplotlib.rc_context(_PLAIN_TEXT):
            return draw(*args, **kwargs)

    return wrapper


def mark(p, marks: dict | None = None) -> str:
    """``**`` when p < 0.01, ``*`` when p < 0.05 (or the thresholds in ``marks``), else ``""``."""
    marks = marks or MARKS
    if p is None or not math.isfinite(p):
        return ""
    hits = [m for m, level in marks.items() if p < level]
    return max(hits, key=len) if hits else ""


def colours(names) -> dict:
    """A distinct colour per name (tab10, then tab20's lighter hues, then evenly spaced hues): none repeats."""
    names = list(dict.fromkeys(names))
    base = list(matplotlib.colormaps["tab10"].colors) + list(matplotlib.colormaps["tab20"].colors[1::2])
    if len(names) > len(base):
        base += [matplotlib.colormaps["hsv"](i / (len(names) - len(base) + 1)) for i in range(len(names) - len(base))]
    return dict(zip(names, base))


def _baseline_comparisons(data: dict, metric: str) -> list[Comparison]:
    baseline = data["config"]["baseline"]
    comparisons = map(Comparison.from_dict, data["comparisons"])
    return [c for c in comparisons if c.baseline == baseline and c.metric == metric]


@_plain_text
def forest_figure(data: dict, metrics=None, *, title: bool = True) -> Figure | None:
    """One panel per metric: each set's mean change against the report's baseline with its 95% bootstrap
    interval, the relative change and the Holm mark, on an axis zoomed to the intervals (None without
    comparisons); ``title``: a line stating the intervals and marks above the panels."""
    metrics = list(metrics or headline(data["config"]["metrics"]))
    per_metric = {m: _baseline_comparisons(data, m) for m in metrics}
    metrics = [m for m in metrics if per_metric[m]]
    if not metrics:
        return None
    variants = list(dict.fromkeys(c.variant for m in metrics for c in per_metric[m]))
    colour = colours(variants)
    marks = data["config"].get("statistics", {}).get("marks", MARKS)
    label_width = 0.075 * max(len(v) for v in variants)
    fig = Figure(figsize=(label_width + 3.4 * len(metrics), 1.3 + 0.42 * len(variants)), layout="constrained")
    axes = fig.subplots(1, len(metrics), sharey=True, squeeze=False)[0]
    y = {v: len(variants) - 1 - i for i, v in enumerate(variants)}
    for ax, m in zip(axes, metrics):
        comps = per_metric[m]
        lo = min(min(c.ci95_delta[0], c.delta) for c in comps)
        hi = max(max(c.ci95_delta[1], c.delta) for c in comps)
        lo, hi = min(lo, 0.0), max(hi, 0.0)
        pad = 0.08 * (hi - lo or 1e-3)
        for c in comps:
            ax.errorbar(
                c.delta,
                y[c.variant],
                xerr=[[c.delta - c.ci95_delta[0]], [c.ci95_delta[1] - c.delta]],
                fmt="o",
                color=colour[c.variant],
                capsize=3,
                markersize=6,
            )
            rel = c.relative
            text = ("n/a" if rel is None else f"{100 * rel:+.1f}%") + mark(c.p_holm, marks)
            ax.annotate(
                text,
                (hi + pad, y[c.variant]),
                xytext=(2, 0),
                textcoords="offset points",
                va="center",
                fontsize="small",
                fontweight="bold" if mark(c.p_holm, marks) else "normal",
                annotation_clip=False,
            )
        ax.axvline(0, color="grey", linewidth=0.9, linestyle="--")
        ax.set_xlim(lo - pad, hi + pad)
        ax.set_title(f"{m} (baseline {comps[0].base_mean:.4f})", fontsize="medium")
        ax.set_xlabel(f"change in {m} vs {data['config']['baseline']}")
        ax.grid(axis="x", alpha=0.3)
        ax.margins(y=0.12)
    axes[0].set_yticks([y[v] for v in variants], variants)
    if title:
        fig.suptitle(
            f"Change against {data['config']['baseline']} with 95% bootstrap intervals; "
            f"Holm-adjusted randomisation test: * p < {marks['*']}, ** p < {marks['**']}",
            fontsize="medium",
        )
    return fig


@_plain_text
def deltas_figure(data: dict, per_query: pd.DataFrame, metric: str | None = None, *, seed: int = 0) -> Figure | None:
    """Per-query change (variant − baseline) of ``metric`` (default NDCG@10) for every set compared with the
    baseline: a violin per set with the queries as dots (at most 400 drawn), the mean as a black diamond, and
    wins/ties/losses beside it (None without comparisons)."""
    metrics = data["config"]["metrics"]
    metric = metric or ("ndcg@10" if "ndcg@10" in metrics else metrics[0])
    comps = _baseline_comparisons(data, metric)
    if not comps:
        return None
    baseline = data["config"]["baseline"]
    wide = per_query.pivot(index=["fold", "qid"], columns="feature_set", values=metric)
    variants = [c.variant for c in comps]
    colour = colours(variants)
    rng = np.random.default_rng(seed)
    deltas = {v: (lambda pair: (pair[v] - pair[baseline]).to_numpy())(wide[[baseline, v]].dropna()) for v in variants}
    every = np.concatenate(list(deltas.values()))
    lo, hi = np.quantile(every, [0.005, 0.995]) if len(every) else (-1.0, 1.0)
    lo, hi = min(lo, -0.01), max(hi, 0.01)
    label_width = 0.075 * max(len(v) for v in variants)
    fig = Figure(figsize=(label_width + 7.5, 1.5 + 0.6 * len(variants)), layout="constrained")
    ax = fig.add_subplot()
    for i, c in enumerate(comps):
        d, y = deltas[c.variant], len(variants) - 1 - i
        if len(d) > 1 and np.ptp(d) > 0:
            parts = ax.violinplot(
                np.clip(d, lo, hi), positions=[y], orientation="horizontal", showextrema=False, widths=0.8
            )
            for body in parts["bodies"]:
                body.set_facecolor(colour[c.variant])
                body.set_alpha(0.35)
        shown = d if len(d) <= 400 else rng.choice(d, 400, replace=False)
        ax.scatter(
            np.clip(shown, lo, hi),
            y + rng.uniform(-0.15, 0.15, len(shown)),
            s=5,
            color=colour[c.variant],
            alpha=0.6,
            linewidths=0,
        )
        ax.scatter([d.mean()], [y], marker="D", color="black", s=30, zorder=3)
        ax.annotate(
            f"mean {d.mean():+.4f}   W/T/L {c.wins}/{c.ties}/{c.losses}",
            (hi, y + 0.3),
            ha="right",
            fontsize="small",
        )
    ax.axvline(0, color="grey", linewidth=0.9, linestyle="--")
    ax.set_xlim(lo - 0.02 * (hi - lo), hi + 0.02 * (hi - lo))
    ax.set_yticks(range(len(variants)), variants[::-1])
    ax.set_xlabel(f"{metric}: variant − {baseline}, per test query (axis cut at the 0.5% and 99.5% quantiles)")
    ax.set_title(
        f"Per-query {metric} changes against {baseline}; ◆ mean, W/T/L = queries won/tied/lost", fontsize="medium"
    )
    ax.grid(axis="x", alpha=0.3)
    return fig


@_plain_text
def importance_figure(data: dict) -> Figure | None:
    """Share of each ranker's total split gain as one heat map: the features that matter most to any set
    (rows) by ranker set (columns), with the percentages written in (None without ranker sets)."""
    importance = {k: v for k, v in (data.get("importance") or {}).items() if v}
    if not importance:
        return None
    sets = list(importance)
    top = sorted(
        {f for shares in importance.values() for f in list(shares)[:_TOP_FEATURES]},
        key=lambda f: -max(importance[s].get(f, 0.0) for s in sets),
    )[:_TOP_FEATURES]
    grid = np.array([[100 * importance[s].get(f, 0.0) for s in sets] for f in top])
    width = max(6.0, 2.5 + 0.09 * max(map(len, top)) + 1.0 * len(sets))
    fig = Figure(figsize=(width, 1.8 + 0.34 * len(top)), layout="constrained")
    ax = fig.add_subplot()
    image = ax.imshow(grid, cmap="Blues", aspect="auto", vmin=0)
    for (i, j), v in np.ndenumerate(grid):
        ax.text(
            j,
            i,
            f"{v:.0f}" if v >= 0.5 else "·",
            ha="center",
            va="center",
            fontsize="small",
            color="white" if v > 0.6 * grid.max() else "black",
        )
    ax.set_xticks(range(len(sets)), sets, rotation=30, ha="right", fontsize="small")
    ax.set_yticks(range(len(top)), top, fontsize="small")
    ax.set_title("Feature importance: % of each ranker's split gain", fontsize="medium")
    fig.colorbar(image, ax=ax, shrink=0.6, label="% of gain")
    return fig


@_plain_text
def save_png(fig: Figure, path) -> None:
    """Write ``fig`` as a PNG, atomically, without a timestamp (identical bytes on reruns)."""
    FigureCanvasAgg(fig)
    with atomic_output(path, binary=True) as fh:
        fig.savefig(fh, format="png", dpi=100, metadata={"Software": None})


@_plain_text
def propensity_figure(curves: list[tuple[dict, list[str]]]) -> Figure | None:
    """The propensity curves that corrected click-trained encoders (``(curve, encoder names)`` pairs, see
    :func:`ltrfeat.experiments.click_training.curves`): P(examined | position) with its interval (None without)."""
    if not curves:
        return None
    fig = Figure(figsize=(6.4, 3.2))
    ax = fig.add_subplot()
    for (curve, names), colour in zip(curves, colours(range(len(curves))).values()):
        x, y = np.asarray(curve["positions"]), np.asarray(curve["values"], dtype=float)
        ax.plot(x, y, marker="o", color=colour, label=", ".join(names))
        if curve.get("lower") and curve.get("upper"):
            ax.fill_between(x, curve["lower"], curve["upper"], color=colour, alpha=0.2, linewidth=0)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("position")
    ax.set_ylabel("P(examined | position)")
    ax.set_ylim(bottom=0)
    ax.legend(fontsize="small", title="corrected encoders", title_fontsize="small")
    fig.tight_layout()
    return fig


@_plain_text
def svg_text(fig: Figure) -> str:
    """``fig`` as inline SVG: text kept as text (small), ids fixed (identical on reruns), no XML prolog."""
    FigureCanvasAgg(fig)
    buf = io.StringIO()
    with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": "ltrfeat"}):
        fig.savefig(buf, format="svg", metadata={"Date": None, "Creator": None})
    text = buf.getvalue()
    return text[text.index("<svg") :]
