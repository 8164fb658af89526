"""What an encoder kind is: :class:`EncoderKind` (the registry's entries, see
:mod:`ltrfeat.encoders.registry`) and the :class:`PairScorer` / :class:`TextEncoder` protocols of the
models a kind loads."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Protocol, runtime_checkable

import numpy as np

from ltrfeat.core.settings import Settings

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
    config : the training config class (:class:`~ltrfeat.encoders.config.TrainingConfig`); None for a
        zero-shot kind, used as it is.
    train : ``train(pairs, config, *, threads, checkpoint, resume, progress, **trainer_args, **options)`` ->
        ``(model, history)``.
    trainer_args : ``train`` arguments beside the config that ``train-encoder`` passes when given (``teacher``,
        ``init`` -- a bundle path, loaded with ``load`` --, ``base``).
    spec_settings : ``spec_settings(spec, start)`` -> the ``train`` arguments an ``ablate --encoder`` spec stands
        for (its loss, +MOD, @SCORE and =PATH; ``start`` the weights it starts from, or None).
    scorer : ``scorer(path)`` -> the model a zero-shot kind scores an ablation's pairs with [default: ``load``].
    pair_scorer : scores (query, document) pairs directly (column suffix ``score``), no per-text vectors.
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
    crossfit : how an ablation's cross-fitting schedules the kind's trainings (worker pool, cost, shared starting
        points, ...): plain values by name, whose names, defaults and meaning the experiments layer owns
        (:class:`ltrfeat.experiments.crossfit_traits.CrossFitTraits`; empty: every default).
    """

    name: str
    summary: str
    load: Callable
    config: type[Settings] | None = None
    train: Callable | None = None
    trainer_args: tuple[str, ...] = ()
    spec_settings: Callable | None = None
    scorer: Callable | None = None
    pair_scorer: bool = False
    losses: tuple[str, ...] = ()
    mods: Mapping[str, str] = field(default_factory=dict)
    mod_help: Mapping[str, str] = field(default_factory=dict)
    scores: tuple[str, ...] = ()
    dot_mods: tuple[str, ...] = ()
    path: str = ""
    needs_file: bool = True
    exports: tuple[str, ...] = ()
    transformer: bool = False
    crossfit: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self):
        if not _NAME_OK(self.name):
            raise ValueError(f"encoder kind name {self.name!r}: use lowercase letters, digits and inner dashes")
        if (self.config is None) != (self.train is None) or (self.train is None) != (self.spec_settings is None):
            raise ValueError(f"encoder kind {self.name!r}: give config, train and spec_settings together, or none")
        for name in ("mods", "mod_help", "crossfit"):
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
