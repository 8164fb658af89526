"""What :meth:`~ltrfeat.rankers.lambdamart.LambdaMART.fit` is given, checked: arrays and DataFrames as ranking sets,
labels a ranker can learn from."""

from __future__ import annotations

import dataclasses

import numpy as np

from ltrfeat.core.dataset import Feature, FeatureMap, RankingSet
from ltrfeat.core.errors import LtrfeatError

MAX_LABEL = 1023  # 2^1024 - 1 overflows a double: no engine can weigh larger grades


def _as_matrix(X, where: str) -> tuple[np.ndarray, list[str] | None]:
    """A 2-d float32 feature matrix and, for a DataFrame with string column names, those names."""
    names = None
    if hasattr(X, "columns") and hasattr(X, "to_numpy"):
        if all(isinstance(c, str) for c in X.columns):
            names = [str(c) for c in X.columns]
        X = X.to_numpy(dtype=np.float32, na_value=np.nan)
    try:
        X = np.asarray(X, dtype=np.float32)
    except (TypeError, ValueError) as exc:
        raise LtrfeatError(
            f"{where}: X is not a numeric feature matrix ({exc})",
            fix="pass a 2-d numeric array or DataFrame (or a RankingSet)",
        ) from None
    if X.ndim != 2:
        raise LtrfeatError(
            f"{where}: X must be 2-d (rows x features), got shape {X.shape}",
            fix="reshape it, e.g. X.reshape(-1, 1) for one feature",
        )
    return X, names


def _ranking_from_arrays(X, y, group, qid, where: str, position=None) -> RankingSet:
    """A RankingSet from LightGBM-style ``X, y, group=sizes`` (or per-row ``qid``), with optional per-row
    display ``position`` (click data)."""
    X, names = _as_matrix(X, where)
    n = len(X)
    if y is None:
        raise LtrfeatError(f"{where}: labels y are missing", fix="call fit(X, y, group=sizes) or fit(ranking_set)")
    label = np.asarray(y, dtype=np.float64).reshape(-1)
    if len(label) != n:
        raise LtrfeatError(f"{where}: X has {n} rows but y has {len(label)} labels")
    if (group is None) == (qid is None):
        raise LtrfeatError(
            f"{where}: LambdaMART needs the query of every row",
            fix="pass group= (query sizes in row order, LightGBM's convention) or qid= (one id per row), not both",
        )
    if group is not None:
        sizes = np.asarray(group).reshape(-1)
        if (
            not (np.issubdtype(sizes.dtype, np.number) and (sizes == np.round(sizes)).all() and (sizes > 0).all())
            or int(sizes.sum()) != n
        ):
            raise LtrfeatError(
                f"{where}: group must hold positive query sizes summing to the {n} rows "
                f"(got {len(sizes)} sizes summing to {sizes.sum() if sizes.size else 0})",
                fix="group[i] = number of rows of the i-th query; rows of a query are contiguous",
            )
        ids = np.repeat(np.arange(len(sizes)), sizes.astype(np.int64)).astype(str).astype(object)
    else:
        ids = np.asarray(qid, dtype=object).reshape(-1)
        if len(ids) != n:
            raise LtrfeatError(f"{where}: X has {n} rows but qid has {len(ids)} ids")
        ids = np.array([str(q) for q in ids], dtype=object)
    try:
        fmap = (
            FeatureMap.dense(X.shape[1])
            if names is None
            else FeatureMap(Feature(j + 1, name) for j, name in enumerate(names))
        )
    except ValueError as exc:
        raise LtrfeatError(f"{where}: bad feature names ({exc})", fix="give the columns unique names") from None
    if position is not None and np.shape(position) != (n,):
        raise LtrfeatError(
            f"{where}: X has {n} rows but position has shape {np.shape(position)}",
            fix="give the 1-based display position of every row (clicks)",
        )
    try:
        return RankingSet(qid=ids, label=label, X=X, feature_map=fmap, position=position)
    except ValueError as exc:
        raise LtrfeatError(f"{where}: {exc}", fix="positions are whole numbers, 1 = top of the page") from None


