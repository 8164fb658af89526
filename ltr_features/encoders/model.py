"""Query and document towers of one architecture, built from a JSON-able config."""
from __future__ import annotations

import torch
from torch import nn

from ltr_features.encoders.clsm import ClsmTower
from ltr_features.encoders.dssm import DssmTower

ARCHITECTURES = {"dssm": DssmTower, "clsm": ClsmTower}
DEFAULTS = {
    "dssm": {"hidden": [300, 300], "out": 128},
    "clsm": {"context": 1, "conv": 300, "out": 128},
}


def model_config(architecture: str, n_features: int, *, shared: bool = False, **sizes) -> dict:
    """A complete, JSON-serialisable model config (defaults filled in, unknown sizes rejected)."""
    if architecture not in ARCHITECTURES:
        raise ValueError(f"unknown encoder architecture {architecture!r}; choose one of {sorted(ARCHITECTURES)}")
    tower = dict(DEFAULTS[architecture])
    unknown = set(sizes) - set(tower)
    if unknown:
        raise ValueError(f"{architecture} has no size option(s) {sorted(unknown)}; it takes {sorted(tower)}")
    tower.update({k: (list(v) if isinstance(v, (list, tuple)) else int(v)) for k, v in sizes.items()})
    return {"architecture": architecture, "n_features": int(n_features), "shared": bool(shared), "tower": tower}


class TwoTowerModel(nn.Module):
    """Separate query and document towers (the papers' better choice) or one shared tower.

    ``encode_queries`` / ``encode_docs`` return the raw tanh semantic vectors (B, L); relevance
    is their cosine.
    """

    def __init__(self, config: dict):
        super().__init__()
        self.config = config
        tower_cls = ARCHITECTURES[config["architecture"]]
        self.query_tower = tower_cls(config["n_features"], **config["tower"])
        # a shared model registers one tower only, so its state dict holds each tensor once
        self.doc_tower = None if config["shared"] else tower_cls(config["n_features"], **config["tower"])

    def tower(self, side: str) -> nn.Module:
        if side == "query":
            return self.query_tower
        if side == "doc":
            return self.query_tower if self.doc_tower is None else self.doc_tower
        raise ValueError(f"side must be 'query' or 'doc', got {side!r}")

    def encode_queries(self, batch) -> torch.Tensor:
        return self.query_tower(batch)

    def encode_docs(self, batch) -> torch.Tensor:
        return self.tower("doc")(batch)
