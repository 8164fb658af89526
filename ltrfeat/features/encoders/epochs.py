"""The training machinery every encoder trainer shares: pairs to samples, negatives, the epoch loop.

A trainer (:func:`~ltrfeat.features.encoders.training.train_encoder`, :func:`~ltrfeat.features.encoders.
sbert_training.train_sbert`, :func:`~ltrfeat.features.encoders._deepmatch.train_deepmatch`, or a new kind's)
runs these steps:

1. :func:`validate_pairs` checks the ``query, doc, label[, qid]`` table; :func:`training_data` (or
   :func:`prepare_pairs` and :func:`sample_rows`) maps labels to soft labels, holds out validation queries
   and picks the sample rows; :func:`data_hash` fingerprints the table for the training record.
2. :class:`Sampler` draws each mini-batch's negatives; :class:`BatchLoss` is the ranking loss of a
   two-tower model (towers with ``prepare(hasher, texts)``), a pair scorer writes its own ``step``.
3. Inside :func:`torch_settings` (threads, deterministic algorithms): :func:`begin_run` (a fresh run or a
   checkpoint to resume) and :func:`fit_epochs` over a :class:`Loop` (network, optimizer, generator,
   rows, ``step(batch) -> loss``, ``validate() -> NDCG@10``), which keeps the best epoch's weights and
   writes a resumable checkpoint (:func:`write_checkpoint`) after every epoch.

Samples and negatives
---------------------
* ``softmax`` / ``hinge``: every pair whose soft label ``y >= min_positive`` is a sample
  (Q, D+). ``generalized`` (GDSSM): every judged pair is a sample, with its ``y``.
* Each sample's candidate negatives are (a) ``negatives`` = J documents drawn uniformly from the
  training documents, (b) ``hard_negatives`` documents of the same query with a lower label
  (drawn with replacement; none if the query has no lower-labelled document), and (c) with
  ``in_batch``, the documents of the other samples of the mini-batch (one (B, B) score matrix).
  A candidate is masked out when it is the sample's own document or a document judged for the
  same query with a label >= the sample's.
* Soft labels: ``soft_labels="linear"`` maps raw labels linearly onto [0, 1] (min -> 0, max -> 1;
  for graded averages such as 1..3), ``"clicks"`` maps click counts c >= 0 through the monotone,
  saturating ``phi(c) = c / (c + click_scale)`` with ``phi(0) = 0``, ``"identity"`` takes labels
  already in [0, 1].

Validation and early stopping
-----------------------------
``val_fraction`` of the queries (by ``qid`` when given, else by query text) are held out. At every
validation checkpoint -- ``val_per_epoch`` per epoch, evenly spaced over its optimizer steps, the last
at its end (default one: after every epoch) -- the model's score, used alone as a ranker, is scored by
mean NDCG@10 over the held-out queries (:func:`ndcg_at`: gain ``2^rel - 1`` with ``rel = label - min
label`` capped at 30, ties broken by input order, queries with no positive gain skipped: a training signal,
not a reported figure, kept as it was so that encoders, and their caches, train as before). Training stops
after ``patience`` checkpoints in a row without improvement and the best checkpoint's weights are kept;
the history has one entry per checkpoint (``epoch`` a fraction inside an epoch, ``step`` the mini-batches
so far, ``val_seconds`` the validation's cost).

Keeping the starting point
--------------------------
A training that starts from a model worth keeping (MiniLM fine-tuning, a CLSM/DSSM continued from ``+init`` /
``+spans`` weights or distilled from a ``+teacher``, an outer training continuing an inner one) passes
``keep_start`` = the margin ``m`` (the configs' ``keep_start_margin``, default 1) to :func:`fit_epochs`. Epoch 0
is the starting model's validation score; the best trained epoch (by mean NDCG@10) replaces it only when it
beats it by more than ``m`` paired standard errors over the validation queries:
``d_i = NDCG@10_epoch(q_i) - NDCG@10_start(q_i)`` over the n validation queries with a positive grade,
``mean(d) > m * sd(d) / sqrt(n)`` (sample standard deviation, ``ddof=1``; with fewer than 2 queries the start
is kept). ``m = 0`` keeps any epoch better on average. Early stopping works against the start: a checkpoint
counts as the best only when it beats the start by this rule (and the best such checkpoint so far by mean);
the patience count restarts at every checkpoint whose mean beats all earlier ones, the start's included (a
validation still rising -- MiniLM's on Home Depot, where a quarter epoch is not yet one SE clear of the start
-- trains on), so a training that cannot beat its start stops ``patience`` checkpoints after its last record
-- with several per epoch (MiniLM's ``val_per_epoch`` 8, a started CLSM/DSSM's 4), a fraction of an epoch --
and keeps it; the record adds
the ``checkpoints`` and mini-batch ``steps`` run of the ``planned_checkpoints`` / ``planned_steps``. The decision is the training record's ``keep_start``
(:func:`keep_start_decision`). A from-scratch model has no start worth keeping: its random epoch 0 takes no
part in the rule.

Reproducibility: the seed fixes the initial weights and every sampled negative; with the same
seed, data and thread count the result is bit-identical, also when resumed from a checkpoint.
"""

