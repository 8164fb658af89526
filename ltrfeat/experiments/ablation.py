"""Feature ablations: folds × feature sets × seeds, paired so every comparison is fair.

An ablation trains one LambdaMART per (fold, feature set, seed) on the fold's train part
(early-stopping on its validation part), scores the fold's test queries and keeps the
per-query metrics. Every feature set sees the same folds and the same seeds, so the
per-query values of two sets are paired observations of the same queries. Single-feature
("alone") sets rank by the raw feature value and need no training.

:func:`summarise` turns the per-query values into means with bootstrap intervals and
paired comparisons of the base set against each base+neural set, pooled over the test
queries of all folds, Holm-adjusted across the whole report.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import re
import time
from pathlib import Path
from typing import ClassVar
from collections.abc import Callable

import numpy as np
import pandas as pd
from tqdm.auto import tqdm

from ltrfeat.core.dataset import FeatureMap, RankingSet
from ltrfeat.core.errors import LtrfeatError, ParameterError
from ltrfeat.core.letor import read_letor
from ltrfeat.core.processes import spawn_pool
from ltrfeat.rankers.lambdamart import ENGINES, LambdaMART
from ltrfeat.core.metrics import GAINS, NO_RELEVANT, TIES, Conventions, evaluate_queries, parse_metrics
from ltrfeat.core.settings import OneOf, Settings
from ltrfeat.rankers import registry
from ltrfeat.rankers.choices import BEST_SINGLE, RECOMMENDED
from ltrfeat.experiments.folds import Fold
from ltrfeat.experiments._run_cache import RunStore, fit_once
from ltrfeat.experiments.fold_contributions import summarise_contributions
from ltrfeat.rankers.selection import (
    Candidates,
    SelectionConfig,
    against_best,
    describe,
    feature_table,
    features_used,
    recommend,
    select,
    with_valid,
)
from ltrfeat.rankers.single import concat, feature_scores
from ltrfeat.experiments.stats import apply_holm, bootstrap_cis, compare_many
from ltrfeat.experiments.verdict import verdict
from ltrfeat.experiments.set_kind import SetKind
from ltrfeat.core.logs import show_progress
from ltrfeat.core.versions import library_versions

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
FOLD_FILES = {"train": ("train",), "valid": ("vali", "valid"), "test": ("test",)}
FOLD_EXTENSIONS = (".letor", ".txt", ".letor.gz", ".txt.gz")
_RESERVED_PARAMS = ("engine", "seed", "features")


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
        reserved = [k for k in _RESERVED_PARAMS if k in (self.ranker_params or {})]
        if reserved:
            raise ParameterError(
                f"ranker_params may not set {reserved[0]!r}",
                fix="the ablation sets engine, seed and features itself",
                param="ranker_params",
            )

    def conventions(self) -> Conventions:
        """The metric conventions (gain, value of queries without a relevant document, ties)."""
        return Conventions(gain=self.gain, no_relevant=self.no_relevant, ties=self.ties)


@dataclasses.dataclass
class FeatureSet:
    """Feature columns (by name) compared in an ablation.

    ``kind`` (a :class:`~ltrfeat.experiments.set_kind.SetKind`, its value accepted) is ``"ranker"`` (LambdaMART on
    these columns, or with model selection the chosen candidate) or ``"alone"`` (one column, documents sorted by its
    raw value). Results of a selection ablation add ``"candidate"`` sets (``SET/CANDIDATE``: every candidate's test
    scores), the ``"baseline"`` set ``best-single`` (the best single feature of all ranker
    columns, chosen per fold on training queries) and the ``"recommended"`` set (per fold the
    feature set and candidate that inner cross-validation prefers). ``offered``: whether model
    selection may recommend a ranker set; one that is not (``base+light``) is measured, tested and
    reported like the others, and its inner cross-validation is kept beside the choice.
    """

    name: str
    columns: list[str]
    kind: SetKind = SetKind.RANKER
    offered: bool = True

    def __post_init__(self) -> None:
        if self.kind not in set(SetKind):
            planned = ", ".join(SetKind.planned())
            raise LtrfeatError(f"feature set {self.name!r} has kind {self.kind!r}", fix=f"use one of {planned}")
        self.kind = SetKind(self.kind)


@dataclasses.dataclass
class AblationResult:
    """What :func:`run_ablation` measured.

    Attributes
    ----------
    feature_sets : the sets, in plan order.
    per_query : one row per (feature set, fold, test query): ``feature_set``, ``fold``, ``qid``,
        ``n_docs``, ``n_relevant`` and one column per metric, averaged over seeds (NaN for
        queries excluded by the no-relevant convention).
    runs : one dict per trained or scored run: ``fold``, ``feature_set``, ``seed`` (None for
        alone sets), ``best_iteration`` (None for alone sets) and ``seconds``.
    importance : per ranker set, each feature's share of the total split gain, averaged over
        folds and seeds (shares sum to 1 per run).
    config : engine, seeds, ranker and engine parameters, metrics, conventions, folds, versions.
    seed_effect : per ranker set, whether any two seeds gave different per-query metrics on
        some fold (False means training was deterministic: more seeds only cost time).
    test_scores : per set and fold, ``{"seeds": [...], "scores": [one float64 array per seed]}``:
        the scores of the fold's test rows, in row order (written as TREC runs by
        :func:`ltrfeat.experiments._fold_runs.write_test_runs`).
    contributions : per set shown in the drill-down (ranker, recommended, baseline and candidate sets) and fold,
        the first seed's model's contribution summaries on the test rows
        (:func:`ltrfeat.experiments.fold_contributions.summarise_contributions`; None for a model without contributions).
    inner_cv : with model selection, per fold and ranker set ``(inner held-out qids, {candidate: per-query
        criterion values})``: what the recommendation was made from
        (:func:`ltrfeat.rankers.selection.recommend` re-makes it for another rule or fewer sets); not in reports.
    """

    feature_sets: list[FeatureSet]
    per_query: pd.DataFrame
    runs: list[dict]
    importance: dict[str, dict[str, float]]
    config: dict
    seed_effect: dict[str, bool] = dataclasses.field(default_factory=dict)
    test_scores: dict[str, dict[str, dict]] = dataclasses.field(default_factory=dict, repr=False)
    inner_cv: dict[str, dict[str, tuple]] = dataclasses.field(default_factory=dict, repr=False)
    contributions: dict[str, dict[str, dict | None]] = dataclasses.field(default_factory=dict, repr=False)

    @property
    def metrics(self) -> list[str]:
        return list(self.config["metrics"])


# -- planning -----------------------------------------------------------------------------
def _names_of(feature_map: FeatureMap, spec, what: str) -> list[str]:
    """Feature names selected by ``spec``, in id order."""
    if spec is None or (isinstance(spec, str) and not spec.strip()):
        raise LtrfeatError(f"{what} is empty", fix="give feature ids, id ranges (1-40) or names")
    try:
        columns = feature_map.resolve(spec)
    except KeyError as exc:
        raise LtrfeatError(
            f"{what} {spec!r}: {exc.args[0]}", fix="use ids, id ranges (1-46) or names present in the data"
        ) from None
    if not columns:
        raise LtrfeatError(f"{what} {spec!r} selects no feature", fix="give feature ids, id ranges or names")
    return [feature_map.features[j].name for j in sorted(columns, key=lambda j: feature_map.features[j].id)]


def plan_feature_sets(
    feature_map: FeatureMap,
    *,
    base,
    neural: dict,
    alone=None,
    base_name: str = "lexical",
    light=(),
    deployable: str | None = None,
    engine_features: Callable | None = None,
    say: Callable[[str], None] | None = None,
) -> list[FeatureSet]:
    """The feature sets of an ablation.

    Parameters
    ----------
    feature_map : the columns available in the folds.
    base : selection of the base (lexical) features: ids, id ranges and names, e.g. ``"1-40"``.
    neural : group name → selection (spec string or list of ids/names) of its neural features.
    alone : extra features to rank by alone, besides every neural feature; default the base
        features whose name starts with ``bm25``. ``"all"`` ranks every feature alone.
    base_name : name of the base set.
    light : the neural groups whose encoders run no transformer per text (cheap to serve).
    deployable : an LTR engine: only the features it computes, as ``engine_features(feature_map, names, what=...)``
        says (``(kept, notice)``: :func:`ltrfeat.export.plugin_features.engine_features` for that engine, given by
        the caller -- experiments sit below export); a group with none is left out, and ``say`` is told what was
        left out, in one line per selection.

    Returns
    -------
    ``base``; ``base+GROUP`` per neural group; ``base+all`` when there is more than one group (all
    ranker sets); ``base+light``, the base and every ``light`` group, when two or more groups are light
    and at least one is not: the richest set served without a transformer, measured beside the others
    but not offered to model selection (one more close set would widen the margin the recommendation
    is held to); then one ``alone`` set per single feature, named after the feature.
    """
    if not neural:
        raise LtrfeatError("no neural feature group given", fix="name at least one group, e.g. clsm=clsm_title_cos")

    def computable(cols: list[str], what: str) -> list[str]:
        if deployable is None:
            return cols
        if engine_features is None:
            raise LtrfeatError(f"deployable={deployable!r} needs engine_features", fix="pass the engine's filter")
        kept, notice = engine_features(feature_map, cols, what=what)
        if notice and say is not None:
            say(notice)
        return kept

    base_cols = computable(_names_of(feature_map, base, "base feature selection"), f"the {base_name} set")
    groups: dict[str, list[str]] = {}
    for group, spec in neural.items():
        if not re.fullmatch(r"[A-Za-z0-9_.\-]+", str(group)):
            raise LtrfeatError(
                f"neural group name {group!r} must be letters, digits, '_', '.' or '-'", fix="e.g. clsm=clsm_title_cos"
            )
        cols = _names_of(feature_map, spec, f"neural group {group!r}")
        overlap = [c for c in cols if c in base_cols]
        if overlap:
            raise LtrfeatError(
                f"neural group {group!r} feature {overlap[0]!r} is also a base feature",
                fix="leave the neural features out of the base selection (e.g. base 1-40, neural 41-46)",
            )
        try:
            groups[str(group)] = computable(cols, f"{base_name}+{group}")
        except LtrfeatError as exc:  # a set no different from the base one
            if say is not None:
                say(f"--deployable {deployable}: set {base_name}+{group} left out: {exc.problem}")
    if not groups:
        raise LtrfeatError(
            f"{deployable} cannot compute any feature of the neural groups {', '.join(map(str, neural))}",
            fix="give an encoder scored by cosine (DeepMatch scores have no engine query), or leave out --deployable",
        )
    sets = [FeatureSet(base_name, base_cols)]
    sets += [FeatureSet(f"{base_name}+{g}", base_cols + cols) for g, cols in groups.items()]
    all_neural = list(dict.fromkeys(c for cols in groups.values() for c in cols))
    if len(groups) > 1:
        union = set(base_cols) | set(all_neural)
        sets.append(FeatureSet(f"{base_name}+all", [f.name for f in feature_map if f.name in union]))
    light = [g for g in groups if g in set(light)]
    if len(light) >= 2 and len(light) < len(groups):
        union = set(base_cols).union(*(groups[g] for g in light))
        sets.append(FeatureSet(f"{base_name}+light", [f.name for f in feature_map if f.name in union], offered=False))
    if alone is None:
        extra = [c for c in base_cols if c.startswith("bm25")]
    else:
        extra = computable(_names_of(feature_map, alone, "--alone selection"), f"--alone {alone!r}")
    sets += [FeatureSet(c, [c], SetKind.ALONE) for c in dict.fromkeys(all_neural + extra)]
    names = [s.name for s in sets]
    duplicate = next((n for n in names if names.count(n) > 1), None)
    if duplicate is not None:
        raise LtrfeatError(
            f"two feature sets would be named {duplicate!r}",
            fix="rename the neural group or the base set so set names stay unique",
        )
    return sets


# -- reading LETOR folds ------------------------------------------------------------------
def _natural_key(path: Path):
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", path.name)]


def _fold_file(directory: Path, part: str) -> Path | None:
    found = [
        directory / f"{stem}{ext}"
        for stem in FOLD_FILES[part]
        for ext in FOLD_EXTENSIONS
        if (directory / f"{stem}{ext}").is_file()
    ]
    if len(found) > 1:
        raise LtrfeatError(
            f"{len(found)} {part} files: {', '.join(p.name for p in found)}",
            path=directory,
            fix="keep one file per part",
        )
    if not found and part != "valid":
        stems = "/".join(FOLD_FILES[part])
        raise LtrfeatError(
            f"no {part} file ({stems} with extension {', '.join(FOLD_EXTENSIONS)})",
            path=directory,
            fix="each fold directory needs train and test files (vali is optional)",
        )
    return found[0] if found else None


def _is_default_map(fmap: FeatureMap) -> bool:
    return all(f.name == f"f{f.id}" for f in fmap)


def _pad(data: RankingSet, fmap: FeatureMap) -> RankingSet:
    """``data`` with the columns of ``fmap``; ids it never saw (sparse files omit zeros) are 0."""
    if data.feature_map == fmap:
        return data
    X = np.zeros((len(data), len(fmap)), dtype=np.float32)
    position = {fid: j for j, fid in enumerate(fmap.ids)}
    X[:, [position[i] for i in data.feature_map.ids]] = data.X
    return dataclasses.replace(data, X=X, feature_map=fmap)


def load_letor_folds(directory, *, fold_glob: str = "Fold*", nan_policy: str = "keep") -> list[Fold]:
    """Read ``DIRECTORY/<fold_glob>/{train,vali,test}.{letor,txt}[.gz]`` into folds.

    Folds are taken in natural order (Fold2 before Fold10); ``vali``/``valid`` is optional.
    Files without a ``.features.json`` sidecar get the union of the ids seen in all files
    (ids a file never shows are zeros); files with sidecars must all name the same features.
    Non-contiguous queries are regrouped with a warning.
    """
    directory = Path(directory)
    if not directory.is_dir():
        raise LtrfeatError("not a directory", path=directory, fix="give the directory holding Fold1, Fold2, ...")
    fold_dirs = sorted((p for p in directory.glob(fold_glob) if p.is_dir()), key=_natural_key)
    if not fold_dirs:
        raise LtrfeatError(
            f"no fold directory matches {fold_glob!r}",
            path=directory,
            fix="lay folds out as DIR/Fold1/{train,vali,test}.txt or pass --fold-glob",
        )
    files = {d.name: {part: _fold_file(d, part) for part in FOLD_FILES} for d in fold_dirs}
    data = {
        name: {
            part: None if path is None else read_letor(path, nan_policy=nan_policy, regroup=True)
            for part, path in parts.items()
        }
        for name, parts in files.items()
    }
    loaded = [(files[n][p], d) for n, parts in data.items() for p, d in parts.items() if d is not None]
    if all(_is_default_map(d.feature_map) for _, d in loaded):
        fmap = FeatureMap.from_ids(sorted({i for _, d in loaded for i in d.feature_map.ids}))
    else:
        first_path, first = loaded[0]
        for path, d in loaded[1:]:
            if d.feature_map != first.feature_map:
                raise LtrfeatError(
                    f"its features ({d.feature_map!r}) differ from those of {first_path} ({first.feature_map!r})",
                    path=path,
                    fix="give every fold file the same columns and .features.json sidecar",
                )
        fmap = first.feature_map
    folds = []
    for name, parts in data.items():
        paths = files[name]
        origin = ", ".join(f"{part}={paths[part]}" for part in FOLD_FILES if paths[part] is not None)
        folds.append(
            Fold(
                name,
                _pad(parts["train"], fmap),
                None if parts["valid"] is None else _pad(parts["valid"], fmap),
                _pad(parts["test"], fmap),
                origin=origin,
            )
        )
    return folds


# -- running ------------------------------------------------------------------------------
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


def _fold_config(fold: Fold) -> dict:
    sizes = {
        part: None
        if getattr(fold, part) is None
        else {"queries": int(getattr(fold, part).n_queries), "rows": len(getattr(fold, part))}
        for part in ("train", "valid", "test")
    }
    return {"name": fold.name, "origin": fold.origin} | sizes


def _run_one(
    fold: Fold,
    fs: FeatureSet,
    seed: int | None,
    *,
    engine: str,
    params: dict,
    metric_names: list,
    conventions: Conventions,
) -> dict:
    """One (fold, feature set, seed) run: per-query metrics of the fold's test queries, plus the
    ranker's best iteration, gain shares, engine parameters and contribution summaries (None for alone sets)."""
    start = time.perf_counter()
    out = {"best_iteration": None, "shares": None, "engine_params": None, "contrib": None}
    if fs.kind == SetKind.RANKER:
        model = LambdaMART(**params, engine=engine, seed=seed, features=fs.columns)
        scores = model.fit(fold.train, fold.valid).predict(fold.test)
        total_gain = sum(model.feature_importance_.values()) or 1.0
        out |= {
            "best_iteration": model.best_iteration_,
            "engine_params": model.engine_params_,
            "shares": {k: v / total_gain for k, v in model.feature_importance_.items()},
            "contrib": summarise_contributions(model, fold.test),
        }
    else:
        scores = feature_scores(fold.test, fold.test.feature_map.column_of(fs.columns[0]))
    out["scores"] = np.asarray(scores, dtype=np.float64)
    out["per_query"] = _evaluate(fold.test, scores, metric_names, conventions)
    out["seconds"] = time.perf_counter() - start
    return out


