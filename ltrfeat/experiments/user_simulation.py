"""Simulated users on the generated world, to validate interleaving: does the sign test keep its level when the
rankers are identical, and how often does it name the better ranker for a given ΔNDCG@10 and number of impressions
(and an A/B test on click-through with as many sessions)?

The world's judged queries (:func:`ltrfeat.datasets.synth.generate_world`) give each query's candidates and grades.
A simulated ranker scores a candidate ``grade + noise * N(0, 1)`` (a fresh draw per experiment: a ranker of that
quality, not one fixed list), so a smaller ``noise`` is a better ranker. A user examines the result at rank ``r``
with probability ``r ** -exponent``, clicks an examined result with the world's grade-driven attraction, and clicks
any shown result by accident with a small probability -- the click model of the world's own click log
(``ltrfeat.datasets.synth``'s ``ATTRACTION``, ``EXAMINATION_EXPONENT``, ``STRAY_CLICK``). Everything is vectorised over impressions and experiments.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import stats

from ltrfeat.datasets.synth import ATTRACTION, EXAMINATION_EXPONENT, STRAY_CLICK
from ltrfeat.experiments.interleaving import credit, interleave

_CHUNK_ROWS = 400_000  # impressions simulated at once (a few arrays of this many x shown results)


@dataclass(frozen=True)
class Users:
    """The simulated users' click model (defaults: the generated world's)."""

    exponent: float = EXAMINATION_EXPONENT
    attraction: tuple[float, ...] = tuple(float(a) for a in ATTRACTION)
    stray: float = STRAY_CLICK

    def clicks(self, grades: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """0/1 clicks on ``(n, m)`` shown grades, one impression a row, in position order."""
        examine = np.arange(1, grades.shape[1] + 1, dtype=float) ** -self.exponent
        attract = np.asarray(self.attraction)[grades]
        hit = rng.random(grades.shape) < examine * attract
        return (hit | (rng.random(grades.shape) < self.stray)).astype(np.int8)


def query_grades(judged, *, shown: int = 10) -> np.ndarray:
    """``(queries, shown)`` grades: the first ``shown`` candidates of every judged query that has that many and at
    least one relevant one."""
    out = []
    for _, rows in judged.groupby("qid", sort=True)["label"]:
        labels = rows.to_numpy(dtype=np.int64)
        if len(labels) >= shown and labels[:shown].max() > 0:
            out.append(labels[:shown])
    return np.array(out, dtype=np.int64).reshape(-1, shown)


def ndcg(grades: np.ndarray, order: np.ndarray) -> np.ndarray:
    """NDCG over the whole list (exponential gain) of each row of ``grades`` ranked by ``order``."""
    discount = 1 / np.log2(np.arange(2, grades.shape[-1] + 2))
    gains = 2.0 ** np.take_along_axis(np.broadcast_to(grades, order.shape), order, axis=-1) - 1
    ideal = (2.0 ** np.sort(grades, axis=-1)[..., ::-1] - 1) @ discount
    return (gains @ discount) / ideal


def sign_test_p(wins_a, wins_b) -> np.ndarray:
    """Two-sided exact binomial sign test of ``wins_b`` out of ``wins_a + wins_b`` against 0.5, vectorised (1 when
    nothing is decisive)."""
    wins_a, wins_b = np.asarray(wins_a), np.asarray(wins_b)
    n = wins_a + wins_b
    return np.minimum(1.0, 2 * stats.binom.cdf(np.minimum(wins_a, wins_b), n, 0.5))


def _orders(grades, noise, rng, experiments):
    scores = grades[None] + noise * rng.standard_normal((experiments, *grades.shape))
    return np.argsort(-scores, axis=-1, kind="stable")


def simulate(
    grades: np.ndarray,
    *,
    noise_a: float,
    noise_b: float | None,
    impressions: tuple[int, ...],
    experiments: int,
    method: str = "team-draft",
    users: Users | None = None,
    alpha: float = 0.05,
    seed: int = 0,
) -> dict:
    """``experiments`` interleaving experiments of ``max(impressions)`` impressions each (a query drawn uniformly
    per impression), evaluated after each count in ``impressions``; ``noise_b`` None: B is A (identical rankings).

    Returns, per count, the share of experiments where the sign test at ``alpha`` prefers B and where it prefers
    A, the same for an A/B test (Welch's t-test on clicks per session, the sessions split evenly), and the
    mean ΔNDCG (B - A) of the simulated rankers."""
    users = users or Users()
    rng = np.random.default_rng(seed)
    n_max = max(impressions)
    per_chunk = max(1, _CHUNK_ROWS // n_max)
    prefer = {k: {n: np.zeros((experiments, 2), dtype=bool) for n in impressions} for k in ("interleaving", "ab")}
    delta = np.empty(experiments)
    decisive = np.zeros(len(impressions))
    for start in range(0, experiments, per_chunk):
        e = min(per_chunk, experiments - start)
        order_a = _orders(grades, noise_a, rng, e)
        order_b = order_a if noise_b is None else _orders(grades, noise_b, rng, e)
        delta[start : start + e] = ndcg(grades, order_b).mean(axis=1) - ndcg(grades, order_a).mean(axis=1)
        experiment = np.repeat(np.arange(e), n_max)
        query = rng.integers(len(grades), size=e * n_max)
        oa, ob = order_a[experiment, query], order_b[experiment, query]
        shown, team = interleave(oa, ob, rng, method=method)
        rank_a, rank_b = np.argsort(oa, axis=1) + 1, np.argsort(ob, axis=1) + 1
        rows = np.arange(len(shown))[:, None]
        clicked = users.clicks(grades[query[:, None], shown], rng)
        credit_a, credit_b = credit(clicked, team, rank_a[rows, shown], rank_b[rows, shown], method=method)
        win_a = (credit_a > credit_b).reshape(e, n_max)
        win_b = (credit_b > credit_a).reshape(e, n_max)
        # A/B: the first half of the sessions see A's list, the second half B's
        ab_clicks = (
            np.where(
                (np.arange(e * n_max) % n_max < n_max // 2)[:, None],
                users.clicks(np.take_along_axis(grades[query], oa, axis=1), rng),
                users.clicks(np.take_along_axis(grades[query], ob, axis=1), rng),
            )
            .sum(axis=1)
            .reshape(e, n_max)
        )
        for k, n in enumerate(impressions):
            wa, wb = win_a[:, :n].sum(axis=1), win_b[:, :n].sum(axis=1)
            significant = sign_test_p(wa, wb) < alpha
            prefer["interleaving"][n][start : start + e] = np.c_[significant & (wa > wb), significant & (wb > wa)]
            decisive[k] += (wa + wb).sum()
            ca, cb = ab_clicks[:, : n // 2], ab_clicks[:, n_max // 2 : n_max // 2 + n // 2]
            with np.errstate(invalid="ignore", divide="ignore"):
                t, p = stats.ttest_ind(cb, ca, axis=1, equal_var=False)
            sig = np.nan_to_num(p, nan=1.0) < alpha
            prefer["ab"][n][start : start + e] = np.c_[sig & (t < 0), sig & (t > 0)]
    return {
        "noise_a": noise_a,
        "noise_b": noise_b,
        "method": method,
        "experiments": experiments,
        "alpha": alpha,
        "delta_ndcg": float(delta.mean()),
        "delta_ndcg_sd": float(delta.std()),
        "by_impressions": [
            {
                "impressions": n,
                "decisive_share": float(decisive[k] / (n * experiments)),
                **{
                    f"{kind}_{side}": float(prefer[kind][n][:, j].mean())
                    for kind in ("interleaving", "ab")
                    for j, side in enumerate(("prefers_a", "prefers_b"))
                },
            }
            for k, n in enumerate(impressions)
        ],
    }


def simulated_log(
    grades: np.ndarray,
    *,
    noise_a: float,
    noise_b: float,
    impressions: int,
    method: str = "team-draft",
    users: Users | None = None,
    seed: int = 0,
) -> list[dict]:
    """The event-log records (:mod:`ltrfeat.experiments.event_log`) of one simulated interleaving experiment:
    an impression line per shown result and a click line per click, queries named ``q<row>``, documents
    ``q<row>-d<candidate>``."""
    users = users or Users()
    rng = np.random.default_rng(seed)
    order_a, order_b = _orders(grades, noise_a, rng, 1)[0], _orders(grades, noise_b, rng, 1)[0]
    query = rng.integers(len(grades), size=impressions)
    oa, ob = order_a[query], order_b[query]
    shown, team = interleave(oa, ob, rng, method=method)
    rows = np.arange(impressions)[:, None]
    rank_a, rank_b = (np.argsort(oa, axis=1) + 1)[rows, shown], (np.argsort(ob, axis=1) + 1)[rows, shown]
    clicked = users.clicks(grades[query[:, None], shown], rng)
    records = []
    for i in range(impressions):
        for p in range(shown.shape[1]):
            line = {
                "session": f"s{i}",
                "query": f"q{query[i]}",
                "docid": f"q{query[i]}-d{shown[i, p]}",
                "position": p + 1,
                "clicked": 0,
                "timestamp": "2026-01-01T00:00:00.000Z",
                "impression_id": f"i{i}",
                "ranker": ("a", "b")[team[i, p]],
                "team": ("A", "B")[team[i, p]],
                "method": method,
                "rank_a": int(rank_a[i, p]),
                "rank_b": int(rank_b[i, p]),
                "action": "impression",
            }
            records.append(line)
            if clicked[i, p]:
                records.append({**line, "clicked": 1, "action": "click"})
    return records
