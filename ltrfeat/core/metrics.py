"""Per-query ranking metrics (NDCG@k, recall@k, top-n recall@k, P@k, MAP, MRR, ERR@k).

Every metric is defined per query over its documents' graded ``labels`` and predicted
``scores``. Documents are ranked by score, descending; rank ``r`` starts at 1. The
conventions that change the numbers are explicit (see :class:`Conventions`):

- ``gain``: NDCG gain ``2^rel - 1`` (``"exp2"``, default) or ``rel`` (``"linear"``,
  trec_eval's ``ndcg_cut``).
- ``ties``: equal scores are ordered by input order (``"stable"``, default), relevant
  documents last (``"pessimistic"``) or first (``"optimistic"``). trec_eval instead
  breaks ties by docid, descending: feed rows in that order to reproduce it.
- ``no_relevant``: a query with no document at or above ``relevance_threshold`` has
  every metric set to NaN and left out of means (``"exclude"``, default), to 0
  (``"zero"``, trec_eval's behaviour) or to 1 (``"one"``, LightGBM's NDCG behaviour).
- ``relevance_threshold``: labels ``>= threshold`` count as relevant for the binary
  metrics (recall, P, MAP, MRR, top-n recall).

:func:`evaluate_queries` computes many metrics for many queries in one pass (one sort
for the predicted order and one for the ideal order, then segment sums); the per-query
functions are the same computation on a single query.
"""

from __future__ import annotations

import dataclasses
import math
import re
from numbers import Real
from typing import ClassVar

import numpy as np
import pandas as pd

from ltrfeat.core.errors import LtrfeatError, ParameterError
from ltrfeat.core.settings import Interval, OneOf, Settings

GAINS = ("exp2", "linear")
TIES = ("stable", "pessimistic", "optimistic")
NO_RELEVANT = ("exclude", "zero", "one")
_METRIC_RE = re.compile(r"(ndcg|recall|top\d+recall|p|err)@(\d+)|map|mrr")
KNOWN_METRICS = "ndcg@k, recall@k, top3recall@k (any topNrecall@k), p@k, err@k, map, mrr"


@dataclasses.dataclass(frozen=True)
class Conventions(Settings):
    """The choices that change metric values; every metric output carries them."""

    label: ClassVar[str] = "the metric conventions"
    _parameter_constraints: ClassVar[dict] = {
        "gain": [OneOf(*GAINS)],
        "ties": [OneOf(*TIES)],
        "no_relevant": [OneOf(*NO_RELEVANT)],
        "relevance_threshold": [Interval(Real, 0, None, closed="neither")],
    }
    gain: str = "exp2"
    ties: str = "stable"
    no_relevant: str = "exclude"
    relevance_threshold: float = 1.0

    def to_dict(self) -> dict:
        """The settings and their :meth:`describe` text."""
        return super().to_dict() | {"description": self.describe()}

    @classmethod
    def from_dict(cls, values: dict, *, source=None) -> "Conventions":
        """Conventions from plain values (a ``to_dict`` output's ``description`` is ignored)."""
        return super().from_dict({k: v for k, v in values.items() if k != "description"}, source=source)

    def describe(self) -> str:
        gain = "2^rel-1" if self.gain == "exp2" else "rel (linear)"
        ties = {"stable": "input order", "pessimistic": "relevant last", "optimistic": "relevant first"}[self.ties]
        none = {"exclude": "excluded", "zero": "scored 0", "one": "scored 1"}[self.no_relevant]
        thr = f"{self.relevance_threshold:g}"
        return (
            f"NDCG gain {gain}, log2(rank+1) discount; ties broken by {ties}; relevant = label >= {thr}; "
            f"queries without a relevant document {none}; P@k divides by k; "
            f"ERR uses (2^rel-1)/2^max_label"
        )


