"""Position propensities -- P(examined | position), relative to position 1 -- estimated from a click log itself.

Two estimators, both under the position-based model (PBM: a click needs the result examined, with a probability
that depends only on its position, and found attractive, with a probability that depends only on the query and
document):

- ``harvest``: intervention harvesting (Agarwal et al., WSDM 2019; Fang et al., SIGIR 2019). The production ranker
  showed the same (query, document) pair at different positions in different sessions; for every two positions k, k'
  the pairs shown at both are an "interventional set", and their click-through rates at k and at k' differ only by
  the examination. Every pair counts on both sides with the same weight ``n_k n_k' / (n_k + n_k')``, so what the
  ranker put where does not tilt the ratio. The curve is the extremum estimate over all position pairs (a shared
  relevance per position pair, alternating closed-form updates of the Poisson likelihood), so positions that are
  never shown together are linked through the others. Pairs are grouped by their mean position (the ranker puts
  attractive pairs high) and a stray-click rate (clicks whatever the position and relevance) is fitted by a search
  of the profile likelihood: without it, accidental clicks flatten the curve's tail.
- ``em``: expectation-maximisation of the PBM likelihood with stray clicks (Wang et al., WSDM 2018, the per-pair
  form): examination per position and attractiveness per (query, document) pair, the unclicked impressions split
  between "not examined" and "examined, not attractive" by the E step. With a parameter per pair, a sparse log (a few
  sessions per query) bends the curve (the pairs' estimates absorb what the positions explain: +5% at rank 2 to
  +46% at rank 10 on the generated world's quick log with exponent 0.8, where harvesting stays within 8%), so
  ``harvest`` is the default; EM suits logs with many impressions per pair.

A curve from a randomisation experiment can be given instead (:func:`read_propensity_curve`, method ``given``).
Intervals are percentile intervals of a bootstrap over queries (every query's rows are resampled together).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ltrfeat.core.errors import LtrfeatError, ParameterError

METHODS = ("harvest", "em")
_ITERATIONS = {"harvest": 300, "em": 300}
_TOLERANCE = 1e-7
_START_NOISE = 0.1  # the EM's stray-click rate starts at this share of the click-through rate
_NOISE_TOLERANCE = 1e-5  # harvesting: the stray-click rate's search stops when its bracket is this narrow


@dataclass(frozen=True)
class Propensity:
    """An examination curve: ``values[i]`` = P(examined | ``positions[i]``) / P(examined | 1), with an interval."""

    positions: np.ndarray  # 1..K
    values: np.ndarray  # values[0] == 1
    lower: np.ndarray
    upper: np.ndarray
    method: str  # "harvest" | "em" | "given"
    level: float = 0.95
    resamples: int = 0

    def at(self, positions) -> np.ndarray:
        """The propensity of each position; positions past the curve's end take its last value."""
        index = np.clip(np.asarray(positions, dtype=np.int64), 1, len(self.values)) - 1
        return self.values[index]

    def to_dict(self) -> dict:
        """Plain JSON values (for ``--json``, pins and reports)."""
        return {
            "method": self.method,
            "positions": self.positions.tolist(),
            "values": [round(float(v), 6) for v in self.values],
            "lower": [round(float(v), 6) for v in self.lower],
            "upper": [round(float(v), 6) for v in self.upper],
            "level": self.level,
            "resamples": self.resamples,
        }

    @classmethod
    def from_dict(cls, record: dict) -> "Propensity":
        """The inverse of :meth:`to_dict`."""
        values = np.asarray(record["values"], dtype=np.float64)
        return cls(
            np.asarray(record["positions"], dtype=np.int64),
            values,
            np.asarray(record.get("lower", values), dtype=np.float64),
            np.asarray(record.get("upper", values), dtype=np.float64),
            str(record["method"]),
            float(record.get("level", 0.95)),
            int(record.get("resamples", 0)),
        )


