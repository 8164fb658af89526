"""The click log: a production ranker shows results, simulated users examine them with position
bias and click on what looks relevant (noisily); counts are per distinct user, and every impression
(session, shown result, position, click) is kept as well."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from numbers import Real
from typing import ClassVar

import numpy as np
import pandas as pd

from ltrfeat.core.settings import Interval, Settings
from ltrfeat.datasets.synth._judging import CandidateIndex, overlap
from ltrfeat.datasets.synth._lexicon import content_tokens

ATTRACTION = np.array([0.03, 0.10, 0.30, 0.55])  # P(click | examined) by true grade 0..3
TITLE_LURE = 0.12  # extra attraction per unit of query–title overlap (snippet bias)
DOC_APPEAL_SD = 0.05  # per-product appeal (picture, price) independent of the query
EXAMINATION_EXPONENT = 0.8  # P(examine rank r) = r ** -exponent
STRAY_CLICK = 0.005  # accidental clicks on any shown result
RESHUFFLE_SD = 0.15  # per-session ranking noise (personalisation, index updates)

GradeFn = Callable[[np.ndarray, str, dict], np.ndarray]
IMPRESSION_COLUMNS = ["session", "query", "docid", "position", "clicked"]


def examination_curve(exponent: float, shown: int) -> np.ndarray:
    """P(examined | position 1..shown) = position ** -exponent (exponent 0: every shown result is examined)."""
    return np.arange(1, shown + 1, dtype=float) ** -exponent


@dataclasses.dataclass(frozen=True)
class ClickModel(Settings):
    """How the simulated users of the click log behave.

    median_sessions : median number of sessions (one user each) per click-log query.
    examination_exponent : users examine position r with probability ``r ** -examination_exponent`` (0: no
        position bias; 1.5: steep).
    title_attraction : extra click attraction per unit of query–title overlap, whatever the grade (the snippet's
        lure). Larger values (e.g. 0.5) make a world where titles that look relevant draw clicks: a bias that
        correcting for position does not remove.

    The last two change clicks only, never a random draw: every session shows the same results at the same
    positions whatever they are.
    """

    label: ClassVar[str] = "click model"
    _parameter_constraints: ClassVar[dict] = {
        "median_sessions": [Interval(Real, 1, 500)],
        "examination_exponent": [Interval(Real, 0, 5)],
        "title_attraction": [Interval(Real, 0, 1)],
    }
    median_sessions: float = 10.0
    examination_exponent: float = EXAMINATION_EXPONENT
    title_attraction: float = TITLE_LURE


def simulate_clicks(
    rng: np.random.Generator,
    index: CandidateIndex,
    queries: list[tuple[str, dict]],
    grade_fn: GradeFn,
    *,
    list_size: int = 15,
    shown: int = 10,
    doc_field: str = "title",
    users: ClickModel = ClickModel(),
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The aggregated log and the impression-level log.

    Aggregated: one row per (query, shown product): ``query, docid, doc, clicks, impressions, grade``.
    Impression-level: one row per shown result of each session: ``session`` ("1", "2"... in query order),
    ``query, docid, position`` (1-based, in the session's order), ``clicked`` (0/1) and the truth ``grade``;
    rows of a session contiguous, by position.

    Each query gets a log-normal number of sessions (one user each, median ``users.median_sessions``). The production
    ranker scores ``list_size`` candidates by title/description overlap plus a partial view
    of relevance; each session perturbs that order and shows the top ``shown``. ``clicks``
    counts the distinct users who clicked, ``impressions`` the sessions that showed the
    product. ``grade`` is the hidden noise-free relevance the users acted on; ``doc`` the product's
    ``doc_field``. Users examine position r with probability ``r ** -users.examination_exponent`` and click an
    examined result with the grade's attraction plus ``users.title_attraction`` × query–title overlap.
    """
    texts = index.docs[doc_field].to_numpy(dtype=object)
    docids = index.docs["docid"].to_numpy(dtype=object)
    appeal = rng.normal(0.0, DOC_APPEAL_SD, index.n)
    examine = examination_curve(users.examination_exponent, shown)
    columns: dict[str, list] = {"query": [], "row": [], "clicks": [], "impressions": [], "grade": []}
    shown_log: dict[str, list] = {
        name: [] for name in ("query", "sessions", "session", "row", "position", "clicked", "grade")
    }
    for query_no, (query, intent) in enumerate(queries):
        rows = index.candidates(rng, query, intent, list_size)
        grades = grade_fn(rows, query, intent)
        q = set(content_tokens(query))
        title_ov = np.array([overlap(q, index.title_tokens[r]) for r in rows.tolist()])
        desc_ov = np.array([overlap(q, index.description_tokens[r]) for r in rows.tolist()])
        score = 0.5 * title_ov + 0.2 * desc_ov + 0.4 * grades / 3 + rng.normal(0.0, 0.2, len(rows))
        n_sessions = int(np.clip(round(rng.lognormal(math.log(users.median_sessions), 1.0)), 2, 500))
        session_scores = score + rng.normal(0.0, RESHUFFLE_SD, (n_sessions, len(rows)))
        rank = np.argsort(np.argsort(-session_scores, axis=1, kind="stable"), axis=1, kind="stable")
        seen = rank < shown
        p_click = np.where(seen, examine[np.minimum(rank, shown - 1)], 0.0) * np.clip(
            ATTRACTION[grades] + users.title_attraction * title_ov + appeal[rows], 0.005, 0.95
        )
        u = rng.random(seen.shape)
        clicked = (u < p_click) | (seen & (u > 1 - STRAY_CLICK))
        session, column = np.nonzero(seen)
        by_position = np.lexsort((rank[session, column], session))
        session, column = session[by_position], column[by_position]
        shown_log["query"].append(np.full(len(session), query_no))
        shown_log["sessions"].append(n_sessions)
        shown_log["session"].append(session)
        shown_log["row"].append(rows[column])
        shown_log["position"].append(rank[session, column] + 1)
        shown_log["clicked"].append(clicked[session, column])
        shown_log["grade"].append(grades[column])
        order = np.argsort(-score, kind="stable")
        order = order[seen[:, order].any(axis=0)]
        columns["query"] += [query] * len(order)
        columns["row"].append(rows[order])
        columns["clicks"].append(clicked[:, order].sum(axis=0))
        columns["impressions"].append(seen[:, order].sum(axis=0))
        columns["grade"].append(grades[order])
    rows = np.concatenate(columns["row"]) if queries else np.zeros(0, dtype=np.int64)
    stack = lambda name: np.concatenate(columns[name]).astype(np.int64) if queries else np.zeros(0, np.int64)  # noqa: E731
    clicks = pd.DataFrame(
        {
            "query": pd.Series(columns["query"], dtype=object),
            "docid": docids[rows],
            "doc": texts[rows],
            "clicks": stack("clicks"),
            "impressions": stack("impressions"),
            "grade": stack("grade"),
        }
    )
    return clicks, _impressions(shown_log, [q for q, _ in queries], docids)


def _impressions(log: dict[str, list], query_texts: list[str], docids: np.ndarray) -> pd.DataFrame:
    """The impression-level frame from the per-query arrays of :func:`simulate_clicks`."""
    if not log["query"]:
        empty = {name: pd.Series([], dtype=object) for name in ("session", "query", "docid")}
        return pd.DataFrame({**empty, **{name: np.zeros(0, np.int64) for name in ("position", "clicked", "grade")}})
    first_session = np.concatenate([[0], np.cumsum(log["sessions"])[:-1]])
    session = np.concatenate([s + first + 1 for s, first in zip(log["session"], first_session)])
    return pd.DataFrame(
        {
            "session": session.astype(str).astype(object),
            "query": np.asarray(query_texts, dtype=object)[np.concatenate(log["query"])],
            "docid": docids[np.concatenate(log["row"])],
            "position": np.concatenate(log["position"]).astype(np.int64),
            "clicked": np.concatenate(log["clicked"]).astype(np.int64),
            "grade": np.concatenate(log["grade"]).astype(np.int64),
        }
    )
