"""One cross-fitted encoder training as a worker process receives it: made by :mod:`ltrfeat.experiments.crossfit`,
run by :mod:`ltrfeat.experiments._encoder_pool`."""

from __future__ import annotations

import dataclasses
from typing import Any

import pandas as pd


@dataclasses.dataclass
class TrainingTask:
    """spec : the :class:`~ltrfeat.experiments.crossfit.EncoderSpec` to train.
    table : its training pairs (``query``, ``doc``, ``label``).
    options : its training options, ``threads`` included.
    seed, cache, key : the training's seed, the cache directory (or None) and its key there (or None).
    start : the weights it starts from (an :class:`~ltrfeat.experiments._encoder_pool.FileStart`) or None.
    texts : ``{fold: (queries, docs)}``, the rows its encoder scores.
    teacher_dir, frozen_dir : MiniLM vectors (``+teacher``) and frozen-layer states (``sbert-ft``) to load first.
    save_to : where to write the encoder for a training that continues it (or None).
    after : the index of the task whose encoder this one starts from (or None).
    """

    spec: Any
    table: pd.DataFrame
    options: dict
    seed: int
    cache: Any
    key: str | None
    start: Any
    texts: dict[str, tuple[list, list]]
    teacher_dir: str | None = None
    frozen_dir: str | None = None
    save_to: str | None = None
    after: int | None = None


def training_record(encoder) -> dict:
    """What the ablation keeps of a trained encoder's training record (sent back from a worker, cached beside its
    scores, shown in the report): its ``keep_start`` decision, or None (a training without a start to keep)."""
    return {"keep_start": (getattr(encoder, "training", None) or {}).get("keep_start")}
