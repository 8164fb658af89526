"""One run of an ablation on one fold: a LambdaMART (or single-feature) run per seed, or with model selection every
candidate of one feature set chosen among by inner cross-validation; each returns the per-query test metrics, test
scores and what the models chose. Runs are plain dicts of JSON-able values and arrays: the run cache stores them
(:mod:`ltrfeat.experiments._run_cache`) and worker processes return them."""

from __future__ import annotations

import dataclasses
import time
from typing import Any

import numpy as np
import pandas as pd

from ltrfeat.core.dataset import RankingSet
from ltrfeat.core.metrics import Conventions, evaluate_queries
from ltrfeat.experiments.feature_sets import FeatureSet
from ltrfeat.experiments.fold_contributions import summarise_contributions
from ltrfeat.experiments.folds import Fold
from ltrfeat.experiments.set_kind import SetKind
from ltrfeat.rankers import registry
from ltrfeat.rankers.choices import BEST_SINGLE
from ltrfeat.rankers.lambdamart import LambdaMART
from ltrfeat.rankers.selection import (
    Candidates,
    SelectionConfig,
    describe,
    feature_table,
    features_used,
    select,
    with_valid,
)
from ltrfeat.rankers.single import concat, feature_scores


@dataclasses.dataclass(frozen=True)
class RunSettings:
    """What every run of one ablation shares, validated by :func:`ltrfeat.experiments.ablation.run_ablation`:
    the engine, ranker seeds and parameters, metric names and conventions, and the model selection (or None)."""

    engine: str
    seeds: tuple[int, ...]
    params: dict
    metric_names: list[str]
    conventions: Conventions
    selection: SelectionConfig | None = None


def run_plain(fold: Fold, fs: FeatureSet, seed: int | None, *, settings: RunSettings) -> dict[str, Any]:
    """One (fold, feature set, seed) run: per-query metrics of the fold's test queries, plus the
    ranker's best iteration, gain shares, engine parameters and contribution summaries (None for alone sets)."""
    start = time.perf_counter()
    out: dict[str, Any] = {"best_iteration": None, "shares": None, "engine_params": None, "contrib": None}
    if fs.kind == SetKind.RANKER:
        assert seed is not None  # ranker sets run once per seed, alone sets without
        model = LambdaMART(**settings.params, engine=settings.engine, seed=seed, features=fs.columns)
        scores = model.fit(fold.train, fold.valid).predict(fold.test)
        total_gain = sum(model.feature_importance_.values()) or 1.0
        out |= {
            "best_iteration": model.best_iteration_,
            "engine_params": model.engine_params_,
            "shares": {k: v / total_gain for k, v in model.feature_importance_.items()},
            # the drill-down shows the first seed's model: the others' contributions would go unread
            "contrib": summarise_contributions(model, fold.test) if seed == settings.seeds[0] else None,
        }
    else:
        scores = feature_scores(fold.test, fold.test.feature_map.column_of(fs.columns[0]))
    out["scores"] = np.asarray(scores, dtype=np.float64)
    out["per_query"] = evaluate(fold.test, scores, settings)
    out["seconds"] = time.perf_counter() - start
    return out


def per_query_frame(
    per_seed: list[pd.DataFrame], metric_names: list, fold: str, name: str
) -> tuple[pd.DataFrame, bool]:
    """Per-query metrics averaged over seeds, with ``feature_set`` and ``fold`` columns, and whether
    any two seeds differed."""
    frame = per_seed[0].copy()
    changed = len(per_seed) > 1 and not all(df.equals(per_seed[0]) for df in per_seed[1:])
    if len(per_seed) > 1:  # the seeds' tables share their queries and columns: add them as arrays
        columns = [frame.columns.get_loc(m) for m in metric_names]
        total = per_seed[0].iloc[:, columns].to_numpy(dtype=np.float64)
        for df in per_seed[1:]:
            total = total + df.iloc[:, columns].to_numpy(dtype=np.float64)
        frame[metric_names] = total / len(per_seed)
    frame = frame.reset_index()
    frame.insert(0, "fold", fold)
    frame.insert(0, "feature_set", name)
    return frame, changed


