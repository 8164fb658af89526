"""What every ranking loss is: a frozen dataclass of its settings, called on one mini-batch's scores.

The helpers here are the parts several losses share: the masked softmax posterior of the DSSM family and the
(weighted) mean over samples.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, ClassVar, TypeVar

import torch

__all__ = ["RankingLoss", "log_posterior", "sample_mean"]

L = TypeVar("L", bound="RankingLoss")

# Masked candidates get this logit instead of -inf: exp() of it is 0 all the same, but a row
# with no candidate left keeps finite values and gradients (no inf - inf = nan).
_MASKED = -1e30


@dataclasses.dataclass(frozen=True)
class RankingLoss:
    """A ranking loss over each sample's own document and its negative candidates.

    ``name`` is the loss's name in configs and commands; ``every_pair``: every judged pair is a sample, with its soft
    label (the generalized loss), instead of the pairs labelled a positive (soft label >= ``min_positive``).
    A subclass declares its settings as dataclass fields (named after the trainer's settings: ``gamma``,
    ``margin``) and implements :meth:`__call__`.
    """

    name: ClassVar[str]
    every_pair: ClassVar[bool] = False

    @classmethod
    def from_settings(cls: type[L], settings: Mapping[str, Any]) -> L:
        """The loss with the ``settings`` it has a field for; the others are not its own."""
        return cls(**{f.name: settings[f.name] for f in dataclasses.fields(cls) if f.name in settings})

    def __call__(
        self,
        pos: torch.Tensor,
        neg: torch.Tensor,
        *,
        mask: torch.Tensor | None = None,
        labels: torch.Tensor | None = None,
        weight: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """The loss of a mini-batch: ``pos`` (B,), ``neg`` (B, J), ``mask`` (B, J) True for a real candidate,
        ``labels`` (B,) soft labels in [0, 1], ``weight`` (B,) per-sample weights (None: all 1)."""
        raise NotImplementedError


def sample_mean(
    per_sample: torch.Tensor, weight: torch.Tensor | None, keep: torch.Tensor | None = None
) -> torch.Tensor:
    """Mean of ``per_sample`` over the samples ``keep`` selects (None: all), weighted by ``weight`` when given:
    ``sum w_i l_i / sum w_i``; 0 when nothing is kept."""
    if weight is None:
        if keep is None:
            return per_sample.mean()
        return per_sample[keep].sum() / keep.sum().clamp(min=1)
    weight = weight.to(per_sample.dtype)
    if keep is not None:
        per_sample, weight = per_sample[keep], weight[keep]
    return (weight * per_sample).sum() / weight.sum().clamp(min=torch.finfo(per_sample.dtype).tiny)


def log_posterior(
    pos: torch.Tensor, neg: torch.Tensor, *, gamma: float, mask: torch.Tensor | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """``ln P(D|Q)`` and ``ln(1 - P(D|Q))`` for ``P = softmax(gamma * [pos, neg])[0]``, computed stably."""
    neg_logits = gamma * neg
    if mask is not None:
        neg_logits = neg_logits.masked_fill(~mask, _MASKED)
    pos_logit = gamma * pos
    log_neg = torch.logsumexp(neg_logits, dim=1)
    log_all = torch.logaddexp(pos_logit, log_neg)
    return pos_logit - log_all, log_neg - log_all
