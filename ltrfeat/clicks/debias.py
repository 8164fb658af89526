"""Training labels from a click log, with the position bias corrected or not.

A click at position 1 says less about relevance than a click at position 9: the first is examined almost always, the
second rarely. :func:`click_labels` turns a :class:`~ltrfeat.clicks.log.ClickLog` into the encoder trainers' table
(``query, doc, label[, weight]``) by one of three corrections (``debias``):

- ``none``: the click count of each (query, document) pair, as before (soft label ``c / (c + s)``).
- ``ipw``: inverse propensity weighting (Joachims et al., WSDM 2017): every click counts ``1 / p(position)``, the
  propensity clipped from below at ``clip`` (a weight of at most ``1 / clip``) and the weights self-normalised so that
  their mean over the log's clicks is 1 (the debiased counts sum to the clicks, and ``c / (c + s)`` keeps its scale).
  The generalized (GDSSM) loss takes the debiased count as its label; the softmax loss keeps the clicked pairs as its
  samples and weights each by its debiased count over its clicks (the mean inverse propensity of its clicks, 1 when
  there is no bias).
- ``pbm``: relevance estimated by the position-based click model (:func:`~ltrfeat.clicks.propensity.pbm_em` with
  the examination fixed to the curve, given or estimated, so that sparse pairs do not bend it; stray clicks are
  estimated with the attractiveness): the generalized loss takes each pair's estimated
  attractiveness (P(click | examined), in [0, 1]) as its soft label, the softmax loss weights each clicked pair by it
  (self-normalised over the clicked pairs).

A log without positions trains uncorrected, with a warning: position bias cannot be corrected from it. The record
(:attr:`ClickLabels.record`) goes into the encoder bundle's training record as ``clicks``.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ltrfeat.core.errors import LtrfeatError, LtrfeatWarning, ParameterError
from ltrfeat.clicks.log import NO_POSITIONS_NOTE
from ltrfeat.clicks.propensity import Propensity, estimate_propensity, pbm_em

DEBIAS = ("none", "ipw", "pbm")
CORRECTED_LOSSES = ("softmax", "generalized")  # the losses a correction applies to
DEFAULT_CLIP = 0.05


@dataclass(frozen=True)
class ClickLabels:
    """A trainer's table (``query, doc, label`` and, for a corrected softmax loss, ``weight``), the soft-label mapping
    its labels need (``"clicks"`` or ``"identity"``) and the record of the correction."""

    pairs: pd.DataFrame
    soft_labels: str
    record: dict


def click_labels(
    log,
    *,
    debias: str = "none",
    loss: str = "generalized",
    propensity: Propensity | None = None,
    method: str = "harvest",
    clip: float = DEFAULT_CLIP,
    seed: int = 0,
) -> ClickLabels:
    """Training labels of ``log``'s (query, document) pairs with the position bias corrected by ``debias`` (see the
    module docstring) for ``loss``; ``propensity``: the curve to correct with (default: estimated from the log by
    ``method``, without an interval)."""
    if debias not in DEBIAS:
        raise ParameterError(f"debias {debias!r} is not a correction", fix=f"use one of {', '.join(DEBIAS)}")
    if loss not in CORRECTED_LOSSES:
        raise ParameterError(
            f"the {loss} loss takes no click correction",
            fix=f"use the {' or '.join(CORRECTED_LOSSES)} loss",
            param="loss",
        )
    if not 0 < clip <= 1:
        raise ParameterError(f"clip {clip} is not a propensity in (0, 1]", fix="give e.g. 0.05", param="clip")
    totals = log.totals
    if "doc" not in totals:
        raise LtrfeatError(
            "the click log does not give the documents' texts",
            path=log.source,
            fix="give the documents table (docid and text) with the log",
        )
    record: dict = {
        "source": str(log.source),
        "has_positions": bool(log.has_positions),
        "impressions": int(totals["impressions"].sum()),
        "clicks": int(totals["clicks"].sum()),
        "pairs": int(len(totals)),
    }
    if debias != "none" and not log.has_positions:
        warnings.warn(f"{log.source}: {NO_POSITIONS_NOTE}; training on uncorrected click counts", LtrfeatWarning, 2)
        record["requested"] = debias
        debias = "none"
    record["debias"] = debias
    table = totals[["query", "doc", "clicks"]].rename(columns={"clicks": "label"})
    if debias == "none":
        return _labels(table, "clicks", record)
    if propensity is None:
        shown = int(log.positioned["position"].max())  # a log of fewer than 10 positions: its own
        propensity = estimate_propensity(
            log, method=method, max_position=max(2, min(10, shown)), seed=seed, resamples=0
        )
    keys = ["query", "docid"]
    rows = log.positioned
    if debias == "ipw":
        assert propensity is not None
        clicks = rows["clicks"].to_numpy(np.float64)
        corrected = (
            rows[keys]
            .assign(label=clicks * ipw_weights(rows, propensity, clip=clip))
            .groupby(keys, sort=False)["label"]
            .sum()
        )
        record |= {"clip": clip, "propensity": propensity.to_dict()}
        soft = "clicks"
    else:
        pair, pairs = pd.factorize(pd.MultiIndex.from_frame(rows[keys]))
        k_max = int(rows["position"].max())
        _, gamma = pbm_em(
            pair,
            rows["position"].to_numpy(np.int64) - 1,
            rows["impressions"].to_numpy(np.float64),
            rows["clicks"].to_numpy(np.float64),
            k_max=k_max,
            fixed=propensity.at(np.arange(1, k_max + 1)),
        )
        corrected = pd.Series(gamma, index=pairs)
        record |= {"propensity": propensity.to_dict()}
        soft = "identity"
    label = corrected.reindex(pd.MultiIndex.from_frame(totals[keys])).fillna(0.0).to_numpy(np.float64)
    if loss == "generalized":
        return _labels(table.assign(label=label), soft, record)
    clicked = table["label"].to_numpy() > 0
    per_click = label / np.maximum(table["label"].to_numpy(np.float64), 1) if debias == "ipw" else label
    weight = np.where(clicked, per_click, 0.0)
    mean = weight[clicked].mean() if clicked.any() else 1.0
    return _labels(table.assign(weight=weight / mean if mean > 0 else 1.0), "clicks", record)


def ipw_weights(rows: pd.DataFrame, propensity: Propensity, *, clip: float = DEFAULT_CLIP) -> np.ndarray:
    """The weight of a click in each row of a positioned log (``position``, ``clicks``): ``1 / p(position)``, the
    propensity clipped from below at ``clip``, self-normalised to a mean of 1 over the rows' clicks."""
    weight = 1 / np.maximum(propensity.at(rows["position"].to_numpy()), clip)
    clicks = rows["clicks"].to_numpy(np.float64)
    return weight / (clicks * weight).sum() * clicks.sum() if clicks.sum() > 0 else weight


def _labels(table: pd.DataFrame, soft: str, record: dict) -> ClickLabels:
    table = table.reset_index(drop=True)
    table.attrs["clicks"] = record
    return ClickLabels(table, soft, record)
