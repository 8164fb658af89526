"""The extraction pipeline: (query, document) texts → feature columns appended to a LETOR file.

A :class:`FeatureExtractor` is fitted once on the documents table and then transforms a
``pairs`` table (columns ``qid, query, docid`` and the document's text fields, one row per
LETOR row). :func:`extract_file` streams a LETOR file in query chunks, joins each row to
its query text (by qid) and document text (by the ``#docid = X`` comment), and appends the
extractors' columns after the file's largest feature id; :func:`extract_pairs` does the same
for an in-memory judged-pairs table (no input features).
"""

from __future__ import annotations

import dataclasses
import itertools
import sys
import warnings
from typing import Protocol, runtime_checkable
from collections.abc import Callable

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator, TransformerMixin, clone
from sklearn.exceptions import NotFittedError
from sklearn.utils.validation import check_is_fitted
from tqdm.auto import tqdm

from ltrfeat.features.sklearn_tags import TextTransformerTags
from ltrfeat.core.dataset import RankingSet
from ltrfeat.core.errors import LtrfeatError, LtrfeatWarning, TextTableError
from ltrfeat.core.letor import LetorWriter, iter_letor
from ltrfeat.encoders.leakage import LeakageGuard
from ltrfeat.features.lexical import FAMILIES, SETTINGS, LexicalExtractor
from ltrfeat.core.text import PAIR_COLUMNS, pairs_to_ranking
from ltrfeat.core.logs import get_logger, show_progress

MISSING_POLICIES = ("error", "nan", "zero")
_log = get_logger("extract")


@runtime_checkable
class FeatureExtractor(Protocol):
    """What :func:`extract_file` needs from a feature source (scikit-learn style).

    ``fit`` returns self and stores learned state in attributes ending in ``_``;
    ``transform(pairs)`` returns a float32 array of shape ``(len(pairs), len(feature_names()))``
    for a table with columns ``qid, query, docid`` and the document text fields. An optional
    ``feature_source`` attribute (e.g. ``"lexical"``) is recorded in the feature map.
    """

    def fit(self, docs: pd.DataFrame, queries: pd.DataFrame | None = None) -> "FeatureExtractor": ...

    def feature_names(self) -> list[str]: ...

    def transform(self, pairs: pd.DataFrame) -> np.ndarray: ...


# ---------------------------------------------------------------------------- registry

_REGISTRY: dict[str, tuple[str, Callable]] = {}


def register_extractor(name: str, description: str, factory: Callable) -> None:
    """Make ``name`` available to ``ltrfeat extract`` and ``ltrfeat features list``.

    ``factory(*, fields, **params)`` returns an unfitted :class:`FeatureExtractor`.
    """
    if name in _REGISTRY:
        raise ValueError(f"extractor {name!r} is already registered")
    _REGISTRY[name] = (description, factory)


def available_extractors() -> dict[str, tuple[str, Callable]]:
    """Every registered extractor: ``name -> (one-line description, factory)``."""
    return dict(_REGISTRY)


def _lexical_factory(family: str) -> Callable:
    def factory(*, fields, **params) -> LexicalExtractor:
        return LexicalExtractor(features=(family,), fields=tuple(fields), **params)

    return factory


for _family, (_description, _) in FAMILIES.items():
    register_extractor(_family, _description, _lexical_factory(_family))


def lexical_extractors(names, *, fields, **params) -> list[LexicalExtractor]:
    """One :class:`LexicalExtractor` computing every lexical family in ``names`` (``"all"``
    for all of them), so texts are analysed once; an empty list when ``names`` is empty.
    ``params`` are LexicalExtractor parameters (analyzer, k1, b, mu, corpus, ...)."""
    names = [n.strip() for n in (names.split(",") if isinstance(names, str) else names) if n.strip()]
    if not names:
        return []
    if names == ["all"]:
        names = list(FAMILIES)
    unknown = [n for n in names if n not in FAMILIES]
    if unknown:
        raise LtrfeatError(
            f"unknown lexical feature(s) {', '.join(unknown)}",
            fix=f"choose from {', '.join(FAMILIES)} (see `ltrfeat features list`)",
        )
    return [LexicalExtractor(features=tuple(dict.fromkeys(names)), fields=tuple(fields), **params)]


