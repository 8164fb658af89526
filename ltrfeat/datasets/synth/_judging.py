"""Candidate lists (relevant products mixed with lexical distractors and random ones, or a BM25 top-k
over the descriptions for long needs) and the graded relevance of a (query, product) pair: from the
latent intent in the semantic world, from query–title token overlap in the control world."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ltrfeat.datasets.synth._lexicon import content_tokens

ATTRIBUTES = ("brand", "colour", "material", "size", "feature")


def overlap(query_tokens: set[str], doc_tokens: set[str]) -> float:
    """Share of the query's content tokens that the document has (0 when the query has none)."""
    if not query_tokens:
        return 0.0
    return len(query_tokens & doc_tokens) / len(query_tokens)


class CandidateIndex:
    """Looks up products by type, by category and by title token, to build candidate lists."""

    def __init__(self, docs: pd.DataFrame):
        self.docs = docs
        self.n = len(docs)
        self.type = docs["type"].to_numpy(dtype=object)
        # Integer codes of the type and attribute columns: comparisons over large pools stay cheap.
        self.type_code, self.type_keys = _codes(self.type)
        self.category = docs["category"].to_numpy(dtype=object)
        self.by_type = {k: np.flatnonzero(self.type == k) for k in pd.unique(self.type)}
        self.by_category = {k: np.flatnonzero(self.category == k) for k in pd.unique(self.category)}
        self.title_tokens = [frozenset(content_tokens(t)) for t in docs["title"].tolist()]
        self.description_tokens = [frozenset(content_tokens(t)) for t in docs["description"].tolist()]
        postings: dict[str, list[int]] = {}
        for i, toks in enumerate(self.title_tokens):
            for tok in sorted(toks):
                postings.setdefault(tok, []).append(i)
        self.postings = {t: np.asarray(p) for t, p in postings.items()}
        self.attrs = {k: docs[k].to_numpy(dtype=object) for k in ATTRIBUTES}
        self.attr_codes = {k: _codes(v) for k, v in self.attrs.items()}

    def attribute_matches(self, rows: np.ndarray, intent: dict[str, str]) -> np.ndarray:
        """How many of the intent's attribute values each product in ``rows`` has."""
        matches = np.zeros(len(rows), dtype=np.int64)
        for kind, value in intent.items():
            if kind in self.attr_codes:
                codes, keys = self.attr_codes[kind]
                matches += codes[rows] == keys.get(value, -2)
        return matches

    def _take_any(self, rng: np.random.Generator, used: np.ndarray, chosen: list[np.ndarray], k: int) -> None:
        """Fill ``chosen`` up to ``k`` rows with unused products drawn uniformly; the same draw as
        ``rng.choice`` over the array of unused rows, without building that array."""
        taken = np.sort(np.concatenate(chosen)) if chosen else np.zeros(0, dtype=np.int64)
        count = min(k, self.n) - len(taken)
        if count <= 0:
            return
        j = rng.choice(self.n - len(taken), size=count, replace=False)
        picked = j + np.searchsorted(taken - np.arange(len(taken)), j, side="right")
        used[picked] = True
        chosen.append(picked)

    def candidates(self, rng: np.random.Generator, query: str, intent: dict[str, str], k: int) -> np.ndarray:
        """``k`` distinct product rows for a query, in random order.

        About 30–45 % share the intent's type (weighted towards matching attributes),
        35–50 % are other products sharing title words with the query (distractors, more
        likely the more words they share; they include the other sense of an ambiguous
        word), 5–10 % are other types of the same category and the rest are random.
        """
        k = min(k, self.n)
        used = np.zeros(self.n, dtype=bool)
        chosen: list[np.ndarray] = []

        def take(pool: np.ndarray, count: int, weights: np.ndarray | None = None) -> None:
            free = ~used[pool]
            pool = pool[free]
            count = min(count, len(pool), k - sum(map(len, chosen)))
            if count <= 0:
                return
            p = None
            if weights is not None:
                w = weights[free].astype(float)
                p = w / w.sum()
            picked = rng.choice(pool, size=count, replace=False, p=p)
            used[picked] = True
            chosen.append(picked)

        same = self.by_type[intent["type"]]
        take(same, round(k * rng.uniform(0.3, 0.45)), 1.0 + 3.0 * self.attribute_matches(same, intent))
        postings = [self.postings[tok] for tok in set(content_tokens(query)) if tok in self.postings]
        lexical, shared = np.unique(np.concatenate(postings or [np.zeros(0, np.int64)]), return_counts=True)
        type_code = self.type_keys[intent["type"]]
        other_type = self.type_code[lexical] != type_code
        take(lexical[other_type], round(k * rng.uniform(0.35, 0.5)), shared[other_type].astype(float) ** 3)
        category = self.by_category[self.category[same[0]]]
        take(category[self.type_code[category] != type_code], round(k * rng.uniform(0.05, 0.1)))
        self._take_any(rng, used, chosen, k)
        rows = np.concatenate(chosen)
        return rows[rng.permutation(len(rows))]


