"""Corpus statistics fitted once from a documents table, saved and loaded without pickle.

For each text field (``title``, ``body``, ...) :class:`CorpusStats` keeps the number of
documents, the total field length, and per term the document frequency and the collection
term frequency; for the letter-trigram features it keeps per trigram the document
frequency. Terms are the tokens of the stored :class:`~ltrfeat.core.analysis.Analyzer`.
Fitting on the training documents and loading the same file for validation and test keeps
every split's features on one scale.

File format: a NumPy ``.npz`` archive (read with ``allow_pickle=False``) holding a JSON
``meta`` record, the vocabulary and trigram lists as UTF-8 text, and integer arrays.
"""

from __future__ import annotations

import dataclasses
import hashlib
import io
import json
import zipfile
from typing import Any

import numpy as np
import pandas as pd
import scipy.sparse as sp

from ltrfeat.core.analysis import Analyzer
from ltrfeat.core.errors import ModelFileError, TextTableError
from ltrfeat.core.fileio import atomic_output, open_input

CORPUS_FORMAT = "ltrfeat.corpus/1"


def word_trigrams(token: str) -> list[str]:
    """Letter trigrams of ``#token#`` (DSSM word hashing): ``"cat"`` → ``#ca, cat, at#``."""
    w = f"#{token}#"
    return [w[i : i + 3] for i in range(len(w) - 2)]


@dataclasses.dataclass(frozen=True)
class FieldStats:
    """Statistics of one text field over ``n_docs`` documents."""

    n_docs: int
    total_len: int
    df: np.ndarray  # int64 (n_terms,): documents containing the term
    cf: np.ndarray  # int64 (n_terms,): occurrences of the term in the collection
    tri_df: np.ndarray  # int64 (n_trigrams,): documents containing the trigram
    n_nonempty: int | None = None  # documents with at least one token (None: files saved before it was kept)

    @property
    def avg_len(self) -> float:
        return self.total_len / self.n_docs if self.n_docs else 0.0

    @property
    def n_with_field(self) -> int:
        """Documents that have the field (Lucene's ``docCount``); all documents for old files."""
        return self.n_docs if self.n_nonempty is None else self.n_nonempty


@dataclasses.dataclass
class TokenBatch:
    """Term ids of a column of texts; each distinct text is analysed once.

    ``codes[i]`` is the distinct text of input row ``i``; distinct text ``k`` has term ids
    ``ids[offsets[k]:offsets[k + 1]]`` in order.
    """

    codes: np.ndarray
    ids: np.ndarray
    offsets: np.ndarray

    @property
    def n_texts(self) -> int:
        return len(self.offsets) - 1

    @property
    def lengths(self) -> np.ndarray:
        return np.diff(self.offsets)

    def counts(self, n_terms: int) -> sp.csr_matrix:
        """Distinct texts × terms matrix of term counts."""
        data = np.ones(len(self.ids), dtype=np.float64)
        m = sp.csr_matrix((data, self.ids, self.offsets), shape=(self.n_texts, n_terms))
        m.sum_duplicates()
        return m


