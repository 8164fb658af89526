"""Cross-fitted neural features for ablations: no encoder ever scores a query it was trained on.

The scheme (written into every report):

* Queries are split into ``k`` outer folds ``T_1..T_k`` (seeded). For outer fold ``f`` the ranker is tested
  on ``T_f`` and trained on the other folds (a seeded share of them held out for early stopping).
* Test rows of fold ``f`` get scores from an encoder ``E_f`` trained on every training pair whose query is
  not in ``T_f``.
* The ranker's rows of fold ``g != f`` get scores from an encoder ``E_fg`` trained without ``T_f`` and
  ``T_g`` — out-of-fold scores, so the ranker learns how far to trust the feature from scores of the kind
  it sees at test time. ``E_fg = E_gf`` serves both outer folds ``f`` and ``g``, so a trained encoder costs
  ``k + k(k-1)/2`` trainings (inner cross-fitting over the other ``k - 1`` folds).
* Queries are matched by normalised text (:func:`ltrfeat.core.text.normalise_query`: NFKC, case-folded, collapsed
  whitespace, the rule of the leakage guard), so a separate click table is filtered by the same rule; an encoder's training queries and the queries it scores are checked to be
  disjoint before every training (:class:`LeakageError` otherwise).

Zero-shot encoders (``sbert``) are not trained and score every row once.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import hashlib
import io
import json
import re
import time
from numbers import Integral, Real
from pathlib import Path
from typing import ClassVar
from collections.abc import Callable

import numpy as np
import pandas as pd
from tqdm.auto import tqdm

from ltrfeat.experiments import _encoder_pool
from ltrfeat.core.cores import available_cores
from ltrfeat.core.dataset import RankingSet
from ltrfeat.features.encoders.config import KEEP_START_MARGIN
from ltrfeat.features.encoders.kinds import (
    SPAN_MODS,
    SPAN_OPTIONS,
    SPAN_SHAPE,
    SPAN_SWITCHES,
    SPANS_PER_DOC,
    SPANS_PER_DOC_TEACHER,
    DISTILL_EPOCHS,
    DISTILL_PAIRS,
    SPAN_DISTILL,
    SPAN_EPOCHS_TEACHER,
    SPANS_WANTED,
    LONG_DOC_SPANS,
    FOLD_DISTILL,
    FOLD_DISTILL_SHARED,
    LONG_DOC_FOLD_DISTILL,
    long_documents,
)
from ltrfeat.features.encoders.registry import encoder_kind, encoder_kinds, spec_fix
from ltrfeat.core.errors import LtrfeatError, ModelFileError, ParameterError
from ltrfeat.core.fileio import read_checked, write_checked
from ltrfeat.core.logs import get_logger, show_progress
from ltrfeat.core.processes import freed_memory_kept
from ltrfeat.core.splits import holdout, shuffled
from ltrfeat.core.stages import StageProfile
from ltrfeat.core.settings import MAX_THREADS, SEED, Interval, OneOf, Settings
from ltrfeat.core.text import CONFLICTS, normalise_query
from ltrfeat.experiments.defaults import K_FOLDS
from ltrfeat.experiments.folds import Fold
from ltrfeat.experiments.click_training import spec_table
from ltrfeat.experiments._training_task import TrainingTask, fold_scores, training_record
from ltrfeat.experiments._workers import plan_workers

log = get_logger("ablate")

# train_encoder options of the distillation
TEACHER_OPTIONS = (
    "distill_epochs",
    "distill_lr",
    "distill_batch_size",
    "distill_weight",
    "distill_rows",
    "distill_loss",
    "distill_temperature",
    "distill_patience",
)
# options of zero-shot kinds, written MODEL.KEY (ablate --encoder-option sbert.engine=torch)
ZERO_SHOT_OPTIONS = {"sbert": ("engine",)}
MIN_FOLDS = 3  # with 2, the encoder for the ranker's training rows would have no queries left to train on
# kind[:LOSS][+MOD[+MOD]][@SCORE][=PATH]; which parts a kind takes is its registry entry's (encoder_kind(name).grammar)
_SPEC = re.compile(
    r"^(?P<model>[a-z][a-z0-9]*(?:-[a-z0-9]+)*)(?::(?P<loss>[a-z]+))?(?:\+(?P<pretrain>[a-z]+(?:\+[a-z]+)*))?"
    r"(?:@(?P<score>[a-z]+))?(?:=(?P<path>.+))?$"
)


@dataclasses.dataclass(frozen=True)
class CrossFitConfig(Settings):
    """How judged pairs become cross-fitted ablation folds (validated on creation).

    k : outer query folds (``k + k(k-1)/2`` trainings per trained encoder); ``ltrfeat ablate --k-folds`` and
        :attr:`PairsSource.k_folds <ltrfeat.experiments.ablate.PairsSource>` set it.
    valid_fraction : share of each fold's training queries held out for the ranker's early stopping.
    seed : seeds the fold split and every encoder training.
    field : the pairs' document text column the encoders read.
    options : encoder training options, ``KEY`` for every encoder or ``MODEL.KEY`` for one model
        (see :func:`spec_options`).
    conflicts : what to do when one docid has two texts (see :func:`ltrfeat.features.extract.extract_pairs`).
    encoder_jobs : CLSM / DSSM / DeepMatch trainings and MiniLM fine-tunings run at once in worker processes, the cores shared
        among them (0: one per core when they read 20,000 rows or more, else in this process; 1: one after the
        other in this process; see :func:`ltrfeat.experiments._workers.plan_workers`); the numbers do not change
        (see :mod:`ltrfeat.experiments._encoder_pool`).
    continue_outer : kinds that allow it (``EncoderKind.continues_outer``: MiniLM fine-tuning, ``sbert-ft``): each
        outer encoder ``E_f`` continues the inner encoder ``E_fg`` (``g`` the next fold) on the pairs of ``T_g``,
        instead of fine-tuning the base model on every pair outside ``T_f`` again: the same pairs, seen once each, in 2 passes over the data instead of 3
        (see :class:`_Continued`). False trains every encoder from the base model.
    cluster : a :class:`~ltrfeat.experiments._dask_trainings.DaskTrainings` that runs every training, and makes the
        MiniLM teacher vectors, on a Dask cluster instead of here (the scores are the same); None: the local pool.
    train_fn : ``train_fn(spec, table)`` -> an encoder, in place of every training (tests); None: train.
    """

    label: ClassVar[str] = "cross-fitting"
    _parameter_constraints: ClassVar[dict] = {
        "k": [Integral],
        "valid_fraction": [Interval(Real, 0, 1, closed="left")],
        "seed": [SEED],
        "field": [str],
        "options": [dict],
        "conflicts": [OneOf(*CONFLICTS)],
        "encoder_jobs": [Interval(Integral, 0, MAX_THREADS)],
        "continue_outer": [bool],
    }
    _fixes: ClassVar[dict] = {
        "valid_fraction": "the ranker's validation share, e.g. 0.1",
        "encoder_jobs": "0 = one worker per core, 1 = train in this process",
    }

    k: int = K_FOLDS
    valid_fraction: float = 0.1
    seed: int = 0
    field: str = "doc"
    options: dict = dataclasses.field(default_factory=dict)
    conflicts: str = "error"
    encoder_jobs: int = 0
    continue_outer: bool = True
    cluster: object = dataclasses.field(default=None, compare=False)
    train_fn: Callable | None = dataclasses.field(default=None, compare=False)

    def _check(self) -> None:
        check_folds(self.k)
        if "score" in self.options:
            raise ParameterError(
                "the score is chosen per encoder, not as an encoder option (it names the column)",
                fix="write the encoder as e.g. dssm:hinge@dot or clsm:softmax@cosine",
                param="options",
            )
        for key, value in self.options.items():
            name = key.rpartition(".")[2]
            whole = isinstance(value, int) and not isinstance(value, bool)
            low = 0 if name in ("span_epochs", FOLD_DISTILL) else 1
            spans = SPAN_OPTIONS | {FOLD_DISTILL: LONG_DOC_FOLD_DISTILL}
            if name in spans and not (whole and (value in (0, 1) if name in SPAN_SWITCHES else value >= low)):
                raise ParameterError(
                    f"encoder option {key}={value!r}: the +spans settings are whole numbers >= 1 (span_hold_out, "
                    "span_whole: 0 or 1; span_epochs >= 0: 0 for +spans+teacher's distilled towers only; "
                    f"{FOLD_DISTILL} >= 0)",
                    fix=f"e.g. --encoder-option {key}={1 if name in SPAN_SWITCHES else spans[name] or 8}",
                    param="options",
                )


def check_folds(k: int) -> None:
    """Refuse fewer than :data:`MIN_FOLDS` outer folds."""
    if k < MIN_FOLDS:
        raise ParameterError(
            f"cross-fitting needs at least {MIN_FOLDS} folds (got {k}): with 2, the encoder for the ranker's "
            "training rows would have no queries left to train on",
            fix=f"use --k-folds >= {MIN_FOLDS}",
            param="k",
        )


class LeakageError(LtrfeatError):
    """An encoder would score queries it was trained on."""


@dataclasses.dataclass(frozen=True)
class EncoderSpec:
    """An encoder to cross-fit: ``clsm:softmax``, ``dssm:generalized``, ``dssm:hinge+rbm`` (DSE: towers
    pre-trained as RBMs, dot-product score), ``clsm:generalized+teacher`` (towers first distilled from the
    packaged MiniLM; ``+teacher=DIR`` for another sentence-transformer), ``clsm:generalized+spans`` (towers
    first pre-trained once on query-like spans of the pairs' own documents -- no query or label is read --
    then fine-tuned on each fold's training pairs), ``clsm:generalized+spans+teacher`` (as ``+spans``, the span
    pre-training first distilled from MiniLM; ``=DIR`` for another sentence-transformer), ``clsm:generalized+init=BUNDLE`` (every fold's encoder
    starts from a pre-trained ``.ltrenc``, e.g. trained on a larger collection without judgments, and is
    fine-tuned on the fold's training pairs), ``deepmatch`` (pair interaction
    model), ``sbert`` or ``sbert=PATH``. A trained DSSM/CLSM spec may end in ``@dot`` or ``@cosine`` to choose its score
    (``dssm:hinge@dot``, ``dssm:hinge+rbm@cosine``); the default is cosine, and dot for ``+rbm`` (DSE
    as in the paper), so ``dssm:hinge`` stays comparable with earlier cosine results."""

    model: str
    loss: str | None = None
    path: str | None = None
    pretrain: str | None = None
    score: str | None = None  # None: the default_score

    @property
    def kind(self):
        """The :class:`~ltrfeat.features.encoders.registry.EncoderKind` of ``model``."""
        return encoder_kind(self.model)

    @property
    def default_score(self) -> str | None:
        """The score this spec trains without an ``@`` choice (None: the kind has no score choice)."""
        return self.kind.default_score(self.pretrain)

    @property
    def resolved_score(self) -> str | None:
        """``"cosine"`` or ``"dot"`` for a trained DSSM/CLSM, None otherwise."""
        return self.score or self.default_score

    @property
    def name(self) -> str:
        """Group name used in feature-set names (``lexical+clsm-softmax``, ``lexical+dssm-hinge-rbm``); a
        score other than the spec's default is appended (``dssm-hinge-dot``, ``dssm-hinge-rbm-cosine``)."""
        parts = [self.model] + [p.replace("+", "-") for p in (self.loss, self.pretrain) if p is not None]
        if self.pretrain == "init":  # the bundle's file name tells two +init encoders apart
            parts.append(re.sub(r"[^a-z0-9]+", "-", Path(self.path or "").stem.lower()).strip("-"))
        if self.resolved_score != self.default_score:
            parts.append(self.resolved_score)
        return "-".join(parts)

    @property
    def text(self) -> str:
        """The spec as ``ablate --encoder`` takes it (the loss written out: ``clsm`` is ``clsm:softmax``)."""
        parts = [self.model, f":{self.loss}" * bool(self.loss), f"+{self.pretrain}" * bool(self.pretrain)]
        return "".join(parts + [f"@{self.score}" * bool(self.score), f"={self.path}" * bool(self.path)])

    @property
    def span_pretrained(self) -> bool:
        """Every fold's encoder starts from one pre-training on query-like spans of the documents (``+spans``,
        ``+spans+teacher``)."""
        return self.pretrain in SPAN_MODS

    @property
    def teacher(self) -> str | None:
        """The sentence-transformer a ``+teacher`` or ``+spans+teacher`` spec distils (``sbert`` or ``sbert=DIR``)."""
        if self.pretrain not in ("teacher", "spans+teacher"):
            return None
        return f"sbert={self.path}" if self.path else "sbert"

    @property
    def column_suffix(self) -> str:
        """``score`` for a pair scorer (DeepMatch), ``dot`` for a dot-product encoder, ``cos`` for a cosine."""
        return self.kind.column_suffix(self.resolved_score)

    @property
    def trainable(self) -> bool:
        return self.kind.trainable

    @classmethod
    def parse(cls, text: str) -> "EncoderSpec":
        """A spec from its ``ablate --encoder`` text; which parts a kind takes is its registry entry's."""
        m = _SPEC.match(text.strip())
        kinds = encoder_kinds()
        if not m or m["model"] not in kinds:
            raise LtrfeatError(f"unknown encoder {text!r}", fix=spec_fix())
        model, loss, path, pretrain, score = m["model"], m["loss"], m["path"], m["pretrain"], m["score"]
        kind = kinds[model]
        if pretrain is not None and pretrain not in kind.mods:
            with_mods = [f"{k.name} {'/'.join('+' + mod for mod in k.mods)}" for k in kinds.values() if k.mods]
            raise LtrfeatError(
                f"encoder {text!r}: the pre-trainings are {', '.join(with_mods)}",
                fix="write e.g. "
                + ", ".join(f"{k.name}:{k.losses[0]}+{next(iter(k.mods))}" for k in kinds.values() if k.mods),
            )
        mod_path = kind.mods.get(pretrain, "") if pretrain is not None else ""
        if mod_path.startswith("=") and not path:
            raise LtrfeatError(
                f"encoder {text!r}: +{pretrain} needs the pre-trained {mod_path[1:].lower()}",
                fix=f"write e.g. {model}:{kind.losses[0]}+{pretrain}{mod_path}",
            )
        if score is not None and score not in kind.scores:
            scored = [k.name for k in kinds.values() if k.scores]
            raise LtrfeatError(
                f"encoder {text!r}: only {' and '.join(scored)} take a score, "
                + " or ".join(f"@{s}" for s in kinds[scored[0]].scores),
                fix=f"write e.g. {scored[0]}:{kinds[scored[0]].losses[0]}@dot",
            )
        if path is not None and not (kind.path or mod_path):
            raise LtrfeatError(f"encoder {text!r}: {model} takes no path", fix=f"write {kind.grammar}")
        if not kind.losses:
            if loss is not None:
                raise LtrfeatError(f"encoder {text!r}: {model} takes no loss", fix=f"write {kind.grammar}")
        else:
            loss = loss or kind.losses[0]
            if loss not in kind.losses:
                raise LtrfeatError(
                    f"encoder {text!r}: unknown loss {loss!r}",
                    fix=f"use {', '.join(kind.losses[:-1])} or {kind.losses[-1]}",
                )
        return cls(model, loss, path, pretrain, score)


