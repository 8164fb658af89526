"""``ltrfeat train-ranker``, ``evaluate`` and ``rank``: LambdaMART over LETOR / svmlight files."""

from __future__ import annotations

import contextlib
import dataclasses
import json

import click

from ltrfeat.cli._paths import FILE
import numpy as np

from ltrfeat.core import letor as letor_io
from ltrfeat.core.dataset import FeatureMap, RankingSet
from ltrfeat.cli._options import (
    scoring_options,
    encoding_option,
    lexical_options,
    MLFLOW,
    MLFLOW_REGISTER,
    notices,
    option_group,
    ranker_config,
    selection_config,
    selection_options,
    ranker_options,
    ties_option,
)
from ltrfeat.core.errors import LtrfeatError, ModelFileError, ParameterError
from ltrfeat.core.fileio import atomic_output, check_writable
from ltrfeat.core.metrics import (
    GAINS,
    NO_RELEVANT,
    MetricInputError,
    evaluate_queries,
    parse_metrics,
    summarise_queries,
)
from ltrfeat.core.trec import MISSING_QUERIES

EVALUATE_METRICS = "ndcg@1,3,10,recall@3,6,10,map"
# ltrfeat.rankers.lambdamart (LightGBM, XGBoost, scikit-learn: ~1 s) is imported inside the commands
# so that every other ltrfeat command starts fast.

_nan_option = click.option(
    "--nan-policy",
    type=click.Choice(list(letor_io.NAN_POLICIES)),
    default="keep",
    help="NaN/inf feature values: keep them as missing values for the engine, replace them by 0, or fail.",
)


def _read(
    path, nan_policy: str, align_to: FeatureMap | None = None, regroup: bool = True, position_path=None
) -> RankingSet:
    """Read a ranking file, by default regrouping non-contiguous queries (with a notice).

    LETOR and svmlight omit zero values, so in a file without a ``.features.json`` sidecar a
    default-named feature (``f<id>``) of ``align_to`` that never occurs is a column of zeros.
    """
    data = letor_io.read_letor(path, nan_policy=nan_policy, regroup=regroup, position_path=position_path)
    if align_to is None or FeatureMap.sidecar_path(path).exists():
        return data
    have = set(data.feature_map.ids)
    absent = [f for f in align_to if f.id not in have and f.name == f"f{f.id}"]
    if not absent:
        return data
    click.echo(f"notice: {path}: feature ids {_id_list([f.id for f in absent])} never occur; read as 0", err=True)
    features = sorted(list(data.feature_map) + absent, key=lambda f: f.id)
    X = np.zeros((len(data), len(features)), dtype=np.float32)
    position = {f.id: j for j, f in enumerate(features)}
    X[:, [position[i] for i in data.feature_map.ids]] = data.X
    return dataclasses.replace(data, X=X, feature_map=FeatureMap(features))


def _id_list(ids: list[int]) -> str:
    return ", ".join(map(str, ids[:10])) + (f" (+{len(ids) - 10} more)" if len(ids) > 10 else "")


@contextlib.contextmanager
def _label_file(paths: dict, error_type, default=None):
    """Name the file of a data error that has none (``exc.part``, if set, is a key of ``paths``)."""
    try:
        yield
    except error_type as exc:
        if exc.path is not None:
            raise
        raise LtrfeatError(exc.problem, path=paths.get(getattr(exc, "part", None), default), fix=exc.fix) from None


def _check_columns(trained_map: FeatureMap, data: RankingSet, path, what: str) -> None:
    """Refuse columns made differently from the training data's; warn about columns scored by an encoder
    trained on the file's own queries (the sidecar's pipeline records, :mod:`ltrfeat.features.pins`)."""
    from ltrfeat.encoders.leakage import leaked_columns
    from ltrfeat.features.pins import check_same_pipeline

    check_same_pipeline(trained_map, data.feature_map, path=path)
    leaked = leaked_columns(data.feature_map, trained_map.names)
    if leaked:
        name, count = next(iter(leaked.items()))
        click.echo(
            f"warning: {path}: {len(leaked)} column(s) ({', '.join(leaked)}) were scored by an encoder trained on "
            f"{count['seen']} of the file's {count['scored']} queries: {what} is optimistic (leakage); retrain the "
            "encoder without these queries",
            err=True,
        )


