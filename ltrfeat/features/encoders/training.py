"""Training a two-tower encoder on judged or clicked (query, document) pairs.

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
``val_fraction`` of the queries (by ``qid`` when given, else by query text) are held out. After
every epoch the encoder's score (cosine or dot, see below), used alone as a ranker, is scored by
mean NDCG@10 over the held-out queries (:func:`ndcg_at`: gain ``2^rel - 1`` with
``rel = label - min label`` capped at 30, ties broken by input order, queries with no positive gain
skipped). Training stops after
``patience`` epochs without improvement and the best epoch's weights are kept.

Scores
------
``score="cosine"`` (DSSM, CLSM): R(Q, D) is the cosine of the two semantic vectors, in [-1, 1].
``score="dot"`` (DSE): R(Q, D) is their raw dot product; with tanh outputs of width L it lies in
[-L, L] (L = 128: [-128, 128]), so the loss constants change meaning. The hinge ``margin`` is an
absolute gap in dot units: the paper's 1 is a small share of that range (with cosine, 1 is half of
[-1, 1] and rarely met), and the network can meet it partly by growing vector norms, bounded by the
tanh saturation. The softmax / generalized ``gamma`` multiplies the dot product: an inverse
temperature over a score up to L times wider than a cosine -- hence its default of 1.0 for dot
against 10.0 for cosine. Trees (LambdaMART) are invariant
to the scale of a feature, so either score is a usable ranker feature.

Reproducibility: the seed fixes the initial weights and every sampled negative; with the same
seed, data and thread count the result is bit-identical, also when resumed from a checkpoint.
"""

from __future__ import annotations

import contextlib
import copy
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

from ltrfeat.core.duplicates import data_record
from ltrfeat.features.leakage import trained_queries_record
from ltrfeat.core.cores import available_cores
from ltrfeat.features.encoders import losses
from ltrfeat.features.encoders.bundle import read_bundle, write_bundle
from ltrfeat.features.encoders.config import OPTIMIZERS, SOFT_LABELS, EncoderConfig
from ltrfeat.features.encoders.encoder import Encoder, distinct
from ltrfeat.features.encoders.model import TwoTowerModel, model_config
from ltrfeat.core.errors import ModelFileError, OptionError, TextTableError
from ltrfeat.features.hashing import TrigramHasher
from ltrfeat.core.metrics import evaluate_queries
from ltrfeat.core.logs import get_logger, show_progress
from ltrfeat.core.splits import holdout, holdout_size

_MAX_REL = 30
_log = get_logger("train")


# -- metric ------------------------------------------------------------------------------
def ndcg_at(scores, rels, groups, *, k: int = 10) -> float:
    """Mean NDCG@k over the groups that have a positive grade, by the project's one metric implementation
    (:func:`ltrfeat.core.metrics.evaluate_queries`: gain ``2^rel - 1``, log2 discount, ties in input order).

    NaN when no group has a positive grade, or when a score is not finite (a diverged model: never the
    best epoch).
    """
    scores = np.asarray(scores, dtype=np.float64)
    if len(scores) == 0 or not np.isfinite(scores).all():
        return float("nan")
    name = f"ndcg@{k}"
    # any positive grade counts as relevant, so only all-zero groups (ideal DCG 0) are left out
    per_query = evaluate_queries(
        np.asarray(groups),
        np.asarray(rels, dtype=np.float64),
        scores,
        [name],
        relevance_threshold=float(np.finfo(np.float64).tiny),
    )
    values = per_query[name].dropna()
    return float(values.mean()) if len(values) else float("nan")


# -- data ----------------------------------------------------------------------------------
def map_soft_labels(labels: np.ndarray, how: str, *, click_scale: float = 1.0) -> np.ndarray:
    """Map raw labels to y in [0, 1] (see the module docstring)."""
    if how == "linear":
        lo, hi = labels.min(), labels.max()
        if hi == lo:
            raise TextTableError(
                f"every label is {lo}: graded training needs at least two label values",
                fix="give pairs with different labels, or soft_labels='identity'",
            )
        return (labels - lo) / (hi - lo)
    if how == "clicks":
        if (labels < 0).any():
            raise TextTableError("click counts must be >= 0", fix="give counts, or soft_labels='linear'")
        return labels / (labels + click_scale)
    if how == "identity":
        if ((labels < 0) | (labels > 1)).any():
            raise TextTableError(
                "soft_labels='identity' needs labels in [0, 1]",
                fix="use soft_labels='linear' for graded labels or 'clicks' for counts",
            )
        return labels.astype(np.float64)
    raise ValueError(f"soft_labels must be one of {SOFT_LABELS}, got {how!r}")


