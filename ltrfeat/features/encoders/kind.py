"""What an encoder kind is: :class:`EncoderKind` (the registry's entries, see
:mod:`ltrfeat.features.encoders.registry`) and the :class:`PairScorer` / :class:`TextEncoder` protocols of the
models a kind loads."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Protocol, runtime_checkable

import numpy as np

__all__ = ["EncoderKind", "PairScorer", "TextEncoder", "lazy"]


@runtime_checkable
class PairScorer(Protocol):
    """What every encoder kind's loaded model does: score aligned (query, document) text pairs and persist."""

    def similarity(self, queries, docs, *, batch_size: int = ...) -> np.ndarray:
        """float32 (n,) relevance of each aligned pair."""

    def save(self, path) -> None:
        """Write the model to ``path`` (atomically); zero-shot models are not saved."""

    @classmethod
    def load(cls, path) -> PairScorer:
        """Read a model written by :meth:`save`; never unpickles."""


@runtime_checkable
class TextEncoder(PairScorer, Protocol):
    """A two-tower kind: each text has a vector, ``similarity`` is the dot product of the two sides' vectors
    (L2-normalised for a cosine), so the vectors of distinct texts are computed once and cached."""

    def encode(self, texts, *, side: str = "query", batch_size: int = ...) -> np.ndarray:
        """float32 (n, dim) vectors of ``texts`` as a ``side`` (``"query"`` or ``"doc"``)."""


def lazy(target: str) -> Callable:
    """A callable standing for ``"module:attribute[.attribute]"``, imported at its first call (so listing
    kinds imports no torch)."""
    module, _, name = target.partition(":")

    def call(*args, **kwargs):
        value: Any = importlib.import_module(module)
        for part in name.split("."):
            value = getattr(value, part)
        return value(*args, **kwargs)

    call.__qualname__ = call.__name__ = name
    call.__doc__ = f"{target}, imported when first called."
    return call


