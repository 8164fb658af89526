"""``ltrfeat ablate``: does a neural feature lift LambdaMART? Folds × feature sets × seeds, with a report."""

from __future__ import annotations

import functools
import json
import os

import click

from ltrfeat.cli._paths import DIR, EXISTING_DIR, FILE

from ltrfeat.cli._options import (
    click_log_options,
    SectionedCommand,
    config_file_record,
    option_group,
    columns_option,
    duplicates_option,
    encoding_option,
    label_map_option,
    MLFLOW,
    notices,
    parse_key_values,
    resampling_options,
    selection_config,
    ranker_options,
    selection_options,
    ties_option,
)
from ltrfeat.clicks.debias import DEBIAS
from ltrfeat.clicks.propensity import METHODS as PROPENSITY_METHODS
from ltrfeat.core.errors import LtrfeatError
from ltrfeat.core.letor import NAN_POLICIES
from ltrfeat.core.metrics import GAINS, NO_RELEVANT, Conventions
from ltrfeat.core.settings import SEED
from ltrfeat.core.text import CONFLICTS
from ltrfeat.experiments.fold_plans import MIN_FOLDS
from ltrfeat.experiments.crossfit import CrossFitConfig
from ltrfeat.experiments.defaults import DEFAULTS, ENCODER_DEFAULTS, METRICS, QUICK
from ltrfeat.experiments.span_settings import SPAN_MOD_HELP
from ltrfeat.encoders.spec import spec_help, spec_metavar
from ltrfeat.rankers.choices import TUNE_METHODS

# ltrfeat.experiments.ablate (LightGBM, XGBoost, matplotlib) is imported inside the command so that every other
# ltrfeat command starts fast; the defaults shown here come from ltrfeat.experiments.defaults.


def _both(name: str) -> str:
    """``DEFAULTS[name]; --quick: QUICK[name]`` in words."""

    def words(value):
        return ",".join(map(str, value)) if isinstance(value, tuple) else str(value)

    return f"{words(DEFAULTS[name])}; --quick: {words(QUICK[name])}"


def _neural_groups(pairs) -> dict:
    groups = {}
    for pair in pairs:
        name, sep, spec = pair.partition("=")
        if not sep or not name.strip() or not spec.strip():
            raise LtrfeatError(
                f"--neural {pair!r} is not NAME=SPEC", fix="e.g. --neural clsm=47 or --neural clsm=clsm_title_cos"
            )
        if name.strip() in groups:
            raise LtrfeatError(f"--neural group {name.strip()!r} is given twice", fix="give each group once")
        groups[name.strip()] = spec.strip()
    return groups


def _seeds(ctx, param, text: str | None) -> list[int] | None:
    """``--seeds 0,1,2`` as integers, each a seed (checked while parsing)."""
    if text is None:
        return None
    try:
        seeds = [int(s) for s in text.split(",") if s.strip()]
    except ValueError:
        raise click.BadParameter(f"{text!r} is not a comma-separated list of integers (e.g. 0,1,2)") from None
    for seed in seeds:
        if not SEED.accepts(seed):
            raise click.BadParameter(f"seed {seed} is not {SEED}")
    return seeds


def _propensity(ctx, param, text: str) -> tuple[str, str | None]:
    """``--propensity harvest|em|FILE`` as ``(estimation method, curve file or None)``."""
    if text in PROPENSITY_METHODS:
        return text, None
    if not os.path.isfile(text):
        raise click.BadParameter(f"{text!r} is neither {' nor '.join(PROPENSITY_METHODS)} nor a file")
    return PROPENSITY_METHODS[0], text


def _budget(ctx, param, text: str | None) -> float | None:
    """``--budget 15m`` as seconds (checked while parsing)."""
    if text is None:
        return None
    from ltrfeat.experiments.cost_plan import parse_duration

    try:
        return parse_duration(text)
    except LtrfeatError as exc:
        raise click.BadParameter(f"{exc.problem.removeprefix('--budget ')}; {exc.fix}") from None


