"""Names of the model-selection choices, importable without the engines (the CLI's option lists); the
candidates themselves are the ranker kinds of :mod:`ltrfeat.rankers.registry`."""

ENGINES = ("lightgbm", "xgboost")  # LambdaMART implementations
META_FORMAT = "ltrfeat.ranker/1"  # the format of every ranker's MODEL.meta.json
TUNE_METHODS = ("none", "grid", "optuna")
RULES = ("tiered", "joint", "one-se", "best")  # the first is the default
BEST_SINGLE, RECOMMENDED = "best-single", "recommended"  # the ablation's baseline and recommendation rows
