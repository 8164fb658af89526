"""The fold every ablation runs on, made from LETOR fold directories
(:func:`ltrfeat.experiments.letor_folds.load_letor_folds`) or by cross-fitting judged pairs
(:func:`ltrfeat.experiments.crossfit.text_folds`)."""

from __future__ import annotations

import dataclasses

from ltrfeat.core.dataset import RankingSet


@dataclasses.dataclass
class Fold:
    """One split of the queries: rankers train on ``train`` (early-stop on ``valid``) and
    are scored on ``test``. ``origin`` says how the fold was made (shown in reports)."""

    name: str
    train: RankingSet
    valid: RankingSet | None
    test: RankingSet
    origin: str = ""
