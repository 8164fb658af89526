"""Rankers: LambdaMART (LightGBM, XGBoost), linear and single-feature rankers, model selection, model files."""

__all__ = [  # the public modules
    "choices",
    "config",
    "contributions",
    "dask_training",
    "kinds",
    "lambdamart",
    "linear",
    "model_check",
    "models",
    "positions",
    "registry",
    "selection",
    "single",
    "sklearn_scorer",
]