class CorpusStats:
    """Vocabulary and per-field term/trigram statistics. Build with :meth:`from_docs` or :meth:`load`.

    ``settings``: the lexical settings of the extraction that saved the file (k1, b, mu, ...; see
    :mod:`ltrfeat.features.pins`), None for statistics not saved by ``extract`` or saved before they were kept.
    """

    def __init__(self, *, analyzer: Analyzer, fields, vocab, trigrams, field_stats: dict, settings=None, source=None):
        self.settings = settings
        self.source = source
        self.analyzer = analyzer
        self.fields = tuple(fields)
        self.vocab = list(vocab)
        self.trigrams = list(trigrams)
        self.field_stats = dict(field_stats)
        self.term_index = {t: i for i, t in enumerate(self.vocab)}
        self.trigram_index = {g: i for i, g in enumerate(self.trigrams)}
        self._trigram_matrix = None
        self._fingerprint: str | None = None

    def __repr__(self) -> str:
        docs = next(iter(self.field_stats.values())).n_docs if self.field_stats else 0
        return f"CorpusStats({docs} docs, fields={list(self.fields)}, {len(self.vocab)} terms, {len(self.trigrams)} trigrams)"

    @property
    def n_terms(self) -> int:
        return len(self.vocab)

    @classmethod
    def from_docs(cls, docs: pd.DataFrame, *, fields, analyzer: Analyzer | None = None) -> "CorpusStats":
        """Fit statistics on the documents table ``docs`` (one row per document; missing field
        values count as empty texts)."""
        analyzer = analyzer or Analyzer()
        fields = tuple(fields)
        if not fields:
            raise ValueError("need at least one text field")
        absent = [f for f in fields if f not in docs.columns]
        if absent:
            raise TextTableError(
                f"documents table has no column(s) {', '.join(absent)} (columns: {', '.join(map(str, docs.columns))})",
                fix="choose --fields among the table's text columns",
            )
        flat = {f: analyzer.analyze_flat(_texts(docs[f])) for f in fields}
        vocab = sorted({t for toks, _ in flat.values() for t in toks})
        index = {t: i for i, t in enumerate(vocab)}
        trigrams = sorted({g for t in vocab for g in word_trigrams(t)})
        stats = cls(analyzer=analyzer, fields=fields, vocab=vocab, trigrams=trigrams, field_stats={})
        for f in fields:
            toks, offsets = flat[f]
            tok_codes, distinct = pd.factorize(np.asarray(toks, dtype=object)) if toks else (np.zeros(0, np.int64), [])
            ids = np.asarray([index[t] for t in distinct], dtype=np.int64)[tok_codes]
            batch = TokenBatch(np.arange(len(docs), dtype=np.int64), ids, offsets)
            counts = batch.counts(len(vocab))
            tri_present = (counts @ stats.trigram_matrix()) > 0
            stats.field_stats[f] = FieldStats(
                n_docs=len(docs),
                total_len=int(batch.lengths.sum()),
                df=np.bincount(counts.indices, minlength=len(vocab)).astype(np.int64),
                cf=np.bincount(counts.indices, weights=counts.data, minlength=len(vocab)).astype(np.int64),
                tri_df=np.bincount(tri_present.tocsr().indices, minlength=len(trigrams)).astype(np.int64),
                n_nonempty=int((batch.lengths > 0).sum()),
            )
        return stats

    def fingerprint(self) -> str:
        """SHA-256 of the statistics (analyzer, fields, vocabulary, counts): equal for the same fitted corpus,
        whether fitted in memory or loaded from a file."""
        if self._fingerprint is None:
            h = hashlib.sha256()
            h.update(json.dumps([self.analyzer.to_json(), list(self.fields)], sort_keys=True).encode())
            h.update("\n".join(self.vocab).encode("utf-8", "surrogatepass"))
            h.update(b"\x00" + "\n".join(self.trigrams).encode("utf-8", "surrogatepass"))
            for f in self.fields:
                s = self.field_stats[f]
                h.update(f"\x00{s.n_docs} {s.total_len}".encode())
                for arr in (s.df, s.cf, s.tri_df):
                    h.update(np.ascontiguousarray(arr, dtype="<i8").tobytes())
            self._fingerprint = h.hexdigest()
        return self._fingerprint

    def trigram_matrix(self, extra_tokens=()) -> sp.csr_matrix:
        """Terms × trigrams count matrix for the vocabulary followed by ``extra_tokens``
        (out-of-vocabulary tokens); trigrams unseen in the corpus are dropped."""
        if self._trigram_matrix is None:
            self._trigram_matrix = self._trigram_rows(self.vocab)
        if not extra_tokens:
            return self._trigram_matrix
        return sp.vstack([self._trigram_matrix, self._trigram_rows(extra_tokens)]).tocsr()

    def _trigram_rows(self, tokens) -> sp.csr_matrix:
        rows, cols = [], []
        for r, tok in enumerate(tokens):
            for g in word_trigrams(tok):
                j = self.trigram_index.get(g)
                if j is not None:
                    rows.append(r)
                    cols.append(j)
        m = sp.csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(len(tokens), len(self.trigrams)))
        m.sum_duplicates()
        return m

    def check_fields(self, fields) -> None:
        absent = [f for f in fields if f not in self.field_stats]
        if absent:
            raise ModelFileError(
                f"corpus statistics have no field(s) {', '.join(absent)} (fields: {', '.join(self.fields)})",
                fix="fit the statistics on a documents table with those fields",
            )

    # ---- persistence -------------------------------------------------------------------
    def save(self, path, *, settings: dict | None = None) -> None:
        """Write an ``.npz`` archive (no pickled objects) atomically; ``settings`` (the extraction's lexical
        settings) are kept with it and come back as :attr:`settings`."""
        meta = {
            "format": CORPUS_FORMAT,
            "analyzer": self.analyzer.to_json(),
            "fields": list(self.fields),
            "n_docs": {f: s.n_docs for f, s in self.field_stats.items()},
            "total_len": {f: s.total_len for f, s in self.field_stats.items()},
            "n_nonempty": {f: s.n_nonempty for f, s in self.field_stats.items() if s.n_nonempty is not None},
            **({"settings": settings} if settings is not None else {}),
        }
        arrays: dict[str, Any] = {
            "meta": _text_array(json.dumps(meta)),
            "vocab": _text_array("\n".join(self.vocab)),
            "trigrams": _text_array("\n".join(self.trigrams)),
        }
        for k, f in enumerate(self.fields):
            s = self.field_stats[f]
            arrays.update({f"df_{k}": s.df, f"cf_{k}": s.cf, f"tri_df_{k}": s.tri_df})
        with atomic_output(path, binary=True) as fh:
            np.savez_compressed(fh, **arrays)

    @classmethod
    def load(cls, path) -> "CorpusStats":
        fix = "refit the statistics with `ltrfeat extract ... --save-corpus-stats PATH`"
        try:
            with open_input(path) as fh:
                archive = np.load(io.BytesIO(fh.read()), allow_pickle=False)
                arrays = {k: archive[k] for k in archive.files}
        except FileNotFoundError:
            raise ModelFileError("corpus statistics file not found", path=path, fix=fix) from None
        except (OSError, ValueError, zipfile.BadZipFile, EOFError) as exc:
            raise ModelFileError(f"not a corpus statistics file ({exc})", path=path, fix=fix) from None
        try:
            meta = json.loads(_array_text(arrays["meta"]))
            if meta.get("format") != CORPUS_FORMAT:
                raise ModelFileError(
                    f"unsupported corpus statistics format {meta.get('format')!r} (expected {CORPUS_FORMAT})",
                    path=path,
                    fix=fix,
                )
            vocab = _split_lines(_array_text(arrays["vocab"]))
            trigrams = _split_lines(_array_text(arrays["trigrams"]))
            field_stats = {}
            for k, f in enumerate(meta["fields"]):
                s = FieldStats(
                    int(meta["n_docs"][f]),
                    int(meta["total_len"][f]),
                    arrays[f"df_{k}"].astype(np.int64),
                    arrays[f"cf_{k}"].astype(np.int64),
                    arrays[f"tri_df_{k}"].astype(np.int64),
                    None if meta.get("n_nonempty", {}).get(f) is None else int(meta["n_nonempty"][f]),
                )
                if s.df.shape != (len(vocab),) or s.cf.shape != (len(vocab),) or s.tri_df.shape != (len(trigrams),):
                    raise ModelFileError(f"array sizes of field {f!r} do not match the vocabulary", path=path, fix=fix)
                field_stats[f] = s
            return cls(
                analyzer=Analyzer.from_json(meta["analyzer"]),
                fields=meta["fields"],
                vocab=vocab,
                trigrams=trigrams,
                field_stats=field_stats,
                settings=meta.get("settings"),
                source=str(path),
            )
        except (KeyError, TypeError, ValueError, AttributeError, json.JSONDecodeError) as exc:
            raise ModelFileError(
                f"corpus statistics file is incomplete or corrupt ({type(exc).__name__}: {exc})", path=path, fix=fix
            ) from None


