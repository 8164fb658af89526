"""The extractors a ranker's feature names call for (see :mod:`ltrfeat.serving.scorer`), by part: the encoders given
or recorded, the corpus statistics, the columns sorted by what computes them and refused when nothing does, the
lexical extractor and one extractor per encoder; and :class:`CacheLimits`, what each keeps between requests."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from ltrfeat.core.errors import LtrfeatError
from ltrfeat.features import pins
from ltrfeat.features.corpus import CorpusStats
from ltrfeat.features.lexical import FAMILIES, QUERY_ONLY, SETTINGS, LexicalExtractor

LEXICAL_PARAMS = SETTINGS
ENCODER_SUFFIXES = ("cos", "dot", "score")  # cosine, dot product, pair scorer's match score

_log = logging.getLogger("ltrfeat.serve")


@dataclass(frozen=True)
class CacheLimits:
    """What a :class:`Scorer` keeps between requests, per encoder.

    Parameters
    ----------
    words : words in a CLSM/DSSM (or ONNX export's) word table; a request that would exceed it starts a new
        table (~200 bytes a word).
    vectors : query or document vectors kept per side (least recently used dropped first).
    vector_bytes : bytes of texts and vectors kept per side.
    logged_queries : trained-on queries remembered (by a 16-byte hash) so each is logged once.
    """

    words: int = 100_000
    vectors: int = 100_000
    vector_bytes: int = 64 * 2**20
    logged_queries: int = 10_000


def _lexical_column(name: str, fields) -> tuple[str, str | None] | None:
    """``(family, field)`` of a lexical column name, or None."""
    for family, (_, stems) in FAMILIES.items():
        for stem in stems:
            if family in QUERY_ONLY and name == stem:
                return family, None
            if family not in QUERY_ONLY and name.startswith(stem + "_") and name[len(stem) + 1 :] in fields:
                return family, name[len(stem) + 1 :]
    return None


def _encoder_column(name: str, encoders) -> tuple[str, str] | None:
    """``(encoder name, field)`` of a ``<encoder>_<field>_<cos|dot|score>`` column, or None."""
    for encoder in encoders:
        for suffix in ENCODER_SUFFIXES:
            if (
                name.startswith(encoder + "_")
                and name.endswith("_" + suffix)
                and len(name) > len(encoder) + len(suffix) + 2
            ):
                return encoder, name[len(encoder) + 1 : -len(suffix) - 1]
    return None


class _OnnxEncoder:
    """``<name>_<field>_cos`` (or ``_dot`` for a dot-scored export) columns from an ONNX encoder export:
    the dot product of the two sides' embeddings (normalised ones for cosine)."""

    def __init__(self, name: str, path, fields, *, cache_words: int | None = None):
        from ltrfeat.export.onnx import OnnxEncoder

        self.name, self.fields = name, tuple(fields)
        self.encoder_ = OnnxEncoder.load(path)
        self.encoder_.limit_word_cache(cache_words)

    def feature_names(self) -> list[str]:
        suffix = "dot" if self.encoder_.score == "dot" else "cos"
        return [f"{self.name}_{f}_{suffix}" for f in self.fields]

    def transform(self, pairs: pd.DataFrame) -> np.ndarray:
        q = self.encoder_.encode(pairs["query"].tolist(), side="query")
        return np.column_stack(
            [np.einsum("ij,ij->i", q, self.encoder_.encode(pairs[f].tolist(), side="doc")) for f in self.fields]
        ).astype(np.float32)


def _encoder_extractor(name: str, path, fields, caches: CacheLimits):
    from ltrfeat.features.neural import EncoderExtractor

    if path is not None and Path(path).is_dir() and (Path(path) / "encoder.json").exists():
        return _OnnxEncoder(name, path, fields, cache_words=caches.words)
    # bounded vector caches: repeated candidates are encoded once across requests
    extractor = EncoderExtractor(
        name=name, path=path, field=tuple(fields), cache_size=caches.vectors, cache_bytes=caches.vector_bytes
    ).fit()
    hasher = getattr(extractor.encoder_, "hasher", None)
    if hasher is not None:
        hasher.cache_words = caches.words
    return extractor


@dataclass
class _Columns:
    """A ranker's feature names by what computes them: lexical families (with their columns and fields), encoder
    fields per encoder, and the names nothing given can compute."""

    families: dict[str, None] = field(default_factory=dict)
    lexical_columns: dict[str, str] = field(default_factory=dict)
    lexical_fields: dict[str, None] = field(default_factory=dict)
    by_encoder: dict[str, dict[str, None]] = field(default_factory=dict)
    missing: list[str] = field(default_factory=list)

    def fields(self) -> tuple[str, ...]:
        """Every document field a candidate must carry, in order of first need."""
        return tuple(dict.fromkeys([*self.lexical_fields, *(f for fs in self.by_encoder.values() for f in fs)]))


def _encoder_paths(model, encoders: dict | None) -> dict:
    """The encoders given, plus the bundles the ranker's record names where they still are as recorded."""
    encoders = dict(encoders or {})
    for record in model.feature_map_.pipeline:
        name = record.get("name")
        if record.get("kind") == "encoder" and name not in encoders:
            path = pins.recorded_encoder_path(model.feature_map_, name)
            if path is not None:
                encoders[name] = path
    return encoders


def _lexical_params(given: dict | None) -> dict:
    """The lexical settings given, each one a name :data:`LEXICAL_PARAMS` knows."""
    params = dict(given or {})
    unknown = set(params) - set(LEXICAL_PARAMS)
    if unknown:
        raise LtrfeatError(
            f"unknown lexical parameter(s) {', '.join(sorted(unknown))}", fix=f"use {', '.join(LEXICAL_PARAMS)}"
        )
    return params


def _corpus(model, corpus_stats) -> CorpusStats | None:
    """The corpus statistics given, else the file the ranker's record names where it still is as recorded."""
    if corpus_stats is None:
        corpus_stats = pins.recorded_corpus_path(model.feature_map_)
        if corpus_stats is not None:
            _log.info("corpus statistics: %s (the file the ranker's record names)", corpus_stats)
    return CorpusStats.load(corpus_stats) if corpus_stats is not None else None


def _sort_columns(model, encoders: dict, corpus: CorpusStats | None) -> _Columns:
    """The ranker's columns sorted by what computes them (lexical columns are found only with corpus statistics)."""
    found = _Columns()
    for name in model.feature_map_.names:
        column = _encoder_column(name, encoders)
        if column is not None:
            found.by_encoder.setdefault(column[0], {})[column[1]] = None
            continue
        lexical = _lexical_column(name, corpus.fields) if corpus is not None else None
        if lexical is None:
            found.missing.append(name)
            continue
        found.families[lexical[0]] = None
        found.lexical_columns[name] = lexical[0]
        if lexical[1] is not None:
            found.lexical_fields[lexical[1]] = None
    return found


def _check_computable(model, columns: _Columns, encoders: dict, corpus: CorpusStats | None, where) -> None:
    """Refuse an encoder the ranker has no column of, lexical columns without the statistics they were extracted with,
    and any column nothing given computes."""
    unused = [e for e in encoders if e not in columns.by_encoder]
    if unused:
        raise LtrfeatError(
            f"encoder {unused[0]} is given but the ranker has no {unused[0]}_* feature",
            path=where,
            fix=f"drop it or rename it; the ranker's features are "
            f"{', '.join(model.feature_map_.names[:8])}{', ...' if len(model.feature_map_) > 8 else ''}",
        )
    recorded = pins.corpus_needed(model.feature_map_, columns.missing) if corpus is None else None
    if recorded is not None:  # lexical columns with a record: name the statistics they need
        named = [n for n in columns.missing if (model.feature_map_.record_of(n) or {}).get("kind") == "lexical"]
        raise LtrfeatError(
            f"the ranker's {len(named)} lexical feature(s) ({', '.join(named[:4])}"
            f"{', ...' if len(named) > 4 else ''}) need the corpus statistics they were extracted with "
            f"({recorded}) and none were given",
            path=where,
            fix="pass --corpus-stats FILE (corpus_stats= in Python), the file `extract --save-corpus-stats` "
            "wrote for the training split; the other settings come from the ranker's record",
        )
    if columns.missing:
        shown = ", ".join(columns.missing[:8]) + (", ..." if len(columns.missing) > 8 else "")
        hint = "" if corpus is not None else "no --corpus-stats was given for lexical features; "
        raise LtrfeatError(
            f"the ranker needs {len(columns.missing)} feature(s) the scorer cannot compute: {shown}",
            path=where,
            fix=f"{hint}lexical columns need the corpus statistics they were extracted with, "
            f"<name>_<field>_cos/_dot/_score columns an encoder given as <name>=PATH "
            f"(given: {', '.join(encoders) or 'none'})",
        )


def _lexical_extractor(model, columns: _Columns, corpus: CorpusStats, params: dict, where) -> tuple:
    """``(extractor, note)``: one lexical extractor for every lexical family, with the settings the ranker's record
    pins (``note``: a warning to give once everything loaded, or None)."""
    params, note = pins.lexical_settings(
        model.feature_map_,
        columns.lexical_columns,
        corpus=corpus,
        given=params,
        path=where,
    )
    lexical_on = tuple(columns.lexical_fields) or corpus.fields[:1]
    extractor = LexicalExtractor(features=tuple(columns.families), fields=lexical_on, corpus=corpus, **params)
    return extractor.fit(None), note


def _encoder_extractors(model, columns: _Columns, encoders: dict, caches: CacheLimits, where) -> list:
    """An extractor per encoder, each checked against the ranker's record and to give the columns it needs."""
    extractors = []
    for encoder, fields in columns.by_encoder.items():
        names = [n for n in model.feature_map_.names if _encoder_column(n, [encoder]) is not None]
        pins.check_encoder(model.feature_map_, encoder, encoders[encoder], names)
        extractor = _encoder_extractor(encoder, encoders[encoder], tuple(fields), caches)
        wrong = [
            n
            for n in model.feature_map_.names
            if _encoder_column(n, [encoder]) is not None and n not in extractor.feature_names()
        ]
        if wrong:
            raise LtrfeatError(
                f"the ranker needs {wrong[0]} but encoder {encoder}={encoders[encoder]} gives "
                f"{', '.join(extractor.feature_names())}",
                path=where,
                fix="give the encoder the ranker's features were extracted with (a _dot column needs a "
                "dot-scored bundle, _cos a cosine one, _score a DeepMatch bundle)",
            )
        extractors.append(extractor)
    return extractors