def _predict(model, data: RankingSet, path) -> np.ndarray:
    try:
        return model.predict(data)
    except ModelFileError as exc:
        raise ModelFileError(exc.problem, path=path, fix=exc.fix) from None


_TRAINING = option_group(  # with the ranker options: the RankerConfig
    "training",
    click.option(
        "--eval-at",
        type=int,
        default=10,
        help="k of the validation NDCG@k used for early stopping.",
    ),
    click.option("--seed", type=int, default=0),
)


@click.command("train-ranker")
@click.argument("train", type=FILE)
@click.option(
    "--valid",
    type=FILE,
    default=None,
    help="Validation file for early stopping on NDCG@--eval-at.",
)
@click.option(
    "--features",
    default=None,
    help="Feature ids, id ranges, names, name patterns and sources, e.g. 1-46,bm25_title, 'bm25_*', lexical or "
    "encoder:NAME, as ablate --alone takes them (default all).",
)
@option_group(
    "output",
    click.option(
        "--out",
        type=FILE,
        required=True,
        help="Model file (native engine format); OUT.meta.json is written beside it.",
    ),
    click.option(
        "--top",
        type=int,
        default=15,
        help="Features shown in the importance table.",
    ),
    MLFLOW,
    MLFLOW_REGISTER,
)
@ranker_options(n_estimators=500, threads=0)
@_TRAINING
@click.option(
    "--dask",
    default=None,
    metavar="SCHEDULER|local[:N]",
    help="Train on a Dask cluster (LightGBM DaskLGBMRanker / xgboost.dask) with query-aligned partitions; "
    "scheduler address or file, or local[:N] workers. Needs ltrfeat[dask].",
)
@_nan_option
@option_group(
    "clicks",
    click.option(
        "--positions",
        type=FILE,
        default=None,
        help="Display position (1 = top) of every row of TRAIN, one per line, when its labels are clicks "
        "(default TRAIN.position when it exists, LightGBM's convention).",
    ),
    click.option(
        "--position-bias",
        type=click.Choice(["engine", "ignore"]),
        default="engine",
        help="With positions: correct the clicks' position bias with the engine's own unbiased lambdarank "
        "(LightGBM Dataset position, XGBoost lambdarank_unbiased), or ignore the positions (the naive ranker).",
    ),
)
@selection_options(
    default_on=False,
    deployable_help="Only the features this LTR engine computes (those left out of --features are named in one "
    "line) and, with --select, the candidates it can run (not boost-best), so export-ranker accepts whatever "
    "is trained.",
)
def train_ranker(train, valid, features, output, ranker, training, dask, nan_policy, clicks, selecting):
    """Train a LambdaMART ranker on TRAIN and save it to --out.

    Queries are taken from qid: (or the svmlight .query file); non-contiguous queries are
    regrouped with a notice. Prints the early-stopping result and feature importance.

    With --select the model is chosen as ltrfeat ablate chooses it: the candidates (LambdaMART,
    tuned LambdaMART with --tune, a pairwise linear ranker, LambdaMART boosted from the best single
    feature, the best single feature) are compared by inner cross-validation over the queries of
    TRAIN and --valid, and the chosen one is refitted on them and saved (its kind is in
    OUT.meta.json; evaluate, rank, rerank and serve read every kind; export-ranker writes every kind
    but boost-best). --deployable es-ltr|opensearch-ltr keeps the features to those the engine computes
    and the candidates to those it can run.

    Clicks: when TRAIN's labels are clicks (1 clicked, 0 shown and not clicked) and TRAIN.position (or
    --positions) gives where each row was shown, the engine's own unbiased lambdarank corrects the
    position bias: LightGBM learns position factors beside the trees (Dataset position), XGBoost
    estimates click propensities by position (lambdarank_unbiased; each qid must then be one shown list
    with positions 1..n). --position-bias ignore trains the naive ranker on the same clicks.

    \b
    Examples:
      ltrfeat train-ranker S1.txt --valid S4.txt --engine lightgbm --out model.txt
      ltrfeat train-ranker train.letor --valid valid.letor --engine xgboost \\
          --features 1-46,bm25_title,clsm_title_cos --out model.json
      ltrfeat train-ranker S1.txt --valid S4.txt --dask local:2 --out model.txt
      ltrfeat train-ranker S1.txt --valid S4.txt --select --tune grid --out model.txt
      ltrfeat train-ranker S1.txt --valid S4.txt --select --deployable es-ltr --out model.txt
      ltrfeat train-ranker S1.txt --valid S4.txt --select --out model.txt --mlflow --mlflow-register shop
      ltrfeat train-ranker clicks.letor --positions clicks.letor.position --valid judged.letor --out model.txt
    """
    # label errors name their file; a feature mismatch can only be the validation file's
    out, uri, register = output["out"], output["mlflow_uri"], output["mlflow_register"]
    check_writable(out)  # before the training, not after it
    if register is not None and uri is None:
        raise click.UsageError("--mlflow-register needs --mlflow [URI]")
    if uri is not None:
        from ltrfeat.core.tracking import check_store

        check_store(uri)
    files = {"train": train, "valid": valid}
    _train_ranker(files, features, output, ranker, training, dask, nan_policy, clicks, selecting)
    if uri is not None:
        from ltrfeat.experiments.tracking_runs import track_ranker

        click.echo(f"mlflow: run {track_ranker(uri, out, register=register)} at {uri}", err=True)