def estimate_propensity(
    log,
    *,
    method: str = "harvest",
    max_position: int = 10,
    seed: int = 0,
    resamples: int = 200,
    level: float = 0.95,
) -> Propensity:
    """The examination curve of positions 1..``max_position`` estimated from ``log`` (a
    :class:`~ltrfeat.clicks.log.ClickLog` with positions) by ``method`` (``"harvest"`` or ``"em"``), with a
    ``level`` percentile interval from ``resamples`` bootstrap resamples of the queries (0: no interval)."""
    if method not in METHODS:
        raise ParameterError(f"method {method!r} is not a propensity estimator", fix=f"use one of {', '.join(METHODS)}")
    if max_position < 2:
        raise ParameterError(f"max_position {max_position} leaves no curve", fix="give max_position >= 2")
    if not 0 < level < 1:
        raise ParameterError(f"level {level} is not in (0, 1)", fix="give e.g. 0.95")
    if not getattr(log, "has_positions", False):
        raise LtrfeatError(
            "the click log has no positions: position bias cannot be estimated from it",
            path=getattr(log, "source", None),
            fix="give an impression-level log or an aggregated one with a position column, or a curve from a "
            "randomisation experiment",
        )
    rows = log.positioned
    rows = rows[rows["position"] <= max_position]
    fit = _harvest_fit if method == "harvest" else _em_fit
    data = (_harvest_tables if method == "harvest" else _em_rows)(rows, max_position, log)
    values = fit(data, None)
    lower = upper = values
    if resamples:
        rng = np.random.default_rng(seed)
        n_queries = data["n_queries"]
        draws = np.empty((resamples, max_position))
        for b in range(resamples):
            counts = np.bincount(rng.integers(0, n_queries, n_queries), minlength=n_queries).astype(np.float64)
            draws[b] = fit(data, counts, start=values)
        tail = (1 - level) / 2
        lower, upper = np.nanquantile(draws, [tail, 1 - tail], axis=0)
    return Propensity(
        np.arange(1, max_position + 1),
        values,
        np.minimum(lower, values),
        np.maximum(upper, values),
        method,
        level,
        resamples,
    )


def _query_codes(rows: pd.DataFrame) -> tuple[np.ndarray, int]:
    codes, uniques = pd.factorize(rows["query"], sort=False)
    return codes, len(uniques)


# -- intervention harvesting ---------------------------------------------------------------------------------------
def _harvest_tables(rows: pd.DataFrame, k_max: int, log) -> dict:
    """The interventional sets as cells (stratum, k, k'): per query and cell, the weighted click-through rates of the
    pairs shown at both k and k' (at k) and their weights. A pair's stratum is its mean position, rounded: pairs the
    ranker puts high are more attractive than pairs it puts low, and the sets' spread of attractiveness is what tells
    stray clicks from examined ones."""
    codes, n_queries = _query_codes(rows)
    pair = pd.factorize(pd.MultiIndex.from_arrays([rows["query"], rows["docid"]]))[0]
    n = rows["impressions"].to_numpy(np.float64)
    mean_position = np.bincount(pair, weights=n * rows["position"].to_numpy()) / np.maximum(np.bincount(pair, n), 1)
    frame = pd.DataFrame(
        {
            "q": codes,
            "pair": pair,
            "stratum": np.clip(np.rint(mean_position[pair]), 1, k_max).astype(np.int64) - 1,
            "k": rows["position"].to_numpy(np.int64) - 1,
            "n": n,
            "c": rows["clicks"].to_numpy(np.float64),
        }
    )
    frame = frame[frame["n"] > 0]
    both = frame.merge(frame[["pair", "k", "n", "c"]], on="pair", suffixes=("", "_o"))
    both = both[both["k"] != both["k_o"]]
    if both.empty:
        raise LtrfeatError(
            "no (query, document) pair of the click log was shown at two different positions: intervention "
            "harvesting has nothing to compare",
            path=getattr(log, "source", None),
            fix="use method em, or give a curve from a randomisation experiment",
        )
    weight = (both["n"] * both["n_o"] / (both["n"] + both["n_o"])).to_numpy()
    cells = pd.DataFrame(
        {
            "q": both["q"].to_numpy(),
            "cell": (both["stratum"].to_numpy() * k_max + both["k"].to_numpy()) * k_max + both["k_o"].to_numpy(),
            "clicks": weight * (both["c"] / both["n"]).to_numpy(),
            "weights": weight,
        }
    )
    cells = cells.groupby(["q", "cell"], sort=True).sum().reset_index()
    return {
        "q": cells["q"].to_numpy(),
        "cell": cells["cell"].to_numpy(),
        "clicks": cells["clicks"].to_numpy(),
        "weights": cells["weights"].to_numpy(),
        "k_max": k_max,
        "n_queries": n_queries,
        "log": log,
    }


