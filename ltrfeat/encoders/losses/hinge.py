"""The DSE (and DeepMatch) margin ranking loss over (query, positive, negative) triples."""

from __future__ import annotations

import dataclasses

import torch

from ltrfeat.encoders.losses.base import RankingLoss


@dataclasses.dataclass(frozen=True)
class HingeLoss(RankingLoss):
    """``max(0, margin - s(q, d+) + s(q, d-))`` averaged over the (q, d+, d-) triples of real candidates; with
    ``weight``, each triple weighs as its sample does (all weights 1: the plain mean)."""

    name = "hinge"
    margin: float = 1.0

    def __call__(self, pos, neg, *, mask=None, labels=None, weight=None) -> torch.Tensor:
        per_pair = torch.relu(self.margin - pos[:, None] + neg)
        if weight is not None:
            counts = torch.ones_like(per_pair) if mask is None else mask.to(per_pair.dtype)
            counts = counts * weight.to(per_pair.dtype)[:, None]
            return (per_pair * counts).sum() / counts.sum().clamp(min=torch.finfo(per_pair.dtype).tiny)
        if mask is None:
            return per_pair.mean()
        return (per_pair * mask).sum() / mask.sum().clamp(min=1)
