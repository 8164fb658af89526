"""``ltrfeat train-encoder``: train an encoder of any trainable kind (CLSM, DSSM, DeepMatch, MiniLM fine-tuning, or a
registered one, see :mod:`ltrfeat.encoders.registry`) on judged or clicked pairs.

The options of every kind share one command: only the options given on the command line are passed on, so each
kind's config supplies its own defaults for the rest (``--help`` shows the CLSM/DSSM ones), and an option the
kind's config and trainer do not take is a usage error.
"""

from __future__ import annotations

import json
from pathlib import Path

import click

from ltrfeat.cli._paths import DIR, EXISTING_FILE, FILE
from click.core import ParameterSource

from ltrfeat.cli._options import (
    click_log_options,
    columns_option,
    duplicates_option,
    encoding_option,
    fit_and_save,
    label_map_option,
    mlflow_options,
    option_group,
    read_pairs_table,
    threads_option,
)
from ltrfeat.cli._sbert_ft import sbert_options
from ltrfeat.core.fileio import check_writable
from ltrfeat.core.processes import freed_memory_kept
from ltrfeat.encoders.config import (
    DISTILL_ROWS,
    LOSSES,
    OPTIMIZERS,
    PRETRAININGS,
    SCORES,
    SOFT_LABELS,
    DeepMatchConfig,
    START_CHECKS,
    EncoderConfig as _E,
    SbertConfig as _S,
)
from ltrfeat.encoders.registry import encoder_kind, encoder_kinds
from ltrfeat.clicks.debias import CORRECTED_LOSSES

_SBERT_DEFAULTS = (  # SbertConfig's defaults that differ from the CLSM/DSSM ones --help shows
    f"{_S.epochs} epoch, batch {_S.batch_size}, lr {_S.lr:.0e}, in-batch negatives only, gamma {_S.gamma:g}, "
    f"margin {_S.margin}"
).replace("e-0", "e-")
DEPRECATED_MODELS = {"sbert": "sbert-ft"}  # old --model spelling -> kind (sbert alone is the zero-shot MiniLM)
_SETTING = {"buckets": "n_buckets", "separate": "shared"}  # option -> training setting where the names differ
_NOT_SETTINGS = {"pairs", "from_docs", "field_pair", "spans_per_doc", "out", "model", "columns", "encoding"}
_NOT_SETTINGS |= {"label_map", "duplicates", "threads", "checkpoint", "resume", "as_json", "mlflow_uri"}
_NOT_SETTINGS |= {"debias", "propensity", "propensity_method", "clip", "queries", "docs", "log_format"}
_SPEC_TAKES = {"pairs", "out", "columns", "encoding", "label_map", "duplicates", "seed", "spec", "encoder_options"}
_SPEC_TAKES |= {"collection", "collection_field", "cache", "as_json"}

_CLICK_OPTIONS = (  # reading PAIRS as a click log
    click.option(
        "--debias",
        type=click.Choice(["none", "ipw", "pbm"]),
        default=None,
        help="PAIRS is a click log (impression-level, aggregated with or without positions, UBI; read as `clicks "
        "propensity` reads it): train on its clicks with the position bias uncorrected (none), corrected by "
        "clipped, self-normalised inverse propensity weighting (ipw) or by the relevance the position-based click "
        "model estimates (pbm). softmax and generalized losses only.",
    ),
    click.option(
        "--propensity",
        type=EXISTING_FILE,
        default=None,
        help="With --debias: the examination curve to correct with (a table of position, propensity, e.g. from a "
        "randomisation experiment) [default: estimated from the log].",
    ),
    click.option(
        "--propensity-method",
        type=click.Choice(["harvest", "em"]),
        default="harvest",
        help="With --debias and no --propensity: how the curve is estimated from the log.",
    ),
    *click_log_options(prefix="", when="--debias"),
    click.option(
        "--log-format",
        type=click.Choice(["tsv", "csv", "jsonl", "parquet", "ubi"]),
        default=None,
        help="With --debias: format of the click log [default: from the extension].",
    ),
)
_CLICK_NAMES = ("debias", "propensity", "propensity_method", "clip", "queries", "docs", "log_format")

