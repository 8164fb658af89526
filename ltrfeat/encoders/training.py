"""Training a DSSM / CLSM two-tower encoder on judged or clicked (query, document) pairs.

Samples and soft labels (:mod:`~ltrfeat.encoders.training_pairs`), negatives
(:mod:`~ltrfeat.encoders.negatives`), the losses (:mod:`~ltrfeat.encoders.losses`) and the loop
with its validation, checkpoints and keep-start rule (:mod:`~ltrfeat.encoders.trainer`) are those every
trainer shares.

Scores
------
``score="cosine"`` (DSSM, CLSM): R(Q, D) is the cosine of the two semantic vectors, in [-1, 1].
``score="dot"`` (DSE): R(Q, D) is their raw dot product; with tanh outputs of width L it lies in
[-L, L] (L = 128: [-128, 128]), so the loss constants change meaning. The hinge ``margin`` is an
absolute gap in dot units: the paper's 1 is a small share of that range (with cosine, 1 is half of
[-1, 1] and rarely met), and the network can meet it partly by growing vector norms, bounded by the
tanh saturation. The softmax / generalized ``gamma`` multiplies the dot product: an inverse
temperature over a score up to L times wider than a cosine -- hence its default of 1.0 for dot
against 10.0 for cosine. Trees (LambdaMART) are invariant
to the scale of a feature, so either score is a usable ranker feature.

Reproducibility: the seed fixes the initial weights and every sampled negative; with the same
seed, data and thread count the result is bit-identical, also when resumed from a checkpoint.
"""

from __future__ import annotations

import copy
import dataclasses

import numpy as np
import pandas as pd

from ltrfeat.encoders.config import EncoderConfig
from ltrfeat.encoders.encoder import Encoder
from ltrfeat.encoders.epochs import Loop
from ltrfeat.encoders.losses import make_loss
from ltrfeat.encoders.model import TwoTowerModel, model_config
from ltrfeat.encoders.negatives import Sampler
from ltrfeat.encoders.pretraining import Pretraining
from ltrfeat.encoders.trainer import (
    Resumable,
    make_optimizer,
    train_loop,
    trained_record,
    training_session,
)
from ltrfeat.encoders.training_pairs import training_data, validate_pairs
from ltrfeat.encoders.two_tower import BatchLoss, validation_ndcg
from ltrfeat.core.errors import ParameterError
from ltrfeat.encoders.hashing import TrigramHasher
from ltrfeat.core.logs import show_progress


