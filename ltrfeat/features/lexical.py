"""Lexical features of (query, document field) pairs from corpus statistics fitted once.

:class:`LexicalExtractor` computes any subset of the feature families in :data:`FAMILIES`
for every requested text field, with stable column names ``<feature>_<field>`` (e.g.
``bm25_title``, ``lm_dirichlet_body``; ``query_len`` has no field suffix).

Definitions (for query tokens q_1..q_m *with repeats*, field text d of |d| tokens, tf =
c(q_i, d), N documents, df / cf document and collection frequency, |C| total field length,
p(w|C) = cf(w)/|C|):

- ``idf(w) = ln(1 + (N - df + 0.5) / (df + 0.5))`` — Lucene's BM25 IDF (always positive).
- ``bm25 = Σ idf(q_i) · tf / (tf + k1 · (1 - b + b · |d| / avgdl))`` — Lucene ≥ 8's formula and
  ``bm25s`` ``method="lucene"``; it omits the classic constant factor (k1 + 1), which does not
  change any ranking. With ``bm25_norms="lucene"`` it is what a Lucene index scores: |d| as the
  engine's one-byte length norm decodes it (:func:`lucene_length`), N and avgdl over the
  documents that have the field.
- ``tf_sum/min/max/mean``, ``idf_sum/min/max/mean`` over the m query tokens;
  ``tfidf_sum = Σ tf · idf``; ``norm_tf_sum = Σ tf / |d|``.
- Query likelihood, summed over query tokens whose cf > 0 (terms unseen in the collection
  have probability 0 in every document and are skipped):
  ``lm_dirichlet``: ln((tf + μ p) / (|d| + μ));
  ``lm_jm``: ln((1 - λ) tf / |d| + λ p);
  ``lm_absdisc``: ln(max(tf - δ, 0) / |d| + δ · u / |d| · p), u = distinct terms of d
  (an empty field uses p).
- ``field_len`` = |d|, ``query_len`` = m, ``coverage`` = share of distinct query terms in d,
  ``phrase_match`` = 1 if the whole token sequence of the query occurs contiguously in d,
  ``bigram_match`` = number of adjacent query token pairs that occur adjacently in d.
- ``trigram_cos``: cosine of TF-IDF vectors of letter trigrams of ``#token#`` (IDF =
  ln((1 + N)/(1 + df)) + 1, as scikit-learn's smooth IDF); robust to misspellings.

A query with no tokens gets 0 for every feature. Everything is vectorised over all pairs
with scipy.sparse; each distinct query and document text is analysed once per call.
"""

from __future__ import annotations

import dataclasses
import functools

from pathlib import Path

import numpy as np
import pandas as pd
import scipy.sparse as sp
from sklearn.base import BaseEstimator
from sklearn.exceptions import NotFittedError

from ltrfeat.features.sklearn_tags import TextTransformerTags
from ltrfeat.features.corpus import CorpusStats, TermEncoder, TokenBatch
from ltrfeat.core.errors import ModelFileError, ParameterError, TextTableError