# ---------------------------------------------------------------------------- fitting and naming


def fit_extractors(extractors, docs: pd.DataFrame, queries: pd.DataFrame | None = None) -> list:
    """Fit every extractor that is not fitted yet on ``docs`` (and ``queries``)."""
    for ex in extractors:
        try:
            check_is_fitted(ex)
        except NotFittedError:
            ex.fit(docs, queries)
    return list(extractors)


def _source(ex) -> str:
    return getattr(ex, "feature_source", None) or type(ex).__name__


def _record(ex) -> dict | None:
    """The extractor's pipeline record (see :mod:`ltrfeat.features.pins`), None if it keeps none."""
    return ex.pipeline_record() if hasattr(ex, "pipeline_record") else None


def _output_map(feature_map, extractors):
    """``feature_map`` with every extractor's columns (ids after the largest) and pipeline records appended."""
    try:
        for ex in extractors:
            feature_map = feature_map.append(ex.feature_names(), _source(ex), _record(ex))
    except ValueError as exc:  # a name already in the file
        raise LtrfeatError(
            f"cannot append the new columns ({exc})", fix="drop those columns from the input or choose other extractors"
        ) from None
    return feature_map


class PairFeatures(TextTransformerTags, TransformerMixin, BaseEstimator):
    """scikit-learn transformer from a pairs DataFrame to the extractors' feature matrix.

    The first step of a Pipeline that goes from (query, document) pairs to ranker scores::

        pipe = Pipeline([("features", PairFeatures([LexicalExtractor(features=("bm25",), fields=("doc",))])),
                         ("ranker", LambdaMART())])
        pipe.fit(train_pairs, train_pairs["label"], ranker__qid=train_pairs["qid"])
        scores = pipe.predict(test_pairs)

    Parameters
    ----------
    extractors : :class:`FeatureExtractor` list (e.g. ``LexicalExtractor``, ``EncoderExtractor``).
        ``fit`` fits clones of them (``extractors_``); the given objects are left untouched.

    ``fit(pairs)`` fits every extractor on the pairs' distinct documents (first row of each
    ``docid``) and queries; ``transform(pairs)`` returns float32 ``(len(pairs), n_features)``
    whose columns :meth:`get_feature_names_out` names (``set_output(transform="pandas")`` gives a
    DataFrame, whose names a :class:`ltrfeat.rankers.lambdamart.LambdaMART` then keeps). Pairs need
    ``qid, query, docid`` and every document field the extractors read (``doc`` as from
    :func:`ltrfeat.core.text.read_judged_pairs`); a missing text is an error.
    """

    def __init__(self, extractors=()):
        self.extractors = extractors

    def fit(self, pairs: pd.DataFrame, y=None) -> "PairFeatures":
        self._check_pairs(pairs, ["qid", "query", "docid"])
        extractors = [clone(ex) for ex in self.extractors]
        if not extractors:
            raise LtrfeatError("PairFeatures has no extractors", fix="pass e.g. [LexicalExtractor(fields=('doc',))]")
        docs = pairs.drop_duplicates("docid")
        fields = _doc_fields(docs[[c for c in docs.columns if c not in ("qid", "query", "label")]], extractors)
        self._check_pairs(pairs, fields)
        fit_extractors(
            extractors,
            docs[["docid", *fields]].reset_index(drop=True),
            pairs.drop_duplicates("qid")[["qid", "query"]].reset_index(drop=True),
        )
        self.extractors_ = extractors
        self.fields_ = fields
        self.feature_names_ = [name for ex in extractors for name in ex.feature_names()]
        return self

    @staticmethod
    def _check_pairs(pairs, columns) -> None:
        if not isinstance(pairs, pd.DataFrame):
            raise LtrfeatError(
                f"PairFeatures takes a pairs DataFrame, got {type(pairs).__name__}",
                fix="read one with ltrfeat.core.text.read_judged_pairs",
            )
        absent = [c for c in columns if c not in pairs.columns]
        if absent:
            raise TextTableError(
                f"pairs lack column(s) {', '.join(absent)} (columns: {', '.join(map(str, pairs.columns))})",
                path=pairs.attrs.get("source"),
                fix="give qid, query, docid and the document fields",
            )

    def transform(self, pairs: pd.DataFrame) -> np.ndarray:
        check_is_fitted(self, "extractors_")
        self._check_pairs(pairs, ["query", *self.fields_])
        empty = np.zeros(len(pairs), dtype=bool)
        for column in ["query", *self.fields_]:
            empty |= pairs[column].isna().to_numpy()
        if empty.any():
            raise TextTableError(
                f"{int(empty.sum())} pairs have no text (rows {', '.join(map(str, (np.flatnonzero(empty) + 1)[:5]))})",
                path=pairs.attrs.get("source"),
                fix="fill in the query and document texts",
            )
        ok = np.ones(len(pairs), dtype=bool)
        blocks = _transform(self.extractors_, pairs.reset_index(drop=True), ok, "error")
        return np.hstack(blocks) if blocks else np.zeros((len(pairs), 0), dtype=np.float32)

    def get_feature_names_out(self, input_features=None) -> np.ndarray:
        check_is_fitted(self, "extractors_")
        return np.asarray(self.feature_names_, dtype=object)


