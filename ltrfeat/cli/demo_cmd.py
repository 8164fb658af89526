"""``ltrfeat demo``: the whole story on a generated world (:mod:`ltrfeat.experiments.demo`), end to end, in a few
minutes."""

from __future__ import annotations

import json
import time

import click

from ltrfeat.cli._paths import DIR

from ltrfeat.experiments.demo import DEBIAS_SAID, DEMO_PRESETS, run_demo


@click.command("demo")
@click.option(
    "--out",
    "out_dir",
    type=DIR,
    default="demo-out",
    help="Directory for the world, models, features and report (an earlier demo's directory is replaced when the "
    "new one is complete).",
)
@click.option("--quick", is_flag=True, help="Smaller world, smaller encoders, one seed: a smoke run.")
@click.option("--seed", type=int, default=0, help="Seed of the world, encoders, folds and rankers.")
@click.option(
    "--debias",
    type=click.Choice(list(DEBIAS_SAID)),
    default="none",
    help="How the encoders' click labels handle position bias: uncorrected, inverse propensity weighting or the "
    "position-based click model (the curve estimated from the log's positions); see benchmarks/clicks_debias.py.",
)
def demo(out_dir, quick, seed, debias):
    """Generate a world, train DSSM/CLSM encoders on its clicks, extract lexical + neural
    features, and run the ablation with significance tests.

    \b
    Examples:
      ltrfeat demo
      ltrfeat demo --quick --out /tmp/demo
      ltrfeat demo --quick --debias ipw --out /tmp/demo-ipw
    """
    from ltrfeat.core.fileio import check_output_dir, replaced_dir
    from ltrfeat.experiments.report import headline_table
    from ltrfeat.experiments.verdict import verdict_lines

    preset = DEMO_PRESETS["quick" if quick else "full"]
    out = check_output_dir(out_dir, overwrite=True, option="--out")  # replaces only an earlier demo's directory
    started = time.perf_counter()
    # built beside --out and swapped in when done: a stopped demo leaves the earlier one as it was
    with replaced_dir(out, kind="demo") as work:
        result, summary = run_demo(
            work, out, preset, quick=quick, seed=seed, debias=debias, say=lambda line: click.echo(line, err=True)
        )
    report = out / "report"
    for line in headline_table(result, summary):
        click.echo(line)
    click.echo(f"\nreport:   {report / 'report.html'} (also report.md; plots: metrics.png, deltas.png, importance.png)")
    click.echo(f"models:   {out / 'models'}")
    click.echo(f"world:    {out / 'world'}")
    click.echo(f"time:     {time.perf_counter() - started:.0f} s")
    click.echo("")
    for line in verdict_lines(summary.verdict):
        click.echo(line)
    click.echo("")
    click.echo(json.loads((report / "report.json").read_text())["summary"])