def _arrays_to_rankings(X, y, group, qid, eval_set, eval_group, position=None) -> tuple[RankingSet, RankingSet | None]:
    train = _ranking_from_arrays(X, y, group, qid, "train", position)
    if eval_set is None:
        if eval_group is not None:
            raise LtrfeatError("eval_group without eval_set", fix="pass eval_set=[(X_val, y_val)] as well")
        return train, None
    sets = [eval_set] if isinstance(eval_set, tuple) else list(eval_set)
    if len(sets) != 1:
        raise LtrfeatError(
            f"eval_set holds {len(sets)} sets; early stopping uses exactly one",
            fix="pass eval_set=[(X_val, y_val)]",
        )
    groups = [None] if eval_group is None else ([eval_group] if np.ndim(eval_group[0]) == 0 else list(eval_group))
    part = tuple(sets[0])
    if len(part) == 3:  # (X, y, qid)
        return train, _ranking_from_arrays(part[0], part[1], None, part[2], "valid")
    if len(part) != 2 or len(groups) != 1:
        raise LtrfeatError("eval_set takes [(X_val, y_val)] with eval_group=[sizes], or [(X_val, y_val, qid_val)]")
    valid = _ranking_from_arrays(part[0], part[1], groups[0], None, "valid")
    if valid.n_features != train.n_features:
        raise LtrfeatError(f"valid has {valid.n_features} features, train {train.n_features}")
    return train, dataclasses.replace(valid, feature_map=train.feature_map)


class LabelError(LtrfeatError):
    """Labels LambdaMART cannot train on; ``part`` is ``"train"`` or ``"valid"`` (the CLI adds the file)."""

    def __init__(self, problem: str, *, part: str, row: int, fix: str):
        self.part, self.row = part, row
        super().__init__(problem, fix=fix)


def check_labels(label: np.ndarray, where: str) -> int:
    """Labels must be non-negative integers up to :data:`MAX_LABEL`; returns the largest."""
    bad = ~np.isfinite(label) | (label < 0) | (label != np.round(label))
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        raise LabelError(
            f"{where} labels must be non-negative integer grades for lambdarank; "
            f"row {row + 1} has {float(label[row]):g}",
            part=where,
            row=row + 1,
            fix="map fractional or negative labels to integer grades first (e.g. the label mapping of the text tables)",
        )
    if label.max(initial=0) > MAX_LABEL:
        row = int(np.argmax(label))
        raise LabelError(
            f"{where} label {float(label[row]):g} at row {row + 1} is above {MAX_LABEL} "
            "(the gain 2^label-1 overflows a double)",
            part=where,
            row=row + 1,
            fix=f"map the labels to at most {MAX_LABEL + 1} grades (e.g. by rank or in bins)",
        )
    return int(label.max())


def _check_learnable(label: np.ndarray, sizes, where: str) -> None:
    """A ranker learns only from queries holding two documents of different grades: refuse data without one
    (it would train a constant model and report success)."""
    sizes = np.asarray(sizes, dtype=np.int64)
    starts = np.cumsum(sizes) - sizes
    if len(label) and (np.maximum.reduceat(label, starts) != np.minimum.reduceat(label, starts)).any():
        return
    if len(sizes) and sizes.max() <= 1:
        reason = f"each of its {len(sizes)} queries has one document"
    elif len(label) and label.min() == label.max():
        reason = f"every label is {float(label[0]):g}"
    else:
        reason = "within each query all documents have the same label"
    raise LabelError(
        f"{where} data cannot train a ranker: {reason}, so no query ranks one document above another",
        part=where,
        row=1,
        fix="check the labels and the qid column (each query needs documents of different grades)",
    )


def _given_sets(X, y, group, qid, position, eval_set, eval_group) -> tuple[RankingSet, RankingSet | None]:
    """The training and validation sets of either calling convention of ``fit``: ``fit(train, valid)`` with ranking
    sets, or ``fit(X, y, group=sizes | qid=ids, eval_set=..., eval_group=...)`` with arrays."""
    if not isinstance(X, RankingSet):
        return _arrays_to_rankings(X, y, group, qid, eval_set, eval_group, position)
    if any(a is not None for a in (group, qid, position, eval_set, eval_group)):
        raise LtrfeatError(
            "group, qid, position, eval_set and eval_group go with fit(X, y); a RankingSet carries its queries "
            "and positions",
            fix="call fit(train_set, valid_set) or fit(X, y, group=...)",
        )
    if y is not None and not isinstance(y, RankingSet):
        raise LtrfeatError(
            f"valid must be a RankingSet, got {type(y).__name__}",
            fix="with arrays call fit(X, y, group=sizes, eval_set=[(X_val, y_val)], eval_group=[...])",
        )
    return X, y
