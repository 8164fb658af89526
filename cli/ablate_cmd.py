"""``ltrfeat ablate``: does a neural feature lift LambdaMART? Folds × feature sets × seeds, with a report."""
from __future__ import annotations

import contextlib
import os
import warnings

import click

from cli.ranker_cmd import _engine_params as engine_params
from ltr_features.errors import LtrfeatError
from ltr_features.letor import NAN_POLICIES
from rankers.metrics import GAINS, NO_RELEVANT

ENGINES = ("lightgbm", "xgboost")
QUICK = {"seeds": "0", "n_estimators": 50, "resamples": 1000}
# rankers.ablation / report (LightGBM, XGBoost, matplotlib) are imported inside the command
# so that every other ltrfeat command starts fast.


def _neural_groups(pairs) -> dict:
    groups = {}
    for pair in pairs:
        name, sep, spec = pair.partition("=")
        if not sep or not name.strip() or not spec.strip():
            raise LtrfeatError(f"--neural {pair!r} is not NAME=SPEC",
                               fix="e.g. --neural clsm=47 or --neural clsm=clsm_title_cos")
        if name.strip() in groups:
            raise LtrfeatError(f"--neural group {name.strip()!r} is given twice", fix="give each group once")
        groups[name.strip()] = spec.strip()
    return groups


def _seeds(text: str) -> list[int]:
    try:
        return [int(s) for s in text.split(",") if s.strip()]
    except ValueError:
        raise LtrfeatError(f"--seeds {text!r} is not a comma-separated list of integers",
                           fix="e.g. --seeds 0,1,2") from None