def run_selected(fold: Fold, fs: FeatureSet, *, settings: RunSettings) -> dict[str, Any]:
    """Model selection for one (fold, feature set): inner cross-validation on the fold's training
    queries, then every candidate refitted on them (each seed) and scored on the test queries."""
    start = time.perf_counter()
    selection, conventions, engine = settings.selection, settings.conventions, settings.engine
    assert selection is not None
    candidates = Candidates(
        fs.columns,
        settings.params | {"engine": engine},
        gain=conventions.gain,
        no_relevant=conventions.no_relevant,
        ties=conventions.ties,
        criterion=selection.criterion,
    )
    names = [BEST_SINGLE] if fs.kind == SetKind.BASELINE else list(selection.candidates)
    # one criterion table of the training queries for the inner cross-validation and the final fits (each
    # fit takes its queries' rows, in their order, so the values are those of a table made for it)
    table = feature_table(concat(fold.train, fold.valid), candidates, names)
    chosen_by = (
        None if fs.kind == SetKind.BASELINE else select(fold.train, fold.valid, candidates, selection, table=table)
    )
    train, valid = with_valid(fold.train, fold.valid, selection.valid_fraction, selection.seed)
    out: dict[str, Any] = {
        "candidates": {},
        "scores": {},
        "runs": [],
        "shares": None,
        "engine_params": None,
        "contrib": {},
    }
    used_by: dict[str, list[str]] = {}
    for name in names:
        per_seed: list[pd.DataFrame] = []
        scores: dict[str, list] = {"seeds": [], "scores": []}
        used: dict[str, None] = {}
        # every seed for every candidate: the recommendation may pick any (set, candidate), and every
        # SET/CANDIDATE row then averages the same seeds as the recommended row it is compared with
        seed_free = registry.seed_free(name)
        for seed in settings.seeds[:1] if seed_free else settings.seeds:
            began = time.perf_counter()
            model = candidates.make(name, seed=seed, tuned=None if chosen_by is None else chosen_by["tuned"].get(name))
            candidates.fit(model, train, valid, table)
            predicted = np.asarray(model.predict(fold.test), dtype=np.float64)
            if not scores["seeds"]:  # the drill-down shows the first seed's scores: their contributions
                out["contrib"][name] = summarise_contributions(model, fold.test)
            scores["seeds"].append(None if seed_free else seed)
            scores["scores"].append(predicted)
            per_seed.append(evaluate(fold.test, predicted, settings))
            info = describe(model)
            used |= dict.fromkeys(features_used(model))
            out["runs"].append(
                {
                    "candidate": name,
                    "seed": None if seed_free else seed,
                    "best_iteration": info.get("best_iteration"),
                    "chose": info,
                    "seconds": time.perf_counter() - began,
                }
            )
            if name == engine and out["shares"] is None:
                total = sum(model.feature_importance_.values()) or 1.0
                out["shares"] = {k: v / total for k, v in model.feature_importance_.items()}
                out["engine_params"] = model.engine_params_
        out["candidates"][name] = per_seed
        out["scores"][name] = scores
        used_by[name] = list(used)  # over every seed: the complexity model selection charges
    if chosen_by is not None:
        out["selection"] = {k: chosen_by[k] for k in ("chosen", "rule", "stats", "tuned", "trials")}
        out["selection"]["used"] = used_by
        out["cv"] = (chosen_by["qids"], chosen_by["values"])
    out["seconds"] = time.perf_counter() - start
    return out


def run_either(fold: Fold, fs: FeatureSet, *, settings: RunSettings) -> dict[str, Any]:
    """With model selection: an alone set's one run, any other set's :func:`run_selected`."""
    if fs.kind == SetKind.ALONE:
        return run_plain(fold, fs, None, settings=settings)
    return run_selected(fold, fs, settings=settings)


def evaluate(test: RankingSet, scores, settings: RunSettings) -> pd.DataFrame:
    """Per-query test metrics of ``scores`` under the ablation's metrics and conventions."""
    conventions = settings.conventions
    return evaluate_queries(
        test.qid,
        test.label,
        scores,
        settings.metric_names,
        gain=conventions.gain,
        no_relevant=conventions.no_relevant,
        ties=conventions.ties,
        docid=test.docid,
    )
