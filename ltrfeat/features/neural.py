"""Neural similarity columns for the extract pipeline: CLSM / DSSM bundles and sentence-transformers models.

An :class:`EncoderExtractor` appends ``{name}_{field}_cos``, the cosine between the query's and the
document field's vectors -- ``{name}_{field}_dot`` for a bundle trained with the dot-product score
(DSE), ``{name}_{field}_score`` for a pair scorer (DeepMatch). Vectors are kept in a bounded LRU
cache per side for the whole run, so a file streamed in chunks through
:func:`ltrfeat.features.extract.extract_file` encodes each distinct query and document text once (as long
as the cache holds them), in batches.

Names: a registered encoder kind (:mod:`ltrfeat.encoders.registry`: ``clsm``, ``dssm``, ``deepmatch``,
``sbert``, ``sbert-ft`` ...), optionally with a ``-label`` suffix to tell two encoders of one kind apart
(``clsm-generalized_title_cos``). A ``clsm``/``dssm`` name must match the bundle's architecture; ``sbert``
without a path is the packaged all-MiniLM-L6-v2, with a directory a local sentence-transformers model, with a
file a fine-tuned ``.ltrenc`` bundle (better named ``sbert-ft=ft.ltrenc``).
"""

from __future__ import annotations

import sys
from collections import OrderedDict
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator
from sklearn.exceptions import NotFittedError

from ltrfeat.features.sklearn_tags import TextTransformerTags
from ltrfeat.core.errors import LtrfeatError, ModelFileError
from ltrfeat.encoders.registry import bundle_kind, encoder_kinds
from ltrfeat.encoders.spec import encoder_kind_of, model_spec_fix, parse_encoder_specs
from ltrfeat.features.extract import register_extractor
from ltrfeat.encoders.leakage import TrainedQueries
from ltrfeat.features.pins import encoder_fingerprint


def load_encoder(name: str, path=None):
    """The encoder a name/path pair stands for (its kind's ``load``); never unpickles."""
    kind = encoder_kind_of(name)
    if kind is None:
        raise LtrfeatError(f"unknown encoder name {name!r}", fix=model_spec_fix())
    if path is None and kind.needs_file:
        raise LtrfeatError(f"encoder {name!r} needs a model file", fix=f"write {name}=MODEL.ltrenc")
    found = bundle_kind(path) if kind.needs_file else None
    if found is not None and found != kind.name and found in encoder_kinds():
        raise ModelFileError(
            f"the bundle holds a {found} encoder, not {kind.name}", path=path, fix=f"write {found}={path}"
        )
    return kind.load(path)


def encoder_width(encoder) -> int:
    """Vector width of a loaded encoder (bundles know it; others encode one text to find out)."""
    dim = getattr(encoder, "dim", None)
    return int(dim) if dim else int(encoder.encode(["x"], side="doc").shape[1])


class _VectorCache:
    """LRU cache text -> vector for one encoder side; misses are encoded together in one call. At most
    ``capacity`` entries and, with ``max_bytes``, entries of at most that many bytes (text and vector)."""

    def __init__(self, encoder, side: str, *, capacity: int, batch_size: int, max_bytes: int | None = None):
        self.encoder, self.side, self.capacity, self.batch_size = encoder, side, capacity, batch_size
        self.max_bytes = max_bytes
        self.vectors: OrderedDict[str, np.ndarray] = OrderedDict()
        self.nbytes = 0  # of the entries' texts and vectors
        self.encoded = 0  # texts sent to the encoder so far

    def lookup(self, texts: list) -> np.ndarray:
        """Vectors (n, dim) of ``texts`` (non-empty list), encoding the ones not cached."""
        uniq = list(dict.fromkeys(texts))
        found = {}
        for text in uniq:
            vec = self.vectors.get(text)
            if vec is not None:
                self.vectors.move_to_end(text)
                found[text] = vec
        missing = [t for t in uniq if t not in found]
        if missing:
            new = self.encoder.encode(missing, side=self.side, batch_size=self.batch_size)
            self.encoded += len(missing)
            for text, vec in zip(missing, new):
                found[text] = vec
                self.vectors[text] = vec
                self.nbytes += _entry_bytes(text, vec)
        # evict only after this call's vectors are gathered (a chunk larger than the cache still works)
        while len(self.vectors) > self.capacity or (self.max_bytes is not None and self.nbytes > self.max_bytes):
            self.nbytes -= _entry_bytes(*self.vectors.popitem(last=False))
        return np.stack([found[t] for t in texts])


def _entry_bytes(text: str, vector: np.ndarray) -> int:
    return sys.getsizeof(text) + vector.nbytes


