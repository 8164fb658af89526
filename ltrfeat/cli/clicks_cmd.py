"""``ltrfeat clicks ...``: look at a click log and aggregate it (formats: docs/clicks.md)."""

from __future__ import annotations

import contextlib
import json

import click

from ltrfeat.cli._paths import FILE

from ltrfeat.cli._options import option_group

LOG_FORMATS = ("tsv", "csv", "jsonl", "parquet", "ubi")

_READING = option_group(
    "reading",
    click.option(
        "--queries",
        type=FILE,
        help="Query table (qid, query) for a log that names queries by qid; for UBI events, the UBI query records.",
    ),
    click.option(
        "--docs",
        type=FILE,
        help="Documents table (docid, text fields): rows naming another document are an error.",
    ),
    click.option(
        "--format",
        "fmt",
        type=click.Choice(LOG_FORMATS),
        default=None,
        help="Log format [default: from the extension; JSON lines of UBI events are recognised].",
    ),
    click.option("--encoding", default="utf-8", help="Text encoding of the log and tables."),
    click.option(
        "--chunk-rows",
        type=int,
        default=1_000_000,
        help="Log rows read and checked at a time (memory grows with it and with the distinct keys, not the log).",
    ),
    click.option(
        "--dask",
        default=None,
        metavar="SCHEDULER|local[:N]",
        help="Check and sum the chunks on a Dask cluster (scheduler address or file, or local[:N] workers); "
        "the result is identical to a local run. Needs ltrfeat[dask].",
    ),
)


@click.group()
def clicks():
    """Click logs: impression-level (one row per shown result, with its position), aggregated with or without
    positions, OpenSearch UBI query and event records, or the directory `serve --event-log` wrote (its clicks
    folded onto the results they clicked). docs/clicks.md describes the formats.

    \b
    Examples:
      ltrfeat clicks summary data/clicks_impressions.tsv
      ltrfeat clicks aggregate data/clicks_impressions.tsv --out clicks_by_position.tsv
    """


def _read(log, reading: dict):
    from ltrfeat.clicks import read_click_log

    with contextlib.ExitStack() as stack:
        client = None
        if reading["dask"]:
            from ltrfeat.core.dask_cluster import dask_client

            client = stack.enter_context(dask_client(reading["dask"]))
        return read_click_log(
            log,
            queries=reading["queries"],
            docs=reading["docs"],
            fmt=reading["fmt"],
            encoding=reading["encoding"],
            chunk_rows=reading["chunk_rows"],
            client=client,
        )


@clicks.command()
@click.argument("log", type=click.Path())
@_READING
@click.option("--json", "as_json", is_flag=True, help="Print the figures as one JSON object.")
def summary(log, reading, as_json):
    """What the click log LOG holds: impressions, clicks, sessions, queries, the click-through rate by position,
    and whether positions are present (so that position bias can be corrected).

    \b
    Examples:
      ltrfeat clicks summary data/clicks_impressions.tsv
      ltrfeat clicks summary data/clicks.tsv --json
      ltrfeat clicks summary ubi_events.jsonl --queries ubi_queries.jsonl
      ltrfeat clicks summary out/events
    """
    from ltrfeat.clicks import log_summary

    figures = log_summary(_read(log, reading))
    if as_json:
        click.echo(json.dumps(figures, indent=1))
        return
    sessions = "" if figures["sessions"] is None else f", {figures['sessions']:,} sessions"
    click.echo(
        f"{log}: {figures['kind_name']} log, {figures['impressions']:,} impressions, {figures['clicks']:,} clicks "
        f"(CTR {figures['ctr']:.4f}){sessions}, {figures['queries']:,} queries, {figures['pairs']:,} "
        "query-document pairs"
    )
    if figures["has_positions"]:
        click.echo(f"positions 1-{figures['max_position']}: {figures['note']}")
        click.echo("position  impressions  clicks  CTR")
        for row in figures["ctr_by_position"]:
            click.echo(f"{row['position']:>8}  {row['impressions']:>11,}  {row['clicks']:>6,}  {row['ctr']:.4f}")
    else:
        click.echo(f"no positions: {figures['note']}")


