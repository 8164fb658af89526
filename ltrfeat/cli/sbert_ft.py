"""``train-encoder --model sbert``: the options and the training call for fine-tuning a sentence-transformer.

The shared train-encoder options keep their clsm/dssm defaults in ``--help``; with ``--model sbert``
only the options given on the command line are passed on, so :func:`train_sbert`'s own CPU-sensible
defaults apply to the rest (1 epoch, batch 32, lr 2e-5, in-batch negatives only, gamma 20, margin 0.2).
"""

from __future__ import annotations

import json

import click
from click.core import ParameterSource

from ltrfeat.cli.options import fit_and_save

# train-encoder parameter -> train_sbert keyword
PASSED = {
    "loss": "loss",
    "epochs": "epochs",
    "negatives": "negatives",
    "hard_negatives": "hard_negatives",
    "in_batch": "in_batch",
    "gamma": "gamma",
    "margin": "margin",
    "batch_size": "batch_size",
    "lr": "lr",
    "soft_labels": "soft_labels",
    "click_scale": "click_scale",
    "min_positive": "min_positive",
    "val_fraction": "val_fraction",
    "patience": "patience",
    "freeze_layers": "freeze_layers",
    "max_seq_length": "max_seq_length",
    "accumulate": "accumulate",
    "precision": "precision",
}
SBERT_ONLY = ("base", "freeze_layers", "max_seq_length", "accumulate", "separate", "precision")
NOT_FOR_SBERT = (
    "pretrain",
    "score",
    "topics",
    "patch_words",
    "optimizer",
    "min_count",
    "buckets",
    "teacher",
    "distill_epochs",
    "distill_lr",
)


def sbert_options(command):
    """Add the sbert-only options to train-encoder."""
    options = [
        click.option(
            "--base",
            type=click.Path(exists=True, file_okay=False),
            default=None,
            help="sbert: sentence-transformers model directory to fine-tune [default: packaged all-MiniLM-L6-v2].",
        ),
        click.option(
            "--freeze-layers",
            type=click.IntRange(min=-1),
            default=None,
            help="sbert: freeze the embeddings and the lowest N transformer layers (-1: none) [default: 4].",
        ),
        click.option(
            "--max-seq-length",
            type=click.IntRange(min=2),
            default=None,
            help="sbert: tokens per text, longer texts truncated [default: 32].",
        ),
        click.option(
            "--accumulate",
            type=click.IntRange(min=1),
            default=None,
            help="sbert: mini-batches per optimizer step (gradient accumulation) [default: 1].",
        ),
        click.option(
            "--separate",
            is_flag=True,
            help="sbert: fine-tune separate query and document towers [default: one shared tower].",
        ),
        click.option(
            "--precision",
            type=click.Choice(["fp32", "bf16"]),
            default=None,
            help="sbert: matrix products in float32 or bfloat16 (CPU autocast; faster on CPUs with AVX512-BF16 "
            "or AMX, slower without; the bundle scores in the same precision) [default: fp32].",
        ),
    ]
    for option in reversed(options):
        command = option(command)
    return command


def _given(ctx: click.Context, name: str) -> bool:
    source = ctx.get_parameter_source(name)
    return source is not None and source != ParameterSource.DEFAULT


def check_model_options(ctx: click.Context, model: str) -> None:
    """Usage errors for sbert-only options with another model and for options sbert does not take."""
    if model != "sbert":
        given = [n for n in SBERT_ONLY if _given(ctx, n)]
        if given:
            raise click.UsageError(f"--{given[0].replace('_', '-')} is for --model sbert")
        return
    given = [n for n in NOT_FOR_SBERT if n in ctx.params and _given(ctx, n)]
    if ctx.params.get("shared") and ctx.params.get("separate"):
        raise click.UsageError("--shared and --separate exclude each other")
    if given:
        raise click.UsageError(f"--{given[0].replace('_', '-')} is not an option of --model sbert")


def train_sbert_cmd(ctx: click.Context, table, out, *, soft_labels: str, checkpoint, resume) -> None:
    """Fine-tune, write the bundle to ``out``, remove the default checkpoint, print a JSON summary."""
    from ltrfeat.features.encoders.sbert_training import train_sbert

    params = ctx.params
    kwargs = {kw: params[name] for name, kw in PASSED.items() if _given(ctx, name)}
    kwargs["soft_labels"] = soft_labels  # --from-docs sets "identity"
    model, history = fit_and_save(
        lambda ckpt: train_sbert(
            table,
            base=params["base"],
            shared=not params["separate"],
            seed=params["seed"],
            threads=params["threads"] or None,
            checkpoint=ckpt,
            resume=resume,
            **kwargs,
        ),
        out,
        checkpoint,
    )
    validation = model.training["validation"]
    click.echo(
        json.dumps(
            {
                "out": str(out),
                "best_epoch": model.training["best_epoch"],
                "val_ndcg@10": validation["ndcg@10"],
                "zero_shot_val_ndcg@10": validation["zero_shot_ndcg@10"],
                "epochs": [{k: h[k] for k in ("epoch", "train_loss", "val_ndcg@10", "seconds")} for h in history],
            }
        )
    )