def _train_ranker(files: dict, features, output, ranker, training, dask, nan_policy, clicks, selecting) -> None:
    """train-ranker on ``files`` (``train`` and ``valid`` paths, ``valid`` possibly None) with the option groups."""
    train, valid = files["train"], files["valid"]
    out, top = output["out"], output["top"]
    from ltrfeat.rankers.lambdamart import LabelError, LambdaMART, meta_path

    config = ranker_config(ranker, **training)
    selection = selection_config(config.engine, **selecting, seed=config.seed)
    if selection is not None and dask:
        raise click.UsageError("--select trains many small models locally; leave out --dask")
    with notices(), _label_file(files, (LabelError, ModelFileError), default=valid):
        train_data = _positioned(train, _read(train, nan_policy, position_path=clicks["positions"]), clicks)
        valid_data = None if valid is None else _read(valid, nan_policy, align_to=train_data.feature_map)
        if valid_data is not None:
            _check_columns(train_data.feature_map, valid_data, valid, "early stopping and model selection on it")
        features = _features(train_data.feature_map, features, selecting["deployable"])
        if train_data.position is not None and (selection is not None or dask):
            raise LtrfeatError(
                f"{'--select' if selection is not None else '--dask'} cannot train on clicks with positions (the "
                "engines' unbiased lambdarank runs in one local LambdaMART)",
                path=train,
                fix=f"leave out {'--select' if selection is not None else '--dask'}, or add --position-bias ignore",
            )
        if selection is not None:
            _train_selected(train_data, valid_data, features, config, selection, out=out)
            return
        model = LambdaMART.from_config(config, features=features)
        if dask:
            from ltrfeat.core import dask_cluster
            from ltrfeat.rankers.dask_training import fit_dask

            with dask_cluster.dask_client(dask) as client:
                fit_dask(model, train_data, valid_data, client=client, verbose=True)
        else:
            model.fit(train_data, valid_data, verbose=True)
    model.metadata_["missing_values"]["read_nan_policy"] = nan_policy
    model.metadata_["training"] |= {"train_file": str(train), "valid_file": None if valid is None else str(valid)}
    model.metadata_["ranker_config"] = config.to_dict()
    if train_data.position is None and clicks["position_bias"] == "ignore":
        model.metadata_["position_bias"] = {"correction": "none (--position-bias ignore)", "positions_given": True}
    from ltrfeat.rankers.models import save_ranker

    save_ranker(model, out)

    t = model.metadata_["training"]
    click.echo(
        f"trained {config.engine} LambdaMART on {t['train_rows']} rows, {t['train_queries']} queries, "
        f"{len(model.feature_map_)} features"
    )
    if "positions" in model.metadata_.get("position_bias", {}):
        p = model.metadata_["position_bias"]
        click.echo(
            f"position bias: corrected on {p['clicked_rows']} clicked of {p['rows']} shown rows (positions "
            f"{p['positions']['min']}..{p['positions']['max']}) by {p['correction']}"
        )
    if valid is None:
        click.echo(f"no validation file: used all {model.best_iteration_} rounds")
    else:
        k, score = next(iter(t["best_valid_score"].items()))
        how = (
            f"stopped early after {t['iterations_run']} rounds"
            if t["stopped_early"]
            else f"ran all {t['iterations_run']} rounds"
        )
        click.echo(f"early stopping: best iteration {model.best_iteration_} (valid {k} = {score:.4f}); {how}")
    total = sum(model.feature_importance_.values()) or 1.0
    shown = list(model.feature_importance_.items())[:top]
    if shown:
        click.echo("feature importance (total gain):")
        width = max(len(name) for name, _ in shown)
        for name, gain in shown:
            click.echo(f"  {name:<{width}}  {gain:14.2f}  {100 * gain / total:5.1f}%")
    click.echo(f"wrote {out} and {meta_path(out)}", err=True)