_READING = option_group(
    "reading",
    columns_option("Column mapping, e.g. query=search_term,doc=product_title,label=relevance."),
    encoding_option("Text encoding of PAIRS."),
    label_map_option("Raw label -> integer grade: {maps}"),
    duplicates_option,
    *_CLICK_OPTIONS,
)

_START = option_group(
    "start",
    click.option(
        "--pretrain",
        type=click.Choice(["none", *PRETRAININGS]),
        default="none",
        help="rbm: DSE pre-training of the DSSM towers (layer-wise RBMs, CD-1) before fine-tuning.",
    ),
    click.option(
        "--teacher",
        default=None,
        metavar="sbert[=DIR]",
        help="clsm/dssm: first distil a sentence-transformer (sbert: the packaged all-MiniLM-L6-v2, "
        "sbert=DIR: a model directory) by matching its in-batch cosine rankings (KL), then train "
        "with --loss.",
    ),
    click.option(
        "--init",
        type=EXISTING_FILE,
        default=None,
        help="clsm/dssm: start from this encoder bundle (its vocabulary, towers and weights), e.g. one "
        "pre-trained with --from-docs DOCS --pair spans:title, and train it further on PAIRS.",
    ),
)

_TRAINING = option_group(
    "training",
    click.option(
        "--distill-epochs",
        type=int,
        default=_E.distill_epochs,
        help="With --teacher: distillation epochs over the training pairs.",
    ),
    click.option(
        "--distill-lr",
        type=float,
        default=_E.distill_lr,
        help="With --teacher: Adam learning rate of the distillation.",
    ),
    click.option(
        "--distill-weight",
        type=float,
        default=_E.distill_weight,
        help="With --teacher: keep the distillation (KL) term in the --loss training with this weight, "
        "so training on the judgments does not forget the teacher (1.0 chosen on Home Depot "
        "validation).",
    ),
    click.option(
        "--distill-patience",
        type=int,
        default=None,
        help="With --teacher: validate the student after every distillation epoch, stop after this many without "
        "improvement and keep the best [default: every --distill-epochs].",
    ),
    click.option(
        "--distill-rows",
        type=click.Choice(DISTILL_ROWS),
        default=_E.distill_rows,
        help="With --teacher: the training pairs the distillation reads; positives: only those labelled a "
        "positive (with --pair spans:FIELD the span -> own-document pairs, not the negatives: ~5x fewer steps).",
    ),
    click.option(
        "--keep-start-margin",
        type=float,
        default=_E.keep_start_margin,
        help="sbert-ft, and clsm/dssm with --init or --teacher: keep the starting model unless the best trained "
        "epoch beats its validation NDCG@10 by more than this many paired standard errors of the per-query "
        "differences (0: any gain).",
    ),
    click.option(
        "--topics",
        default=",".join(map(str, DeepMatchConfig.topics)),
        help="DeepMatch: FINE,COARSE LDA topic counts, the two patch resolutions (paper: 200,50).",
    ),
    click.option(
        "--patch-words",
        type=int,
        default=DeepMatchConfig.patch_words,
        help="DeepMatch: most probable words per side kept in each patch.",
    ),
    click.option(
        "--loss",
        type=click.Choice(LOSSES),
        default=_E.loss,
        help="softmax: DSSM/CLSM; generalized: GDSSM soft labels on every pair; hinge: DSE margin loss.",
    ),
    click.option(
        "--score",
        type=click.Choice(SCORES),
        default=None,
        help="clsm/dssm relevance: cosine of the vectors, or their raw dot product (DSE) "
        "[default: dot with --pretrain rbm, else cosine].",
    ),
    click.option("--epochs", type=click.IntRange(min=1), default=_E.epochs, help="Maximum epochs."),
    click.option(
        "--negatives",
        type=int,
        default=_E.negatives,
        help="J random corpus negatives per sample.",
    ),
    click.option(
        "--hard-negatives",
        type=int,
        default=_E.hard_negatives,
        help="Same-query lower-labelled negatives per sample.",
    ),
    click.option(
        "--in-batch/--no-in-batch",
        default=_E.in_batch,
        help="Also use the other documents of the mini-batch as negatives.",
    ),
    click.option(
        "--gamma",
        type=click.FloatRange(min=0, min_open=True),
        default=None,
        help="Softmax smoothing factor, multiplying the score [default: 10 cosine, 1 dot].",
    ),
    click.option(
        "--margin",
        type=float,
        default=None,
        help=f"Hinge loss margin [default: {_E.margin}; deepmatch {DeepMatchConfig.margin}].",
    ),
    click.option(
        "--batch-size",
        type=int,
        default=None,
        help=f"Samples per mini-batch [default: {_E.batch_size}; deepmatch {DeepMatchConfig.batch_size}].",
    ),
    click.option("--optimizer", type=click.Choice(OPTIMIZERS), default=_E.optimizer),
    click.option(
        "--lr",
        type=float,
        default=None,
        help="Learning rate [default: 1e-3 adam, 0.1 sgd].",
    ),
    click.option(
        "--soft-labels",
        type=click.Choice(SOFT_LABELS),
        default=_E.soft_labels,
        help="Grades -> [0,1] linearly, click counts c -> c/(c+s), or labels already in [0,1].",
    ),
    click.option(
        "--click-scale",
        type=click.FloatRange(min=0, min_open=True),
        default=_E.click_scale,
        help="s in c/(c+s) for --soft-labels clicks.",
    ),
    click.option(
        "--min-positive",
        type=float,
        default=_E.min_positive,
        help="Soft label from which a pair is a positive (softmax, hinge).",
    ),
    click.option(
        "--val-fraction",
        type=click.FloatRange(min=0, max=1, max_open=True),
        default=_E.val_fraction,
        help="Share of queries held out for early stopping on NDCG@10 (0: none).",
    ),
    click.option(
        "--patience",
        type=int,
        default=_E.patience,
        help=f"Validation checkpoints in a row without improvement before stopping (sbert-ft: {_S.patience}); with a "
        "start to keep (sbert-ft, --init, --teacher) a checkpoint improves only when it beats the start clearly.",
    ),
    click.option(
        "--val-per-epoch",
        type=int,
        default=None,
        help=f"Validation checkpoints per epoch [clsm/dssm: {START_CHECKS} with --init or --teacher, else 1; "
        f"sbert-ft: {_S.val_per_epoch}].",
    ),
    click.option(
        "--min-count",
        type=int,
        default=_E.min_count,
        help="Trigrams rarer than this map to the unknown id.",
    ),
    click.option("--buckets", type=click.IntRange(min=1), default=None, help="Hash trigrams into N buckets instead."),
    click.option("--shared", is_flag=True, help="One tower for queries and documents."),
    click.option("--seed", type=int, default=_E.seed),
)

