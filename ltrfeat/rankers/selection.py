"""Model selection that survives small data: candidates scored by inner cross-validation over
the training queries only, and a rule that prefers the simpler candidate when the data cannot
tell them apart.

Candidates (the kinds of :mod:`ltrfeat.rankers.registry`): LambdaMART with defaults (``lightgbm``, ``xgboost``), the same
with hyperparameters searched (``lightgbm-tuned``, ``xgboost-tuned``: a fixed grid or Optuna's
TPE sampler), a pairwise linear ranker (``linear``), LambdaMART boosted from the best single
feature (``boost-best``) and the best single feature itself (``best-single``).

Protocol. The training queries (a fold's train and validation parts together) are cut into
``inner_folds`` query folds. For each inner fold every candidate is fitted exactly as it will be
fitted at the end — trees early-stop on a ``valid_fraction`` share of the remaining queries — and
scored on the held-out inner fold by the per-query mean of the ``criterion`` metrics. Every
candidate sees the same splits (paired), every feature set the same candidates and trial budget.
The test queries are never read. Rule ``one-se``: among the candidates whose mean is within one
standard error (of the paired per-query difference) of the best, take the simplest; rule
``joint``: the same with a margin that grows with the effective number of distinct close candidates (Holm's
step-down, :func:`choose`), and an ablation's recommendation made once among all feature set × candidate
configurations (:func:`recommend`); rule ``tiered`` (the default): each feature set's candidate by ``one-se``,
then among the sets' picks within the growing margin, and every simpler candidate of theirs within the same margin,
the least complex by the model it fits (ranker kind, then the features it uses: a single feature is one feature
whichever set offered it); rule ``best``: the highest mean. The tuned candidates' scores are the best of their trials, so they are optimistic; the one-SE rule
and the test scores of every candidate in the report keep that visible.
"""

from __future__ import annotations

import dataclasses
import functools
from numbers import Integral, Real
from typing import ClassVar

import numpy as np
import pandas as pd
from scipy.stats import norm

from ltrfeat.core.dataset import RankingSet
from ltrfeat.core.errors import LtrfeatError, ParameterError
from ltrfeat.core.metrics import parse_metrics
from ltrfeat.core.settings import SEED, Interval, OneOf, Settings, check_value
from ltrfeat.core.splits import cut_queries, even_sizes, holdout
from ltrfeat.rankers import registry
from ltrfeat.rankers.choices import ENGINES, OTHER_CANDIDATES, RULES, SELECTION_DEFAULTS, TUNE_METHODS
from ltrfeat.rankers.single import DEFAULT_CRITERION, concat, criterion_per_query, rank_single_features_as


# Hand-picked configurations (LightGBM names) from small data (few leaves, many rows per leaf, strong
# shrinkage) to big; XGBoost gets the same ones translated by _for_engine.
GRID = [
    {"num_leaves": 3, "min_data_in_leaf": 50, "learning_rate": 0.1},
    {"num_leaves": 7, "min_data_in_leaf": 20, "learning_rate": 0.05},
    {"num_leaves": 15, "min_data_in_leaf": 100, "learning_rate": 0.05, "lambda_l2": 10.0},
    {"num_leaves": 31, "min_data_in_leaf": 200, "learning_rate": 0.02, "feature_fraction": 0.7},
    {"num_leaves": 63, "min_data_in_leaf": 50, "learning_rate": 0.05, "lambda_l2": 1.0},
    {"num_leaves": 127, "min_data_in_leaf": 10, "learning_rate": 0.03, "feature_fraction": 0.8},
    {"num_leaves": 255, "min_data_in_leaf": 5, "learning_rate": 0.1, "lambda_l1": 1.0},
    {"num_leaves": 7, "min_data_in_leaf": 1, "learning_rate": 0.1, "lambda_l2": 100.0},
]
_XGBOOST_NAMES = {
    "num_leaves": "max_leaves",
    "learning_rate": "eta",
    "lambda_l1": "alpha",
    "lambda_l2": "lambda",
    "feature_fraction": "colsample_bytree",
    "bagging_fraction": "subsample",
}
# rank:ndcg hessians are small (about 0.01-0.25 per row), so a leaf's row minimum becomes a hessian minimum
_HESSIAN_PER_ROW = 0.05


