"""What text mode (``ablate --pairs``) reads and cross-fits, as typed values: the judged pairs with their encoder
specs and training tables (:class:`PairsRead`), the cross-fitted folds (:class:`PairsFolds`) and the cross-fitting
scheme the report records (:class:`CrossFitScheme`)."""

from __future__ import annotations

import dataclasses
from typing import Any

import pandas as pd

from ltrfeat.experiments.folds import Fold


@dataclasses.dataclass
class PairsRead:
    """A text-mode source read and checked as ``ablate`` reads it (:func:`~ltrfeat.experiments.ablate.
    read_pairs_source`): the judged ``pairs``, the encoder ``specs`` (``EncoderSpec``), the ``--collection`` texts
    (or None), the encoders' separate ``train_table`` (judged pairs or clicks; or None) and ``duplicates``, the
    duplicate-row figures per table (``{"pairs": ..., "train_pairs": ...}``)."""

    pairs: pd.DataFrame
    specs: list
    collection: list[str] | None
    train_table: pd.DataFrame | None
    duplicates: dict[str, dict]


@dataclasses.dataclass
class CrossFitScheme:
    """How text mode made its encoder columns. ``cross_fitting``: what :func:`~ltrfeat.experiments.crossfit.
    text_folds` says of its folds (figures and words); ``encoder_options``: the encoders' training options;
    ``encoders``: ``{name: {"spec", "trained", "transformer"[, "clicks"]}}``, what the verdict's "to ship" line
    trains. Kept out of the report's ``cross_fitting``: ``duplicates`` (the report's own ``duplicates``),
    ``lexical`` (the fitted extractors, for ``--write-features``) and ``texts`` (``{"query"|"doc": {id: text}}``,
    for report.html's per-query view)."""

    cross_fitting: dict[str, Any]
    encoder_options: dict[str, Any]
    encoders: dict[str, dict]
    duplicates: dict[str, dict] = dataclasses.field(default_factory=dict)
    lexical: list = dataclasses.field(default_factory=list)
    texts: dict[str, dict] = dataclasses.field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """report.json's ``config.cross_fitting``."""
        return {**self.cross_fitting, "encoder_options": self.encoder_options, "encoders": self.encoders}


@dataclasses.dataclass
class PairsFolds:
    """Judged pairs cross-fitted into ablation ``folds``: the neural ``groups`` (``{encoder: [column]}``), the
    ``base`` (lexical) feature names joined by commas and the :class:`CrossFitScheme`."""

    folds: list[Fold]
    groups: dict[str, list[str]]
    base: str
    scheme: CrossFitScheme