_WEAK = option_group(
    "weak",
    click.option(
        "--from-docs",
        type=EXISTING_FILE,
        default=None,
        help="Instead of PAIRS: weak supervision from a documents table (docid + fields).",
    ),
    click.option(
        "--pair",
        "field_pair",
        default="title:body",
        help="With --from-docs: QUERY_FIELD:DOC_FIELD (the first field plays the query), or spans:FIELD "
        "(query-like spans of 1-4 words of each document's FIELD, matched to the whole FIELD).",
    ),
    click.option(
        "--spans-per-doc",
        type=int,
        default=4,
        help="With --pair spans:FIELD: spans drawn per document.",
    ),
)

_SPEC = option_group(
    "like_ablate",
    click.option(
        "--spec",
        default=None,
        metavar="SPEC",
        help="Train what `ablate --encoder SPEC` trains in every fold (e.g. clsm:generalized+spans+teacher), once, "
        "on all of PAIRS: the ablation's options, starting point, validation and keep-start rule; --seed is its "
        "--split-seed. Takes only PAIRS, the reading options, --seed, --out and the three options below; with "
        "--debias PAIRS is the ablation's --click-log, corrected as `ablate --click-log --debias` corrects it.",
    ),
    click.option(
        "--encoder-option",
        "encoder_options",
        multiple=True,
        metavar="KEY=VALUE",
        help="With --spec: the ablation's --encoder-option values (repeatable).",
    ),
    click.option(
        "--collection",
        type=EXISTING_FILE,
        default=None,
        help="With --spec: the ablation's --collection (unlabelled documents for +spans / +spans+teacher).",
    ),
    click.option("--collection-field", default="title", help="With --spec and --collection."),
    click.option(
        "--cache",
        type=DIR,
        default=None,
        help="With --spec: the ablation's --cache; its span pre-training and MiniLM vectors are reused.",
    ),
)