_TEXT_MODE = option_group(
    "text",
    columns_option("Text mode: pairs column mapping, e.g. query=search_term,doc=product_title."),
    encoding_option("Text mode: encoding of the tables."),
    label_map_option("Text mode: label mapping ({maps}).", sep=" | "),
    click.option(
        "--conflicts",
        type=click.Choice(CONFLICTS),
        default=CrossFitConfig.conflicts,
        help="Text mode: an id naming different texts on different rows fails, or keeps its first text.",
    ),
    click.option("--lexical", default="all", help="Text mode: lexical features (names or 'all')."),
    click.option(
        "--encoder",
        "encoders",
        multiple=True,
        metavar=spec_metavar(),
        help="Text mode: encoder to cross-fit (repeatable). " + spec_help(SPAN_MOD_HELP),
    ),
    click.option(
        "--train-pairs",
        "train_pairs_path",
        type=FILE,
        default=None,
        help="Text mode: separate encoder training table (e.g. a click log: query, doc, label/clicks); "
        "filtered by query text so no fold's test query is trained on. Default: the judged pairs.",
    ),
    click.option("--train-columns", default=None, help="Column mapping of --train-pairs."),
    click.option(
        "--click-log",
        "click_log_path",
        type=click.Path(),
        default=None,
        help="Text mode: a click log the encoders train on instead of the judged pairs (impression-level, "
        "aggregated with or without positions, UBI event records, serve's --event-log directory; read as `clicks "
        "summary` reads it), filtered by "
        "query text as --train-pairs is; its clicks become labels by --debias.",
    ),
    click.option(
        "--debias",
        type=click.Choice(DEBIAS),
        default="none",
        help="With --click-log: the position bias left uncorrected (none), corrected by clipped, self-normalised "
        "inverse propensity weighting (ipw) or by the relevance the position-based click model estimates (pbm); "
        "softmax and generalized losses only.",
    ),
    click.option(
        "--propensity",
        default="harvest",
        metavar="harvest|em|FILE",
        callback=_propensity,
        help="With --click-log: the examination curve to correct with, estimated from the log by intervention "
        "harvesting (harvest) or EM under the position-based model (em), or read from FILE (a table of position, "
        "propensity, e.g. from a randomisation experiment).",
    ),
    *click_log_options(prefix="click-", when="--click-log"),
    click.option(
        "--collection",
        "collection_path",
        type=FILE,
        default=None,
        help="Text mode: unlabelled documents (docid + --collection-field) added to the pairs' own documents "
        "for the +spans / +spans+teacher pre-training; no query or label is read from it.",
    ),
    click.option(
        "--collection-field",
        default="title",
        help="Text mode: the --collection column whose text the +spans / +spans+teacher pre-training reads.",
    ),
    click.option(
        "--k-folds",
        type=click.IntRange(min=MIN_FOLDS),
        default=CrossFitConfig.k,
        help="Text mode: outer query folds (each trained encoder costs k + k(k-1)/2 trainings: 6 for 3 folds, "
        "15 for 5).",
    ),
    click.option(
        "--valid-fraction",
        type=click.FloatRange(0, 0.5),
        default=CrossFitConfig.valid_fraction,
        help="Text mode: share of each fold's ranker queries held out for the rankers' early stopping (the "
        "encoders' share: --encoder-option val_fraction).",
    ),
    click.option(
        "--encoder-option",
        "encoder_options",
        multiple=True,
        metavar="KEY=VALUE",
        help="Text mode: encoder training option (repeatable), e.g. epochs=5, negatives=4, gamma=10; "
        "MODEL.KEY=VALUE applies to one model and wins over KEY (sbert-ft.freeze_layers=4, clsm.epochs=6); "
        "sbert.engine=auto|onnx|torch runs the MiniLM passes and the fine-tuned MiniLM's scoring on ONNX Runtime or "
        "torch (auto: ONNX Runtime when installed). "
        f"Defaults: {', '.join(f'{k}={v}' for k, v in ENCODER_DEFAULTS.items())}.",
    ),
    click.option(
        "--encoder-jobs",
        type=int,
        default=CrossFitConfig.encoder_jobs,
        help="Text mode: CLSM/DSSM/DeepMatch trainings and MiniLM fine-tunings run at once in worker processes, sharing the cores "
        "(0 = one per CPU core when they read 20,000 rows or more, else 1; 1 = one after another in this process); "
        "the scores do not change. Ignored with --dask: every training is then a task of the cluster's workers.",
    ),
    click.option(
        "--continue-outer/--no-continue-outer",
        default=CrossFitConfig.continue_outer,
        help="Text mode, MiniLM fine-tuning (sbert-ft): each outer encoder continues an inner one on the one fold "
        "that one lacks, so every pair is seen once in 2 passes over the data instead of 3; --no-continue-outer "
        "fine-tunes every encoder from the base model.",
    ),
    duplicates_option,
    click.option(
        "--split-seed",
        type=int,
        default=CrossFitConfig.seed,
        help="Text mode: seed of folds and encoders.",
    ),
)


