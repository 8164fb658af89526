"""Per-model encoder training options for ablations: ``epochs=4`` applies to every trained encoder,
``sbert-ft.epochs=1`` only to the ``sbert-ft`` ones (and wins over the unprefixed key).

An options dict may mix both kinds of key. :func:`merge_options` layers explicit options over
defaults so that an explicit unprefixed key also replaces the defaults' prefixed keys of the same
name (``--encoder-option epochs=2`` means 2 epochs for every model). :func:`model_options` resolves
the dict for one model; for a model without prefixed keys the result equals the unprefixed
options, so cache keys computed from it do not change.
"""

from __future__ import annotations

from ltrfeat.core.errors import LtrfeatError


def _split(key: str) -> tuple[str | None, str]:
    model, sep, name = key.rpartition(".")
    return (model or None) if sep else None, name


def merge_options(defaults: dict, explicit: dict) -> dict:
    """``defaults`` overridden by ``explicit``; an unprefixed explicit key drops the defaults' ``*.key``."""
    names = {key for key in explicit if _split(key)[0] is None}
    merged = {k: v for k, v in defaults.items() if _split(k)[0] is None or _split(k)[1] not in names}
    merged.update(explicit)
    return merged


def model_options(options: dict, model: str, *, known_models=(), accepted=None) -> dict:
    """The options for ``model``: unprefixed keys, overridden by ``model.``-prefixed ones.

    ``known_models``: a prefix naming none of them is an error (a typo would otherwise be ignored).
    ``accepted``: when given, the option names the model's trainer takes; unprefixed keys outside it
    are dropped (options shared by every encoder), a prefixed key outside it is an error.
    """
    plain, own = {}, {}
    for key, value in options.items():
        prefix, name = _split(key)
        if prefix is not None and known_models and prefix not in known_models:
            raise LtrfeatError(
                f"encoder option {key!r} names an unknown model {prefix!r}",
                fix=f"prefix with one of {', '.join(known_models)}, e.g. {known_models[0]}.{name}",
            )
        if prefix is None:
            plain[name] = value
        elif prefix == model:
            if accepted is not None and name not in accepted:
                raise LtrfeatError(
                    f"encoder option {key!r}: {model} training has no option {name!r}",
                    fix=f"use one of {', '.join(sorted(accepted))}",
                )
            own[name] = value
    if accepted is not None:
        plain = {k: v for k, v in plain.items() if k in accepted}
    return {**plain, **own}
