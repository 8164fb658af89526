"""The ablation's defaults, importable without the engines: ``ltrfeat ablate --help`` shows these values and
:mod:`ltrfeat.experiments.ablate` runs with them."""

from __future__ import annotations

from typing import Any

__all__ = ["DEFAULTS", "ENCODER_DEFAULTS", "K_FOLDS", "METRICS", "QUICK", "QUICK_ENCODER"]

DEFAULTS = {"seeds": (0, 1, 2), "n_estimators": 500, "resamples": 10_000}
QUICK: dict[str, Any] = {"seeds": (0,), "n_estimators": 50, "resamples": 1000}  # a smoke run; explicit settings win
# Text mode encoder training defaults: a few epochs bound the cost of k + k(k-1)/2 trainings per encoder
# (early stopping on validation NDCG@10 still applies); the quick ones are a smoke run, not a measurement.
# A "MODEL." prefix applies a default to one model only (ltrfeat.experiments._encoder_options): fine-tuning
# MiniLM from the pre-trained weights needs one epoch.
ENCODER_DEFAULTS = {"epochs": 4, "sbert-ft.epochs": 1}
QUICK_ENCODER = {"epochs": 2, "sbert-ft.epochs": 1}
# Outer query folds of the cross-fitting (text mode): each trained encoder costs k + k(k-1)/2 trainings, 6 for 3.
K_FOLDS = 3
METRICS = "ndcg@1,3,10,recall@3,6,10,top3recall@3,6,10,map,mrr"