_LETOR_MODE = option_group(
    "letor",
    click.option("--fold-glob", default="Fold*", help="Pattern of the fold directories."),
    click.option(
        "--base", default=None, help="LETOR mode: base (lexical) features: ids, id ranges and names, e.g. 1-40."
    ),
    click.option(
        "--neural",
        multiple=True,
        metavar="NAME=SPEC",
        help="LETOR mode: a neural feature group (repeatable), e.g. --neural clsm=clsm_title_cos or --neural g=41-46.",
    ),
)
_PLANNING = option_group(
    "planning",
    click.option(
        "--alone",
        default=None,
        help="Features ranked alone besides every neural feature (default: base features named bm25*; "
        "'all' = every feature).",
    ),
    click.option("--base-name", default="lexical", help="Name of the base feature set."),
)
_EVALUATION = option_group(
    "evaluation",
    click.option(
        "--seeds", default=None, callback=_seeds, help=f"Comma-separated ranker seeds [default: {_both('seeds')}]."
    ),
    click.option(
        "--metrics",
        default=METRICS,
        help="Metrics; a bare number repeats the previous metric.",
    ),
    click.option(
        "--no-relevant",
        type=click.Choice(NO_RELEVANT),
        default=Conventions.no_relevant,
        help="Queries without a relevant document: leave out, score 0, or score 1.",
    ),
    click.option(
        "--gain",
        type=click.Choice(GAINS),
        default=Conventions.gain,
        help="NDCG gain: 2^rel-1 or linear rel.",
    ),
    ties_option(),
    click.option(
        "--resamples",
        type=int,
        default=None,
        help=f"Bootstrap and randomisation-test resamples [default: {_both('resamples')}].",
    ),
    click.option(
        "--nan-policy",
        type=click.Choice(list(NAN_POLICIES)),
        default="keep",
        help="NaN/inf feature values: keep as missing, replace by 0, or fail.",
    ),
)
_OUTPUT = option_group(
    "output",
    click.option(
        "--report",
        "report_dir",
        type=DIR,
        required=True,
        help="Report directory (report.md, report.json, per_query.tsv, timings.json, PNG plots).",
    ),
    click.option(
        "--overwrite",
        is_flag=True,
        help="Replace an existing report (and --write-features) directory that ltrfeat wrote, once the new one is "
        "complete.",
    ),
    click.option(
        "--write-runs",
        is_flag=True,
        help="Also write every set's test-fold scores as TREC runs (REPORT/runs/SET.run) with the test "
        "queries' qrels (REPORT/runs/qrels.txt), for trec_eval, ir-measures or ltrfeat evaluate --run.",
    ),
    click.option(
        "--write-features",
        type=DIR,
        default=None,
        help="Text mode: write DIR/features.letor (every judged pair with its lexical columns and out-of-fold "
        "encoder columns, scored by encoders that never saw its query: what the verdict's ranker trains on) and "
        "DIR/corpus.npz (the lexical corpus statistics, for serve/extract --corpus-stats); DIR is replaced as a "
        "whole when the ablation is done (an earlier one with --overwrite).",
    ),
    MLFLOW,
)
_RUN = option_group(
    "run",
    click.option(
        "--cache",
        "cache_dir",
        type=DIR,
        default=None,
        help="Keep work here for the next run, keyed by its inputs: trained encoders and their scores "
        "(text mode), MiniLM vectors, and every ranker run, so a re-run with one more encoder trains "
        "only that encoder and the feature sets that contain it.",
    ),
    click.option(
        "--quick",
        is_flag=True,
        help=f"Smoke run: seed {','.join(map(str, QUICK['seeds']))} only, {QUICK['n_estimators']} rounds, "
        f"{QUICK['resamples']} resamples (explicit options win).",
    ),
    click.option(
        "--dask",
        default=None,
        metavar="SCHEDULER|local[:N]",
        help="Run every encoder training and the folds x feature sets x seeds runs as Dask tasks (scheduler "
        "address or file, or local[:N] workers); results equal a local run. Needs ltrfeat[dask].",
    ),
    click.option(
        "--jobs",
        type=int,
        default=None,
        help="Worker processes for the ranker runs (0 = one per CPU core; default: one per core when all ranker "
        "fits together read 200,000 training rows or more, else 1); results equal a run with 1.",
    ),
    click.option(
        "--plan",
        "plan_only",
        is_flag=True,
        help="Print the plan every run starts with and stop: the encoder trainings, MiniLM pass and ranker runs, "
        "what --cache holds, the estimated CPU-seconds and wall time on this machine per stage and encoder, the "
        "dominant part and what would cut it; nothing is trained or written.",
    ),
    click.option(
        "--budget",
        default=None,
        metavar="DURATION",
        callback=_budget,
        help="Wall time the run may take (900s, 15m, 1h30m, 15:00): over it, the plan drops what you left at its "
        "default -- seeds to one, --quick rounds and resamples, fewer encoder epochs -- and says so before "
        "starting, or refuses with the cheapest plan's estimate.",
    ),
)