def _positioned(path, data: RankingSet, clicks: dict) -> RankingSet:
    """``data`` with its display positions, or without them (and a warning) for ``--position-bias ignore``."""
    if data.position is None:
        if clicks["position_bias"] == "ignore":
            raise click.UsageError("--position-bias ignore needs positions (TRAIN.position or --positions)")
        return data
    if clicks["position_bias"] == "engine":
        return data
    click.echo(
        f"warning: {path}: --position-bias ignore trains on position-biased clicks uncorrected: the ranker partly "
        "learns where the logging ranker put results; leave it out to let the engine correct the bias",
        err=True,
    )
    return dataclasses.replace(data, position=None)


def _resolve(feature_map: FeatureMap, features) -> list[str]:
    """The names ``--features`` selects, in column order."""
    try:
        columns = feature_map.resolve(features)
    except KeyError as exc:
        raise LtrfeatError(
            f"--features {features!r}: {exc.args[0]}",
            fix="use ids, id ranges (1-46), names, patterns (bm25_*) or sources (lexical, encoder:NAME) present in "
            "the training data",
        ) from None
    return [feature_map.features[j].name for j in sorted(columns)]


def _features(feature_map: FeatureMap, features, deployable: str | None):
    """``--features`` as given, or with ``--deployable``, the names it selects that the engine computes (a notice
    names those left out)."""
    if deployable is None:
        return features
    from ltrfeat.export.plugin_features import engine_features

    what = "the training data" if features is None else f"--features {features!r}"
    kept, notice = engine_features(feature_map, _resolve(feature_map, features), target=deployable, what=what)
    if notice:
        click.echo(f"notice: {notice}", err=True)
    return kept


def _train_selected(train, valid, features, ranker, selection, *, out) -> None:
    """train-ranker --select: inner cross-validation over the training queries with the LambdaMART
    settings ``ranker`` (a RankerConfig) as ``selection`` (a SelectionConfig) says; refit the choice, save it."""
    from ltrfeat.rankers.lambdamart import check_labels
    from ltrfeat.rankers.models import save_ranker
    from ltrfeat.rankers.selection import Candidates, describe, select, with_valid

    check_labels(train.label, "train")  # before any candidate trains, so the error names the file
    if valid is not None:
        check_labels(valid.label, "valid")

    names = _resolve(train.feature_map, features)
    candidates = Candidates(names, ranker.to_dict(), criterion=selection.criterion)
    chosen = select(train.regroup(), None if valid is None else valid.regroup(), candidates, selection)
    name = chosen["chosen"]
    fit_train, fit_valid = with_valid(
        train.regroup(), None if valid is None else valid.regroup(), selection.valid_fraction, selection.seed
    )
    model = candidates.make(name, seed=ranker.seed, tuned=chosen["tuned"].get(name))
    candidates.fit(model, fit_train, fit_valid, None)
    record = {
        "selection": selection.to_dict() | {k: chosen[k] for k in ("chosen", "stats", "tuned", "trials")},
        "ranker_config": ranker.to_dict(),
    }
    save_ranker(model, out, kind=name, extra=record)
    click.echo(
        f"model selection over {train.n_queries + (0 if valid is None else valid.n_queries)} training "
        f"queries ({selection.inner_folds}-fold inner cross-validation, rule {selection.rule}; criterion: mean "
        f"{', '.join(selection.criterion)}):"
    )
    for cand, stats in chosen["stats"].items():
        mark = "  <- chosen" if cand == name else ""
        click.echo(
            f"  {cand:<16} {stats['mean']:.4f}  (gap to best {stats['gap_to_best']:+.4f}, SE {stats['se']:.4f}){mark}"
        )
    click.echo(f"saved the {name} ranker ({json.dumps(describe(model))}) to {out}")