_RUN = option_group(
    "run",
    threads_option(default=0, what="of torch"),
    click.option(
        "--checkpoint",
        type=FILE,
        default=None,
        help="Checkpoint rewritten each epoch [default: OUT.ckpt, removed on success].",
    ),
    click.option(
        "--resume",
        type=EXISTING_FILE,
        default=None,
        help="Continue an interrupted run from its checkpoint (same PAIRS and options).",
    ),
    click.option(
        "--json", "as_json", is_flag=True, help="Print the summary and every epoch as one JSON object (default: text)."
    ),
)


@click.command("train-encoder")
@click.argument("pairs", required=False, type=click.Path(exists=True))
@_WEAK
@click.option("--out", "out", required=True, type=FILE, help="Encoder bundle to write (.ltrenc).")
@_READING
@click.option(
    "--model",
    default="clsm",
    metavar="KIND",
    callback=lambda ctx, param, value: _model(value),
    help="The encoder kind: "
    + ", ".join(k.name for k in encoder_kinds().values() if k.trainable)
    + ". clsm / dssm: text encoders (cosine); deepmatch: pair interaction model (match score); sbert-ft: "
    f"fine-tune a sentence-transformer (its own defaults for options not given: {_SBERT_DEFAULTS}). --model sbert: "
    "the old spelling of sbert-ft.",
)
@_START
@_TRAINING
@_RUN
@sbert_options
@_SPEC
@mlflow_options()
def train_encoder_cmd(pairs, weak, out, reading, model, start, training, run, like_ablate, tracking, **_sbert):
    """Train a DSSM or CLSM text encoder (or another --model KIND) on PAIRS (a judged-pairs or click table:
    query text, document text, label or click count; with --debias, any click log, the directory `serve
    --event-log` wrote included) and write it as one .ltrenc bundle.

    Validation NDCG@10 of the encoder's score (held-out queries) drives early stopping;
    the best epoch is kept. The score is the cosine of the two texts' vectors, or with
    --score dot (DSE; the default with --pretrain rbm) their raw dot product, which
    extract/serve then emit as <name>_<field>_dot. The same seed gives a bit-identical bundle.

    --model deepmatch trains the DeepMatch interaction model instead (LDA patches, large-margin
    loss on (q, d+, d-) triples; it reads --checkpoint, --resume, --epochs, --negatives, --hard-negatives, --margin,
    --batch-size, --lr, --soft-labels, --min-positive, --val-fraction, --patience, --val-per-epoch, --seed,
    --threads).

    \b
    Example (Home Depot judgments, averages 1..3 mapped to grades 0..6):
      ltrfeat train-encoder train.csv --encoding latin-1 \\
        --columns query=search_term,doc=product_title,docid=product_uid,label=relevance \\
        --label-map linear:1:3:7 --model clsm --loss generalized --epochs 5 --out hd.ltrenc

    \b
    Example (click counts, DSSM, resuming after an interruption):
      ltrfeat train-encoder clicks.tsv --model dssm --soft-labels clicks --out m.ltrenc
      ltrfeat train-encoder clicks.tsv --model dssm --soft-labels clicks --out m.ltrenc --resume m.ltrenc.ckpt

    \b
    Example (DeepMatch, and a DSE-style DSSM: RBM pre-training, then the hinge loss):
      ltrfeat train-encoder train.csv --model deepmatch --topics 50,10 --epochs 3 --out dm.ltrenc
      ltrfeat train-encoder train.csv --model dssm --pretrain rbm --loss hinge --out dse.ltrenc
      ltrfeat train-encoder train.csv --model dssm --loss hinge --score dot --out dot.ltrenc

    \b
    Example (distil the packaged MiniLM into a CLSM, then train it with the GDSSM loss):
      ltrfeat train-encoder train.csv --model clsm --loss generalized --teacher sbert \\
        --distill-epochs 5 --out distilled.ltrenc

    \b
    Example (fine-tune the packaged all-MiniLM-L6-v2 with the GDSSM loss, 4 of its 6 layers frozen):
      ltrfeat train-encoder train.csv --encoding latin-1 \\
        --columns query=search_term,doc=product_title,docid=product_uid,label=relevance \\
        --model sbert-ft --loss generalized --freeze-layers 4 --max-seq-length 32 --out ft.ltrenc
      ltrfeat extract --pairs judged.tsv --encoder sbert-ft=ft.ltrenc --out judged.letor

    \b
    Example (a click log with positions, the position bias corrected by inverse propensity weighting):
      ltrfeat train-encoder world/clicks_impressions.tsv --docs world/docs.tsv --debias ipw \\
        --loss generalized --out ipw.ltrenc

    \b
    Example (no click log: each document's title as the query, its body as the clicked text):
      ltrfeat train-encoder --from-docs docs.tsv --pair title:body --model clsm --out weak.ltrenc
    """
    ctx = click.get_current_context()
    if pairs is not None and reading["debias"] is None and Path(pairs).is_dir():
        raise click.UsageError(
            f"PAIRS {pairs} is a directory: the event log `serve --event-log` wrote is a click log, "
            "give --debias ipw, pbm or none (and --docs for the documents' text)"
        )
    if like_ablate["spec"] is not None:
        _train_like_ablate(ctx, pairs, out, reading, training["seed"], like_ablate)
        return
    _check_clicks_options(ctx, reading, weak["from_docs"])
    table = _pairs_or_weak_pairs(pairs, weak, reading, training["seed"])
    kind = encoder_kind(model)
    settings, trainer_args = _given_settings(ctx, kind)
    if table is None:
        table = _click_table(pairs, reading, kind, settings, training["seed"])
    if weak["from_docs"]:
        settings["soft_labels"] = "identity"
    if kind.scores and settings.get("score") is None:
        settings["score"] = kind.default_score(settings.get("pretrain"))
    if out:
        check_writable(out)  # before the training, not after it
    uri = tracking["mlflow_uri"]
    if uri is not None:
        from ltrfeat.core.tracking import check_store

        check_store(uri)
    config = _checked_config(kind, settings, table)
    if trainer_args.get("init") is not None:
        trainer_args["init"] = kind.load(trainer_args["init"])
    with freed_memory_kept():
        encoder, history = fit_and_save(
            lambda ckpt: kind.train(
                table, config, threads=run["threads"] or None, checkpoint=ckpt, resume=run["resume"], **trainer_args
            ),
            out,
            run["checkpoint"],
        )
    _print_summary(_summary(encoder, out) | {"epochs": _epochs(history)}, as_json=run["as_json"])
    if uri is not None:
        from ltrfeat.experiments.tracking_runs import track_encoder

        click.echo(
            f"mlflow: run {track_encoder(uri, out, {'model': kind.name} | config.to_dict(), history)} at {uri}",
            err=True,
        )


