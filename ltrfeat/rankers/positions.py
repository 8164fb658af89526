"""Click labels with display positions: each engine's own unbiased lambdarank, never a hand-written one.

A :class:`~ltrfeat.core.dataset.RankingSet` whose ``position`` is set holds click data: ``label`` is 1 for a
clicked result and 0 for one shown but not clicked, ``position`` the 1-based place where the row was shown.
:class:`~ltrfeat.rankers.lambdamart.LambdaMART` then trains with the engine's position-bias correction:

- **LightGBM** (4.1 and later, PR 5929): the positions go to ``Dataset(position=...)``; the training score is
  decomposed as ``f(x) + g(position)`` (a generalised additive model), the position factors ``g`` are learned
  beside the trees and only ``f`` is the model. ``lambdarank_position_bias_regularization`` (default 0) shrinks
  ``g``. Positions may be any integers, repeat within a query and leave gaps.
- **XGBoost** (2.0 and later, PR 8822): ``lambdarank_unbiased=True``, Unbiased LambdaMART (Hu et al. WWW 2019),
  which estimates the propensities of clicked and unclicked results by position (``ti+``/``tj-``, regularised by
  ``lambdarank_bias_norm``) for the first ``lambdarank_num_pair_per_sample`` positions (32 by default). XGBoost
  takes a row's position from its place in the query's rows, so each query must be one shown list with
  positions 1..n once each; its rows are sorted by position before training.

The validation set's positions play no part (early stopping measures NDCG on its labels, best on judgments).
"""

from __future__ import annotations

import numpy as np

from ltrfeat.core.dataset import RankingSet
from ltrfeat.core.errors import LtrfeatError

CORRECTION = {
    "lightgbm": "LightGBM lambdarank with Dataset position: f(x) + g(position), position factors g learned in "
    "training, the model is f (lambdarank_position_bias_regularization shrinks g)",
    "xgboost": "XGBoost Unbiased LambdaMART (lambdarank_unbiased=true): click propensities by position estimated "
    "in training from the row order of each query's list (lambdarank_bias_norm regularises them)",
}
ENGINE_PARAMS = {"lightgbm": {}, "xgboost": {"lambdarank_unbiased": True}}


def position_order(data: RankingSet, engine: str, where: str) -> np.ndarray:
    """Check the positions of ``data`` (contiguous queries) for ``engine`` and return the row order it trains in:
    the identity for LightGBM, rows by position within each query for XGBoost."""
    position = data.position
    if position is None:
        raise ValueError("data has no positions")
    if len(position) and position.min() < 1:
        row = int(np.argmin(position))
        raise LtrfeatError(
            f"{where} position {int(position[row])} at row {row + 1} is below 1",
            fix="positions are 1-based: 1 is the top result of the page",
        )
    if engine != "xgboost":
        return np.arange(len(data))
    bounds = data.query_boundaries()
    starts = np.repeat(bounds[:-1], np.diff(bounds))
    order = np.lexsort((position, starts))
    expected = np.arange(len(data)) - starts + 1  # 1..n within each query
    bad = position[order] != expected
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        q = int(np.searchsorted(bounds, row, side="right")) - 1
        shown = sorted(position[bounds[q] : bounds[q + 1]].tolist())
        listed = ", ".join(map(str, shown[:12])) + (", ..." if len(shown) > 12 else "")
        raise LtrfeatError(
            f"{where} query {data.qid[bounds[q]]!r} has positions {listed}: XGBoost's unbiased lambdarank reads a "
            f"row's position from its place in the query's list, so it needs positions 1..{len(shown)} once each",
            fix="give every shown list (impression) its own qid with positions 1..n, or train with --engine lightgbm "
            "(any positions)",
        )
    return order


def position_record(data: RankingSet, engine: str, engine_params: dict) -> dict:
    """What the model metadata records of a position-debiased training."""
    names = ("lambdarank_position_bias_regularization", "lambdarank_unbiased", "lambdarank_bias_norm")
    if data.position is None:
        raise ValueError("describe() needs a RankingSet with positions")
    return {
        "correction": CORRECTION[engine],
        "positions": {"min": int(data.position.min()), "max": int(data.position.max())},
        "clicked_rows": int((data.label > 0).sum()),
        "rows": len(data),
        "engine_params": {k: engine_params[k] for k in names if k in engine_params},
    }


def positioned_training(folds: list[str], engine: str, *, selecting: bool, dask: bool) -> str:
    """The line an ablation says when the training parts of ``folds`` (their names) carry display positions: its
    LambdaMART trains with ``engine``'s correction. Model selection and Dask are refused (a :class:`LtrfeatError`),
    as ``train-ranker`` refuses them: the linear, best-single and boost-best candidates have no position-bias
    correction, inner cross-validation would score every candidate on position-biased clicks, and the engines'
    unbiased lambdarank runs in one local LambdaMART."""
    where = f"the training file of fold {folds[0]}" + (f" (and {len(folds) - 1} more)" if len(folds) > 1 else "")
    if selecting or dask:
        why = (
            "model selection's linear, best-single and boost-best candidates have no position-bias correction and "
            "its inner cross-validation would score them on position-biased clicks"
            if selecting
            else "the engines' unbiased lambdarank runs in one local LambdaMART, not on a Dask cluster"
        )
        raise LtrfeatError(
            f"{where} has display positions (a .position file: click data): {why}",
            fix=(
                "give --no-select (LambdaMART with the engine's unbiased lambdarank)"
                if selecting
                else "leave out --dask"
            )
            + ", or remove the .position files to train on the clicks uncorrected",
        )
    return f"{where} has display positions (.position: click data): LambdaMART trains with {CORRECTION[engine]}"