_CONVENTIONS = option_group(
    "conventions",
    click.option(
        "--gain",
        type=click.Choice(GAINS),
        default=None,
        help="NDCG gain: exp2 = 2^rel-1 (default with MODEL TEST) or linear = rel (default with --run: "
        "trec_eval's ndcg_cut).",
    ),
    ties_option(before="MODEL TEST:", after="--run always uses trec_eval's order (docid descending)."),
    click.option(
        "--no-relevant",
        type=click.Choice(NO_RELEVANT),
        default="exclude",
        help="MODEL TEST: queries without a relevant document: leave out, score 0, or score 1. "
        "--run: such queries score 0 (trec_eval).",
    ),
    click.option(
        "--relevance-threshold",
        type=click.FloatRange(min=0, min_open=True),
        default=1.0,
        help="Labels >= this count as relevant.",
    ),
    click.option(
        "--missing-queries",
        type=click.Choice(MISSING_QUERIES),
        default="zero",
        help="--run: qrels queries the run lacks score 0 (ir-measures, trec_eval -c) or are skipped "
        "(trec_eval, pytrec_eval).",
    ),
    _nan_option,
)


@click.command("evaluate")
@click.argument("model_path", metavar="[MODEL", type=FILE, required=False)
@click.argument("test", metavar="TEST]", type=FILE, required=False)
@click.option(
    "--qrels",
    type=FILE,
    default=None,
    help="TREC qrels ('QID ITER DOCID GRADE', or BEIR 'QID DOCID GRADE'); with --run, instead of MODEL TEST.",
)
@click.option(
    "--run",
    "run_path",
    type=FILE,
    default=None,
    help="TREC run ('QID Q0 DOCID RANK SCORE TAG') to evaluate against --qrels.",
)
@click.option(
    "--metrics",
    default=EVALUATE_METRICS,
    help="Metrics; a bare number repeats the previous metric: ndcg@1,3,10,recall@3,6,10,"
    "top3recall@3,p@5,map,mrr,err@10 (err only with MODEL TEST).",
)
@click.option(
    "--per-query",
    type=FILE,
    default=None,
    help="Write one TSV row per query (first line states the conventions).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the summary as one JSON object.")
