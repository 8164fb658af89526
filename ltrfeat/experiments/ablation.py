"""Feature ablations: folds × feature sets × seeds, paired so every comparison is fair.

An ablation trains one LambdaMART per (fold, feature set, seed) on the fold's train part
(early-stopping on its validation part), scores the fold's test queries and keeps the
per-query metrics. Every feature set sees the same folds and the same seeds, so the
per-query values of two sets are paired observations of the same queries. Single-feature
("alone") sets rank by the raw feature value and need no training.

The sets are planned by :mod:`ltrfeat.experiments.feature_sets`, one run is
:mod:`ltrfeat.experiments._ablation_runs`, model selection's path :mod:`ltrfeat.experiments._selection_path`;
:func:`ltrfeat.experiments.summary.summarise` turns the per-query values into means with bootstrap intervals and
paired comparisons.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import ClassVar

import pandas as pd
from tqdm.auto import tqdm

from ltrfeat.core.errors import LtrfeatError, ParameterError
from ltrfeat.core.logs import show_progress
from ltrfeat.core.metrics import GAINS, NO_RELEVANT, TIES, Conventions, parse_metrics
from ltrfeat.core.processes import spawn_pool
from ltrfeat.core.settings import OneOf, Settings
from ltrfeat.experiments._ablation_runs import RunSettings, per_query_frame, run_plain
from ltrfeat.experiments._run_cache import RunStore, fit_once
from ltrfeat.experiments._selection_path import run_with_selection
from ltrfeat.experiments.ablation_result import RESERVED_PARAMS, AblationResult, RunRecords
from ltrfeat.experiments.feature_sets import FeatureSet
from ltrfeat.experiments.folds import Fold
from ltrfeat.experiments.set_kind import SetKind
from ltrfeat.rankers import registry
from ltrfeat.rankers.lambdamart import ENGINES
from ltrfeat.rankers.selection import SelectionConfig

DEFAULT_METRICS = (
    "ndcg@1",
    "ndcg@3",
    "ndcg@10",
    "recall@3",
    "recall@6",
    "recall@10",
    "top3recall@3",
    "top3recall@6",
    "top3recall@10",
    "map",
    "mrr",
)


@dataclasses.dataclass(frozen=True)
class AblationConfig(Settings):
    """What every run of :func:`run_ablation` does (validated on creation).

    engine : ``"lightgbm"`` or ``"xgboost"``.
    seeds : ranker seeds; every ranker set is trained once per seed on every fold.
    ranker_params : other :class:`~ltrfeat.rankers.lambdamart.LambdaMART` parameters (``n_estimators``,
        ``learning_rate``, ``num_leaves``, ``n_jobs``, ``params``, ...); ``n_jobs`` defaults to 1 here
        (None = all cores).
    metrics : metric names or spec (see :func:`ltrfeat.core.metrics.parse_metrics`).
    gain, no_relevant, ties : NDCG gain, the value of queries without a relevant document and the order
        of tied scores (see :class:`ltrfeat.core.metrics.Conventions`; ``ties="expected"``, the default,
        averages over every order of the ties). They hold for the test metrics, the inner cross-validation
        criterion and the choice of the best single feature.
    selection : a :class:`~ltrfeat.rankers.selection.SelectionConfig`: each ranker set's model is chosen
        among candidates by inner cross-validation on each fold's training queries; None: LambdaMART with
        ``ranker_params`` for every ranker set.
    """

    label: ClassVar[str] = "the ablation"
    _parameter_constraints: ClassVar[dict] = {
        "engine": [OneOf(*ENGINES)],
        "ranker_params": [dict, None],
        "metrics": [tuple, str],
        "gain": [OneOf(*GAINS)],
        "no_relevant": [OneOf(*NO_RELEVANT)],
        "ties": [OneOf(*TIES)],
        "selection": [SelectionConfig, None],
    }
    _nested: ClassVar[dict] = {"selection": SelectionConfig}

    engine: str = "lightgbm"
    seeds: tuple = (0, 1, 2)
    ranker_params: dict | None = None
    metrics: tuple | str = DEFAULT_METRICS
    gain: str = "exp2"
    no_relevant: str = "exclude"
    ties: str = "expected"
    selection: SelectionConfig | None = None

    def __post_init__(self):
        self._set("seeds", tuple(int(s) for s in self.seeds))
        if isinstance(self.metrics, list):
            self._set("metrics", tuple(self.metrics))
        super().__post_init__()

    def _check(self) -> None:
        if not self.seeds or len(set(self.seeds)) != len(self.seeds):
            raise ParameterError(
                f"seeds must be distinct and at least one, got {list(self.seeds)}",
                fix="e.g. seeds 0,1,2",
                param="seeds",
            )
        parse_metrics(self.metrics)
        reserved = [k for k in RESERVED_PARAMS if k in (self.ranker_params or {})]
        if reserved:
            raise ParameterError(
                f"ranker_params may not set {reserved[0]!r}",
                fix="the ablation sets engine, seed and features itself",
                param="ranker_params",
            )

    def conventions(self) -> Conventions:
        """The metric conventions (gain, value of queries without a relevant document, ties)."""
        return Conventions(gain=self.gain, no_relevant=self.no_relevant, ties=self.ties)


def _check_folds(folds: list[Fold], feature_sets: list[FeatureSet]) -> None:
    if not folds:
        raise LtrfeatError("no folds given", fix="give at least one fold with train and test queries")
    names = [f.name for f in folds]
    if len(set(names)) != len(names):
        raise LtrfeatError(f"fold names are not unique: {names}", fix="name every fold differently")
    if not feature_sets:
        raise LtrfeatError("no feature sets given", fix="build them with plan_feature_sets")
    set_names = [s.name for s in feature_sets]
    if len(set(set_names)) != len(set_names):
        raise LtrfeatError(f"feature set names are not unique: {set_names}", fix="name every feature set differently")
    for s in feature_sets:
        if s.kind not in SetKind.planned():
            planned = ", ".join(SetKind.planned())
            raise LtrfeatError(f"feature set {s.name!r} has kind '{s.kind}'", fix=f"use one of {planned}")
        if not s.columns or (s.kind == SetKind.ALONE and len(s.columns) != 1):
            raise LtrfeatError(
                f"feature set {s.name!r} has {len(s.columns)} columns",
                fix="ranker sets need at least one column, alone sets exactly one",
            )
    tested_in: dict[str, str] = {}
    for fold in folds:
        test_qids = set(fold.test.qid.tolist())
        if not test_qids:
            raise LtrfeatError(f"fold {fold.name!r} has no test queries", fix="every fold needs test queries")
        for part in ("train", "valid"):
            other = getattr(fold, part)
            if other is None:
                continue
            leaked = sorted(test_qids & set(other.qid.tolist()))
            if leaked:
                raise LtrfeatError(
                    f"query {leaked[0]!r} is in both the {part} and the test set of fold {fold.name!r} "
                    f"({len(leaked)} such queries)",
                    fix="split folds by query so no test query is trained on",
                )
        for qid in fold.test.queries().tolist():
            if qid in tested_in:
                raise LtrfeatError(
                    f"query {qid!r} is in the test sets of folds {tested_in[qid]!r} and {fold.name!r}",
                    fix="each query must be tested in exactly one fold (the folds must partition the queries)",
                )
            tested_in[qid] = fold.name
        for part in ("train", "valid", "test"):
            data = getattr(fold, part)
            if data is None:
                continue
            have = set(data.feature_map.names)
            for s in feature_sets:
                missing = [c for c in s.columns if c not in have]
                if missing:
                    raise LtrfeatError(
                        f"fold {fold.name!r} {part} data lacks feature {missing[0]!r} of set {s.name!r}",
                        fix="give every fold the same columns",
                    )


def _check_run_args(folds, feature_sets, config: AblationConfig) -> tuple[list[Fold], list[FeatureSet], RunSettings]:
    """Validated ``(folds, feature_sets, settings)``."""
    folds, feature_sets = list(folds), list(feature_sets)
    conventions = config.conventions()
    # many small models: one engine thread each is faster than all cores (thread start-up and
    # contention dominate), and it stays fast on a loaded machine
    params = {"n_jobs": 1} | dict(config.ranker_params or {})
    settings = RunSettings(
        config.engine, config.seeds, params, parse_metrics(config.metrics), conventions, config.selection
    )
    _check_folds(folds, feature_sets)
    if config.ties == "docid":
        _check_docids(folds)
    if config.no_relevant == "exclude" and not any(
        (f.test.label >= conventions.relevance_threshold).any() for f in folds
    ):
        raise LtrfeatError(
            "no test query has a relevant document, so every query would be excluded",
            fix="check the labels, or use --no-relevant zero",
        )
    return folds, feature_sets, settings


def _check_docids(folds) -> None:
    """``ties="docid"`` orders tied rows by docid: every row of every fold needs one."""
    for fold in folds:
        for part in (fold.train, fold.valid, fold.test):
            if part is not None and (part.docid is None or pd.isna(pd.Series(part.docid, dtype=object)).any()):
                raise ParameterError(
                    f"--ties docid orders tied scores by docid, and fold {fold.name!r} has rows without one",
                    fix="use --ties expected (the default), or data with a docid on every row",
                )


def fit_rows(folds, feature_sets, config: AblationConfig) -> int:
    """Training rows read by all the ranker fits :func:`run_ablation` makes (a fit counts its fold's training
    rows, validation part included): what a run in worker processes must outweigh. With model selection a
    (fold, ranker set) run fits every candidate on every inner fold, then every candidate with every seed
    (seed-free kinds once)."""
    rankers = sum(s.kind == SetKind.RANKER for s in feature_sets)
    selection = config.selection
    if selection is None:
        fits = rankers * len(config.seeds)
    else:
        final = sum(1 if registry.seed_free(c) else len(config.seeds) for c in selection.candidates)
        fits = rankers * (selection.inner_folds * len(selection.candidates) + final) + (1 if rankers else 0)
    return fits * sum(len(f.train) + (0 if f.valid is None else len(f.valid)) for f in folds)


def run_ablation(
    folds,
    feature_sets,
    config: AblationConfig | None = None,
    *,
    progress: bool = True,
    on_run=None,
    executor=None,
    jobs: int = 1,
    cache: RunStore | None = None,
    **settings,
) -> AblationResult:
    """Train and score every (fold, feature set, seed) and keep per-query metrics.

    Parameters
    ----------
    folds : list of :class:`Fold`; a test query may appear in one fold only.
    feature_sets : list of :class:`FeatureSet` (see :func:`~ltrfeat.experiments.feature_sets.plan_feature_sets`).
    config : an :class:`AblationConfig` (engine, seeds, ranker parameters, metrics, conventions, model
        selection); keyword ``settings`` replace single fields (``run_ablation(folds, sets, seeds=[0])``).
        With a ``selection``, every ranker set's model is chosen among candidates by inner cross-validation
        on each fold's training queries (one run per fold and set), every candidate's test scores are kept
        (sets ``SET/CANDIDATE``), and the ``best-single`` baseline and the ``recommended`` configuration are
        added; without, LambdaMART runs once per fold, set and seed.
    progress : show a tqdm bar over the runs (stderr, hidden when not a terminal).
    on_run : called with each run's record (dict) as soon as it finishes (in plan order).
    executor : runs the runs: any object whose ``map(fn, *iterables)`` yields results in order, like
        a ``concurrent.futures`` executor or :class:`ltrfeat.rankers.dask_training.DaskExecutor`; None runs
        them one by one in this process.
    jobs : without an ``executor``, run the runs in this many worker processes (1: in this process).
    cache : a :class:`~ltrfeat.experiments._run_cache.RunStore` (its ``settings`` are filled in here): runs whose
        inputs it holds are taken from it, the others stored in it; results equal an uncached run.

    Runs that differ only in their feature names (columns of equal values in the same order, e.g. a
    fine-tuned MiniLM that kept its zero-shot start beside ``sbert``) are fitted once
    (:func:`~ltrfeat.experiments._run_cache.fit_once`); each gets the result under its own names.
    """
    config = dataclasses.replace(config or AblationConfig(), **settings)
    folds, feature_sets, run_settings = _check_run_args(folds, feature_sets, config)
    if executor is None and int(jobs) > 1:
        # spawned, not forked (the caller may run torch or engine threads); the workers die with this process
        with spawn_pool(int(jobs)) as pool:
            return run_ablation(
                folds, feature_sets, config, progress=progress, on_run=on_run, executor=pool, cache=cache
            )
    mapper = map if executor is None else executor.map
    if cache is not None:
        cache.settings = {
            "engine": run_settings.engine,
            "seeds": list(run_settings.seeds),
            "params": run_settings.params,
            "metrics": run_settings.metric_names,
            "conventions": run_settings.conventions.to_dict(),
            "selection": None if config.selection is None else config.selection.to_dict(),
        }
        mapper = functools.partial(cache.map, mapper)
    else:
        mapper = functools.partial(fit_once, mapper)
    if config.selection is not None:
        return run_with_selection(folds, feature_sets, run_settings, progress=progress, on_run=on_run, mapper=mapper)
    return _run_plain(folds, feature_sets, run_settings, progress=progress, on_run=on_run, mapper=mapper)


def _run_plain(folds: list[Fold], feature_sets: list[FeatureSet], settings: RunSettings, *, progress, on_run, mapper):
    """The runs of :func:`run_ablation` without model selection: one per (fold, ranker set, seed) and per
    (fold, alone set)."""
    seeds = settings.seeds
    plan = [
        (fold, fs, seed)
        for fold in folds
        for fs in feature_sets
        for seed in (seeds if fs.kind == SetKind.RANKER else [None])
    ]
    records = RunRecords([s.name for s in feature_sets if s.kind == SetKind.RANKER])
    per_seed: list[pd.DataFrame] = []
    with tqdm(total=len(plan), desc="ablation", unit="run", disable=not show_progress(progress), leave=False) as bar:
        results = mapper(functools.partial(run_plain, settings=settings), *zip(*plan))
        for (fold, fs, seed), out in zip(plan, results):
            bar.set_postfix_str(f"{fold.name} {fs.name}" + ("" if seed is None else f" seed {seed}"))
            if fs.kind == SetKind.RANKER:
                records.add_shares(fs.name, out["shares"], out["engine_params"])
            per_seed.append(out["per_query"])
            entry = records.test_scores.setdefault(fs.name, {}).setdefault(fold.name, {"seeds": [], "scores": []})
            entry["seeds"].append(seed)
            entry["scores"].append(out["scores"])
            if fs.kind == SetKind.RANKER and len(entry["seeds"]) == 1:
                records.contributions.setdefault(fs.name, {})[fold.name] = out["contrib"]
            record = {
                "fold": fold.name,
                "feature_set": fs.name,
                "seed": seed,
                "best_iteration": out["best_iteration"],
                "seconds": out["seconds"],
            }
            records.add_run(record, on_run)
            bar.update(1)
            if seed is not None and seed != seeds[-1]:
                continue  # more seeds of this fold and set to come
            frame, changed = per_query_frame(per_seed, settings.metric_names, fold.name, fs.name)
            if fs.kind == SetKind.RANKER:
                records.seed_effect[fs.name] |= changed
            records.frames[(fs.name, fold.name)] = frame
            per_seed = []
    return records.result(folds, feature_sets, settings)