# family -> (one-line description, column stems). Query-only families have no field suffix.
FAMILIES: dict[str, tuple[str, tuple[str, ...]]] = {
    "bm25": ("BM25, Lucene variant (k1, b; IDF ln(1+(N-df+.5)/(df+.5)))", ("bm25",)),
    "tf": ("sum/min/max/mean of query-term frequencies in the field", ("tf_sum", "tf_min", "tf_max", "tf_mean")),
    "idf": ("sum/min/max/mean of query-term IDF (Lucene IDF)", ("idf_sum", "idf_min", "idf_max", "idf_mean")),
    "tfidf": ("sum of TF x IDF over query terms", ("tfidf_sum",)),
    "norm_tf": ("sum of TF / field length over query terms", ("norm_tf_sum",)),
    "lm_dirichlet": ("query log-likelihood, Dirichlet smoothing (mu)", ("lm_dirichlet",)),
    "lm_jm": ("query log-likelihood, Jelinek-Mercer smoothing (lambda)", ("lm_jm",)),
    "lm_absdisc": ("query log-likelihood, absolute discounting (delta)", ("lm_absdisc",)),
    "field_len": ("field length in tokens", ("field_len",)),
    "query_len": ("query length in tokens (one column, no field)", ("query_len",)),
    "coverage": ("share of distinct query terms present in the field", ("coverage",)),
    "phrase_match": ("1 if the query occurs as an exact phrase in the field", ("phrase_match",)),
    "bigram_match": ("number of ordered query bigrams found in the field", ("bigram_match",)),
    "trigram_cos": ("letter-trigram TF-IDF cosine (robust to misspellings)", ("trigram_cos",)),
}
QUERY_ONLY = frozenset({"query_len"})
BM25_NORMS = ("exact", "lucene")
# the settings a family's values depend on, besides the analyzer and the corpus statistics
FAMILY_SETTINGS = {
    "bm25": ("k1", "b", "bm25_norms"),
    "lm_dirichlet": ("mu",),
    "lm_jm": ("jm_lambda",),
    "lm_absdisc": ("ad_delta",),
}
SETTINGS = ("k1", "b", "mu", "jm_lambda", "ad_delta", "bm25_norms")
BM25_K1 = 1.2  # Lucene's BM25 defaults
BM25_B = 0.75
# every setting's default, the one source of the extractor's, the converters', the exports' and the options' help
LEXICAL_DEFAULTS = {"k1": BM25_K1, "b": BM25_B, "mu": 2000.0, "jm_lambda": 0.1, "ad_delta": 0.7, "bm25_norms": "exact"}


def lucene_length(length):
    """The field length Lucene's BM25 sees (Lucene ≥ 7): the token count stored in one byte by
    ``SmallFloat.intToByte4`` and decoded by ``byte4ToInt`` -- exact below 40 tokens, then 4
    significant bits of the length above 24 (e.g. 41 -> 40, 101 -> 96). Works on ints and integer arrays."""
    length = np.asarray(length, dtype=np.int64)
    free = 24  # byte values below 255 - longToInt4(Integer.MAX_VALUE) keep the length as it is
    rest = length - free
    shift = np.maximum(np.floor(np.log2(np.maximum(rest, 1))).astype(np.int64) + 1 - 4, 0)
    coded = free + ((((rest >> shift) & 0x07) | 0x08) << shift)
    out = np.where(rest < 16, length, coded)
    return int(out) if out.ndim == 0 else out


