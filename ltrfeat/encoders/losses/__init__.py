"""Ranking losses as objects: one module per loss, each a small frozen class carrying its settings, registered once.

A loss scores one mini-batch of samples (:class:`~ltrfeat.encoders.losses.base.RankingLoss`):
``loss(pos, neg, mask=, labels=, weight=)`` with ``pos`` (B,) the score R(Q, D) of each sample's own document,
``neg`` (B, J) those of its negative candidates, ``mask`` (B, J) the real candidates, ``labels`` (B,) the soft
labels and ``weight`` (B,) a weight per sample (e.g. a click's inverse propensity): the loss is then the weighted
mean over samples, ``sum_i w_i l_i / sum_i w_i`` (None: the plain mean).

The registry below names each built-in loss once, by the class's import path, so that listing the names (the
configs' checks, ``--loss`` choices, the ``ablate --encoder`` grammar) imports no torch. A trainer builds its loss
with :func:`make_loss` from its config's settings: each loss takes the ones it has a field for (``gamma``,
``margin``). Adding a loss is one module and one line here (or :func:`register_loss` at run time); see
docs/new-loss.md.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from ltrfeat.core.errors import ParameterError

if TYPE_CHECKING:
    from ltrfeat.encoders.losses.base import RankingLoss

__all__ = ["LossName", "loss_class", "loss_names", "make_loss", "register_loss", "unregister_loss"]

_LOSSES: dict[str, Any] = {  # name -> the class, or "module:Class" until first used
    "softmax": f"{__name__}.softmax:SoftmaxLoss",
    "generalized": f"{__name__}.generalized:GeneralizedLoss",
    "hinge": f"{__name__}.hinge:HingeLoss",
}


def register_loss(cls: type[RankingLoss], *, replace: bool = False) -> type[RankingLoss]:
    """Make the loss class ``cls`` known by its ``name`` to every trainer and config; a second loss of the same
    name is an error unless ``replace``."""
    from ltrfeat.encoders.losses.base import RankingLoss

    if not (isinstance(cls, type) and issubclass(cls, RankingLoss)):
        raise TypeError(f"register a RankingLoss subclass, not {cls!r}")
    if cls.name in _LOSSES and not replace and loss_class(cls.name) is not cls:
        raise ValueError(f"loss {cls.name!r} is registered already")
    _LOSSES[cls.name] = cls
    return cls


def unregister_loss(name: str) -> None:
    """Forget a loss registered at run time (tests, worked examples)."""
    _LOSSES.pop(name, None)


def loss_names() -> tuple[str, ...]:
    """Every registered loss's name, built-in ones first."""
    return tuple(_LOSSES)


def loss_class(name: str) -> type[RankingLoss]:
    """The loss class registered as ``name``."""
    if name not in _LOSSES:
        raise ParameterError(f"unknown loss {name!r}", fix=f"use one of {', '.join(_LOSSES)}", param="loss")
    target = _LOSSES[name]
    if isinstance(target, str):
        module, _, attr = target.partition(":")
        target = _LOSSES[name] = getattr(importlib.import_module(module), attr)
    return target


def make_loss(name: str, **settings: Any) -> RankingLoss:
    """The loss ``name`` with the ``settings`` it has a field for (a trainer passes all of its loss settings)."""
    return loss_class(name).from_settings(settings)


class LossName:
    """A config constraint: the name of a registered loss (read when checked, so a loss registered at run time
    is accepted)."""

    def accepts(self, value: object) -> bool:
        return isinstance(value, str) and value in _LOSSES

    def __str__(self) -> str:
        return "one of " + ", ".join(_LOSSES)