from __future__ import annotations

import contextlib
import hashlib
import sys
import time
from dataclasses import dataclass
from typing import Any
from collections.abc import Callable

import numpy as np
import pandas as pd
import torch
import torch.nn.functional as F
from tqdm import tqdm

from ltrfeat.core.cores import available_cores
from ltrfeat.features.encoders import _losses
from ltrfeat.features.encoders.bundle import read_bundle, write_bundle
from ltrfeat.features.encoders.config import OPTIMIZERS, SOFT_LABELS
from ltrfeat.features.encoders.encoder import distinct
from ltrfeat.core.errors import ModelFileError, ParameterError, TextTableError
from ltrfeat.core.metrics import evaluate_queries
from ltrfeat.core.logs import get_logger
from ltrfeat.core.splits import holdout, holdout_size

__all__ = [
    "BatchLoss",
    "Loop",
    "MAX_REL",
    "WEIGHTED_LOSSES",
    "Prepared",
    "Run",
    "Sampler",
    "begin_run",
    "data_hash",
    "encode_rows",
    "fit_epochs",
    "keep_start_decision",
    "make_optimizer",
    "map_soft_labels",
    "ndcg_at",
    "ndcg_per_query",
    "prepare_pairs",
    "read_checkpoint",
    "read_checkpoint_bundle",
    "sample_rows",
    "torch_settings",
    "training_data",
    "validate_pairs",
    "validation_ndcg",
    "write_checkpoint",
]

MAX_REL = 30
WEIGHTED_LOSSES = ("softmax", "generalized")  # the losses that take a training table's sample weights
_log = get_logger("train")


# -- metric ------------------------------------------------------------------------------
def ndcg_per_query(scores, rels, groups, *, k: int = 10) -> np.ndarray:
    """NDCG@k of every group (in order of first appearance), by the project's one metric implementation
    (:func:`ltrfeat.core.metrics.evaluate_queries`: gain ``2^rel - 1``, log2 discount, ties in input order).

    NaN for a group without a positive grade; all NaN when a score is not finite (a diverged model).
    """
    scores = np.asarray(scores, dtype=np.float64)
    groups = np.asarray(groups)
    if len(scores) == 0:
        return np.zeros(0)
    if not np.isfinite(scores).all():
        return np.full(len(pd.unique(groups)), np.nan)
    name = f"ndcg@{k}"
    # any positive grade counts as relevant, so only all-zero groups (ideal DCG 0) are NaN
    per_query = evaluate_queries(
        groups,
        np.asarray(rels, dtype=np.float64),
        scores,
        [name],
        relevance_threshold=float(np.finfo(np.float64).tiny),
        ties="input",  # the checkpoint an encoder keeps, and the cached encoders, stay those of before
    )
    return per_query[name].to_numpy(dtype=np.float64)


def _mean(per_query: np.ndarray) -> float:
    values = per_query[np.isfinite(per_query)]
    return float(values.mean()) if len(values) else float("nan")


def ndcg_at(scores, rels, groups, *, k: int = 10) -> float:
    """Mean NDCG@k over the groups that have a positive grade (:func:`ndcg_per_query`).

    NaN when no group has a positive grade, or when a score is not finite (a diverged model: never the
    best epoch).
    """
    return _mean(ndcg_per_query(scores, rels, groups, k=k))


# -- data ----------------------------------------------------------------------------------
def map_soft_labels(labels: np.ndarray, how: str, *, click_scale: float = 1.0) -> np.ndarray:
    """Map raw labels to y in [0, 1] (see the module docstring)."""
    if how == "linear":
        lo, hi = labels.min(), labels.max()
        if hi == lo:
            raise TextTableError(
                f"every label is {lo}: graded training needs at least two label values",
                fix="give pairs with different labels, or soft_labels='identity'",
                param="soft_labels",
            )
        return (labels - lo) / (hi - lo)
    if how == "clicks":
        if (labels < 0).any():
            raise TextTableError(
                "click counts must be >= 0", fix="give counts, or soft_labels='linear'", param="soft_labels"
            )
        return labels / (labels + click_scale)
    if how == "identity":
        if ((labels < 0) | (labels > 1)).any():
            raise TextTableError(
                "soft_labels='identity' needs labels in [0, 1]",
                fix="use soft_labels='linear' for graded labels or 'clicks' for counts",
                param="soft_labels",
            )
        return labels.astype(np.float64)
    raise ValueError(f"soft_labels must be one of {SOFT_LABELS}, got {how!r}")


def data_hash(pairs: pd.DataFrame) -> str:
    """sha256 of the training table's qid/query/doc/label(/weight) columns (order-sensitive)."""
    h = hashlib.sha256()
    for col in ("qid", "query", "doc", "label", "weight"):
        if col in pairs:
            h.update(col.encode())
            h.update("\x1e".join(map(repr, pairs[col].tolist())).encode("utf-8", "surrogatepass"))
    return h.hexdigest()


