"""``ltrfeat letor ...``: inspect, validate and convert LETOR / svmlight files."""

from __future__ import annotations

import json
import warnings

import click

from ltrfeat.cli._paths import FILE

from ltrfeat.core import letor as letor_io

_READ_OPTIONS = [
    click.option(
        "--from",
        "fmt",
        type=click.Choice(["auto", *letor_io.LETOR_FORMATS]),
        default="auto",
        help="Input format; auto = svmlight when FILE.query exists and lines have no qid:.",
    ),
    click.option(
        "--group",
        "group_path",
        type=FILE,
        default=None,
        help="Group-size file of an svmlight input (default FILE.query).",
    ),
    click.option(
        "--nan-policy",
        type=click.Choice(list(letor_io.NAN_POLICIES)),
        default="error",
        help="NaN/inf feature values: fail, keep them, or replace them by 0.",
    ),
    click.option("--regroup", is_flag=True, help="Stably regroup queries whose rows are not contiguous."),
]


def _read_options(func):
    for option in reversed(_READ_OPTIONS):
        func = option(func)
    return func


@click.group()
def letor():
    """Inspect, validate and convert LETOR / svmlight ranking files.

    \b
    Example:
      ltrfeat letor info data/train.letor
    """


def _by_source(features) -> dict[str, str]:
    """``source -> "id:name, ..."`` in id order, for the info listing."""
    groups: dict[str, list[str]] = {}
    for f in features:
        groups.setdefault(f["source"], []).append(f"{f['id']}:{f['name']}")
    return {source: ", ".join(items) for source, items in groups.items()}


@letor.command()
@click.argument("file", type=FILE)
@click.option("--json", "as_json", is_flag=True, help="Print the statistics as one JSON object.")
@_read_options
def info(file, as_json, fmt, group_path, nan_policy, regroup):
    """Print rows, queries, features, label histogram and docs per query of FILE.

    \b
    Examples:
      ltrfeat letor info S1.txt
      ltrfeat letor info rank.train --json      # svmlight + rank.train.query
    """
    stats = letor_io.letor_summary(file, fmt=fmt, group_path=group_path, nan_policy=nan_policy, regroup=regroup)
    if as_json:
        click.echo(json.dumps(stats, indent=1))
        return
    d = stats["docs_per_query"]
    histogram = ", ".join(f"{k}: {v}" for k, v in stats["label_histogram"].items())
    click.echo(f"file:          {stats['path']} ({stats['format']})")
    click.echo(f"rows:          {stats['rows']}")
    click.echo(f"queries:       {stats['queries']}")
    click.echo(
        f"features:      {stats['features']} (max id {stats['max_feature_id']}, names from {stats['feature_map']})"
    )
    if stats["feature_map"] == "sidecar":
        for source, names in _by_source(stats["feature_names"]).items():
            click.echo(f"  {source}: {names}")
    click.echo(f"labels:        {histogram}")
    click.echo(f"docs/query:    min {d['min']}, median {d['median']:g}, max {d['max']}")
    click.echo(f"queries with no relevant doc (label > 0): {stats['queries_without_relevant']}")
    click.echo(f"rows with comment: {stats['rows_with_comment']}, with docid: {stats['rows_with_docid']}")
    if stats["weighted"]:
        click.echo("weights:       yes")
    if stats["positioned"]:
        click.echo("positions:     yes (display positions of click data, from the .position file)")
    if stats["regrouped_queries"]:
        click.echo(f"regrouped:     {stats['regrouped_queries']} queries were not contiguous")


@letor.command()
@click.argument("file", type=FILE)
@_read_options
def validate(file, fmt, group_path, nan_policy, regroup):
    """Check FILE (and its .query/.weight/.position/.features.json); exit 2 naming the first bad line.

    \b
    Example:
      ltrfeat letor validate S1.txt && echo ok
    """
    stats = letor_io.letor_summary(file, fmt=fmt, group_path=group_path, nan_policy=nan_policy, regroup=regroup)
    click.echo(
        f"ok: {stats['path']}: {stats['rows']} rows, {stats['queries']} queries, "
        f"{stats['features']} features ({stats['format']})"
    )


