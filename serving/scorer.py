"""Online re-ranking: every feature a trained ranker needs, computed for one query's candidates.

:meth:`Scorer.load` reads the ranker and builds exactly the extractors its feature names call
for -- lexical names (``bm25_title``, ``tf_sum_body``, ``query_len`` ...) become one
:class:`~ltr_features.lexical.LexicalExtractor` over the saved corpus statistics, and
``<name>_<field>_cos`` columns the encoder given under ``<name>`` (an ``.ltrenc`` bundle,
``sbert``, or an ONNX export directory run by onnxruntime). A feature nothing can produce
fails at load time. The document fields come from the feature names (``bm25_title`` -> ``title``);
every candidate must carry them as text.
"""
from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import pandas as pd

from ltr_features.corpus import CorpusStats
from ltr_features.dataset import RankingSet
from ltr_features.errors import LtrfeatError
from ltr_features.lexical import FAMILIES, QUERY_ONLY, LexicalExtractor
from rankers.lambdamart import LambdaMART

LEXICAL_PARAMS = ("k1", "b", "mu", "jm_lambda", "ad_delta")


class CandidateError(LtrfeatError):
    """A scoring request is malformed (missing field, non-text value); the HTTP layer answers 422."""


def _lexical_column(name: str, fields) -> tuple[str, str | None] | None:
    """``(family, field)`` of a lexical column name, or None."""
    for family, (_, stems) in FAMILIES.items():
        for stem in stems:
            if family in QUERY_ONLY and name == stem:
                return family, None
            if family not in QUERY_ONLY and name.startswith(stem + "_") and name[len(stem) + 1:] in fields:
                return family, name[len(stem) + 1:]
    return None


class _OnnxCosine:
    """``<name>_<field>_cos`` columns from an ONNX encoder export (query/doc cosine)."""

    def __init__(self, name: str, path, fields):
        from ltr_features.encoders.onnx_export import OnnxEncoder

        self.name, self.fields = name, tuple(fields)
        self.encoder_ = OnnxEncoder.load(path)

    def feature_names(self) -> list[str]:
        return [f"{self.name}_{f}_cos" for f in self.fields]

    def transform(self, pairs: pd.DataFrame) -> np.ndarray:
        q = self.encoder_.encode(pairs["query"].tolist(), side="query")
        return np.column_stack([np.einsum("ij,ij->i", q, self.encoder_.encode(pairs[f].tolist(), side="doc"))
                                for f in self.fields]).astype(np.float32)


def _encoder_extractor(name: str, path, fields):
    from ltr_features.neural import EncoderExtractor

    if path is not None and Path(path).is_dir() and (Path(path) / "encoder.json").exists():
        return _OnnxCosine(name, path, fields)
    # a bounded doc-vector cache: repeated candidates are encoded once across requests
    return EncoderExtractor(name=name, path=path, field=tuple(fields), cache_size=100_000).fit()


