"""Online re-ranking: every feature a trained ranker needs, computed for one query's candidates.

:meth:`Scorer.load` reads the ranker and builds exactly the extractors its feature names call
for -- lexical names (``bm25_title``, ``tf_sum_body``, ``query_len`` ...) become one
:class:`~ltrfeat.features.lexical.LexicalExtractor` over the saved corpus statistics, and
``<name>_<field>_cos`` / ``_dot`` / ``_score`` columns the encoder given under ``<name>``: an
``.ltrenc`` bundle (cosine, or dot product for a dot-scored DSSM/CLSM; a DeepMatch bundle scores
each pair, ``_score``), ``sbert``, or an ONNX export directory run by onnxruntime. A feature
nothing can produce -- also a ``_dot`` column given a cosine encoder and vice versa -- fails at
load time. The document fields come from the feature names (``bm25_title`` -> ``title``);
every candidate must carry them as text.

Whatever a service scores, its memory stays bounded (:class:`CacheLimits`): each encoder's word table
and vector caches hold at most a fixed number of entries and bytes, and no query is kept but the
hashes of the last few thousand trained-on queries it has logged. A cache changes the speed, never a score.
"""

from __future__ import annotations

import hashlib
import logging
import threading
import warnings
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from ltrfeat.features.corpus import CorpusStats
from ltrfeat.core.dataset import RankingSet
from ltrfeat.core.errors import LtrfeatError, LtrfeatWarning
from ltrfeat.features import pins
from ltrfeat.encoders.leakage import LeakageGuard
from ltrfeat.features.lexical import FAMILIES, QUERY_ONLY, SETTINGS, LexicalExtractor
from ltrfeat.rankers.contributions import Contributions, contributions
from ltrfeat.rankers.models import load_ranker

LEXICAL_PARAMS = SETTINGS
ENCODER_SUFFIXES = ("cos", "dot", "score")  # cosine, dot product, pair scorer's match score


_log = logging.getLogger("ltrfeat.serve")


class CandidateError(LtrfeatError):
    """A scoring request is malformed (missing field, non-text value); the HTTP layer answers 422."""


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


