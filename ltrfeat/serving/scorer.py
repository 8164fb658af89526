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

import numpy as np
import pandas as pd

from ltrfeat.core.dataset import RankingSet
from ltrfeat.core.errors import LtrfeatError, LtrfeatWarning
from ltrfeat.encoders.leakage import LeakageGuard
from ltrfeat.features.lexical import LexicalExtractor
from ltrfeat.rankers.contributions import Contributions, contributions
from ltrfeat.rankers.models import load_ranker
from ltrfeat.serving._extractor_plan import (
    ENCODER_SUFFIXES,
    LEXICAL_PARAMS,
    CacheLimits,
    _check_computable,
    _corpus,
    _encoder_extractors,
    _encoder_paths,
    _lexical_extractor,
    _lexical_params,
    _sort_columns,
)

__all__ = ["ENCODER_SUFFIXES", "LEXICAL_PARAMS", "CacheLimits", "CandidateError", "Scorer"]

_log = logging.getLogger("ltrfeat.serve")


class CandidateError(LtrfeatError):
    """A scoring request is malformed (missing field, non-text value); the HTTP layer answers 422."""


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
        encoders = _encoder_paths(model, encoders)
        params = _lexical_params(lexical_params)
        corpus = _corpus(model, corpus_stats)
        columns = _sort_columns(model, encoders, corpus)
        _check_computable(model, columns, encoders, corpus, where)
        extractors, note = [], None
        if corpus is not None and columns.families:
            lexical, note = _lexical_extractor(model, columns, corpus, params, where)
            extractors.append(lexical)
        extractors += _encoder_extractors(model, columns, encoders, caches, where)
        needed = columns.fields()
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
