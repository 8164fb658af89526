"""Initialisation of the sparse trigram projections shared by both towers."""

from __future__ import annotations

import math

import torch

from ltrfeat.encoders.hashing import UNKNOWN_ID

# Typical number of trigrams active in one input (a short text / a 3-word window): the
# fan-in that matters for a sparse projection, rather than the whole trigram space.
ACTIVE_TRIGRAMS = 32


@torch.no_grad()
def init_trigram_weights(weight: torch.Tensor, *, fan_out: int) -> None:
    """Glorot-uniform with the active fan-in; the unknown-trigram row starts at zero.

    Unknown trigrams then add nothing unless training saw rare trigrams mapped there.
    """
    bound = math.sqrt(6.0 / (ACTIVE_TRIGRAMS + fan_out))
    weight.uniform_(-bound, bound)
    weight[UNKNOWN_ID].zero_()
