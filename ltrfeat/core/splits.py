"""Seeded splits of query ids: every fold, holdout and named split of the package is cut here.

The ids are put in a seeded random order (:func:`shuffled`: ``numpy.random.default_rng(seed).permutation``),
which is cut into consecutive parts (:func:`cut_queries`, :func:`holdout`) or dealt round robin into folds. ``seed`` is an int, a sequence of ints, or a ``numpy.random.Generator`` whose stream
continues from call to call.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

Seed = int | Sequence[int] | np.random.Generator
SPLITS = ("train", "vali", "test")  # the named parts of a data set written to disk (LETOR's train/vali/test)


def shuffled(ids, seed: Seed) -> np.ndarray:
    """The distinct ``ids`` in a seeded random order (a numpy array keeps its dtype, anything else becomes an
    object array); ``ids`` must be distinct."""
    ids = ids if isinstance(ids, np.ndarray) else np.asarray(list(ids), dtype=object)
    return ids[np.random.default_rng(seed).permutation(len(ids))]


def cut_queries(ids, sizes: Sequence[int], seed: Seed) -> list[np.ndarray]:
    """Consecutive parts of ``sizes`` ids each (summing to the number of ``ids``) of the seeded order."""
    order = shuffled(ids, seed)
    if sum(sizes) != len(order):
        raise ValueError(f"split sizes {list(sizes)} do not add up to the {len(order)} ids")
    return np.split(order, np.cumsum(sizes)[:-1].astype(int))


def holdout_size(n: int, fraction: float, *, both_sides: bool = False) -> int:
    """``round(fraction * n)`` ids held out of ``n``; ``both_sides``: at least one on each side (none when
    ``n < 2``)."""
    size = int(round(fraction * n))
    if both_sides:
        return min(max(1, size), n - 1) if n > 1 else 0
    return size


def holdout(ids, fraction: float, seed: Seed, *, both_sides: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """``(kept, held out)``: the first :func:`holdout_size` ids of the seeded order are held out."""
    n_out = holdout_size(len(ids), fraction, both_sides=both_sides)
    held, kept = cut_queries(ids, [n_out, len(ids) - n_out], seed)
    return kept, held


def share_sizes(n: int, shares: Sequence[float]) -> list[int]:
    """Part sizes of ``n`` ids cut at the rounded cumulative ``shares`` (which sum to 1)."""
    bounds = [0, *np.round(np.cumsum(shares)[:-1] * n).astype(int).tolist(), n]
    return [b - a for a, b in zip(bounds, bounds[1:])]


def even_sizes(n: int, k: int) -> list[int]:
    """``k`` part sizes of ``n`` ids differing by at most one, the larger first (as ``numpy.array_split``)."""
    return [n // k + (1 if i < n % k else 0) for i in range(k)]