def bm25_candidates(
    rng: np.random.Generator, index: CandidateIndex, queries: list[tuple[str, dict]], sizes: list[int]
) -> list[np.ndarray]:
    """Candidate rows per query: the ``sizes[i]`` best descriptions by BM25 (the project's retriever,
    ties by docid), in random order. A list holding no product that matches the whole intent (noise-free
    grade 3) has its last one replaced by such a product drawn at random (the need was modelled on one), so
    every query has a relevant candidate; the others are BM25's hard negatives: lexically close, wrong
    type or attribute."""
    from ltrfeat.features.retrieval import BM25Retriever

    retriever = BM25Retriever(fields=("description",)).fit(index.docs)
    table = pd.DataFrame({"qid": np.arange(len(queries)), "query": [q for q, _ in queries]})
    hits = retriever.retrieve(table, k=max(sizes, default=1))
    row_of = pd.Series(np.arange(index.n), index=index.docs["docid"].astype(str).to_numpy())
    rows = row_of[hits["docid"].to_numpy()].to_numpy()
    per_query = np.split(rows, np.flatnonzero(np.diff(hits["qid"].to_numpy())) + 1) if len(rows) else []
    by_qid = dict(zip(pd.unique(hits["qid"]), per_query))
    out = []
    for i, ((_, intent), k) in enumerate(zip(queries, sizes)):
        top = by_qid.get(i, np.zeros(0, dtype=np.int64))[:k]
        if not (semantic_grades(index, top, intent) == 3).any():
            same = index.by_type[intent["type"]]
            full = same[semantic_grades(index, same, intent) == 3]
            top = np.r_[top[: k - 1], rng.choice(full)]
        out.append(top[rng.permutation(len(top))])
    return out


def _codes(values: np.ndarray) -> tuple[np.ndarray, dict]:
    """Integer codes of ``values`` (-1 where missing) and the value → code mapping."""
    codes, uniques = pd.factorize(values)
    return codes, {value: code for code, value in enumerate(uniques.tolist())}


def semantic_grades(index: CandidateIndex, rows: np.ndarray, intent: dict[str, str]) -> np.ndarray:
    """Noise-free 0–3 grades from the latent intent: same type → 3 minus attribute mismatches
    (at least 1); another type of the same category → 1; otherwise 0."""
    same_type = index.type[rows] == intent["type"]
    mismatches = sum(k in index.attrs for k in intent) - index.attribute_matches(rows, intent)
    category = index.category[index.by_type[intent["type"]][0]]
    related = index.category[rows] == category
    return np.where(same_type, np.maximum(1, 3 - mismatches), np.where(related, 1, 0)).astype(np.int64)


def lexical_grades(index: CandidateIndex, rows: np.ndarray, query: str) -> np.ndarray:
    """Noise-free 0–3 grades of the control world: ``round(3 × overlap(query, title))``."""
    q = set(content_tokens(query))
    return np.array([round(3 * overlap(q, index.title_tokens[r])) for r in rows.tolist()], dtype=np.int64)


def rater_noise(rng: np.random.Generator, grades: np.ndarray, p: float) -> np.ndarray:
    """Each grade moves one step up or down with probability ``p`` (kept within 0–3)."""
    step = np.where(rng.random(len(grades)) < p, rng.choice([-1, 1], size=len(grades)), 0)
    return np.clip(grades + step, 0, 3)