def parse_metrics(spec) -> list[str]:
    """Expand ``"ndcg@1,3,10,recall@3,6,map"`` (or a list of such items) into metric names.

    A bare number repeats the previous metric family with a new cutoff.
    """
    items = spec.split(",") if isinstance(spec, str) else [p for s in spec for p in str(s).split(",")]
    names: list[str] = []
    family = None
    for raw in items:
        item = raw.strip().lower()
        if not item:
            continue
        if item.isdigit():
            if family is None:
                raise ParameterError(
                    f"metric cutoff {item!r} has no metric before it",
                    fix=f"write e.g. ndcg@{item}; known metrics: {KNOWN_METRICS}",
                )
            item = f"{family}@{item}"
        m = _METRIC_RE.fullmatch(item)
        if m is None or (m.group(2) is not None and int(m.group(2)) < 1):
            raise ParameterError(f"unknown metric {raw.strip()!r}", fix=f"known metrics: {KNOWN_METRICS} (k >= 1)")
        family = m.group(1)
        if item not in names:
            names.append(item)
    if not names:
        raise ParameterError("no metric given", fix=f"known metrics: {KNOWN_METRICS}")
    return names


class _Ranked:
    """Labels in predicted and ideal order, grouped by query, with per-row ranks."""

    def __init__(
        self,
        group: np.ndarray,
        n_groups: int,
        label: np.ndarray,
        score: np.ndarray,
        conv: Conventions,
        retrieved: np.ndarray | None = None,
    ):
        rows = np.arange(len(label))
        keys: tuple[np.ndarray, ...]
        if conv.ties == "stable":
            keys = (rows, -score, group)
        else:
            label_key = label if conv.ties == "pessimistic" else -label
            keys = (rows, label_key, -score, group)
        self.order = np.lexsort(keys)
        self.ideal_order = np.lexsort((rows, -label, group))
        self.group = group[self.order]  # same sequence for the ideal order: both sort by group first
        self.n_groups = n_groups
        self.counts = np.bincount(group, minlength=n_groups)  # rows per query
        self.starts = np.concatenate([[0], np.cumsum(self.counts)[:-1]]).astype(np.int64)
        self.rank = rows - self.starts[self.group] + 1
        self.label = label[self.order]
        self.ideal_label = label[self.ideal_order]
        self.relevant = (self.label >= conv.relevance_threshold).astype(np.float64)
        self.n_relevant = self.sum(self.relevant)
        # Judged documents absent from a run count for the ideal ranking and the number of relevant
        # documents, never as retrieved (they must sort after every retrieved document of their query).
        self.retrieved = (
            np.ones(len(label)) if retrieved is None else np.asarray(retrieved, dtype=np.float64)[self.order]
        )
        self.relevant_retrieved = self.relevant * self.retrieved
        self.conv = conv
        self.max_label = float(label.max()) if len(label) else 0.0

    def sum(self, values: np.ndarray) -> np.ndarray:
        return np.bincount(self.group, weights=values, minlength=self.n_groups)

    def within_query_cumsum(self, values: np.ndarray) -> np.ndarray:
        """Inclusive cumulative sum restarting at each query."""
        total = np.cumsum(values)
        before = np.concatenate([[0.0], total])[self.starts]
        return total - before[self.group]

    def divide(self, num: np.ndarray, den: np.ndarray) -> np.ndarray:
        out = np.zeros(self.n_groups)
        np.divide(num, den, out=out, where=den > 0)
        return out

    def gain(self, label: np.ndarray) -> np.ndarray:
        """Gains scaled per query by a power of two that keeps them finite: ``(2^rel - 1) / 2^m``
        with m the query's largest label (``rel / 2^e`` for linear gain, 2^e <= the largest label).
        A power of two scales exactly, and NDCG is a ratio within one query, so the values equal
        the unscaled ones wherever those are finite, and labels of 1024 and more do not overflow."""
        top = self.ideal_label[self.starts][self.group]  # each query's largest label
        if self.conv.gain == "exp2":
            return np.exp2(label - top) - np.exp2(-top)
        _, exponent = np.frexp(top)
        return np.ldexp(label, -exponent)

    def metric(self, name: str) -> np.ndarray:
        family, _, cutoff = name.partition("@")
        k = int(cutoff) if cutoff else 0
        top = (self.rank <= k) * self.retrieved
        if family == "ndcg":
            discount = 1.0 / np.log2(self.rank + 1.0)
            dcg = self.sum(self.gain(self.label) * discount * top)
            ideal_top = self.rank <= k  # the ideal ranking may use judged documents the run missed
            return self.divide(dcg, self.sum(self.gain(self.ideal_label) * discount * ideal_top))
        if family == "p":
            return self.sum(self.relevant * top) / k
        if family == "recall":
            return self.divide(self.sum(self.relevant * top), self.n_relevant)
        if family.startswith("top"):
            n = int(family[3:-6])
            ideal_relevant = self.ideal_label >= self.conv.relevance_threshold
            in_top_n = np.zeros(len(self.label))
            in_top_n[self.ideal_order] = ideal_relevant & (self.rank <= n)
            hits = self.sum(in_top_n[self.order] * top)
            return self.divide(hits, np.minimum(self.n_relevant, n))
        if family == "map":
            seen = self.within_query_cumsum(self.relevant_retrieved)
            return self.divide(self.sum(self.relevant_retrieved * seen / self.rank), self.n_relevant)
        if family == "mrr":
            first = self.relevant_retrieved * (self.within_query_cumsum(self.relevant_retrieved) == 1)
            return self.sum(first / self.rank)
        if family == "err":
            g = self.max_label
            # R = (2^rel - 1) / 2^g and log(1 - R), written without 2^rel so that labels of 1024 and
            # more neither overflow nor turn into NaN
            stop = np.exp2(self.label - g) - np.exp2(-g)
            with np.errstate(divide="ignore"):
                log_continue = np.where(
                    self.label == g, -g * math.log(2.0), np.log1p(np.exp2(-g) - np.exp2(self.label - g))
                )
            # floored at -60 (a chance of going on below e^-60 ~ 1e-26 changes nothing): the cumulative
            # sums below subtract each other, and huge terms would leave rounding errors of whole units
            log_continue = np.maximum(log_continue, -60.0)
            reach = np.exp(self.within_query_cumsum(log_continue) - log_continue)
            return self.sum(stop * reach * top / self.rank)
        raise ParameterError(f"unknown metric {name!r}", fix=f"known metrics: {KNOWN_METRICS}")

    def apply_no_relevant(self, values: np.ndarray) -> np.ndarray:
        fill = {"exclude": np.nan, "zero": 0.0, "one": 1.0}[self.conv.no_relevant]
        values = values.copy()
        values[self.n_relevant == 0] = fill
        return values


