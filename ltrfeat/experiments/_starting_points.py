"""Where a fold's encoder starts: a ``+init`` bundle or a ``+spans`` / ``+spans+teacher`` pre-training made once for
every fold (:class:`StartingPoint`), or, for an outer MiniLM fine-tuning that continues an inner one, that inner
training's encoder (:class:`ContinuedStart`)."""

from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path

import pandas as pd

from ltrfeat.core.errors import ParameterError
from ltrfeat.experiments._encoder_cache import cached_encoder
from ltrfeat.experiments._encoder_options import TEACHER_OPTIONS
from ltrfeat.experiments.span_settings import (
    DISTILL_EPOCHS,
    DISTILL_PAIRS,
    FOLD_DISTILL,
    FOLD_DISTILL_SHARED,
    LONG_DOC_FOLD_DISTILL,
    LONG_DOC_SPANS,
    SPAN_DISTILL,
    SPAN_EPOCHS_TEACHER,
    SPAN_OPTIONS,
    SPAN_SHAPE,
    SPANS_PER_DOC,
    SPANS_PER_DOC_TEACHER,
    SPANS_WANTED,
    long_documents,
)
from ltrfeat.encoders.spec import EncoderSpec
from ltrfeat.encoders.pretraining import Pretraining

# the span pre-training's own settings over the fold trainings' options (``epochs`` comes from ``span_epochs``): what
# it overrides stays out of its cache key, so a --quick and a full run share one pre-training
_SPAN_TRAINING = {"val_fraction": 0.02}
_SPAN_OVERRIDES = ("epochs", *_SPAN_TRAINING)


class StartingPoint:
    """The weights every fold's encoder of a ``+init`` or ``+spans`` spec starts from, made (or loaded) on first
    use only, so a run whose fold encoders are all cached never touches it.

    ``+init=BUNDLE``: the bundle (``key``: its bytes' SHA-256). ``+spans``: the spec's model trained once with
    the softmax loss on query-like spans of the pairs' distinct documents (:func:`~ltrfeat.encoders.
    weak.span_pairs`; no query or label is read, so it is leakage-free for every fold), ``span_epochs``
    epochs, ``spans_per_doc`` spans per document (default: enough for 50,000 spans, between 4 and 16 -- 4 for a
    collection of 12,500 documents or more, 16 for the 800 of the sample world, where 4 left the pre-trained CLSM
    below BM25 and 16 lifted it above); ``key`` hashes the texts and the settings the pre-training reads (not the
    fold trainings' ``epochs``, which ``span_epochs`` replaces), and the pre-trained encoder is cached beside the
    fold encoders. ``+spans+teacher``: the same, its towers first distilled from the
    spec's teacher (:mod:`~ltrfeat.encoders.distill`) on the positive span -> document pairs only (the
    span table's negatives add no text, only steps), with the ``distill_*`` options (``distill_settings``, out of
    the fold trainings' options; by default ``distill_loss="vector"`` with towers whose ``out`` is the teacher's
    width unless ``sizes`` names one); MiniLM encodes each distinct span and document once, through the teacher-vector
    cache (on ``cluster`` when given); ``key`` also names the teacher. ``fold_options``: the fold trainings'
    options; with ``fold_distill_epochs`` (default over long documents: :data:`~ltrfeat.experiments.span_settings.
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
        distilled = spec.pretrain == Pretraining.SPANS_TEACHER
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
        if spec.pretrain == Pretraining.INIT:
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
        if fold_distill:  # each fold training distils MiniLM's vectors of its own pairs first (see train_one)
            shared = {k: v for k, v in self.distill_settings.items() if k in FOLD_DISTILL_SHARED}
            self.fold_options = self.options | {"distill_epochs": fold_distill, "distill_rows": "all"} | shared
        if self.span_settings["span_whole"] is None:
            self.span_settings["span_whole"] = 0
        if distilled and "distill_epochs" not in self.distill_settings:  # enough for DISTILL_PAIRS span pairs
            wanted = -(-DISTILL_PAIRS // max(len(self.texts) * self.span_settings["spans_per_doc"], 1))
            self.distill_settings["distill_epochs"] = min(DISTILL_EPOCHS[1], max(DISTILL_EPOCHS[0], wanted))
        teacher = {}
        if distilled:
            from ltrfeat.encoders.distill import teacher_key

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
        from ltrfeat.encoders.encoder import Encoder

        if self._encoder is None:
            start = time.perf_counter()
            if self.spec.pretrain == Pretraining.INIT:
                self._encoder = Encoder.load(self.spec.path)
            else:
                self._encoder = self._pretrained(Encoder)
            self.seconds = time.perf_counter() - start
        return self._encoder

    def file(self, directory: Path) -> Path:
        """A bundle file of the starting weights (made first if need be): the +init bundle, the cached
        pre-trained encoder, or a copy written into ``directory``."""
        if self.spec.pretrain == Pretraining.INIT:
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
        from ltrfeat.encoders.training import train_encoder
        from ltrfeat.encoders.weak import span_pairs

        path = self._path()
        start = time.perf_counter()
        encoder = None if path is None else cached_encoder(path, encoder_cls.load)
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
                    from ltrfeat.encoders.distill import teacher_width

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


class ContinuedStart:
    """The starting point of an outer MiniLM fine-tuning that continues an inner one (``continue_outer``):
    the inner training's encoder, as trained in this run or loaded from the cache (trained again when its
    scores were cached but its bundle is gone, by ``trainer``). ``inner``: that
    :class:`~ltrfeat.experiments._training_plan.Training`; ``key``: the inner encoder's cache key."""

    def __init__(self, inner, *, trainer, seed: int, cache: Path | None):
        self.inner, self.trainer, self.seed, self.cache = inner, trainer, seed, cache
        self.key = inner.key
        self.seconds = 0.0
        self._encoder = None

    def set(self, encoder) -> None:
        self._encoder = encoder

    def encoder(self):
        if self._encoder is None:
            start = time.perf_counter()
            job = self.inner
            self._encoder, _ = self.trainer.train(
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
    ``+spans+teacher`` one whose options hold distillation settings (``fold_distill_epochs``, :class:`StartingPoint`):
    MiniLM's vectors of the fold's training queries and documents, from the span pre-training's weights."""
    return spec.pretrain == Pretraining.TEACHER or (
        spec.pretrain == Pretraining.SPANS_TEACHER and "distill_epochs" in options
    )