def _for_engine(params: dict, engine: str) -> dict:
    """LightGBM-named parameters in ``engine``'s names (XGBoost: max_leaves, eta, min_child_weight, ...)."""
    if engine == "lightgbm":
        return dict(params)
    out = {_XGBOOST_NAMES[k]: v for k, v in params.items() if k in _XGBOOST_NAMES}
    if "min_data_in_leaf" in params:
        out["min_child_weight"] = params["min_data_in_leaf"] * _HESSIAN_PER_ROW
    return out


def _optuna_space(trial, engine: str) -> dict:
    """The Optuna search space (LightGBM names, translated for XGBoost): small data (3 leaves, 200 rows
    per leaf) to big (255 leaves, 1 row)."""
    params = {
        "num_leaves": trial.suggest_int("num_leaves", 3, 255, log=True),
        "min_data_in_leaf": trial.suggest_int("min_data_in_leaf", 1, 200, log=True),
        "learning_rate": trial.suggest_float("learning_rate", 0.01, 0.3, log=True),
        "lambda_l1": trial.suggest_float("lambda_l1", 1e-8, 10.0, log=True),
        "lambda_l2": trial.suggest_float("lambda_l2", 1e-8, 10.0, log=True),
        "feature_fraction": trial.suggest_float("feature_fraction", 0.5, 1.0),
        "bagging_fraction": trial.suggest_float("bagging_fraction", 0.5, 1.0),
    }
    return _for_engine(params, engine) | ({"bagging_freq": 1} if engine == "lightgbm" else {})


@dataclasses.dataclass(frozen=True)
class SelectionConfig(Settings):
    """How rankers are chosen (validated on creation; see the module docstring).

    candidates : registered ranker kinds (:func:`ltrfeat.rankers.registry.names`); tuned ones need
        ``tune`` != ``"none"``.
    tune : ``none``, ``grid`` (:data:`GRID`) or ``optuna`` (TPE, ``tune_trials`` trials).
    inner_folds : query folds of the inner cross-validation (>= 2).
    valid_fraction : share of an inner training part held out for the trees' early stopping
        (and of a fold's training queries, when the fold has no validation part).
    criterion : metrics whose per-query mean is compared.
    rule : ``tiered`` (default), ``joint``, ``one-se`` or ``best`` (see :func:`choose` and :func:`recommend`).
    seed : seed of the inner splits, the tuning sampler and the selection fits.
    """

    label: ClassVar[str] = "model selection"
    _parameter_constraints: ClassVar[dict] = {
        "tune": [OneOf(*TUNE_METHODS)],
        "tune_trials": [Interval(Integral, 1, None)],
        "inner_folds": [Interval(Integral, 2, None)],
        "valid_fraction": [Interval(Real, 0, 1, closed="neither")],
        "rule": [OneOf(*RULES)],
        "seed": [SEED],
    }

    candidates: tuple[str, ...] = (ENGINES[0], *OTHER_CANDIDATES)
    tune: str = SELECTION_DEFAULTS["tune"]
    tune_trials: int = SELECTION_DEFAULTS["tune_trials"]
    inner_folds: int = SELECTION_DEFAULTS["inner_folds"]
    valid_fraction: float = SELECTION_DEFAULTS["valid_fraction"]
    criterion: tuple[str, ...] = DEFAULT_CRITERION
    rule: str = SELECTION_DEFAULTS["rule"]
    seed: int = SELECTION_DEFAULTS["seed"]

    def __post_init__(self):
        self._set("candidates", tuple(dict.fromkeys(self.candidates)))
        self._set("criterion", tuple(parse_metrics(self.criterion)))
        super().__post_init__()

    def _check(self) -> None:
        unknown = [c for c in self.candidates if c not in registry.names()]
        if unknown or not self.candidates:
            raise ParameterError(
                f"unknown candidate {unknown[0]!r}" if unknown else "no candidate given",
                fix=f"choose from {', '.join(registry.names())}",
                param="candidates",
            )
        tuned = [c for c in self.candidates if registry.get(c).tunes]
        if tuned and self.tune == "none":
            raise ParameterError(
                f"candidate {tuned[0]!r} needs a search", fix="pass --tune grid or --tune optuna", param="tune"
            )

    @classmethod
    def default(cls, engine: str = "lightgbm", *, tune: str = "none", **kwargs) -> "SelectionConfig":
        """The default candidates for ``engine``, plus its tuned variant when ``tune`` is not ``none``."""
        check_value("engine", engine, [OneOf(*ENGINES)])
        candidates = [engine] + ([f"{engine}-tuned"] if tune != "none" else []) + list(OTHER_CANDIDATES)
        return cls(candidates=tuple(candidates), tune=tune, **kwargs)

    def deployable(self, target: str) -> "SelectionConfig":
        """These settings with only the candidates the LTR engine ``target`` can run."""
        kept = tuple(c for c in self.candidates if c in registry.deployable(target))
        if not kept:
            raise LtrfeatError(
                f"none of the candidates {', '.join(self.candidates)} can run in {target}",
                fix=f"add one of {', '.join(registry.deployable(target))} to --candidates",
            )
        return dataclasses.replace(self, candidates=kept)