class LexicalExtractor(TextTransformerTags, BaseEstimator):
    """Lexical features per text field, a scikit-learn style ``FeatureExtractor``.

    Parameters
    ----------
    features : family names from :data:`FAMILIES` (or ``"all"``), in output order.
    fields : document text fields to score, e.g. ``("title", "body")``.
    analyzer : the :class:`~ltrfeat.core.analysis.Analyzer`; default lowercase + punctuation
        removal. Must match ``corpus``'s analyzer when both are given.
    k1, b : BM25 parameters (default :data:`BM25_K1`, :data:`BM25_B`: Lucene's).
    bm25_norms : ``"exact"`` (token counts; the default) or ``"lucene"`` (the length a Lucene index
        stores, and N / avgdl over documents with the field: ``bm25`` equal to the engine's).
    mu : Dirichlet prior μ (Zhai & Lafferty's 2000).
    jm_lambda : Jelinek–Mercer collection weight λ in (0, 1).
    ad_delta : absolute-discounting δ in (0, 1).
    corpus : pre-fitted :class:`~ltrfeat.features.corpus.CorpusStats` (e.g. loaded from the
        training split's file); ``fit`` then only checks it instead of refitting.

    Attributes
    ----------
    corpus_ : the statistics used by :meth:`transform`.
    feature_names_ : output column names.
    """

    feature_source = "lexical"

    def __init__(
        self,
        *,
        features=("bm25",),
        fields=("title",),
        analyzer=None,
        k1=LEXICAL_DEFAULTS["k1"],
        b=LEXICAL_DEFAULTS["b"],
        mu=LEXICAL_DEFAULTS["mu"],
        jm_lambda=LEXICAL_DEFAULTS["jm_lambda"],
        ad_delta=LEXICAL_DEFAULTS["ad_delta"],
        bm25_norms=LEXICAL_DEFAULTS["bm25_norms"],
        corpus=None,
    ):
        self.features = features
        self.fields = fields
        self.analyzer = analyzer
        self.k1 = k1
        self.b = b
        self.mu = mu
        self.jm_lambda = jm_lambda
        self.ad_delta = ad_delta
        self.bm25_norms = bm25_norms
        self.corpus = corpus

    def _families(self) -> list[str]:
        feats = [self.features] if isinstance(self.features, str) else list(self.features)
        if feats == ["all"]:
            return list(FAMILIES)
        unknown = [f for f in feats if f not in FAMILIES]
        if unknown:
            raise ValueError(f"unknown lexical feature(s) {', '.join(unknown)}; available: {', '.join(FAMILIES)}")
        if not feats or len(set(feats)) != len(feats):
            raise ValueError(f"features must be a non-empty list without repeats, got {feats}")
        return feats

    def _fields(self) -> list[str]:
        fields = [self.fields] if isinstance(self.fields, str) else list(self.fields)
        if not fields or len(set(fields)) != len(fields):
            raise ValueError(f"fields must be a non-empty list without repeats, got {fields}")
        return fields

    def fit(self, docs: pd.DataFrame, queries: pd.DataFrame | None = None) -> "LexicalExtractor":
        """Fit corpus statistics on ``docs`` (or adopt ``corpus``). ``queries`` is unused."""
        families, fields = self._families(), self._fields()
        for name, value, ok in [
            ("k1", self.k1, self.k1 >= 0),
            ("b", self.b, 0 <= self.b <= 1),
            ("mu", self.mu, self.mu > 0),
            ("jm_lambda", self.jm_lambda, 0 < self.jm_lambda < 1),
            ("ad_delta", self.ad_delta, 0 < self.ad_delta < 1),
        ]:
            if not ok:
                raise ParameterError(
                    f"{name}={value} is out of range",
                    fix=f"give --{name.replace('_', '-')} in range: k1 >= 0, 0 <= b <= 1, mu > 0, "
                    "0 < jm_lambda < 1, 0 < ad_delta < 1",
                )
        if self.bm25_norms not in BM25_NORMS:
            raise ParameterError(
                f"bm25_norms={self.bm25_norms!r} is unknown", fix=f"give --bm25-norms {' or '.join(BM25_NORMS)}"
            )
        if self.corpus is not None:
            self.corpus.check_fields(fields)
            if self.analyzer is not None and self.analyzer != self.corpus.analyzer:
                raise ModelFileError(
                    f"the corpus statistics were fitted with {self.corpus.analyzer}, not {self.analyzer}",
                    fix="use the same analyzer options as when the statistics were saved",
                )
            self.corpus_ = self.corpus
        else:
            self.corpus_ = CorpusStats.from_docs(docs, fields=fields, analyzer=self.analyzer)
        self.feature_names_ = [
            s if fam in QUERY_ONLY else f"{s}_{field}"
            for fam in families
            for field in (fields[:1] if fam in QUERY_ONLY else fields)
            for s in FAMILIES[fam][1]
        ]
        return self

    def feature_names(self) -> list[str]:
        self._check_fitted()
        return list(self.feature_names_)

    def pipeline_record(self) -> dict:
        """What defines these columns, for the feature map's pipeline (see :mod:`ltrfeat.features.pins`)."""
        self._check_fitted()
        return {
            "kind": "lexical",
            "fields": self._fields(),
            **{name: getattr(self, name) for name in SETTINGS},
            "analyzer": self.corpus_.analyzer.to_json(),
            "corpus_sha256": self.corpus_.fingerprint(),
            **({"corpus_file": str(Path(self.corpus_.source).resolve())} if self.corpus_.source else {}),
        }

    def get_feature_names_out(self, input_features=None) -> np.ndarray:
        """scikit-learn's name for :meth:`feature_names` (an object array; ``input_features`` is unused)."""
        return np.asarray(self.feature_names(), dtype=object)

    def _check_fitted(self):
        if not hasattr(self, "corpus_"):
            raise NotFittedError("LexicalExtractor is not fitted; call fit(docs) first")

    def transform(self, pairs: pd.DataFrame) -> np.ndarray:
        """Feature matrix (float32, one row per pair) for a table with ``query`` and the fields."""
        return self.score(self.encode(pairs))

    def encode(self, pairs: pd.DataFrame) -> "EncodedPairs":
        """Analyse the pairs' texts into term ids (the text-processing half of :meth:`transform`)."""
        self._check_fitted()
        fields = self._fields()
        absent = [c for c in ["query", *fields] if c not in pairs.columns]
        if absent:
            raise TextTableError(
                f"pairs table has no column(s) {', '.join(absent)}",
                fix="join the query text and every document field before extracting",
            )
        enc = TermEncoder(self.corpus_)
        query = enc.encode(pairs["query"])
        docs = {f: enc.encode(pairs[f]) for f in fields}
        return EncodedPairs(query, docs, enc.n_terms, enc.oov_tokens)

    def score(self, encoded: "EncodedPairs") -> np.ndarray:
        """Feature matrix from :meth:`encode`'s output (the numeric half of :meth:`transform`)."""
        self._check_fitted()
        families, fields = self._families(), self._fields()
        query = _QueryTokens(encoded.query)
        tri = self.corpus_.trigram_matrix(encoded.oov_tokens) if "trigram_cos" in families else None
        per_field = {
            f: _FieldMatch(self, query, encoded.docs[f], self.corpus_.field_stats[f], encoded.n_terms, tri)
            for f in fields
        }
        columns = [
            col
            for fam in families
            for field in (fields[:1] if fam in QUERY_ONLY else fields)
            for col in per_field[field].family(fam)
        ]
        return np.column_stack(columns).astype(np.float32)


