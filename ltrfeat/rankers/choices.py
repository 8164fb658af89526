"""Names of the model-selection choices, importable without the engines (the CLI's option lists)."""

ENGINES = ("lightgbm", "xgboost")  # LambdaMART implementations
CANDIDATES = ("lightgbm", "xgboost", "lightgbm-tuned", "xgboost-tuned", "linear", "boost-best", "best-single")
# Simpler first: the one-SE rule takes the first candidate in this order that is close enough to the best.
SIMPLICITY = ("best-single", "linear", "boost-best", "lightgbm", "xgboost", "lightgbm-tuned", "xgboost-tuned")
TUNE_METHODS = ("none", "grid", "optuna")
RULES = ("one-se", "best")
BEST_SINGLE, RECOMMENDED = "best-single", "recommended"  # the ablation's baseline and recommendation rows