@dataclasses.dataclass
class FoldPlan:
    """Query sets of one outer fold: test, ranker training and ranker validation."""

    name: str
    test: frozenset
    train: frozenset
    valid: frozenset


def plan_folds(qids, *, k: int = K_FOLDS, valid_fraction: float = 0.1, seed: int = 0) -> list[FoldPlan]:
    """Seeded outer folds over distinct ``qids``, each with a ranker validation share of its training queries."""
    queries = list(dict.fromkeys(qids))
    check_folds(k)
    if len(queries) < 2 * k:
        raise LtrfeatError(
            f"{len(queries)} queries are too few for {k} folds", fix="give more judged queries or fewer folds"
        )
    rng = np.random.default_rng(seed)  # one stream: the outer folds, then each fold's validation queries
    order = shuffled(queries, rng)
    outer = [frozenset(order[f::k]) for f in range(k)]  # dealt round robin
    plans = []
    for f, test in enumerate(outer):
        train, valid = holdout([q for q in order if q not in test], valid_fraction, rng)
        plans.append(FoldPlan(name=f"fold{f + 1}", test=test, valid=frozenset(valid), train=frozenset(train)))
    return plans


def scoring_jobs(plans: list[FoldPlan]) -> list[tuple[frozenset, list[tuple[str, frozenset]]]]:
    """Every encoder training: (queries excluded from it, [(outer fold name, queries it scores there)]).

    ``E_f`` (excluding ``T_f``) scores ``T_f`` for fold ``f``; ``E_fg`` (excluding ``T_f | T_g``) scores
    ``T_g`` for fold ``f`` and ``T_f`` for fold ``g``.
    """
    jobs = [(p.test, [(p.name, p.test)]) for p in plans]
    for i, a in enumerate(plans):
        for b in plans[i + 1 :]:
            jobs.append((a.test | b.test, [(a.name, b.test), (b.name, a.test)]))
    return jobs


def training_rows(train_table: pd.DataFrame, excluded_texts: set) -> np.ndarray:
    """Row indices of ``train_table`` whose normalised query is not excluded."""
    keys = train_table["query"].map(normalise_query).to_numpy()
    return np.flatnonzero(~_member(keys, excluded_texts))


def _member(values, members) -> np.ndarray:
    """``values[i] in members`` for every ``i`` (hashed: ``np.isin`` compares object arrays pair by pair)."""
    return pd.Series(values, dtype=object).isin(members).to_numpy()


def check_disjoint(trained_on: set, scored: set, what: str) -> None:
    """Raise :class:`LeakageError` when an encoder would score a query it was trained on."""
    overlap = trained_on & scored
    if overlap:
        example = sorted(overlap)[0]
        raise LeakageError(
            f"{what}: {len(overlap)} scored queries are in the encoder's training data (e.g. {example!r})",
            fix="train encoders only on queries outside the scored fold",
        )