class MetricInputError(LtrfeatError, ValueError):
    """Labels or scores a metric cannot be computed from (a ``ValueError`` too, for library callers)."""


def _check_arrays(label, score) -> tuple[np.ndarray, np.ndarray]:
    label = np.asarray(label, dtype=np.float64)
    score = np.asarray(score, dtype=np.float64)
    if label.shape != score.shape or label.ndim != 1:
        raise ValueError(f"labels {label.shape} and scores {score.shape} must be 1-d of equal length")
    bad = ~np.isfinite(label) | (label < 0)
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        raise MetricInputError(
            f"labels must be finite and >= 0: row {row + 1} has label {label[row]:g}",
            fix="map labels to non-negative relevance grades",
        )
    if not np.isfinite(score).all():
        row = int(np.flatnonzero(~np.isfinite(score))[0])
        raise MetricInputError(
            f"{int((~np.isfinite(score)).sum())} scores are NaN or infinite (first: row {row + 1})",
            fix="check the model and the feature values",
        )
    return label, score


def _check_no_nan(columns: dict, n_relevant: np.ndarray, uniques) -> None:
    """A metric of a query with a relevant document is a number: NaN there is an error, never dropped."""
    for name, values in columns.items():
        bad = np.isnan(values) & (n_relevant > 0)
        if bad.any():
            q = uniques[int(np.flatnonzero(bad)[0])]
            raise MetricInputError(
                f"{name} is NaN for {int(bad.sum())} queries with relevant documents (first: qid {q})",
                fix="report this as a bug with the input file",
            )