def _pairs_or_weak_pairs(pairs, weak: dict, reading: dict, seed: int):
    """The training table of PAIRS (a judged-pairs table) or ``--from-docs``; None for a click log (``--debias``),
    read once the kind's loss is known."""
    if weak["from_docs"]:
        return _weak_pairs(
            weak["from_docs"],
            weak["field_pair"],
            encoding=reading["encoding"],
            pairs=pairs,
            seed=seed,
            spans_per_doc=weak["spans_per_doc"],
        )
    if not pairs:
        raise click.UsageError("give PAIRS or --from-docs DOCS")
    return None if reading["debias"] is not None else read_pairs_table(pairs, reading)


def _checked_config(kind, settings: dict, table):
    """The kind's config from the settings, its holdout checked against the table before any training step."""
    from ltrfeat.encoders.training_pairs import check_holdout, table_queries

    try:
        config = kind.config.from_dict(settings)
    except ValueError as exc:
        raise click.UsageError(str(exc)) from None
    check_holdout(table_queries(table), config.val_fraction)
    return config


def _check_clicks_options(ctx: click.Context, reading: dict, from_docs) -> None:
    """The click-log options go with --debias (a click log), the pairs-table options without it."""
    if reading["debias"] is None:
        given = [n for n in _CLICK_NAMES if _given(ctx, n)]
        if given:
            raise click.UsageError(f"--{given[0].replace('_', '-')} goes with --debias (PAIRS is then a click log)")
        return
    if from_docs:
        raise click.UsageError("--debias reads PAIRS as a click log: give PAIRS, not --from-docs")
    table_options = [n for n in ("columns", "label_map", "duplicates") if _given(ctx, n)]
    if table_options:
        raise click.UsageError(
            f"--{table_options[0].replace('_', '-')} reads a pairs table; with --debias PAIRS is a click log "
            "(columns query or qid, docid, position, clicked or impressions and clicks)"
        )


