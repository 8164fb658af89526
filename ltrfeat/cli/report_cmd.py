"""``ltrfeat report`` (an ablation report's verdict in words, and its report.html), ``ltrfeat compare-runs``
(TREC runs or rankers on one test set, compared with this project's statistics) and ``ltrfeat interleave-report``
(which ranker users prefer, from an interleaving event log)."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path

import click

from ltrfeat.cli._paths import EXISTING_DIR, EXISTING_FILE, FILE

from ltrfeat.cli._options import option_group, resampling_options, ties_option
from ltrfeat.core.errors import LtrfeatError
from ltrfeat.core.metrics import GAINS
from ltrfeat.core.trec import MISSING_QUERIES


def _read_report(report_dir: Path) -> dict:
    path = report_dir / "report.json"
    fix = "give the directory an ablation wrote with --report"
    if not path.is_file():
        raise LtrfeatError("no report.json here", path=report_dir, fix=fix)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:
        raise LtrfeatError(f"not a report ({' '.join(str(exc).split())[:200]})", path=path, fix=fix) from None
    if not isinstance(data, dict) or not str(data.get("format", "")).startswith("ltrfeat.ablation/"):
        raise LtrfeatError("not an ablation report (no ltrfeat.ablation format)", path=path, fix=fix)
    return data


@contextlib.contextmanager
def _malformed(path: Path):
    """A report.json whose fields do not have the types an ablation writes (it may come from someone else) is a
    one-line error naming it, not a traceback; report.html is written only whole."""
    try:
        yield
    except LtrfeatError:
        raise
    except (KeyError, TypeError, ValueError, AttributeError, IndexError) as exc:
        problem = " ".join(f"{type(exc).__name__}: {exc}".split())[:200]
        raise LtrfeatError(
            f"report does not hold what an ablation writes ({problem})",
            path=path,
            fix="give the directory an ablation wrote with --report, unchanged",
        ) from None


@click.command("report")
@click.argument("report_dir", type=EXISTING_DIR)
@click.option("--html", "write_html", is_flag=True, help="Write REPORT_DIR/report.html (replaced if it exists).")
@click.option(
    "--open",
    "open_page",
    is_flag=True,
    help="Write report.html and open it in the default browser (an error when none is found).",
)
def report(report_dir, write_html, open_page):
    """Print an ablation report's verdict in words; --html (re)writes its report.html.

    report.html is one self-contained page (no network): the verdict, sortable tables, forest plots per metric,
    wins/ties/losses, model selection, stage profile, setup, and a per-query drill-down when the report has
    rankings (every ablation writes them into its report.html; for an older report, from runs/ of
    ablate --write-runs).

    \b
    Examples:
      ltrfeat report demo-out/report
      ltrfeat report hd/ --html
      ltrfeat report hd/ --open
    """
    from ltrfeat.experiments import html_report
    from ltrfeat.experiments.in_words import summary_in_words
    from ltrfeat.experiments.per_query import read_per_query

    report_dir = Path(report_dir)
    data = _read_report(report_dir)
    with _malformed(report_dir / "report.json"):
        if not data.get("summary"):
            data["summary"] = summary_in_words(data)
        click.echo(data["summary"])
        if not (write_html or open_page):
            return
        drill = None
        rankings = html_report.rankings_from_runs(report_dir, data)
        if rankings is not None:
            drill = html_report.drill_data(*rankings, read_per_query(report_dir / "per_query.tsv"), data)
        else:
            click.echo("note: no runs/ in this report, so report.html has no per-query drill-down", err=True)
        path = html_report.write_html(report_dir / "report.html", data, drill=drill, report_dir=report_dir)
    click.echo(f"report: {path}")
    if open_page:
        _open(Path(path))


def _open(page: Path) -> None:
    """Open ``page`` in the default web browser; without one (a headless machine), a one-line error."""
    import webbrowser

    try:
        opened = webbrowser.get().open(page.resolve().as_uri())
    except webbrowser.Error:
        opened = False
    if not opened:
        raise LtrfeatError(
            "written, but no web browser was found to open it",
            path=page,
            fix="open the file in a browser yourself (it is one self-contained page), or leave out --open",
        )


def _systems(items) -> dict[str, str]:
    """NAME=PATH or PATH items -> {name: path}; a bare path is named by its file name without extension."""
    systems: dict[str, str] = {}
    for item in items:
        name, sep, path = item.partition("=")
        if not sep:
            path = item
            name = Path(item).name.split(".")[0] or item
        if not name or not path:
            raise LtrfeatError(f"{item!r} is not PATH or NAME=PATH", fix="e.g. bm25=runs/bm25.run")
        base, k = name, 2
        while name in systems:
            name, k = f"{base}-{k}", k + 1
        systems[name] = path
    return systems


@click.command("compare-runs")
@click.argument("items", nargs=-1, required=True, metavar="[NAME=]SYSTEM...")
@click.option(
    "--qrels",
    type=EXISTING_FILE,
    default=None,
    help="TREC qrels: every SYSTEM is a TREC run, evaluated with trec_eval's conventions.",
)
@click.option(
    "--test",
    "test_path",
    type=EXISTING_FILE,
    default=None,
    help="LETOR test file: every SYSTEM is a ranker model (train-ranker), scored on it.",
)
@click.option("--metrics", default="ndcg@10,map,mrr", help="Metrics; a bare number repeats the previous one.")
@resampling_options
@click.option("--json", "as_json", is_flag=True, help="Print the comparison as JSON instead of Markdown.")
@click.option("--html", "html_path", type=FILE, default=None, help="Also write an HTML page.")
@option_group(
    "scoring",
    click.option(
        "--gain",
        type=click.Choice(GAINS),
        default=None,
        help="NDCG gain [default: linear with --qrels (trec_eval), exp2 with --test].",
    ),
    click.option(
        "--missing-queries",
        type=click.Choice(MISSING_QUERIES),
        default="zero",
        help="--qrels: qrels queries a run lacks score 0 (ir-measures, trec_eval -c) or are left out of every system.",
    ),
    ties_option(before="--test:", after="--qrels: always docid descending (trec_eval)."),
)
def compare_runs(items, qrels, test_path, metrics, resamples, seed, as_json, html_path, scoring):
    """Compare systems on one test set: the first SYSTEM is the baseline, every other is compared with it.

    Per metric: each system's mean, the change against the baseline with its 95% bootstrap interval, the
    paired randomisation test Holm-adjusted over every comparison printed, and per-query wins/ties/losses.
    Systems are TREC runs (with --qrels; trec_eval's conventions, as ltrfeat evaluate --run) or ranker models
    (with --test; the ablation's conventions: each metric the expected value over every order of tied scores
    unless --ties says otherwise, queries without a relevant document left out).

    \b
    Examples:
      ltrfeat compare-runs --qrels qrels.txt bm25=bm25.run reranked=reranked.run --metrics map,mrr,ndcg@10
      ltrfeat compare-runs --test test.letor lexical.txt neural.txt --html compare.html
    """
    from ltrfeat.experiments import html_report
    from ltrfeat.experiments.compare_runs import compare_systems, markdown
    from ltrfeat.core.fileio import atomic_output
    from ltrfeat.core.metrics import parse_metrics

    names = parse_metrics(metrics)
    gain, missing_queries, ties = (scoring[k] for k in ("gain", "missing_queries", "ties"))
    if (qrels is None) == (test_path is None):
        raise click.UsageError("give --qrels QRELS (SYSTEMs are TREC runs) or --test TEST (SYSTEMs are ranker models)")
    systems = _systems(items)
    if len(systems) < 2:
        raise click.UsageError("give a baseline and at least one other SYSTEM")
    per_query = {}
    if qrels is not None:
        from ltrfeat.core.trec import describe_conventions, evaluate_run, read_qrels, read_run

        judged = read_qrels(qrels)
        for name, path in systems.items():
            per_query[name] = evaluate_run(
                judged, read_run(path), names, gain=gain or "linear", missing_queries=missing_queries
            )
        conventions = describe_conventions(gain or "linear", 1.0, missing_queries)
    else:
        from ltrfeat.cli.ranker_cmd import _predict, _read
        from ltrfeat.core.metrics import Conventions, evaluate_queries
        from ltrfeat.rankers.models import load_ranker

        data = None
        for name, path in systems.items():
            model = load_ranker(path)
            data = _read(test_path, "keep", align_to=model.feature_map_)
            scores = _predict(model, data, test_path)
            per_query[name] = evaluate_queries(
                data.qid, data.label, scores, names, gain=gain or "exp2", ties=ties, docid=data.docid
            )
        conventions = Conventions(gain=gain or "exp2", ties=ties).describe()
    result = compare_systems(per_query, names, seed=seed, n_resamples=resamples, conventions=conventions)
    if html_path is not None:
        with atomic_output(html_path) as fh:
            fh.write(html_report.render_comparison(result))
    if as_json:
        click.echo(json.dumps(result, indent=1, default=float, allow_nan=True))
    else:
        click.echo(markdown(result), nl=False)
    if html_path is not None:
        click.echo(f"page: {html_path}", err=True)


@click.command("interleave-report")
@click.argument("log", type=click.Path(exists=True))
@click.option("--alpha", type=click.FloatRange(0, 0.5, min_open=True), default=0.05, help="Sign test level.")
@click.option(
    "--effect",
    type=click.FloatRange(0, 0.5, min_open=True, max_open=True),
    default=0.05,
    help="Preference to plan for: B winning 0.5 + EFFECT of the decisive impressions.",
)
@click.option(
    "--power",
    type=click.FloatRange(0.5, 1, max_open=True),
    default=0.8,
    help="Power to plan for (impressions needed).",
)
@click.option("--top", type=click.IntRange(min=1), default=20, help="Queries listed in Markdown.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON (every query) instead of Markdown.")
@click.option("--html", "html_path", type=FILE, default=None, help="Also write an HTML page.")
def interleave_report(log, alpha, effect, power, top, as_json, html_path):
    """Which ranker users prefer, from the event log of `ltrfeat serve --interleave B --event-log DIR`.

    Credits each interleaved impression's clicks to the ranker that contributed the clicked results (team-draft)
    or by the rankers' top-k (balanced); counts wins, ties and losses per query and overall; tests B's share
    of the decisive impressions against 0.5 with a two-sided binomial sign test and gives its Wilson interval;
    and says how many impressions an experiment needs to detect a given preference. LOG is the log's directory
    or one of its segment files.

    \b
    Examples:
      ltrfeat interleave-report events/
      ltrfeat interleave-report events/ --json --html interleaving.html
    """
    from ltrfeat.core.fileio import atomic_output
    from ltrfeat.clicks.served import impressions, read_event_log
    from ltrfeat.experiments.interleave_report import interleaving_markdown, render_html, summarise_interleaving

    data = summarise_interleaving(impressions(read_event_log(log)), alpha=alpha, effect=effect, power=power)
    if html_path is not None:
        with atomic_output(html_path) as fh:
            fh.write(render_html(data))
    click.echo(json.dumps(data, indent=1) if as_json else interleaving_markdown(data, top=top), nl=as_json)
    if html_path is not None:
        click.echo(f"page: {html_path}", err=True)
