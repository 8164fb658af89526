"""The DSSM / CLSM loss: ``-ln P(D+|Q)``, the softmax posterior of each sample's own document."""

from __future__ import annotations

import dataclasses

import torch

from ltrfeat.encoders.losses.base import RankingLoss, log_posterior, sample_mean


@dataclasses.dataclass(frozen=True)
class SoftmaxLoss(RankingLoss):
    """``-ln P(D+|Q)``, ``P`` the softmax with smoothing factor ``gamma`` over D+ and its negatives."""

    name = "softmax"
    gamma: float = 10.0

    def __call__(self, pos, neg, *, mask=None, labels=None, weight=None) -> torch.Tensor:
        log_p, _ = log_posterior(pos, neg, gamma=self.gamma, mask=mask)
        return sample_mean(-log_p, weight)