def _click_table(path, clicks: dict, kind, settings: dict, seed: int):
    """``--debias``: the training table of the click log at ``path`` (its soft-label mapping set in ``settings``),
    with a line on stderr saying what trained it and how the position bias was handled."""
    from ltrfeat.clicks.debias import click_labels
    from ltrfeat.clicks.log import read_click_log
    from ltrfeat.clicks.propensity import read_propensity_curve

    loss = settings.get("loss", getattr(kind.config, "loss", None))
    if loss not in CORRECTED_LOSSES:
        raise click.UsageError(
            f"--debias trains with --loss {' or '.join(CORRECTED_LOSSES)}"
            + (f", not {loss}" if loss else f"; --model {kind.name} has no --loss")
        )
    log = read_click_log(path, queries=clicks["queries"], docs=clicks["docs"], fmt=clicks["log_format"])
    curve = read_propensity_curve(clicks["propensity"]) if clicks["propensity"] else None
    labels = click_labels(
        log,
        debias=clicks["debias"],
        loss=loss,
        propensity=curve,
        method=clicks["propensity_method"],
        clip=clicks["clip"],
        seed=seed,
    )
    if settings.get("soft_labels", labels.soft_labels) != labels.soft_labels:
        raise click.UsageError(
            f"--debias {clicks['debias']} with the {loss} loss trains on soft labels {labels.soft_labels}; "
            "drop --soft-labels"
        )
    settings["soft_labels"] = labels.soft_labels
    record = labels.record
    click.echo(
        f"clicks: {record['impressions']} impressions, {record['clicks']} clicks on {record['pairs']} "
        f"(query, document) pairs of {path}",
        err=True,
    )
    if record["debias"] != "none":
        values = ", ".join(f"{v:.3g}" for v in record["propensity"]["values"])
        click.echo(
            f"position bias corrected by {record['debias']} (propensity by position, {record['propensity']['method']}:"
            f" {values})",
            err=True,
        )
    elif record["has_positions"]:
        click.echo(
            "note: the log has positions but --debias none trains on uncorrected clicks, which partly teach what "
            "the production ranker put on top; --debias ipw or pbm corrects the position bias",
            err=True,
        )
    return labels.pairs