@dataclass(frozen=True)
class EncoderKind:
    """One encoder kind.

    name : the kind's name in every command (``--model``, ``--encoder``, column and feature-set names).
    summary : one line for ``--help`` and ``ltrfeat features``.
    load : ``load(path)`` -> the model (a :class:`TextEncoder` or, with ``pair_scorer``, a :class:`PairScorer`);
        ``path`` is None for a zero-shot kind's default model.
    config : the training config class (:class:`~ltrfeat.features.encoders.config.TrainingConfig`); None for a
        zero-shot kind, used as it is.
    train : ``train(pairs, config, *, threads, checkpoint, resume, progress, **trainer_args, **options)`` ->
        ``(model, history)``.
    trainer_args : ``train`` arguments beside the config that ``train-encoder`` passes when given (``teacher``,
        ``init`` -- a bundle path, loaded with ``load`` --, ``base``).
    spec_settings : ``spec_settings(spec, start)`` -> the ``train`` arguments an ``ablate --encoder`` spec stands
        for (its loss, +MOD, @SCORE and =PATH; ``start`` the weights it starts from, or None).
    scorer : ``scorer(path)`` -> the model a zero-shot kind scores an ablation's pairs with [default: ``load``].
    teacher_scorer : its zero-shot scores are cosines of MiniLM teacher vectors (cached per text, shared with
        ``+teacher`` distillation, made on the cluster under ``ablate --dask``).
    pair_scorer : scores (query, document) pairs directly (column suffix ``score``), no per-text vectors.
    pooled : its cross-fitted trainings run in the ablation's worker processes (the kind must then be found in a
        fresh process: built in, or registered through an entry point).
    start_mods : ``+MOD`` choices whose cross-fitted trainings all start from one shared starting point (``+init``:
        the given bundle; ``+spans``: one pre-training on the documents' spans), made once per ablation.
    continues_outer : an ablation's outer trainings may continue inner ones (``CrossFitConfig.continue_outer``).
    keeps_start : the ``+MOD`` choices (None: the spec without one) whose trainings start from a model worth keeping,
        which the trainer keeps unless a trained epoch beats it clearly (``keep_start_margin``; the training
        record's ``keep_start``, carried into the ablation report).
    frozen_prefix : its trainings read MiniLM's frozen lower layers, run once per ablation over every text.
    cost : relative cost of a cross-fitted training per table row (the pool starts the costliest first);
        ``mod_cost`` multiplies it for a +MOD.
    losses : the ``:LOSS`` choices of its ``ablate`` spec, the default first (empty: takes no loss).
    mods : ``+MOD`` choices -> the ``=PATH`` they take: ``""`` none, ``"[=DIR]"`` optional, ``"=BUNDLE"`` required.
    mod_help : ``+MOD`` -> what it does, for ``ablate --encoder --help``.
    scores : ``@SCORE`` choices, the default first; ``dot_mods``: mods whose default score is ``dot``.
    path : the ``=PATH`` the kind itself takes (``"[=DIR]"``: optional), ``""``: none.
    needs_file : ``extract`` / ``serve`` need ``NAME=PATH`` (a zero-shot kind may run its default model).
    exports : the ``export-encoder --to`` formats whose exporter takes this kind (e.g. ``("onnx",)``).
    transformer : it runs every text through a transformer, hundreds of times the CPU per text of the lexical
        features or a CLSM / DSSM when served; an ablation's verdict then names the lightest feature set its
        selection could not tell from the recommended one.
    """

    name: str
    summary: str
    load: Callable
    config: type | None = None
    train: Callable | None = None
    trainer_args: tuple[str, ...] = ()
    spec_settings: Callable | None = None
    scorer: Callable | None = None
    teacher_scorer: bool = False
    pair_scorer: bool = False
    pooled: bool = False
    start_mods: tuple[str, ...] = ()
    continues_outer: bool = False
    keeps_start: tuple[str | None, ...] = ()
    frozen_prefix: bool = False
    cost: float = 1.0
    mod_cost: Mapping[str, float] = field(default_factory=dict)
    losses: tuple[str, ...] = ()
    mods: Mapping[str, str] = field(default_factory=dict)
    mod_help: Mapping[str, str] = field(default_factory=dict)
    scores: tuple[str, ...] = ()
    dot_mods: tuple[str, ...] = ()
    path: str = ""
    needs_file: bool = True
    exports: tuple[str, ...] = ()
    transformer: bool = False

    def __post_init__(self):
        if not _NAME_OK(self.name):
            raise ValueError(f"encoder kind name {self.name!r}: use lowercase letters, digits and inner dashes")
        if (self.config is None) != (self.train is None) or (self.train is None) != (self.spec_settings is None):
            raise ValueError(f"encoder kind {self.name!r}: give config, train and spec_settings together, or none")
        for name in ("mod_cost", "mods", "mod_help"):
            object.__setattr__(self, name, MappingProxyType(dict(getattr(self, name))))

    @property
    def trainable(self) -> bool:
        """Trained on judged pairs (False: zero-shot)."""
        return self.config is not None

    def default_score(self, mod: str | None = None) -> str | None:
        """The score a spec without ``@SCORE`` trains (None: the kind has no score choice)."""
        if not self.scores:
            return None
        return "dot" if mod in self.dot_mods else self.scores[0]

    def column_suffix(self, score: str | None) -> str:
        """``score`` for a pair scorer, ``dot`` for a dot-product score, else ``cos``."""
        if self.pair_scorer:
            return "score"
        return "dot" if score == "dot" else "cos"

    def training_cost(self, rows: int, mod: str | None = None) -> float:
        """Relative cost of a cross-fitted training on ``rows`` table rows."""
        return rows * self.cost * (1.0 if mod is None else self.mod_cost.get(mod, 1.0))

    @property
    def grammar(self) -> str:
        """The kind's piece of the ``ablate --encoder`` grammar, e.g. ``dssm[:softmax|generalized|hinge][+rbm|...]``."""
        text = self.name
        if self.losses:
            text += f"[:{'|'.join(self.losses)}]"
        if self.mods:
            text += "[" + "|".join(f"+{mod}{path}" for mod, path in self.mods.items()) + "]"
        if self.scores:
            text += "[" + "|".join(f"@{score}" for score in self.scores) + "]"
        return text + self.path


def _NAME_OK(name: str) -> bool:
    parts = name.split("-")
    return bool(name) and all(p and p.isascii() and p.isalnum() and p.lower() == p for p in parts) and name[0].isalpha()