def _cache_key(spec: EncoderSpec, options: dict, table: pd.DataFrame, seed: int, init_key: str | None = None) -> str:
    """``init_key`` names the weights the training starts from (+init, +spans): see :class:`_StartingPoint`."""
    h = hashlib.sha256()
    # a spec without pre-training or dot score keys as before those fields existed: existing caches stay valid
    spec_key = {k: v for k, v in dataclasses.asdict(spec).items() if k not in ("pretrain", "score")}
    spec_key.update({"pretrain": spec.pretrain} if spec.pretrain else {})
    spec_key.update({"score": "dot"} if spec.resolved_score == "dot" else {})
    if _keeps_start(spec):  # trained under the keep-start rule: encoders cached before it are not reused
        spec_key["keep_start"] = options.get("keep_start_margin", KEEP_START_MARGIN)
        # nor those trained before early stopping against the start (2: a record mean restarts the patience count)
        spec_key["stops_at_checkpoints"] = 2
    if init_key is not None:
        spec_key["path"] = init_key
    h.update(
        json.dumps({"spec": spec_key, "options": options, "seed": seed, "v": 1}, sort_keys=True, default=str).encode()
    )
    for col in ("query", "doc", "label"):
        h.update("\x1e".join(map(repr, table[col].tolist())).encode("utf-8", "surrogatepass"))
    return h.hexdigest()[:24]


def _scores_path(cache: Path, encoder_key: str, queries: list, docs: list) -> Path:
    """Where the scores of one cached encoder on these (query, doc) rows are kept: keyed by the encoder's
    cache key and the rows' texts, so a re-run (say, with one more encoder) neither loads nor re-runs it."""
    h = hashlib.sha256(encoder_key.encode())
    for texts in (queries, docs):
        h.update("\x1e".join(texts).encode("utf-8", "surrogatepass"))
        h.update(b"\x1f")
    return cache / "scores" / f"{encoder_key}-{h.hexdigest()[:24]}.scores"


def _keeps_start(spec: EncoderSpec) -> bool:
    """Its trainings start from a model worth keeping (``EncoderKind.keeps_start``): each records ``keep_start``."""
    return spec.pretrain in spec.kind.keeps_start


def _load_record(path: Path) -> dict | None:
    """A cached training record (:func:`~ltrfeat.experiments._training_task.training_record`), or None (absent,
    torn or damaged)."""
    payload = read_checked(path, what="cached training record")
    try:
        record = None if payload is None else json.loads(payload.decode("utf-8"))
    except ValueError:
        return None
    return record if isinstance(record, dict) and "keep_start" in record else None


def _load_scores(path: Path, n: int) -> np.ndarray | None:
    """Cached scores of ``n`` rows, or None (absent, torn, foreign or damaged: scored again; a damaged
    entry -- content not matching its SHA-256 -- with a one-line notice)."""
    payload = read_checked(path, what="cached encoder scores")
    if payload is None:
        return None
    try:
        values = np.load(io.BytesIO(payload), allow_pickle=False)
    except (OSError, ValueError):
        return None
    return values if values.shape == (n,) and values.dtype == np.float32 else None


def _save_scores(path: Path, values: np.ndarray) -> None:
    buffer = io.BytesIO()
    np.save(buffer, np.asarray(values, dtype=np.float32))
    write_checked(path, buffer.getvalue())


def _cached_encoder(path: Path, load):
    """``load(path)`` of a cached encoder bundle, or None when it is absent or damaged (then one notice
    says it is trained again, instead of the run stopping on the damaged file)."""
    if not path.exists():
        return None
    try:
        return load(path)
    except ModelFileError as exc:
        log.warning("cached encoder %s is damaged (%s); training it again", path, exc.problem)
        return None


# the span pre-training's own settings over the fold trainings' options (``epochs`` comes from ``span_epochs``): what
# it overrides stays out of its cache key, so a --quick and a full run share one pre-training
_SPAN_TRAINING = {"val_fraction": 0.02}
_SPAN_OVERRIDES = ("epochs", *_SPAN_TRAINING)


