"""Interleaving two rankings into one result list, and crediting the clicks on it.

Team-draft (Radlinski, Kurup and Joachims, CIKM 2008): whenever the two teams are the same size a coin decides who
picks next, otherwise the smaller team does; a ranker picks its best document not yet shown, which joins its team.
Balanced (Joachims 2003): the rankers take turns down their own lists (the coin only decides who starts), a
document already shown is skipped; the credit compares the clicked results in each ranker's top ``k``, ``k`` the
better of the two ranks of the lowest clicked result. Both are vectorised over many impressions (the simulation
interleaves a million at once) and deterministic for a given ``(seed, request id)`` (:func:`request_rng`).
"""

from __future__ import annotations

import hashlib

import numpy as np

from ltrfeat.clicks.served import INTERLEAVE_METHODS


def request_rng(seed: int, request_id: str) -> np.random.Generator:
    """The random stream of one request: a function of the service's seed and the request id alone."""
    digest = hashlib.blake2b(f"{int(seed)}\0{request_id}".encode("utf-8", "surrogatepass"), digest_size=16).digest()
    return np.random.default_rng(int.from_bytes(digest, "little"))


def _check_method(method: str) -> None:
    if method not in INTERLEAVE_METHODS:
        raise ValueError(f"unknown interleaving method {method!r}; use one of {', '.join(INTERLEAVE_METHODS)}")


def interleave(
    order_a: np.ndarray, order_b: np.ndarray, rng: np.random.Generator, *, method: str = "team-draft"
) -> tuple[np.ndarray, np.ndarray]:
    """Interleave rankings of the same candidates, one impression a row.

    ``order_a``, ``order_b``: ``(n, m)`` integer arrays, each row a permutation of ``0..m-1`` (candidate indices,
    best first). Returns ``(shown, team)``: ``(n, m)`` candidate indices in the order shown, and ``(n, m)`` int8
    teams, 0 for A and 1 for B."""
    _check_method(method)
    order_a, order_b = np.atleast_2d(order_a), np.atleast_2d(order_b)
    n, m = order_a.shape
    rows = np.arange(n)
    seen = np.zeros((n, m), dtype=bool)
    shown = np.empty((n, m), dtype=np.int64)
    team = np.empty((n, m), dtype=np.int8)
    nxt = np.zeros((2, n), dtype=np.int64)  # next index into each ranking
    size = np.zeros((2, n), dtype=np.int64)  # team sizes
    coins = rng.integers(2, size=(n, m) if method == "team-draft" else (n, 1))
    orders = np.stack([order_a, order_b])
    for step in range(m):
        for k in (0, 1):  # skip what is already shown
            while True:
                stale = (nxt[k] < m) & seen[rows, orders[k, rows, np.minimum(nxt[k], m - 1)]]
                if not stale.any():
                    break
                nxt[k] += stale
        coin, turns = (coins[:, step], size) if method == "team-draft" else (coins[:, 0], nxt)
        side = np.where(turns[0] == turns[1], coin, turns[1] < turns[0]).astype(np.int64)
        doc = orders[side, rows, nxt[side, rows]]
        shown[:, step], team[:, step] = doc, side
        seen[rows, doc] = True
        nxt[side, rows] += 1
        size[side, rows] += 1
    return shown, team


def credit(clicked: np.ndarray, team: np.ndarray, rank_a: np.ndarray, rank_b: np.ndarray, *, method: str):
    """Credits of rankers A and B per impression: ``(n,)`` arrays each.

    Inputs are ``(n, m)`` arrays in position order: ``clicked`` (0/1), ``team`` (0 = A, 1 = B), each shown
    result's 1-based rank under A and under B. Team-draft: the clicks on each team's results. Balanced: the
    clicked results within each ranker's top ``k``, ``k`` = min(rank under A, rank under B) of the lowest clicked
    result (a row without a click credits neither)."""
    _check_method(method)
    hits = np.atleast_2d(np.asarray(clicked)).astype(bool)
    team = np.atleast_2d(team)
    if method == "team-draft":
        return (hits & (team == 0)).sum(axis=1), (hits & (team == 1)).sum(axis=1)
    rank_a, rank_b = np.atleast_2d(rank_a), np.atleast_2d(rank_b)
    m = hits.shape[1]
    last = m - 1 - np.argmax(hits[:, ::-1], axis=1)
    rows = np.arange(len(hits))
    k = np.where(hits.any(axis=1), np.minimum(rank_a[rows, last], rank_b[rows, last]), 0)[:, None]
    return (hits & (rank_a <= k)).sum(axis=1), (hits & (rank_b <= k)).sum(axis=1)