@_CONVENTIONS
def evaluate(model_path, test, qrels, run_path, metrics, per_query, as_json, conventions):
    """Score TEST with MODEL, or a TREC run against qrels, and report metrics with their conventions.

    \b
    TREC mode (--qrels QRELS --run RUN) follows trec_eval, so numbers equal trec_eval / pytrec_eval /
    ir-measures (nDCG@k, R@k, P@k, AP, RR): ranked by score with ties broken by docid descending (the
    RANK column is ignored); unjudged documents are not relevant and negative grades count as 0; the
    NDCG ideal ranking and the recall/MAP denominators use every judged document, retrieved or not;
    queries without a relevant document score 0; run queries absent from the qrels are skipped
    (counted in the output); qrels queries absent from the run follow --missing-queries.

    \b
    Examples:
      ltrfeat evaluate model.txt S5.txt --metrics ndcg@1,3,10,recall@3,6,10,map
      ltrfeat evaluate model.txt S5.txt --no-relevant zero --per-query s5.tsv --json
      ltrfeat evaluate --qrels qrels.dl19.txt --run bm25.run --metrics ndcg@10,recall@100,map,mrr
    """
    c = conventions
    names = parse_metrics(metrics)
    if (
        (qrels is None) != (run_path is None)
        or (qrels is not None) == (model_path is not None)
        or (model_path is None) != (test is None)
    ):
        raise click.UsageError("give MODEL TEST, or --qrels QRELS --run RUN")
    if qrels is not None:
        from ltrfeat.core.trec import evaluate_run, read_qrels, read_run, summarise_run

        df = evaluate_run(
            read_qrels(qrels),
            read_run(run_path),
            names,
            gain=c["gain"] or "linear",
            relevance_threshold=c["relevance_threshold"],
            missing_queries=c["missing_queries"],
        )
        summary = summarise_run(df)
        _write_per_query(per_query, summary, df)
        if as_json:
            click.echo(json.dumps({"qrels": str(qrels), "run": str(run_path)} | summary, indent=1))
            return
        skipped = summary["skipped"]
        click.echo(f"conventions: {summary['conventions']['description']}")
        click.echo(
            f"queries: {summary['n_queries']} evaluated ({summary['qrels_queries_without_run_scored_0']} of them "
            f"absent from the run, scored 0); skipped: {skipped['run_queries_without_qrels']} run queries "
            f"without qrels, {skipped['qrels_queries_without_run']} qrels queries without a run"
        )
        _echo_metrics(names, summary["metrics"])
        return
    from ltrfeat.rankers.models import load_ranker

    model = load_ranker(model_path)
    with notices():
        data = _read(test, c["nan_policy"], align_to=model.feature_map_)
    _check_columns(model.feature_map_, data, test, "its evaluation")
    if c["ties"] == "docid" and (data.docid is None or any(d is None or d != d for d in data.docid)):
        raise ParameterError(
            f"--ties docid orders tied scores by docid, and {test} has rows without one",
            fix="give every row a '#docid = ID' comment, or use --ties expected (the default)",
        )
    scores = _predict(model, data, test)
    with _label_file({None: test}, MetricInputError):  # negative labels, NaN scores
        df = evaluate_queries(
            data.qid,
            data.label,
            scores,
            names,
            gain=c["gain"] or "exp2",
            no_relevant=c["no_relevant"],
            ties=c["ties"],
            relevance_threshold=c["relevance_threshold"],
            docid=data.docid,
        )
    summary = summarise_queries(df)
    _write_per_query(per_query, summary, df)
    if as_json:
        click.echo(json.dumps({"model": str(model_path), "data": str(test)} | summary, indent=1))
        return
    click.echo(f"conventions: {summary['conventions']['description']}")
    click.echo(
        f"queries: {summary['n_queries']} ({summary['n_evaluated']} evaluated, "
        f"{summary['n_excluded_no_relevant']} excluded without a relevant document)"
    )
    _echo_metrics(names, summary["metrics"])


def _write_per_query(path, summary: dict, df) -> None:
    if path is not None:
        with atomic_output(path) as fh:
            fh.write(f"# conventions: {summary['conventions']['description']}\n")
            df.to_csv(fh, sep="\t", na_rep="NaN", lineterminator="\n")


def _echo_metrics(names, values: dict) -> None:
    width = max(len(n) for n in names)
    for name, value in values.items():
        click.echo(f"{name:<{width}}  {value:.4f}")


@click.command("rank")
@click.argument("model_path", metavar="MODEL", type=FILE)
@click.argument("file", type=FILE)
@click.option("--out", type=FILE, required=True, help="Output file (.gz compresses).")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["scores", "trec"]),
    default="scores",
    help="scores: one score per input row, in row order; trec: 'qid Q0 docid rank score run' "
    "lines sorted by score within each query (needs docids).",
)
@click.option("--run-name", default="ltrfeat", help="Run tag of the TREC format.")
@click.option(
    "--regroup", is_flag=True, help="Accept non-contiguous queries; scores then follow the regrouped row order."
)
@_nan_option
def rank(model_path, file, out, fmt, run_name, regroup, nan_policy):
    """Score every row of FILE with MODEL.

    \b
    Examples:
      ltrfeat rank model.txt S5.txt --out S5.scores
      ltrfeat rank model.txt S5.txt --out S5.run --format trec --run-name lambdamart
    """
    from ltrfeat.rankers.models import load_ranker

    model = load_ranker(model_path)
    with notices():
        data = _read(file, nan_policy, align_to=model.feature_map_, regroup=regroup or fmt == "trec")
    _check_columns(model.feature_map_, data, file, "a ranking of these queries")
    scores = _predict(model, data, file)
    if fmt == "trec":
        from ltrfeat.core.trec import write_trec_run

        if data.docid is None or any(d is None for d in data.docid.tolist()):
            row = 1 if data.docid is None else data.docid.tolist().index(None) + 1
            raise LtrfeatError(
                f"row {row} has no docid, which the TREC run format needs",
                path=file,
                fix="give rows a '#docid = X' comment, or use --format scores",
            )
        write_trec_run(out, data.qid, data.docid, scores, run_name)
    else:
        with atomic_output(out) as fh:
            fh.writelines(f"{s:.17g}\n" for s in scores)
    click.echo(f"wrote {out}: {len(scores)} rows, {data.n_queries} queries", err=True)


