"""What an ablation measured (:class:`AblationResult`), and how its runs' records become one: the per-query table,
the mean importances and the ``config`` record of the run."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd

from ltrfeat.core.versions import library_versions
from ltrfeat.experiments._ablation_runs import RunSettings
from ltrfeat.experiments.feature_sets import FeatureSet
from ltrfeat.experiments.folds import Fold
from ltrfeat.rankers.lambdamart import LambdaMART

RESERVED_PARAMS = ("engine", "seed", "features")  # ranker parameters the ablation sets itself


@dataclasses.dataclass
class AblationResult:
    """What :func:`~ltrfeat.experiments.ablation.run_ablation` measured.

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


@dataclasses.dataclass
class RunRecords:
    """What an ablation's runs gave, gathered as they finish and then made an :class:`AblationResult`: the run
    records, per-query tables by (set, fold), and per ranker set its runs' gain shares and whether seeds mattered."""

    rankers: dataclasses.InitVar[list[str]]
    runs: list[dict] = dataclasses.field(default_factory=list)
    frames: dict[tuple[str, str], pd.DataFrame] = dataclasses.field(default_factory=dict)
    shares: dict[str, list[dict]] = dataclasses.field(default_factory=dict)
    seed_effect: dict[str, bool] = dataclasses.field(default_factory=dict)
    engine_params: dict | None = None
    test_scores: dict[str, dict[str, dict]] = dataclasses.field(default_factory=dict)
    contributions: dict[str, dict[str, dict | None]] = dataclasses.field(default_factory=dict)
    inner_cv: dict[str, dict[str, tuple]] = dataclasses.field(default_factory=dict)

    def __post_init__(self, rankers: list[str]) -> None:
        self.shares = {name: [] for name in rankers}
        self.seed_effect = {name: False for name in rankers}

    def add_run(self, record: dict, on_run) -> None:
        """Keep a run's ``record`` and tell ``on_run`` (when given)."""
        self.runs.append(record)
        if on_run is not None:
            on_run(record)

    def add_shares(self, name: str, shares: dict, engine_params: dict) -> None:
        """Keep a ranker run's gain shares; the first run's engine parameters (its seed aside) stand for all."""
        self.shares[name].append(shares)
        if self.engine_params is None:
            self.engine_params = {k: v for k, v in engine_params.items() if k != "seed"}

    def result(
        self, folds: list[Fold], feature_sets: list[FeatureSet], settings: RunSettings, result_sets=None
    ) -> AblationResult:
        """The :class:`AblationResult` of runs over ``folds`` of the planned ``feature_sets``; ``result_sets``: the
        sets measured, in result order (None: the planned ones, their tables in the order they came)."""
        if result_sets is None:
            frames = list(self.frames.values())
        else:
            frames = [self.frames[(s.name, f.name)] for s in result_sets for f in folds]
        per_query = pd.concat(frames, ignore_index=True)
        return AblationResult(
            feature_sets if result_sets is None else result_sets,
            per_query[["feature_set", "fold", "qid", "n_docs", "n_relevant"] + settings.metric_names],
            self.runs,
            _importance(self.shares),
            _config(folds, feature_sets, settings, self.engine_params),
            self.seed_effect,
            self.test_scores,
            self.inner_cv,
            self.contributions,
        )


def _importance(shares: dict[str, list[dict]]) -> dict[str, dict[str, float]]:
    importance = {}
    for name, dicts in shares.items():
        features = list(dict.fromkeys(k for d in dicts for k in d))
        mean = {k: float(np.mean([d.get(k, 0.0) for d in dicts])) for k in features}
        importance[name] = dict(sorted(mean.items(), key=lambda kv: -kv[1]))
    return importance


def _config(folds: list[Fold], feature_sets: list[FeatureSet], settings: RunSettings, engine_params) -> dict:
    defaults = LambdaMART().get_params()
    return {
        "engine": settings.engine,
        "seeds": list(settings.seeds),
        "ranker_params": {
            k: v for k, v in (defaults | settings.params).items() if k not in RESERVED_PARAMS + ("verbose",)
        },
        "engine_params": engine_params,
        "metrics": settings.metric_names,
        "conventions": settings.conventions.to_dict(),
        "feature_sets": [dataclasses.asdict(s) for s in feature_sets],
        "folds": [_fold_config(f) for f in folds],
        "versions": library_versions("numpy", "pandas", "scipy", "scikit-learn", "matplotlib", settings.engine),
    }


def _fold_config(fold: Fold) -> dict:
    sizes = {
        part: None
        if getattr(fold, part) is None
        else {"queries": int(getattr(fold, part).n_queries), "rows": len(getattr(fold, part))}
        for part in ("train", "valid", "test")
    }
    return {"name": fold.name, "origin": fold.origin} | sizes
