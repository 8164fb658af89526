"""Per-query ranking metrics (NDCG@k, recall@k, top-n recall@k, P@k, MAP, MRR, ERR@k).

Every metric is defined per query over its documents' graded ``labels`` and predicted
``scores``. Documents are ranked by score, descending; rank ``r`` starts at 1. The
conventions that change the numbers are explicit (see :class:`Conventions`):

- ``gain``: NDCG gain ``2^rel - 1`` (``"exp2"``, default) or ``rel`` (``"linear"``,
  trec_eval's ``ndcg_cut``).
- ``ties``: documents with equal scores (a tie group) are in no particular order, so by default
  (``"expected"``) every metric is its expected value over all orders of every tie group, each
  order equally likely (McSherry & Najork, ECIR 2008; formulas in :class:`_Ranked`): the value
  depends on the scores and labels only, never on row order. ``"input"`` breaks ties by input
  order, ``"docid"`` by docid descending (trec_eval: ``strcmp`` on the docnos), ``"pessimistic"``
  and ``"optimistic"`` put the lower / higher labels first, the bounds of every metric over the
  orders of the ties.
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
from scipy.special import gammaln

from ltrfeat.core.errors import LtrfeatError, ParameterError
from ltrfeat.core.settings import Interval, OneOf, Settings

GAINS = ("exp2", "linear")
TIES = ("expected", "input", "docid", "pessimistic", "optimistic")
_OLD_TIES = {"stable": "input"}  # report.json files written before "expected" became the default
NO_RELEVANT = ("exclude", "zero", "one")
_METRIC_RE = re.compile(r"(ndcg|recall|top\d+recall|p|err)@(\d+)|map|mrr")
TIE_WORDS = {
    "expected": "expected value over every order of the tied documents",
    "input": "broken by input order",
    "docid": "broken by docid descending (trec_eval)",
    "pessimistic": "lower labels first (worst case)",
    "optimistic": "higher labels first (best case)",
}
TIES_HELP = (
    "Documents with equal scores: expected = the mean over every order of the ties (depends on scores and "
    "labels only); input = input order; docid = docid descending (trec_eval); pessimistic / optimistic = lower "
    "/ higher labels first (the bounds)."
)
_SMALL_TIE_GROUP = 64  # ERR: tie groups up to this size are computed together, larger ones label by label
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
    ties: str = "expected"
    no_relevant: str = "exclude"
    relevance_threshold: float = 1.0

    def to_dict(self) -> dict:
        """The settings and their :meth:`describe` text."""
        return super().to_dict() | {"description": self.describe()}

    @classmethod
    def from_dict(cls, values: dict, *, source=None) -> "Conventions":
        """Conventions from plain values (a ``to_dict`` output's ``description`` is ignored)."""
        values = {k: v for k, v in values.items() if k != "description"}
        if "ties" in values:
            values["ties"] = _OLD_TIES.get(values["ties"], values["ties"])
        return super().from_dict(values, source=source)

    def describe(self) -> str:
        gain = "2^rel-1" if self.gain == "exp2" else "rel (linear)"
        ties = TIE_WORDS[self.ties]
        none = {"exclude": "excluded", "zero": "scored 0", "one": "scored 1"}[self.no_relevant]
        thr = f"{self.relevance_threshold:g}"
        return (
            f"NDCG gain {gain}, log2(rank+1) discount; tied scores: {ties}; relevant = label >= {thr}; "
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
    """Labels in predicted and ideal order, grouped by query, with per-row ranks.

    With ``ties="expected"`` each metric is its mean over every order of every tie group (a maximal run of
    equal scores within a query), all orders equally likely. A tie group of ``m`` documents at ranks
    ``s+1 .. s+m``, ``t`` of them relevant (and retrieved), ``H`` relevant documents ranked above it:

    - Metrics that sum a per-document value times a weight of its rank (DCG@k with ``gain / log2(r+1)``
      for ``r <= k``, hits@k for P@k, recall@k and top-n recall@k) take, per rank of the group, the
      group's mean value: ``E = sum_groups mean(value) * sum_{r in group} weight(r)`` (linearity of
      expectation; for DCG@k this is McSherry & Najork's formula, the discounts counted up to k only).
    - AP: rank ``s+j`` of the group holds a relevant document with chance ``t/m``; given that, the ``j-1``
      ranks above it in the group hold ``(j-1)(t-1)/(m-1)`` relevant documents on average, so
      ``E[AP] = (1/R) sum_groups sum_{j=1..m} (t/m) (H + 1 + (j-1)(t-1)/(m-1)) / (s+j)``.
    - RR: only the first group with a relevant document matters; its first relevant document is at
      rank ``s+J`` with ``P(J = j) = C(m-j, t-1) / C(m, t)``, so ``E[RR] = sum_j P(J = j) / (s+j)``.
    - ERR@k: the chance of reaching the group is fixed; within it rank ``s+j`` holds document ``x`` with
      chance ``1/m`` after a random (j-1)-subset S of the others: ``E = reach sum_{j<=k-s} 1/(s+j) (1/m)
      sum_x R_x E_S[prod_{y in S} (1 - R_y)]``, the subset means built exactly one document at a time for
      small groups (:func:`_expected_err_small_groups`), one label at a time for large ones
      (:func:`_subset_product_means`).
    - top-n recall's set T (the n best relevant documents) has ties too: a label tied across T's
      boundary puts each of its documents in T with the share of the places left.

    Every other ``ties`` value sorts each group once (input order, docid descending, label ascending or
    descending) and computes the metrics of that ranking. The bounds of top-n recall also choose T among
    equal labels: its documents the lowest (highest) scored, and within a tie group T's documents last (first).
    """

    def __init__(
        self,
        group: np.ndarray,
        n_groups: int,
        label: np.ndarray,
        score: np.ndarray,
        conv: Conventions,
        retrieved: np.ndarray | None = None,
        docid: np.ndarray | None = None,
    ):
        rows = np.arange(len(label))
        keys: tuple[np.ndarray, ...]
        if conv.ties in ("expected", "input"):
            keys = (rows, -score, group)
        elif conv.ties == "docid":
            keys = (-pd.factorize(np.asarray(docid, dtype=str), sort=True)[0], -score, group)
        else:
            label_key = label if conv.ties == "pessimistic" else -label
            keys = (rows, label_key, -score, group)
        self.order = np.lexsort(keys)
        self.ideal_order = np.lexsort((rows, -label, group))
        # top-n recall's set T breaks label ties by input order, or for a bound by the score: T's documents
        # the lowest (pessimistic) or highest (optimistic) ranked of their label
        self.t_order = self.ideal_order
        if conv.ties in ("pessimistic", "optimistic"):
            self.t_order = np.lexsort((rows, score if conv.ties == "pessimistic" else -score, -label, group))
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
        self.expected = conv.ties == "expected"
        self.tie = _TieGroups(self.group, score[self.order])

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

    def spread(self, values: np.ndarray) -> np.ndarray:
        """Per-row values in ranked order; with expected ties, each tie group's mean on every row of it."""
        return self.tie.mean(values) if self.expected else values

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

    def in_top_n(self, n: int) -> np.ndarray:
        """Per ranked row: membership of the query's n best relevant documents (a share of one with
        expected ties when the n-th place falls inside a run of equal labels)."""
        ideal_relevant = self.ideal_label >= self.conv.relevance_threshold  # t_order has the same labels
        ideal_rank = self.rank  # the ideal orders have the same query blocks, so the same ranks
        if self.expected:
            runs = _TieGroups(self.group, self.ideal_label)
            first_rank = ideal_rank[runs.first][runs.id]
            places = np.clip(n - first_rank + 1, 0, runs.size[runs.id])
            member = ideal_relevant * places / runs.size[runs.id]
        else:
            member = ideal_relevant & (ideal_rank <= n)
        out = np.zeros(len(self.label))
        out[self.t_order] = member
        return out[self.order]

    def metric(self, name: str) -> np.ndarray:
        family, _, cutoff = name.partition("@")
        k = int(cutoff) if cutoff else 0
        in_k = self.rank <= k
        if family == "ndcg":
            discount = 1.0 / np.log2(self.rank + 1.0)
            dcg = self.sum(self.spread(self.gain(self.label) * self.retrieved) * discount * in_k)
            # the ideal ranking may use judged documents the run missed
            return self.divide(dcg, self.sum(self.gain(self.ideal_label) * discount * in_k))
        if family == "p":
            return self.sum(self.spread(self.relevant_retrieved) * in_k) / k
        if family == "recall":
            return self.divide(self.sum(self.spread(self.relevant_retrieved) * in_k), self.n_relevant)
        if family.startswith("top"):
            n = int(family[3:-6])
            member = self.in_top_n(n) * self.retrieved
            if self.conv.ties in ("pessimistic", "optimistic"):
                hits = self.tie.bound_hits(member, in_k, self.group, self.n_groups, self.conv.ties == "optimistic")
            else:
                hits = self.sum(self.spread(member) * in_k)
            return self.divide(hits, np.minimum(self.n_relevant, n))
        if family == "map":
            return self.divide(self.sum(self._precision_at_relevant()), self.n_relevant)
        if family == "mrr":
            return self.sum(self._reciprocal_rank_terms())
        if family == "err":
            return self._err(k)
        raise ParameterError(f"unknown metric {name!r}", fix=f"known metrics: {KNOWN_METRICS}")

    def _precision_at_relevant(self) -> np.ndarray:
        """Per ranked row: P@rank if the row is relevant, else 0 (expected values with expected ties)."""
        hit = self.relevant_retrieved
        seen = self.within_query_cumsum(hit)
        if not self.expected:
            return hit * seen / self.rank
        t, m, j, above = self.tie.stats(hit, seen)
        others = np.divide(t - 1, m - 1, out=np.zeros(len(t)), where=m > 1)
        return t / m * (above + 1 + (j - 1) * others) / self.rank

    def _reciprocal_rank_terms(self) -> np.ndarray:
        """Per ranked row: 1/rank for the first relevant row, else 0 (with expected ties: the chance that
        the row is the first relevant one, over its rank)."""
        hit = self.relevant_retrieved
        seen = self.within_query_cumsum(hit)
        if not self.expected:
            return hit * (seen == 1) / self.rank
        t, m, j, above = self.tie.stats(hit, seen)
        first = (above == 0) & (t > 0) & (j <= m - t + 1)
        t, m, j = t[first], m[first], j[first]
        # P(J = j) = C(m-j, t-1) / C(m, t), in log space: groups can hold thousands of documents
        log_p = gammaln(m - j + 1) - gammaln(t) - gammaln(m - j - t + 2)
        log_p -= gammaln(m + 1) - gammaln(t + 1) - gammaln(m - t + 1)
        out = np.zeros(len(hit))
        out[first] = np.exp(log_p) / self.rank[first]
        return out

    def _err(self, k: int) -> np.ndarray:
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
        terms = stop * reach * (self.rank <= k) * self.retrieved / self.rank
        if self.expected:
            # a tied group's terms depend on its order; the chance of reaching the group, and the rows
            # after it, do not (a product over the whole group)
            first, size = self.tie.tied_groups(self.rank, k)
            stop = stop * self.retrieved
            cont = np.exp(log_continue)
            for f, m in zip(first, size):
                terms[f : f + m] = 0.0
            small = size <= _SMALL_TIE_GROUP
            terms[first[small]] = reach[first[small]] * _expected_err_small_groups(
                stop, cont, first[small], size[small], self.rank[first[small]] - 1, k
            )
            for f, m in zip(first[~small], size[~small]):
                above = int(self.rank[f]) - 1
                rows = slice(f, f + m)
                terms[f] = reach[f] * _expected_err_in_group(stop[rows], cont[rows], above, min(m, k - above))
        return self.sum(terms)

    def apply_no_relevant(self, values: np.ndarray) -> np.ndarray:
        fill = {"exclude": np.nan, "zero": 0.0, "one": 1.0}[self.conv.no_relevant]
        values = values.copy()
        values[self.n_relevant == 0] = fill
        return values


class _TieGroups:
    """Runs of equal ``key`` within each query of rows sorted by query: run id, first row and size per run."""

    def __init__(self, group: np.ndarray, key: np.ndarray):
        starts = np.ones(len(key), dtype=bool)
        starts[1:] = (group[1:] != group[:-1]) | (key[1:] != key[:-1])
        self.id = np.cumsum(starts) - 1
        self.first = np.flatnonzero(starts)
        self.size = np.bincount(self.id).astype(np.float64)

    def mean(self, values: np.ndarray) -> np.ndarray:
        return (np.bincount(self.id, weights=values, minlength=len(self.first)) / self.size)[self.id]

    def stats(self, hit: np.ndarray, seen: np.ndarray):
        """Per row: its run's hits ``t`` and size ``m``, the row's place ``j`` (from 1) in the run, and the
        hits above the run in its query (``seen``: inclusive within-query cumulative hits)."""
        t = np.bincount(self.id, weights=hit, minlength=len(self.first))[self.id]
        j = np.arange(len(hit)) - self.first[self.id] + 1.0
        above = (seen - hit)[self.first][self.id]
        return t, self.size[self.id], j, above

    def bound_hits(self, member, in_k, group, n_groups: int, best: bool) -> np.ndarray:
        """Per query: the fewest (``best``: most) ``member`` rows in the top k over every order of the runs.
        Sorting by label cannot give it for top-n recall: documents of one label can be in T or not."""
        places = np.bincount(self.id, weights=in_k, minlength=len(self.first))
        members = np.bincount(self.id, weights=member, minlength=len(self.first))
        hits = np.minimum(places, members) if best else np.maximum(0.0, places - (self.size - members))
        return np.bincount(group[self.first], weights=hits, minlength=n_groups)

    def tied_groups(self, rank: np.ndarray, k: int):
        """First row and size of the runs of two or more rows that start within the top k."""
        runs = np.flatnonzero((self.size > 1) & (rank[self.first] <= k))
        return self.first[runs], self.size[runs].astype(np.int64)


def _subset_product_means(factors: np.ndarray, counts: np.ndarray, length: int) -> np.ndarray:
    """``q[t] = mean over the t-element subsets S of a multiset of prod_{y in S} y``, t < length, for the multiset
    holding ``counts[l]`` copies of ``factors[l]``.

    Built one value at a time: adding n copies of c to a multiset of M items gives
    ``q'[t] = sum_a h(t, a) c^a q[t - a]`` with ``h(t, a) = C(n, a) C(M, t - a) / C(M + n, t)`` the
    hypergeometric chance that a t-subset holds a of the copies: a weighted mean, so nothing overflows,
    and a tie group of thousands of documents costs a few matrix products per distinct label."""
    t = np.arange(length, dtype=np.float64)[:, None]
    a = t.T
    q = np.zeros(length)
    q[0] = 1.0
    size = 0
    for c, n in zip(factors, counts):
        if n == 0:
            continue
        valid = (a <= t) & (a <= n) & (t - a <= size)
        with np.errstate(invalid="ignore"):
            log_h = _log_comb(n, a) + _log_comb(size, t - a) - _log_comb(size + n, t)
        weight = np.where(valid, np.exp(np.where(valid, log_h, 0.0)) * np.power(c, a), 0.0)
        shifted = np.where(valid, q[np.clip(t - a, 0, length - 1).astype(np.int64)], 0.0)
        q = (weight * shifted).sum(axis=1)
        size += int(n)
    return q


def _expected_err_small_groups(stop, cont, first, size, above, k: int) -> np.ndarray:
    """:func:`_expected_err_in_group` of many small tie groups at once (rows ``first .. first + size``): one
    subset-mean vector per document x of every group, over the group's other documents, built together by adding
    the groups' i-th documents for i = 1, 2, ... (``q'[t] = q[t] (M - t) / M + c q[t - 1] t / M`` with M the
    items after adding c: a weighted mean, nothing overflows)."""
    if not len(first):
        return np.zeros(0)
    depth = np.minimum(size, k - above)
    group = np.repeat(np.arange(len(first)), size)
    x = np.arange(len(group)) - np.repeat(np.cumsum(size) - size, size)  # each document's place in its group
    length = int(depth.max())
    t = np.arange(length, dtype=np.float64)
    q = np.zeros((len(group), length))
    q[:, 0] = 1.0
    count = np.zeros(len(group))
    for i in range(int(size.max())):
        add = (i < size[group]) & (i != x)
        c = cont[first[group] + np.minimum(i, size[group] - 1)][add]
        count[add] += 1
        m = count[add][:, None]
        q[add, 1:] = q[add, 1:] * (m - t[1:]) / m + c[:, None] * q[add, :-1] * t[1:] / m
    j = t + 1.0
    weights = np.where(j[None, :] <= depth[group][:, None], 1.0 / (above[group][:, None] + j[None, :]), 0.0)
    per_document = stop[first[group] + x] * (q * weights).sum(axis=1)
    return np.bincount(group, weights=per_document, minlength=len(first)) / size


def _log_comb(n, k):
    return gammaln(n + 1.0) - gammaln(k + 1.0) - gammaln(n - k + 1.0)


def _expected_err_in_group(stop: np.ndarray, cont: np.ndarray, above: int, depth: int) -> float:
    """Expected ERR terms of a tie group at ranks ``above + 1 .. above + depth``, given the group was
    reached: ``sum_j 1/(above+j) (1/m) sum_x stop_x E_S[prod_{y in S} cont_y]`` over random (j-1)-subsets
    S of the other documents. Documents with equal labels are interchangeable, so the subset means are
    built once per distinct label."""
    reciprocal = 1.0 / (above + np.arange(1, depth + 1))
    values, first, counts = np.unique(stop, return_index=True, return_counts=True)
    total = 0.0
    for x in range(len(values)):
        others = counts.copy()
        others[x] -= 1
        total += counts[x] * values[x] * float(reciprocal @ _subset_product_means(cont[first], others, depth))
    return total / len(stop)


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


def _check_docids(docid, n: int) -> np.ndarray:
    if docid is None:
        raise ParameterError("ties='docid' needs document ids and none were given", fix="use ties='expected'")
    docid = np.asarray(docid, dtype=object)
    missing = pd.isna(docid)
    if len(docid) != n or missing.any():
        raise ParameterError(
            f"ties='docid' needs a document id for every row: {int(missing.sum()) if len(docid) == n else n} lack one",
            fix="give every row a docid, or use ties='expected'",
        )
    return docid.astype(str)


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
    conventions: Conventions | None = None,
    retrieved=None,
    docid=None,
    **convention,
) -> pd.DataFrame:
    """Metrics per query, computed for all queries at once.

    Parameters
    ----------
    qid : per-row query ids; rows of one query need not be contiguous (``ties="input"`` orders
        tied rows by row order within the query).
    label : per-row graded relevance (finite, >= 0).
    score : per-row predicted scores (finite).
    metrics : names or a spec string, see :func:`parse_metrics`.
    conventions : the :class:`Conventions` (default: all defaults); keyword ``convention`` settings (``gain``,
        ``no_relevant``, ``ties``, ``relevance_threshold``) replace single fields of it.
    retrieved : optional per-row booleans; False marks a judged document the system did not
        return (a TREC run scored against qrels): it counts in the ideal ranking (NDCG) and in the
        number of relevant documents (recall, MAP) but never as a hit. Such rows need scores below
        every retrieved row of their query. ``n_docs`` counts every row.
    docid : per-row document ids, needed by ``ties="docid"`` only.

    Returns
    -------
    DataFrame indexed by qid (order of first appearance) with one float column per
    metric plus ``n_docs`` and ``n_relevant``; excluded queries hold NaN.
    ``df.attrs["conventions"]`` holds :meth:`Conventions.to_dict`.
    """
    conv = Conventions.build(conventions, convention)
    names = parse_metrics(metrics)
    uniques, columns, ranked = _metric_columns(qid, label, score, names, conv, retrieved, docid)
    columns["n_docs"] = ranked.counts
    columns["n_relevant"] = ranked.n_relevant.astype(np.int64)
    df = pd.DataFrame(columns, index=pd.Index(uniques, name="qid"))
    df.attrs["conventions"] = conv.to_dict()
    if any(name.startswith("err@") for name in names):
        df.attrs["conventions"]["err_max_label"] = ranked.max_label
    return df


def _metric_columns(qid, label, score, names: list[str], conv: Conventions, retrieved=None, docid=None):
    """``(qids in order of first appearance, {metric: per-query values}, the ranked rows)``: the numbers of
    :func:`evaluate_queries` without its table."""
    label, score = _check_arrays(label, score)
    codes, uniques = pd.factorize(np.asarray(qid, dtype=object))
    if len(codes) != len(label):
        raise ValueError(f"{len(codes)} qids for {len(label)} labels")
    if conv.ties == "docid":
        docid = _check_docids(docid, len(label))
    ranked = _Ranked(codes.astype(np.int64), len(uniques), label, score, conv, retrieved, docid)
    columns = {name: ranked.apply_no_relevant(ranked.metric(name)) for name in names}
    _check_no_nan(columns, ranked.n_relevant, uniques)
    return uniques, columns, ranked


def mean_per_query(
    qid,
    label,
    score,
    metrics=("ndcg@10",),
    *,
    gain: str = "exp2",
    no_relevant: str = "exclude",
    ties: str = "expected",
    docid=None,
) -> np.ndarray:
    """Per query (order of first appearance), the mean of the ``metrics``: the row means of
    ``evaluate_queries(...)[metrics]``, computed without building the table (model selection asks for this
    hundreds of times). NaN for queries the ``no_relevant`` convention excludes."""
    conv = Conventions(gain=gain, no_relevant=no_relevant, ties=ties)
    _, columns, _ = _metric_columns(qid, label, score, parse_metrics(metrics), conv, docid=docid)
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


def _one(name, labels, scores, *, gain="exp2", ties="expected", no_relevant="exclude", relevance_threshold=1.0):
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
    descending (Ye et al. 2015 use n = 3: "top-3 ground-truth recall"); equal labels across T's boundary
    are ordered as ``ties`` orders equal scores (``"expected"``: each is in T with the share of places left).
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
