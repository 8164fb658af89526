"""BM25 top-k candidate generation over a documents table (the project's own BM25).

:class:`BM25Retriever` scores with exactly the ``bm25`` feature of
:class:`~ltrfeat.features.lexical.LexicalExtractor` — Lucene's IDF ``ln(1 + (N - df + .5)/(df + .5))``
and ``tf / (tf + k1 (1 - b + b |d|/avgdl))``, query tokens counted with repeats — using the
same :class:`~ltrfeat.features.corpus.CorpusStats` and analyzer, over one field that joins the
document's text fields with spaces. Fitting builds a sparse terms × documents matrix of BM25
term weights; a batch of queries is a sparse queries × terms matrix of token counts, so one
sparse product scores every document for the whole batch.

Only documents sharing a term with the query (score > 0) are candidates. Scores are ranked
as float32 (the precision feature files hold), so sums that are equal up to rounding tie;
equal scores are ordered by docid (string order), so the result does not depend on the
corpus row order.
"""

from __future__ import annotations

import sys

import numpy as np
import pandas as pd
import scipy.sparse as sp
from sklearn.base import BaseEstimator
from sklearn.exceptions import NotFittedError
from tqdm.auto import tqdm

from ltrfeat.core.analysis import Analyzer
from ltrfeat.features.corpus import CorpusStats, FieldStats, TermEncoder, TokenBatch
from ltrfeat.features.lexical import BM25_B, BM25_K1
from ltrfeat.core.errors import TextTableError
from ltrfeat.core.logs import show_progress

_FIELD = "text"


def joined_text(docs: pd.DataFrame, fields) -> list[str]:
    """Each document's non-empty ``fields`` joined by a space (missing values skipped)."""
    columns = [docs[f].tolist() for f in fields]
    return [" ".join(v for v in values if isinstance(v, str) and v) for values in zip(*columns)]


def _index(texts: list[str], analyzer: Analyzer) -> tuple[CorpusStats, sp.csr_matrix]:
    """Corpus statistics of one field (no letter trigrams) and the documents × terms count
    matrix, analysing every text once."""
    flat, offsets = analyzer.analyze_flat(texts)
    ids, vocab = pd.factorize(np.asarray(flat, dtype=object), sort=True) if flat else (np.zeros(0, np.int64), [])
    counts = TokenBatch(np.arange(len(texts)), ids.astype(np.int64), offsets).counts(len(vocab))
    stats = FieldStats(
        n_docs=len(texts),
        total_len=len(flat),
        df=np.bincount(counts.indices, minlength=len(vocab)).astype(np.int64),
        cf=np.bincount(counts.indices, weights=counts.data, minlength=len(vocab)).astype(np.int64),
        tri_df=np.zeros(0, np.int64),
    )
    corpus = CorpusStats(
        analyzer=analyzer, fields=(_FIELD,), vocab=list(vocab), trigrams=(), field_stats={_FIELD: stats}
    )
    return corpus, counts


