"""A synthetic product-search world for demos and ablations: a catalogue with several text
fields, judged train/vali/test queries with graded labels, and a click log — deterministic by
seed, with vocabulary mismatch, ambiguous words, lexical distractors and noisy clicks.
``data/README.md`` states its assumptions and file formats."""

from ltrfeat.datasets.synth._clicks import ClickModel, examination_curve
from ltrfeat.datasets.synth._world import (
    GENERATOR_VERSION,
    PRESETS,
    PUBLIC_COLUMNS,
    SPLITS,
    World,
    click_model,
    generate_world,
    realism_stats,
    write_world,
)

__all__ = [
    "ClickModel",
    "GENERATOR_VERSION",
    "PRESETS",
    "PUBLIC_COLUMNS",
    "SPLITS",
    "World",
    "click_model",
    "examination_curve",
    "generate_world",
    "realism_stats",
    "write_world",
]