class _StartingPoint:
    """The weights every fold's encoder of a ``+init`` or ``+spans`` spec starts from, made (or loaded) on first
    use only, so a run whose fold encoders are all cached never touches it.

    ``+init=BUNDLE``: the bundle (``key``: its bytes' SHA-256). ``+spans``: the spec's model trained once with
    the softmax loss on query-like spans of the pairs' distinct documents (:func:`~ltrfeat.features.encoders.
    weak.span_pairs`; no query or label is read, so it is leakage-free for every fold), ``span_epochs``
    epochs, ``spans_per_doc`` spans per document (default: enough for 50,000 spans, between 4 and 16 -- 4 for a
    collection of 12,500 documents or more, 16 for the 800 of the sample world, where 4 left the pre-trained CLSM
    below BM25 and 16 lifted it above); ``key`` hashes the texts and the settings the pre-training reads (not the
    fold trainings' ``epochs``, which ``span_epochs`` replaces), and the pre-trained encoder is cached beside the
    fold encoders. ``+spans+teacher``: the same, its towers first distilled from the
    spec's teacher (:mod:`~ltrfeat.features.encoders.distill`) on the positive span -> document pairs only (the
    span table's negatives add no text, only steps), with the ``distill_*`` options (``distill_settings``, out of
    the fold trainings' options; by default ``distill_loss="vector"`` with towers whose ``out`` is the teacher's
    width unless ``sizes`` names one); MiniLM encodes each distinct span and document once, through the teacher-vector
    cache (on ``cluster`` when given); ``key`` also names the teacher. ``fold_options``: the fold trainings'
    options; with ``fold_distill_epochs`` (default over long documents: :data:`~ltrfeat.features.encoders.kinds.
    LONG_DOC_FOLD_DISTILL`, else 0) they hold the distillation settings that make every fold training distil the
    teacher's vectors of its own training pairs before its fine-tuning (:func:`distils_in_folds`).
    """

    def __init__(
        self,
        spec: EncoderSpec,
        texts: list,
        *,
        options: dict,
        seed: int,
        cache: Path | None,
        profile=None,
        cluster=None,
    ):
        self.spec, self.seed, self.cache, self.profile, self.cluster = spec, seed, cache, profile, cluster
        distilled = spec.pretrain == "spans+teacher"
        defaults = SPAN_OPTIONS | ({"span_epochs": SPAN_EPOCHS_TEACHER} if distilled else {})
        self.span_settings = {k: options.get(k, v) for k, v in defaults.items()}
        self._check_lengths()
        if self.span_settings["span_epochs"] == 0 and not distilled:
            raise ParameterError(
                f"{spec.name}: span_epochs=0 leaves the +spans towers untrained",
                fix="give span_epochs >= 1 (0 is for +spans+teacher: the distilled towers only)",
                param="options",
            )
        self.distill_settings = (SPAN_DISTILL if distilled else {}) | {
            k: v for k, v in options.items() if distilled and k in TEACHER_OPTIONS
        }
        self.options = {
            k: v
            for k, v in options.items()
            if k not in SPAN_OPTIONS and k != FOLD_DISTILL and k not in self.distill_settings
        }
        self.fold_options = self.options  # the fold trainings' (see fold_distill_epochs below)
        self._encoder = None
        self.seconds = 0.0  # spent making or loading the starting point
        if spec.pretrain == "init":
            self.key = hashlib.sha256(Path(spec.path).read_bytes()).hexdigest()
            return
        self.texts = list(dict.fromkeys(t for t in texts if isinstance(t, str)))
        if self.span_settings["spans_per_doc"] is None:
            wanted = -(-SPANS_WANTED // max(len(self.texts), 1))
            low, high = SPANS_PER_DOC_TEACHER if distilled else SPANS_PER_DOC
            self.span_settings["spans_per_doc"] = min(high, max(low, wanted))
        long = distilled and long_documents(self.texts)
        if long:  # spans as long as natural-language needs, whole documents too
            lengths = {"span_min_words", "span_max_words"}  # given one length, the other keeps the title default
            own = set(options) if lengths.isdisjoint(options) else set(options) | lengths
            self.span_settings |= {k: v for k, v in LONG_DOC_SPANS.items() if k not in own}
            self._check_lengths()
        fold_distill = options.get(FOLD_DISTILL, LONG_DOC_FOLD_DISTILL if long else 0) if distilled else 0
        if fold_distill:  # each fold training distils MiniLM's vectors of its own pairs first (see _train)
            shared = {k: v for k, v in self.distill_settings.items() if k in FOLD_DISTILL_SHARED}
            self.fold_options = self.options | {"distill_epochs": fold_distill, "distill_rows": "all"} | shared
        if self.span_settings["span_whole"] is None:
            self.span_settings["span_whole"] = 0
        if distilled and "distill_epochs" not in self.distill_settings:  # enough for DISTILL_PAIRS span pairs
            wanted = -(-DISTILL_PAIRS // max(len(self.texts) * self.span_settings["spans_per_doc"], 1))
            self.distill_settings["distill_epochs"] = min(DISTILL_EPOCHS[1], max(DISTILL_EPOCHS[0], wanted))
        teacher = {}
        if distilled:
            from ltrfeat.features.encoders.distill import teacher_key

            teacher = {"teacher": [teacher_key(spec.teacher), self.distill_settings]}
        h = hashlib.sha256(
            json.dumps(
                {
                    "spec": [spec.model, spec.resolved_score],
                    "spans": self._keyed_spans(),
                    "options": {k: v for k, v in self.options.items() if k not in _SPAN_OVERRIDES},
                }
                | {"seed": seed, "v": 1}
                | teacher,
                sort_keys=True,
                default=str,
            ).encode()
        )
        h.update("\x1e".join(self.texts).encode("utf-8", "surrogatepass"))
        self.key = h.hexdigest()[:24]

    def _check_lengths(self) -> None:
        if self.span_settings["span_min_words"] > self.span_settings["span_max_words"]:
            raise ParameterError(
                f"encoder options span_min_words={self.span_settings['span_min_words']} > "
                f"span_max_words={self.span_settings['span_max_words']}",
                fix="give span_min_words <= span_max_words, e.g. 8 and 24",
                param="options",
            )

    def _keyed_spans(self) -> dict:
        """The span settings in the cache key: span lengths at their defaults left out (the key of earlier runs)."""
        return {k: v for k, v in self.span_settings.items() if k not in SPAN_SHAPE or v != (SPAN_OPTIONS[k] or 0)}

    def encoder(self):
        from ltrfeat.features.encoders.encoder import Encoder

        if self._encoder is None:
            start = time.perf_counter()
            if self.spec.pretrain == "init":
                self._encoder = Encoder.load(self.spec.path)
            else:
                self._encoder = self._pretrained(Encoder)
            self.seconds = time.perf_counter() - start
        return self._encoder

    def file(self, directory: Path) -> Path:
        """A bundle file of the starting weights (made first if need be): the +init bundle, the cached
        pre-trained encoder, or a copy written into ``directory``."""
        if self.spec.pretrain == "init":
            return Path(self.spec.path)
        encoder = self.encoder()
        path = self._path()
        if path is None or not path.exists():
            path = directory / f"{self.spec.name}-pretrain-{self.key}.ltrenc"
            encoder.save(path)
        return path

    def _path(self) -> Path | None:
        return None if self.cache is None else self.cache / "encoders" / f"{self.spec.name}-pretrain-{self.key}.ltrenc"

    def _pretrained(self, encoder_cls):
        from ltrfeat.features.encoders.training import train_encoder
        from ltrfeat.features.encoders.weak import span_pairs

        path = self._path()
        start = time.perf_counter()
        encoder = None if path is None else _cached_encoder(path, encoder_cls.load)
        cached = encoder is not None
        if encoder is None:
            docs = pd.DataFrame({"docid": [str(i) for i in range(len(self.texts))], "text": self.texts})
            words = self.span_settings
            spans = span_pairs(
                docs,
                field="text",
                per_doc=words["spans_per_doc"],
                min_words=words["span_min_words"],
                max_words=words["span_max_words"],
                hold_out=bool(words["span_hold_out"]),
                whole=bool(words["span_whole"]),
                negatives=4,
                seed=self.seed,
            )
            settings = self.options | {"epochs": self.span_settings["span_epochs"]} | _SPAN_TRAINING
            if self.spec.teacher is not None:
                settings |= {"teacher": self.spec.teacher, "distill_rows": "positives"} | self.distill_settings
                if self.cluster is not None:  # MiniLM runs on the cluster, the distillation here
                    positives = spans[spans["label"] > 0]
                    for side, column in (("query", "query"), ("doc", "doc")):
                        self.cluster.teacher_vectors(self.spec.teacher, positives[column].tolist(), side=side)
                if settings["distill_loss"] == "vector":  # the towers as wide as the teacher's vectors
                    from ltrfeat.features.encoders.distill import teacher_width

                    sizes = dict(settings.get("sizes") or {})
                    settings["sizes"] = {"out": teacher_width(self.spec.teacher, spans["doc"].iloc[0])} | sizes
            encoder, _ = train_encoder(
                spans,
                model=self.spec.model,
                loss="softmax",
                score=self.spec.resolved_score,
                seed=self.seed,
                progress=False,
                **settings,
            )
            if path is not None:
                encoder.save(path)
        if self.profile is not None:
            self.profile.encoder(
                self.spec.name,
                "span pre-training",
                train_seconds=time.perf_counter() - start,
                score_seconds=0.0,
                cached=cached,
            )
        return encoder


class _Continued:
    """The starting point of an outer MiniLM fine-tuning that continues an inner one (``continue_outer``):
    the inner training's encoder, as trained in this run or loaded from the cache (trained again when its
    scores were cached but its bundle is gone). ``key``: the inner encoder's cache key."""

    def __init__(self, inner: "_Training", *, seed: int, cache: Path | None):
        self.inner, self.seed, self.cache = inner, seed, cache
        self.key = inner.key
        self.seconds = 0.0
        self._encoder = None

    def set(self, encoder) -> None:
        self._encoder = encoder

    def encoder(self):
        if self._encoder is None:
            start = time.perf_counter()
            job = self.inner
            self._encoder, _ = _train(
                job.spec, job.table, options=job.options, seed=self.seed, cache=self.cache, key=job.key
            )
            self.seconds = time.perf_counter() - start
        return self._encoder

    def path(self) -> Path | None:
        inner = self.inner
        return None if self.cache is None else self.cache / "encoders" / f"{inner.spec.name}-{inner.key}.ltrenc"

    def file(self, directory: Path) -> Path:
        path = self.path()
        if path is None or not path.exists():
            path = directory / f"{self.inner.spec.name}-inner-{id(self)}.ltrenc"
            self.encoder().save(path)
        return path


def distils_in_folds(spec: EncoderSpec, options: dict) -> bool:
    """Whether a fold training of ``spec`` with ``options`` distils its teacher first: every ``+teacher`` one, and a
    ``+spans+teacher`` one whose options hold distillation settings (``fold_distill_epochs``, :class:`_StartingPoint`):
    MiniLM's vectors of the fold's training queries and documents, from the span pre-training's weights."""
    return spec.pretrain == "teacher" or (spec.pretrain == "spans+teacher" and "distill_epochs" in options)


def _train(
    spec: EncoderSpec,
    table: pd.DataFrame,
    *,
    options: dict,
    seed: int,
    cache: Path | None,
    key: str | None = None,
    start: _StartingPoint | None = None,
    start_scores: np.ndarray | None = None,
):
    """The trained encoder and whether it came from ``cache`` (``key``: its :func:`_cache_key`, when known;
    ``start``: the weights a +init or +spans encoder, or a continued MiniLM fine-tuning, starts from;
    ``start_scores``: the zero-shot column's scores of ``table``'s rows, for a MiniLM fine-tuning's start)."""
    kind = spec.kind
    path = None
    if cache is not None:
        init_key = None if start is None else start.key
        path = cache / "encoders" / f"{spec.name}-{key or _cache_key(spec, options, table, seed, init_key)}.ltrenc"
        encoder = _cached_encoder(path, kind.load)
        if encoder is not None:
            return encoder, True
    settings = kind.spec_settings(spec, start) | ({} if start_scores is None else {"start_scores": start_scores})
    if distils_in_folds(spec, options):
        settings["teacher"] = spec.teacher
    encoder, _ = kind.train(table, seed=seed, progress=False, **settings, **options)
    if path is not None:
        encoder.save(path)
    return encoder, False


def train_spec(
    spec: EncoderSpec,
    pairs: pd.DataFrame,
    *,
    options: dict,
    seed: int = 0,
    field: str = "doc",
    train_table: pd.DataFrame | None = None,
    collection: list | None = None,
    cache=None,
):
    """The encoder ``ablate --encoder SPEC`` trains in every fold, trained once on all of ``train_table`` (default:
    the judged ``pairs``, grouped as :func:`group_pairs` leaves them) -- what to ship when the verdict recommends a
    feature set with it. The same resolved options (:func:`spec_options` of ``options``, the ablation's merged
    ones), the same starting point (a ``+spans`` / ``+spans+teacher`` pre-training on the pairs' ``field`` texts
    and ``collection``: under the ablation's ``cache`` the one it made is reused), the same training with its
    validation split, early stopping and keep-start rule; ``seed`` the ablation's ``--split-seed``."""
    if not spec.trainable:
        raise LtrfeatError(
            f"{spec.text} is zero-shot: there is nothing to train", fix=f"extract with --encoder {spec.text}"
        )
    cache = None if cache is None else Path(cache)
    if train_table is None:
        train_table = pairs.rename(columns={field: "doc"})[["qid", "query", "doc", "label"]]
    own = spec_options(spec, options)
    from ltrfeat.features.encoders.training_pairs import check_holdout, table_queries

    check_holdout(table_queries(train_table), own.get("val_fraction", spec.kind.config.val_fraction))
    start = None
    teacher_cache = None if cache is None or spec.teacher is None else cache / "teacher"
    if teacher_cache is not None:
        from ltrfeat.features.encoders import distill

        distill.load_vectors(teacher_cache)
    try:
        if spec.pretrain in spec.kind.start_mods:
            texts = pairs[field].tolist() + list(collection or [])
            start = _StartingPoint(spec, texts, options=own, seed=seed, cache=cache)
            own = start.fold_options
        table, own = spec_table(train_table, spec.loss, own)
        table = table.reset_index(drop=True)
        if train_table.attrs.get("clicks"):  # a click log's: the shipped bundle records what trained it
            table.attrs["clicks"] = train_table.attrs["clicks"]
        with freed_memory_kept():
            encoder, _ = _train(spec, table, options=own, seed=seed, cache=cache, start=start)
    finally:
        if teacher_cache is not None:
            distill.save_vectors(teacher_cache)
    return encoder


def spec_options(spec: EncoderSpec, options: dict) -> dict:
    """The training options of one encoder: unprefixed keys, overridden by ``MODEL.key`` ones (see
    :mod:`ltrfeat.experiments._encoder_options`). Each encoder keeps the unprefixed keys its training config
    has (:mod:`ltrfeat.features.encoders.config`); an unprefixed key no trainer has, or a prefixed key its
    model's trainer lacks, is an error. Encoders without a teacher drop the distillation options."""
    from ltrfeat.experiments._encoder_options import model_options

    fixed = {"model", "loss", "score", "pretrain", "seed"}  # set by the --encoder spec and the ablation's seeds
    runtime = {"threads", FOLD_DISTILL} | set(SPAN_OPTIONS)  # a trainer argument beside its config, the +spans settings
    trained = [k for k in encoder_kinds().values() if k.trainable]
    known = set().union(*(k.config.names() for k in trained), runtime) - fixed
    unknown = sorted(k for k in options if "." not in k and k not in known)
    if unknown:
        raise LtrfeatError(
            f"encoder option {unknown[0]!r}: no encoder training has it", fix=f"use one of {', '.join(sorted(known))}"
        )
    accepted = (set(spec.kind.config.names()) | runtime) - fixed
    models = (*(k.name for k in trained), *ZERO_SHOT_OPTIONS)
    resolved = model_options(options, spec.model, known_models=models, accepted=accepted)
    if spec.teacher is None:
        # distillation settings mean nothing without a teacher: keep them out of other encoders' cache keys
        resolved = {k: v for k, v in resolved.items() if k not in TEACHER_OPTIONS}
    if not spec.span_pretrained:
        resolved = {k: v for k, v in resolved.items() if k not in SPAN_OPTIONS}
    if spec.pretrain != "spans+teacher":
        resolved.pop(FOLD_DISTILL, None)
    return resolved


def minilm_engine(options: dict) -> str:
    """The MiniLM engine of an ablation's zero-shot passes that ``options`` choose (``sbert.engine``, default
    ``auto``; see :mod:`ltrfeat.features.encoders.sbert_onnx`), checked with the other zero-shot options."""
    from ltrfeat.features.encoders import sbert_onnx

    for key in options:
        model, _, name = key.rpartition(".")
        if model in ZERO_SHOT_OPTIONS and name not in ZERO_SHOT_OPTIONS[model]:
            known = ", ".join(f"{model}.{n}" for n in ZERO_SHOT_OPTIONS[model])
            raise LtrfeatError(f"encoder option {key!r}: {model} has no option {name!r}", fix=f"use {known}")
    return sbert_onnx.check_engine(str(options.get("sbert.engine", "auto")))


@dataclasses.dataclass(eq=False)
class _Training:
    """One encoder training of the cross-fitting: what it trains on and starts from, the rows of each fold
    its encoder scores (``rows_of``, their texts) and their scores, cached (``kept``) or not yet."""

    spec: EncoderSpec
    column: str
    job: str
    table: pd.DataFrame
    options: dict
    start: "_StartingPoint | _Continued | None"
    rows_of: dict[str, np.ndarray]
    texts: dict[str, tuple[list, list]]
    rows: np.ndarray = dataclasses.field(default_factory=lambda: np.zeros(0, dtype=np.int64))  # of the table
    key: str | None = None
    paths: dict[str, Path] = dataclasses.field(default_factory=dict)
    kept: dict[str, np.ndarray | None] = dataclasses.field(default_factory=dict)
    outer: str | None = None  # the outer fold whose test rows it scores (None: an inner training)
    record: dict | None = None  # :func:`~ltrfeat.experiments._training_task.training_record`, once known
    record_path: Path | None = None
    zero_shot: dict[str, np.ndarray] | None = None  # the run's zero-shot column on its MiniLM base, by fold
    start_scores: np.ndarray | None = None  # that column's scores of the rows of table (they are judged pairs)

    @property
    def done(self) -> bool:
        """Its scores, and the record the report shows of a training with a start, are cached."""
        scored = bool(self.kept) and all(v is not None for v in self.kept.values())
        return scored and (self.record is not None or not _keeps_start(self.spec))


def check_trainings(trainings: list[_Training]) -> None:
    """What can be refused before any encoder trains: a validation share that leaves one of the trainings (the
    smallest tables come last: inner, continued) without a validation or a training query."""
    from ltrfeat.features.encoders.training_pairs import check_holdout, table_queries

    for job in trainings:
        if not job.done:
            share = job.options.get("val_fraction", job.spec.kind.config.val_fraction)
            check_holdout(table_queries(job.table), share, what=f"{job.spec.name} training {job.job}: ")


def _frozen_groups(trainings: list[_Training]) -> dict[tuple, tuple[list[_Training], list[str]]]:
    """The MiniLM fine-tunings among ``trainings`` that keep frozen lower layers, by (base model, settings JSON):
    the trainings and every text they read and score."""
    from ltrfeat.features.encoders.config import SbertConfig

    groups: dict[tuple, tuple[list[_Training], dict[str, None]]] = {}
    for job in trainings:
        if job.spec.kind.frozen_prefix:
            settings = {k: v for k, v in job.options.items() if k in SbertConfig.names()}
            members, texts = groups.setdefault(
                (job.spec.path, json.dumps(settings, sort_keys=True, default=str)), ([], {})
            )
            members.append(job)
            texts.update(dict.fromkeys(job.table["query"]))
            texts.update(dict.fromkeys(job.table["doc"]))
            for queries, docs in job.texts.values():
                texts.update(dict.fromkeys(queries))
                texts.update(dict.fromkeys(docs))
    return {group: (members, list(texts)) for group, (members, texts) in groups.items()}


def _share_minilm(
    zero_shot: list[EncoderSpec], groups: dict, queries: list, docs: list, *, cluster, profile, bar
) -> dict[tuple, tuple]:
    """One MiniLM pass (:func:`~ltrfeat.features.encoders.sbert_shared.shared_pass`) for a zero-shot column's
    vectors of ``queries``/``docs`` and the frozen-layer states of a group of :func:`_frozen_groups` on the same
    model; in this process, or on ``cluster`` and brought back. Returns ``{group: store key}`` of the groups done."""
    from ltrfeat.features.encoders import sbert_shared

    shared: dict[tuple, tuple] = {}
    for spec in zero_shot:
        teacher = f"sbert={spec.path}" if spec.path else "sbert"
        for group, (members, texts) in groups.items():
            base, settings = group[0], json.loads(group[1])
            if group in shared or not sbert_shared.shares(teacher, base=base, **settings):
                continue
            name = members[0].spec.name
            bar.set_postfix_str(f"{spec.name} vectors and {name} frozen layers in one pass")
            start = time.perf_counter()
            wanted = {"query": queries, "doc": docs}
            if cluster is None:
                shared[group], _, _ = sbert_shared.shared_pass(
                    teacher, wanted, texts, base=base, progress=not bar.disable, **settings
                )
            else:
                shared[group], _, _ = cluster.shared_pass(teacher, wanted, texts, base=base, **settings)
            if profile is not None:
                profile.frozen_layers(
                    name,
                    seconds=time.perf_counter() - start,
                    texts=len(texts),
                    where=f"{'this process' if cluster is None else 'dask cluster'}, one pass with the {spec.name} vectors",
                )
    return shared


def _keep_frozen(
    groups: dict, *, profile, bar, cluster=None, shared: dict[tuple, tuple] | None = None
) -> dict[int, tuple]:
    """Run the frozen lower layers of the MiniLM fine-tunings of ``groups`` (:func:`_frozen_groups`) once over
    all the texts they read and score (one pass per base model and settings, :func:`~ltrfeat.features.encoders.
    sbert_training.keep_frozen_states`), here, before any of them trains: in this process or in a worker,
    every fine-tuning then starts from the same states; with a ``cluster`` (a :class:`~ltrfeat.experiments.
    _dask_trainings.DaskTrainings`) the pass runs there and the states come back. ``shared``: the groups whose
    states :func:`_share_minilm` keeps already, with their store keys. Returns ``{id(training): (store key,
    texts)}``."""
    from ltrfeat.features.encoders.sbert_training import keep_frozen_states

    kept: dict[int, tuple] = {}
    for group, (members, texts) in groups.items():
        if group in (shared or {}):
            kept.update({id(job): (shared[group], texts) for job in members})
            continue
        base, settings = group
        bar.set_postfix_str(f"{members[0].spec.name}: frozen layers over {len(texts)} texts")
        start = time.perf_counter()
        keep = keep_frozen_states if cluster is None else cluster.frozen_states
        key = keep(texts, base=base, **json.loads(settings))
        if profile is not None:
            profile.frozen_layers(
                members[0].spec.name,
                seconds=time.perf_counter() - start,
                texts=len(texts),
                where="this process" if cluster is None else "dask cluster",
            )
        kept.update({id(job): (key, texts) for job in members})
    return kept


def _run_pooled(
    trainings: list[_Training], *, run: Callable, seed: int, cache, bar, finish, frozen: dict[int, tuple]
) -> None:
    """Train ``trainings`` through ``run(tasks, *, train, on_done)``: in worker processes
    (:func:`ltrfeat.experiments._encoder_pool.run_trainings`) or on a Dask cluster
    (:meth:`ltrfeat.experiments._dask_trainings.DaskTrainings.run`); the MiniLM vectors a
    ``+teacher`` training distils, the weights a ``+init`` / ``+spans`` training starts from and the frozen
    MiniLM layers' states of a fine-tuning (``frozen``, see :func:`_keep_frozen`) are made here first and
    handed over by file."""
    import tempfile

    from ltrfeat.features.encoders import distill, sbert_onnx, sbert_prefix

    with tempfile.TemporaryDirectory(prefix="ltrfeat-pool-") as tmp:
        teacher_dir = None
        distilling = [j for j in trainings if distils_in_folds(j.spec, j.options)]
        teachers = {j.spec.path for j in distilling}
        for path in teachers:
            spec = f"sbert={path}" if path else "sbert"  # MiniLM is loaded only if a vector is not cached
            for side, col in (("query", "query"), ("doc", "doc")):
                texts = pd.unique(pd.concat([j.table[col] for j in distilling if j.spec.path == path])).tolist()
                distill.teacher_vectors(spec, texts, side=side, key=distill.teacher_key(spec), progress=not bar.disable)
        if teachers:
            teacher_dir = str(Path(tmp) / "teacher")
            distill.save_vectors(teacher_dir)
        starts: dict[int, _encoder_pool.FileStart] = {}
        position = {id(j): i for i, j in enumerate(trainings)}
        save_to: dict[int, str] = {}  # inner trainings whose encoder a continued one starts from, by file
        for job in trainings:
            if isinstance(job.start, _Continued) and id(job.start.inner) in position:
                path = job.start.path() or Path(tmp) / f"inner-{position[id(job.start.inner)]}.ltrenc"
                save_to[position[id(job.start.inner)]] = str(path)
                starts[id(job.start)] = _encoder_pool.FileStart(job.start.key, path, model=job.spec.model)
            elif job.start is not None and id(job.start) not in starts:
                path = job.start.file(Path(tmp))
                starts[id(job.start)] = _encoder_pool.FileStart(job.start.key, path, model=job.spec.model)
                job.start.seconds = 0.0
        frozen_dirs: dict[tuple, str] = {}
        for job in trainings:
            key, texts = frozen.get(id(job), (None, []))
            if key is not None and key not in frozen_dirs:
                frozen_dirs[key] = str(Path(tmp) / f"frozen-{len(frozen_dirs)}")
                sbert_prefix.save(key, texts, frozen_dirs[key])
        tasks = [
            TrainingTask(
                j.spec,
                j.table,
                j.options,
                seed,
                cache,
                j.key,
                start=None if j.start is None else starts[id(j.start)],
                texts=j.texts,
                teacher_dir=teacher_dir if j in distilling else None,
                frozen_dir=frozen_dirs.get(frozen.get(id(j), (None,))[0]),
                save_to=save_to.get(i),
                after=position.get(id(j.start.inner)) if isinstance(j.start, _Continued) else None,
                zero_shot=j.zero_shot,
                start_scores=j.start_scores,
                minilm_engine=sbert_onnx.chosen(),  # crossfit_columns's choice, for the workers too
            )
            for i, j in enumerate(trainings)
        ]
        bar.set_postfix_str(f"{len(tasks)} trainings side by side")
        run(tasks, train=_train, on_done=lambda i, result: finish(trainings[i], *result))


def _teacher_vectors_on(cluster, specs, pairs, train_table, *, field: str, profile, distilling=()) -> None:
    """MiniLM vectors of every text a zero-shot teacher column scores or a ``+teacher`` training distils (or a
    ``+spans+teacher`` fold training of ``distilling``, :func:`distils_in_folds`), made on ``cluster`` (only the texts
    not cached here), so neither pass encodes anything in this process."""
    wanted: dict[str, tuple[list, list]] = {}
    for spec in specs:
        if spec.kind.teacher_scorer or spec.pretrain == "teacher" or spec in distilling:
            # a zero-shot column scores the judged pairs, a distillation reads the training table
            table, doc = (pairs, field) if spec.kind.teacher_scorer else (train_table, "doc")
            queries, docs = wanted.setdefault(f"sbert={spec.path}" if spec.path else "sbert", ([], []))
            queries += table["query"].tolist()
            docs += table[doc].tolist()
    if not wanted:
        return
    with profile.stage("MiniLM vectors") if profile is not None else contextlib.nullcontext():
        encoded = sum(
            cluster.teacher_vectors(spec, texts, side=side)
            for spec, (queries, docs) in wanted.items()
            for side, texts in (("query", queries), ("doc", docs))
        )
    if profile is not None:
        profile.ran_on("MiniLM vectors", f"dask cluster ({encoded} texts encoded)")


def _offer_zero_shot(trainings: list[_Training], path, scores: np.ndarray, *, judged: bool) -> None:
    """Hand the zero-shot MiniLM column ``scores`` (base model ``path``, None: the packaged one) to the MiniLM
    fine-tunings of the same base among ``trainings``: one that keeps its base unchanged scores as that column
    (:func:`~ltrfeat.experiments._training_task.fold_scores`) instead of running the whole model again, and one
    that starts from it validates its start from it. ``judged``: the training tables' rows are the judged
    pairs' (the default training table), so their scores are known."""
    from ltrfeat.features.encoders.sbert import packaged_model_path

    def base(p) -> Path:
        return (packaged_model_path() if p is None else Path(p)).resolve()

    for job in trainings:
        if job.spec.kind.frozen_prefix and base(job.spec.path) == base(path):
            job.zero_shot = {fold: scores[rows] for fold, rows in job.rows_of.items()}
            job.start_scores = scores[job.rows] if judged else None


def _zero_shot(spec: EncoderSpec):
    kind = spec.kind
    return (kind.scorer or kind.load)(spec.path)


def encoder_table(pairs: pd.DataFrame, field: str, train_table: pd.DataFrame | None = None) -> pd.DataFrame:
    """What the encoders train on: ``train_table``, or the judged ``pairs`` (their ``field`` as ``doc``)."""
    if train_table is None:
        train_table = pairs.rename(columns={field: "doc"})[["qid", "query", "doc", "label"]]
    return train_table.reset_index(drop=True)


def plan_trainings(
    pairs: pd.DataFrame,
    plans: list[FoldPlan],
    specs: list[EncoderSpec],
    config: CrossFitConfig,
    *,
    train_table: pd.DataFrame,
    collection: list | None = None,
    cache: Path | None = None,
    profile: StageProfile | None = None,
) -> tuple[list[_Training], list[EncoderSpec]]:
    """Every encoder training of the cross-fitting (what each trains on, starts from and scores; with ``cache``
    its key and whatever of it is cached) and the zero-shot specs, in the order :func:`crossfit_columns` runs
    them; ``train_table`` as that function prepares it. Nothing is trained or scored here."""
    field, options, seed, cluster = config.field, dict(config.options), config.seed, config.cluster
    train_fn = config.train_fn
    train_keys = train_table["query"].map(normalise_query)
    qid_text = dict(zip(pairs["qid"], pairs["query"].map(normalise_query)))
    row_qid = pairs["qid"].to_numpy()
    queries, docs = pairs["query"].tolist(), pairs[field].tolist()
    jobs = scoring_jobs(plans)
    trainings: list[_Training] = []
    zero_shot: list[EncoderSpec] = []  # scored once the trainings are planned (see _share_minilm)
    for spec in specs:
        column = f"{spec.name}_{field}_{spec.column_suffix}"
        if not spec.trainable:
            zero_shot.append(spec)
            continue
        own = spec_options(spec, options)
        start_point = None
        if spec.pretrain in spec.kind.start_mods:
            texts = docs + list(collection or [])
            start_point = _StartingPoint(
                spec, texts, options=own, seed=seed, cache=cache, profile=profile, cluster=cluster
            )
            own = start_point.fold_options
        spec_rows, own = spec_table(train_table, spec.loss, own)
        # the thread count is a runtime setting: out of the cache key unless the user chose it
        training_options = own if not spec.kind.pooled else {"threads": _encoder_pool.THREADS} | own
        continuing = config.continue_outer and spec.kind.continues_outer and train_fn is None
        inner_of: dict[frozenset, _Training] = {}
        # inner trainings first: a continued outer one needs its inner one's key
        for index in [*range(len(plans), len(jobs)), *range(len(plans))] if continuing else range(len(jobs)):
            excluded, targets = jobs[index]
            rows = np.flatnonzero(~train_keys.isin({qid_text[q] for q in excluded}).to_numpy())
            trained_on = set(train_keys.iloc[rows])
            name = "without " + "+".join(sorted(p.name for p in plans if p.test <= excluded))
            start: _StartingPoint | _Continued | None = start_point
            if continuing and index < len(plans):
                inner = inner_of[excluded | plans[(index + 1) % len(plans)].test]
                rows = np.setdiff1d(rows, inner.rows)  # the one fold the inner encoder lacks
                start = _Continued(inner, seed=seed, cache=cache if train_fn is None else None)
                name += f" (continues the encoder {inner.job})"
            table = spec_rows.iloc[rows]
            for fold, scored in targets:
                check_disjoint(trained_on, {qid_text[q] for q in scored}, f"{spec.name} {fold}")
            rows_of = {fold: np.flatnonzero(_member(row_qid, scored)) for fold, scored in targets}
            job = _Training(
                spec,
                column,
                name,
                table,
                training_options,
                start,
                rows_of,
                {fold: ([queries[i] for i in r], [docs[i] for i in r]) for fold, r in rows_of.items()},
                rows=rows,
                outer=plans[index].name if index < len(plans) else None,
            )
            inner_of[excluded] = job
            if cache is not None and train_fn is None:
                job.key = _cache_key(spec, own, table, seed, None if start is None else start.key)
                job.paths = {fold: _scores_path(cache, f"{spec.name}-{job.key}", *job.texts[fold]) for fold in rows_of}
                job.kept = {fold: _load_scores(job.paths[fold], len(r)) for fold, r in rows_of.items()}
                job.record_path = cache / "scores" / f"{spec.name}-{job.key}.training.json"
                job.record = _load_record(job.record_path)
            trainings.append(job)
    return trainings, zero_shot


def crossfit_columns(
    pairs: pd.DataFrame,
    plans: list[FoldPlan],
    specs: list[EncoderSpec],
    config: CrossFitConfig | None = None,
    *,
    train_table: pd.DataFrame | None = None,
    collection: list | None = None,
    cache=None,
    progress: bool = True,
    profile: StageProfile | None = None,
    starts: dict | None = None,
    **settings,
) -> dict[str, dict[str, np.ndarray]]:
    """Neural similarity columns for every outer fold.

    Returns ``{fold name: {column name: float32 array over all rows of pairs}}``; rows outside the fold's
    queries are NaN. ``pairs`` has ``qid, query, docid, <field>, label``; ``train_table`` (default: the
    judged pairs themselves) has ``query, doc, label``. ``collection``: more document texts (no queries, no
    labels) for the ``+spans`` pre-training besides the pairs' own documents. ``config`` (a :class:`CrossFitConfig`; keyword
    ``settings`` replace single fields) gives the document field, the encoder options and the seed.
    ``profile`` records each training's and
    each scoring's seconds and where it ran. ``starts``, when given, gets for every encoder whose trainings
    start from a model worth keeping which folds kept it (:func:`kept_starts`).
    """
    config = dataclasses.replace(config or CrossFitConfig(), **settings)
    field, options, seed, cluster = config.field, dict(config.options), config.seed, config.cluster
    train_fn = config.train_fn
    cache = None if cache is None else Path(cache)
    judged = train_table is None  # the training table's rows are the judged pairs'
    train_table = encoder_table(pairs, field, train_table)
    queries, docs = pairs["query"].tolist(), pairs[field].tolist()
    columns: dict[str, dict[str, np.ndarray]] = {p.name: {} for p in plans}
    jobs = scoring_jobs(plans)
    n_jobs = len(jobs) * sum(s.trainable for s in specs)
    teacher_cache = None
    if cache is not None and train_fn is None and any(not s.trainable or s.teacher is not None for s in specs):
        from ltrfeat.features.encoders import distill

        teacher_cache = cache / "teacher"
        distill.load_vectors(teacher_cache)  # MiniLM vectors of earlier runs: each text encoded once, ever
    column_order = [f"{spec.name}_{field}_{spec.column_suffix}" for spec in specs]
    bar = tqdm(total=n_jobs, desc="encoders", unit="fit", disable=not show_progress(progress) or n_jobs == 0)
    engine = contextlib.ExitStack()  # every MiniLM pass of this process below runs on the chosen engine
    try:
        from ltrfeat.features.encoders import sbert_onnx

        engine.enter_context(sbert_onnx.engine(minilm_engine(options)))
        trainings, zero_shot = plan_trainings(
            pairs, plans, specs, config, train_table=train_table, collection=collection, cache=cache, profile=profile
        )
        if train_fn is None:
            check_trainings(trainings)

        def finish(
            job: _Training,
            scores: dict,
            train_seconds: float,
            score_seconds: float,
            cached: bool,
            record: dict | None = None,
            where: str = "this process",
        ) -> None:
            for fold, values in scores.items():
                if job.kept.get(fold) is None:
                    job.kept[fold] = values
                    if fold in job.paths:
                        _save_scores(job.paths[fold], values)
            if record is not None and job.record is None:
                job.record = record
                if job.record_path is not None:
                    write_checked(job.record_path, json.dumps(record).encode("utf-8"))
            if profile is not None:
                profile.encoder(
                    job.spec.name,
                    job.job,
                    train_seconds=train_seconds,
                    score_seconds=score_seconds,
                    cached=cached,
                    where=where,
                )
            bar.update()

        todo = []
        for job in trainings:
            if job.done:
                finish(job, {}, 0.0, 0.0, True, where="cache")
            else:
                todo.append(job)
        groups = {} if train_fn is not None else _frozen_groups(todo)
        teachers = [s for s in zero_shot if s.kind.teacher_scorer]
        shared = _share_minilm(teachers, groups, queries, docs, cluster=cluster, profile=profile, bar=bar)
        if cluster is not None and train_fn is None:
            distilling = [s for s in specs if any(distils_in_folds(j.spec, j.options) for j in todo if j.spec is s)]
            _teacher_vectors_on(cluster, specs, pairs, train_table, field=field, profile=profile, distilling=distilling)
        for spec in zero_shot:
            start = time.perf_counter()
            scores = _zero_shot(spec).similarity(queries, docs).astype(np.float32)
            if profile is not None:
                where = "this process" if cluster is None else "this process, MiniLM vectors from the dask cluster"
                profile.zero_shot(spec.name, score_seconds=time.perf_counter() - start, where=where)
            for plan in plans:
                columns[plan.name][f"{spec.name}_{field}_{spec.column_suffix}"] = scores
            if spec.kind.teacher_scorer:
                _offer_zero_shot(todo, spec.path, scores, judged=judged)
        frozen = (
            {}
            if train_fn is not None
            else _keep_frozen(groups, profile=profile, bar=bar, cluster=cluster, shared=shared)
        )
        pooled = [j for j in todo if train_fn is None and j.spec.kind.pooled]
        threads = max([j.options["threads"] for j in pooled], default=1)
        workers = plan_workers(
            config.encoder_jobs or None,
            rows=sum(len(j.table) for j in pooled),
            cores=available_cores(),
            tasks=len(pooled),
            threads=threads,
        )
        if pooled and (cluster is not None or workers > 1):
            if cluster is not None:
                run, workers, on = cluster.run, cluster.workers(), "dask"
            else:
                run, on = functools.partial(_encoder_pool.run_trainings, workers=workers), "pool"
            if profile is not None:
                profile.encoder_pool(trainings=len(pooled), processes=workers, threads=threads, on=on)
            _run_pooled(pooled, run=run, seed=seed, cache=cache, bar=bar, finish=finish, frozen=frozen)
            todo = [j for j in todo if j not in pooled]
        for job in todo:
            bar.set_postfix_str(f"{job.spec.name} on {len(job.table)} pairs")
            start = time.perf_counter()
            with freed_memory_kept():  # as in a pool worker: a step's buffers reused, not paged in afresh
                if train_fn is not None:
                    encoder, cached = train_fn(job.spec, job.table), False
                else:
                    encoder, cached = _train(
                        job.spec,
                        job.table,
                        options=job.options,
                        seed=seed,
                        cache=cache,
                        key=job.key,
                        start=job.start,
                        start_scores=job.start_scores,
                    )
                trained = time.perf_counter()
                if job.start is not None and job.start.seconds:  # counted as its own job, not this training's
                    start, job.start.seconds = start + job.start.seconds, 0.0
                for other in todo:
                    if isinstance(other.start, _Continued) and other.start.inner is job:
                        other.start.set(encoder)
                scores = fold_scores(encoder, job.texts, job.zero_shot)
            finish(job, scores, trained - start, time.perf_counter() - trained, cached, training_record(encoder))
        for job in trainings:
            for fold, target in job.rows_of.items():
                columns[fold].setdefault(job.column, np.full(len(pairs), np.nan, dtype=np.float32))[target] = job.kept[
                    fold
                ]
        if starts is not None:
            starts.update(kept_starts(specs, trainings, options))
    finally:
        engine.close()
        bar.close()
        if teacher_cache is not None:  # also after an interruption: the vectors computed so far stay valid
            distill.save_vectors(teacher_cache)
    return {plan.name: {c: columns[plan.name][c] for c in column_order} for plan in plans}


START_NAMES = {  # what a training keeps when it keeps its start, by the spec's +MOD (EncoderKind.keeps_start)
    None: "the zero-shot model",
    "spans": "the span pre-training",
    "spans+teacher": "the span pre-training distilled from MiniLM",
    "init": "the +init bundle",
    "teacher": "the towers distilled from MiniLM",
}


def kept_starts(specs: list[EncoderSpec], trainings: list, options: dict) -> dict:
    """For every encoder of ``specs`` whose trainings start from a model worth keeping, the report's record of
    the keep-start rule (:mod:`ltrfeat.features.encoders.epochs`, "Keeping the starting point"):
    ``{name: {"start", "margin", "folds": {fold: record}, "kept_in": [fold], "inner": {"trainings", "kept"}}}``.

    A fold's record is the ``keep_start`` of the training whose encoder scores its test rows (``kept``: that
    training kept its own start) and ``start_kept``: whether that encoder is the spec's start itself -- for an
    outer training that continues an inner one (whose record is its ``continued``), both kept their start. None
    where the rule did not apply (no validation queries).
    """
    out: dict = {}
    for spec in specs:
        if not spec.trainable or not _keeps_start(spec):
            continue
        own = [t for t in trainings if t.spec is spec]
        folds: dict = {}
        for job in (t for t in own if t.outer is not None):
            record = dict((job.record or {}).get("keep_start") or {})
            record["start_kept"] = record.get("kept")
            if isinstance(job.start, _Continued):
                inner = (job.start.inner.record or {}).get("keep_start")
                record["continued"] = inner
                if record["start_kept"] is not None:
                    record["start_kept"] = None if inner is None else record["start_kept"] and inner["kept"]
            folds[job.outer] = record
        inner = [(t.record or {}).get("keep_start") for t in own if t.outer is None]
        start = START_NAMES.get(spec.pretrain, "its starting point")
        if spec.pretrain == "spans+teacher" and any(distils_in_folds(spec, t.options) for t in own):
            start += ", then on the fold's training pairs"
        out[spec.name] = {
            "start": start,
            "margin": spec_options(spec, options).get("keep_start_margin", KEEP_START_MARGIN),
            "folds": folds,
            "kept_in": [fold for fold, r in folds.items() if r["start_kept"]],
            "inner": {"trainings": len(inner), "kept": sum(bool(r and r["kept"]) for r in inner)},
        }
    return out


def build_folds(
    base: RankingSet,
    plans: list[FoldPlan],
    columns: dict[str, dict[str, np.ndarray]],
    *,
    source: str = "encoder",
    pairs_name: str = "the judged pairs",
) -> list[Fold]:
    """Per outer fold, ``base`` (rows aligned with the pairs) plus that fold's neural columns, split
    into ranker train / validation / test by the plan; each fold's ``origin`` names it in ``pairs_name``."""
    folds = []
    for i, plan in enumerate(plans):
        data = base
        for name, values in columns[plan.name].items():
            data = data.with_columns([name], values, source=f"{source}:{name.rsplit('_', 2)[0]}")

        def part(qs, data=data):
            return data.take(np.flatnonzero(_member(data.qid, qs)))

        origin = f"query fold {i + 1} of {len(plans)} of {pairs_name}, encoder columns cross-fitted (see Cross-fitting)"
        folds.append(
            Fold(plan.name, part(plan.train), part(plan.valid) if plan.valid else None, part(plan.test), origin)
        )
    return folds


def out_of_fold(folds: list[Fold]) -> RankingSet:
    """Every fold's test rows in one set: each judged pair once, its neural columns from the encoders trained
    without its query (the folds' feature maps are the same)."""
    tests = [fold.test for fold in folds]
    if any(t.feature_map.names != tests[0].feature_map.names for t in tests):
        raise AssertionError("the folds' feature columns differ")
    joined = lambda name: np.concatenate([getattr(t, name) for t in tests])  # noqa: E731
    return RankingSet(
        joined("qid"),
        joined("label"),
        joined("X"),
        tests[0].feature_map,
        None if tests[0].docid is None else joined("docid"),
        None if tests[0].comment is None else joined("comment"),
    )


def group_pairs(pairs: pd.DataFrame) -> pd.DataFrame:
    """Rows grouped by query (queries in order of first appearance, rows in input order), as
    :func:`ltrfeat.core.text.pairs_to_ranking` orders them."""
    first = {q: i for i, q in enumerate(dict.fromkeys(pairs["qid"]))}
    order = np.argsort(pairs["qid"].map(first).to_numpy(), kind="stable")
    out = pairs.iloc[order].reset_index(drop=True)
    out.attrs = dict(pairs.attrs)
    return out


def n_trainings(k: int) -> int:
    """Encoder trainings per trained encoder for ``k`` outer folds."""
    return k + k * (k - 1) // 2


def scheme(
    *,
    k: int,
    valid_fraction: float,
    seed: int,
    separate_table: bool,
    span_pretrained=(),
    span_distilled=(),
    span_documents: int = 0,
    continued=(),
) -> dict:
    """The cross-fitting scheme in words and numbers, for the report (``span_pretrained``: the +spans and
    +spans+teacher encoders, pre-trained on ``span_documents`` distinct document texts; ``span_distilled``: those
    whose pre-training is first distilled from MiniLM; ``continued``: the encoders whose outer trainings continue
    inner ones, see :attr:`CrossFitConfig.continue_outer`)."""
    source = "a separate training table, filtered by query text" if separate_table else "the judged pairs"
    spans = (
        f" {', '.join(span_pretrained)}: every fold's encoder starts from one pre-training on query-like spans of "
        f"{span_documents} distinct document texts (the pairs' documents and any --collection; softmax loss; no "
        "query or label is read, so no fold's test labels reach it)."
        if span_pretrained
        else ""
    )
    if span_distilled:
        spans += (
            f" {', '.join(span_distilled)}: that pre-training distils MiniLM's in-batch cosine rankings of the "
            "span -> document pairs instead (the softmax span training follows only with span_epochs > 0)."
        )
    if continued:
        spans += (
            f" {', '.join(continued)}: the encoder for fold f's test rows continues the encoder trained without folds "
            "f and f+1 on fold f+1's pairs (every pair outside fold f seen once, 2 passes over the pairs instead "
            "of 3)."
        )
    return {
        "outer_folds": k,
        "inner_parts": k - 1,
        "ranker_valid_fraction": valid_fraction,
        "seed": seed,
        "encoder_training_data": source,
        "trainings_per_encoder": n_trainings(k),
        "description": (
            f"Queries are split into {k} folds (seed {seed}). For each fold, the ranker is tested on the fold's "
            f"queries and trained on the others ({valid_fraction:.0%} of them held out for early stopping). Test "
            f"rows are scored by an encoder trained on {source} without the test queries; the ranker's rows of "
            f"each other fold are scored by an encoder trained without the test queries and without that fold "
            f"(out-of-fold scores). No encoder scores a query it was trained on; {n_trainings(k)} trainings per "
            f"trained encoder.{spans}"
        ),
    }


def text_folds(
    pairs: pd.DataFrame,
    config: CrossFitConfig | None = None,
    *,
    lexical,
    specs: list[EncoderSpec],
    train_table: pd.DataFrame | None = None,
    collection: list | None = None,
    cache=None,
    progress: bool = True,
    profile: StageProfile | None = None,
    **settings,
):
    """From judged pairs to cross-fitted ablation folds, ready for :func:`ltrfeat.experiments.ablation.run_ablation`.

    ``config`` is a :class:`CrossFitConfig` (keyword ``settings`` replace single fields); ``collection`` as in
    :func:`crossfit_columns`. ``lexical`` is a
    list of unfitted lexical extractors (fitted on all documents: corpus statistics use no labels). Returns
    ``(folds, neural groups {name: [column]}, base column names, scheme dict)``: a list of
    :class:`~ltrfeat.experiments.folds.Fold` whose ``origin`` names the pairs' file (``pairs.attrs["source"]``,
    set by :func:`ltrfeat.core.text.read_judged_pairs`); the scheme's ``keep_start`` says which folds' encoders
    kept their starting model (:func:`kept_starts`), for encoders that start from one. ``profile`` gets the
    stages "lexical features" and "encoder columns" and every encoder training.
    """
    from ltrfeat.features.extract import extract_pairs

    config = dataclasses.replace(config or CrossFitConfig(), **settings)
    k, valid_fraction, seed = config.k, config.valid_fraction, config.seed
    profile = profile or StageProfile()
    pairs = group_pairs(pairs)
    with profile.stage("lexical features"):
        base = extract_pairs(pairs, lexical, conflicts=config.conflicts)
    if not (
        np.array_equal(base.qid, pairs["qid"].to_numpy(object))
        and np.array_equal(base.docid, pairs["docid"].to_numpy(object))
    ):
        raise AssertionError("lexical features are not aligned with the judged pairs")
    plans = plan_folds(pairs["qid"], k=k, valid_fraction=valid_fraction, seed=seed)
    starts: dict = {}
    with profile.stage("encoder columns"):
        columns = crossfit_columns(
            pairs,
            plans,
            specs,
            config,
            train_table=train_table,
            collection=collection,
            cache=cache,
            progress=progress,
            profile=profile,
            starts=starts,
        )
    folds = build_folds(base, plans, columns, pairs_name=str(pairs.attrs.get("source", "the judged pairs")))
    groups = {spec.name: [name] for spec, name in zip(specs, next(iter(columns.values())))}
    info = scheme(
        k=k,
        valid_fraction=valid_fraction,
        seed=seed,
        separate_table=train_table is not None,
        span_pretrained=[s.name for s in specs if s.span_pretrained],
        span_distilled=[s.name for s in specs if s.pretrain == "spans+teacher"],
        span_documents=len(set(pairs[config.field].dropna()) | set(collection or [])),
        continued=[s.name for s in specs if s.kind.continues_outer]
        if config.continue_outer and config.train_fn is None
        else [],
    )
    if starts:
        info["keep_start"] = starts
    return folds, groups, base.feature_map.names, info