@dataclasses.dataclass
class EncodedPairs:
    """Term ids of the query and of each document field of every pair row (see ``TokenBatch``);
    ids at or above the corpus vocabulary size are the out-of-vocabulary ``oov_tokens``."""

    query: TokenBatch
    docs: dict
    n_terms: int
    oov_tokens: list


class _QueryTokens:
    """The query tokens of every pair row, flattened: token k belongs to row ``row[k]``."""

    def __init__(self, batch: TokenBatch):
        self.batch = batch
        self.m = batch.lengths[batch.codes]  # tokens per row
        self.n = len(batch.codes)
        self.row = np.repeat(np.arange(self.n), self.m)
        self.start = np.cumsum(self.m) - self.m  # first flat position of each row
        within = np.arange(len(self.row)) - self.start[self.row]
        self.pos = batch.offsets[batch.codes][self.row] + within  # position in batch.ids
        self.term = batch.ids[self.pos]
        self.within = within

    @functools.cached_property
    def first(self) -> np.ndarray:
        """Whether each token is its term's first occurrence in the query (for distinct-term counts)."""
        return ~pd.DataFrame({"r": self.row, "t": self.term}).duplicated().to_numpy()

    def row_sum(self, values) -> np.ndarray:
        return np.bincount(self.row, weights=values, minlength=self.n).astype(np.float64)

    def row_reduce(self, ufunc, values) -> np.ndarray:
        out = np.zeros(self.n)
        nonempty = self.m > 0
        if nonempty.any():
            out[nonempty] = ufunc.reduceat(values, self.start[nonempty])
        return out

    def row_mean(self, values) -> np.ndarray:
        return self.row_sum(values) / np.maximum(self.m, 1)