@click.command(
    "ablate",
    cls=SectionedCommand,
    first="Input (one of)",
    sections={
        "text": "Text mode (--pairs)",
        "letor": "LETOR mode (--folds)",
        "planning": "Feature sets",
        "evaluation": "Evaluation",
        "ranker": "Ranker",
        "selecting": "Model selection",
        "output": "Output",
        "run": "Running",
    },
    short={
        "folds_dir": "Fold directories (train, vali, test).",
        "pairs_path": "Judged pairs (query, doc, label, ...).",
        "columns": "Column mapping, e.g. query=search_term.",
        "encoding": "Encoding of the tables [{default}].",
        "label_map": "none | round | linear:LO:HI:N | threshold:T,..",
        "conflicts": "An id with two texts: error | first.",
        "lexical": "Lexical features (names or 'all') [{default}].",
        "encoders": "Encoder to cross-fit (repeatable), e.g. clsm:softmax, dssm:generalized, sbert.",
        "train_pairs_path": "Encoder training table (e.g. a click log).",
        "train_columns": "Column mapping of --train-pairs.",
        "click_log_path": "Click log the encoders train on (also UBI).",
        "debias": "Click labels: none | ipw | pbm [{default}].",
        "propensity": "Curve: harvest | em (from the log) | FILE.",
        "clip": "ipw: propensities clipped at [{default}].",
        "click_queries": "Its queries (qid, query); UBI: query records.",
        "click_docs": "Its documents (docid, text).",
        "collection_path": "Unlabelled docs for +spans(+teacher).",
        "collection_field": "Column of --collection read [{default}].",
        "k_folds": "Outer query folds [{default}].",
        "valid_fraction": "Share held out for early stopping [{default}].",
        "encoder_options": "Training option, e.g. epochs=5.",
        "encoder_jobs": "Trainings side by side [{default}: per core; not --dask].",
        "continue_outer": "MiniLM: outer continue inner fine-tunings.",
        "duplicates": "Pair judged twice: error|first|mean|max.",
        "split_seed": "Seed of folds and encoders [{default}].",
        "fold_glob": "Pattern of the fold directories [{default}].",
        "base": "Base (lexical) features, e.g. 1-40.",
        "neural": "Neural group (repeatable), e.g. g=41-46.",
        "alone": "Features ranked alone [bm25*] or 'all'.",
        "base_name": "Name of the base feature set [{default}].",
        "seeds": f"Ranker seeds [{_both('seeds')}].",
        "metrics": "Metrics [{default}].",
        "no_relevant": "Queries without a relevant doc [{default}].",
        "gain": "NDCG gain: 2^rel-1 or rel [{default}].",
        "ties": "Equal scores [{default}].",
        "resamples": f"Test and interval resamples [{DEFAULTS['resamples']}].",
        "nan_policy": "NaN/inf feature values [{default}].",
        "engine": "LambdaMART implementation [{default}].",
        "n_estimators": f"Boosting rounds [{_both('n_estimators')}].",
        "learning_rate": "Shrinkage [{default}].",
        "num_leaves": "Leaves per tree [{default}].",
        "early_stopping_rounds": "Early-stopping patience [{default}]; 0 = off.",
        "threads": "Threads per model [{default}]; 0 = all cores.",
        "params": "Engine parameter, e.g. min_data_in_leaf=50.",
        "select": "Choose each ranker by inner CV [{default}].",
        "candidates": "Candidates [ENGINE,linear,boost-best,...].",
        "deployable": "Only features and candidates this engine runs.",
        "tune": f"Tuned candidate: {' | '.join(TUNE_METHODS)} [{{default}}].",
        "tune_trials": "Optuna trials per set and fold [{default}].",
        "inner_folds": "Folds of the inner cross-validation [{default}].",
        "select_rule": "Selection rule [{default}: 1 SE per set].",
        "report_dir": "Report directory (report.html, .md, ...).",
        "overwrite": "Replace the report (and features) directory.",
        "write_runs": "Also write TREC runs + qrels to runs/.",
        "mlflow_uri": "Record the run in MLflow [{alone}].",
        "write_features": "Write out-of-fold features + corpus stats to ship.",
        "cache_dir": "Keep trained work here for reruns.",
        "quick": f"Smoke run: {len(QUICK['seeds'])} seed, {QUICK['n_estimators']} rounds, {QUICK['resamples']} resamples.",
        "dask": "Run on Dask (address or local[:N]).",
        "jobs": "Ranker processes [auto]; 0 = one per core.",
        "plan_only": "Print the plan and its cost estimate, then stop.",
        "budget": "Fit the run in DURATION (15m), or refuse.",
    },
    docs="docs/ablate.md",
)
@click.option(
    "--folds",
    "folds_dir",
    type=DIR,
    default=None,
    help="LETOR mode: directory of fold directories, each with train, vali (optional) and test files "
    "(.letor or .txt, optionally .gz).",
)
@click.option(
    "--pairs",
    "pairs_path",
    type=FILE,
    default=None,
    help="Text mode: judged pairs (query, doc, label; optional qid, docid) — lexical features are "
    "computed and --encoder encoders cross-fitted over query folds.",
)
@_TEXT_MODE
@_LETOR_MODE
@_PLANNING
@_EVALUATION
@ranker_options(
    n_estimators=None,
    n_estimators_help=f"Maximum boosting rounds [default: {_both('n_estimators')}].",
    threads=1,
    threads_what="of the LambdaMART engine per model (more only pays off for large folds)",
)
@_OUTPUT
@_RUN
@selection_options(
    default_on=True,
    deployable_help="Where you ship: every feature set keeps only the features this LTR engine computes (a set "
    "left with none is left out, said in one line), and the verdict's 'to ship' commands train among the "
    "candidates it can run (train-ranker --select --deployable) and export for it; the ablation itself compares "
    "every candidate.",
)
def ablate(folds_dir, pairs_path, text, letor, planning, evaluation, ranker, output, run, selecting):
    """Compare LambdaMART with and without neural features over query folds.

    Text mode (--pairs): lexical features are computed from a judged-pairs table and every --encoder is
    cross-fitted over --k-folds query folds, so no encoder scores a query it was trained on. LETOR mode
    (--folds): fold directories whose files already hold the columns (--base, --neural).

    Sets: the base features, base + each neural group, base + all groups, base + every group without a
    transformer (+light, beside MiniLM; reported, never recommended), and each neural feature alone;
    the same folds and seeds for all, so per-query metrics are paired; randomisation tests, Holm-adjusted
    across the report. Each ranker is chosen per fold by inner cross-validation on training queries
    (--no-select: plain LambdaMART). The report (report.html first) ends with a verdict in words.

    \b
    Examples:
      ltrfeat ablate --pairs data/judged.tsv --encoder clsm:softmax --encoder dssm:generalized \\
          --report ablation/
      ltrfeat ablate --folds MQ2008 --base 1-40 --neural g=41-46 --quick --report smoke/
      ltrfeat report ablation/ --open
    """
    from ltrfeat.experiments.ablate import FoldsSource, ablate_folds, ablate_pairs, plan_folds_ablation, plan_pairs

    if (folds_dir is None) == (pairs_path is None):
        raise click.UsageError("give exactly one of --folds DIR (LETOR mode) or --pairs FILE (text mode)")
    if pairs_path is not None and (letor["base"] is not None or letor["neural"]):
        raise click.UsageError(
            "--base/--neural are for --folds; in text mode the lexical features are "
            "the base and each --encoder is a neural group"
        )
    if output["mlflow_uri"] is not None:
        from ltrfeat.core.tracking import check_store

        check_store(output["mlflow_uri"])
    settings = _settings(ranker, evaluation, planning, output, run, selecting, split_seed=text["split_seed"])
    say = functools.partial(click.echo, err=True)
    with notices():
        if folds_dir is not None:
            source = FoldsSource(
                folds_dir,
                base=letor["base"],
                neural=_neural_groups(letor["neural"]),
                fold_glob=letor["fold_glob"],
                nan_policy=evaluation["nan_policy"],
            )
            if run["plan_only"]:
                _print_plan(
                    plan_folds_ablation(source, settings, say=say, engine_features=_engine_filter(settings.deployable))
                )
                return
            done = ablate_folds(source, settings, say=say, engine_features=_engine_filter(settings.deployable))
        else:
            pairs_source = _pairs_source(pairs_path, text)
            if run["plan_only"]:
                _print_plan(plan_pairs(pairs_source, settings, say=say))
                return
            done = ablate_pairs(pairs_source, settings, say=say, engine_features=_engine_filter(settings.deployable))
    _print_outcome(done)
    if output["mlflow_uri"] is not None:
        from ltrfeat.experiments.tracking_runs import track_ablation

        uri = output["mlflow_uri"]
        click.echo(f"mlflow: run {track_ablation(uri, done, settings)} at {uri}", err=True)


