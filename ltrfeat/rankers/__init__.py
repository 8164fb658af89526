"""Rankers: LambdaMART (LightGBM, XGBoost), linear and single-feature rankers, model selection, model files."""