def evaluate_queries(
    qid,
    label,
    score,
    metrics=("ndcg@10",),
    *,
    gain: str = "exp2",
    no_relevant: str = "exclude",
    ties: str = "stable",
    relevance_threshold: float = 1.0,
    retrieved=None,
) -> pd.DataFrame:
    """Metrics per query, computed for all queries at once.

    Parameters
    ----------
    qid : per-row query ids; rows of one query need not be contiguous ("input order" for
        ties is row order within the query).
    label : per-row graded relevance (finite, >= 0).
    score : per-row predicted scores (finite).
    metrics : names or a spec string, see :func:`parse_metrics`.
    gain, no_relevant, ties, relevance_threshold : see :class:`Conventions`.
    retrieved : optional per-row booleans; False marks a judged document the system did not
        return (a TREC run scored against qrels): it counts in the ideal ranking (NDCG) and in the
        number of relevant documents (recall, MAP) but never as a hit. Such rows need scores below
        every retrieved row of their query. ``n_docs`` counts every row.

    Returns
    -------
    DataFrame indexed by qid (order of first appearance) with one float column per
    metric plus ``n_docs`` and ``n_relevant``; excluded queries hold NaN.
    ``df.attrs["conventions"]`` holds :meth:`Conventions.to_dict`.
    """
    conv = Conventions(gain=gain, ties=ties, no_relevant=no_relevant, relevance_threshold=relevance_threshold)
    names = parse_metrics(metrics)
    uniques, columns, ranked = _metric_columns(qid, label, score, names, conv, retrieved)
    columns["n_docs"] = ranked.counts
    columns["n_relevant"] = ranked.n_relevant.astype(np.int64)
    df = pd.DataFrame(columns, index=pd.Index(uniques, name="qid"))
    df.attrs["conventions"] = conv.to_dict()
    if any(name.startswith("err@") for name in names):
        df.attrs["conventions"]["err_max_label"] = ranked.max_label
    return df


def _metric_columns(qid, label, score, names: list[str], conv: Conventions, retrieved=None):
    """``(qids in order of first appearance, {metric: per-query values}, the ranked rows)``: the numbers of
    :func:`evaluate_queries` without its table."""
    label, score = _check_arrays(label, score)
    codes, uniques = pd.factorize(np.asarray(qid, dtype=object))
    if len(codes) != len(label):
        raise ValueError(f"{len(codes)} qids for {len(label)} labels")
    ranked = _Ranked(codes.astype(np.int64), len(uniques), label, score, conv, retrieved)
    columns = {name: ranked.apply_no_relevant(ranked.metric(name)) for name in names}
    _check_no_nan(columns, ranked.n_relevant, uniques)
    return uniques, columns, ranked


def mean_per_query(
    qid, label, score, metrics=("ndcg@10",), *, gain: str = "exp2", no_relevant: str = "exclude"
) -> np.ndarray:
    """Per query (order of first appearance), the mean of the ``metrics`` (stable ties): the row means of
    ``evaluate_queries(...)[metrics]``, computed without building the table (model selection asks for this
    hundreds of times). NaN for queries the ``no_relevant`` convention excludes."""
    conv = Conventions(gain=gain, no_relevant=no_relevant)
    _, columns, _ = _metric_columns(qid, label, score, parse_metrics(metrics), conv)
    return np.column_stack(list(columns.values())).mean(axis=1)