def _settings(ranker, evaluation, planning, output, run, selecting, *, split_seed: int):
    """The :class:`~ltrfeat.experiments.ablate.AblateSettings` the option groups describe."""
    from ltrfeat.experiments.ablate import AblateSettings

    return AblateSettings(
        report_dir=output["report_dir"],
        engine=ranker["engine"],
        seeds=evaluation["seeds"],
        n_estimators=ranker["n_estimators"],
        resamples=evaluation["resamples"],
        ranker_params={
            "learning_rate": ranker["learning_rate"],
            "num_leaves": ranker["num_leaves"],
            "early_stopping_rounds": ranker["early_stopping_rounds"],
            "n_jobs": ranker["threads"] or None,
            "params": parse_key_values(ranker["params"]),
        },
        metrics=evaluation["metrics"],
        gain=evaluation["gain"],
        no_relevant=evaluation["no_relevant"],
        ties=evaluation["ties"],
        # --deployable restricts the features and the verdict's "to ship" line: the ablation compares every candidate
        selection=selection_config(ranker["engine"], **(selecting | {"deployable": None}), seed=split_seed),
        deployable=selecting["deployable"],
        alone=planning["alone"],
        base_name=planning["base_name"],
        overwrite=output["overwrite"],
        write_runs=output["write_runs"],
        write_features=output["write_features"],
        cache=run["cache_dir"],
        quick=run["quick"],
        dask=run["dask"],
        jobs=run["jobs"],
        progress=not os.environ.get("CI"),
        config_file=config_file_record(),
        budget=run["budget"],
    )