@clicks.command()
@click.argument("log", type=click.Path())
@click.option(
    "--out",
    type=FILE,
    required=True,
    help="Aggregated log with positions (query, docid, position, impressions, clicks); format by extension.",
)
@_READING
def aggregate(log, out, reading):
    """Sum the impression-level log LOG per query, document and position into OUT (written atomically: nothing is
    left on error). The log is read a chunk at a time, so memory holds the distinct keys, not the rows.

    \b
    Examples:
      ltrfeat clicks aggregate data/clicks_impressions.tsv --out clicks_by_position.tsv
      ltrfeat clicks aggregate big_log.csv.gz --out by_position.parquet --dask local:2
      ltrfeat clicks aggregate ubi_events.jsonl --queries ubi_queries.jsonl --out by_position.tsv
    """
    from ltrfeat.clicks import write_positioned

    read = _read(log, reading)
    write_positioned(read, out)
    click.echo(
        f"wrote {out}: {len(read.positioned):,} (query, document, position) rows from "
        f"{int(read.positioned['impressions'].sum()):,} impressions and {int(read.positioned['clicks'].sum()):,} clicks"
    )


@clicks.command()
@click.argument("log", type=click.Path())
@_READING
@click.option(
    "--method",
    type=click.Choice(["harvest", "em"]),
    default="harvest",
    help="harvest: intervention harvesting (the same pair shown at different positions); em: EM of the "
    "position-based model (a parameter per pair: for logs with many impressions per pair).",
)
@click.option("--max-position", type=int, default=10, help="Positions of the curve (1..N).")
@click.option("--resamples", type=int, default=200, help="Bootstrap resamples of the queries (interval).")
@click.option("--seed", type=int, default=0, help="Seed of the bootstrap.")
@click.option("--plot", type=FILE, default=None, help="Draw the curve and its interval (.png or .svg).")
@click.option(
    "--out",
    type=FILE,
    default=None,
    help="Write the curve as a table (position, propensity, lower, upper) that train-encoder and ablate read "
    "(--propensity FILE).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the curve as one JSON object.")
def propensity(log, reading, method, max_position, resamples, seed, plot, out, as_json):
    """Estimate P(examined | position), relative to position 1, from the click LOG itself (impression-level or
    aggregated with positions), with a 95% interval from a bootstrap over queries.

    \b
    Examples:
      ltrfeat clicks propensity data/clicks_impressions.tsv
      ltrfeat clicks propensity log.tsv --method em --max-position 5 --plot curve.png --json
      ltrfeat clicks propensity year_of_log.tsv --out curve.tsv
    """
    from ltrfeat.clicks.propensity import estimate_propensity, save_propensity_plot, write_propensity_curve
    from ltrfeat.core.fileio import check_writable

    for path in (plot, out):
        if path is not None:
            check_writable(path)
    curve = estimate_propensity(
        _read(log, reading), method=method, max_position=max_position, seed=seed, resamples=resamples
    )
    if plot is not None:
        save_propensity_plot(curve, plot)
    if out is not None:
        write_propensity_curve(curve, out)
    if as_json:
        click.echo(json.dumps({"log": str(log), **curve.to_dict()}))
        return
    click.echo(
        f"propensity of {log} by {method} ({curve.level:.0%} interval, bootstrap over queries, {resamples} resamples):"
    )
    click.echo("position  propensity  lower   upper")
    for k, v, lo, hi in zip(curve.positions, curve.values, curve.lower, curve.upper):
        click.echo(f"{k:8d}  {v:10.4f}  {lo:.4f}  {hi:.4f}")
    for path in (plot, out):
        if path is not None:
            click.echo(f"wrote {path}")
