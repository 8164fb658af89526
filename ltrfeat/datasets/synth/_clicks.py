"""The click log: a production ranker shows results, simulated users examine them with position
bias and click on what looks relevant (noisily); counts are per distinct user."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import pandas as pd

from ltrfeat.datasets.synth._judging import CandidateIndex, overlap
from ltrfeat.datasets.synth._lexicon import content_tokens

ATTRACTION = np.array([0.03, 0.10, 0.30, 0.55])  # P(click | examined) by true grade 0..3
TITLE_LURE = 0.12  # extra attraction per unit of query–title overlap (snippet bias)
DOC_APPEAL_SD = 0.05  # per-product appeal (picture, price) independent of the query
EXAMINATION_EXPONENT = 0.8  # P(examine rank r) = r ** -exponent
STRAY_CLICK = 0.005  # accidental clicks on any shown result
RESHUFFLE_SD = 0.15  # per-session ranking noise (personalisation, index updates)

GradeFn = Callable[[np.ndarray, str, dict], np.ndarray]


def simulate_clicks(
    rng: np.random.Generator,
    index: CandidateIndex,
    queries: list[tuple[str, dict]],
    grade_fn: GradeFn,
    *,
    list_size: int = 15,
    shown: int = 10,
    median_sessions: float = 10.0,
    doc_field: str = "title",
) -> pd.DataFrame:
    """One row per (query, shown product): ``query, docid, doc, clicks, impressions, grade``.

    Each query gets a log-normal number of sessions (one user each). The production
    ranker scores ``list_size`` candidates by title/description overlap plus a partial view
    of relevance; each session perturbs that order and shows the top ``shown``. ``clicks``
    counts the distinct users who clicked, ``impressions`` the sessions that showed the
    product. ``grade`` is the hidden noise-free relevance the users acted on; ``doc`` the product's
    ``doc_field``.
    """
    texts = index.docs[doc_field].to_numpy(dtype=object)
    docids = index.docs["docid"].to_numpy(dtype=object)
    appeal = rng.normal(0.0, DOC_APPEAL_SD, index.n)
    examine = np.arange(1, shown + 1, dtype=float) ** -EXAMINATION_EXPONENT
    columns: dict[str, list] = {"query": [], "row": [], "clicks": [], "impressions": [], "grade": []}
    for query, intent in queries:
        rows = index.candidates(rng, query, intent, list_size)
        grades = grade_fn(rows, query, intent)
        q = set(content_tokens(query))
        title_ov = np.array([overlap(q, index.title_tokens[r]) for r in rows.tolist()])
        desc_ov = np.array([overlap(q, index.description_tokens[r]) for r in rows.tolist()])
        score = 0.5 * title_ov + 0.2 * desc_ov + 0.4 * grades / 3 + rng.normal(0.0, 0.2, len(rows))
        n_sessions = int(np.clip(round(rng.lognormal(math.log(median_sessions), 1.0)), 2, 500))
        session_scores = score + rng.normal(0.0, RESHUFFLE_SD, (n_sessions, len(rows)))
        rank = np.argsort(np.argsort(-session_scores, axis=1, kind="stable"), axis=1, kind="stable")
        seen = rank < shown
        p_click = np.where(seen, examine[np.minimum(rank, shown - 1)], 0.0) * np.clip(
            ATTRACTION[grades] + TITLE_LURE * title_ov + appeal[rows], 0.005, 0.95
        )
        u = rng.random(seen.shape)
        clicked = (u < p_click) | (seen & (u > 1 - STRAY_CLICK))
        order = np.argsort(-score, kind="stable")
        order = order[seen[:, order].any(axis=0)]
        columns["query"] += [query] * len(order)
        columns["row"].append(rows[order])
        columns["clicks"].append(clicked[:, order].sum(axis=0))
        columns["impressions"].append(seen[:, order].sum(axis=0))
        columns["grade"].append(grades[order])
    rows = np.concatenate(columns["row"]) if queries else np.zeros(0, dtype=np.int64)
    stack = lambda name: np.concatenate(columns[name]).astype(np.int64) if queries else np.zeros(0, np.int64)  # noqa: E731
    return pd.DataFrame(
        {
            "query": pd.Series(columns["query"], dtype=object),
            "docid": docids[rows],
            "doc": texts[rows],
            "clicks": stack("clicks"),
            "impressions": stack("impressions"),
            "grade": stack("grade"),
        }
    )
