"""Query and document towers of one architecture, built from a JSON-able config."""

from __future__ import annotations

import torch
from torch import nn

from ltrfeat.encoders._clsm import ClsmTower
from ltrfeat.encoders.config import SCORES
from ltrfeat.encoders._dssm import DssmTower

ARCHITECTURES = {"dssm": DssmTower, "clsm": ClsmTower}
DEFAULT_SIZES: dict[str, dict] = {
    "dssm": {"hidden": [300, 300], "out": 128},
    "clsm": {"context": 1, "conv": 300, "out": 128},
}


def model_config(architecture: str, n_features: int, *, shared: bool = False, score: str = "cosine", **sizes) -> dict:
    """A complete, JSON-serialisable model config (defaults filled in, unknown sizes rejected).

    ``score`` is the relevance R(Q, D): ``"cosine"`` of the semantic vectors (DSSM/CLSM) or their raw
    ``"dot"`` product (DSE). Configs written before the key existed mean cosine.
    """
    if architecture not in ARCHITECTURES:
        raise ValueError(f"unknown encoder architecture {architecture!r}; choose one of {sorted(ARCHITECTURES)}")
    if score not in SCORES:
        raise ValueError(f"score must be one of {SCORES}, got {score!r}")
    tower = dict(DEFAULT_SIZES[architecture])
    unknown = set(sizes) - set(tower)
    if unknown:
        raise ValueError(f"{architecture} has no size option(s) {sorted(unknown)}; it takes {sorted(tower)}")
    tower.update({k: (list(v) if isinstance(v, (list, tuple)) else int(v)) for k, v in sizes.items()})
    return {
        "architecture": architecture,
        "n_features": int(n_features),
        "shared": bool(shared),
        "tower": tower,
        "score": score,
    }


class TwoTowerModel(nn.Module):
    """Separate query and document towers (the papers' better choice) or one shared tower.

    ``encode_queries`` / ``encode_docs`` return the raw tanh semantic vectors (B, L); relevance
    is their cosine or, when ``config["score"] == "dot"``, their dot product.
    """

    def __init__(self, config: dict):
        super().__init__()
        self.config = config
        if self.score not in SCORES:
            raise ValueError(f"score must be one of {SCORES}, got {self.score!r}")
        tower_cls = ARCHITECTURES[config["architecture"]]
        self.query_tower = tower_cls(config["n_features"], **config["tower"])
        # a shared model registers one tower only, so its state dict holds each tensor once
        self.doc_tower = None if config["shared"] else tower_cls(config["n_features"], **config["tower"])

    @property
    def score(self) -> str:
        """``"cosine"`` or ``"dot"`` (a config without the key predates dot scoring: cosine)."""
        return self.config.get("score", "cosine")

    @property
    def normalized(self) -> bool:
        """Whether relevance is computed on L2-normalised vectors (cosine)."""
        return self.score == "cosine"

    def tower(self, side: str) -> DssmTower | ClsmTower:
        if side == "query":
            return self.query_tower
        if side == "doc":
            return self.query_tower if self.doc_tower is None else self.doc_tower
        raise ValueError(f"side must be 'query' or 'doc', got {side!r}")

    def encode_queries(self, batch) -> torch.Tensor:
        return self.query_tower(batch)

    def encode_docs(self, batch) -> torch.Tensor:
        return self.tower("doc")(batch)