def train_encoder(
    pairs: pd.DataFrame,
    config: EncoderConfig | None = None,
    *,
    teacher=None,
    init: Encoder | None = None,
    threads: int | None = None,
    checkpoint=None,
    resume=None,
    progress: bool | None = None,
    **options,
) -> tuple[Encoder, list[dict]]:
    """Train a DSSM or CLSM encoder; returns the encoder (best validation epoch) and the history.

    Parameters
    ----------
    pairs : DataFrame with columns ``query``, ``doc``, ``label`` (grade or click count) and
        optionally ``qid`` (groups queries for the validation split and NDCG).
    config : an :class:`~ltrfeat.encoders.config.EncoderConfig` (default: its defaults).
    **options : settings of the config to replace, e.g. ``epochs=5``, checked like the config itself (each one
        described in :class:`~ltrfeat.encoders.config.EncoderConfig`).
    teacher : distil a sentence-transformer before the ranking loss (:mod:`ltrfeat.encoders.distill`):
        ``"sbert"`` (the packaged MiniLM), ``"sbert=PATH"`` or a model directory, or any object with
        ``encode(texts, side=)``. The towers first fit the teacher's in-batch cosine matrices on the
        training pairs (recorded as the training record's ``pretrain``); a resumed run does not redo it.
    init : an :class:`Encoder` to start from (e.g. pre-trained on a collection's own text,
        :func:`ltrfeat.encoders.weak.span_pairs`): its trigram vocabulary, towers and weights are
        kept and trained further; the config's ``model``, ``score`` and ``shared`` must match it, and its
        ``sizes``, ``min_count`` and ``n_buckets`` are not used. Recorded as the training record's ``init``.
        With a ``teacher`` too, the distillation starts from the init's weights (a ``+spans+teacher`` fold
        training distilling MiniLM's vectors of the fold's training queries, ``fold_distill_epochs``).
    threads : torch threads (default: the cores available to the process).
    checkpoint : path rewritten after every epoch (a resumable ``.ltrenc`` checkpoint).
    resume : a checkpoint to continue from; the result equals an uninterrupted run.
    progress : show a progress bar (default: when stderr is a terminal and ``CI`` is unset).
    """
    cfg = EncoderConfig.build(config, options)
    _check_starts(cfg, teacher, init)
    seed = cfg.seed
    loss = make_loss(cfg.loss, gamma=cfg.resolved_gamma, margin=cfg.margin)
    if progress is None:
        progress = show_progress()
    pairs = validate_pairs(pairs)
    keep = cfg.keep_start_margin if (init is not None or teacher is not None) and cfg.val_fraction > 0 else None
    cfg = dataclasses.replace(cfg, val_per_epoch=cfg.checks_per_epoch(keeps_start=keep is not None))
    params = _record_params(cfg, teacher, keep)
    if init is not None:
        params["init"] = {"data_sha256": init.training.get("data_sha256"), "params": init.training.get("params")}
    data_sha, data, rows = training_data(pairs, cfg, loss)

    with training_session(threads, seed) as rng:
        tr = np.flatnonzero(data.train)
        train_texts = [data.queries[i] for i in np.unique(data.q_idx[tr])] + [
            data.docs[i] for i in np.unique(data.d_idx[tr])
        ]
        hasher, net = _towers(cfg, init, train_texts)
        pretrained = None
        tokens: list = []  # the validation's texts tokenized, by the distillation's early stopping (after its own)
        if cfg.pretrain == Pretraining.RBM and resume is None:
            from ltrfeat.encoders._rbm import pretrain_dssm

            pretrained = pretrain_dssm(net, hasher, train_texts, seed=seed, progress=progress)
        if teacher is not None and resume is None:
            pretrained = _distill(net, hasher, data, tr, teacher, cfg, tokens, progress=progress)
        opt = make_optimizer(cfg.optimizer, net.parameters(), cfg.lr)
        q_tokens, d_tokens = tokens or (hasher.tokenize(data.queries), hasher.tokenize(data.docs))
        header = {
            "model": net.config,
            "hasher": hasher.to_json(),
            "params": params,
            "data_sha256": data_sha,
            **({"pretrain": pretrained} if pretrained else {}),
        }
        step = BatchLoss(
            net,
            hasher,
            q_tokens,
            d_tokens,
            data,
            Sampler(data, rows),
            rng,
            idx_of=rows,
            loss=loss,
            negatives=cfg.negatives,
            hard=cfg.hard_negatives,
            in_batch=cfg.in_batch,
            kept=_kept_teacher(teacher, data, tr, cfg.distill_weight) if cfg.distill_weight else None,
        )
        validate = lambda: validation_ndcg(net, hasher, q_tokens, d_tokens, data, per_query=True)  # noqa: E731
        resumable = Resumable(params, data_sha, header, checkpoint, resume)
        run, state = train_loop(
            Loop(net, opt, rng, rows, step=step, validate=validate), cfg, resumable, progress=progress, keep_start=keep
        )
    if state is not None and state.get("pretrain"):
        pretrained = state["pretrain"]
    record = trained_record(pairs, data, rows, run, resumable, extra={"pretrain": pretrained} if pretrained else None)
    return Encoder(hasher, net, training=record), run.history


def _check_starts(cfg: EncoderConfig, teacher, init) -> None:
    """Refuse settings that do not go with the starting points given (a teacher, an init) or their absence."""
    if teacher is not None and cfg.pretrain is not None:
        raise ValueError("teacher needs pretrain=None")
    if cfg.distill_weight and teacher is None:
        raise ValueError("distill_weight needs a teacher")
    if cfg.epochs == 0 and teacher is None:
        raise ParameterError(
            "epochs=0 trains nothing without a teacher", fix="give a teacher (distillation only) or epochs >= 1"
        )
    if init is not None:
        _check_init(init, cfg, teacher)


def _towers(cfg: EncoderConfig, init: Encoder | None, train_texts: list[str]) -> tuple[TrigramHasher, TwoTowerModel]:
    """The trigram hasher and the towers to train: fresh ones fitted on ``train_texts``, or copies of ``init``'s."""
    if init is None:
        hasher = TrigramHasher(min_count=cfg.min_count, n_buckets=cfg.n_buckets).fit(train_texts)
        sizes = cfg.sizes or {}
        net = TwoTowerModel(model_config(cfg.model, hasher.n_features_, shared=cfg.shared, score=cfg.score, **sizes))
        return hasher, net
    # a fresh hasher: the init's own has numbered the words it met so far, and that numbering changes
    # the order of float sums, so a fine-tuning would depend on what the init encoder scored before
    hasher, net = TrigramHasher.from_json(init.hasher.to_json()), copy.deepcopy(init.model)
    net.train()
    return hasher, net


