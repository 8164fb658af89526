"""Training a DSSM / CLSM two-tower encoder on judged or clicked (query, document) pairs.

Samples and soft labels (:mod:`~ltrfeat.features.encoders.training_pairs`), negatives
(:mod:`~ltrfeat.features.encoders.negatives`), the losses (:mod:`~ltrfeat.features.encoders.losses`) and the loop
with its validation, checkpoints and keep-start rule (:mod:`~ltrfeat.features.encoders.trainer`) are those every
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

from ltrfeat.features.encoders.config import EncoderConfig
from ltrfeat.features.encoders.encoder import Encoder
from ltrfeat.features.encoders.epochs import Loop
from ltrfeat.features.encoders.losses import make_loss
from ltrfeat.features.encoders.model import TwoTowerModel, model_config
from ltrfeat.features.encoders.negatives import Sampler
from ltrfeat.features.encoders.trainer import (
    Resumable,
    make_optimizer,
    train_loop,
    trained_record,
    training_session,
)
from ltrfeat.features.encoders.training_pairs import training_data, validate_pairs
from ltrfeat.features.encoders.two_tower import BatchLoss, validation_ndcg
from ltrfeat.core.errors import ParameterError
from ltrfeat.features.hashing import TrigramHasher
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
    config : an :class:`~ltrfeat.features.encoders.config.EncoderConfig` (default: its defaults).
    **options : settings of the config to replace, e.g. ``epochs=5`` (checked like the config itself):

        - model : ``"clsm"`` or ``"dssm"``.
        - loss : ``"softmax"`` (DSSM/CLSM), ``"generalized"`` (GDSSM, soft labels) or ``"hinge"`` (DSE).
        - score : relevance R(Q, D) trained, validated and served: ``"cosine"`` (DSSM/CLSM) or the raw
          ``"dot"`` product of the semantic vectors (DSE; see "Scores" in the module docstring).
        - epochs : maximum number of passes over the samples; 0 with a ``teacher``: the distilled towers only.
        - negatives : J, random corpus documents per sample.
        - hard_negatives : same-query lower-labelled documents per sample.
        - in_batch : also use the other samples' documents of the mini-batch as negatives.
        - gamma : softmax smoothing factor (softmax and generalized losses), multiplying R(Q, D); None for
          10.0 with cosine and 1.0 with dot.
        - margin : hinge loss margin, in units of R(Q, D).
        - batch_size : samples per mini-batch.
        - optimizer : ``"adam"`` (lr 1e-3 by default) or ``"sgd"`` (momentum 0.9, lr 0.1 by default).
        - lr : learning rate; None for the optimizer's default above.
        - soft_labels : ``"linear"``, ``"clicks"`` or ``"identity"`` (see the module docstring).
        - click_scale : s in ``phi(c) = c / (c + s)`` for ``soft_labels="clicks"``.
        - min_positive : soft label from which a pair is a positive for the softmax and hinge losses.
        - val_fraction : share of queries held out for early stopping (0: none, train all epochs).
        - val_per_epoch : validation checkpoints per epoch, evenly spaced over its optimizer steps (the last at its
          end); None: 4 for a training that starts from a model (``init``, a teacher), 1 otherwise.
        - patience : validation checkpoints in a row without improvement before stopping; with a start to keep, a
          checkpoint improves only when it also beats the start by the keep-start rule below, so a training that
          does not beat its start stops after ``patience`` checkpoints.
        - min_count, n_buckets : trigram hashing options (:class:`TrigramHasher`).
        - shared : one tower for queries and documents instead of two.
        - sizes : layer sizes, e.g. ``{"hidden": [300, 300], "out": 128}`` (DSSM) or
          ``{"context": 1, "conv": 300, "out": 128}`` (CLSM).
        - pretrain : ``"rbm"`` (DSSM only, DSE): initialise the towers with greedy layer-wise RBMs trained by
          CD-1 on the training texts (:func:`ltrfeat.features.encoders._rbm.pretrain_dssm`) before the
          discriminative training; None for random initialisation.
        - distill_epochs, distill_lr : epochs and Adam learning rate of the distillation stage (chosen on Home
          Depot: 16 epochs raised the agreement but not validation NDCG; 4 epochs, then the ranking loss, gave the
          test NDCG of 8, ``benchmarks/quality_distill_epochs.py``).
        - distill_weight : with a teacher, keep its in-batch KL term (the distillation loss over the batch's
          queries and positive documents) in the ranking loss with this weight, so the fine-tuning on the
          judgments does not forget the teacher; 0 (default): the ranking loss alone.
        - distill_rows : with a teacher, the training pairs the distillation reads: ``"all"`` (default) or
          ``"positives"`` (soft label >= ``min_positive``; e.g. a span pre-training's span -> own-document pairs,
          not its negatives, which add no text and ~4x the steps).
        - distill_patience : with a teacher, score the student on the validation queries after every
          distillation epoch, stop after this many epochs in a row without a better score and keep the best epoch's
          weights (None, default: every ``distill_epochs``).
        - distill_loss, distill_temperature : the distillation's loss, ``"kl"`` (the teacher's in-batch
          ranking, softmax of cosines / temperature), ``"mse"`` (its in-batch cosines) or ``"vector"`` (each text's
          teacher vector itself; the towers' ``out`` width must be the teacher's, 384 for MiniLM), see
          :class:`~ltrfeat.features.encoders.distill.DistillSettings`.
        - distill_batch_size : pairs per distillation mini-batch (the in-batch matrices are this wide; ``"vector"``
          does not depend on it, so a larger batch only means fewer optimizer steps).
        - keep_start_margin : with ``init`` or a ``teacher`` (a starting model worth keeping), that model is kept
          unless the best trained epoch beats its validation NDCG@10 by more than this many paired standard
          errors of the per-query differences (:mod:`ltrfeat.features.encoders.epochs`, "Keeping the starting
          point"; with ``val_fraction > 0``); the decision is the training record's ``keep_start``. A
          from-scratch (or RBM pre-trained) model has no such start: the setting does not apply.
        - seed : seeds weights and sampling.
    teacher : distil a sentence-transformer before the ranking loss (:mod:`ltrfeat.features.encoders.distill`):
        ``"sbert"`` (the packaged MiniLM), ``"sbert=PATH"`` or a model directory, or any object with
        ``encode(texts, side=)``. The towers first fit the teacher's in-batch cosine matrices on the
        training pairs (recorded as the training record's ``pretrain``); a resumed run does not redo it.
    init : an :class:`Encoder` to start from (e.g. pre-trained on a collection's own text,
        :func:`ltrfeat.features.encoders.weak.span_pairs`): its trigram vocabulary, towers and weights are
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
    model, score, seed = cfg.model, cfg.score, cfg.seed
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
        if init is None:
            hasher = TrigramHasher(min_count=cfg.min_count, n_buckets=cfg.n_buckets).fit(train_texts)
            net = TwoTowerModel(
                model_config(model, hasher.n_features_, shared=cfg.shared, score=score, **(cfg.sizes or {}))
            )
        else:
            # a fresh hasher: the init's own has numbered the words it met so far, and that numbering changes
            # the order of float sums, so a fine-tuning would depend on what the init encoder scored before
            hasher, net = TrigramHasher.from_json(init.hasher.to_json()), copy.deepcopy(init.model)
            net.train()
        pretrained = None
        tokens: list = []  # the validation's texts tokenized, by the distillation's early stopping (after its own)
        if cfg.pretrain == "rbm" and resume is None:
            from ltrfeat.features.encoders._rbm import pretrain_dssm

            pretrained = pretrain_dssm(net, hasher, train_texts, seed=seed, progress=progress)
        if teacher is not None and resume is None:
            pretrained = _distill(net, hasher, data, tr, teacher, cfg, tokens, progress=progress)
        opt = make_optimizer(cfg.optimizer, net.parameters(), cfg.lr)
        q_tokens, d_tokens = tokens or (hasher.tokenize(data.queries), hasher.tokenize(data.docs))
        kept = None
        if cfg.distill_weight:
            from ltrfeat.features.encoders.distill import KeptTeacher

            kept = KeptTeacher(
                teacher,
                data.queries,
                data.docs,
                q_rows=data.q_idx[tr],
                d_rows=data.d_idx[tr],
                weight=cfg.distill_weight,
            )
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
            kept=kept,
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


def _distill(net, hasher, data, tr, teacher, cfg: EncoderConfig, tokens: list, *, progress: bool) -> dict:
    """Distil ``teacher`` into the towers on the training rows ``tr`` (:func:`~ltrfeat.features.encoders.distill.
    distill`), early-stopped on the validation queries (whose tokens it leaves in ``tokens``); returns its record."""
    from ltrfeat.features.encoders.distill import distill

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
        from ltrfeat.features.encoders.distill import describe_teacher

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