@contextlib.contextmanager
def _notices():
    """Show library warnings (regrouped queries, gain changes) once each as notices on stderr."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            yield
        finally:
            for message in dict.fromkeys(str(w.message) for w in caught):
                click.echo(f"notice: {message}", err=True)


@click.command("ablate")
@click.option("--folds", "folds_dir", type=click.Path(file_okay=False), required=True,
              help="Directory of fold directories, each with train, vali (optional) and test files "
                   "(.letor or .txt, optionally .gz).")
@click.option("--fold-glob", default="Fold*", show_default=True, help="Pattern of the fold directories.")
@click.option("--base", required=True, help="Base (lexical) features: ids, id ranges and names, e.g. 1-40.")
@click.option("--neural", "neural", multiple=True, required=True, metavar="NAME=SPEC",
              help="A neural feature group (repeatable), e.g. --neural clsm=clsm_title_cos or --neural g=41-46.")
@click.option("--alone", default=None,
              help="Features ranked alone besides every neural feature (default: base features named bm25*; "
                   "'all' = every feature).")
@click.option("--base-name", default="lexical", show_default=True, help="Name of the base feature set.")
@click.option("--engine", type=click.Choice(ENGINES), default="lightgbm", show_default=True)
@click.option("--seeds", default=None, help="Comma-separated ranker seeds [default: 0,1,2; --quick: 0].")
@click.option("--metrics", default=",".join(["ndcg@1,3,10", "recall@3,6,10", "top3recall@3,6,10", "map", "mrr"]),
              show_default=True, help="Metrics; a bare number repeats the previous metric.")
@click.option("--no-relevant", type=click.Choice(NO_RELEVANT), default="exclude", show_default=True,
              help="Queries without a relevant document: leave out, score 0, or score 1.")
@click.option("--gain", type=click.Choice(GAINS), default="exp2", show_default=True,
              help="NDCG gain: 2^rel-1 or linear rel.")
@click.option("--n-estimators", type=click.IntRange(min=1), default=None,
              help="Maximum boosting rounds [default: 500; --quick: 50].")
@click.option("--learning-rate", type=click.FloatRange(min=0, min_open=True), default=0.05, show_default=True)
@click.option("--num-leaves", type=click.IntRange(min=2), default=31, show_default=True)
@click.option("--early-stopping-rounds", type=click.IntRange(min=0), default=50, show_default=True,
              help="Patience on the fold's validation NDCG@10; 0 disables.")
@click.option("--threads", type=click.IntRange(min=0), default=1, show_default=True,
              help="Engine threads per model; 0 = all cores (only pays off for large folds).")
@click.option("--param", "params", multiple=True, metavar="KEY=VALUE",
              help="Extra engine parameter (repeatable), e.g. --param bagging_fraction=0.8 --param bagging_freq=1.")
@click.option("--resamples", type=click.IntRange(min=100), default=None,
              help="Bootstrap and randomisation-test resamples [default: 10000; --quick: 1000].")
@click.option("--nan-policy", type=click.Choice(list(NAN_POLICIES)), default="keep", show_default=True,
              help="NaN/inf feature values: keep as missing, replace by 0, or fail.")
@click.option("--report", "report_dir", type=click.Path(file_okay=False), required=True,
              help="Report directory (report.md, report.json, per_query.tsv, timings.json, PNG plots).")
@click.option("--overwrite", is_flag=True, help="Replace an existing report directory.")
@click.option("--quick", is_flag=True, help="Smoke run: seed 0 only, 50 rounds, 1000 resamples (explicit options win).")
def ablate(folds_dir, fold_glob, base, neural, alone, base_name, engine, seeds, metrics, no_relevant, gain,
           n_estimators, learning_rate, num_leaves, early_stopping_rounds, threads, params, resamples, nan_policy,
           report_dir, overwrite, quick):
    """Compare LambdaMART with and without neural features over query folds.

    Feature sets: the base features; base + each --neural group; base + all groups (when
    there are several); and each neural feature (plus --alone features) ranking alone by
    its raw value. Every set is trained on the same folds with the same seeds, so the
    per-query metrics are paired; the base set is compared with each base+neural set by a
    randomisation test over all test queries, Holm-adjusted across the report.

    \b
    Examples:
      ltrfeat ablate --folds MQ2008 --base 1-40 --neural g=41-46 --report ablation/
      ltrfeat ablate --folds folds/ --base 1-46 --neural clsm=clsm_title_cos \\
          --neural dssm=dssm_title_cos --engine xgboost --seeds 0,1,2,3,4 --report out/
      ltrfeat ablate --folds MQ2008 --base 1-40 --neural g=41-46 --quick --report smoke/

    \b
    DIR/Fold1/{train,vali,test}.{letor,txt} (MQ2008 names train.txt vali.txt test.txt) are read;
    features are named by their .features.json sidecars or f<id>.
    """
    from rankers.ablation import load_letor_folds, plan_feature_sets, run_ablation, summarise
    from rankers.report import SEED_HINT, check_report_dir, headline_table, seed_inert_sets, write_report

    seed_list = _seeds(seeds if seeds is not None else (QUICK["seeds"] if quick else "0,1,2"))
    n_estimators = n_estimators or (QUICK["n_estimators"] if quick else 500)
    resamples = resamples or (QUICK["resamples"] if quick else 10_000)
    groups = _neural_groups(neural)
    check_report_dir(report_dir, overwrite=overwrite)
    with _notices():
        folds = load_letor_folds(folds_dir, fold_glob=fold_glob, nan_policy=nan_policy)
        sets = plan_feature_sets(folds[0].train.feature_map, base=base, neural=groups, alone=alone,
                                 base_name=base_name)
        ranker_params = {"n_estimators": n_estimators, "learning_rate": learning_rate, "num_leaves": num_leaves,
                         "early_stopping_rounds": early_stopping_rounds, "n_jobs": threads or None,
                         "params": engine_params(params)}
        n_runs = len(folds) * sum(len(seed_list) if s.kind == "ranker" else 1 for s in sets)
        click.echo(f"{len(folds)} folds x {len(sets)} feature sets ({', '.join(s.name for s in sets)}) x "
                   f"{len(seed_list)} seeds: {n_runs} runs", err=True)
        result = run_ablation(folds, sets, engine=engine, seeds=seed_list, ranker_params=ranker_params, metrics=metrics,
                              gain=gain, no_relevant=no_relevant, progress=not os.environ.get("CI"))
    summary = summarise(result, seed=0, n_resamples=resamples)
    out = write_report(result, summary, report_dir, overwrite=overwrite)
    inert = seed_inert_sets(result)
    if inert:
        click.echo(f"notice: the seeds changed nothing for {', '.join(inert)}: {SEED_HINT} (--param KEY=VALUE)",
                   err=True)
    for line in headline_table(result, summary):
        click.echo(line)
    stats = summary["statistics"]
    click.echo(f"marks: {stats['marks_test']}; * p < {stats['marks']['*']}, ** p < {stats['marks']['**']} "
               f"({len(summary['comparisons'])} comparisons)")
    click.echo(f"report: {out / 'report.md'}")