class Scorer:
    """Scores candidate documents of one query with a trained ranker.

    Build with :meth:`load`. Parameters: ``ranker`` (a fitted ranker of any kind, see
    :mod:`ltrfeat.rankers.registry`),
    ``extractors`` (objects with ``feature_names()`` and ``transform(pairs)``), ``fields``
    (document fields the candidates must carry), ``strict`` (refuse queries an encoder was trained
    on). :meth:`score` is thread-safe (serialised). :attr:`guard` counts the queries :func:`rerank_run
    <ltrfeat.serving.rerank.rerank_run>` scores that an encoder was trained on (:mod:`ltrfeat.encoders.leakage`);
    :meth:`score` checks each query on its own and keeps none. :attr:`load_args`: the arguments of the
    :meth:`load` that built it from a model file (another process loads the same scorer with them), else None.
    """

    load_args: dict | None = None

    def __init__(self, ranker, extractors: list, fields: tuple, *, strict: bool = False, logged_queries: int = 10_000):
        self.ranker = ranker
        self.extractors = extractors
        self.fields = tuple(fields)
        self.guard = LeakageGuard(extractors, strict=strict)
        self._lock = threading.RLock()
        self._logged: OrderedDict[bytes, None] = OrderedDict()  # hashes of trained-on queries logged, LRU
        self._max_logged = logged_queries
        self._scored_queries = 0
        self._trained_on = {ex.name: 0 for ex in self.guard.watched}  # queries scored that each was trained on

    @property
    def feature_names(self) -> list[str]:
        return self.ranker.feature_map_.names

    @property
    def explains(self) -> bool:
        """Whether the ranker splits its scores into per-feature contributions (``/explain``)."""
        return callable(getattr(self.ranker, "contributions", None))

    @classmethod
    def load(
        cls,
        ranker,
        *,
        encoders: dict | None = None,
        corpus_stats=None,
        lexical_params: dict | None = None,
        strict: bool = False,
        caches: CacheLimits | None = None,
    ) -> "Scorer":
        """Load the ranker and build the extractors its features need.

        Parameters
        ----------
        ranker : model file written by ``train-ranker`` (any kind), or a fitted ranker.
        encoders : ``{name: path}`` for ``<name>_<field>_cos`` / ``_dot`` / ``_score`` columns; path is
            an ``.ltrenc`` bundle (DSSM, CLSM or DeepMatch), an ONNX export directory, or None for
            ``sbert`` (packaged MiniLM). An encoder not given is the bundle the ranker's record names,
            if that file is still there with the recorded SHA-256.
        corpus_stats : corpus statistics file (``extract --save-corpus-stats``), needed for
            lexical features; not given, the file the ranker's record names, if it still holds the
            recorded statistics.
        lexical_params : lexical settings (``k1``, ``b``, ``mu``, ``jm_lambda``, ``ad_delta``,
            ``bm25_norms``); None or absent takes the value the ranker's features were extracted with
            (its metadata records them; see :mod:`ltrfeat.features.pins`). A given value, corpus
            statistics or encoder bundle that contradicts the record is an error; a ranker without the
            record is scored with the corpus file's record or the defaults, with a warning.
        strict : refuse to score a query an encoder was trained on (else each is logged once).
        caches : what is kept between calls (default :class:`CacheLimits`).
        """
        load_args = dict(
            ranker=ranker,
            encoders=encoders,
            corpus_stats=corpus_stats,
            lexical_params=lexical_params,
            strict=strict,
            caches=caches,
        )
        caches = caches or CacheLimits()
        model = load_ranker(ranker)
        where = None if model is ranker else ranker
        encoders = dict(encoders or {})
        for record in model.feature_map_.pipeline:  # bundles the record names, where they still are as recorded
            name = record.get("name")
            if record.get("kind") == "encoder" and name not in encoders:
                path = pins.recorded_encoder_path(model.feature_map_, name)
                if path is not None:
                    encoders[name] = path
        params = dict(lexical_params or {})
        unknown = set(params) - set(LEXICAL_PARAMS)
        if unknown:
            raise LtrfeatError(
                f"unknown lexical parameter(s) {', '.join(sorted(unknown))}", fix=f"use {', '.join(LEXICAL_PARAMS)}"
            )
        if corpus_stats is None:  # the file the record names, where it still is as recorded
            corpus_stats = pins.recorded_corpus_path(model.feature_map_)
            if corpus_stats is not None:
                _log.info("corpus statistics: %s (the file the ranker's record names)", corpus_stats)
        corpus = CorpusStats.load(corpus_stats) if corpus_stats is not None else None
        families: dict[str, None] = {}
        lexical_columns: dict[str, str] = {}
        lexical_fields: dict[str, None] = {}
        by_encoder: dict[str, dict[str, None]] = {}
        missing = []
        for name in model.feature_map_.names:
            column = _encoder_column(name, encoders)
            if column is not None:
                by_encoder.setdefault(column[0], {})[column[1]] = None
                continue
            lexical = _lexical_column(name, corpus.fields) if corpus is not None else None
            if lexical is None:
                missing.append(name)
                continue
            families[lexical[0]] = None
            lexical_columns[name] = lexical[0]
            if lexical[1] is not None:
                lexical_fields[lexical[1]] = None
        unused = [e for e in encoders if e not in by_encoder]
        if unused:
            raise LtrfeatError(
                f"encoder {unused[0]} is given but the ranker has no {unused[0]}_* feature",
                path=where,
                fix=f"drop it or rename it; the ranker's features are "
                f"{', '.join(model.feature_map_.names[:8])}{', ...' if len(model.feature_map_) > 8 else ''}",
            )
        recorded = pins.corpus_needed(model.feature_map_, missing) if corpus is None else None
        if recorded is not None:  # lexical columns with a record: name the statistics they need
            named = [n for n in missing if (model.feature_map_.record_of(n) or {}).get("kind") == "lexical"]
            raise LtrfeatError(
                f"the ranker's {len(named)} lexical feature(s) ({', '.join(named[:4])}"
                f"{', ...' if len(named) > 4 else ''}) need the corpus statistics they were extracted with "
                f"({recorded}) and none were given",
                path=where,
                fix="pass --corpus-stats FILE (corpus_stats= in Python), the file `extract --save-corpus-stats` "
                "wrote for the training split; the other settings come from the ranker's record",
            )
        if missing:
            shown = ", ".join(missing[:8]) + (", ..." if len(missing) > 8 else "")
            hint = "" if corpus is not None else "no --corpus-stats was given for lexical features; "
            raise LtrfeatError(
                f"the ranker needs {len(missing)} feature(s) the scorer cannot compute: {shown}",
                path=where,
                fix=f"{hint}lexical columns need the corpus statistics they were extracted with, "
                f"<name>_<field>_cos/_dot/_score columns an encoder given as <name>=PATH "
                f"(given: {', '.join(encoders) or 'none'})",
            )
        extractors, note = [], None
        if corpus is not None and families:  # lexical columns are found only with corpus statistics
            params, note = pins.lexical_settings(
                model.feature_map_,
                lexical_columns,
                corpus=corpus,
                given=params,
                path=where,
            )
            lexical_on = tuple(lexical_fields) or corpus.fields[:1]
            extractors.append(
                LexicalExtractor(features=tuple(families), fields=lexical_on, corpus=corpus, **params).fit(None)
            )
        for encoder, fields in by_encoder.items():
            columns = [n for n in model.feature_map_.names if _encoder_column(n, [encoder]) is not None]
            pins.check_encoder(model.feature_map_, encoder, encoders[encoder], columns)
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
        needed = tuple(dict.fromkeys([*lexical_fields, *(f for fs in by_encoder.values() for f in fs)]))
        if note:  # once everything loaded: a failed load says one thing
            warnings.warn(note, LtrfeatWarning, stacklevel=2)
        scorer = cls(model, extractors, needed, strict=strict, logged_queries=caches.logged_queries)
        if where is not None:
            scorer.load_args = load_args
        return scorer

    def _pairs(self, query, candidates) -> pd.DataFrame:
        if not isinstance(query, str):
            raise CandidateError(f"query must be a string, got {type(query).__name__}")
        if not isinstance(candidates, (list, tuple)):
            raise CandidateError(f"candidates must be a list of objects, got {type(candidates).__name__}")
        columns: dict[str, list] = {"docid": [], **{f: [] for f in self.fields}}
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
                    raise CandidateError(
                        f"candidate {i} ({docid}) needs text field {f!r}"
                        + ("" if value is None else f", got {type(value).__name__}")
                    )
                columns[f].append(value)
        pairs = pd.DataFrame({"qid": "q", "query": query, **columns})
        return pairs

    def features(self, query: str, candidates: list[dict]) -> np.ndarray:
        """The ranker's feature matrix (float32, one row per candidate, ranker column order)."""
        return self.pair_features(self._pairs(query, candidates))

    def prepare(self, query: str, candidates: list[dict]) -> pd.DataFrame:
        """One request's pairs table, once its query passed the leakage check (:meth:`score` in steps: this,
        :meth:`pair_features` of any slices of it, :meth:`predict` of all their rows)."""
        with self._lock:
            self._watch(query)
            return self._pairs(query, candidates)

    def pair_features(self, pairs: pd.DataFrame) -> np.ndarray:
        """The ranker's feature matrix for a pairs table of any number of queries (columns ``qid,
        query, docid`` and the document fields in :attr:`fields`), one float32 row per pair."""
        position = {name: j for j, name in enumerate(self.feature_names)}
        X = np.zeros((len(pairs), len(position)), dtype=np.float32)
        if len(pairs):
            with self._lock:
                for ex in self.extractors:
                    values = np.asarray(ex.transform(pairs), dtype=np.float32)
                    for k, name in enumerate(ex.feature_names()):
                        if name in position:
                            X[:, position[name]] = values[:, k]
        return X

    def _query(self, X: np.ndarray) -> RankingSet:
        return RankingSet(
            qid=np.full(len(X), "q", dtype=object), label=np.zeros(len(X)), X=X, feature_map=self.ranker.feature_map_
        )

    def predict(self, X: np.ndarray) -> np.ndarray:
        """Ranker scores (float64) of one query's feature rows (the ranker may standardise within the query)."""
        if not len(X):
            return np.zeros(0)
        with self._lock:
            return self.ranker.predict(self._query(X))

    def contributions(self, X: np.ndarray) -> Contributions:
        """Per-row, per-feature contributions to :meth:`predict`'s scores of one query's feature rows
        (:mod:`ltrfeat.rankers.contributions`: ``values.sum(axis=1) + bias`` is the score)."""
        if not len(X):
            return Contributions(list(self.feature_names), np.zeros((0, len(self.feature_names))), np.zeros(0))
        with self._lock:
            return contributions(self.ranker, self._query(X))

    def _watch(self, query) -> None:
        """Log (or under ``strict`` refuse) a query an encoder was trained on: once per distinct query among the
        last ``logged_queries`` such queries, whose hashes are all that is kept."""
        if not isinstance(query, str) or not self.guard.watched:
            return
        probe = LeakageGuard(self.guard.watched, strict=self.guard.strict)  # this query alone
        try:
            probe.add([query], [query])
        except LtrfeatError as exc:
            raise CandidateError(exc.problem) from None
        self._scored_queries += 1
        for name, seen in probe.seen.items():
            if not seen:
                continue
            self._trained_on[name] += 1
            key = hashlib.blake2b(f"{name}\0{query}".encode("utf-8", "surrogatepass"), digest_size=16).digest()
            if key in self._logged:
                self._logged.move_to_end(key)
                continue
            self._logged[key] = None
            if len(self._logged) > self._max_logged:
                self._logged.popitem(last=False)
            _log.warning(
                "query %s was in encoder %s's training data (%d such of %d queries scored so far; --strict refuses)",
                _shown(query),
                name,
                self._trained_on[name],
                self._scored_queries,
            )

    def query_params(self, query: str) -> dict:
        """Template parameters of the exported LTR featureset for ``query`` (``/embed``): ``keywords``,
        each encoder's query vector, ``query_len`` / ``idf_*`` values and the distinct term count."""
        from ltrfeat.export.plugin_features import query_params

        if not isinstance(query, str):
            raise CandidateError(f"query must be a string, got {type(query).__name__}")
        lexical = next((ex for ex in self.extractors if isinstance(ex, LexicalExtractor)), None)
        with self._lock:
            vectors = {
                ex.name: ex.encoder_.encode([query], side="query")[0]
                for ex in self.extractors
                if hasattr(getattr(ex, "encoder_", None), "encode")
            }
            return query_params(query, self.feature_names, lexical=lexical, vectors=vectors)

    def score(self, query: str, candidates: list[dict]) -> np.ndarray:
        """Ranker scores (float64), one per candidate, in the candidates' order."""
        with self._lock:
            self._watch(query)
            return self.predict(self.features(query, candidates))


def _shown(text: str, limit: int = 200) -> str:
    """``repr(text)``, cut to about ``limit`` characters (a log line stays short whatever a client sends)."""
    return repr(text) if len(text) <= limit else f"{text[:limit]!r}... ({len(text):,} characters)"