def _pairs_source(pairs_path, text: dict):
    """Text mode's :class:`~ltrfeat.experiments.ablate.PairsSource` from the text-mode options."""
    from ltrfeat.experiments.ablate import PairsSource

    return PairsSource(
        pairs_path,
        encoders=tuple(text["encoders"]),
        columns=text["columns"],
        encoding=text["encoding"],
        label_map=text["label_map"],
        duplicates=text["duplicates"],
        conflicts=text["conflicts"],
        lexical=text["lexical"],
        train_pairs=text["train_pairs_path"],
        train_columns=text["train_columns"],
        click_log=text["click_log_path"],
        debias=text["debias"],
        propensity=text["propensity"][1],
        propensity_method=text["propensity"][0],
        clip=text["clip"],
        click_queries=text["click_queries"],
        click_docs=text["click_docs"],
        collection=text["collection_path"],
        collection_field=text["collection_field"],
        k_folds=text["k_folds"],
        valid_fraction=text["valid_fraction"],
        split_seed=text["split_seed"],
        encoder_options=parse_key_values(text["encoder_options"], option="--encoder-option", example="epochs=5") or {},
        encoder_jobs=text["encoder_jobs"],
        continue_outer=text["continue_outer"],
    )


def _print_outcome(done) -> None:
    """The ablation's headline table, marks, verdict and where its report is."""
    from ltrfeat.experiments.click_training import uncorrected_warnings
    from ltrfeat.experiments.report import SEED_HINT, headline_table, minilm_lines, seed_inert_sets
    from ltrfeat.experiments.verdict import verdict_lines

    result, summary = done.result, done.summary
    inert = seed_inert_sets(result)
    if inert:
        click.echo(
            f"notice: the seeds changed nothing for {', '.join(inert)}: {SEED_HINT} (--param KEY=VALUE)", err=True
        )
    for line in headline_table(result, summary):
        click.echo(line)
    stats = summary.statistics
    click.echo(
        f"marks: {stats['marks_test']}; * p < {stats['marks']['*']}, ** p < {stats['marks']['**']} "
        f"({len(summary.comparisons)} comparisons)"
    )
    click.echo(f"report: {done.report_dir / 'report.md'}")
    if summary.verdict:
        for line in verdict_lines(summary.verdict):
            click.echo(line)
    else:  # the verdict's lines end with these
        for warning in uncorrected_warnings(result.config.get("click_training") or {}):
            click.echo(f"warning: {warning}", err=True)
    for line in minilm_lines(result, summary):
        click.echo(line)
    click.echo(f"in words: {json.loads((done.report_dir / 'report.json').read_text())['summary']}")
    click.echo(f"page: {done.report_dir / 'report.html'}")