class TermEncoder:
    """Maps texts to corpus term ids; tokens outside the vocabulary get fresh ids after it,
    shared by every batch encoded with the same encoder (so a query and a document agree)."""

    def __init__(self, stats: CorpusStats):
        self.stats = stats
        self.oov: dict[str, int] = {}

    @property
    def n_terms(self) -> int:
        return self.stats.n_terms + len(self.oov)

    @property
    def oov_tokens(self) -> list[str]:
        return list(self.oov)

    def encode(self, texts) -> TokenBatch:
        codes, uniques = pd.factorize(pd.Series(texts, dtype=object), use_na_sentinel=False)
        flat, offsets = self.stats.analyzer.analyze_flat(_texts(uniques))
        tok_codes, distinct = pd.factorize(np.asarray(flat, dtype=object)) if flat else (np.zeros(0, np.int64), [])
        get, oov, base = self.stats.term_index.get, self.oov, self.stats.n_terms
        distinct_ids = np.empty(len(distinct), dtype=np.int64)
        for k, t in enumerate(distinct):
            i = get(t)
            if i is None:
                i = oov.get(t)
                if i is None:
                    i = oov[t] = base + len(oov)
            distinct_ids[k] = i
        ids = distinct_ids[tok_codes]
        return TokenBatch(codes.astype(np.int64), ids, offsets)


def _texts(column) -> list[str]:
    """Text values with missing ones (None/NaN) as empty strings."""
    return ["" if v is None or (isinstance(v, float) and v != v) else str(v) for v in column]


def _text_array(text: str) -> np.ndarray:
    return np.frombuffer(text.encode("utf-8"), dtype=np.uint8)


def _array_text(arr: np.ndarray) -> str:
    if arr.dtype != np.uint8:
        raise ValueError(f"text entry has dtype {arr.dtype}")
    return arr.tobytes().decode("utf-8")


def _split_lines(text: str) -> list[str]:
    return text.split("\n") if text else []