class BM25Retriever(BaseEstimator):
    """Top-k BM25 retrieval, scikit-learn style.

    Parameters
    ----------
    fields : document text columns searched (joined into one field).
    k1, b : BM25 parameters (default :data:`~ltrfeat.features.lexical.BM25_K1`, ``BM25_B``: Lucene's).
    analyzer : :class:`~ltrfeat.core.analysis.Analyzer` (default: lowercase, punctuation removed).
    batch_size : queries scored per sparse product (bounds memory: batch × matching docs).

    Attributes
    ----------
    corpus_ : :class:`~ltrfeat.features.corpus.CorpusStats` of the joined field.
    docids_ : object array of document ids, in table order.
    weights_ : ``scipy.sparse.csr_matrix`` (terms × documents) of BM25 term weights.
    tie_rank_ : int array, position of each document's id in string order (the tie-breaker).
    """

    def __init__(self, *, fields=("title",), k1=BM25_K1, b=BM25_B, analyzer=None, batch_size=256):
        self.fields = fields
        self.k1 = k1
        self.b = b
        self.analyzer = analyzer
        self.batch_size = batch_size

    def fit(self, docs: pd.DataFrame) -> "BM25Retriever":
        """Index ``docs`` (columns ``docid`` and ``fields``; docids unique)."""
        fields = [self.fields] if isinstance(self.fields, str) else list(self.fields)
        if not fields:
            raise ValueError("fields must name at least one text column")
        if not (self.k1 >= 0 and 0 <= self.b <= 1 and int(self.batch_size) >= 1):
            raise ValueError(
                f"need k1 >= 0, 0 <= b <= 1 and batch_size >= 1 (got k1={self.k1}, b={self.b}, "
                f"batch_size={self.batch_size})"
            )
        absent = [c for c in ["docid", *fields] if c not in docs.columns]
        if absent:
            raise TextTableError(
                f"documents table has no column(s) {', '.join(absent)}",
                fix="index a table with a docid column and the text fields",
            )
        if len(docs) == 0:
            raise TextTableError("documents table is empty", fix="index at least one document")
        docids = docs["docid"].astype(str).to_numpy(dtype=object)
        if pd.Index(docids).has_duplicates:
            dup = pd.Index(docids)[pd.Index(docids).duplicated()][0]
            raise TextTableError(
                f"docid {dup!r} occurs more than once in the documents table", fix="give every document a unique id"
            )
        self.corpus_, counts = _index(joined_text(docs, fields), self.analyzer or Analyzer())
        self.docids_ = docids
        self.weights_ = self._weights(counts)
        self.tie_rank_ = np.empty(len(docids), dtype=np.int64)
        self.tie_rank_[np.argsort(docids.astype(str), kind="stable")] = np.arange(len(docids))
        return self

    def _weights(self, counts: sp.csr_matrix) -> sp.csr_matrix:
        stats = self.corpus_.field_stats[_FIELD]
        lengths = np.asarray(counts.sum(axis=1)).ravel()
        norm = self.k1 * (1 - self.b + self.b * lengths / (stats.avg_len or 1.0))
        df = stats.df.astype(np.float64)
        idf = np.log1p((stats.n_docs - df + 0.5) / (df + 0.5))
        tf = counts.data
        weights = counts.copy()
        weights.data = idf[counts.indices] * tf / (tf + np.repeat(norm, np.diff(counts.indptr)))
        return weights.T.tocsr()

    def _check_fitted(self):
        if not hasattr(self, "weights_"):
            raise NotFittedError("BM25Retriever is not fitted; call fit(docs) first")

    def query_matrix(self, texts) -> sp.csr_matrix:
        """Queries × terms matrix of token counts (tokens outside the corpus vocabulary dropped)."""
        self._check_fitted()
        encoder = TermEncoder(self.corpus_)
        batch = encoder.encode(pd.Series(list(texts), dtype=object))
        counts = batch.counts(encoder.n_terms)[:, : self.corpus_.n_terms]
        return counts[batch.codes].tocsr()

    def scores(self, texts) -> sp.csr_matrix:
        """Queries × documents sparse matrix of BM25 scores (all of them; for small corpora and tests)."""
        return (self.query_matrix(texts) @ self.weights_).tocsr()

    def retrieve(self, queries: pd.DataFrame, *, k: int = 100, progress: bool = False) -> pd.DataFrame:
        """The top ``k`` documents of each query of ``queries`` (columns ``qid, query``).

        Returns columns ``qid, docid, rank`` (1-based) and ``score`` (float32), queries in
        input order, documents by decreasing score then docid; a query matching no
        document has no rows.
        """
        self._check_fitted()
        if int(k) < 1:
            raise ValueError(f"k must be >= 1, got {k}")
        k = int(k)
        qmat = self.query_matrix(queries["query"].tolist())
        qids = queries["qid"].to_numpy(dtype=object)
        n = qmat.shape[0]
        out_q, out_d, out_s, out_r = [], [], [], []
        disable = not show_progress(progress)
        with tqdm(total=n, desc="bm25 top-k", unit="query", disable=disable, file=sys.stderr) as bar:
            for start in range(0, n, int(self.batch_size)):
                block = (qmat[start : start + int(self.batch_size)] @ self.weights_).tocsr()
                for i in range(block.shape[0]):
                    lo, hi = block.indptr[i], block.indptr[i + 1]
                    docs, score = self._top(block.indices[lo:hi], block.data[lo:hi].astype(np.float32), k)
                    out_q.append(np.full(len(docs), start + i, dtype=np.int64))
                    out_d.append(docs)
                    out_s.append(score)
                    out_r.append(np.arange(1, len(docs) + 1, dtype=np.int64))
                bar.update(block.shape[0])
        q = np.concatenate(out_q) if out_q else np.zeros(0, np.int64)
        d = np.concatenate(out_d) if out_d else np.zeros(0, np.int64)
        return pd.DataFrame(
            {
                "qid": qids[q],
                "docid": self.docids_[d],
                "rank": np.concatenate(out_r) if out_r else np.zeros(0, np.int64),
                "score": np.concatenate(out_s) if out_s else np.zeros(0, np.float32),
            }
        )

    def _top(self, docs: np.ndarray, score: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        positive = score > 0
        docs, score = docs[positive], score[positive]
        if len(score) > k:
            kth = np.partition(score, len(score) - k)[len(score) - k]  # k-th largest score
            above = np.flatnonzero(score > kth)
            tied = np.flatnonzero(score == kth)
            tied = tied[np.argsort(self.tie_rank_[docs[tied]], kind="stable")[: k - len(above)]]
            keep = np.concatenate([above, tied])
            docs, score = docs[keep], score[keep]
        order = np.lexsort((self.tie_rank_[docs], -score))
        return docs[order], score[order]
