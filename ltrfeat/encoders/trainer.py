"""The skeleton every encoder trainer runs: one session, one loop, one training record.

A trainer (:func:`~ltrfeat.encoders.training.train_encoder`, :func:`~ltrfeat.encoders.
sbert_training.train_sbert`, :func:`~ltrfeat.encoders._deepmatch.train_deepmatch`, or a new kind's)
writes only what is its own -- the network, the optimizer, the mini-batch ``step`` (scores handed to a loss object,
:mod:`ltrfeat.encoders.losses`) and ``validate`` -- between these steps:

1. :func:`~ltrfeat.encoders.training_pairs.validate_pairs` and
   :func:`~ltrfeat.encoders.training_pairs.training_data`: soft labels, the validation split, the samples.
2. Inside :func:`training_session` (threads, deterministic algorithms, the torch seed; it yields the generator that
   shuffles the samples and draws their negatives, :class:`~ltrfeat.encoders.negatives.Sampler`) it builds
   its network and a :class:`~ltrfeat.encoders.epochs.Loop`, and :func:`train_loop` runs it: epoch 0 or
   the checkpoint to resume, the epochs with their validation checkpoints, early stopping, the keep-start rule, a
   resumable checkpoint after every epoch and the progress bar (:mod:`~ltrfeat.encoders.epochs`).
3. :func:`trained_record`: the record every trained model carries (``model.training``).

Reproducibility: the seed fixes the initial weights and every sampled negative; with the same seed, data and thread
count the result is bit-identical, also when resumed from a checkpoint.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import torch

from ltrfeat.core.cores import available_cores
from ltrfeat.core.duplicates import data_record
from ltrfeat.encoders.config import OPTIMIZERS
from ltrfeat.encoders.epochs import Loop, Run, begin_run, fit_epochs
from ltrfeat.encoders.training_pairs import Prepared
from ltrfeat.encoders.leakage import trained_queries_record

__all__ = ["Resumable", "make_optimizer", "torch_settings", "train_loop", "trained_record", "training_session"]


@contextlib.contextmanager
def torch_settings(threads: int | None) -> Iterator[None]:
    """Run the block with ``threads`` torch threads (None: the available cores) and deterministic algorithms."""
    old_threads, old_det = torch.get_num_threads(), torch.are_deterministic_algorithms_enabled()
    torch.set_num_threads(threads or available_cores())
    torch.use_deterministic_algorithms(True)
    try:
        yield
    finally:
        torch.set_num_threads(old_threads)
        torch.use_deterministic_algorithms(old_det)


@contextlib.contextmanager
def training_session(threads: int | None, seed: int) -> Iterator[np.random.Generator]:
    """:func:`torch_settings` with torch seeded by ``seed``; yields the training's generator (seeded alike)."""
    with torch_settings(threads):
        torch.manual_seed(seed)
        yield np.random.default_rng(seed)


def make_optimizer(name: str, params, lr: float | None) -> torch.optim.Optimizer:
    """Adam (default lr 1e-3) or SGD with momentum 0.9 (default lr 0.1)."""
    if name == "adam":
        return torch.optim.Adam(params, lr=1e-3 if lr is None else lr, fused=True)
    if name == "sgd":
        return torch.optim.SGD(params, lr=0.1 if lr is None else lr, momentum=0.9, fused=True)
    raise ValueError(f"optimizer must be one of {OPTIMIZERS}, got {name!r}")


@dataclass(frozen=True)
class Resumable:
    """What a training's checkpoints are written and checked by: the record's ``params`` and data hash
    (a checkpoint of other ones is refused), the checkpoint ``header`` (the model's description), the ``checkpoint``
    path to rewrite after every epoch and a checkpoint to ``resume`` (None: none)."""

    params: dict
    data_sha: str
    header: dict
    checkpoint: Any = None
    resume: Any = None


def train_loop(
    loop: Loop,
    cfg,
    resumable: Resumable,
    *,
    progress: bool = False,
    keep_start: float | None = None,
    desc: str = "epoch",
    start_validate: Callable | None = None,
    seconds: float = 0.0,
) -> tuple[Run, dict | None]:
    """Train ``loop`` with the settings of ``cfg`` (epochs, batch size, patience, validation): epoch 0 (validated by
    ``start_validate``, default ``loop.validate``; ``seconds`` spent before it) or the checkpoint to resume, then
    :func:`~ltrfeat.encoders.epochs.fit_epochs`. ``keep_start``: the keep-start rule's margin for a
    training that starts from a model worth keeping (None: a from-scratch one). Ends with the kept weights in
    ``loop.net``; returns the run and the resumed checkpoint's header (None: a fresh run)."""
    run, state = begin_run(
        loop.net,
        loop.opt,
        loop.rng,
        resume=resumable.resume,
        params=resumable.params,
        data_sha=resumable.data_sha,
        validate=start_validate or loop.validate,
        seconds=seconds,
        keep_start=keep_start is not None,
    )
    header = resumable.header
    if state is not None and state.get("pretrain"):
        # a resumed run does not redo its pre-training: the checkpoint's record of it is carried on
        header = {**header, "pretrain": state["pretrain"]}
    loop.net.train()
    fit_epochs(
        loop,
        run,
        cfg,
        checkpoint=resumable.checkpoint,
        header=header,
        desc=desc,
        progress=progress,
        keep_start=keep_start,
    )
    return run, state


def trained_record(
    pairs: pd.DataFrame,
    data: Prepared,
    rows: np.ndarray,
    run: Run,
    resumable: Resumable,
    *,
    sizes: dict | None = None,
    validation: dict | None = None,
    extra: dict | None = None,
) -> dict:
    """The training record of a trained model: params, data hash, pair and sample counts (and the trainer's other
    ``sizes``), the kept checkpoint, its validation NDCG@10 (and the trainer's other ``validation`` figures), the
    keep-start decision if any, the history, the trainer's ``extra`` entries, and what the table and its queries
    were (for duplicate and leakage checks)."""
    return {
        "params": resumable.params,
        "data_sha256": resumable.data_sha,
        "n_pairs": int(len(pairs)),
        "n_train_pairs": int(data.train.sum()),
        "n_validation_pairs": int((~data.train).sum()),
        "n_samples": int(len(rows)),
        **(sizes or {}),
        "best_epoch": run.best["epoch"],
        "validation": {"ndcg@10": run.best["val_ndcg@10"], **(validation or {})},
        **({"keep_start": run.kept} if run.kept is not None else {}),
        "history": run.history,
        **(extra or {}),
        **data_record(pairs),
        **trained_queries_record(pairs),
    }