class EncoderExtractor(TextTransformerTags, BaseEstimator):
    """Cosine similarity (or the dot product of a dot-scored bundle, or a pair scorer's match score)
    between a query and document field(s) under a neural encoder.

    Parameters
    ----------
    name : ``clsm``, ``dssm`` or ``sbert`` (optionally ``-label`` suffixed); the column prefix.
    path : the ``.ltrenc`` bundle, or the sentence-transformers directory (None: packaged MiniLM).
    field : the document field to compare with the query, or a list of fields (one column each).
    batch_size : texts per encoder forward pass.
    cache_size : vectors kept per side across chunks (least recently used are dropped first).
    cache_bytes : with it, also at most this many bytes of texts and vectors kept per side.
    """

    feature_source = "neural"

    def __init__(
        self,
        *,
        name: str,
        path=None,
        field="title",
        batch_size: int = 1024,
        cache_size: int = 1_000_000,
        cache_bytes: int | None = None,
    ):
        self.name = name
        self.path = path
        self.field = field
        self.batch_size = batch_size
        self.cache_size = cache_size
        self.cache_bytes = cache_bytes

    @property
    def fields(self) -> tuple[str, ...]:
        """The document fields read (the extract pipeline joins these)."""
        return (self.field,) if isinstance(self.field, str) else tuple(self.field)

    def fit(self, docs: pd.DataFrame | None = None, queries: pd.DataFrame | None = None) -> "EncoderExtractor":
        """Load the encoder (nothing is learned from ``docs``; a named field must exist there)."""
        if not self.fields or len(set(self.fields)) != len(self.fields):
            raise ValueError(f"field must name one or more distinct fields, got {self.field!r}")
        if int(self.batch_size) < 1 or int(self.cache_size) < 1:
            raise ValueError("batch_size and cache_size must be >= 1")
        if docs is not None:
            absent = [f for f in self.fields if f not in docs.columns]
            if absent:
                raise LtrfeatError(
                    f"{self.name}: documents table has no field(s) {', '.join(absent)}",
                    path=docs.attrs.get("source"),
                    fix=f"choose among {', '.join(c for c in docs.columns if c != 'docid')}",
                )
        self.encoder_ = load_encoder(self.name, self.path)
        self.bundle_sha256_ = encoder_fingerprint(self.path)
        self.trained_queries_ = TrainedQueries.of(self.encoder_)
        self._caches = {
            side: _VectorCache(
                self.encoder_,
                side,
                capacity=int(self.cache_size),
                batch_size=int(self.batch_size),
                max_bytes=self.cache_bytes,
            )
            for side in ("query", "doc")
        }
        return self

    def feature_names(self) -> list[str]:
        """``<name>_<field>_<suffix>``; the ``dot`` suffix of a dot-scored bundle is known once fitted."""
        return [f"{self.name}_{f}_{self.column_suffix}" for f in self.fields]

    def get_feature_names_out(self, input_features=None) -> np.ndarray:
        """scikit-learn's name for :meth:`feature_names` (an object array; ``input_features`` is unused)."""
        if not hasattr(self, "encoder_"):
            raise NotFittedError("EncoderExtractor is not fitted; call fit(docs) first")
        return np.asarray(self.feature_names(), dtype=object)

    def pipeline_record(self) -> dict:
        """What defines these columns, for the feature map's pipeline (see :mod:`ltrfeat.features.pins`)."""
        if not hasattr(self, "encoder_"):
            raise NotFittedError("EncoderExtractor is not fitted; call fit(docs) first")
        clicks = (getattr(self.encoder_, "training", None) or {}).get("clicks")
        return {
            "kind": "encoder",
            "name": self.name,
            "model": None if self.path is None else str(Path(self.path).resolve()),
            "bundle_sha256": self.bundle_sha256_,
            "score": {"score": "pair", "dot": "dot", "cos": "cosine"}[self.column_suffix],
            **({"debias": clicks.get("debias"), "clicks": clicks} if isinstance(clicks, dict) else {}),
        }

    @property
    def column_suffix(self) -> str:
        """``score`` (pair scorer), ``dot`` (fitted dot-scored bundle) or ``cos``."""
        kind = encoder_kind_of(self.name)
        if kind is None:
            raise LtrfeatError(f"{self.name!r} names no encoder kind", fix=model_spec_fix())
        return kind.column_suffix(getattr(getattr(self, "encoder_", None), "score", "cosine"))

    @property
    def texts_encoded(self) -> dict[str, int]:
        """How many texts each side has sent to the encoder since ``fit`` (cache misses)."""
        return {side: cache.encoded for side, cache in self._caches.items()}

    def transform(self, pairs: pd.DataFrame) -> np.ndarray:
        """float32 (n, n_fields): similarity of ``pairs.query`` with each field's text."""
        if not hasattr(self, "encoder_"):
            raise RuntimeError("EncoderExtractor is not fitted; call fit(docs) first")
        absent = [c for c in ("query", *self.fields) if c not in pairs.columns]
        if absent:
            raise LtrfeatError(
                f"{self.name}: pairs lack column(s) {', '.join(absent)}",
                fix="give the query text and the document fields",
            )
        out = np.zeros((len(pairs), len(self.fields)), dtype=np.float32)
        if len(pairs) == 0:
            return out
        if not hasattr(self.encoder_, "encode"):  # a pair scorer (DeepMatch)
            for j, field in enumerate(self.fields):
                out[:, j] = self.encoder_.similarity(
                    pairs["query"].tolist(), pairs[field].tolist(), batch_size=int(self.batch_size)
                )
            return out
        q = self._caches["query"].lookup(pairs["query"].tolist())
        for j, field in enumerate(self.fields):
            d = self._caches["doc"].lookup(pairs[field].tolist())
            out[:, j] = np.einsum("ij,ij->i", q, d)
        return out


def _factory(kind: str):
    def factory(*, fields, path=None, **params) -> EncoderExtractor:
        return EncoderExtractor(name=kind, path=path, field=tuple(fields), **params)

    return factory


def encoder_extractors(specs, *, fields) -> list[EncoderExtractor]:
    """One extractor per ``--encoder`` spec (``clsm=PATH``, ``sbert`` ...), each scoring every field."""
    return [
        EncoderExtractor(name=name, path=path, field=tuple(fields)) for name, path in parse_encoder_specs(specs).items()
    ]


for _kind in encoder_kinds().values():
    register_extractor(_kind.name, _kind.summary, _factory(_kind.name))
