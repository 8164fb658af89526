"""Training settings of every encoder kind as frozen, validated dataclasses.

One object per trainer replaces its 20-30 keyword arguments: :class:`EncoderConfig` (CLSM / DSSM,
:func:`~ltrfeat.encoders.training.train_encoder`), :class:`SbertConfig` (MiniLM fine-tuning,
:func:`~ltrfeat.encoders.sbert_training.train_sbert`) and :class:`DeepMatchConfig`
(:func:`~ltrfeat.encoders._deepmatch.train_deepmatch`). A config is checked once, when it is
made; ``to_dict`` gives plain JSON values and ``from_dict`` (or :func:`ltrfeat.core.config_files.read_config`
for a TOML/YAML/JSON file) reads them back, refusing unknown keys with the list of known ones.

Runtime settings that do not change the trained model's numbers (threads, progress bars, checkpoint
paths) and objects that are not plain values (a teacher model, an analyzer) stay trainer arguments.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from numbers import Integral, Real
from typing import ClassVar

from ltrfeat.core.errors import ParameterError
from ltrfeat.core.settings import SEED, Interval, OneOf, Settings
from ltrfeat.encoders.losses import LossName, loss_names
from ltrfeat.encoders.pretraining import Pretraining

LOSSES = loss_names()  # the built-in ranking losses (ltrfeat.encoders.losses)
SOFT_LABELS = ("linear", "clicks", "identity")
OPTIMIZERS = ("adam", "sgd")
SCORES = ("cosine", "dot")
TOWER_MODELS = ("clsm", "dssm")
PRETRAININGS = (Pretraining.RBM.value,)  # EncoderConfig.pretrain (DSSM only); plain strings: click choices
# EncoderConfig.distill_rows: every training pair, or only those labelled a positive (soft label >= min_positive)
DISTILL_ROWS = ("all", "positives")
# EncoderConfig.distill_loss: the teacher's in-batch ranking (kl), its in-batch cosines (mse), or each text's teacher
# vector itself (vector: the towers' width must be the teacher's); ltrfeat.encoders.distill
DISTILL_LOSSES = ("kl", "mse", "vector")
PRECISIONS = ("fp32", "bf16")  # MiniLM fine-tuning's matrix products (see sbert_prefix.precision_context)
# a training that starts from a model worth keeping (MiniLM, +init/+spans weights, a +teacher distillation) keeps it
# unless its best trained epoch beats it on the validation queries by more than this many paired standard errors of
# the per-query NDCG@10 differences (ltrfeat.encoders.epochs, "Keeping the starting point"); 0: any gain
KEEP_START_MARGIN = 1.0
# validation checkpoints per epoch of a CLSM/DSSM training that may keep its start (a from-scratch one validates once
# per epoch): training stops after ``patience`` checkpoints in a row that do not beat the start (epochs.fit_epochs)
START_CHECKS = 4


def _at_least(minimum, kind=Integral) -> list:
    return [Interval(kind, minimum, None, closed="left")]


_POSITIVE = [Interval(Real, 0, None, closed="neither")]


@dataclass(frozen=True)
class TrainingConfig(Settings):
    """Fields shared by every trainer; subclasses add theirs (constraints and ``_check``)."""

    kind: ClassVar[str] = "encoder"
    label: ClassVar[str] = "encoder training"
    _parameter_constraints: ClassVar[dict] = {
        "epochs": _at_least(1),
        "negatives": _at_least(0),
        "hard_negatives": _at_least(0),
        "soft_labels": [OneOf(*SOFT_LABELS)],
        "min_positive": [Real],
        "val_fraction": [Interval(Real, 0, 1, closed="left")],
        "patience": _at_least(1),
        "val_per_epoch": _at_least(1),
        "seed": [SEED],
    }
    epochs: int = 10
    negatives: int = 4
    hard_negatives: int = 0
    soft_labels: str = "linear"
    min_positive: float = 0.5
    val_fraction: float = 0.1
    patience: int = 2
    val_per_epoch: int = 1
    seed: int = 0

    def _negatives(self) -> None:
        if not (self.negatives or self.hard_negatives or getattr(self, "in_batch", False)):
            raise ParameterError(
                "no negatives", fix="set negatives > 0, hard_negatives > 0 or in_batch=True", param="negatives"
            )


@dataclass(frozen=True)
class EncoderConfig(TrainingConfig):
    """CLSM / DSSM training (:func:`~ltrfeat.encoders.training.train_encoder`): its settings, each below.

    ``gamma=None`` means 10 with the cosine score and 1 with the dot score; ``lr=None`` the optimizer's
    default (Adam 1e-3, SGD 0.1); ``sizes`` the architecture's layer sizes, e.g. ``{"conv": 300, "out": 128}``;
    ``pretrain``: None or ``"rbm"`` (DSSM); the ``distill_*`` settings apply with a teacher only;
    ``keep_start_margin`` only to a training that starts from a model (``init``, a teacher): see
    :data:`KEEP_START_MARGIN`; ``val_per_epoch=None``: :data:`START_CHECKS` validation checkpoints per epoch for
    such a training, one for a from-scratch one (:meth:`checks_per_epoch`); ``epochs=0`` (with a teacher only) keeps
    the distilled towers as they are.

    Settings
    --------
    - model : ``"clsm"`` or ``"dssm"``.
    - loss : ``"softmax"`` (DSSM/CLSM), ``"generalized"`` (GDSSM, soft labels), ``"hinge"`` (DSE) or another
      registered loss (:mod:`ltrfeat.encoders.losses`).
    - score : relevance R(Q, D) trained, validated and served: ``"cosine"`` (DSSM/CLSM) or the raw
      ``"dot"`` product of the semantic vectors (DSE; see "Scores" in :mod:`ltrfeat.encoders.training`).
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
    - soft_labels : ``"linear"``, ``"clicks"`` or ``"identity"`` (:mod:`ltrfeat.encoders.training_pairs`).
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
      CD-1 on the training texts (:func:`ltrfeat.encoders._rbm.pretrain_dssm`) before the
      discriminative training; None for random initialisation.
    - distill_epochs, distill_lr : epochs and Adam learning rate of the distillation stage (how the default was
      chosen: docs/history.md, "Encoder defaults chosen on Home Depot").
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
      :class:`~ltrfeat.encoders.distill.DistillSettings`.
    - distill_batch_size : pairs per distillation mini-batch (the in-batch matrices are this wide; ``"vector"``
      does not depend on it, so a larger batch only means fewer optimizer steps).
    - keep_start_margin : with ``init`` or a ``teacher`` (a starting model worth keeping), that model is kept
      unless the best trained epoch beats its validation NDCG@10 by more than this many paired standard
      errors of the per-query differences (:mod:`ltrfeat.encoders.epochs`, "Keeping the starting
      point"; with ``val_fraction > 0``); the decision is the training record's ``keep_start``. A
      from-scratch (or RBM pre-trained) model has no such start: the setting does not apply.
    - seed : seeds weights and sampling.
    """

    kind: ClassVar[str] = "clsm/dssm"
    label: ClassVar[str] = "clsm/dssm training"
    _parameter_constraints: ClassVar[dict] = TrainingConfig._parameter_constraints | {
        "epochs": _at_least(0),  # 0: the towers a teacher distilled, not trained further
        "model": [OneOf(*TOWER_MODELS)],
        "loss": [LossName()],
        "score": [OneOf(*SCORES)],
        "in_batch": [bool],
        "gamma": _POSITIVE + [None],
        "margin": [Real],
        "batch_size": _at_least(2),
        "optimizer": [OneOf(*OPTIMIZERS)],
        "lr": _POSITIVE + [None],
        "click_scale": _POSITIVE,
        "min_count": _at_least(1),
        "n_buckets": _at_least(1) + [None],
        "shared": [bool],
        "sizes": [dict, None],
        "pretrain": [OneOf(*PRETRAININGS), None],
        "distill_epochs": _at_least(1),
        "distill_lr": _POSITIVE,
        "distill_batch_size": _at_least(2),
        "distill_weight": _at_least(0, Real),
        "distill_rows": [OneOf(*DISTILL_ROWS)],
        "distill_loss": [OneOf(*DISTILL_LOSSES)],
        "distill_temperature": _POSITIVE,
        "distill_patience": _at_least(1) + [None],
        "keep_start_margin": _at_least(0, Real),
        "val_per_epoch": _at_least(1) + [None],
    }
    _fixes: ClassVar[dict] = {
        "gamma": "None means the score's default",
        "lr": "None means the optimizer's default",
        "sizes": "e.g. {'out': 128}",
    }
    model: str = "clsm"
    loss: str = "softmax"
    score: str = "cosine"
    in_batch: bool = True
    gamma: float | None = None
    margin: float = 1.0
    batch_size: int = 1024
    optimizer: str = "adam"
    lr: float | None = None
    click_scale: float = 1.0
    min_count: int = 1
    n_buckets: int | None = None
    shared: bool = False
    sizes: dict | None = field(default=None, hash=False)
    pretrain: str | None = None
    distill_epochs: int = 4
    distill_lr: float = 3e-3
    distill_batch_size: int = 256
    distill_weight: float = 0.0
    distill_rows: str = "all"
    distill_loss: str = "kl"
    distill_temperature: float = 0.05
    distill_patience: int | None = None
    keep_start_margin: float = KEEP_START_MARGIN
    val_per_epoch: int | None = None  # type: ignore[assignment]  # None: checks_per_epoch()

    def _check(self) -> None:
        self._negatives()
        if self.pretrain == Pretraining.RBM and self.model != "dssm":
            raise ParameterError(
                f"pretrain='rbm' needs model='dssm', got model={self.model!r}", fix="use model='dssm'", param="model"
            )

    @property
    def resolved_gamma(self) -> float:
        """``gamma``, or its default for the score."""
        return self.gamma if self.gamma is not None else (10.0 if self.score == "cosine" else 1.0)

    def checks_per_epoch(self, *, keeps_start: bool) -> int:
        """``val_per_epoch``, or its default: :data:`START_CHECKS` for a training that may keep its start, else 1."""
        return self.val_per_epoch or (START_CHECKS if keeps_start else 1)


@dataclass(frozen=True)
class SbertConfig(TrainingConfig):
    """Fine-tuning a sentence-transformer (see :func:`~ltrfeat.encoders.sbert_training.train_sbert`);
    ``keep_start_margin``: see :data:`KEEP_START_MARGIN`.

    Settings
    --------
    - loss : ``"softmax"``, ``"generalized"`` (soft labels on every pair), ``"hinge"`` or another registered loss.
    - epochs : maximum passes over the samples.
    - negatives : J random training documents per sample (each costs a forward pass).
    - hard_negatives : same-query lower-labelled documents per sample.
    - in_batch : use the other samples' documents of the mini-batch as negatives.
    - gamma : scale of the cosine in the softmax (softmax, generalized).
    - margin : hinge margin on the cosine.
    - batch_size : samples per mini-batch (and in-batch negatives per sample).
    - accumulate : mini-batches whose gradients are summed per optimizer step.
    - lr, weight_decay : AdamW learning rate and weight decay.
    - max_seq_length : tokens per text; longer texts are truncated (training and inference).
    - freeze_layers : freeze the embeddings and this many lowest transformer layers (-1: nothing frozen).
    - keep_frozen : run the frozen part once per distinct text and keep its output for the process
      (:mod:`ltrfeat.encoders.sbert_prefix`; cheaper steps, no dropout in the frozen part);
      False runs it in every step as before.
    - shared : one tower for both sides; False fine-tunes separate query and document copies.
    - precision : ``"fp32"``, or ``"bf16"``: the matrix products in bfloat16 under CPU autocast (weights,
      optimizer and loss stay float32; faster with AVX512-BF16/AMX, slower without); the trained
      encoder scores in the same precision.
    - soft_labels, click_scale, min_positive, val_fraction : as in :class:`EncoderConfig`.
    - val_per_epoch : validation checkpoints per epoch, evenly spaced over its optimizer steps (the last at its
      end; each is a forward pass of the validation texts through the trained layers).
    - patience : checkpoints in a row that do not beat the starting model by the keep-start rule (or, once one
      has, the best checkpoint so far) before training stops; the best such checkpoint, or the start, is kept.
    - keep_start_margin : the starting model (``base`` or ``init``) is kept unless the best trained epoch
      beats its validation NDCG@10 by more than this many paired standard errors of the per-query
      differences (:mod:`ltrfeat.encoders.epochs`, "Keeping the starting point"; with
      ``val_fraction > 0``); the decision is the training record's ``keep_start``. A kept start scores as
      the start does: at its own ``max_seq_length`` (the base model's, or ``init``'s), not the training's.
    - seed : seeds sampling and dropout.
    """

    kind: ClassVar[str] = "sbert-ft"
    label: ClassVar[str] = "sbert-ft training"
    _parameter_constraints: ClassVar[dict] = TrainingConfig._parameter_constraints | {
        "loss": [LossName()],
        "in_batch": [bool],
        "gamma": _POSITIVE,
        "margin": [Real],
        "batch_size": _at_least(2),
        "accumulate": _at_least(1),
        "lr": _POSITIVE,
        "weight_decay": _at_least(0, Real),
        "max_seq_length": _at_least(2),
        "freeze_layers": _at_least(-1),
        "keep_frozen": [bool],
        "shared": [bool],
        "click_scale": _POSITIVE,
        "precision": [OneOf(*PRECISIONS)],
        "keep_start_margin": _at_least(0, Real),
    }
    loss: str = "softmax"
    epochs: int = 1
    negatives: int = 0
    in_batch: bool = True
    gamma: float = 20.0
    margin: float = 0.2
    batch_size: int = 32
    accumulate: int = 1
    lr: float = 2e-5
    weight_decay: float = 0.01
    max_seq_length: int = 32
    freeze_layers: int = 4
    keep_frozen: bool = True
    shared: bool = True
    click_scale: float = 1.0
    patience: int = 2
    val_per_epoch: int = 8
    precision: str = "fp32"
    keep_start_margin: float = KEEP_START_MARGIN

    def _check(self) -> None:
        self._negatives()


@dataclass(frozen=True)
class DeepMatchConfig(TrainingConfig):
    """DeepMatch training (see :func:`~ltrfeat.encoders._deepmatch.train_deepmatch`).

    Settings
    --------
    - topics : (fine, coarse) LDA topic counts: the two patch resolutions (paper: e.g. (200, 50)).
    - patch_words : most probable words per side kept in each patch.
    - min_links, max_links : links per coarse patch in the DAG (at least m = ``min_links``).
    - units : (K1, K2) decision units per fine / coarse patch.
    - latent : D_p, rank of each local bilinear decision.
    - committee : width of the fully connected committee layer.
    - lda_iter : passes of online LDA.
    - lda_docs : joint documents LDA is fitted on (a seeded sample of the distinct positive pairs).
    - min_df, max_vocab : per-side vocabulary: words in >= ``min_df`` training texts, most frequent first.
    - epochs, patience, val_fraction : training length and early stopping on validation NDCG@10.
    - negatives, hard_negatives : random / same-query lower-labelled negatives per positive.
    - margin : m of the large-margin loss (paper: 0.1).
    - batch_size : positives per mini-batch.
    - lr : Adam learning rate (default 3e-3).
    - soft_labels, min_positive : which pairs are positives (as in :class:`EncoderConfig`).
    - seed : seeds LDA, weights and sampling.
    """

    kind: ClassVar[str] = "deepmatch"
    label: ClassVar[str] = "deepmatch training"
    _parameter_constraints: ClassVar[dict] = TrainingConfig._parameter_constraints | {
        "topics": [tuple],
        "units": [tuple],
        **{
            name: _at_least(1)
            for name in ("patch_words", "min_links", "max_links", "latent", "committee", "lda_iter", "lda_docs")
        },
        "min_df": _at_least(1),
        "max_vocab": _at_least(1),
        "margin": [Interval(Real, 0, 1, closed="neither")],
        "batch_size": _at_least(2),
        "lr": _POSITIVE + [None],
    }
    _fixes: ClassVar[dict] = {"margin": "a score in (0, 1) needs a margin below 1", "lr": "None means 3e-3"}
    topics: tuple[int, int] = (50, 10)
    patch_words: int = 10
    min_links: int = 3
    max_links: int = 8
    units: tuple[int, int] = (3, 3)
    latent: int = 4
    committee: int = 16
    lda_iter: int = 5
    lda_docs: int = 20000
    min_df: int = 2
    max_vocab: int = 20000
    margin: float = 0.1
    batch_size: int = 128
    lr: float | None = None

    def _check(self) -> None:
        if len(self.topics) != 2 or not 1 <= int(self.topics[1]) <= int(self.topics[0]):
            raise ParameterError(
                f"topics must be (fine, coarse) with 1 <= coarse <= fine, got {tuple(self.topics)}", param="topics"
            )
        if len(self.units) != 2 or min(self.units) < 1:
            raise ParameterError(f"units must be two counts >= 1, got {tuple(self.units)}", param="units")
        if self.negatives + self.hard_negatives < 1:
            raise ParameterError(
                "need at least one negative", fix="negatives or hard_negatives >= 1", param="negatives"
            )