def _append_columns(data: RankingSet, extractors, blocks) -> RankingSet:
    _output_map(data.feature_map, extractors)
    for ex, values in zip(extractors, blocks):
        data = data.with_columns(ex.feature_names(), values, source=_source(ex), record=_record(ex))
    return data


# ---------------------------------------------------------------------------- joining texts


class _TextIndex:
    """Row lookup of a query or document table by id."""

    def __init__(self, table: pd.DataFrame, key: str, what: str):
        if key not in table.columns:
            raise TextTableError(
                f"{what} table has no {key!r} column",
                path=table.attrs.get("source"),
                fix=f"read it with read_{what}s or rename the id column to {key!r}",
            )
        ids = table[key].astype(str)
        if ids.duplicated().any():
            raise TextTableError(
                f"{what} table repeats {key} {ids[ids.duplicated()].iloc[0]!r}",
                path=table.attrs.get("source"),
                fix=f"give each {what} one row",
            )
        self.table = table.reset_index(drop=True)
        self.index = pd.Index(ids.to_numpy(dtype=object))

    def rows(self, ids) -> np.ndarray:
        """Positions of ``ids`` in the table, -1 where unknown or ``None``."""
        return self.index.get_indexer(pd.Index(np.asarray(ids, dtype=object)))


class _MissingTally:
    """Counts rows without text over the whole file and keeps the first few ids of each kind."""

    SHOW = 5

    def __init__(self):
        self.rows = 0
        self.kinds: dict[str, tuple[int, list]] = {}

    def add(self, kind: str, values) -> None:
        values = list(values)
        if not values:
            return
        count, first = self.kinds.get(kind, (0, []))
        first = first + [v for v in values if v not in first][: self.SHOW - len(first)]
        self.kinds[kind] = (count + len(values), first)

    def message(self) -> str:
        parts = [
            f"{count} {kind} ({', '.join(map(str, first))}{', ...' if count > len(first) else ''})"
            for kind, (count, first) in self.kinds.items()
        ]
        return f"{self.rows} rows have no text: " + "; ".join(parts)


def _join(data: RankingSet, queries: _TextIndex, docs: _TextIndex, fields, tally: _MissingTally, offset: int):
    """The pairs table for ``data``'s rows and a mask of rows whose texts were all found."""
    qrow = queries.rows(data.qid)
    docid = data.docid if data.docid is not None else np.full(len(data), None, dtype=object)
    drow = docs.rows(docid)
    no_docid = np.array([d is None for d in docid.tolist()], dtype=bool)
    tally.add("qids not in the queries table", dict.fromkeys(data.qid[qrow < 0].tolist()))
    tally.add("docids not in the documents table", dict.fromkeys(docid[(drow < 0) & ~no_docid].tolist()))
    tally.add("rows without a '#docid = X' comment (row numbers)", (np.flatnonzero(no_docid) + offset + 1).tolist())
    ok = (qrow >= 0) & (drow >= 0)
    tally.rows += int((~ok).sum())
    pairs = pd.DataFrame({"qid": data.qid, "docid": docid})
    pairs["query"] = queries.table["query"].to_numpy(dtype=object)[np.maximum(qrow, 0)]
    for f in fields:
        pairs[f] = docs.table[f].to_numpy(dtype=object)[np.maximum(drow, 0)]
    return pairs, ok