def summarise_queries(per_query: pd.DataFrame) -> dict:
    """Means over the evaluated queries, query counts and the conventions used."""
    metric_cols = [c for c in per_query.columns if c not in ("n_docs", "n_relevant")]
    conventions = per_query.attrs.get("conventions", Conventions().to_dict())
    excluded = (
        (per_query["n_relevant"] == 0)
        if conventions["no_relevant"] == "exclude"
        else pd.Series(False, index=per_query.index)
    )
    for c in metric_cols:  # means skip NaN: a NaN outside the excluded queries would vanish silently
        n_nan = int(per_query.loc[~excluded, c].isna().sum())
        if n_nan:
            raise MetricInputError(
                f"{c} is NaN for {n_nan} evaluated queries; a mean without them would be wrong",
                fix="check the per-query values (or exclude those queries explicitly)",
            )
    return {
        "metrics": {c: float(per_query[c].mean()) if (~excluded).any() else float("nan") for c in metric_cols},
        "n_queries": int(len(per_query)),
        "n_evaluated": int((~excluded).sum()),
        "n_excluded_no_relevant": int(excluded.sum()),
        "conventions": conventions,
    }


def _one(name, labels, scores, *, gain="exp2", ties="stable", no_relevant="exclude", relevance_threshold=1.0):
    df = evaluate_queries(
        np.zeros(len(np.asarray(labels)), dtype=np.int64),
        labels,
        scores,
        [name],
        gain=gain,
        ties=ties,
        no_relevant=no_relevant,
        relevance_threshold=relevance_threshold,
    )
    return float(df[name].iloc[0]) if len(df) else float("nan")


def ndcg_at_k(labels, scores, k: int, **conventions) -> float:
    """NDCG@k = DCG@k / IDCG@k with DCG@k = Σ_{r≤k} gain(rel_r) / log2(r + 1).

    ``gain(rel) = 2^rel − 1`` (``gain="exp2"``) or ``rel`` (``gain="linear"``); IDCG@k is
    DCG@k of the labels sorted descending. Keyword conventions as in :class:`Conventions`.
    """
    return _one(f"ndcg@{k}", labels, scores, **conventions)


def recall_at_k(labels, scores, k: int, **conventions) -> float:
    """Recall@k = |relevant ∩ top k| / |relevant|, relevant meaning label ≥ relevance_threshold."""
    return _one(f"recall@{k}", labels, scores, **conventions)


def top_n_recall_at_k(labels, scores, k: int, *, n: int = 3, **conventions) -> float:
    """GDSSM recall: |T ∩ top k| / |T|, T = the query's n best relevant documents.

    T holds the first ``min(n, |relevant|)`` relevant documents when sorted by label,
    descending, ties by input order (Ye et al. 2015 use n = 3: "top-3 ground-truth recall").
    """
    return _one(f"top{n}recall@{k}", labels, scores, **conventions)


def precision_at_k(labels, scores, k: int, **conventions) -> float:
    """P@k = |relevant ∩ top k| / k (divides by k even when the query has fewer documents, as trec_eval)."""
    return _one(f"p@{k}", labels, scores, **conventions)


def average_precision(labels, scores, **conventions) -> float:
    """AP = (1/|relevant|) Σ_{r: rel_r} P@r, over the whole ranking (MAP is its mean over queries)."""
    return _one("map", labels, scores, **conventions)


def reciprocal_rank(labels, scores, **conventions) -> float:
    """RR = 1 / (rank of the first relevant document); MRR is its mean over queries."""
    return _one("mrr", labels, scores, **conventions)


def err_at_k(labels, scores, k: int, **conventions) -> float:
    """ERR@k = Σ_{r≤k} (1/r) R_r Π_{i<r} (1 − R_i), R = (2^rel − 1) / 2^max_label (Chapelle et al. 2009).

    ``max_label`` is the largest label among the labels given (for :func:`evaluate_queries`,
    over all queries).
    """
    return _one(f"err@{k}", labels, scores, **conventions)