def holdout_queries(qids, fraction: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(kept, held out): a seeded share ``fraction`` of the distinct ``qids`` held out (at least one
    query each side when there are two or more)."""
    kept, held = holdout(np.asarray(qids, dtype=object), fraction, seed, both_sides=True)
    return np.sort(kept), np.sort(held)


def with_valid(train: RankingSet, valid: RankingSet | None, fraction: float, seed: int):
    """``(train, valid)``; without a validation part, a seeded share of the training queries becomes one."""
    if valid is not None:
        return train, valid
    kept, held = holdout_queries(train.queries(), fraction, seed)
    return train.subset_queries(kept), (train.subset_queries(held) if len(held) else None)


def inner_splits(pool: RankingSet, config: SelectionConfig) -> list[tuple[RankingSet, RankingSet, RankingSet]]:
    """``(fit, early_stop, held_out)`` parts of the pool for each inner fold (seeded, by query)."""
    queries = pool.queries()
    if len(queries) < 2 * config.inner_folds:
        raise LtrfeatError(
            f"{len(queries)} training queries are too few for {config.inner_folds} inner folds",
            fix="lower --inner-folds, or pass --no-select",
        )
    folds = cut_queries(np.arange(len(queries)), even_sizes(len(queries), config.inner_folds), config.seed)
    out = []
    for i, held in enumerate(folds):
        rest = queries[np.sort(np.concatenate([f for j, f in enumerate(folds) if j != i]))]
        fit_q, stop_q = holdout_queries(rest, config.valid_fraction, config.seed + 1 + i)
        out.append(
            (pool.subset_queries(fit_q), pool.subset_queries(stop_q), pool.subset_queries(queries[np.sort(held)]))
        )
    return out


@dataclasses.dataclass
class Candidates:
    """Builds every candidate for one feature set (its columns), with shared settings."""

    columns: list[str]
    ranker_params: dict
    gain: str = "exp2"
    no_relevant: str = "exclude"
    ties: str = "expected"
    criterion: tuple[str, ...] = DEFAULT_CRITERION

    def make(self, name: str, *, seed: int, tuned: dict | None = None):
        """An unfitted candidate of kind ``name`` (``tuned``: the engine parameters found for a tuned kind)."""
        return registry.get(name).make(self, seed=seed, tuned=tuned)

    def fit(self, model, train: RankingSet, valid: RankingSet | None, table: pd.DataFrame | None):
        """Fit ``model``; kinds that take one (``feature_table``) reuse a precomputed criterion ``table``."""
        if table is not None and registry.kind_of(model).feature_table:
            qids = concat(train, valid).queries()
            return model.fit(train, valid, table=table.loc[qids])
        return model.fit(train, valid)

    def per_query(self, data: RankingSet, scores: np.ndarray) -> np.ndarray:
        return criterion_per_query(
            data, scores, self.criterion, gain=self.gain, no_relevant=self.no_relevant, ties=self.ties
        )


def describe(model) -> dict:
    """What a fitted candidate chose (best iteration, feature, weights), for reports."""
    return model.describe()


def features_used(model) -> tuple[str, ...]:
    """The features a fitted model uses (``features_used_``: a single feature, a linear ranker's non-zero weights,
    the features trees split on); every feature it reads for a kind that does not say."""
    used = getattr(model, "features_used_", None)
    return tuple(model.feature_map_.names) if used is None else tuple(used)


# one-sided tail of one standard error: the chance that the one-SE rule keeps a simpler candidate that is
# truly worse by its gap; rule "joint" spends it over the candidates it compares (Holm's step-down)
_ONE_SE_TAIL = float(norm.sf(1.0))


def effective_count(diffs: np.ndarray) -> float:
    """How many independent comparisons the columns of ``diffs`` (per-query paired differences to the best, one
    column per configuration) are worth: Galwey (Genet. Epidemiol. 2009), ``M_eff = (sum_i sqrt(l_i))^2 / sum_i l_i``
    over the non-negative eigenvalues ``l_i`` of the columns' correlation matrix -- M for M independent columns,
    1 for copies, ``1 + sqrt(1 - r^2)`` for two columns correlated by ``r`` (a nested feature set whose model
    barely differs counts little more than once). A column without variance counts once when non-zero (a
    certain difference) and not at all when zero (a copy of the best)."""
    diffs = np.asarray(diffs, dtype=np.float64).reshape(len(diffs), -1)
    spread = diffs.std(axis=0) > 1e-12 * np.maximum(1.0, np.abs(diffs).max(axis=0))
    constant = float(np.count_nonzero(np.any(diffs[:, ~spread] != 0, axis=0)))
    if spread.sum() < 2:
        return constant + float(spread.sum())
    eigen = np.clip(np.linalg.eigvalsh(np.corrcoef(diffs[:, spread], rowvar=False)), 0.0, None)
    return constant + float(np.sqrt(eigen).sum() ** 2 / eigen.sum())


def _retained(found: dict, best: str, rule: str, diffs: dict | None = None) -> tuple[set, float]:
    """The names ``rule`` cannot tell from ``best`` and the margin (in standard errors) they were held to.

    ``joint``: Holm's step-down over the one-sided tests "worse than the best" at the one-SE tail level:
    the candidate furthest below the best (in SEs) must be more than ``z(k)`` SEs below, ``k`` the
    :func:`effective_count` of the candidates still compared (``diffs``: name -> per-query difference to the
    best), ``z(k) = norm.isf(tail / k)`` (1 for one candidate, 2.0 for 7 independent ones, 2.5 for 23); each
    rejected one leaves the others a smaller ``k``. A clearly worse candidate is rejected first and does not
    raise the margin of the others; many close, distinct ones do; copies and near-copies count about once."""
    if rule in ("best", "one-se", "tiered"):
        z = 0.0 if rule == "best" else 1.0
        return {n for n, st in found.items() if st["gap_to_best"] <= z * st["se"]}, z

    def t(st):
        if st["gap_to_best"] <= 0:
            return 0.0
        return np.inf if st["se"] == 0 else st["gap_to_best"] / st["se"]

    diffs = diffs or {}

    def margin(names) -> float:
        k = effective_count(np.column_stack([diffs[n] for n in names])) if names and diffs else len(names)
        return float(norm.isf(_ONE_SE_TAIL / max(k, 1.0)))

    others = sorted((n for n in found if n != best), key=lambda n: -t(found[n]))
    while others and t(found[others[0]]) > margin(others):
        others = others[1:]
    return {best, *others}, margin(others)


def _choose(cv: dict[str, np.ndarray], rule: str, order=None, complexity=None) -> tuple[str, dict, float, set]:
    """:func:`choose`, the margin in standard errors the chosen name was held to and the names kept within it."""
    order = registry.simplicity_order() if order is None else order
    names = list(cv)
    valid = _valid(cv)
    means = {n: float(cv[n][valid].mean()) for n in names}

    def position(n):
        return (order.index(n) if n in order else len(order), names.index(n))

    ranked = sorted(names, key=position)
    best = max(ranked, key=lambda n: means[n])  # first (simplest) among equal means
    found, diffs = {}, {}
    for n in names:
        d = cv[best][valid] - cv[n][valid]
        found[n] = {"mean": means[n], "gap_to_best": float(d.mean()), "se": _se(d)}
        diffs[n] = d
    kept, z = _retained(found, best, rule, diffs)
    in_order = {n: cv[n] for n in ranked if n in kept}
    return (next(iter(in_order)) if complexity is None else _least_complex(in_order, complexity, valid)), found, z, kept


def _valid(cv: dict[str, np.ndarray]) -> np.ndarray:
    """The queries every column of ``cv`` scores (NaN = excluded); an error when there is none."""
    valid = np.all([np.isfinite(v) for v in cv.values()], axis=0)
    if not valid.any():
        raise LtrfeatError("no inner held-out query has a relevant document", fix="check the labels")
    return valid


def _least_complex(values: dict[str, np.ndarray], complexity: dict, valid: np.ndarray) -> str:
    """The least complex name of ``values`` (name -> per-query values, in order); among equally complex ones the
    first unless another leads it by more than one SE of their paired difference."""
    peers = [n for n in values if complexity[n] == min(complexity[m] for m in values)]
    lead = max(peers, key=lambda n: values[n][valid].mean())
    return next(n for n in peers if (d := values[lead][valid] - values[n][valid]).mean() <= _se(d))


def _se(d: np.ndarray) -> float:
    """Standard error of the mean of the paired differences ``d``."""
    return float(d.std(ddof=1) / np.sqrt(len(d))) if len(d) > 1 else 0.0


def choose(cv: dict[str, np.ndarray], rule: str, order=None, complexity=None) -> tuple[str, dict]:
    """The chosen name among ``cv`` (name -> per-query criterion values on the same queries, NaN =
    excluded) and, per name, its mean and the paired difference to the best with its standard error.
    ``order``: names simplest first (default the registry's simplicity order; names it lacks come
    after, in ``cv``'s order). The chosen name is the simplest one the rule cannot tell from the best: within one
    SE (``one-se``), within a margin that grows with the number of close, distinct candidates (``joint``, Holm's
    step-down), or the best itself (``best``). ``complexity`` (name -> a sortable cost, e.g. ``(ranker kind,
    features its model uses)``), when given, decides "simplest" before ``order``: the least complex names the rule
    keeps, and among those the first in ``order`` unless another leads it by more than one SE of their paired
    difference (then the one with the highest mean)."""
    chosen, found, _, _ = _choose(cv, rule, order, complexity)
    return chosen, found


def recommend(
    cv: dict[str, dict[str, np.ndarray]], rule: str, set_order: list[str], *, used: dict[str, dict[str, list]]
) -> dict:
    """One fold's recommendation among feature sets and their candidates from inner cross-validation
    (``cv``: feature set -> candidate -> per-query criterion values on the same inner held-out queries;
    ``used``: feature set -> candidate -> the features its model fitted on the fold's training queries uses).

    A configuration's complexity is the number of features its model uses -- a single feature is 1 whichever
    set it came from -- not the size of the set offered: the ranker kind (a single feature, then linear, then
    trees), then the number of features the fitted model uses. Rule ``tiered``: each set's candidate by ``one-se``,
    then, among the sets' picks within a margin of the best that grows with the effective number of distinct close
    picks (``joint``, :func:`effective_count`) and the simpler candidates of those sets within the same margin (a
    configuration the margin keeps is kept whichever set offered it), the least complex; among equally complex picks
    the first in ``set_order`` unless another leads it by more than one standard error (so the same single feature
    picked from two sets is one model, and a better single feature wins over BM25 by its lead, not by plan order). Rule
    ``joint``: the same among every (set, candidate) pair, named ``SET/CANDIDATE``. Rules ``one-se`` and ``best``:
    each set's candidate by the rule, then the set by the rule among the sets' choices in ``set_order`` (the rules
    of earlier versions).

    Returns ``{"feature_set", "candidate", "stats": {name: {mean, gap_to_best, se}} (``tiered``: sets, and
    ``SET/CANDIDATE`` for the simpler candidates it kept), "best",
    "margin_z" (how many SEs below the best the configurations kept in the running may score),
    "n_configurations", "complexity": {name: features its model uses}}``.
    """
    if rule == "joint":
        kinds = registry.simplicity_order()
        configs = sorted(
            ((s, c) for s in cv for c in cv[s]),
            key=lambda sc: (kinds.index(sc[1]) if sc[1] in kinds else len(kinds), set_order.index(sc[0])),
        )
        values = {f"{s}/{c}": cv[s][c] for s, c in configs}
        charged = {f"{s}/{c}": (c, len(used[s][c])) for s, c in configs}
        name, found, z, _ = _choose(values, rule, list(values), {n: _cost(*charged[n]) for n in charged})
        feature_set, candidate = configs[list(values).index(name)]
        best = max(found, key=lambda n: found[n]["mean"])
    else:
        picks = {s: choose(cv[s], rule)[0] for s in cv}
        charged = {s: (picks[s], len(used[s][picks[s]])) for s in cv}
        feature_set, found, z, kept = _choose(
            {s: cv[s][picks[s]] for s in cv},
            "joint" if rule == "tiered" else rule,
            set_order,
            {s: _cost(*charged[s]) for s in cv} if rule == "tiered" else None,
        )
        candidate = picks[feature_set]
        best = max(found, key=lambda n: found[n]["mean"])
        if rule == "tiered":
            feature_set, candidate = _tiered(cv, picks, (found, z, kept), set_order, used, charged)
    return {
        "feature_set": feature_set,
        "candidate": candidate,
        "stats": found,
        "best": best,
        "margin_z": z,
        "n_configurations": len(found),
        "complexity": {name: n for name, (_, n) in charged.items()},
    }


def _cost(kind: str, n_features: int) -> tuple[int, int]:
    """A configuration's complexity: its ranker kind's simplicity (a single feature, then linear, then trees), then
    the number of features its fitted model uses."""
    kinds = registry.simplicity_order()
    return (kinds.index(kind) if kind in kinds else len(kinds), n_features)


def _tiered(cv: dict, picks: dict, across: tuple, set_order: list[str], used: dict, charged: dict) -> tuple[str, str]:
    """Rule ``tiered``'s (feature set, candidate): the least complex among the sets' ``picks`` kept within the margin
    ``z`` of the best (``across``: the sets' stats, z and the kept sets) and every simpler candidate of a kept set
    that is itself within z standard errors of the best: a configuration the margin keeps is kept whichever set
    offered it, not only when its own set's one-SE step kept it. Those are added to the stats (``SET/CANDIDATE``)
    and ``charged``."""
    found, z, kept = across
    kinds = registry.simplicity_order()
    top = max(found, key=lambda s: found[s]["mean"])
    best = cv[top][picks[top]]
    valid = _valid({f"{s}/{c}": v for s in cv for c, v in cv[s].items()})
    pool, named = {}, {}
    for s in (s for s in set_order if s in kept):
        for c in sorted(cv[s], key=lambda c: kinds.index(c) if c in kinds else len(kinds)):
            if c == picks[s]:
                break
            d = best[valid] - cv[s][c][valid]
            if d.mean() <= z * _se(d):
                found[f"{s}/{c}"] = {
                    "mean": float(cv[s][c][valid].mean()),
                    "gap_to_best": float(d.mean()),
                    "se": _se(d),
                }
                charged[f"{s}/{c}"] = (c, len(used[s][c]))
                pool[f"{s}/{c}"], named[f"{s}/{c}"] = cv[s][c], (s, c)
        pool[s], named[s] = cv[s][picks[s]], (s, picks[s])
    return named[_least_complex(pool, {n: _cost(*charged[n]) for n in pool}, valid)]


def against_best(cv: dict[str, dict[str, np.ndarray]], rec: dict, aside: dict, rule: str) -> dict:
    """Inner cross-validation statistics of feature sets measured beside a fold's :func:`recommend` but not
    offered to it (``aside``: set -> candidate -> per-query values on the same queries as ``cv``), against
    the configuration ``rec`` found best, named as ``rec["stats"]`` names its own: ``SET/CANDIDATE`` for
    every candidate under rule ``joint``, else the set at the candidate the rule picks within it.
    Returns ``{name: {mean, gap_to_best, se}}``: ``gap_to_best`` is the mean paired difference best − it
    (the choice's margin ``rec["margin_z"]`` × ``se`` is how far below the best a configuration may score
    and still be one inner cross-validation cannot tell from it)."""
    if rule == "joint":
        feature_set, candidate = rec["best"].rsplit("/", 1)
        best = cv[feature_set][candidate]
        values = {f"{s}/{c}": v for s in aside for c, v in aside[s].items()}
    else:
        best = cv[rec["best"]][choose(cv[rec["best"]], rule)[0]]
        values = {s: aside[s][choose(aside[s], rule)[0]] for s in aside}
    valid = np.all([np.isfinite(v) for v in [best, *values.values()]], axis=0)
    out = {}
    for name, v in values.items():
        d = best[valid] - v[valid]
        se = float(d.std(ddof=1) / np.sqrt(len(d))) if len(d) > 1 else 0.0
        out[name] = {"mean": float(v[valid].mean()), "gap_to_best": float(d.mean()), "se": se}
    return out


def _search(engine: str, config: SelectionConfig, score_params) -> tuple[dict, np.ndarray, list[dict]]:
    """The engine parameters with the best inner-CV mean: ``(params, per-query values, trials)``."""
    trials = []
    if config.tune == "grid":
        for params in (_for_engine(p, engine) for p in GRID):
            values = score_params(params)
            trials.append({"params": params, "score": float(np.nanmean(values)), "values": values})
    else:
        try:
            import optuna
        except ImportError:
            raise LtrfeatError(
                "--tune optuna needs the optuna package", fix="pip install 'ltrfeat[tune]' (or use --tune grid)"
            ) from None
        optuna.logging.set_verbosity(optuna.logging.WARNING)

        def objective(trial):
            params = _optuna_space(trial, engine)
            values = score_params(params)
            trials.append({"params": params, "score": float(np.nanmean(values)), "values": values})
            return trials[-1]["score"]

        study = optuna.create_study(direction="maximize", sampler=optuna.samplers.TPESampler(seed=config.seed))
        study.optimize(objective, n_trials=int(config.tune_trials))
    best = max(range(len(trials)), key=lambda i: (trials[i]["score"], -i))
    return (
        trials[best]["params"],
        trials[best]["values"],
        [{k: v for k, v in t.items() if k != "values"} for t in trials],
    )


def feature_table(data: RankingSet, candidates: Candidates, names) -> pd.DataFrame | None:
    """The per-query criterion table of ``candidates``' columns on ``data`` (:func:`rank_single_features`)
    when a kind among ``names`` reads one (``feature_table``), else None."""
    if not any(registry.get(n).feature_table for n in names):
        return None
    return rank_single_features_as(data, candidates.columns, candidates)


def select(
    train: RankingSet,
    valid: RankingSet | None,
    candidates: Candidates,
    config: SelectionConfig,
    *,
    table: pd.DataFrame | None = None,
) -> dict:
    """Inner cross-validation of every candidate over the queries of ``train`` and ``valid``.

    ``table``: the :func:`feature_table` of those queries when the caller has it (else made here).
    Returns ``{"chosen", "rule", "stats": {name: {mean, gap_to_best, se}}, "tuned": {name: params},
    "trials": {name: [...]}, "qids", "values": {name: per-query criterion array}}``.
    """
    pool = concat(train, valid)
    splits = inner_splits(pool, config)
    if table is None:
        table = feature_table(pool, candidates, config.candidates)
    held_qids = np.concatenate([held.queries() for _, _, held in splits])

    def cross_validate(name: str, tuned: dict | None = None) -> np.ndarray:
        values = []
        for fit_part, stop_part, held in splits:
            model = candidates.make(name, seed=config.seed, tuned=tuned)
            candidates.fit(model, fit_part, stop_part, table)
            values.append(candidates.per_query(held, model.predict(held)))
        return np.concatenate(values)

    cv, tuned, trials = {}, {}, {}
    for name in config.candidates:
        engine = registry.get(name).tunes
        if engine:
            tuned[name], cv[name], trials[name] = _search(engine, config, functools.partial(cross_validate, name))
        else:
            cv[name] = cross_validate(name)
    chosen, stats = choose(cv, config.rule)
    return {
        "chosen": chosen,
        "rule": config.rule,
        "stats": stats,
        "tuned": tuned,
        "trials": trials,
        "qids": held_qids,
        "values": cv,
    }