def _harvest_fit(data: dict, counts, start=None) -> np.ndarray:
    k = data["k_max"]
    size = k**3
    w = None if counts is None else counts[data["q"]]
    clicks = np.bincount(data["cell"], weights=data["clicks"] if w is None else data["clicks"] * w, minlength=size)
    weights = np.bincount(data["cell"], weights=data["weights"] if w is None else data["weights"] * w, minlength=size)
    clicks, weights = clicks.reshape(k, k, k), weights.reshape(k, k, k)  # stratum, k, k'
    linked = weights > 0
    _check_linked(np.asarray(linked.any(axis=0)), data, counts is not None)
    fit = _HarvestFit(clicks, weights, linked, np.ones(k) if start is None else start.copy())
    # the stray-click rate maximises the profile likelihood; it is at most the lowest click-through rate of a position
    by_position = weights.sum(axis=(0, 2))
    ctr = np.divide(clicks.sum(axis=(0, 2)), by_position, out=np.full(k, np.inf), where=by_position > 0)
    low, high = 0.0, float(ctr.min()) * 0.999
    ratio = (np.sqrt(5) - 1) / 2
    a, b = high - ratio * (high - low), low + ratio * (high - low)
    fa, fb = fit(a), fit(b)
    while high - low > _NOISE_TOLERANCE:
        if fa < fb:
            low, a, fa = a, b, fb
            b = low + ratio * (high - low)
            fb = fit(b)
        else:
            high, b, fb = b, a, fa
            a = high - ratio * (high - low)
            fa = fit(a)
    fit((low + high) / 2)
    return fit.theta


class _HarvestFit:
    """The harvested curve for a given stray-click rate (``fit(noise)`` returns the Poisson log-likelihood of the
    cells and keeps ``theta``, warm-starting the next call)."""

    def __init__(self, clicks, weights, linked, theta):
        self.clicks, self.weights, self.linked, self.theta = clicks, weights, linked, theta
        self.flip = lambda a: a.transpose(0, 2, 1)  # (k, k') -> (k', k)
        self.rel = np.divide(clicks + self.flip(clicks), weights * 2, out=np.zeros_like(weights), where=linked)

    def __call__(self, noise: float) -> float:
        clicks, weights, linked, flip = self.clicks, self.weights, self.linked, self.flip
        theta, rel = self.theta, self.rel
        for _ in range(_ITERATIONS["harvest"]):
            # a click at k of the pairs shown at k and k' is examined-and-attractive (theta_k rel) or stray (noise):
            # split the clicks by those rates, then the relevance shared by (stratum, k, k') and the examination
            expected = theta[None, :, None] * rel
            attractive = np.divide(clicks * expected, expected + noise, out=np.zeros_like(clicks), where=linked)
            total = weights * (theta[None, :, None] + theta[None, None, :])
            rel = np.divide(attractive + flip(attractive), total, out=np.zeros_like(total), where=linked)
            seen = (weights * rel).sum(axis=(0, 2))
            new = np.divide(attractive.sum(axis=(0, 2)), seen, out=np.full(len(theta), np.nan), where=seen > 0)
            if not new[0] > 0:
                self.theta = new
                return -np.inf
            rel, new = rel * new[0], new / new[0]
            done = np.nanmax(np.abs(new - theta)) < _TOLERANCE
            theta = new
            if done:
                break
        self.theta, self.rel = theta, rel
        mean = weights * (theta[None, :, None] * rel + noise)
        return float((clicks * np.log(np.where(linked, mean, 1.0)) - mean).sum())


def _check_linked(linked: np.ndarray, data: dict, resampled: bool) -> None:
    """Refuse a curve some of whose positions are not linked to position 1 by any chain of interventional sets."""
    reached = np.zeros(len(linked), dtype=bool)
    reached[0] = True
    while True:
        grown = reached | linked[reached].any(axis=0)
        if (grown == reached).all():
            break
        reached = grown
    if not reached.all() and not resampled:
        missing = np.flatnonzero(~reached) + 1
        raise LtrfeatError(
            f"position(s) {', '.join(map(str, missing[:5]))} never share a (query, document) pair with the positions "
            "linked to position 1: intervention harvesting cannot place them",
            path=getattr(data["log"], "source", None),
            fix="lower --max-position, use method em, or give a curve from a randomisation experiment",
        )