class Scorer:
    """Scores candidate documents of one query with a trained ranker.

    Build with :meth:`load`. Parameters: ``ranker`` (a fitted :class:`LambdaMART`),
    ``extractors`` (objects with ``feature_names()`` and ``transform(pairs)``), ``fields``
    (document fields the candidates must carry). :meth:`score` is thread-safe (serialised).
    """

    def __init__(self, ranker: LambdaMART, extractors: list, fields: tuple):
        self.ranker = ranker
        self.extractors = extractors
        self.fields = tuple(fields)
        self._lock = threading.Lock()

    @property
    def feature_names(self) -> list[str]:
        return self.ranker.feature_map_.names

    @classmethod
    def load(cls, ranker, *, encoders: dict | None = None, corpus_stats=None, lexical_params: dict | None = None) -> "Scorer":
        """Load the ranker and build the extractors its features need.

        Parameters
        ----------
        ranker : model file written by ``train-ranker`` (or a fitted :class:`LambdaMART`).
        encoders : ``{name: path}`` for ``<name>_<field>_cos`` columns; path is an ``.ltrenc``
            bundle, an ONNX export directory, or None for ``sbert`` (packaged MiniLM).
        corpus_stats : corpus statistics file (``extract --save-corpus-stats``), needed for
            lexical features.
        lexical_params : BM25 / language-model parameters used at extraction (``k1``, ``b``,
            ``mu``, ``jm_lambda``, ``ad_delta``); defaults as in ``ltrfeat extract``.
        """
        model = ranker if isinstance(ranker, LambdaMART) else LambdaMART.load(ranker)
        encoders = dict(encoders or {})
        params = dict(lexical_params or {})
        unknown = set(params) - set(LEXICAL_PARAMS)
        if unknown:
            raise LtrfeatError(f"unknown lexical parameter(s) {', '.join(sorted(unknown))}",
                               fix=f"use {', '.join(LEXICAL_PARAMS)}")
        corpus = CorpusStats.load(corpus_stats) if corpus_stats is not None else None
        families: dict[str, None] = {}
        lexical_fields: dict[str, None] = {}
        by_encoder: dict[str, dict[str, None]] = {}
        missing = []
        for name in model.feature_map_.names:
            encoder = next((e for e in encoders if name.startswith(e + "_") and name.endswith("_cos")
                            and len(name) > len(e) + 5), None)
            if encoder is not None:
                by_encoder.setdefault(encoder, {})[name[len(encoder) + 1:-4]] = None
                continue
            lexical = _lexical_column(name, corpus.fields) if corpus is not None else None
            if lexical is None:
                missing.append(name)
                continue
            families[lexical[0]] = None
            if lexical[1] is not None:
                lexical_fields[lexical[1]] = None
        if missing:
            shown = ", ".join(missing[:8]) + (", ..." if len(missing) > 8 else "")
            hint = ("" if corpus is not None else "no --corpus-stats was given for lexical features; ")
            raise LtrfeatError(
                f"the ranker needs {len(missing)} feature(s) the scorer cannot compute: {shown}",
                path=ranker if not isinstance(ranker, LambdaMART) else None,
                fix=f"{hint}lexical columns need the corpus statistics they were extracted with, "
                    f"<name>_<field>_cos columns an encoder given as <name>=PATH (given: {', '.join(encoders) or 'none'})")
        extractors = []
        if families:
            fields = tuple(lexical_fields) or corpus.fields[:1]
            extractors.append(LexicalExtractor(features=tuple(families), fields=fields, corpus=corpus,
                                               **params).fit(None))
        for encoder, fields in by_encoder.items():
            extractors.append(_encoder_extractor(encoder, encoders[encoder], tuple(fields)))
        needed = tuple(dict.fromkeys([*lexical_fields, *(f for fs in by_encoder.values() for f in fs)]))
        return cls(model, extractors, needed)

    def _pairs(self, query, candidates) -> pd.DataFrame:
        if not isinstance(query, str):
            raise CandidateError(f"query must be a string, got {type(query).__name__}")
        if not isinstance(candidates, (list, tuple)):
            raise CandidateError(f"candidates must be a list of objects, got {type(candidates).__name__}")
        columns = {"docid": [], **{f: [] for f in self.fields}}
        for i, cand in enumerate(candidates):
            if not isinstance(cand, dict):
                raise CandidateError(f"candidate {i} is {type(cand).__name__}, not an object")
            docid = cand.get("docid")
            if not isinstance(docid, (str, int)) or isinstance(docid, bool):
                raise CandidateError(f"candidate {i} needs a string 'docid'")
            columns["docid"].append(str(docid))
            for f in self.fields:
                value = cand.get(f)
                if not isinstance(value, str):
                    raise CandidateError(f"candidate {i} ({docid}) needs text field {f!r}"
                                         + ("" if value is None else f", got {type(value).__name__}"))
                columns[f].append(value)
        pairs = pd.DataFrame({"qid": "q", "query": query, **columns})
        return pairs

    def features(self, query: str, candidates: list[dict]) -> np.ndarray:
        """The ranker's feature matrix (float32, one row per candidate, ranker column order)."""
        pairs = self._pairs(query, candidates)
        position = {name: j for j, name in enumerate(self.feature_names)}
        X = np.zeros((len(pairs), len(position)), dtype=np.float32)
        if len(pairs):
            for ex in self.extractors:
                values = np.asarray(ex.transform(pairs), dtype=np.float32)
                for k, name in enumerate(ex.feature_names()):
                    if name in position:
                        X[:, position[name]] = values[:, k]
        return X

    def score(self, query: str, candidates: list[dict]) -> np.ndarray:
        """Ranker scores (float64), one per candidate, in the candidates' order."""
        with self._lock:
            X = self.features(query, candidates)
            if not len(X):
                return np.zeros(0)
            data = RankingSet(qid=np.full(len(X), "q", dtype=object), label=np.zeros(len(X)), X=X,
                              feature_map=self.ranker.feature_map_)
            return self.ranker.predict(data)
