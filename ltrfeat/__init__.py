"""ltrfeat: lexical and neural (CLSM/DSSM) features for learning to rank, LambdaMART rankers with model
selection, and ablations that say with significance tests whether a neural feature helps.

The public API is listed in ``__all__``; each name is imported on first use, so ``import ltrfeat`` stays
light (no torch, LightGBM or XGBoost until a name that needs them is used). Subpackages:
``ltrfeat.features`` (pairs -> feature columns), ``ltrfeat.rankers`` (everything after the feature
matrix), ``ltrfeat.serving`` (scoring service, exports, PyTerrier) and ``ltrfeat.cli`` (the command line).
"""

from __future__ import annotations

import importlib
from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("ltrfeat")
except PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0+unknown"

_API = {
    # data
    "RankingSet": "ltrfeat.core.dataset",
    "FeatureMap": "ltrfeat.core.dataset",
    "read_letor": "ltrfeat.core.letor",
    "write_letor": "ltrfeat.core.letor",
    "read_judged_pairs": "ltrfeat.core.text",
    # features
    "extract_pairs": "ltrfeat.features.extract",
    "lexical_extractors": "ltrfeat.features.extract",
    "train_encoder": "ltrfeat.encoders.training",
    "EncoderConfig": "ltrfeat.encoders.config",
    "SbertConfig": "ltrfeat.encoders.config",
    "DeepMatchConfig": "ltrfeat.encoders.config",
    # rankers
    "LambdaMART": "ltrfeat.rankers.lambdamart",
    "RankerConfig": "ltrfeat.rankers.config",
    "LinearRanker": "ltrfeat.rankers.linear",
    "BestSingleFeature": "ltrfeat.rankers.single",
    "BoostedFromFeature": "ltrfeat.rankers.single",
    "SelectionConfig": "ltrfeat.rankers.selection",
    "select": "ltrfeat.rankers.selection",
    "load_ranker": "ltrfeat.rankers.models",
    "save_ranker": "ltrfeat.rankers.models",
    "evaluate_queries": "ltrfeat.core.metrics",
    "ndcg_scorer": "ltrfeat.rankers.sklearn_scorer",
    # ablations
    "AblationConfig": "ltrfeat.experiments.ablation",
    "CrossFitConfig": "ltrfeat.experiments.crossfit",
    "text_folds": "ltrfeat.experiments.crossfit",
    "Fold": "ltrfeat.experiments.folds",
    "FeatureSet": "ltrfeat.experiments.feature_sets",
    "plan_feature_sets": "ltrfeat.experiments.feature_sets",
    "run_ablation": "ltrfeat.experiments.ablation",
    "summarise": "ltrfeat.experiments.summary",
    "write_report": "ltrfeat.experiments.report",
    "ablate_pairs": "ltrfeat.experiments.ablate",
    "ablate_folds": "ltrfeat.experiments.ablate",
    "PairsSource": "ltrfeat.experiments.ablate",
    "FoldsSource": "ltrfeat.experiments.ablate",
    "AblateSettings": "ltrfeat.experiments.ablate",
}
__all__ = ["__version__", *_API]  # noqa: PLE0604 (the keys of _API are strings)


def __getattr__(name: str):
    if name in _API:
        value = getattr(importlib.import_module(_API[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'ltrfeat' has no attribute {name!r}")


def __dir__():
    return sorted(__all__)
