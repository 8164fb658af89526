"""A two-tower model (towers with ``prepare(hasher, texts)``) in training: its mini-batch loss and its validation.

Shared by the CLSM/DSSM trainer (hashed trigram towers) and MiniLM fine-tuning (``hasher`` None: the towers take
texts): R(Q, D) is the dot product of the two towers' vectors, L2-normalised first unless the model scores by the raw
dot product (``model.normalized``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from ltrfeat.encoders.losses.base import RankingLoss
from ltrfeat.encoders.negatives import Sampler
from ltrfeat.encoders.training_pairs import Prepared
from ltrfeat.encoders.validation import ndcg_at, ndcg_per_query

__all__ = ["BatchLoss", "encode_rows", "validation_ndcg"]


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
    ``validate`` of a training that may keep its start (:func:`~ltrfeat.encoders.epochs.fit_epochs`)."""
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


@dataclass(frozen=True)
class BatchLoss:
    """The ranking loss of one mini-batch (``batch`` holds row ids of ``data``), plus the kept teacher term if
    any: the ``step`` of :func:`~ltrfeat.encoders.epochs.fit_epochs` for the CLSM/DSSM and MiniLM trainers."""

    net: Any
    hasher: Any  # None: the towers take texts (MiniLM)
    q_tokens: Any
    d_tokens: Any
    data: Prepared
    sampler: Sampler
    rng: np.random.Generator
    idx_of: np.ndarray
    loss: RankingLoss
    negatives: int
    hard: int
    in_batch: bool
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
        value = self.loss(pos, neg, mask=mask, labels=torch.from_numpy(y), weight=weight)
        if self.kept is None:
            return value
        return value + self.kept.loss(qb, dv[di[:, 0]], q, d)