_FEATURES = scoring_options(  # what the ranker's features are computed with
    encoder="Encoder for NAME_<field>_cos / _dot / _score features (repeatable), as in `ltrfeat serve`.",
    corpus_stats="Corpus statistics (extract --save-corpus-stats) for lexical features.",
    strict="Refuse (exit 2, no output) to score a query an --encoder was trained on.",
)


@click.command("rerank")
@click.argument("model_path", metavar="MODEL", type=FILE)
@click.option(
    "--run",
    "run_path",
    type=FILE,
    required=True,
    help="TREC run to re-rank ('QID Q0 DOCID RANK SCORE TAG', e.g. from Anserini, Pyserini or Terrier).",
)
@click.option("--queries", type=FILE, required=True, help="Query table (qid, query): TSV/CSV/JSONL/Parquet.")
@click.option(
    "--docs",
    type=FILE,
    required=True,
    help="Document table (docid + the fields the ranker's features read).",
)
@click.option("--out", type=FILE, required=True, help="The re-ranked TREC run (.gz compresses).")
@_FEATURES
@click.option(
    "--depth",
    type=int,
    default=None,
    help="Re-rank each query's top DEPTH documents of the run; the rest keep their run order below them.",
)
@click.option("--run-name", default="ltrfeat", help="Run tag written in the last column.")
@encoding_option("Encoding of the text tables.")
@lexical_options(used_at_extraction=True)
def rerank(model_path, run_path, queries, docs, out, features, depth, run_name, encoding, lexical_params):
    """Re-rank a TREC run with MODEL: features from the texts, new scores, a new TREC run.

    Every feature MODEL needs is computed from the query and document texts (lexical columns need
    --corpus-stats, encoder columns --encoder NAME=PATH), as `ltrfeat serve` does. The output is
    written with trec_eval's order: score descending, ties by docid descending, ranks from 1.

    \b
    Examples:
      ltrfeat rerank ranker.txt --run bm25.run --queries queries.tsv --docs docs.tsv \\
          --corpus-stats corpus.npz --out reranked.run --depth 100
      ltrfeat evaluate --qrels qrels.txt --run reranked.run --metrics ndcg@10,map
    """
    from ltrfeat.core.text import read_docs, read_queries
    from ltrfeat.core.trec import read_run, write_trec_run
    from ltrfeat.encoders.spec import parse_encoder_specs
    from ltrfeat.serving.rerank import rerank_run
    from ltrfeat.serving.scorer import Scorer

    scorer = Scorer.load(
        model_path,
        encoders=parse_encoder_specs(features["encoders"]),
        corpus_stats=features["corpus_stats"],
        lexical_params=lexical_params,
        strict=features["strict"],
    )
    run = read_run(run_path)
    with notices():
        qtable = read_queries(queries, encoding=encoding)
        dtable = read_docs(docs, fields=list(scorer.fields) or None, encoding=encoding)
    new = rerank_run(scorer, run, qtable, dtable, depth=depth)
    for message in scorer.guard.messages():
        click.echo(f"warning: {message}", err=True)
    written = write_trec_run(out, new["qid"], new["docid"], new["score"], run_name)
    click.echo(
        f"wrote {out}: {written} lines, {new['qid'].nunique()} queries, {new.attrs['reranked']} re-scored", err=True
    )