def _kept_teacher(teacher, data, tr, weight: float):
    """The teacher's in-batch term kept in the ranking loss (``distill_weight``) over the training rows ``tr``."""
    from ltrfeat.encoders.distill import KeptTeacher

    return KeptTeacher(teacher, data.queries, data.docs, q_rows=data.q_idx[tr], d_rows=data.d_idx[tr], weight=weight)


def _distill(net, hasher, data, tr, teacher, cfg: EncoderConfig, tokens: list, *, progress: bool) -> dict:
    """Distil ``teacher`` into the towers on the training rows ``tr`` (:func:`~ltrfeat.encoders.distill.
    distill`), early-stopped on the validation queries (whose tokens it leaves in ``tokens``); returns its record."""
    from ltrfeat.encoders.distill import distill

    read = tr if cfg.distill_rows == "all" else tr[data.y[tr] >= cfg.min_positive]

    def distill_validate() -> float:
        tokens[:] = tokens or [hasher.tokenize(data.queries), hasher.tokenize(data.docs)]
        return validation_ndcg(net, hasher, tokens[0], tokens[1], data)

    return distill(
        net,
        hasher,
        [data.queries[i] for i in data.q_idx[read]],
        [data.docs[i] for i in data.d_idx[read]],
        teacher,
        epochs=cfg.distill_epochs,
        lr=cfg.distill_lr,
        batch_size=cfg.distill_batch_size,
        loss=cfg.distill_loss,
        temperature=cfg.distill_temperature,
        patience=cfg.distill_patience if cfg.val_fraction > 0 else None,
        seed=cfg.seed,
        progress=progress,
        validate=distill_validate,
    )


def _check_init(init, cfg: EncoderConfig, teacher) -> None:
    if not isinstance(init, Encoder):
        raise TypeError(f"init must be an Encoder (a CLSM/DSSM bundle), got {type(init).__name__}")
    have = {
        "model": init.model.config["architecture"],
        "score": init.model.score,
        "shared": bool(init.model.config["shared"]),
    }
    want = {"model": cfg.model, "score": cfg.score, "shared": cfg.shared}
    differ = [k for k in have if have[k] != want[k]]
    if differ:
        raise ParameterError(
            f"init encoder has {', '.join(f'{k}={have[k]!r}' for k in differ)} but the config asks "
            f"for {', '.join(f'{k}={want[k]!r}' for k in differ)}; train with the init's settings"
        )
    if cfg.pretrain is not None:
        raise ParameterError("init replaces pre-training: give init or pretrain, not both")


def _record_params(cfg: EncoderConfig, teacher, keep_start: float | None = None) -> dict:
    """The training record's ``params``: the config's settings in the layout every bundle and checkpoint has
    had (``gamma`` resolved; ``score``, ``pretrain``, the distillation settings and ``keep_start_margin`` only
    when they apply), so older checkpoints resume and cache keys stay put."""
    params = {
        "model": cfg.model,
        "loss": cfg.loss,
        "epochs": cfg.epochs,
        "negatives": cfg.negatives,
        "hard_negatives": cfg.hard_negatives,
        "in_batch": cfg.in_batch,
        "gamma": cfg.resolved_gamma,
        "margin": cfg.margin,
        "batch_size": cfg.batch_size,
        "optimizer": cfg.optimizer,
        "lr": cfg.lr,
        "soft_labels": cfg.soft_labels,
        "click_scale": cfg.click_scale,
        "min_positive": cfg.min_positive,
        "val_fraction": cfg.val_fraction,
        "patience": cfg.patience,
        **({"val_per_epoch": cfg.val_per_epoch} if cfg.val_per_epoch != 1 else {}),
        "min_count": cfg.min_count,
        "n_buckets": cfg.n_buckets,
        "shared": cfg.shared,
        "sizes": dict(cfg.sizes or {}),
        "seed": cfg.seed,
        **({"pretrain": cfg.pretrain} if cfg.pretrain else {}),
        **({"score": cfg.score} if cfg.score != "cosine" else {}),
        **({"keep_start_margin": keep_start} if keep_start is not None else {}),
    }
    if teacher is not None:
        from ltrfeat.encoders.distill import describe_teacher

        params.update(
            teacher=describe_teacher(teacher),
            distill_epochs=cfg.distill_epochs,
            distill_lr=cfg.distill_lr,
            **({"distill_weight": cfg.distill_weight} if cfg.distill_weight else {}),
            # the later settings only when not their default: earlier bundles and checkpoints keep their params
            **{
                name: getattr(cfg, name)
                for name in (
                    "distill_rows",
                    "distill_loss",
                    "distill_temperature",
                    "distill_patience",
                    "distill_batch_size",
                )
                if getattr(cfg, name) != getattr(EncoderConfig, name)
            },
        )
    return params
