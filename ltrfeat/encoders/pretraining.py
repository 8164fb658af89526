"""The built-in pre-trainings and starting points an encoder spec's ``+MOD`` names (``clsm:generalized+spans``)."""

from __future__ import annotations

import enum


class Pretraining(enum.StrEnum):
    """A spec's ``+MOD`` (``EncoderSpec.pretrain``; ``EncoderConfig.pretrain`` takes :attr:`RBM`). A ``str``: it
    equals, formats and serialises (report.json, cache keys, bundle headers) as its value; a kind registered by a
    plug-in may name other mods (``EncoderKind.mods``), which stay plain strings."""

    RBM = "rbm"  # DSSM's layer-wise RBM pre-training (DSE)
    TEACHER = "teacher"  # the towers distilled from MiniLM
    SPANS = "spans"  # pre-trained on query-like spans of the documents
    SPANS_TEACHER = "spans+teacher"  # the span pre-training distilled from MiniLM
    INIT = "init"  # starts from a given bundle
