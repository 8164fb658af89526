"""Fold plans: the seeded outer query folds, the encoder trainings they call for (``E_f`` and ``E_fg``), the
leakage check between a training's queries and the ones it scores, and the folds the plans become."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd

from ltrfeat.core.dataset import RankingSet
from ltrfeat.core.errors import LtrfeatError, ParameterError
from ltrfeat.core.splits import holdout, shuffled
from ltrfeat.experiments.defaults import K_FOLDS
from ltrfeat.experiments.folds import Fold

MIN_FOLDS = 3  # with 2, the encoder for the ranker's training rows would have no queries left to train on


def check_folds(k: int) -> None:
    """Refuse fewer than :data:`MIN_FOLDS` outer folds."""
    if k < MIN_FOLDS:
        raise ParameterError(
            f"cross-fitting needs at least {MIN_FOLDS} folds (got {k}): with 2, the encoder for the ranker's "
            "training rows would have no queries left to train on",
            fix=f"use --k-folds >= {MIN_FOLDS}",
            param="k",
        )


class LeakageError(LtrfeatError):
    """An encoder would score queries it was trained on."""


@dataclasses.dataclass
class FoldPlan:
    """Query sets of one outer fold: test, ranker training and ranker validation."""

    name: str
    test: frozenset
    train: frozenset
    valid: frozenset


def plan_folds(qids, *, k: int = K_FOLDS, valid_fraction: float = 0.1, seed: int = 0) -> list[FoldPlan]:
    """Seeded outer folds over distinct ``qids``, each with a ranker validation share of its training queries."""
    queries = list(dict.fromkeys(qids))
    check_folds(k)
    if len(queries) < 2 * k:
        raise LtrfeatError(
            f"{len(queries)} queries are too few for {k} folds", fix="give more judged queries or fewer folds"
        )
    rng = np.random.default_rng(seed)  # one stream: the outer folds, then each fold's validation queries
    order = shuffled(queries, rng)
    outer = [frozenset(order[f::k]) for f in range(k)]  # dealt round robin
    plans = []
    for f, test in enumerate(outer):
        train, valid = holdout([q for q in order if q not in test], valid_fraction, rng)
        plans.append(FoldPlan(name=f"fold{f + 1}", test=test, valid=frozenset(valid), train=frozenset(train)))
    return plans


def scoring_jobs(plans: list[FoldPlan]) -> list[tuple[frozenset, list[tuple[str, frozenset]]]]:
    """Every encoder training: (queries excluded from it, [(outer fold name, queries it scores there)]).

    ``E_f`` (excluding ``T_f``) scores ``T_f`` for fold ``f``; ``E_fg`` (excluding ``T_f | T_g``) scores
    ``T_g`` for fold ``f`` and ``T_f`` for fold ``g``.
    """
    jobs = [(p.test, [(p.name, p.test)]) for p in plans]
    for i, a in enumerate(plans):
        for b in plans[i + 1 :]:
            jobs.append((a.test | b.test, [(a.name, b.test), (b.name, a.test)]))
    return jobs


def in_queries(values, members) -> np.ndarray:
    """``values[i] in members`` for every ``i`` (hashed: ``np.isin`` compares object arrays pair by pair)."""
    return pd.Series(values, dtype=object).isin(members).to_numpy()


def check_disjoint(trained_on: set, scored: set, what: str) -> None:
    """Raise :class:`LeakageError` when an encoder would score a query it was trained on."""
    overlap = trained_on & scored
    if overlap:
        example = sorted(overlap)[0]
        raise LeakageError(
            f"{what}: {len(overlap)} scored queries are in the encoder's training data (e.g. {example!r})",
            fix="train encoders only on queries outside the scored fold",
        )


def build_folds(
    base: RankingSet,
    plans: list[FoldPlan],
    columns: dict[str, dict[str, np.ndarray]],
    *,
    source: str = "encoder",
    pairs_name: str = "the judged pairs",
) -> list[Fold]:
    """Per outer fold, ``base`` (rows aligned with the pairs) plus that fold's neural columns, split
    into ranker train / validation / test by the plan; each fold's ``origin`` names it in ``pairs_name``."""
    folds = []
    for i, plan in enumerate(plans):
        data = base
        for name, values in columns[plan.name].items():
            data = data.with_columns([name], values, source=f"{source}:{name.rsplit('_', 2)[0]}")

        def part(qs, data=data):
            return data.take(np.flatnonzero(in_queries(data.qid, qs)))

        origin = f"query fold {i + 1} of {len(plans)} of {pairs_name}, encoder columns cross-fitted (see Cross-fitting)"
        folds.append(
            Fold(plan.name, part(plan.train), part(plan.valid) if plan.valid else None, part(plan.test), origin)
        )
    return folds


def out_of_fold(folds: list[Fold]) -> RankingSet:
    """Every fold's test rows in one set: each judged pair once, its neural columns from the encoders trained
    without its query (the folds' feature maps are the same)."""
    tests = [fold.test for fold in folds]
    if any(t.feature_map.names != tests[0].feature_map.names for t in tests):
        raise AssertionError("the folds' feature columns differ")
    joined = lambda name: np.concatenate([getattr(t, name) for t in tests])  # noqa: E731
    return RankingSet(
        joined("qid"),
        joined("label"),
        joined("X"),
        tests[0].feature_map,
        None if tests[0].docid is None else joined("docid"),
        None if tests[0].comment is None else joined("comment"),
    )


def group_pairs(pairs: pd.DataFrame) -> pd.DataFrame:
    """Rows grouped by query (queries in order of first appearance, rows in input order), as
    :func:`ltrfeat.core.text.pairs_to_ranking` orders them."""
    first = {q: i for i, q in enumerate(dict.fromkeys(pairs["qid"]))}
    order = np.argsort(pairs["qid"].map(first).to_numpy(), kind="stable")
    out = pairs.iloc[order].reset_index(drop=True)
    out.attrs = dict(pairs.attrs)
    return out


def n_trainings(k: int) -> int:
    """Encoder trainings per trained encoder for ``k`` outer folds."""
    return k + k * (k - 1) // 2
