"""The distillation's embedding-level loss: each text's student vector regressed onto its teacher vector."""

from __future__ import annotations

import torch

from ltrfeat.encoders.losses.base import sample_mean


def vector_loss(student: torch.Tensor, teacher: torch.Tensor, *, weight: torch.Tensor | None = None) -> torch.Tensor:
    """``1 - cos(s_i, t_i)`` averaged over rows (weighted by ``weight`` when given): each text's student vector
    (B, L) regressed onto its teacher vector (B, L) (Reimers & Gurevych 2020), so every cosine between the student's
    vectors approaches the teacher's, not only the in-batch ones."""
    if student.shape != teacher.shape:
        raise ValueError(f"student vectors {tuple(student.shape)} and teacher vectors {tuple(teacher.shape)} differ")
    cosines = torch.nn.functional.cosine_similarity(student, teacher, dim=1)
    if weight is None:
        return 1 - cosines.mean()
    return 1 - sample_mean(cosines, weight)
