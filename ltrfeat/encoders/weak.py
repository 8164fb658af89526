"""Weak supervision without a click log: a document collection's own fields as training pairs.

Each document gives one positive pair (its ``query_field`` -- e.g. the title -- as the query, its
``doc_field`` -- e.g. the body -- as the clicked document); the trainer's random and in-batch
negatives supply the other documents as non-clicked ones. ``negatives`` > 0 also adds that many
label-0 pairs per document (other documents' ``doc_field``, drawn with the seed): they do not change
the softmax loss's samples, but they give the trainer's held-out queries something to rank, so its
validation NDCG@10 (and early stopping) measures whether a title finds its own body among others.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd

from ltrfeat.core.errors import TextTableError
from ltrfeat.core.text import TextTableWarning


def parse_pair(spec: str) -> tuple[str, str]:
    """``"title:body"`` -> ``("title", "body")``."""
    query_field, sep, doc_field = spec.partition(":")
    if not sep or not query_field.strip() or not doc_field.strip() or query_field.strip() == doc_field.strip():
        raise TextTableError(f"bad field pair {spec!r}", fix="write QUERY_FIELD:DOC_FIELD, e.g. title:body")
    return query_field.strip(), doc_field.strip()


def docs_to_pairs(
    docs: pd.DataFrame, *, query_field: str = "title", doc_field: str = "body", negatives: int = 0, seed: int = 0
) -> pd.DataFrame:
    """Training pairs ``[qid, query, doc, label]`` from a documents table (``docid`` + fields).

    ``qid`` is the document's id. Documents whose ``query_field`` or ``doc_field`` is empty (or
    missing) are dropped with a :class:`TextTableWarning` saying how many. See the module
    docstring for ``negatives``.
    """
    absent = [f for f in ("docid", query_field, doc_field) if f not in docs.columns]
    if absent:
        raise TextTableError(
            f"documents table has no column(s) {', '.join(absent)} (columns: {', '.join(map(str, docs.columns))})",
            path=docs.attrs.get("source"),
            fix="choose --pair QUERY_FIELD:DOC_FIELD among the table's fields",
        )
    if negatives < 0:
        raise ValueError(f"negatives must be >= 0, got {negatives}")

    def usable(col):
        return docs[col].map(lambda v: isinstance(v, str) and bool(v.strip())).to_numpy(dtype=bool)

    keep = usable(query_field) & usable(doc_field)
    dropped = int((~keep).sum())
    if dropped:
        warnings.warn(
            f"{dropped} of {len(docs)} documents have an empty {query_field} or {doc_field} and were "
            f"left out of the training pairs",
            TextTableWarning,
            stacklevel=2,
        )
    kept = docs.loc[keep]
    if len(kept) < 2:
        raise TextTableError(
            f"only {len(kept)} document(s) have both {query_field} and {doc_field}",
            path=docs.attrs.get("source"),
            fix="weak supervision needs at least two documents",
        )
    qid = kept["docid"].astype(str).to_numpy(dtype=object)
    query = kept[query_field].to_numpy(dtype=object)
    body = kept[doc_field].to_numpy(dtype=object)
    pairs = pd.DataFrame({"qid": qid, "query": query, "doc": body, "label": np.ones(len(kept))})
    if not negatives:
        return pairs
    n = len(kept)
    rng = np.random.default_rng(seed)
    # another document's index: shift by 1..n-1 so a document never gets its own body
    other = (np.repeat(np.arange(n), negatives) + rng.integers(1, n, size=n * negatives)) % n
    own = np.repeat(np.arange(n), negatives)
    neg = pd.DataFrame({"qid": qid[own], "query": query[own], "doc": body[other], "label": np.zeros(len(own))})
    # each query's rows together: its positive first, then its negatives
    both = pd.concat([pairs, neg], ignore_index=True)
    order = np.lexsort((np.r_[np.zeros(n), np.ones(len(own))], np.r_[np.arange(n), own]))
    return both.iloc[order].reset_index(drop=True)


def span_pairs(
    docs: pd.DataFrame,
    *,
    field: str = "title",
    per_doc: int = 4,
    max_words: int = 4,
    min_words: int = 1,
    hold_out: bool = False,
    whole: bool = False,
    negatives: int = 1,
    seed: int = 0,
) -> pd.DataFrame:
    """Query-like training pairs from a collection's own text, no judgments read: ``[qid, query, doc, label]``.

    Each document with text in ``field`` gives up to ``per_doc`` distinct spans of ``min_words`` to ``max_words``
    consecutive words (start and length drawn with ``seed``; a text shorter than ``min_words`` gives spans of
    all its words; spans without a letter are skipped) -- 1 to 4 words look like product-search queries cut
    from titles, about 8 to 24 like natural-language needs cut from descriptions -- each
    paired with the whole text as its positive (label 1) -- with ``hold_out``, the text without the span's words
    (the inverse cloze task: the span must find its context, not its own words; the whole text where the span
    is all of it) -- and with ``negatives`` other documents' texts
    (label 0, for the trainer's validation NDCG). ``whole`` adds each text itself as one more span (paired with
    itself, also under ``hold_out``; ``qid`` ``DOCID#0``) when no drawn span is all of it. A span's ``qid`` is
    ``DOCID#N``. The trainer's random
    and in-batch negatives supply the rest of the collection as non-matching documents.
    """
    if "docid" not in docs.columns or field not in docs.columns:
        raise TextTableError(
            f"documents table has no column(s) {', '.join(c for c in ('docid', field) if c not in docs)}"
            f" (columns: {', '.join(map(str, docs.columns))})",
            path=docs.attrs.get("source"),
            fix="choose --pair spans:FIELD among the table's fields",
        )
    if per_doc < 1 or not 1 <= min_words <= max_words or negatives < 0:
        raise ValueError(
            f"need per_doc >= 1, 1 <= min_words <= max_words, negatives >= 0; got {per_doc}, {min_words}, "
            f"{max_words}, {negatives}"
        )
    texts = docs[field].to_numpy(dtype=object)
    keep = np.array([isinstance(t, str) and any(c.isalpha() for c in t) for t in texts], dtype=bool)
    if keep.sum() < 2:
        raise TextTableError(
            f"only {int(keep.sum())} document(s) have text in {field}",
            path=docs.attrs.get("source"),
            fix="query-like spans need at least two documents with text",
        )
    ids, texts = docs["docid"].astype(str).to_numpy(dtype=object)[keep], texts[keep]
    rng = np.random.default_rng([seed, 5])
    qid, query, own, positive = [], [], [], []
    for i, text in enumerate(texts):
        words = text.split()
        seen = set()
        for _ in range(per_doc * 3):  # a few more draws than spans wanted: short texts repeat spans
            longest = min(max_words, len(words))
            length = int(rng.integers(min(min_words, longest), longest + 1))
            start = int(rng.integers(0, len(words) - length + 1))
            span = " ".join(words[start : start + length])
            if span in seen or not any(c.isalpha() for c in span):
                continue
            seen.add(span)
            qid.append(f"{ids[i]}#{len(seen)}")
            query.append(span)
            own.append(i)
            rest = " ".join(words[:start] + words[start + length :])
            positive.append(rest if hold_out and any(c.isalpha() for c in rest) else text)
            if len(seen) == per_doc:
                break
        if whole and text not in seen:
            qid.append(f"{ids[i]}#0")
            query.append(text)
            own.append(i)
            positive.append(text)
    own_arr = np.asarray(own)
    pos = pd.DataFrame({"qid": qid, "query": query, "doc": positive, "label": np.ones(len(own))}).astype(
        {"doc": object}
    )
    if not negatives:
        return pos
    n, rows = len(texts), np.repeat(np.arange(len(own)), negatives)
    other = (own_arr[rows] + rng.integers(1, n, size=len(rows))) % n  # never the span's own document
    neg = pd.DataFrame(
        {
            "qid": pos["qid"].to_numpy()[rows],
            "query": pos["query"].to_numpy()[rows],
            "doc": texts[other],
            "label": np.zeros(len(rows)),
        }
    )
    both = pd.concat([pos, neg], ignore_index=True)
    order = np.lexsort((np.r_[np.zeros(len(pos)), np.ones(len(neg))], np.r_[np.arange(len(pos)), rows]))
    return both.iloc[order].reset_index(drop=True)
