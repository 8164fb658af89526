"""``train-encoder --model sbert-ft``: the options only fine-tuning a sentence-transformer takes.

Like every kind's, they reach the training config only when given (:mod:`ltrfeat.cli.encoder_cmd`), so
:class:`~ltrfeat.encoders.config.SbertConfig`'s own defaults apply to the rest.
"""

from __future__ import annotations

import click

from ltrfeat.cli._paths import EXISTING_DIR

from ltrfeat.encoders.config import PRECISIONS, SbertConfig


def sbert_options(command):
    """Add the options only MiniLM fine-tuning (``--model sbert-ft``) takes to train-encoder."""
    options = [
        click.option(
            "--base",
            type=EXISTING_DIR,
            default=None,
            help="sbert-ft: sentence-transformers model directory to fine-tune [default: packaged all-MiniLM-L6-v2].",
        ),
        click.option(
            "--freeze-layers",
            type=click.IntRange(min=-1),
            default=None,
            help="sbert-ft: freeze the embeddings and the lowest N transformer layers (-1: none) "
            f"[default: {SbertConfig.freeze_layers}].",
        ),
        click.option(
            "--max-seq-length",
            type=int,
            default=None,
            help=f"sbert-ft: tokens per text, longer texts truncated [default: {SbertConfig.max_seq_length}].",
        ),
        click.option(
            "--accumulate",
            type=int,
            default=None,
            help=f"sbert-ft: mini-batches per optimizer step (gradient accumulation) [default: {SbertConfig.accumulate}].",
        ),
        click.option(
            "--separate",
            is_flag=True,
            help="sbert-ft: fine-tune separate query and document towers [default: one shared tower].",
        ),
        click.option(
            "--precision",
            type=click.Choice(PRECISIONS),
            default=None,
            help="sbert-ft: matrix products in float32 or bfloat16 (CPU autocast; faster on CPUs with AVX512-BF16 "
            f"or AMX, slower without; the bundle scores in the same precision) [default: {SbertConfig.precision}].",
        ),
    ]
    for option in reversed(options):
        command = option(command)
    return command
