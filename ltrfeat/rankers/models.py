"""Saving and loading every ranker kind (:mod:`ltrfeat.rankers.registry`), without pickles: the one loader
that ``serve``, ``rerank``, ``export-ranker``, ``evaluate``, ``rank``, PyTerrier and the Python API use.

``MODEL.meta.json`` names the kind; files without a kind, or with ``lambdamart`` (written before kinds took
the candidate names), are LambdaMART models of the engine the metadata names.
"""

from __future__ import annotations

import json
from pathlib import Path

from ltrfeat.core.errors import ModelFileError
from ltrfeat.rankers import registry
from ltrfeat.rankers.choices import META_FORMAT, MODEL_FILE_FIX
from ltrfeat.rankers.registry import LEGACY_KIND


def save_ranker(model, path, *, kind: str | None = None, extra: dict | None = None) -> None:
    """Write any fitted ranker to ``path`` (+ ``path.meta.json``).

    kind : the kind to record (default: :func:`ltrfeat.rankers.registry.kind_of`'s; give it for a freshly fitted model of a tuned
        kind, whose models look like the untuned ones). The model's ``kind_`` is set to it.
    extra : merged into the metadata (e.g. the selection that chose it).
    """
    spec = registry.get(kind) if kind is not None else registry.kind_of(model)
    spec.implementation().save(model, path, dict(extra or {}) | {"kind": spec.name})
    model.kind_ = spec.name


def read_meta(path) -> dict:
    """The parsed ``path.meta.json`` of a ranker file, checked to be ranker metadata of a known kind."""
    path = Path(path)
    mpath = Path(f"{path}.meta.json")
    for p in (path, mpath):
        if not p.is_file():
            raise ModelFileError("file not found", path=p, fix=MODEL_FILE_FIX)
    try:
        meta = json.loads(mpath.read_text(encoding="utf-8"))
    except UnicodeDecodeError:
        raise ModelFileError("metadata is not UTF-8 text", path=mpath, fix=MODEL_FILE_FIX) from None
    except json.JSONDecodeError as exc:
        raise ModelFileError(
            f"metadata is not valid JSON ({exc.msg})", path=mpath, line=exc.lineno, fix=MODEL_FILE_FIX
        ) from None
    kinds = registry.names()
    if not isinstance(meta, dict) or meta.get("format") != META_FORMAT:
        raise ModelFileError(
            f"not ltrfeat ranker metadata (expected format {META_FORMAT})", path=mpath, fix=MODEL_FILE_FIX
        )
    if stored_kind(meta) not in kinds:
        raise ModelFileError(
            f"unknown ranker kind {meta.get('kind')!r} (known: {', '.join(kinds)})",
            path=mpath,
            fix="register the kind before loading (see docs/new-ranker.md), or retrain with a known one",
        )
    return meta


def stored_kind(meta: dict) -> str | None:
    """The kind name of parsed ranker metadata (legacy LambdaMART files: their engine)."""
    kind = meta.get("kind", LEGACY_KIND)
    return meta.get("engine") if kind == LEGACY_KIND else kind


def load_ranker(path):
    """Any ranker written by :func:`save_ranker` or ``train-ranker`` (never unpickles); a fitted model
    (anything with ``predict``) is returned as it is."""
    if hasattr(path, "predict"):
        return path
    meta = read_meta(path)
    kind = stored_kind(meta)
    model = registry.get(kind).implementation().load(Path(path), meta)
    model.kind_ = kind  # kind_of(model) names it (a tuned kind's models look like the untuned ones)
    return model