@letor.command()
@click.argument("source", type=FILE)
@click.argument("target", type=FILE)
@click.option(
    "--to",
    "to_fmt",
    type=click.Choice(list(letor_io.LETOR_FORMATS)),
    default="letor",
    help="Output format; svmlight also writes TARGET.query.",
)
@click.option("--sparse", is_flag=True, help="Omit zero feature values.")
@click.option(
    "--chunk-queries",
    type=int,
    default=1000,
    help="Queries held in memory at a time.",
)
@_read_options
def convert(source, target, to_fmt, sparse, chunk_queries, fmt, group_path, nan_policy, regroup):
    """Convert SOURCE to TARGET (streaming; .gz by extension) and write TARGET.features.json.

    \b
    Examples:
      ltrfeat letor convert rank.train rank.letor --to letor
      ltrfeat letor convert S1.txt S1.svm.gz --to svmlight --sparse
    """
    chunks = letor_io.iter_letor(
        source, chunk_queries=chunk_queries, fmt=fmt, group_path=group_path, nan_policy=nan_policy, regroup=regroup
    )
    first = next(chunks)
    rows = queries = 0
    with letor_io.LetorWriter(target, first.feature_map, fmt=to_fmt, sparse=sparse) as writer:
        for chunk in _chain(first, chunks):
            writer.write(chunk)
            rows += len(chunk)
            queries += chunk.n_queries
    click.echo(
        f"wrote {target}: {rows} rows, {queries} queries, {len(first.feature_map)} features ({to_fmt})", err=True
    )


def _chain(first, rest):
    yield first
    yield from rest


@letor.command()
@click.argument("file", type=FILE)
@click.option(
    "--out",
    type=FILE,
    required=True,
    help="TREC qrels to write: 'QID 0 DOCID GRADE' per row of FILE.",
)
@_READ_OPTIONS[0]
@_READ_OPTIONS[1]
def qrels(file, out, fmt, group_path):
    """Write FILE's judgments as TREC qrels (QID 0 DOCID GRADE), the docid from each row's comment
    (#docid = ID, as ltrfeat extract and ablate --write-features keep it), for ltrfeat evaluate
    --qrels, trec_eval or ir-measures; grades must be integers. A row without a docid is an error
    naming its line.

    \b
    Example:
      ltrfeat letor qrels data/test.letor --out qrels.txt
      ltrfeat evaluate --qrels qrels.txt --run reranked.run
    """
    from ltrfeat.core.errors import LtrfeatError
    from ltrfeat.core.fileio import check_writable
    from ltrfeat.core.trec import write_qrels

    check_writable(out)
    with warnings.catch_warnings():  # qrels need no contiguous queries: regrouped without a notice
        warnings.simplefilter("ignore")
        data = letor_io.read_letor(file, fmt=fmt, group_path=group_path, nan_policy="keep", regroup=True)
    docids = [None] * len(data) if data.docid is None else data.docid.tolist()
    if any(docid is None for docid in docids):
        raise LtrfeatError(
            "no docid in the comment of this row",
            path=file,
            line=_line_without_docid(file),
            fix="end every line with '#docid = ID' (ltrfeat extract and ablate --write-features keep the docids)",
        )
    try:
        n = write_qrels(out, data.qid, docids, data.label)
    except LtrfeatError as exc:
        raise LtrfeatError(exc.problem, path=file, fix=exc.fix) from None
    click.echo(f"wrote {out}: {n} judgments of {data.n_queries} queries", err=True)


def _line_without_docid(path) -> int | None:
    """The 1-based line of FILE's first data row whose comment names no docid (blank and comment-only lines
    hold no row)."""
    from ltrfeat.core.fileio import open_input

    with open_input(path) as fh:
        for lineno, line in enumerate(fh, start=1):
            body, _, comment = line.decode("utf-8", "replace").partition("#")
            if body.strip() and letor_io.parse_comment(comment.strip()).get("docid") is None:
                return lineno
    return None