@click.command("compare")
@click.argument("report_dir", type=EXISTING_DIR)
@click.argument("pairs", nargs=-1, required=True, metavar="BASELINE:VARIANT...")
@click.option(
    "--metrics",
    default="ndcg@1,3,10",
    help="Metrics of the ablation to compare; a bare number repeats the previous metric.",
)
@resampling_options
@click.option("--json", "as_json", is_flag=True, help="Print the comparisons as JSON.")
def compare(report_dir, pairs, metrics, resamples, seed, as_json):
    """Head-to-head comparisons of feature sets of a finished ablation (its per_query.tsv).

    The ablation report compares every set with the base set; this compares any two sets, e.g. fine-tuned
    against zero-shot MiniLM, with the report's statistics (paired randomisation test, Holm-adjusted across
    the pairs and metrics given here; paired t-test; bootstrap interval; per-query wins/ties/losses).

    \b
    Example:
      ltrfeat compare hd/ lexical+sbert:lexical+sbert-ft-generalized lexical+sbert-ft-generalized:lexical+all
    """
    from pathlib import Path

    from ltrfeat.experiments.per_query import check_per_query_counts, read_per_query
    from ltrfeat.experiments.summary import head_to_head
    from ltrfeat.core.metrics import parse_metrics
    from ltrfeat.experiments.report import format_p, significance_mark

    parsed = []
    for pair in pairs:
        baseline, sep, variant = pair.partition(":")
        if not sep or not baseline or not variant or baseline == variant:
            raise LtrfeatError(
                f"{pair!r} is not BASELINE:VARIANT", fix="e.g. lexical+sbert:lexical+sbert-ft-generalized"
            )
        parsed.append((baseline, variant))
    per_query = read_per_query(Path(report_dir) / "per_query.tsv")
    check_per_query_counts(per_query, report_dir)
    comparisons = head_to_head(per_query, parsed, parse_metrics(metrics), seed=seed, n_resamples=resamples)
    if as_json:
        click.echo(
            json.dumps([c.to_dict() for c in comparisons], indent=1, default=lambda x: None if x is None else float(x))
        )
        return
    rows = [
        (
            "baseline",
            "variant",
            "metric",
            "baseline mean",
            "variant mean",
            "delta [95% CI]",
            "p (t)",
            "p (rand.)",
            "p (Holm)",
            "W/T/L",
            "queries",
        )
    ]
    for c in comparisons:
        lo, hi = c.ci95_delta
        rows.append(
            (
                c.baseline,
                c.variant,
                c.metric,
                f"{c.base_mean:.4f}",
                f"{c.variant_mean:.4f}",
                f"{c.delta:+.4f} [{lo:+.4f}, {hi:+.4f}]",
                format_p(c.p_ttest),
                format_p(c.p_randomization),
                format_p(c.p_holm) + significance_mark(c.p_holm),
                f"{c.wins}/{c.ties}/{c.losses}",
                str(c.n_queries),
            )
        )
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for r in rows:
        click.echo("  ".join(v.ljust(w) for v, w in zip(r, widths)).rstrip())
    click.echo(
        f"paired randomisation test ({resamples} resamples, seed {seed}), Holm-adjusted over "
        f"{len(comparisons)} comparisons; * p < 0.05, ** p < 0.01"
    )


def _print_plan(lines: list[str]) -> None:
    for line in lines:
        click.echo(line)


def _engine_filter(target: str | None):
    """The feature filter of the LTR engine ``target`` (what its plugin computes), None without one."""
    if target is None:
        return None
    import functools

    from ltrfeat.export.plugin_features import engine_features

    return functools.partial(engine_features, target=target)