def _doc_fields(docs: pd.DataFrame, extractors) -> list[str]:
    """Text fields the extractors read (those they name), else every non-id column."""
    named: list[str] = []
    for ex in extractors:
        own = getattr(ex, "fields", None) or ()
        named.extend([own] if isinstance(own, str) else own)
    fields = list(dict.fromkeys(named)) or [c for c in docs.columns if c != "docid"]
    absent = [f for f in fields if f not in docs.columns]
    if absent:
        raise TextTableError(
            f"documents table has no field(s) {', '.join(absent)} (columns: {', '.join(docs.columns)})",
            path=docs.attrs.get("source"),
            fix="choose --fields among the documents table's columns",
        )
    return fields


def _transform(extractors, pairs: pd.DataFrame, ok: np.ndarray, missing: str) -> list[np.ndarray]:
    fill = np.nan if missing == "nan" else 0.0
    blocks = []
    for ex in extractors:
        width = len(ex.feature_names())
        values = np.full((len(pairs), width), fill, dtype=np.float32)
        if ok.any():
            got = np.asarray(ex.transform(pairs[ok].reset_index(drop=True)), dtype=np.float32)
            if got.shape != (int(ok.sum()), width):
                raise ValueError(
                    f"{type(ex).__name__}.transform returned shape {got.shape}, expected {(int(ok.sum()), width)}"
                )
            values[ok] = got
        blocks.append(values)
    return blocks


def watch_queries(guard: LeakageGuard, qids, queries: "_TextIndex") -> None:
    """Tell ``guard`` which queries (by id, texts from the queries table) are about to be scored."""
    rows = queries.rows(qids)
    known = rows >= 0
    guard.add(np.asarray(qids, dtype=object)[known], queries.table["query"].to_numpy(dtype=object)[rows[known]])


def finish_guard(guard: LeakageGuard, feature_map):
    """Warn about encoders that scored their own training queries; the map with the counts recorded."""
    for message in guard.messages():
        warnings.warn(message, LtrfeatWarning, stacklevel=3)
    return guard.records(feature_map)


def _check_missing(missing: str) -> None:
    if missing not in MISSING_POLICIES:
        raise LtrfeatError(f"unknown missing-text policy {missing!r}", fix=f"use one of {', '.join(MISSING_POLICIES)}")


# ---------------------------------------------------------------------------- entry points


def extract_file(
    in_path,
    out_path,
    *,
    queries: pd.DataFrame,
    docs: pd.DataFrame,
    extractors,
    missing: str = "error",
    chunk_queries: int = 1000,
    progress: bool = True,
    strict: bool = False,
) -> int:
    """Append the extractors' columns to the LETOR file ``in_path``, writing ``out_path`` and
    its ``.features.json`` sidecar atomically.

    Parameters
    ----------
    queries : table ``qid, query``; docs : table ``docid, <fields...>`` (see ``ltrfeat.core.text``).
    extractors : :class:`FeatureExtractor` list; unfitted ones are fitted on ``docs`` first.
    missing : rows whose qid or docid has no text (or that lack a docid comment):
        ``"error"`` (default; lists the first few ids and the count, writes nothing),
        ``"nan"`` or ``"zero"`` (the new columns get that value).
    chunk_queries : queries per streamed chunk. progress : tqdm bar on stderr (TTY only).
    strict : refuse (writing nothing) to score a query an encoder was trained on; without it such
        queries are counted, warned about and recorded in the sidecar (:mod:`ltrfeat.encoders.leakage`).

    Returns the number of rows written.
    """
    _check_missing(missing)
    extractors = fit_extractors(extractors, docs, queries)
    fields = _doc_fields(docs, extractors)
    q_index, d_index = _TextIndex(queries, "qid", "query"), _TextIndex(docs, "docid", "document")
    tally = _MissingTally()
    chunks = iter_letor(in_path, chunk_queries=chunk_queries)
    first = next(chunks, None)
    if first is None:
        raise LtrfeatError("the input has no rows", path=in_path, fix="check the input file")
    out_map = _output_map(first.feature_map, extractors)
    guard = LeakageGuard(extractors, strict=strict)
    rows = 0
    with _progress(progress) as bar, LetorWriter(out_path, out_map) as writer:
        for chunk in itertools.chain([first], chunks):
            pairs, ok = _join(chunk, q_index, d_index, fields, tally, rows)
            rows += len(chunk)
            bar.update(len(chunk))
            if tally.rows and missing == "error":
                continue  # keep scanning only to report every missing id; nothing will be written
            guard.add(pairs["qid"][ok], pairs["query"][ok])
            writer.write(_append_columns(chunk, extractors, _transform(extractors, pairs, ok, missing)))
        writer.feature_map = finish_guard(guard, writer.feature_map)
        if tally.rows and missing == "error":
            raise TextTableError(
                tally.message(),
                path=in_path,
                fix="add the texts to the queries/documents tables, or pass --missing nan|zero",
            )
    _log.info(
        "extract: %d rows of %s, %d new column(s) -> %s",
        rows,
        in_path,
        len(out_map.names) - len(first.feature_map.names),
        out_path,
    )
    return rows