# -- EM under the position-based model -----------------------------------------------------------------------------
def _em_rows(rows: pd.DataFrame, k_max: int, log) -> dict:
    codes, n_queries = _query_codes(rows)
    pair = pd.factorize(pd.MultiIndex.from_arrays([rows["query"], rows["docid"]]))[0]
    k = rows["position"].to_numpy(np.int64) - 1
    if np.bincount(k, minlength=k_max).min() == 0:
        missing = np.flatnonzero(np.bincount(k, minlength=k_max) == 0) + 1
        raise LtrfeatError(
            f"no impression at position(s) {', '.join(map(str, missing[:5]))}",
            path=getattr(log, "source", None),
            fix="lower --max-position to the positions the log shows",
        )
    return {
        "q": codes,
        "pair": pair,
        "k": k,
        "n": rows["impressions"].to_numpy(np.float64),
        "c": rows["clicks"].to_numpy(np.float64),
        "k_max": k_max,
        "n_queries": n_queries,
        "log": log,
    }


def pbm_em(
    pair: np.ndarray,
    k: np.ndarray,
    n: np.ndarray,
    c: np.ndarray,
    *,
    k_max: int,
    iterations: int = 300,
    start=None,
    fixed=None,
) -> tuple[np.ndarray, np.ndarray]:
    """EM of the position-based model with stray clicks over aggregated rows (pair index, 0-based position,
    impressions, clicks): ``(examination per position, attractiveness per pair)``, the examination not normalised to
    position 1. A click is examined-and-attractive or stray (a click on a shown result whatever its position and
    relevance, at a rate estimated with the rest), so accidental clicks do not flatten the curve's tail.
    ``start``: a curve to start from; ``fixed``: a curve to keep (only the attractiveness is estimated)."""
    n_pairs = int(pair.max()) + 1 if len(pair) else 0
    if fixed is not None:
        theta = np.asarray(fixed, dtype=np.float64)
    else:
        theta = np.full(k_max, 0.5) if start is None else np.clip(start, 1e-6, 1.0) * 0.5
    pair_n = np.maximum(np.bincount(pair, weights=n, minlength=n_pairs), 1e-12)
    pos_n = np.maximum(np.bincount(k, weights=n, minlength=k_max), 1e-12)
    gamma = np.clip(np.bincount(pair, weights=c, minlength=n_pairs) / pair_n, 0.01, 0.99)
    unclicked, noise = n - c, _START_NOISE * c.sum() / max(n.sum(), 1e-12)  # a rate of 0 would stay 0
    for _ in range(iterations):
        t, g = theta[k], gamma[pair]
        clicked = np.maximum(1 - (1 - t * g) * (1 - noise), 1e-12)  # P(click)
        none = np.maximum(1 - t * g, 1e-12)
        exam = c * t * (g + (1 - g) * noise) / clicked + unclicked * t * (1 - g) / none  # expected examined
        attr = c * g * (t + (1 - t) * noise) / clicked + unclicked * (1 - t) * g / none  # expected attractive
        new_gamma = np.clip(np.bincount(pair, weights=attr, minlength=n_pairs) / pair_n, 1e-6, 1.0)
        noise = float((c * noise / clicked).sum() / n.sum())
        if fixed is None:
            new_theta = np.bincount(k, weights=exam, minlength=k_max) / pos_n
            done = np.max(np.abs(new_theta - theta)) < _TOLERANCE
            theta = np.clip(new_theta, 1e-6, 1.0)
        else:
            done = np.max(np.abs(new_gamma - gamma)) < _TOLERANCE
        gamma = new_gamma
        if done:
            break
    return theta, gamma


def _em_fit(data: dict, counts, start=None) -> np.ndarray:
    n, c = data["n"], data["c"]
    if counts is not None:
        w = counts[data["q"]]
        n, c = n * w, c * w
    theta, _ = pbm_em(
        data["pair"],
        data["k"],
        n,
        c,
        k_max=data["k_max"],
        iterations=_ITERATIONS["em"] if start is None else _ITERATIONS["em"] // 3,
        start=start,
    )
    return theta / theta[0]


