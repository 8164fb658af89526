"""The GDSSM loss: the softmax posterior against graded (soft) labels, every judged pair a sample."""

from __future__ import annotations

import dataclasses

import torch

from ltrfeat.encoders.losses.base import RankingLoss, log_posterior, sample_mean


@dataclasses.dataclass(frozen=True)
class GeneralizedLoss(RankingLoss):
    """``-[y ln P(D|Q) + (1 - y) ln(1 - P(D|Q))]`` for soft labels ``y`` in [0, 1], ``P`` as in the softmax loss.

    Equals the softmax loss when every ``y`` is 1. Samples without any negative candidate (where ``ln(1 - P)`` is
    -inf) are left out of the mean.
    """

    name = "generalized"
    every_pair = True
    gamma: float = 10.0

    def __call__(self, pos, neg, *, mask=None, labels=None, weight=None) -> torch.Tensor:
        if labels is None:
            raise ValueError("the generalized loss needs the samples' soft labels")
        log_p, log_not_p = log_posterior(pos, neg, gamma=self.gamma, mask=mask)
        keep = torch.ones(neg.shape[0], dtype=torch.bool) if mask is None else mask.any(dim=1)
        y = labels.to(log_p.dtype)
        # where() keeps the -inf of samples without negatives out of the value and the gradient
        log_not_p = torch.where(keep, log_not_p, torch.zeros_like(log_not_p))
        return sample_mean(-(y * log_p + (1 - y) * log_not_p), weight, keep)