def data_hash(pairs: pd.DataFrame) -> str:
    """sha256 of the training table's qid/query/doc/label columns (order-sensitive)."""
    h = hashlib.sha256()
    for col in ("qid", "query", "doc", "label"):
        if col in pairs:
            h.update(col.encode())
            h.update("\x1e".join(map(repr, pairs[col].tolist())).encode("utf-8", "surrogatepass"))
    return h.hexdigest()


def _validate(pairs: pd.DataFrame) -> pd.DataFrame:
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
    return pairs.assign(label=labels)


@dataclass
class _Prepared:
    q_idx: np.ndarray  # per row: index into queries
    d_idx: np.ndarray  # per row: index into docs
    y: np.ndarray  # soft label per row
    rel: np.ndarray  # NDCG relevance per row
    train: np.ndarray  # bool per row
    queries: list
    docs: list


def _prepare(pairs: pd.DataFrame, *, how: str, click_scale: float, val_fraction: float, seed: int) -> _Prepared:
    labels = pairs["label"].to_numpy()
    queries, q_idx = distinct(pairs["query"].tolist())
    docs, d_idx = distinct(pairs["doc"].tolist())
    keys = pairs["qid"].astype(str).tolist() if "qid" in pairs else pairs["query"].tolist()
    key_list, key_idx = distinct(keys)
    if not 0 <= val_fraction < 1:
        raise ValueError(f"val_fraction must be in [0, 1), got {val_fraction}")
    n_val = holdout_size(len(key_list), val_fraction)
    if val_fraction > 0 and not 0 < n_val < len(key_list):
        raise TextTableError(
            f"{len(key_list)} queries cannot be split into training and validation",
            fix="give more queries or val_fraction=0 (no early stopping)",
        )
    _, val_keys = holdout(np.arange(len(key_list)), val_fraction, [seed, 1])
    train = ~np.isin(key_idx, val_keys)
    rel = np.minimum(labels - labels.min(), _MAX_REL)
    return _Prepared(q_idx, d_idx, map_soft_labels(labels, how, click_scale=click_scale), rel, train, queries, docs)