def extract_pairs(
    pairs: pd.DataFrame, extractors, *, missing: str = "error", conflicts: str = "error", strict: bool = False
) -> RankingSet:
    """Feature columns for a judged-pairs table (``qid, query, docid, doc[, fields...], label``,
    as from :func:`ltrfeat.core.text.read_judged_pairs`).

    Rows are grouped by query (queries in order of first appearance); docids go into the
    comments (``docid = X``). Unfitted extractors are fitted on the pairs' distinct documents.
    ``conflicts``: an id naming different texts on different rows is an ``"error"``, or
    ``"first"`` keeps its first text (see :func:`ltrfeat.core.text.pairs_to_ranking`).
    Returns a :class:`RankingSet` whose only columns are the extractors'. ``strict``: as for :func:`extract_file`.
    """
    fields = ["doc", *[c for c in pairs.columns if c not in PAIR_COLUMNS]]
    ranking, queries, docs = pairs_to_ranking(pairs, fields=fields, conflicts=conflicts)
    return extract_ranking(ranking, extractors, queries=queries, docs=docs, missing=missing, strict=strict)


def extract_ranking(
    data: RankingSet,
    extractors,
    *,
    queries: pd.DataFrame,
    docs: pd.DataFrame,
    missing: str = "error",
    strict: bool = False,
) -> RankingSet:
    """In-memory :func:`extract_file`: ``data`` (with docids) plus the extractors' columns."""
    _check_missing(missing)
    extractors = fit_extractors(extractors, docs, queries)
    tally = _MissingTally()
    joined, ok = _join(
        data,
        _TextIndex(queries, "qid", "query"),
        _TextIndex(docs, "docid", "document"),
        _doc_fields(docs, extractors),
        tally,
        0,
    )
    if tally.rows and missing == "error":
        raise TextTableError(
            tally.message(),
            fix="add the texts to the queries/documents tables, or use missing='nan' (or 'zero')",
            param="missing",
        )
    guard = LeakageGuard(extractors, strict=strict)
    guard.add(joined["qid"][ok], joined["query"][ok])
    out = _append_columns(data, extractors, _transform(extractors, joined, ok, missing))
    return dataclasses.replace(out, feature_map=finish_guard(guard, out.feature_map))


def _progress(enabled: bool):
    disable = not show_progress(enabled)
    return tqdm(desc="extract", unit="rows", disable=disable, file=sys.stderr)


def save_corpus_stats(extractors, path) -> None:
    """Save the corpus statistics the fitted lexical ``extractors`` share (with their analysis settings) to
    ``path``, for ``--corpus-stats`` of ``extract`` and ``serve``."""
    lexical = [e for e in extractors if hasattr(e, "corpus_")]
    if not lexical:
        raise LtrfeatError("no lexical extractor fitted corpus statistics", fix="add --lexical NAMES")
    record = lexical[0].pipeline_record()
    lexical[0].corpus_.save(path, settings={k: record[k] for k in SETTINGS})
