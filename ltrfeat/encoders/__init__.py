"""Neural text encoders (DSSM, CLSM, DeepMatch, MiniLM) trained on clicks or judgments, saved as ``.ltrenc`` bundles.

The encoders' layer: above ``core`` and ``clicks``, below ``features`` (whose :mod:`~ltrfeat.features.neural` turns
a bundle into feature columns) and everything above it; it imports neither.

The kinds are described in :mod:`ltrfeat.encoders.registry`. The torch-backed names below are imported on
first use, so reading the registry (CLI choices, ``--help``) does not import torch.
"""

from __future__ import annotations

import importlib

_LAZY = {
    "Encoder": "ltrfeat.encoders.encoder",
    "TwoTowerModel": "ltrfeat.encoders.model",
    "model_config": "ltrfeat.encoders.model",
    "train_encoder": "ltrfeat.encoders.training",
}

__all__ = ["Encoder", "TwoTowerModel", "model_config", "train_encoder"]


def __getattr__(name: str):
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