def _print_summary(summary: dict, *, as_json: bool) -> None:
    """The training's summary: one JSON object with ``--json``, else lines of text."""
    if as_json:
        click.echo(json.dumps(summary))
        return
    head = f"{summary['spec']}: " if "spec" in summary else ""
    scores = ", ".join(
        f"{k.replace('val_', 'validation ').replace('ndcg', 'NDCG')} {v:.4f}"
        for k, v in summary.items()
        if k.startswith("val_") and isinstance(v, (int, float))
    )
    click.echo(f"{head}best epoch {summary['best_epoch']}" + (f", {scores}" if scores else ""))
    if "keep_start" in summary:
        click.echo(f"  keep start: {json.dumps(summary['keep_start'])}")
    for epoch in summary.get("epochs", []):
        values = [
            f"{k.replace('_', ' ')} {v:.4f}"
            for k, v in epoch.items()
            if k not in ("epoch", "seconds") and isinstance(v, (int, float))
        ]
        click.echo(f"  epoch {epoch['epoch']}: {', '.join(values)} ({epoch.get('seconds', 0):.1f} s)")
    click.echo(f"wrote {summary['out']}")


def _summary(encoder, out) -> dict:
    """The one-line JSON summary's fields of a trained ``encoder`` written to ``out``."""
    validation = encoder.training["validation"]
    return {
        "out": str(out),
        "best_epoch": encoder.training["best_epoch"],
        "val_ndcg@10": validation["ndcg@10"],
        **{k.replace("ndcg@10", "val_ndcg@10"): v for k, v in validation.items() if k != "ndcg@10"},
        **({"keep_start": encoder.training["keep_start"]} if "keep_start" in encoder.training else {}),
    }


def _epochs(history) -> list:
    return [{k: h[k] for k in ("epoch", "train_loss", "val_ndcg@10", "seconds") if k in h} for h in history]


def _train_like_ablate(ctx: click.Context, pairs, out, reading: dict, seed: int, like: dict) -> None:
    """``--spec``: the encoder ``ablate --encoder SPEC`` trains in every fold, trained once on all of ``pairs`` (with
    ``--debias``: on the click log ``pairs``, as ``ablate --click-log`` trains it)."""
    from ltrfeat.cli._options import parse_key_values
    from ltrfeat.experiments.ablate import PairsSource, train_like_ablate

    extra = sorted(n for n in ctx.params if n not in _SPEC_TAKES | set(_CLICK_NAMES) and _given(ctx, n))
    if extra:
        raise click.UsageError(
            f"--{extra[0].replace('_', '-')} does not go with --spec: the spec sets the model and its training "
            "as in the ablation; give training options as --encoder-option KEY=VALUE"
        )
    if not pairs:
        raise click.UsageError(
            "--spec trains on PAIRS: give the ablation's --pairs table (or its --click-log with --debias)"
        )
    _check_clicks_options(ctx, reading, None)
    clicks = reading["debias"] is not None
    check_writable(out)
    source = PairsSource(
        pairs,
        encoders=(like["spec"],),
        columns=reading["columns"],
        encoding=reading["encoding"],
        label_map=reading["label_map"],
        duplicates=reading["duplicates"],
        collection=like["collection"],
        collection_field=like["collection_field"],
        split_seed=seed,
        encoder_options=parse_key_values(like["encoder_options"], option="--encoder-option", example="epochs=5") or {},
        **(_click_source(pairs, reading) if clicks else {}),
    )
    encoder, spec = train_like_ablate(
        source, cache=like["cache"], say=lambda line: click.echo(line, err=True), clicks_only=clicks
    )
    encoder.save(out)  # atomically, as every bundle
    _print_summary({"spec": spec.text} | _summary(encoder, out), as_json=ctx.params["as_json"])


