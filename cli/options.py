"""Option parsing shared by several commands."""
from __future__ import annotations

import contextlib
import json
import warnings

import click

from ltr_features.errors import LtrfeatError


def parse_key_values(pairs, *, option: str = "--param", example: str = "min_data_in_leaf=50") -> dict | None:
    """``KEY=VALUE`` pairs; values are JSON when they parse as JSON (numbers, booleans), else strings."""
    params = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise LtrfeatError(f"{option} {pair!r} is not KEY=VALUE", fix=f"e.g. {option} {example}")
        try:
            params[key] = json.loads(value)
        except json.JSONDecodeError:
            params[key] = value
    return params or None


@contextlib.contextmanager
def notices():
    """Show library warnings (regrouped queries, gain changes) once each as one-line notices on stderr."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            yield
        finally:
            if not quiet():
                for message in dict.fromkeys(str(w.message) for w in caught):
                    click.echo(f"notice: {message}", err=True)


def quiet() -> bool:
    """Whether ``ltrfeat -q`` asked for errors only."""
    import logging

    from ltr_features.logs import logger

    return logger.getEffectiveLevel() > logging.WARNING


def fit_and_save(train, out, checkpoint):
    """Run ``train(ckpt)`` (a trainer writing per-epoch checkpoints to ``ckpt``), save the model to ``out`` and
    drop the default checkpoint ``OUT.ckpt`` afterwards (an explicit ``--checkpoint`` is kept).

    A ``ValueError`` from the trainer (bad option combination) becomes a usage error. Returns ``(model, history)``.
    """
    from pathlib import Path

    ckpt = Path(checkpoint) if checkpoint else Path(f"{out}.ckpt")
    try:
        model, history = train(ckpt)
    except ValueError as exc:
        raise click.UsageError(str(exc)) from None
    model.save(out)
    if checkpoint is None:
        with contextlib.suppress(FileNotFoundError):
            ckpt.unlink()
    return model, history