def validate_pairs(pairs: pd.DataFrame) -> pd.DataFrame:
    """``pairs`` with numeric labels (and sample weights, when a ``weight`` column is given); a one-line error for a
    missing column, an empty table, a text that is not a string, a label that is not a finite number or a weight
    that is not a finite number >= 0."""
    missing = [c for c in ("query", "doc", "label") if c not in pairs]
    if missing:
        raise TextTableError(
            f"training table lacks column(s) {missing}", fix="give columns query, doc, label (and optionally qid)"
        )
    if len(pairs) == 0:
        raise TextTableError("training table is empty", fix="give judged or clicked (query, doc) pairs")
    for col in ("query", "doc"):
        bad = ~pairs[col].map(lambda v: isinstance(v, str))
        if bad.any():
            row = int(np.flatnonzero(bad.to_numpy())[0])
            raise TextTableError(
                f"row {row + 1}: {col} text is {pairs[col].iloc[row]!r}, not a string",
                fix="fill or drop pairs with missing texts",
            )
    labels = pd.to_numeric(pairs["label"], errors="coerce").to_numpy(dtype=np.float64)
    bad = ~np.isfinite(labels)
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        raise TextTableError(
            f"row {row + 1}: label {pairs['label'].iloc[row]!r} is not a finite number",
            fix="give numeric labels or click counts",
        )
    if "weight" not in pairs:
        return pairs.assign(label=labels)
    weights = pd.to_numeric(pairs["weight"], errors="coerce").to_numpy(dtype=np.float64)
    bad = ~np.isfinite(weights) | (weights < 0)
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        raise TextTableError(
            f"row {row + 1}: weight {pairs['weight'].iloc[row]!r} is not a finite number >= 0",
            fix="give sample weights >= 0, or no weight column",
        )
    return pairs.assign(label=labels, weight=weights)


@dataclass
class Prepared:
    """A training table as index arrays: distinct texts, each row's query/doc index, soft label, NDCG grade and
    whether it is a training (not a validation) row."""

    q_idx: np.ndarray  # per row: index into queries
    d_idx: np.ndarray  # per row: index into docs
    y: np.ndarray  # soft label per row
    rel: np.ndarray  # NDCG relevance per row
    train: np.ndarray  # bool per row
    queries: list
    docs: list
    weight: np.ndarray | None = None  # sample weight per row (None: every sample counts once)


def table_queries(pairs: pd.DataFrame) -> int:
    """The number of queries :func:`prepare_pairs` splits ``pairs`` by: distinct ``qid`` when given, else query text."""
    return int((pairs["qid"] if "qid" in pairs else pairs["query"]).nunique())


def check_holdout(n_queries: int, val_fraction: float, *, what: str = "") -> None:
    """Refuse a validation share of ``n_queries`` training queries that leaves no validation or no training query
    (callers check before any training); ``what`` names the training."""
    n_val = holdout_size(n_queries, val_fraction)
    if val_fraction > 0 and not 0 < n_val < n_queries:
        raise TextTableError(
            f"{what}{n_queries} queries cannot be split into training and validation (val_fraction {val_fraction} "
            f"holds out {n_val})",
            fix="give more queries or val_fraction=0 (no early stopping)",
            param="val_fraction",
        )


def prepare_pairs(pairs: pd.DataFrame, *, how: str, click_scale: float, val_fraction: float, seed: int) -> Prepared:
    """Distinct texts, soft labels (``how``: see :func:`map_soft_labels`) and the seeded validation split by query."""
    labels = pairs["label"].to_numpy()
    queries, q_idx = distinct(pairs["query"].tolist())
    docs, d_idx = distinct(pairs["doc"].tolist())
    keys = pairs["qid"].astype(str).tolist() if "qid" in pairs else pairs["query"].tolist()
    key_list, key_idx = distinct(keys)
    if not 0 <= val_fraction < 1:
        raise ValueError(f"val_fraction must be in [0, 1), got {val_fraction}")
    check_holdout(len(key_list), val_fraction)
    _, val_keys = holdout(np.arange(len(key_list)), val_fraction, [seed, 1])
    train = ~np.isin(key_idx, val_keys)
    rel = np.minimum(labels - labels.min(), MAX_REL)
    y = map_soft_labels(labels, how, click_scale=click_scale)
    weight = pairs["weight"].to_numpy(np.float64) if "weight" in pairs else None
    return Prepared(q_idx, d_idx, y, rel, train, queries, docs, weight)


