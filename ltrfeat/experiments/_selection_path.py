"""An ablation with model selection: every ranker set's model chosen per fold among candidates by inner
cross-validation on the fold's training queries, every candidate's test scores kept (sets ``SET/CANDIDATE``), the
``best-single`` baseline, and per fold the ``recommended`` (set, candidate) the inner cross-validation prefers."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np
from tqdm.auto import tqdm

from ltrfeat.core.logs import show_progress
from ltrfeat.experiments._ablation_runs import RunSettings, per_query_frame, run_either
from ltrfeat.experiments.ablation_result import AblationResult, RunRecords
from ltrfeat.experiments.feature_sets import FeatureSet
from ltrfeat.experiments.folds import Fold
from ltrfeat.experiments.set_kind import SetKind
from ltrfeat.rankers.choices import BEST_SINGLE, RECOMMENDED
from ltrfeat.rankers.selection import against_best, recommend


def run_with_selection(
    folds: list[Fold],
    feature_sets: list[FeatureSet],
    settings: RunSettings,
    *,
    progress: bool,
    on_run: Callable[[dict], None] | None,
    mapper: Callable,
) -> AblationResult:
    """The runs of :func:`ltrfeat.experiments.ablation.run_ablation` when ``settings`` has a selection: one per
    (fold, set), ``mapper(run, folds, sets)`` running them."""
    selection = settings.selection
    assert selection is not None
    rankers = [s for s in feature_sets if s.kind == SetKind.RANKER]
    alone = [s for s in feature_sets if s.kind == SetKind.ALONE]
    union = list(dict.fromkeys(c for s in rankers for c in s.columns))
    baseline = [FeatureSet(BEST_SINGLE, union, SetKind.BASELINE)] if rankers else []
    plan = [(fold, fs) for fold in folds for fs in rankers + baseline + alone]
    records = RunRecords([s.name for s in rankers])
    records.inner_cv = {f.name: {} for f in folds}
    chosen: dict[str, dict] = {f.name: {} for f in folds}  # fold -> set -> selection summary
    with tqdm(total=len(plan), desc="ablation", unit="run", disable=not show_progress(progress), leave=False) as bar:
        results = mapper(functools.partial(run_either, settings=settings), *zip(*plan))
        for (fold, fs), out in zip(plan, results):
            bar.set_postfix_str(f"{fold.name} {fs.name}")
            bar.update(1)
            _keep(records, fold, fs, out, settings, on_run)
            if fs.kind == SetKind.RANKER:
                chosen[fold.name][fs.name] = out["selection"]
    recommended = {fold.name: _recommend(records, fold, rankers, chosen[fold.name], selection.rule) for fold in folds}
    result_sets = list(rankers)
    if rankers:
        result_sets += [FeatureSet(RECOMMENDED, union, SetKind.RECOMMENDED), *baseline]
    result_sets += alone
    result_sets += [
        FeatureSet(f"{s.name}/{c}", s.columns, SetKind.CANDIDATE) for s in rankers for c in selection.candidates
    ]
    result = records.result(folds, feature_sets, settings, result_sets=result_sets)
    result.config["selection"] = selection.to_dict() | {"chosen": chosen, "recommended": recommended}
    return result


def _keep(records: RunRecords, fold: Fold, fs: FeatureSet, out: dict[str, Any], settings: RunSettings, on_run) -> None:
    """Gather one (fold, set)'s run: its records, per-query tables, test scores and contributions; for a ranker set
    every candidate's (``SET/CANDIDATE``) and the chosen one's under the set's name."""
    metric_names, name = settings.metric_names, fs.name
    if fs.kind == SetKind.ALONE:
        records.frames[(name, fold.name)] = per_query_frame([out["per_query"]], metric_names, fold.name, name)[0]
        records.test_scores.setdefault(name, {})[fold.name] = {"seeds": [None], "scores": [out["scores"]]}
        record = {
            "fold": fold.name,
            "feature_set": name,
            "seed": None,
            "best_iteration": None,
            "seconds": out["seconds"],
        }
        records.add_run(record, on_run)
        return
    for r in out["runs"]:
        record = {
            "fold": fold.name,
            "feature_set": name if fs.kind == SetKind.BASELINE else f"{name}/{r['candidate']}",
            "seed": r["seed"],
            "best_iteration": r["best_iteration"],
            "chose": r["chose"],
            "seconds": r["seconds"],
        }
        records.add_run(record, on_run)
    rows = {name: BEST_SINGLE} if fs.kind == SetKind.BASELINE else {f"{name}/{c}": c for c in out["candidates"]}
    if fs.kind == SetKind.RANKER:
        rows[name] = out["selection"]["chosen"]
    for row, candidate in rows.items():
        records.frames[(row, fold.name)] = per_query_frame(out["candidates"][candidate], metric_names, fold.name, row)[
            0
        ]
        records.test_scores.setdefault(row, {})[fold.name] = out["scores"][candidate]
        records.contributions.setdefault(row, {})[fold.name] = out["contrib"].get(candidate)
    if fs.kind == SetKind.BASELINE:
        return
    # whether seeds matter is a property of the engine's training (subsampling), not of the choice
    probe = settings.engine if settings.engine in out["candidates"] else rows[name]
    records.seed_effect[name] |= per_query_frame(out["candidates"][probe], metric_names, fold.name, name)[1]
    records.inner_cv[fold.name][name] = out["cv"]
    if out["shares"] is not None:
        records.add_shares(name, out["shares"], out["engine_params"])


def _recommend(records: RunRecords, fold: Fold, rankers: list[FeatureSet], chosen: dict, rule) -> dict:
    """The fold's recommendation among the offered ranker sets (those not offered are set aside and compared with
    it), from the inner cross-validation over the same queries; its rows are added as ``recommended``."""
    cv = records.inner_cv[fold.name]
    qids = next(iter(cv.values()))[0]
    values = {name: v for name, (q, v) in cv.items() if np.array_equal(q, qids)}
    offered = [s.name for s in rankers if s.offered]
    used = {n: chosen[n]["used"] for n in offered if n in values}
    rec = recommend({n: v for n, v in values.items() if n in offered}, rule, offered, used=used)
    aside = {n: v for n, v in values.items() if n not in offered}
    if aside:
        rec["aside"] = against_best(values, rec, aside, rule)
    best, pick = rec["feature_set"], rec["candidate"]
    source = f"{best}/{pick}"  # every candidate row holds every seed
    frame = records.frames[(source, fold.name)].copy()
    frame["feature_set"] = RECOMMENDED
    records.frames[(RECOMMENDED, fold.name)] = frame
    records.test_scores.setdefault(RECOMMENDED, {})[fold.name] = records.test_scores[source][fold.name]
    records.contributions.setdefault(RECOMMENDED, {})[fold.name] = records.contributions[source][fold.name]
    return rec | {"tuned": chosen[best]["tuned"].get(pick)}
