"""One cross-fitted encoder training as a worker process receives it: made by :mod:`ltrfeat.experiments.crossfit`,
run by :mod:`ltrfeat.experiments._encoder_pool`."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import pandas as pd


@dataclasses.dataclass
class TrainingTask:
    """spec : the :class:`~ltrfeat.encoders.spec.EncoderSpec` to train.
    table : its training pairs (``query``, ``doc``, ``label``).
    options : its training options, ``threads`` included.
    seed, cache, key : the training's seed, the cache directory (or None) and its key there (or None).
    start : the weights it starts from (an :class:`~ltrfeat.experiments._encoder_pool.FileStart`) or None.
    texts : ``{fold: (queries, docs)}``, the rows its encoder scores.
    teacher_dir, frozen_dir : MiniLM vectors (``+teacher``) and frozen-layer states (``sbert-ft``) to load first.
    save_to : where to write the encoder for a training that continues it (or None).
    after : the index of the task whose encoder this one starts from (or None).
    zero_shot : ``{fold: scores}`` of the run's zero-shot column on the same MiniLM base, for those rows (or None):
        the scores of a fine-tuning that kept that base unchanged (:func:`fold_scores`).
    start_scores : that column's scores of the rows of ``table`` (or None): a MiniLM fine-tuning that starts from
        that base unchanged validates its start from them instead of running it (``train_sbert``'s ``start_scores``).
    minilm_engine : the ablation's MiniLM engine (:mod:`~ltrfeat.encoders.sbert_onnx`), which also scores a
        fine-tuned MiniLM's rows (:mod:`~ltrfeat.encoders.sbert_top_onnx`).
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
    zero_shot: dict | None = None
    start_scores: np.ndarray | None = None
    minilm_engine: str = "auto"


def training_record(encoder) -> dict:
    """What the ablation keeps of a trained encoder's training record (sent back from a worker, cached beside its
    scores, shown in the report): its ``keep_start`` decision, or None (a training without a start to keep)."""
    return {"keep_start": (getattr(encoder, "training", None) or {}).get("keep_start")}


def fold_scores(encoder, texts: dict[str, tuple[list, list]], zero_shot: dict | None = None) -> dict:
    """``encoder``'s float32 scores of each fold's (queries, docs) ``texts``. A MiniLM fine-tuning that kept its
    base model unchanged (:func:`~ltrfeat.encoders.sbert_training.is_zero_shot`) takes ``zero_shot``'s
    scores of those rows, when given (the same model's, computed once for the zero-shot column); without them it is
    scored as that column would be (:func:`_zero_shot_model`) instead of through the whole torch model."""
    from ltrfeat.encoders.sbert_training import is_zero_shot

    if is_zero_shot(encoder):
        if zero_shot is not None:
            return {fold: np.asarray(zero_shot[fold], dtype=np.float32) for fold in texts}
        encoder = _zero_shot_model(encoder)
    return {fold: encoder.similarity(q, d).astype(np.float32) for fold, (q, d) in texts.items()}


def _zero_shot_model(encoder):
    """The zero-shot ``sbert`` scorer of a kept-start fine-tuning's base model: its vectors on the process's MiniLM
    engine (ONNX Runtime when installed, :mod:`~ltrfeat.encoders.sbert_onnx`), the same cosines to float
    rounding as the fine-tuning's torch pass at the base's own text length. Each fold's texts are encoded together,
    not through the process's teacher vector cache, whose batches depend on what the process (a pool worker, or
    this one) encoded before: the scores are the same bit for bit wherever the training ran."""
    from ltrfeat.encoders.distill import CachedTeacher

    base = encoder.training["params"].get("base")
    return CachedTeacher(f"sbert={base}" if base else "sbert", per_call=True)