def _ragged(starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Positions ``starts[i] .. starts[i] + lengths[i] - 1`` of every ``i``, back to back."""
    return np.repeat(starts - np.cumsum(lengths) + lengths, lengths) + np.arange(int(lengths.sum()))


def training_data(
    pairs: pd.DataFrame,
    *,
    loss: str,
    soft_labels: str,
    click_scale: float,
    min_positive: float,
    val_fraction: float,
    seed: int,
) -> tuple[str, Prepared, np.ndarray]:
    """The training table's hash, its prepared arrays (soft labels, validation split) and the sample rows."""
    if "weight" in pairs and loss not in WEIGHTED_LOSSES:
        raise ParameterError(
            f"the {loss} loss takes no sample weights (the training table has a weight column)",
            fix=f"use the {' or '.join(WEIGHTED_LOSSES)} loss, or drop the weights",
            param="loss",
        )
    data = prepare_pairs(pairs, how=soft_labels, click_scale=click_scale, val_fraction=val_fraction, seed=seed)
    return data_hash(pairs), data, sample_rows(data, loss=loss, min_positive=min_positive)


def sample_rows(data: Prepared, *, loss: str, min_positive: float) -> np.ndarray:
    """Training rows that are samples: every pair for the generalized loss, else those with y >= min_positive."""
    rows = np.flatnonzero(data.train if loss == "generalized" else data.train & (data.y >= min_positive))
    if len(rows) == 0:
        raise TextTableError(
            f"no training pair has a soft label >= min_positive={min_positive}",
            fix="lower min_positive or check the labels and soft_labels mapping",
        )
    return rows


class Sampler:
    """Vectorised negative sampling and masking over the training rows."""

    def __init__(self, data: Prepared, sample_rows: np.ndarray):
        tr = np.flatnonzero(data.train)
        self.n_docs = len(data.docs)
        self.pool = np.unique(data.d_idx[tr])
        # judged (query, doc) -> highest soft label, for masking
        keys = data.q_idx[tr] * self.n_docs + data.d_idx[tr]
        order = np.lexsort((-data.y[tr], keys))
        keys, ys = keys[order], data.y[tr][order]
        first = np.r_[True, keys[1:] != keys[:-1]]
        self.keys, self.key_y = keys[first], ys[first]
        # keys are sorted by (query, doc): the judged documents of query q are keys[q_ptr[q]:q_ptr[q + 1]]
        self.q_ptr = np.searchsorted(self.keys // self.n_docs, np.arange(len(data.queries) + 1))
        # same-query training rows sorted by (query, y): lower-labelled ones form a prefix
        order = np.lexsort((data.y[tr], data.q_idx[tr]))
        self.by_q_doc = data.d_idx[tr][order]
        rank_key = data.q_idx[tr][order] * 4.0 + data.y[tr][order]
        q_of_sample = data.q_idx[sample_rows]
        self.block_start = np.searchsorted(rank_key, q_of_sample * 4.0, side="left")
        self.n_lower = (
            np.searchsorted(rank_key, q_of_sample * 4.0 + data.y[sample_rows], side="left") - self.block_start
        )

    def judged_at_least(self, q, d, y) -> np.ndarray:
        """True where (q, d) is a judged training pair with soft label >= y (broadcasting)."""
        key = q * self.n_docs + d
        pos = np.minimum(np.searchsorted(self.keys, key), len(self.keys) - 1)
        return (self.keys[pos] == key) & (self.key_y[pos] >= y)

    def in_batch_mask(self, q, d, y) -> np.ndarray:
        """(B, B) True where document ``d[j]`` must not be a negative of sample ``i``: the same
        document, or judged for ``q[i]`` with a soft label >= ``y[i]``.

        Walks each sample's judged documents (a few per query) instead of looking up all B^2 pairs.
        """
        starts = self.q_ptr[q]
        lens = self.q_ptr[q + 1] - starts
        pos = _ragged(starts, lens)
        owner = np.repeat(np.arange(len(q)), lens)
        keep = self.key_y[pos] >= y[owner]
        owner, docs = owner[keep], self.keys[pos[keep]] % self.n_docs
        by_doc = np.argsort(d, kind="stable")
        lo = np.searchsorted(d[by_doc], docs, side="left")
        count = np.searchsorted(d[by_doc], docs, side="right") - lo
        mask = d[None, :] == d[:, None]
        mask[np.repeat(owner, count), by_doc[_ragged(lo, count)]] = True
        return mask

    def candidates(self, rng, samples, q, d, y, *, negatives: int, hard: int):
        """Random and hard negative doc ids (B, J + H) and their mask."""
        parts = [rng.integers(0, len(self.pool), size=(len(samples), negatives))]
        parts[0] = self.pool[parts[0]]
        mask = [np.ones(parts[0].shape, dtype=bool)]
        if hard:
            n_lower = self.n_lower[samples]
            offs = (rng.random((len(samples), hard)) * np.maximum(n_lower, 1)[:, None]).astype(np.int64)
            parts.append(self.by_q_doc[self.block_start[samples][:, None] + offs])
            mask.append(np.repeat((n_lower > 0)[:, None], hard, axis=1))
        cand = np.concatenate(parts, axis=1)
        ok = np.concatenate(mask, axis=1) & (cand != d[:, None]) & ~self.judged_at_least(q[:, None], cand, y[:, None])
        return cand, ok


# -- training ------------------------------------------------------------------------------
@contextlib.contextmanager
def torch_settings(threads: int | None):
    """Run the block with ``threads`` torch threads (None: the available cores) and deterministic algorithms."""
    old_threads, old_det = torch.get_num_threads(), torch.are_deterministic_algorithms_enabled()
    torch.set_num_threads(threads or available_cores())
    torch.use_deterministic_algorithms(True)
    try:
        yield
    finally:
        torch.set_num_threads(old_threads)
        torch.use_deterministic_algorithms(old_det)


def encode_rows(tower, hasher, tokens, rows, *, normalize: bool = True):
    """Vectors of the distinct ``rows`` (L2-normalised unless ``normalize=False``: dot scoring) and
    the index of each row's vector."""
    uniq, inv = np.unique(rows, return_inverse=True)
    vectors = tower(tower.prepare(hasher, tokens.take(uniq)))
    if normalize:
        vectors = F.normalize(vectors, dim=1)
    return vectors, torch.from_numpy(inv.reshape(np.shape(rows)))


def validation_ndcg(model, hasher, q_tokens, d_tokens, data: Prepared, *, per_query: bool = False):
    """Mean NDCG@10 of a two-tower ``model``'s score over the validation rows of ``data`` (NaN without any);
    ``per_query``: every validation query's NDCG@10 instead (:func:`ndcg_per_query`; empty without any), the
    ``validate`` of a training that may keep its start (:func:`fit_epochs`)."""
    val = np.flatnonzero(~data.train)
    if len(val) == 0:
        return np.zeros(0) if per_query else float("nan")
    model.eval()
    with torch.inference_mode():
        scores = np.zeros(len(val), dtype=np.float64)
        for start in range(0, len(val), 4096):
            rows = val[start : start + 4096]
            unit = model.normalized
            qv, qi = encode_rows(model.tower("query"), hasher, q_tokens, data.q_idx[rows], normalize=unit)
            dv, di = encode_rows(model.tower("doc"), hasher, d_tokens, data.d_idx[rows], normalize=unit)
            scores[start : start + len(rows)] = (qv[qi] * dv[di]).sum(1).numpy()
    model.train()
    if per_query:
        return ndcg_per_query(scores, data.rel[val], data.q_idx[val], k=10)
    return ndcg_at(scores, data.rel[val], data.q_idx[val], k=10)


def make_optimizer(name: str, params, lr: float | None):
    """Adam (default lr 1e-3) or SGD with momentum 0.9 (default lr 0.1)."""
    if name == "adam":
        return torch.optim.Adam(params, lr=1e-3 if lr is None else lr, fused=True)
    if name == "sgd":
        return torch.optim.SGD(params, lr=0.1 if lr is None else lr, momentum=0.9, fused=True)
    raise ValueError(f"optimizer must be one of {OPTIMIZERS}, got {name!r}")


def write_checkpoint(path, *, model, best_state, optimizer, rng, header, start_state=None):
    """Write a resumable checkpoint: weights, the best epoch's weights, optimizer and both random states (and
    ``start_state``, the starting weights of a training that may keep them)."""
    tensors = {f"model.{k}": v for k, v in model.state_dict().items()}
    tensors.update({f"best.{k}": v for k, v in best_state.items()})
    same = start_state is best_state  # the start is still the best: safetensors stores no shared tensors
    tensors.update({f"start.{k}": v.clone() if same else v for k, v in (start_state or {}).items()})
    for i, state in optimizer.state_dict()["state"].items():
        tensors.update({f"optim.{i}.{name}": torch.as_tensor(v) for name, v in state.items()})
    tensors["torch_rng"] = torch.get_rng_state()
    write_bundle(path, kind="checkpoint", header={**header, "numpy_rng": rng.bit_generator.state}, tensors=tensors)


def read_checkpoint_bundle(path, *, params: dict, data_sha: str) -> tuple[dict, dict]:
    """Header and tensors of a checkpoint written for these training ``params`` and data (an error otherwise)."""
    header, tensors = read_bundle(path, kind="checkpoint")
    if header.get("params") != params or header.get("data_sha256") != data_sha:
        raise ModelFileError(
            "checkpoint was written for other training data or options",
            path=path,
            fix="resume with the same PAIRS file and options, or train from scratch",
        )
    return header, tensors


def read_checkpoint(path, *, params, data_sha, model, optimizer):
    """Load a checkpoint's weights, optimizer and torch random state into ``model`` / ``optimizer``; returns
    its header, the best epoch's weights and the starting weights (None when it kept none)."""
    header, tensors = read_checkpoint_bundle(path, params=params, data_sha=data_sha)

    def group(prefix):
        return {k[len(prefix) :]: v for k, v in tensors.items() if k.startswith(prefix)}

    try:
        model.load_state_dict(group("model."), strict=True)
        best_state = group("best.")
        state: dict = {}
        for name, value in group("optim.").items():
            i, key = name.split(".", 1)
            state.setdefault(int(i), {})[key] = value
        optimizer.load_state_dict({"state": state, "param_groups": optimizer.state_dict()["param_groups"]})
        torch.set_rng_state(tensors["torch_rng"])
        start_state = group("start.") or None
    except (KeyError, ValueError, RuntimeError) as exc:
        raise ModelFileError(
            f"checkpoint does not match the model: {' '.join(str(exc).split())[:300]}",
            path=path,
            fix="train from scratch",
        ) from None
    return header, best_state, start_state


@dataclass
class Run:
    """Progress of an epoch loop: history, best epoch, its weights, and the next epoch to run; for a training
    that may keep its start (``keep_start``), the starting weights and per-query validation NDCG@10, the best
    trained epoch (``trained``: its ``epoch`` and per-query ``scores``) and, after :func:`fit_epochs`, the
    decision (``kept``, :func:`keep_start_decision`)."""

    history: list
    best: dict
    best_state: dict
    start: int
    start_state: dict | None = None
    start_scores: np.ndarray | None = None
    trained: dict | None = None
    kept: dict | None = None


def _scored(value) -> tuple[float, np.ndarray | None]:
    """A ``validate()`` result -- a mean NDCG@10 or per-query values -- as (mean, per-query values or None)."""
    if np.ndim(value) == 0:
        return float(value), None
    per_query = np.asarray(value, dtype=np.float64)
    return _mean(per_query), per_query


def _clone(net) -> dict:
    return {k: v.clone() for k, v in net.state_dict().items()}


def begin_run(
    net, opt, rng, *, resume, params: dict, data_sha: str, validate, seconds: float = 0.0, keep_start: bool = False
):
    """A fresh run (epoch 0 = validation of the initial weights) or the state of ``resume``. ``keep_start``: keep
    the starting weights and their per-query scores (``validate`` then returns per-query values) for the rule
    of :func:`fit_epochs`.

    Returns ``(run, checkpoint header or None)``.
    """
    if resume is not None:
        state, best_state, start_state = read_checkpoint(
            resume, params=params, data_sha=data_sha, model=net, optimizer=opt
        )
        rng.bit_generator.state = state["numpy_rng"]
        run = Run(state["history"], state["best"], best_state, state["epoch"] + 1)
        if keep_start:
            if start_state is None or "start_scores" not in state:
                raise ModelFileError("checkpoint lacks the starting weights", path=resume, fix="train from scratch")
            run.start_state = start_state
            run.start_scores = np.asarray(state["start_scores"], dtype=np.float64)
            if state.get("trained") is not None:
                run.trained = {**state["trained"], "scores": np.asarray(state["trained"]["scores"])}
        return run, state
    first, per_query = _scored(validate())
    run = Run(
        [{"epoch": 0, "train_loss": None, "val_ndcg@10": first, "seconds": seconds}],
        {"epoch": 0, "val_ndcg@10": first, "stale": 0},
        _clone(net),
        1,
    )
    if keep_start:
        if per_query is None:
            raise ValueError("keep_start needs a validate() that returns per-query scores")
        run.start_state, run.start_scores = run.best_state, per_query
    return run, None


def keep_start_decision(start_scores, trained_scores, *, margin: float, trained_epoch: int | None) -> dict:
    """Whether a training keeps its starting weights (see "Keeping the starting point" in the module docstring).

    ``start_scores`` / ``trained_scores``: per-query validation NDCG@10 of epoch 0 and of the best trained epoch
    ``trained_epoch`` (by mean; None: no epoch trained). Returns the training record's ``keep_start``:
    ``kept``, ``margin``, ``start_ndcg@10``, ``best_epoch`` and ``best_ndcg@10`` (the best trained epoch),
    ``mean_diff``, ``se`` (its paired standard error) and ``queries`` (the paired queries).
    """
    start = np.asarray(start_scores, dtype=np.float64)
    best = start if trained_scores is None else np.asarray(trained_scores, dtype=np.float64)
    both = np.isfinite(start) & np.isfinite(best)
    diff = best[both] - start[both]
    n = int(both.sum())
    mean_diff = float(diff.mean()) if n else float("nan")
    se = float(diff.std(ddof=1) / np.sqrt(n)) if n >= 2 else float("nan")
    beats = trained_epoch is not None and n >= 2 and mean_diff > 0 and mean_diff > margin * se
    return {
        "kept": not beats,
        "margin": float(margin),
        "start_ndcg@10": _mean(start),
        "best_epoch": trained_epoch,
        "best_ndcg@10": _mean(best),
        "mean_diff": mean_diff,
        "se": se,
        "queries": n,
    }


@dataclass
class Loop:
    """What an epoch loop trains: the network and its optimizer, the generator shuffling the training ``rows``,
    ``step(batch) -> loss`` per mini-batch and ``validate() -> score`` per epoch."""

    net: torch.nn.Module
    opt: torch.optim.Optimizer
    rng: np.random.Generator
    rows: np.ndarray
    step: Callable
    validate: Callable


def validation_points(n_batches: int, accumulate: int, per_epoch: int) -> list[int]:
    """The mini-batch counts after which an epoch of ``n_batches`` validates: ``per_epoch`` points evenly spaced
    over its optimizer steps (every ``accumulate`` mini-batches; at most one per step), the last at the end."""
    n_steps = -(-n_batches // accumulate)
    per_epoch = max(1, min(per_epoch, n_steps))
    return [min(n_batches, accumulate * (n_steps * c // per_epoch)) for c in range(1, per_epoch + 1)]


def _validated(loop: Loop, run: Run, *, at, loss: float, step: int, seconds: float, stopping: bool, margin, desc: str):
    """Score a validation checkpoint (``at``: epochs done, a fraction inside an epoch) into ``run``: its history
    entry (``val_seconds``: the validation's cost), and the best checkpoint so far (and its weights; with
    ``stopping`` off every checkpoint is the best). With a start to keep (``margin``: the keep-start rule's), a
    checkpoint is better only when it also beats the start by that rule, and ``run.trained`` follows the best
    checkpoint the rule would keep (before there is one, the best trained by mean); the patience count restarts
    at every checkpoint whose mean beats all earlier ones (the start's included, ``run.best["record"]``), so a
    training whose validation keeps rising trains on before its gain is clear of the start."""
    t0 = time.perf_counter()
    val_score, per_query = _scored(loop.validate())
    val_seconds = time.perf_counter() - t0
    run.history.append(
        {
            "epoch": at,
            "train_loss": loss,
            "val_ndcg@10": val_score,
            "step": step,
            "seconds": round(seconds + val_seconds, 3),
            "val_seconds": round(val_seconds, 3),
        }
    )
    _log.info("%s %g: train loss %.4f, validation NDCG@10 %.4f (%.1f s)", desc, at, loss, val_score, seconds)
    better = not stopping or np.isnan(run.best["val_ndcg@10"]) or val_score > run.best["val_ndcg@10"]
    rising = False
    if stopping and run.start_state is not None and margin is not None:
        record = run.best.get("record", run.history[0]["val_ndcg@10"])
        rising = bool(np.isnan(record) or val_score > record)
        run.best["record"] = val_score if rising else record
        beats = not keep_start_decision(run.start_scores, per_query, margin=margin, trained_epoch=at)["kept"]
        better = better and beats
        trained = run.trained
        if trained is None or beats > bool(trained.get("beats")):
            replace = True
        else:
            best_mean = _mean(trained["scores"])
            replace = beats == bool(trained.get("beats")) and (np.isnan(best_mean) or val_score > best_mean)
        if replace:
            run.trained = {"epoch": at, "scores": per_query, "beats": beats}
    if better:
        run.best = {**run.best, "epoch": at, "val_ndcg@10": val_score, "stale": 0}
        run.best_state = _clone(loop.net)
    else:
        run.best["stale"] = 0 if rising else run.best["stale"] + 1


def fit_epochs(
    loop: Loop,
    run: Run,
    cfg,
    *,
    checkpoint=None,
    header=None,
    desc: str = "epoch",
    progress: bool = False,
    keep_start: float | None = None,
) -> None:
    """The epoch loop every trainer shares.

    Each epoch shuffles the rows, calls ``step`` per mini-batch of ``cfg.batch_size`` and steps the optimizer
    every ``cfg.accumulate`` (default 1) mini-batches; ``cfg.val_per_epoch`` (default 1) times per epoch, evenly
    spaced over its optimizer steps (the last at its end), it scores ``validate()`` (a mean NDCG@10, or per-query
    values): a validation checkpoint. When ``cfg.val_fraction`` holds out validation pairs, the best checkpoint's
    weights are kept and training stops after ``cfg.patience`` checkpoints in a row without improvement on the best
    so far (epoch 0 included). A resumable checkpoint is rewritten after every epoch (and at a stop). Ends with the
    best weights in ``net``. ``keep_start``: the margin of the rule that keeps the starting weights (the run began
    with ``begin_run(keep_start=True)``; see "Keeping the starting point" in the module docstring), applied when
    validation pairs are held out: a checkpoint improves only when it also beats the start by that rule, so a
    training that does not stops ``patience`` checkpoints in; the decision is ``run.kept``, with the checkpoints and
    mini-batch steps run and planned.
    """
    net, opt, rng, rows = loop.net, loop.opt, loop.rng, loop.rows
    epochs, batch_size, patience = cfg.epochs, cfg.batch_size, cfg.patience
    early_stopping, accumulate = cfg.val_fraction > 0, getattr(cfg, "accumulate", 1)
    n_batches = -(-len(rows) // batch_size)
    points = validation_points(n_batches, accumulate, getattr(cfg, "val_per_epoch", 1))
    step = int(run.history[-1].get("step", (run.start - 1) * n_batches))
    for epoch in range(run.start, epochs + 1):
        if run.best["stale"] >= patience and early_stopping:
            break
        t0 = time.perf_counter()
        order = rng.permutation(rows)
        total, done = 0.0, 0
        bar = tqdm(
            total=len(order),
            desc=f"{desc} {epoch}/{epochs}",
            unit="pair",
            disable=not progress,
            file=sys.stderr,
            leave=False,
        )
        opt.zero_grad(set_to_none=True)
        for end in points:
            for b in range(done, end):
                batch = order[b * batch_size : (b + 1) * batch_size]
                step_loss = loop.step(batch)
                (step_loss / accumulate if accumulate > 1 else step_loss).backward()
                if (b + 1) % accumulate == 0 or b + 1 == n_batches:
                    opt.step()
                    opt.zero_grad(set_to_none=True)
                total += step_loss.item()
                bar.update(len(batch))
                bar.set_postfix(loss=f"{total / (b + 1 - done):.4f}", val_ndcg10=f"{run.best['val_ndcg@10']:.4f}")
            step += end - done
            at = epoch if end == n_batches else round(epoch - 1 + end / n_batches, 3)
            loss, seconds = total / (end - done), time.perf_counter() - t0
            _validated(
                loop,
                run,
                at=at,
                loss=loss,
                step=step,
                seconds=seconds,
                stopping=early_stopping,
                margin=keep_start,
                desc=desc,
            )
            total, done, t0 = 0.0, end, time.perf_counter()
            if run.best["stale"] >= patience and early_stopping:
                break
        bar.close()
        if checkpoint is not None:
            kept = {}
            if run.start_state is not None:
                kept = {
                    "start_scores": run.start_scores.tolist(),
                    "trained": None
                    if run.trained is None
                    else {**run.trained, "scores": run.trained["scores"].tolist()},
                }
            write_checkpoint(
                checkpoint,
                model=net,
                best_state=run.best_state,
                optimizer=opt,
                rng=rng,
                header={**header, "epoch": epoch, "history": run.history, "best": run.best, **kept},
                start_state=run.start_state,
            )
    if keep_start is not None and early_stopping:
        run.kept = keep_start_decision(
            run.start_scores,
            None if run.trained is None else run.trained["scores"],
            margin=keep_start,
            trained_epoch=None if run.trained is None else run.trained["epoch"],
        )
        run.kept.update(
            checkpoints=len(run.history) - 1,
            planned_checkpoints=epochs * len(points),
            steps=step,
            planned_steps=epochs * n_batches,
        )
        if run.kept["kept"]:
            run.best = {"epoch": 0, "val_ndcg@10": run.history[0]["val_ndcg@10"], "stale": run.best["stale"]}
            run.best_state = run.start_state
    net.load_state_dict(run.best_state)
    net.eval()


@dataclass(frozen=True)
class BatchLoss:
    """The ranking loss of one mini-batch (``batch`` holds row ids of ``data``), plus the kept teacher term if
    any: the ``step`` of :func:`fit_epochs` for the CLSM/DSSM and MiniLM trainers."""

    net: Any
    hasher: Any  # None: the towers take texts (MiniLM)
    q_tokens: Any
    d_tokens: Any
    data: Prepared
    sampler: Sampler
    rng: np.random.Generator
    idx_of: np.ndarray
    loss: str
    negatives: int
    hard: int
    in_batch: bool
    gamma: float
    margin: float
    kept: Any = None

    def __call__(self, batch: np.ndarray) -> torch.Tensor:
        net = self.net
        samples = np.searchsorted(self.idx_of, batch)  # positions in the sample list (for the hard-negative tables)
        q, d, y = self.data.q_idx[batch], self.data.d_idx[batch], self.data.y[batch]
        cand, ok = self.sampler.candidates(self.rng, samples, q, d, y, negatives=self.negatives, hard=self.hard)
        qv, qi = encode_rows(net.tower("query"), self.hasher, self.q_tokens, q, normalize=net.normalized)
        dv, di = encode_rows(
            net.tower("doc"),
            self.hasher,
            self.d_tokens,
            np.concatenate([d[:, None], cand], axis=1),
            normalize=net.normalized,
        )
        qb = qv[qi]  # (B, L)
        cand_scores = torch.einsum("bl,bjl->bj", qb, dv[di])  # (B, 1 + J + H)
        pos, neg = cand_scores[:, 0], cand_scores[:, 1:]
        mask = torch.from_numpy(ok)
        if self.in_batch:
            scores = qb @ dv[di[:, 0]].T  # (B, B): query i against document of sample j
            same = self.sampler.in_batch_mask(q, d, y)
            neg = torch.cat([neg, scores], dim=1)
            mask = torch.cat([mask, torch.from_numpy(~same)], dim=1)
        weight = None if self.data.weight is None else torch.from_numpy(self.data.weight[batch])
        if self.loss == "softmax":
            value = _losses.softmax_loss(pos, neg, gamma=self.gamma, mask=mask, weight=weight)
        elif self.loss == "generalized":
            value = _losses.generalized_loss(pos, neg, torch.from_numpy(y), gamma=self.gamma, mask=mask, weight=weight)
        else:
            value = _losses.hinge_loss(pos, neg, margin=self.margin, mask=mask)
        if self.kept is None:
            return value
        return value + self.kept.loss(qb, dv[di[:, 0]], q, d)