def _ragged(starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Positions ``starts[i] .. starts[i] + lengths[i] - 1`` of every ``i``, back to back."""
    return np.repeat(starts - np.cumsum(lengths) + lengths, lengths) + np.arange(int(lengths.sum()))


def _training_data(
    pairs: pd.DataFrame,
    *,
    loss: str,
    soft_labels: str,
    click_scale: float,
    min_positive: float,
    val_fraction: float,
    seed: int,
) -> tuple[str, _Prepared, np.ndarray]:
    """The training table's hash, its prepared arrays (soft labels, validation split) and the sample rows."""
    data = _prepare(pairs, how=soft_labels, click_scale=click_scale, val_fraction=val_fraction, seed=seed)
    return data_hash(pairs), data, _sample_rows(data, loss=loss, min_positive=min_positive)


def _sample_rows(data: _Prepared, *, loss: str, min_positive: float) -> np.ndarray:
    """Training rows that are samples: every pair for the generalized loss, else those with y >= min_positive."""
    rows = np.flatnonzero(data.train if loss == "generalized" else data.train & (data.y >= min_positive))
    if len(rows) == 0:
        raise TextTableError(
            f"no training pair has a soft label >= min_positive={min_positive}",
            fix="lower min_positive or check the labels and soft_labels mapping",
        )
    return rows


class _Sampler:
    """Vectorised negative sampling and masking over the training rows."""

    def __init__(self, data: _Prepared, sample_rows: np.ndarray):
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
def _torch_settings(threads: int | None):
    old_threads, old_det = torch.get_num_threads(), torch.are_deterministic_algorithms_enabled()
    torch.set_num_threads(threads or available_cores())
    torch.use_deterministic_algorithms(True)
    try:
        yield
    finally:
        torch.set_num_threads(old_threads)
        torch.use_deterministic_algorithms(old_det)


def _encode_rows(tower, hasher, tokens, rows, *, normalize: bool = True):
    """Vectors of the distinct ``rows`` (L2-normalised unless ``normalize=False``: dot scoring) and
    the index of each row's vector."""
    uniq, inv = np.unique(rows, return_inverse=True)
    vectors = tower(tower.prepare(hasher, tokens.take(uniq)))
    if normalize:
        vectors = F.normalize(vectors, dim=1)
    return vectors, torch.from_numpy(inv.reshape(np.shape(rows)))


def _validation_ndcg(model, hasher, q_tokens, d_tokens, data: _Prepared) -> float:
    val = np.flatnonzero(~data.train)
    if len(val) == 0:
        return float("nan")
    model.eval()
    with torch.inference_mode():
        scores = np.zeros(len(val), dtype=np.float64)
        for start in range(0, len(val), 4096):
            rows = val[start : start + 4096]
            unit = model.normalized
            qv, qi = _encode_rows(model.tower("query"), hasher, q_tokens, data.q_idx[rows], normalize=unit)
            dv, di = _encode_rows(model.tower("doc"), hasher, d_tokens, data.d_idx[rows], normalize=unit)
            scores[start : start + len(rows)] = (qv[qi] * dv[di]).sum(1).numpy()
    model.train()
    return ndcg_at(scores, data.rel[val], data.q_idx[val], k=10)


def _make_optimizer(name: str, params, lr: float | None):
    if name == "adam":
        return torch.optim.Adam(params, lr=1e-3 if lr is None else lr, fused=True)
    if name == "sgd":
        return torch.optim.SGD(params, lr=0.1 if lr is None else lr, momentum=0.9, fused=True)
    raise ValueError(f"optimizer must be one of {OPTIMIZERS}, got {name!r}")


def _write_checkpoint(path, *, model, best_state, optimizer, rng, header):
    tensors = {f"model.{k}": v for k, v in model.state_dict().items()}
    tensors.update({f"best.{k}": v for k, v in best_state.items()})
    for i, state in optimizer.state_dict()["state"].items():
        tensors.update({f"optim.{i}.{name}": torch.as_tensor(v) for name, v in state.items()})
    tensors["torch_rng"] = torch.get_rng_state()
    write_bundle(path, kind="checkpoint", header={**header, "numpy_rng": rng.bit_generator.state}, tensors=tensors)


def _read_checkpoint(path, *, params, data_sha, model, optimizer):
    header, tensors = read_bundle(path, kind="checkpoint")
    if header.get("params") != params or header.get("data_sha256") != data_sha:
        raise ModelFileError(
            "checkpoint was written for other training data or options",
            path=path,
            fix="resume with the same PAIRS file and options, or train from scratch",
        )

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
    except (KeyError, ValueError, RuntimeError) as exc:
        raise ModelFileError(
            f"checkpoint does not match the model: {' '.join(str(exc).split())[:300]}",
            path=path,
            fix="train from scratch",
        ) from None
    return header, best_state


@dataclass
class _Run:
    """Progress of an epoch loop: history, best epoch, its weights, and the next epoch to run."""

    history: list
    best: dict
    best_state: dict
    start: int


def _begin(net, opt, rng, *, resume, params: dict, data_sha: str, validate, seconds: float = 0.0):
    """A fresh run (epoch 0 = validation of the initial weights) or the state of ``resume``.

    Returns ``(run, checkpoint header or None)``.
    """
    if resume is not None:
        state, best_state = _read_checkpoint(resume, params=params, data_sha=data_sha, model=net, optimizer=opt)
        rng.bit_generator.state = state["numpy_rng"]
        return _Run(state["history"], state["best"], best_state, state["epoch"] + 1), state
    first = validate()
    return _Run(
        [{"epoch": 0, "train_loss": None, "val_ndcg@10": first, "seconds": seconds}],
        {"epoch": 0, "val_ndcg@10": first, "stale": 0},
        {k: v.clone() for k, v in net.state_dict().items()},
        1,
    ), None


@dataclass
class _Loop:
    """What an epoch loop trains: the network and its optimizer, the generator shuffling the training ``rows``,
    ``step(batch) -> loss`` per mini-batch and ``validate() -> score`` per epoch."""

    net: torch.nn.Module
    opt: torch.optim.Optimizer
    rng: np.random.Generator
    rows: np.ndarray
    step: Callable
    validate: Callable


def _fit_epochs(
    loop: _Loop, run: _Run, cfg, *, checkpoint=None, header=None, desc: str = "epoch", progress: bool = False
) -> None:
    """The epoch loop every trainer shares.

    Each epoch shuffles the rows, calls ``step`` per mini-batch of ``cfg.batch_size`` and steps the optimizer
    every ``cfg.accumulate`` (default 1) mini-batches, then scores ``validate()``; the best epoch's weights are
    kept, training stops after ``cfg.patience`` epochs without improvement (when ``cfg.val_fraction`` holds
    out validation pairs), and a resumable checkpoint is rewritten after every epoch. Ends with the best
    weights in ``net``.
    """
    net, opt, rng, rows = loop.net, loop.opt, loop.rng, loop.rows
    epochs, batch_size, patience = cfg.epochs, cfg.batch_size, cfg.patience
    early_stopping, accumulate = cfg.val_fraction > 0, getattr(cfg, "accumulate", 1)
    for epoch in range(run.start, epochs + 1):
        if run.best["stale"] >= patience and early_stopping:
            break
        t0 = time.perf_counter()
        order = rng.permutation(rows)
        n_batches = -(-len(order) // batch_size)
        total = 0.0
        bar = tqdm(
            total=len(order),
            desc=f"{desc} {epoch}/{epochs}",
            unit="pair",
            disable=not progress,
            file=sys.stderr,
            leave=False,
        )
        opt.zero_grad(set_to_none=True)
        for b in range(n_batches):
            batch = order[b * batch_size : (b + 1) * batch_size]
            step_loss = loop.step(batch)
            (step_loss / accumulate if accumulate > 1 else step_loss).backward()
            if (b + 1) % accumulate == 0 or b + 1 == n_batches:
                opt.step()
                opt.zero_grad(set_to_none=True)
            total += step_loss.item()
            bar.update(len(batch))
            bar.set_postfix(loss=f"{total / (b + 1):.4f}", val_ndcg10=f"{run.best['val_ndcg@10']:.4f}")
        bar.close()
        val_score = loop.validate()
        run.history.append(
            {
                "epoch": epoch,
                "train_loss": total / n_batches,
                "val_ndcg@10": val_score,
                "seconds": round(time.perf_counter() - t0, 3),
            }
        )
        _log.info(
            "%s %d/%d: train loss %.4f, validation NDCG@10 %.4f (%.1f s)",
            desc,
            epoch,
            epochs,
            total / n_batches,
            val_score,
            run.history[-1]["seconds"],
        )
        if not early_stopping or np.isnan(run.best["val_ndcg@10"]) or val_score > run.best["val_ndcg@10"]:
            run.best = {"epoch": epoch, "val_ndcg@10": val_score, "stale": 0}
            run.best_state = {k: v.clone() for k, v in net.state_dict().items()}
        else:
            run.best["stale"] += 1
        if checkpoint is not None:
            _write_checkpoint(
                checkpoint,
                model=net,
                best_state=run.best_state,
                optimizer=opt,
                rng=rng,
                header={**header, "epoch": epoch, "history": run.history, "best": run.best},
            )
    net.load_state_dict(run.best_state)
    net.eval()


def train_encoder(
    pairs: pd.DataFrame,
    config: EncoderConfig | None = None,
    *,
    teacher=None,
    init: Encoder | None = None,
    threads: int | None = None,
    checkpoint=None,
    resume=None,
    progress: bool | None = None,
    **options,
) -> tuple[Encoder, list[dict]]:
    """Train a DSSM or CLSM encoder; returns the encoder (best validation epoch) and the history.

    Parameters
    ----------
    pairs : DataFrame with columns ``query``, ``doc``, ``label`` (grade or click count) and
        optionally ``qid`` (groups queries for the validation split and NDCG).
    config : an :class:`~ltrfeat.features.encoders.config.EncoderConfig` (default: its defaults).
    **options : settings of the config to replace, e.g. ``epochs=5`` (checked like the config itself):

        - model : ``"clsm"`` or ``"dssm"``.
        - loss : ``"softmax"`` (DSSM/CLSM), ``"generalized"`` (GDSSM, soft labels) or ``"hinge"`` (DSE).
        - score : relevance R(Q, D) trained, validated and served: ``"cosine"`` (DSSM/CLSM) or the raw
          ``"dot"`` product of the semantic vectors (DSE; see "Scores" in the module docstring).
        - epochs : maximum number of passes over the samples.
        - negatives : J, random corpus documents per sample.
        - hard_negatives : same-query lower-labelled documents per sample.
        - in_batch : also use the other samples' documents of the mini-batch as negatives.
        - gamma : softmax smoothing factor (softmax and generalized losses), multiplying R(Q, D); None for
          10.0 with cosine and 1.0 with dot.
        - margin : hinge loss margin, in units of R(Q, D).
        - batch_size : samples per mini-batch.
        - optimizer : ``"adam"`` (lr 1e-3 by default) or ``"sgd"`` (momentum 0.9, lr 0.1 by default).
        - lr : learning rate; None for the optimizer's default above.
        - soft_labels : ``"linear"``, ``"clicks"`` or ``"identity"`` (see the module docstring).
        - click_scale : s in ``phi(c) = c / (c + s)`` for ``soft_labels="clicks"``.
        - min_positive : soft label from which a pair is a positive for the softmax and hinge losses.
        - val_fraction : share of queries held out for early stopping (0: none, train all epochs).
        - patience : epochs without validation improvement before stopping.
        - min_count, n_buckets : trigram hashing options (:class:`TrigramHasher`).
        - shared : one tower for queries and documents instead of two.
        - sizes : layer sizes, e.g. ``{"hidden": [300, 300], "out": 128}`` (DSSM) or
          ``{"context": 1, "conv": 300, "out": 128}`` (CLSM).
        - pretrain : ``"rbm"`` (DSSM only, DSE): initialise the towers with greedy layer-wise RBMs trained by
          CD-1 on the training texts (:func:`ltrfeat.features.encoders.rbm.pretrain_dssm`) before the
          discriminative training; None for random initialisation.
        - distill_epochs, distill_lr : epochs and Adam learning rate of the distillation stage (chosen on Home
          Depot validation queries; 16 epochs raised the agreement but not NDCG).
        - distill_weight : with a teacher, keep its in-batch KL term (the distillation loss over the batch's
          queries and positive documents) in the ranking loss with this weight, so the fine-tuning on the
          judgments does not forget the teacher; 0 (default): the ranking loss alone.
        - seed : seeds weights and sampling.
    teacher : distil a sentence-transformer before the ranking loss (:mod:`ltrfeat.features.encoders.distill`):
        ``"sbert"`` (the packaged MiniLM), ``"sbert=PATH"`` or a model directory, or any object with
        ``encode(texts, side=)``. The towers first fit the teacher's in-batch cosine matrices on the
        training pairs (recorded as the training record's ``pretrain``); a resumed run does not redo it.
    init : an :class:`Encoder` to start from (e.g. pre-trained on a collection's own text,
        :func:`ltrfeat.features.encoders.weak.span_pairs`): its trigram vocabulary, towers and weights are
        kept and trained further; the config's ``model``, ``score`` and ``shared`` must match it, and its
        ``sizes``, ``min_count`` and ``n_buckets`` are not used. Recorded as the training record's ``init``.
    threads : torch threads (default: the cores available to the process).
    checkpoint : path rewritten after every epoch (a resumable ``.ltrenc`` checkpoint).
    resume : a checkpoint to continue from; the result equals an uninterrupted run.
    progress : show a progress bar (default: when stderr is a terminal and ``CI`` is unset).
    """
    cfg = EncoderConfig.build(config, options)
    if teacher is not None and cfg.pretrain is not None:
        raise ValueError("teacher needs pretrain=None")
    if cfg.distill_weight and teacher is None:
        raise ValueError("distill_weight needs a teacher")
    if init is not None:
        _check_init(init, cfg, teacher)
    model, loss, score, seed, gamma = cfg.model, cfg.loss, cfg.score, cfg.seed, cfg.resolved_gamma
    if progress is None:
        progress = show_progress()
    pairs = _validate(pairs)
    params = _record_params(cfg, teacher)
    if init is not None:
        params["init"] = {"data_sha256": init.training.get("data_sha256"), "params": init.training.get("params")}
    data_sha, data, rows = _training_data(
        pairs,
        loss=loss,
        soft_labels=cfg.soft_labels,
        click_scale=cfg.click_scale,
        min_positive=cfg.min_positive,
        val_fraction=cfg.val_fraction,
        seed=seed,
    )

    with _torch_settings(threads):
        torch.manual_seed(seed)
        rng = np.random.default_rng(seed)
        tr = np.flatnonzero(data.train)
        train_texts = [data.queries[i] for i in np.unique(data.q_idx[tr])] + [
            data.docs[i] for i in np.unique(data.d_idx[tr])
        ]
        if init is None:
            hasher = TrigramHasher(min_count=cfg.min_count, n_buckets=cfg.n_buckets).fit(train_texts)
            net = TwoTowerModel(
                model_config(model, hasher.n_features_, shared=cfg.shared, score=score, **(cfg.sizes or {}))
            )
        else:
            # a fresh hasher: the init's own has numbered the words it met so far, and that numbering changes
            # the order of float sums, so a fine-tuning would depend on what the init encoder scored before
            hasher, net = TrigramHasher.from_json(init.hasher.to_json()), copy.deepcopy(init.model)
            net.train()
        pretrained = None
        if cfg.pretrain == "rbm" and resume is None:
            from ltrfeat.features.encoders.rbm import pretrain_dssm

            pretrained = pretrain_dssm(net, hasher, train_texts, seed=seed, progress=progress)
        if teacher is not None and resume is None:
            from ltrfeat.features.encoders.distill import distill

            pretrained = distill(
                net,
                hasher,
                [data.queries[i] for i in data.q_idx[tr]],
                [data.docs[i] for i in data.d_idx[tr]],
                teacher,
                epochs=cfg.distill_epochs,
                lr=cfg.distill_lr,
                seed=seed,
                progress=progress,
            )
        opt = _make_optimizer(cfg.optimizer, net.parameters(), cfg.lr)
        q_tokens, d_tokens = hasher.tokenize(data.queries), hasher.tokenize(data.docs)
        kept = None
        if cfg.distill_weight:
            from ltrfeat.features.encoders.distill import KeptTeacher

            kept = KeptTeacher(
                teacher,
                data.queries,
                data.docs,
                q_rows=data.q_idx[tr],
                d_rows=data.d_idx[tr],
                weight=cfg.distill_weight,
            )
        sampler = _Sampler(data, rows)
        header = {
            "model": net.config,
            "hasher": hasher.to_json(),
            "params": params,
            "data_sha256": data_sha,
            **({"pretrain": pretrained} if pretrained else {}),
        }
        validate = lambda: _validation_ndcg(net, hasher, q_tokens, d_tokens, data)  # noqa: E731
        run, state = _begin(net, opt, rng, resume=resume, params=params, data_sha=data_sha, validate=validate)
        if state is not None and state.get("pretrain"):
            pretrained = state["pretrain"]
            header = {**header, "pretrain": pretrained}
        step = _BatchLoss(
            net,
            hasher,
            q_tokens,
            d_tokens,
            data,
            sampler,
            rng,
            idx_of=rows,
            loss=loss,
            negatives=cfg.negatives,
            hard=cfg.hard_negatives,
            in_batch=cfg.in_batch,
            gamma=gamma,
            margin=cfg.margin,
            kept=kept,
        )
        _fit_epochs(
            _Loop(net, opt, rng, rows, step=step, validate=validate),
            run,
            cfg,
            checkpoint=checkpoint,
            header=header,
            progress=progress,
        )
    history, best = run.history, run.best
    record = {
        "params": params,
        "data_sha256": data_sha,
        "n_pairs": int(len(pairs)),
        "n_train_pairs": int(data.train.sum()),
        "n_validation_pairs": int((~data.train).sum()),
        "n_samples": int(len(rows)),
        "best_epoch": best["epoch"],
        "validation": {"ndcg@10": best["val_ndcg@10"]},
        "history": history,
        **({"pretrain": pretrained} if pretrained else {}),
        **data_record(pairs),
        **trained_queries_record(pairs),
    }
    return Encoder(hasher, net, training=record), history


def _check_init(init, cfg: EncoderConfig, teacher) -> None:
    if not isinstance(init, Encoder):
        raise TypeError(f"init must be an Encoder (a CLSM/DSSM bundle), got {type(init).__name__}")
    have = {
        "model": init.model.config["architecture"],
        "score": init.model.score,
        "shared": bool(init.model.config["shared"]),
    }
    want = {"model": cfg.model, "score": cfg.score, "shared": cfg.shared}
    differ = [k for k in have if have[k] != want[k]]
    if differ:
        raise OptionError(
            f"init encoder has {', '.join(f'{k}={have[k]!r}' for k in differ)} but the config asks "
            f"for {', '.join(f'{k}={want[k]!r}' for k in differ)}; train with the init's settings"
        )
    if teacher is not None or cfg.pretrain is not None:
        raise OptionError("init replaces pre-training: give init, or a teacher / pretrain, not both")


def _record_params(cfg: EncoderConfig, teacher) -> dict:
    """The training record's ``params``: the config's settings in the layout every bundle and checkpoint has
    had (``gamma`` resolved; ``score``, ``pretrain`` and the distillation settings only when they apply), so
    older checkpoints resume and cache keys stay put."""
    params = {
        "model": cfg.model,
        "loss": cfg.loss,
        "epochs": cfg.epochs,
        "negatives": cfg.negatives,
        "hard_negatives": cfg.hard_negatives,
        "in_batch": cfg.in_batch,
        "gamma": cfg.resolved_gamma,
        "margin": cfg.margin,
        "batch_size": cfg.batch_size,
        "optimizer": cfg.optimizer,
        "lr": cfg.lr,
        "soft_labels": cfg.soft_labels,
        "click_scale": cfg.click_scale,
        "min_positive": cfg.min_positive,
        "val_fraction": cfg.val_fraction,
        "patience": cfg.patience,
        "min_count": cfg.min_count,
        "n_buckets": cfg.n_buckets,
        "shared": cfg.shared,
        "sizes": dict(cfg.sizes or {}),
        "seed": cfg.seed,
        **({"pretrain": cfg.pretrain} if cfg.pretrain else {}),
        **({"score": cfg.score} if cfg.score != "cosine" else {}),
    }
    if teacher is not None:
        from ltrfeat.features.encoders.distill import describe_teacher

        params.update(
            teacher=describe_teacher(teacher),
            distill_epochs=cfg.distill_epochs,
            distill_lr=cfg.distill_lr,
            **({"distill_weight": cfg.distill_weight} if cfg.distill_weight else {}),
        )
    return params


@dataclass(frozen=True)
class _BatchLoss:
    """The ranking loss of one mini-batch (``batch`` holds row ids of ``data``), plus the kept teacher term if
    any: the ``step`` of :func:`_fit_epochs` for the CLSM/DSSM and MiniLM trainers."""

    net: Any
    hasher: Any  # None: the towers take texts (MiniLM)
    q_tokens: Any
    d_tokens: Any
    data: _Prepared
    sampler: _Sampler
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
        qv, qi = _encode_rows(net.tower("query"), self.hasher, self.q_tokens, q, normalize=net.normalized)
        dv, di = _encode_rows(
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
        if self.loss == "softmax":
            value = losses.softmax_loss(pos, neg, gamma=self.gamma, mask=mask)
        elif self.loss == "generalized":
            value = losses.generalized_loss(pos, neg, torch.from_numpy(y), gamma=self.gamma, mask=mask)
        else:
            value = losses.hinge_loss(pos, neg, margin=self.margin, mask=mask)
        if self.kept is None:
            return value
        return value + self.kept.loss(qb, dv[di[:, 0]], q, d)
