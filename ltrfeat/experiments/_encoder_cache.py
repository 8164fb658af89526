"""The cross-fitting's cache: an encoder's key (its spec, options, seed, training rows and start), its bundle, the
scores it gave each fold's rows and its training record, each read back only when intact."""

from __future__ import annotations

import dataclasses
import hashlib
import io
import json
from pathlib import Path

import numpy as np
import pandas as pd

from ltrfeat.core.errors import ModelFileError
from ltrfeat.core.fileio import read_checked, write_checked
from ltrfeat.core.logs import get_logger
from ltrfeat.encoders.config import KEEP_START_MARGIN
from ltrfeat.encoders.spec import EncoderSpec
from ltrfeat.experiments.crossfit_traits import traits

log = get_logger("ablate")


def cache_key(spec: EncoderSpec, options: dict, table: pd.DataFrame, seed: int, init_key: str | None = None) -> str:
    """``init_key`` names the weights the training starts from (+init, +spans): see :class:`~ltrfeat.experiments._starting_points.StartingPoint`."""
    h = hashlib.sha256()
    # a spec without pre-training or dot score keys as before those fields existed: existing caches stay valid
    spec_key = {k: v for k, v in dataclasses.asdict(spec).items() if k not in ("pretrain", "score")}
    spec_key.update({"pretrain": spec.pretrain} if spec.pretrain else {})
    spec_key.update({"score": "dot"} if spec.resolved_score == "dot" else {})
    if keeps_start(spec):  # trained under the keep-start rule: encoders cached before it are not reused
        spec_key["keep_start"] = options.get("keep_start_margin", KEEP_START_MARGIN)
        # nor those trained before early stopping against the start (2: a record mean restarts the patience count)
        spec_key["stops_at_checkpoints"] = 2
    if init_key is not None:
        spec_key["path"] = init_key
    h.update(
        json.dumps({"spec": spec_key, "options": options, "seed": seed, "v": 1}, sort_keys=True, default=str).encode()
    )
    for col in ("query", "doc", "label"):
        h.update("\x1e".join(map(repr, table[col].tolist())).encode("utf-8", "surrogatepass"))
    return h.hexdigest()[:24]


def scores_path(cache: Path, encoder_key: str, queries: list, docs: list) -> Path:
    """Where the scores of one cached encoder on these (query, doc) rows are kept: keyed by the encoder's
    cache key and the rows' texts, so a re-run (say, with one more encoder) neither loads nor re-runs it."""
    h = hashlib.sha256(encoder_key.encode())
    for texts in (queries, docs):
        h.update("\x1e".join(texts).encode("utf-8", "surrogatepass"))
        h.update(b"\x1f")
    return cache / "scores" / f"{encoder_key}-{h.hexdigest()[:24]}.scores"


def keeps_start(spec: EncoderSpec) -> bool:
    """Its trainings start from a model worth keeping (``CrossFitTraits.keeps_start``): each records ``keep_start``."""
    return spec.pretrain in traits(spec.kind).keeps_start


def load_record(path: Path) -> dict | None:
    """A cached training record (:func:`~ltrfeat.experiments._training_task.training_record`), or None (absent,
    torn or damaged)."""
    payload = read_checked(path, what="cached training record")
    try:
        record = None if payload is None else json.loads(payload.decode("utf-8"))
    except ValueError:
        return None
    return record if isinstance(record, dict) and "keep_start" in record else None


def load_scores(path: Path, n: int) -> np.ndarray | None:
    """Cached scores of ``n`` rows, or None (absent, torn, foreign or damaged: scored again; a damaged
    entry -- content not matching its SHA-256 -- with a one-line notice)."""
    payload = read_checked(path, what="cached encoder scores")
    if payload is None:
        return None
    try:
        values = np.load(io.BytesIO(payload), allow_pickle=False)
    except (OSError, ValueError):
        return None
    return values if values.shape == (n,) and values.dtype == np.float32 else None


def save_scores(path: Path, values: np.ndarray) -> None:
    buffer = io.BytesIO()
    np.save(buffer, np.asarray(values, dtype=np.float32))
    write_checked(path, buffer.getvalue())


def cached_encoder(path: Path, load):
    """``load(path)`` of a cached encoder bundle, or None when it is absent or damaged (then one notice
    says it is trained again, instead of the run stopping on the damaged file)."""
    if not path.exists():
        return None
    try:
        return load(path)
    except ModelFileError as exc:
        log.warning("cached encoder %s is damaged (%s); training it again", path, exc.problem)
        return None
