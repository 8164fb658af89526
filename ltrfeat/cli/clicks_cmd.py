"""``ltrfeat clicks``: what a click log says about position bias."""

from __future__ import annotations

import json

import click


@click.group()
def clicks():
    """Click logs: the examination curve (position bias) they show.

    \b
    Examples:
      ltrfeat clicks propensity world/clicks_impressions.tsv --docs world/docs.tsv
      ltrfeat clicks propensity log.parquet --method em --plot curve.png --json
    """


def click_log_options(fn):
    """``--queries``, ``--docs`` and ``--format``: how to read a click log (:func:`ltrfeat.clicks.log.read_click_log`)."""
    for option in reversed(
        (
            click.option(
                "--queries",
                type=click.Path(exists=True, dir_okay=False),
                default=None,
                help="Query table (qid, query) for a log that names queries by qid; UBI: the query records.",
            ),
            click.option(
                "--docs",
                type=click.Path(exists=True, dir_okay=False),
                default=None,
                help="Documents table (docid and text): every logged document must be in it; gives the texts.",
            ),
            click.option(
                "--format",
                "fmt",
                type=click.Choice(["tsv", "csv", "jsonl", "parquet", "ubi"]),
                default=None,
                help="Format of the log [default: from the extension].",
            ),
        )
    ):
        fn = option(fn)
    return fn


@clicks.command("propensity")
@click.argument("log", type=click.Path(exists=True, dir_okay=False))
@click_log_options
@click.option(
    "--method",
    type=click.Choice(["harvest", "em"]),
    default="harvest",
    show_default=True,
    help="harvest: intervention harvesting (the same pair shown at different positions); em: EM of the "
    "position-based model.",
)
@click.option("--max-position", type=click.IntRange(min=2), default=10, show_default=True)
@click.option(
    "--resamples",
    type=int,
    default=200,
    show_default=True,
    help="Bootstrap resamples of the queries for the 95%% interval.",
)
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the bootstrap.")
@click.option(
    "--plot", type=click.Path(dir_okay=False), default=None, help="Draw the curve and its interval (.png or .svg)."
)
@click.option("--json", "as_json", is_flag=True, help="Print the curve as one JSON object.")
def propensity(log, queries, docs, fmt, method, max_position, resamples, seed, plot, as_json):
    """Estimate P(examined | position), relative to position 1, from the click LOG itself (impression-level or
    aggregated with positions), with a 95% interval from a bootstrap over queries.

    \b
    Examples:
      ltrfeat clicks propensity world/clicks_impressions.tsv --docs world/docs.tsv
      ltrfeat clicks propensity log.tsv --method em --max-position 5 --plot curve.png
    """
    from ltrfeat.clicks.log import read_click_log
    from ltrfeat.clicks.propensity import estimate_propensity, save_propensity_plot
    from ltrfeat.core.fileio import check_writable

    if plot is not None:
        check_writable(plot)
    click_log = read_click_log(log, queries=queries, docs=docs, fmt=fmt)
    curve = estimate_propensity(click_log, method=method, max_position=max_position, seed=seed, resamples=resamples)
    if plot is not None:
        save_propensity_plot(curve, plot)
    if as_json:
        click.echo(json.dumps({"log": str(log), **curve.to_dict()}))
        return
    interval = (
        f"{curve.level:.0%} interval, bootstrap over queries ({resamples} resamples)" if resamples else "no interval"
    )
    click.echo(f"propensity of {log} by {method} ({interval}):")
    click.echo("position  propensity  lower   upper")
    for k, v, lo, hi in zip(curve.positions, curve.values, curve.lower, curve.upper):
        click.echo(f"{k:8d}  {v:10.4f}  {lo:.4f}  {hi:.4f}")
    if plot is not None:
        click.echo(f"wrote {plot}")
