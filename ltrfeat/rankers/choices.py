"""Names and defaults of the model-selection choices, importable without the engines (the CLI's option lists and
help); the candidates themselves are the ranker kinds of :mod:`ltrfeat.rankers.registry`."""

from typing import Any

ENGINES = ("lightgbm", "xgboost")  # LambdaMART implementations
META_FORMAT = "ltrfeat.ranker/1"  # the format of every ranker's MODEL.meta.json
MODEL_FILE_FIX = "give a model file written by ltrfeat train-ranker (its .meta.json beside it)"
TUNE_METHODS = ("none", "grid", "optuna")
RULES = ("tiered", "joint", "one-se", "best")  # the first is the default
OTHER_CANDIDATES = ("linear", "boost-best", "best-single")  # the default candidates besides ENGINE (and ENGINE-tuned)
# SelectionConfig's defaults (ltrfeat.rankers.selection), here so that --help reads them without LightGBM
SELECTION_DEFAULTS: dict[str, Any] = {
    "tune": TUNE_METHODS[0],
    "tune_trials": 20,
    "inner_folds": 3,
    "valid_fraction": 0.2,
    "rule": RULES[0],
    "seed": 0,
}
BEST_SINGLE, RECOMMENDED = "best-single", "recommended"  # the ablation's baseline and recommendation rows
