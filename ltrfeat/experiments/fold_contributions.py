"""What an ablation keeps of its test-fold models' per-document contributions (the models themselves are not kept).

For each fitted ranker (first seed), :func:`summarise_contributions` computes :func:`ltrfeat.rankers.contributions.contributions`
on the fold's test queries -- at most :data:`MAX_ROWS` rows of them, whole queries drawn in an order fixed by the
fold (the same queries for every set): exact TreeSHAP costs as much as training the model again for a few thousand
rows -- and keeps two summaries:

- ``mean_abs``: the mean |contribution| of each feature over those rows (a per-document based importance,
  unlike split gain, which favours features with many distinct values);
- ``top`` / ``top_values``: per test row, the :data:`TOP_FEATURES` features whose contributions, relative to the
  query's average document, are largest in size: what moved that document up or down its query's ranking
  (report.html's drill-down shows them beside a moved document); ``rows``: which test rows they are.

:func:`contribution_table` gathers ``mean_abs`` per set and fold for ``report.json`` with the share that the
set's neural columns (those the baseline does not hold) take of the total.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ltrfeat.rankers.contributions import contributions

TOP_FEATURES = 3
MAX_ROWS = 2000


def sampled_rows(test, max_rows: int = MAX_ROWS) -> np.ndarray:
    """Indices of whole queries of ``test`` holding at most ``max_rows`` rows (all of them when they fit, else
    queries in a seeded order that depends only on the queries, skipping one that no longer fits), in row order."""
    if len(test) <= max_rows:
        return np.arange(len(test))
    qid = pd.Series(np.asarray(test.qid, dtype=object).astype(str))
    sizes = qid.value_counts(sort=False)
    order = sizes.index[np.random.default_rng(0).permutation(len(sizes))]
    total = sizes[order].cumsum()
    chosen = set(order[(total <= max_rows).to_numpy()])
    return np.flatnonzero(qid.isin(chosen).to_numpy())


def summarise_contributions(model, test, *, max_rows: int = MAX_ROWS) -> dict | None:
    """The contribution summaries of ``model`` on the :func:`sampled_rows` of ``test`` (a RankingSet), or None
    for a model without contributions (another package's kind)."""
    if not callable(getattr(model, "contributions", None)) or not len(test):
        return None
    rows = sampled_rows(test, max_rows)
    part = test if len(rows) == len(test) else test.take(rows)
    contrib = contributions(model, part)
    values = contrib.values.astype(np.float64)
    centred = values - pd.DataFrame(values).groupby(np.asarray(part.qid), sort=False).transform("mean").to_numpy()
    k = min(TOP_FEATURES, values.shape[1])
    top = np.argsort(-np.abs(centred), axis=1, kind="stable")[:, :k]
    return {
        "names": list(contrib.names),
        "mean_abs": contrib.mean_abs(),
        "top": top.astype(np.int32),
        "top_values": np.take_along_axis(centred, top, axis=1).astype(np.float32),
        "rows": rows.astype(np.int64),
    }


def contribution_table(by_set: dict[str, dict[str, dict | None]], neural_of) -> dict:
    """``report.json``'s ``contributions``: per set, ``{"per_fold": {fold: {feature: mean |contribution|}}
    (largest first), "neural_share": {fold: share of the total | None}}``; ``neural_of(set, fold)`` gives the
    set's neural columns in that fold."""
    out = {}
    for name, folds in by_set.items():
        per_fold, share = {}, {}
        for fold, summary in folds.items():
            if summary is None:
                continue
            mean = dict(sorted(summary["mean_abs"].items(), key=lambda kv: (-kv[1], kv[0])))
            per_fold[fold] = {f: float(v) for f, v in mean.items()}
            total = sum(mean.values())
            neural = set(neural_of(name, fold))
            share[fold] = float(sum(v for f, v in mean.items() if f in neural) / total) if total > 0 else None
        if per_fold:
            out[name] = {"per_fold": per_fold, "neural_share": share}
    return out


def moved_by(summaries: dict[str, dict | None], folds, qids: dict, docids: dict) -> pd.DataFrame | None:
    """One set's top contributions per summarised test row over ``folds``: columns ``qid, docid`` and
    ``feature_<i>``, ``value_<i>`` for i < TOP_FEATURES (None / NaN where a model has fewer features); None when
    no fold has them."""
    if not any(summaries.get(f.name) is not None for f in folds):
        return None
    frames = []
    for fold in folds:
        summary = summaries.get(fold.name)
        if summary is None:
            continue
        frame = {"qid": qids[fold.name][summary["rows"]], "docid": docids[fold.name][summary["rows"]]}
        names = np.asarray(summary["names"], dtype=object)
        for i in range(TOP_FEATURES):
            has = i < summary["top"].shape[1]
            n = len(frame["qid"])
            frame[f"feature_{i}"] = names[summary["top"][:, i]] if has else np.full(n, None, dtype=object)
            frame[f"value_{i}"] = summary["top_values"][:, i].astype(np.float64) if has else np.full(n, np.nan)
        frames.append(pd.DataFrame(frame))
    return pd.concat(frames, ignore_index=True)
