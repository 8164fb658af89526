"""Training losses over a positive score and a (masked) set of negative scores per sample.

Every function takes ``pos`` (B,) -- R(Q, D) of each sample's own document -- and ``neg``
(B, J) -- R(Q, D') of its negative candidates -- with an optional boolean ``mask`` (B, J)
marking the real candidates (False entries are ignored). Losses are averaged over samples, or with ``weight`` (B,)
(e.g. inverse propensities of clicks, :mod:`ltrfeat.clicks.debias`) a weighted average ``sum(w l) / sum(w)``.
:func:`vector_loss` is the distillation's embedding-level loss (student vectors onto a teacher's).
"""

from __future__ import annotations

import torch


# Masked candidates get this logit instead of -inf: exp() of it is 0 all the same, but a row
# with no candidate left keeps finite values and gradients (no inf - inf = nan).
_MASKED = -1e30


def _masked_logits(pos, neg, gamma, mask):
    neg = gamma * neg
    if mask is not None:
        neg = neg.masked_fill(~mask, _MASKED)
    return gamma * pos, neg


def _has_negative(neg, mask):
    return torch.ones(neg.shape[0], dtype=torch.bool) if mask is None else mask.any(dim=1)


def log_posterior(pos, neg, *, gamma: float, mask=None) -> tuple[torch.Tensor, torch.Tensor]:
    """``ln P(D|Q)`` and ``ln(1 - P(D|Q))`` for ``P = softmax(gamma * [pos, neg])[0]``, computed stably."""
    pos_logit, neg_logits = _masked_logits(pos, neg, gamma, mask)
    log_neg = torch.logsumexp(neg_logits, dim=1)
    log_all = torch.logaddexp(pos_logit, log_neg)
    return pos_logit - log_all, log_neg - log_all


def _average(per_sample, weight) -> torch.Tensor:
    if weight is None:
        return per_sample.mean()
    weight = weight.to(per_sample.dtype)
    return (weight * per_sample).sum() / weight.sum().clamp(min=torch.finfo(per_sample.dtype).tiny)


def softmax_loss(pos, neg, *, gamma: float = 10.0, mask=None, weight=None) -> torch.Tensor:
    """DSSM/CLSM loss ``-ln P(D+|Q)``, ``P`` the softmax with smoothing ``gamma`` over D+ and its negatives."""
    log_p, _ = log_posterior(pos, neg, gamma=gamma, mask=mask)
    return _average(-log_p, weight)


def generalized_loss(pos, neg, y, *, gamma: float = 10.0, mask=None, weight=None) -> torch.Tensor:
    """GDSSM loss ``-[y ln P(D|Q) + (1 - y) ln(1 - P(D|Q))]`` for soft labels ``y`` in [0, 1].

    Equals :func:`softmax_loss` when every ``y`` is 1. Samples without any negative candidate
    (where ``ln(1 - P)`` is -inf) are left out of the average.
    """
    log_p, log_not_p = log_posterior(pos, neg, gamma=gamma, mask=mask)
    keep = _has_negative(neg, mask)
    y = y.to(log_p.dtype)
    # where() keeps the -inf of samples without negatives out of the value and the gradient
    log_not_p = torch.where(keep, log_not_p, torch.zeros_like(log_not_p))
    per_sample = -(y * log_p + (1 - y) * log_not_p)
    if weight is not None:
        return _average(per_sample[keep], weight[keep])
    return per_sample[keep].sum() / keep.sum().clamp(min=1)


def hinge_loss(pos, neg, *, margin: float = 1.0, mask=None) -> torch.Tensor:
    """DSE margin ranking loss ``max(0, margin - s(q, d+) + s(q, d-))``, averaged over (q, d+, d-) triples."""
    per_pair = torch.relu(margin - pos[:, None] + neg)
    if mask is None:
        return per_pair.mean()
    return (per_pair * mask).sum() / mask.sum().clamp(min=1)


def vector_loss(student, teacher) -> torch.Tensor:
    """Embedding-level distillation ``1 - cos(s_i, t_i)``, averaged over rows: each text's student vector (B, L)
    regressed onto its teacher vector (B, L) (Reimers & Gurevych 2020), so every cosine between the student's
    vectors approaches the teacher's, not only the in-batch ones."""
    if student.shape != teacher.shape:
        raise ValueError(f"student vectors {tuple(student.shape)} and teacher vectors {tuple(teacher.shape)} differ")
    return 1 - torch.nn.functional.cosine_similarity(student, teacher, dim=1).mean()