def _click_source(path, clicks: dict) -> dict:
    """The :class:`~ltrfeat.experiments.ablate.PairsSource` fields of ``--debias``'s click log at ``path``."""
    return {
        "click_log": path,
        "debias": clicks["debias"],
        "propensity": clicks["propensity"],
        "propensity_method": clicks["propensity_method"],
        "clip": clicks["clip"],
        "click_queries": clicks["queries"],
        "click_docs": clicks["docs"],
        "click_format": clicks["log_format"],
    }


def _model(value: str) -> str:
    """``--model``: a trainable kind's name (the deprecated spelling with a note)."""
    if value in DEPRECATED_MODELS:
        new = DEPRECATED_MODELS[value]
        click.echo(
            f"note: --model {value} is deprecated, write --model {new} ({value} alone means the zero-shot model)",
            err=True,
        )
        value = new
    trainable = [k.name for k in encoder_kinds().values() if k.trainable]
    if value not in trainable:
        raise click.BadParameter(f"{value!r} is not a trainable encoder kind; use one of {', '.join(trainable)}")
    return value


def _given(ctx: click.Context, name: str) -> bool:
    source = ctx.get_parameter_source(name)
    return source is not None and source != ParameterSource.DEFAULT


def _given_settings(ctx: click.Context, kind) -> tuple[dict, dict]:
    """The training settings and trainer arguments given on the command line, for ``kind`` (a usage error for an
    option the kind's config and trainer do not take)."""
    if _given(ctx, "shared") and _given(ctx, "separate"):
        raise click.UsageError("--shared and --separate exclude each other")
    settings: dict = {"model": kind.name} if "model" in kind.config.names() else {}  # CLSM/DSSM: the architecture
    trainer_args: dict = {}
    for name, value in ctx.params.items():
        if name in _NOT_SETTINGS or not _given(ctx, name):
            continue
        setting = _SETTING.get(name, name)
        if setting in kind.config.names():
            settings[setting] = _setting_value(name, value)
        elif name in kind.trainer_args:
            trainer_args[name] = value
        else:
            takers = [
                k.name
                for k in encoder_kinds().values()
                if k.trainable and ((k.config is not None and setting in k.config.names()) or name in k.trainer_args)
            ]
            raise click.UsageError(
                f"--{name.replace('_', '-')} is not an option of --model {kind.name}"
                + (f"; it is for --model {'/'.join(takers)}" if takers else "")
            )
    return settings, trainer_args


def _setting_value(name: str, value):
    """A command-line value as its training setting."""
    if name == "separate":
        return not value
    if name == "pretrain":
        return None if value == "none" else value
    if name == "topics":
        try:
            fine, coarse = (int(x) for x in value.split(","))
        except ValueError:
            raise click.UsageError(f"--topics {value!r} is not FINE,COARSE (e.g. 50,10)") from None
        return (fine, coarse)
    return value


def _weak_pairs(docs_path, field_pair, *, encoding, pairs, seed, spans_per_doc):
    """Training pairs from a documents table; label-0 pairs give validation something to rank."""
    import warnings

    from ltrfeat.encoders.weak import docs_to_pairs, parse_pair, span_pairs
    from ltrfeat.core.text import read_docs

    if pairs:
        raise click.UsageError("give either PAIRS or --from-docs DOCS, not both")
    query_field, doc_field = parse_pair(field_pair)
    fields = [doc_field] if query_field == "spans" else [query_field, doc_field]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        docs = read_docs(docs_path, fields=fields, encoding=encoding, missing="drop")
        if query_field == "spans":
            table = span_pairs(docs, field=doc_field, per_doc=spans_per_doc, negatives=4, seed=seed)
        else:
            table = docs_to_pairs(docs, query_field=query_field, doc_field=doc_field, negatives=4, seed=seed)
    for w in caught:
        click.echo(f"warning: {w.message}", err=True)
    return table