def _per_query_frame(
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


def _run_selected(
    fold: Fold,
    fs: FeatureSet,
    *,
    seeds: list,
    engine: str,
    params: dict,
    metric_names: list,
    conventions: Conventions,
    selection: SelectionConfig,
) -> dict:
    """Model selection for one (fold, feature set): inner cross-validation on the fold's training
    queries, then every candidate refitted on them (each seed) and scored on the test queries."""
    start = time.perf_counter()
    candidates = Candidates(
        fs.columns,
        params | {"engine": engine},
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
    out = {"candidates": {}, "scores": {}, "runs": [], "shares": None, "engine_params": None, "contrib": {}}
    used_by = {}
    for name in names:
        per_seed, scores, used = [], {"seeds": [], "scores": []}, {}
        # every seed for every candidate: the recommendation may pick any (set, candidate), and every
        # SET/CANDIDATE row then averages the same seeds as the recommended row it is compared with
        seed_free = registry.seed_free(name)
        for seed in seeds[:1] if seed_free else seeds:
            began = time.perf_counter()
            model = candidates.make(name, seed=seed, tuned=None if chosen_by is None else chosen_by["tuned"].get(name))
            candidates.fit(model, train, valid, table)
            predicted = np.asarray(model.predict(fold.test), dtype=np.float64)
            if not scores["seeds"]:  # the drill-down shows the first seed's scores: their contributions
                out["contrib"][name] = summarise_contributions(model, fold.test)
            scores["seeds"].append(None if seed_free else seed)
            scores["scores"].append(predicted)
            per_seed.append(_evaluate(fold.test, predicted, metric_names, conventions))
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


def _plain_runner(engine: str, params: dict, metric_names: list, conventions: Conventions):
    """``run(fold, feature_set, seed)``: one LambdaMART (or single-feature) run without model selection."""
    return functools.partial(
        _run_one,
        engine=engine,
        params=params,
        metric_names=metric_names,
        conventions=conventions,
    )


def _evaluate(test: RankingSet, scores, metric_names: list, conventions: Conventions) -> pd.DataFrame:
    """Per-query test metrics of ``scores`` under ``conventions``."""
    return evaluate_queries(
        test.qid,
        test.label,
        scores,
        metric_names,
        gain=conventions.gain,
        no_relevant=conventions.no_relevant,
        ties=conventions.ties,
        docid=test.docid,
    )


def _run_task(fold: Fold, fs: FeatureSet, *, plain, selected) -> dict:
    return plain(fold, fs, None) if fs.kind == SetKind.ALONE else selected(fold, fs)


def _check_run_args(folds, feature_sets, config: AblationConfig):
    """Validated ``(folds, feature_sets, metric_names, conventions, params)``."""
    folds, feature_sets = list(folds), list(feature_sets)
    metric_names = parse_metrics(config.metrics)
    conventions = config.conventions()
    # many small models: one engine thread each is faster than all cores (thread start-up and
    # contention dominate), and it stays fast on a loaded machine
    params = {"n_jobs": 1} | dict(config.ranker_params or {})
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
    return folds, feature_sets, metric_names, conventions, params


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
    feature_sets : list of :class:`FeatureSet` (see :func:`plan_feature_sets`).
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
    folds, feature_sets, metric_names, conventions, params = _check_run_args(folds, feature_sets, config)
    engine, seeds, selection = config.engine, list(config.seeds), config.selection
    if executor is None and int(jobs) > 1:
        # spawned, not forked (the caller may run torch or engine threads); the workers die with this process
        with spawn_pool(int(jobs)) as pool:
            return run_ablation(
                folds, feature_sets, config, progress=progress, on_run=on_run, executor=pool, cache=cache
            )
    mapper = map if executor is None else executor.map
    if cache is not None:
        cache.settings = {
            "engine": engine,
            "seeds": seeds,
            "params": params,
            "metrics": metric_names,
            "conventions": conventions.to_dict(),
            "selection": None if selection is None else selection.to_dict(),
        }
        mapper = functools.partial(cache.map, mapper)
    else:
        mapper = functools.partial(fit_once, mapper)
    if selection is not None:
        return _run_with_selection(
            folds,
            feature_sets,
            config,
            params=params,
            metric_names=metric_names,
            conventions=conventions,
            progress=progress,
            on_run=on_run,
            mapper=mapper,
        )
    plan = [
        (fold, fs, seed)
        for fold in folds
        for fs in feature_sets
        for seed in (seeds if fs.kind == SetKind.RANKER else [None])
    ]
    run = _plain_runner(engine, params, metric_names, conventions)
    runs: list[dict] = []
    frames: list[pd.DataFrame] = []
    shares: dict[str, list[dict]] = {s.name: [] for s in feature_sets if s.kind == SetKind.RANKER}
    seed_effect = {name: False for name in shares}
    engine_params = None
    per_seed: list[pd.DataFrame] = []
    test_scores: dict[str, dict[str, dict]] = {}
    contrib: dict[str, dict[str, dict | None]] = {}
    with tqdm(total=len(plan), desc="ablation", unit="run", disable=not show_progress(progress), leave=False) as bar:
        results = mapper(run, *zip(*plan))
        for (fold, fs, seed), out in zip(plan, results):
            bar.set_postfix_str(f"{fold.name} {fs.name}" + ("" if seed is None else f" seed {seed}"))
            if fs.kind == SetKind.RANKER:
                shares[fs.name].append(out["shares"])
                if engine_params is None:
                    engine_params = {k: v for k, v in out["engine_params"].items() if k not in ("seed",)}
            per_seed.append(out["per_query"])
            entry = test_scores.setdefault(fs.name, {}).setdefault(fold.name, {"seeds": [], "scores": []})
            entry["seeds"].append(seed)
            entry["scores"].append(out["scores"])
            if fs.kind == SetKind.RANKER and len(entry["seeds"]) == 1:
                contrib.setdefault(fs.name, {})[fold.name] = out["contrib"]
            record = {
                "fold": fold.name,
                "feature_set": fs.name,
                "seed": seed,
                "best_iteration": out["best_iteration"],
                "seconds": out["seconds"],
            }
            runs.append(record)
            if on_run is not None:
                on_run(record)
            bar.update(1)
            if seed is not None and seed != seeds[-1]:
                continue  # more seeds of this fold and set to come
            frame, changed = _per_query_frame(per_seed, metric_names, fold.name, fs.name)
            if fs.kind == SetKind.RANKER:
                seed_effect[fs.name] |= changed
            frames.append(frame)
            per_seed = []
    config = _config(
        folds,
        feature_sets,
        engine=engine,
        seeds=seeds,
        params=params,
        engine_params=engine_params,
        metric_names=metric_names,
        conventions=conventions,
    )
    return AblationResult(
        feature_sets,
        _per_query_table(frames, metric_names),
        runs,
        _importance(shares),
        config,
        seed_effect,
        test_scores,
        contributions=contrib,
    )


def _per_query_table(frames: list[pd.DataFrame], metric_names: list) -> pd.DataFrame:
    per_query = pd.concat(frames, ignore_index=True)
    return per_query[["feature_set", "fold", "qid", "n_docs", "n_relevant"] + metric_names]


def _importance(shares: dict[str, list[dict]]) -> dict[str, dict[str, float]]:
    importance = {}
    for name, dicts in shares.items():
        features = list(dict.fromkeys(k for d in dicts for k in d))
        mean = {k: float(np.mean([d.get(k, 0.0) for d in dicts])) for k in features}
        importance[name] = dict(sorted(mean.items(), key=lambda kv: -kv[1]))
    return importance


def _config(folds, feature_sets, *, engine, seeds, params, engine_params, metric_names, conventions) -> dict:
    defaults = LambdaMART().get_params()
    return {
        "engine": engine,
        "seeds": seeds,
        "ranker_params": {k: v for k, v in (defaults | params).items() if k not in _RESERVED_PARAMS + ("verbose",)},
        "engine_params": engine_params,
        "metrics": metric_names,
        "conventions": conventions.to_dict(),
        "feature_sets": [dataclasses.asdict(s) for s in feature_sets],
        "folds": [_fold_config(f) for f in folds],
        "versions": library_versions("numpy", "pandas", "scipy", "scikit-learn", "matplotlib", engine),
    }


def _run_with_selection(
    folds, feature_sets, config: AblationConfig, *, params, metric_names, conventions, progress, on_run, mapper
) -> AblationResult:
    engine, seeds, selection = config.engine, list(config.seeds), config.selection
    assert selection is not None
    rankers = [s for s in feature_sets if s.kind == SetKind.RANKER]
    union = list(dict.fromkeys(c for s in rankers for c in s.columns))
    baseline = [FeatureSet(BEST_SINGLE, union, SetKind.BASELINE)] if rankers else []
    plan = [
        (fold, fs) for fold in folds for fs in rankers + baseline + [s for s in feature_sets if s.kind == SetKind.ALONE]
    ]
    selected = functools.partial(
        _run_selected,
        seeds=seeds,
        engine=engine,
        params=params,
        metric_names=metric_names,
        conventions=conventions,
        selection=selection,
    )
    run = functools.partial(
        _run_task, plain=_plain_runner(engine, params, metric_names, conventions), selected=selected
    )

    frames: dict[tuple[str, str], pd.DataFrame] = {}
    test_scores: dict[str, dict[str, dict]] = {}
    runs, shares, seed_effect, engine_params = [], {s.name: [] for s in rankers}, {s.name: False for s in rankers}, None
    chosen: dict[str, dict] = {f.name: {} for f in folds}  # fold -> set -> selection summary
    cv: dict[str, dict] = {f.name: {} for f in folds}
    contrib: dict[str, dict[str, dict | None]] = {}
    with tqdm(total=len(plan), desc="ablation", unit="run", disable=not show_progress(progress), leave=False) as bar:
        results = mapper(run, *zip(*plan))
        for (fold, fs), out in zip(plan, results):
            bar.set_postfix_str(f"{fold.name} {fs.name}")
            bar.update(1)
            if fs.kind == SetKind.ALONE:
                frames[(fs.name, fold.name)] = _per_query_frame([out["per_query"]], metric_names, fold.name, fs.name)[0]
                test_scores.setdefault(fs.name, {})[fold.name] = {"seeds": [None], "scores": [out["scores"]]}
                record = {
                    "fold": fold.name,
                    "feature_set": fs.name,
                    "seed": None,
                    "best_iteration": None,
                    "seconds": out["seconds"],
                }
                runs.append(record)
                if on_run is not None:
                    on_run(record)
                continue
            for r in out["runs"]:
                name = fs.name if fs.kind == SetKind.BASELINE else f"{fs.name}/{r['candidate']}"
                record = {
                    "fold": fold.name,
                    "feature_set": name,
                    "seed": r["seed"],
                    "best_iteration": r["best_iteration"],
                    "chose": r["chose"],
                    "seconds": r["seconds"],
                }
                runs.append(record)
                if on_run is not None:
                    on_run(record)
            if fs.kind == SetKind.BASELINE:
                frames[(fs.name, fold.name)] = _per_query_frame(
                    out["candidates"][BEST_SINGLE], metric_names, fold.name, fs.name
                )[0]
                test_scores.setdefault(fs.name, {})[fold.name] = out["scores"][BEST_SINGLE]
                contrib.setdefault(fs.name, {})[fold.name] = out["contrib"].get(BEST_SINGLE)
                continue
            for name, per_seed in out["candidates"].items():
                frames[(f"{fs.name}/{name}", fold.name)] = _per_query_frame(
                    per_seed, metric_names, fold.name, f"{fs.name}/{name}"
                )[0]
                test_scores.setdefault(f"{fs.name}/{name}", {})[fold.name] = out["scores"][name]
                contrib.setdefault(f"{fs.name}/{name}", {})[fold.name] = out["contrib"].get(name)
            pick = out["selection"]["chosen"]
            test_scores.setdefault(fs.name, {})[fold.name] = out["scores"][pick]
            contrib.setdefault(fs.name, {})[fold.name] = out["contrib"].get(pick)
            frames[(fs.name, fold.name)] = _per_query_frame(out["candidates"][pick], metric_names, fold.name, fs.name)[
                0
            ]
            # whether seeds matter is a property of the engine's training (subsampling), not of the choice
            probe = engine if engine in out["candidates"] else pick
            seed_effect[fs.name] |= _per_query_frame(out["candidates"][probe], metric_names, fold.name, fs.name)[1]
            chosen[fold.name][fs.name] = out["selection"]
            cv[fold.name][fs.name] = out["cv"]
            if out["shares"] is not None:
                shares[fs.name].append(out["shares"])
                engine_params = engine_params or {k: v for k, v in out["engine_params"].items() if k != "seed"}
    recommended = {}
    for fold in folds:
        qids = next(iter(cv[fold.name].values()))[0]
        values = {name: v for name, (q, v) in cv[fold.name].items() if np.array_equal(q, qids)}
        offered = [s.name for s in rankers if s.offered]
        used = {n: chosen[fold.name][n]["used"] for n in offered if n in values}
        rec = recommend({n: v for n, v in values.items() if n in offered}, selection.rule, offered, used=used)
        aside = {n: v for n, v in values.items() if n not in offered}
        if aside:
            rec["aside"] = against_best(values, rec, aside, selection.rule)
        best, pick = rec["feature_set"], rec["candidate"]
        recommended[fold.name] = rec | {"tuned": chosen[fold.name][best]["tuned"].get(pick)}
        source = f"{best}/{pick}"  # every candidate row holds every seed
        frame = frames[(source, fold.name)].copy()
        frame["feature_set"] = RECOMMENDED
        frames[(RECOMMENDED, fold.name)] = frame
        test_scores.setdefault(RECOMMENDED, {})[fold.name] = test_scores[source][fold.name]
        contrib.setdefault(RECOMMENDED, {})[fold.name] = contrib[source][fold.name]
    result_sets = list(rankers)
    if rankers:
        result_sets += [FeatureSet(RECOMMENDED, union, SetKind.RECOMMENDED), *baseline]
    result_sets += [s for s in feature_sets if s.kind == SetKind.ALONE]
    result_sets += [
        FeatureSet(f"{s.name}/{c}", s.columns, SetKind.CANDIDATE) for s in rankers for c in selection.candidates
    ]
    ordered = [frames[(s.name, f.name)] for s in result_sets for f in folds]
    config = _config(
        folds,
        feature_sets,
        engine=engine,
        seeds=seeds,
        params=params,
        engine_params=engine_params,
        metric_names=metric_names,
        conventions=conventions,
    )
    config["selection"] = selection.to_dict() | {"chosen": chosen, "recommended": recommended}
    return AblationResult(
        result_sets,
        _per_query_table(ordered, metric_names),
        runs,
        _importance(shares),
        config,
        seed_effect,
        test_scores,
        cv,
        contrib,
    )


# -- statistics ---------------------------------------------------------------------------
_ID_COLUMNS = ("feature_set", "fold", "qid", "n_docs", "n_relevant")  # per_query's columns besides the metrics


def _comparisons(per_query: pd.DataFrame, groups, *, seed: int, n_resamples: int) -> list[dict]:
    """Paired statistics of each ``(baseline, variant)`` pair on each metric of its group (``groups``:
    ``(pairs, metrics)`` tuples) over the queries both have (pooled over folds by (fold, qid), NaN left
    out), Holm-adjusted across all of them."""
    comparisons = []
    tasks = [(metric, pair) for pairs, metrics in groups for metric in metrics for pair in pairs]
    for metric in dict.fromkeys(m for m, _ in tasks):
        wide = per_query.pivot(index=["fold", "qid"], columns="feature_set", values=metric)
        known = wide.notna().to_numpy()
        position = {name: i for i, name in enumerate(wide.columns)}
        # comparisons over the same queries share their resamples (compare_many): grouped by that query set
        batches: dict[bytes, tuple[np.ndarray, list[tuple[str, str]]]] = {}
        for baseline, variant in (pair for m, pair in tasks if m == metric):
            both = known[:, position[baseline]] & known[:, position[variant]]
            if both.any():
                batches.setdefault(both.tobytes(), (both, []))[1].append((baseline, variant))
        for both, pairs in batches.values():
            a = wide.loc[both, [b for b, _ in pairs]].to_numpy()
            b = wide.loc[both, [v for _, v in pairs]].to_numpy()
            for (baseline, variant), stats, base_values, variant_values in zip(
                pairs, compare_many(a, b, seed=seed, n_resamples=n_resamples), a.T, b.T
            ):
                comparisons.append(
                    {
                        "baseline": baseline,
                        "variant": variant,
                        "metric": metric,
                        "base_mean": float(base_values.mean()),
                        "variant_mean": float(variant_values.mean()),
                        "delta": stats["delta"],
                        "ci95_delta": list(stats["ci95_delta"]),
                        "relative": stats["relative"],
                        "p_ttest": stats["p_ttest"],
                        "p_randomization": stats["p_randomization"],
                        "wins": stats["wins"],
                        "ties": stats["ties"],
                        "losses": stats["losses"],
                        "n_queries": stats["n_queries"],
                    }
                )
    if comparisons:
        apply_holm(comparisons)
    return comparisons


def read_per_query(path) -> pd.DataFrame:
    """An ablation report's ``per_query.tsv`` (ids as text, metrics as floats), checked."""
    path = Path(path)
    fix = "give the directory an ablation wrote with --report"
    if not path.is_file():
        raise LtrfeatError("no per-query table here", path=path, fix=fix)
    try:
        table = pd.read_csv(
            path,
            sep="\t",
            dtype={"feature_set": str, "fold": str, "qid": str},
            keep_default_na=False,
            na_values=["NaN"],
        )
    except (ValueError, UnicodeDecodeError, pd.errors.ParserError) as exc:
        raise LtrfeatError(f"not a per-query table ({' '.join(str(exc).split())[:200]})", path=path, fix=fix) from None
    missing = [c for c in _ID_COLUMNS if c not in table.columns]
    metrics = [c for c in table.columns if c not in _ID_COLUMNS]
    if missing or not metrics:
        raise LtrfeatError(
            f"not a per-query table: missing columns {', '.join(missing) or 'of metrics'}", path=path, fix=fix
        )
    for metric in metrics:
        values = pd.to_numeric(table[metric], errors="coerce")
        bad = values.isna() & table[metric].notna()  # "NaN" (an excluded query) was read as missing already
        if bad.any():
            row = int(np.flatnonzero(bad.to_numpy())[0])
            raise LtrfeatError(
                f"{metric} is {table[metric].iloc[row]!r}, not a number", path=path, line=row + 2, fix=fix
            )
        table[metric] = values.astype(np.float64)
    return table


def check_per_query_counts(per_query: pd.DataFrame, report_dir) -> None:
    """Compare the table's query counts with those ``report.json`` recorded (per set and metric): a
    ``per_query.tsv`` cut short (say, at a line boundary) is an error naming both counts, not a
    comparison of the queries that happen to remain. A report without ``report.json`` is not checked."""
    report_path = Path(report_dir) / "report.json"
    try:
        recorded = json.loads(report_path.read_text(encoding="utf-8")).get("results") or []
    except (OSError, ValueError, AttributeError):
        return
    table = Path(report_dir) / "per_query.tsv"
    groups = dict(tuple(per_query.groupby("feature_set", sort=False)))
    for entry in recorded:
        if not isinstance(entry, dict) or entry.get("metric") not in per_query.columns:
            continue
        rows = groups.get(entry.get("feature_set"))
        found = 0 if rows is None else int(np.isfinite(rows[entry["metric"]].to_numpy(dtype=np.float64)).sum())
        if found != entry.get("n_queries"):
            raise LtrfeatError(
                f"holds {found} queries of feature set {entry.get('feature_set')!r} for {entry['metric']}, "
                f"but report.json records {entry.get('n_queries')}: the table is truncated or edited",
                path=table,
                fix="restore per_query.tsv from the ablation's report (or re-run the ablation)",
            )


def head_to_head(per_query: pd.DataFrame, pairs, metrics, *, seed: int = 0, n_resamples: int = 10_000) -> list[dict]:
    """Paired comparisons of chosen feature sets, e.g. ``[("lexical+sbert", "lexical+sbert-ft")]``, from an
    ablation's per-query table (``per_query.tsv``): the same statistics as :func:`summarise`, Holm-adjusted
    across the given pairs and metrics only."""
    available = sorted(set(per_query["feature_set"]))
    for name in {n for pair in pairs for n in pair}:
        if name not in available:
            raise LtrfeatError(
                f"feature set {name!r} is not in this ablation", fix=f"use one of {', '.join(available)}"
            )
    for metric in metrics:
        if metric not in per_query.columns:
            raise LtrfeatError(
                f"metric {metric!r} was not computed in this ablation",
                fix=f"use one of {', '.join(c for c in per_query.columns if c not in _ID_COLUMNS)}",
            )
    return _comparisons(per_query, [(pairs, metrics)], seed=seed, n_resamples=n_resamples)


def _rows_by_set(per_query: pd.DataFrame, names: list[str]) -> list[pd.DataFrame]:
    groups = dict(tuple(per_query.groupby("feature_set", sort=False)))
    return [groups.get(name, per_query.iloc[:0]) for name in names]


MINILM = "sbert"  # the zero-shot MiniLM encoder's group name, the reference every other neural feature meets


def minilm_pairs(feature_sets, baseline: str | None) -> list[tuple[str, str]]:
    """``(MiniLM set, other set)`` pairs: the zero-shot MiniLM feature against every other neural feature,
    alone and added to the base set, when the ablation has it (``sbert``); else none."""
    sets = {s.name: s for s in feature_sets}
    if baseline is None or baseline not in sets:
        return []
    base = set(sets[baseline].columns)
    single = {  # base + one neural column -> that column
        s.name: extra[0]
        for s in feature_sets
        if s.kind == SetKind.RANKER and len(extra := [c for c in s.columns if c not in base]) == 1
    }
    neural = set(single.values())
    reference = [c for c in neural if c.startswith(f"{MINILM}_")]
    if len(reference) != 1:
        return []
    ref_ranker = next(name for name, c in single.items() if c == reference[0])
    alone = {s.columns[0]: s.name for s in feature_sets if s.kind == SetKind.ALONE and s.columns[0] in neural}
    pairs = [(ref_ranker, name) for name, c in single.items() if c != reference[0]]
    if reference[0] in alone:
        pairs += [(alone[reference[0]], alone[c]) for c in single.values() if c != reference[0] and c in alone]
    return pairs


def summarise(result: AblationResult, *, baseline: str | None = None, seed: int = 0, n_resamples: int = 10_000) -> dict:
    """Means with bootstrap intervals per set and metric, and paired comparisons.

    Parameters
    ----------
    result : an :class:`AblationResult`.
    baseline : the ranker set every other ranker set is compared against; default the first
        (no comparisons when there is no ranker set).
    seed : seed of the bootstrap and randomisation resampling.
    n_resamples : bootstrap and randomisation resamples.

    Returns
    -------
    ``{"baseline", "statistics", "results": [...], "comparisons": [...]}``; a result holds
    ``feature_set, kind, metric, mean, ci95, n_queries``; a comparison holds ``baseline,
    variant, metric, base_mean, variant_mean, delta, ci95_delta, relative, p_ttest,
    p_randomization, p_holm, wins, ties, losses, n_queries``. Queries are pooled over all
    folds (identified by fold and qid); NaN (excluded) queries are left out; ``p_holm``
    adjusts ``p_randomization`` across all comparisons.
    """
    rankers = [s.name for s in result.feature_sets if s.kind == SetKind.RANKER]
    if baseline is None:
        baseline = rankers[0] if rankers else None
    elif baseline not in rankers:
        raise LtrfeatError(
            f"baseline {baseline!r} is not a ranker set of this ablation", fix=f"use one of {', '.join(rankers)}"
        )
    per_query = result.per_query
    results = []
    drawn: dict[int, list[tuple[int, np.ndarray]]] = {}  # intervals of equally many queries share their draws
    for fs, rows in zip(result.feature_sets, _rows_by_set(per_query, [s.name for s in result.feature_sets])):
        for metric in result.metrics:
            values = rows[metric].to_numpy(dtype=np.float64)
            values = values[np.isfinite(values)]
            # candidates' intervals would cost a bootstrap each and are not shown: means only
            if len(values) and fs.kind != SetKind.CANDIDATE:
                drawn.setdefault(len(values), []).append((len(results), values))
            results.append(
                {
                    "feature_set": fs.name,
                    "kind": fs.kind,
                    "metric": metric,
                    "mean": float(values.mean()) if len(values) else float("nan"),
                    "ci95": [float("nan"), float("nan")],
                    "n_queries": int(len(values)),
                }
            )
    for same_size in drawn.values():
        columns = np.stack([values for _, values in same_size], axis=1)
        for (i, _), (lo, hi) in zip(same_size, bootstrap_cis(columns, seed=seed, n_resamples=n_resamples)):
            results[i]["ci95"] = [float(lo), float(hi)]
    groups = [
        ([(baseline, variant) for variant in rankers if baseline is not None and variant != baseline], result.metrics)
    ]
    headline = result.metrics[:3]
    if "selection" in result.config:
        headline = [m for m in result.config["selection"]["criterion"] if m in result.metrics] or headline
    against_minilm = minilm_pairs(result.feature_sets, baseline)
    if against_minilm:
        groups.append((against_minilm, headline))
    if "selection" in result.config and rankers:
        untuned = f"{baseline}/{result.config['engine']}"
        bm25 = [s.name for s in result.feature_sets if s.kind == SetKind.ALONE and s.name.startswith("bm25")]
        groups.append(
            (
                [(BEST_SINGLE, name) for name in rankers]
                + [(BEST_SINGLE, RECOMMENDED)]
                + ([(untuned, RECOMMENDED)] if untuned in set(per_query["feature_set"]) else [])
                + [(name, RECOMMENDED) for name in bm25],
                headline,
            )
        )
    comparisons = _comparisons(per_query, groups, seed=seed, n_resamples=n_resamples)
    statistics = {
        "pooling": "test queries of all folds pooled, identified by (fold, qid); per-query values averaged over seeds",
        "marks_test": "paired randomisation (sign-flip) test, two-sided, Holm-adjusted across all comparisons",
        "marks": {"*": 0.05, "**": 0.01},
        "also_reported": "paired t-test p-values (unadjusted), per-query wins/ties/losses",
        "bootstrap": {"method": "percentile", "level": 0.95, "n_resamples": n_resamples, "seed": seed},
        "randomization": {"n_resamples": n_resamples, "seed": seed, "exact_up_to_queries": 16},
    }
    summary = {"baseline": baseline, "statistics": statistics, "results": results, "comparisons": comparisons}
    summary["verdict"] = verdict(result, summary)
    return summary
