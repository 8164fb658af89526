"""Encoder kinds, each described once: what every command that lists, trains, loads or exports encoders reads.

An :class:`EncoderKind` names a kind (``clsm``, ``dssm``, ``deepmatch``, ``sbert``, ``sbert-ft``, ...) and holds
everything the rest of the project asks of it: its training config and trainer (``train-encoder``, the
cross-fitted ``ablate --encoder`` trainings), its loader (``extract`` / ``serve`` / ``embed --encoder
NAME=PATH``), whether it scores pairs directly or encodes each text (column suffix ``_score`` or ``_cos`` /
``_dot``), how an ablation cross-fits it (``crossfit``: worker pool, cost, starting points; read by
:mod:`ltrfeat.experiments.crossfit_traits`), its piece of the
``ablate --encoder`` grammar (``kind[:LOSS][+MOD][@SCORE][=PATH]``, parsed in
:mod:`ltrfeat.encoders.spec`) and its exports.

Built-in kinds are registered by :mod:`ltrfeat.encoders.kinds`; another package registers its own
with :func:`register_encoder` (or an entry point in the ``ltrfeat.encoders`` group naming an
:class:`EncoderKind`, loaded on first lookup, which is how spawned worker processes find it too). See
docs/new-encoder.md.
"""

from __future__ import annotations

from ltrfeat.core.errors import LtrfeatError
from ltrfeat.core.plugins import load_entry_points
from ltrfeat.encoders.kind import EncoderKind, PairScorer, TextEncoder, lazy
from ltrfeat.encoders.kinds import BUILTIN

__all__ = [
    "EncoderKind",
    "bundle_kind",
    "PairScorer",
    "TextEncoder",
    "encoder_kind",
    "encoder_kinds",
    "export_formats",
    "lazy",
    "register_encoder",
    "unregister_encoder",
]

ENCODER_ENTRY_POINTS = "ltrfeat.encoders"


_KINDS: dict[str, EncoderKind] = {kind.name: kind for kind in BUILTIN}
_LOADED = {"entry_points": False}


def register_encoder(kind: EncoderKind, *, replace: bool = False) -> EncoderKind:
    """Make ``kind`` known to every command; a second kind of the same name is an error unless ``replace``."""
    if not isinstance(kind, EncoderKind):
        raise TypeError(f"register an EncoderKind, not {type(kind).__name__}")
    if kind.name in _KINDS and not replace and _KINDS[kind.name] is not kind:
        raise ValueError(f"encoder kind {kind.name!r} is registered already")
    _KINDS[kind.name] = kind
    return kind


def unregister_encoder(name: str) -> None:
    """Forget a kind registered at run time (tests)."""
    _KINDS.pop(name, None)


def encoder_kinds() -> dict[str, EncoderKind]:
    """Every known kind by name, built-in ones first."""
    _entry_points()
    return dict(_KINDS)


def encoder_kind(name: str) -> EncoderKind:
    """The kind called ``name``; an :class:`~ltrfeat.core.errors.LtrfeatError` naming the known ones otherwise."""
    if name not in _KINDS:
        _entry_points()
    if name not in _KINDS:
        raise LtrfeatError(f"unknown encoder kind {name!r}", fix=f"use one of {', '.join(_KINDS)}")
    return _KINDS[name]


def export_formats() -> tuple[str, ...]:
    """Every ``export-encoder --to`` format some known kind exports to."""
    return tuple(dict.fromkeys(f for kind in encoder_kinds().values() for f in kind.exports))


def bundle_kind(path) -> str | None:
    """The kind name an ``.ltrenc`` bundle records (its model's ``architecture``, or the bundle kind of a kind
    with its own, e.g. ``sbert-ft``); None when ``path`` is not a readable bundle (its loader then says why)."""
    import json

    from safetensors import safe_open

    try:
        with safe_open(str(path), framework="pt") as fh:
            header = json.loads((fh.metadata() or {})["ltrenc"])
        kind = header.get("kind")
        return kind if kind not in ("encoder", "checkpoint") else header["model"]["architecture"]
    except Exception:  # not a bundle, damaged, or not readable: the loader gives the one-line error
        return None


def _entry_points() -> None:
    load_entry_points(ENCODER_ENTRY_POINTS, EncoderKind, _KINDS, _LOADED)
