"""Bounds on untrusted input: how long a line, how compressed a file, how wide a matrix, how large a model.

One process-wide :class:`InputLimits` (:func:`current`) that readers and loaders consult before they
allocate. The CLI sets it from its top-level options (``ltrfeat --max-line-bytes ... COMMAND``);
each limit can also come from an environment variable (``LTRFEAT_MAX_LINE_BYTES`` ...), which
:func:`configure` also sets, so worker processes spawned later apply the same bounds. See
docs/reliability.md for what each one guards.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
from typing import Any


@dataclasses.dataclass(frozen=True)
class InputLimits:
    """Bounds on input files and model files.

    Parameters
    ----------
    max_line_bytes : longest line of a LETOR/svmlight file (longer: an error naming the line).
    max_gzip_ratio : most bytes of decompressed data per compressed byte of a ``.gz`` input, checked
        once 16 MiB have been decompressed (gzip reaches ~1000:1 on repeated bytes; data rarely 20:1).
    max_features : most distinct feature ids of a file read into a dense matrix (more: an error with
        the count, before the matrix is allocated).
    max_model_params : most parameters an encoder bundle's model config may declare (more: an error
        before the model is built).
    """

    max_line_bytes: int = 64 * 2**20
    max_gzip_ratio: float = 200.0
    max_features: int = 10_000
    max_model_params: int = 250_000_000

    def __post_init__(self):
        for field in dataclasses.fields(self):
            if not getattr(self, field.name) > 0:
                raise ValueError(f"{field.name} must be positive, got {getattr(self, field.name)}")


def _env_name(field: str) -> str:
    return f"LTRFEAT_{field.upper()}"


def _from_environment() -> InputLimits:
    values: dict[str, Any] = {}
    for field in dataclasses.fields(InputLimits):
        text = os.environ.get(_env_name(field.name))
        if text:
            try:
                values[field.name] = float(text) if field.type == "float" else int(float(text))
            except ValueError:
                continue  # a malformed variable keeps the default
    return InputLimits(**values)


_CURRENT = _from_environment()


def current() -> InputLimits:
    """The limits in force in this process."""
    return _CURRENT


def configure(**values) -> InputLimits:
    """Change some limits for this process and the worker processes it starts later; returns the old ones."""
    global _CURRENT
    old = _CURRENT
    _CURRENT = dataclasses.replace(_CURRENT, **{k: v for k, v in values.items() if v is not None})
    for field in dataclasses.fields(InputLimits):
        os.environ[_env_name(field.name)] = repr(getattr(_CURRENT, field.name))
    return old


@contextlib.contextmanager
def using(**values):
    """Limits changed inside a ``with`` block (tests, library callers)."""
    old = configure(**values)
    try:
        yield _CURRENT
    finally:
        configure(**dataclasses.asdict(old))
