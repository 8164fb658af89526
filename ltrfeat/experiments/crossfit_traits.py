"""What the cross-fitting reads of an encoder kind beside its plug-in contract: how its trainings are scheduled.

A kind declares these as plain values in ``EncoderKind.crossfit`` (``crossfit={"pooled": True, "cost": 6.0}``), so
that a new kind is one module and one registration in the encoders' layer; their names, defaults and meaning are
this module's (:class:`CrossFitTraits`), read through :func:`traits`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from types import MappingProxyType

from ltrfeat.core.errors import LtrfeatError


@dataclasses.dataclass(frozen=True)
class CrossFitTraits:
    """How an ablation cross-fits one encoder kind.

    pooled : its cross-fitted trainings run in the ablation's worker processes (the kind must then be found in a
        fresh process: built in, or registered through an entry point).
    cost : relative cost of a cross-fitted training per table row (the pool starts the costliest first);
        ``mod_cost`` multiplies it for a +MOD.
    start_mods : ``+MOD`` choices whose cross-fitted trainings all start from one shared starting point (``+init``:
        the given bundle; ``+spans``: one pre-training on the documents' spans), made once per ablation.
    continues_outer : an ablation's outer trainings may continue inner ones (``CrossFitConfig.continue_outer``).
    keeps_start : the ``+MOD`` choices (None: the spec without one) whose trainings start from a model worth keeping,
        which the trainer keeps unless a trained epoch beats it clearly (``keep_start_margin``; the training
        record's ``keep_start``, carried into the ablation report).
    frozen_prefix : its trainings read MiniLM's frozen lower layers, run once per ablation over every text.
    teacher_scorer : its zero-shot scores are cosines of MiniLM teacher vectors (cached per text, shared with
        ``+teacher`` distillation, made on the cluster under ``ablate --dask``).
    """

    pooled: bool = False
    cost: float = 1.0
    mod_cost: Mapping[str, float] = dataclasses.field(default_factory=lambda: MappingProxyType({}))
    start_mods: tuple[str, ...] = ()
    continues_outer: bool = False
    keeps_start: tuple[str | None, ...] = ()
    frozen_prefix: bool = False
    teacher_scorer: bool = False

    def training_cost(self, rows: int, mod: str | None = None) -> float:
        """Relative cost of a cross-fitted training on ``rows`` table rows."""
        return rows * self.cost * (1.0 if mod is None else self.mod_cost.get(mod, 1.0))


def traits(kind) -> CrossFitTraits:
    """The :class:`CrossFitTraits` an :class:`~ltrfeat.encoders.kind.EncoderKind` declares in its
    ``crossfit``; a name the cross-fitting does not know is refused (a typo would otherwise be ignored)."""
    names = [f.name for f in dataclasses.fields(CrossFitTraits)]
    unknown = sorted(set(kind.crossfit) - set(names))
    if unknown:
        raise LtrfeatError(
            f"encoder kind {kind.name!r}: crossfit names {unknown[0]!r}, which the cross-fitting does not read",
            fix=f"use {', '.join(names)}",
        )
    return CrossFitTraits(**kind.crossfit)