# -- a given curve -------------------------------------------------------------------------------------------------
def propensity_from_values(values, *, source: str = "the curve") -> Propensity:
    """A ``given`` curve from P(examined | position) of positions 1, 2, ...: checked (finite, in (0, 1] after
    normalising to position 1) and normalised to position 1."""
    values = np.asarray(values, dtype=np.float64)
    bad = np.flatnonzero(~np.isfinite(values) | (values <= 0))
    if len(values) == 0 or len(bad):
        where = f"position {bad[0] + 1}: " if len(bad) else ""
        raise LtrfeatError(
            f"{where}a propensity must be a positive number", path=source, fix="give P(examined | position) > 0"
        )
    values = values / values[0]
    return Propensity(np.arange(1, len(values) + 1), values, values, values, "given")


def read_propensity_curve(path) -> Propensity:
    """A curve measured elsewhere (e.g. by a randomisation experiment): a table (tsv, csv, jsonl, parquet) with
    columns ``position`` (1, 2, ... each once, from 1 without gaps) and ``propensity`` (in (0, 1])."""
    from ltrfeat.core.text import read_table_columns

    table = read_table_columns(path, ("position", "propensity"))
    lines = table.index.to_numpy()
    positions = pd.to_numeric(table["position"], errors="coerce").to_numpy(np.float64)
    order = np.argsort(positions, kind="stable")
    expected = np.arange(1, len(positions) + 1)
    wrong = np.flatnonzero(positions[order] != expected)
    if len(wrong):
        row = int(order[wrong[0]])
        raise LtrfeatError(
            f"position {table['position'].iloc[row]!r} breaks the sequence 1, 2, ... {len(positions)}",
            path=path,
            line=int(lines[row]),
            fix="give one row per position, from 1 without gaps",
        )
    values = pd.to_numeric(table["propensity"], errors="coerce").to_numpy(np.float64)
    bad = np.flatnonzero(~np.isfinite(values) | (values <= 0) | (values > 1))
    if len(bad):
        raise LtrfeatError(
            f"propensity {table['propensity'].iloc[bad[0]]!r} is not a probability in (0, 1]",
            path=path,
            line=int(lines[bad[0]]),
            fix="give P(examined | position) of each position",
        )
    return propensity_from_values(values[order], source=str(path))


def write_propensity_curve(curve: Propensity, path) -> None:
    """Write ``curve`` as a table (``position, propensity, lower, upper``; any table format, by the extension)
    that :func:`read_propensity_curve` reads back, atomically."""
    from ltrfeat.core.text import write_table

    table = pd.DataFrame(
        {"position": curve.positions, "propensity": curve.values, "lower": curve.lower, "upper": curve.upper}
    )
    write_table(table, path)


def save_propensity_plot(curve: Propensity, path, *, truth=None) -> None:
    """Draw the curve with its interval (and a known ``truth``, e.g. a generated world's) as PNG or SVG (by the
    extension), written atomically."""
    import matplotlib
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    from ltrfeat.core.fileio import atomic_output

    fmt = "svg" if str(path).lower().endswith(".svg") else "png"
    fig = Figure(figsize=(5.5, 3.6))
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    ax.fill_between(curve.positions, curve.lower, curve.upper, alpha=0.25, label=f"{curve.level:.0%} interval")
    ax.plot(curve.positions, curve.values, marker="o", label=f"estimated ({curve.method})")
    if truth is not None:
        ax.plot(curve.positions, truth, linestyle="--", color="black", label="truth")
    ax.set_xlabel("position")
    ax.set_ylabel("P(examined) / P(examined at 1)")
    ax.set_xticks(curve.positions)
    ax.set_ylim(0, max(1.05, float(np.nanmax(curve.upper)) * 1.05))
    ax.legend(frameon=False)
    fig.tight_layout()
    with matplotlib.rc_context({"svg.hashsalt": "ltrfeat"}), atomic_output(path, binary=True) as fh:
        fig.savefig(fh, format=fmt, dpi=100, metadata={"Software": None} if fmt == "png" else {"Date": None})