class _FieldMatch:
    """Query-token statistics against one document field, computed once and shared by all families."""

    def __init__(self, est: LexicalExtractor, query: _QueryTokens, docs: TokenBatch, stats, n_terms: int, tri):
        self.est, self.q, self.docs, self.stats, self.tri = est, query, docs, stats, tri
        self.counts = docs.counts(n_terms)
        self.dl = docs.lengths[docs.codes].astype(np.float64)  # field length per row
        self.drow = docs.codes[query.row]  # distinct doc of each query token
        self.tf = np.asarray(self.counts[self.drow, query.term]).ravel() if len(query.term) else np.zeros(0)
        pad = n_terms - len(stats.df)
        self.df = np.concatenate([stats.df, np.zeros(pad, np.int64)])[query.term].astype(np.float64)
        self.cf = np.concatenate([stats.cf, np.zeros(pad, np.int64)])[query.term].astype(np.float64)
        self.dl_tok = self.dl[query.row]
        n_docs = stats.n_docs
        self.idf = np.log1p((n_docs - self.df + 0.5) / (self.df + 0.5))
        self._bigrams = None

    def family(self, fam: str) -> list[np.ndarray]:
        return getattr(self, f"_{fam}")()

    def _bm25(self):
        est, dl, idf = self.est, self.dl_tok, self.idf
        if est.bm25_norms == "lucene":
            n = self.stats.n_with_field
            avgdl = self.stats.total_len / n if n else 1.0
            dl = lucene_length(dl.astype(np.int64)).astype(np.float64)
            idf = np.log1p((n - self.df + 0.5) / (self.df + 0.5))
        else:
            avgdl = self.stats.avg_len or 1.0
        norm = est.k1 * (1 - est.b + est.b * dl / avgdl)
        denom = self.tf + norm
        part = np.divide(idf * self.tf, denom, out=np.zeros_like(self.tf), where=denom > 0)
        return [self.q.row_sum(part)]

    def _tf(self):
        q = self.q
        return [
            q.row_sum(self.tf),
            q.row_reduce(np.minimum, self.tf),
            q.row_reduce(np.maximum, self.tf),
            q.row_mean(self.tf),
        ]

    def _idf(self):
        q = self.q
        return [
            q.row_sum(self.idf),
            q.row_reduce(np.minimum, self.idf),
            q.row_reduce(np.maximum, self.idf),
            q.row_mean(self.idf),
        ]

    def _tfidf(self):
        return [self.q.row_sum(self.tf * self.idf)]

    def _norm_tf(self):
        return [self.q.row_sum(np.divide(self.tf, self.dl_tok, out=np.zeros_like(self.tf), where=self.dl_tok > 0))]

    def _collection_p(self):
        seen = self.cf > 0
        return seen, self.cf / max(self.stats.total_len, 1)

    def _lm_dirichlet(self):
        seen, p = self._collection_p()
        mu = self.est.mu
        logp = np.log(np.where(seen, (self.tf + mu * p) / (self.dl_tok + mu), 1.0))
        return [self.q.row_sum(logp)]

    def _lm_jm(self):
        seen, p = self._collection_p()
        lam = self.est.jm_lambda
        ml = np.divide(self.tf, self.dl_tok, out=np.zeros_like(self.tf), where=self.dl_tok > 0)
        logp = np.log(np.where(seen, (1 - lam) * ml + lam * p, 1.0))
        return [self.q.row_sum(logp)]

    def _lm_absdisc(self):
        seen, p = self._collection_p()
        delta = self.est.ad_delta
        uniq = np.diff(self.counts.indptr).astype(np.float64)[self.drow]
        dl = self.dl_tok
        safe = np.maximum(dl, 1)
        prob = np.where(dl > 0, np.maximum(self.tf - delta, 0) / safe + delta * uniq / safe * p, p)
        logp = np.log(np.where(seen, prob, 1.0))
        return [self.q.row_sum(logp)]

    def _field_len(self):
        return [self.dl]

    def _query_len(self):
        return [self.q.m.astype(np.float64)]

    def _coverage(self):
        q = self.q
        distinct = q.row_sum(q.first.astype(np.float64))
        found = q.row_sum((q.first & (self.tf > 0)).astype(np.float64))
        return [np.divide(found, distinct, out=np.zeros_like(found), where=distinct > 0)]

    def _bigram_hits(self):
        """Flat positions k of query tokens that start a bigram (k, k+1), and whether it occurs in d."""
        if self._bigrams is None:
            self._bigrams = self._find_bigrams()
        return self._bigrams

    def _find_bigrams(self):
        q, docs = self.q, self.docs
        starts = np.flatnonzero(q.within < q.m[q.row] - 1)
        if len(starts) == 0:
            return starts, np.zeros(0, dtype=bool)
        qa, qb = q.term[starts], q.term[starts + 1]
        # adjacent token pairs inside each distinct document
        ids = docs.ids
        doc_of = np.repeat(np.arange(docs.n_texts), docs.lengths)
        same = doc_of[:-1] == doc_of[1:]
        da, db, dd = ids[:-1][same], ids[1:][same], doc_of[:-1][same]
        width = np.int64(max(int(ids.max(initial=0)), int(q.term.max(initial=0))) + 1)
        codes, uniq = pd.factorize(np.concatenate([da * width + db, qa * width + qb]))
        n_uniq = np.int64(len(uniq))
        doc_keys = np.sort(dd * n_uniq + codes[: len(da)])
        query_keys = self.drow[starts] * n_uniq + codes[len(da) :]
        at = np.minimum(np.searchsorted(doc_keys, query_keys), max(len(doc_keys) - 1, 0))
        hits = doc_keys[at] == query_keys if len(doc_keys) else np.zeros(len(starts), dtype=bool)
        return starts, hits

    def _bigram_match(self):
        starts, hits = self._bigram_hits()
        return [np.bincount(self.q.row[starts], weights=hits.astype(np.float64), minlength=self.q.n)]

    def _phrase_match(self):
        q, docs = self.q, self.docs
        starts, hits = self._bigram_hits()
        out = np.zeros(q.n)
        single = q.m == 1
        out[single] = self.tf[q.start[single]] > 0
        # an exact phrase needs every bigram; check the full sequence only for those candidates
        n_hits = np.bincount(q.row[starts], weights=hits.astype(np.float64), minlength=q.n)
        for r in np.flatnonzero((q.m > 1) & (n_hits == q.m - 1)):
            qt = q.term[q.start[r] : q.start[r] + q.m[r]].tolist()
            d = int(docs.codes[r])
            dt = docs.ids[docs.offsets[d] : docs.offsets[d + 1]].tolist()
            out[r] = _contains(dt, qt)
        return [out]

    def _trigram_cos(self):
        q, docs, stats = self.q, self.docs, self.stats
        idf = np.log((1 + stats.n_docs) / (1 + stats.tri_df)) + 1
        weight = sp.diags(idf)
        qvec = _l2_rows(q.batch.counts(self.tri.shape[0]) @ self.tri @ weight)
        dvec = _l2_rows(self.counts @ self.tri @ weight)
        cos = qvec[q.batch.codes].multiply(dvec[docs.codes]).sum(axis=1)
        return [np.asarray(cos).ravel()]


def _l2_rows(m) -> sp.csr_matrix:
    m = sp.csr_matrix(m)
    norms = np.sqrt(np.asarray(m.multiply(m).sum(axis=1)).ravel())
    return sp.diags(np.divide(1.0, norms, out=np.zeros_like(norms), where=norms > 0)) @ m


def _contains(seq: list, sub: list) -> bool:
    n = len(sub)
    first = sub[0]
    for i in range(len(seq) - n + 1):
        if seq[i] == first and seq[i : i + n] == sub:
            return True
    return False
