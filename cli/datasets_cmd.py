"""``ltrfeat datasets ...``: generate data sets (the synthetic search world)."""
from __future__ import annotations

from pathlib import Path

import click

from ltr_features.synth import PRESETS, generate_world, realism_stats, write_world


@click.group()
def datasets():
    """Generate data sets for demos, tests and ablations.

    \b
    Example:
      ltrfeat datasets synth --out world --seed 1 --quick
    """


def _candidates(ctx, param, value: str) -> tuple[int, int]:
    try:
        lo, hi = (int(v) for v in value.split("-"))
    except ValueError:
        raise click.BadParameter(f"expected MIN-MAX such as 10-20, got {value!r}") from None
    if not 1 <= lo <= hi:
        raise click.BadParameter(f"need 1 <= MIN <= MAX, got {value!r}")
    return lo, hi


@datasets.command()
@click.option("--out", "out_dir", required=True, type=click.Path(file_okay=False, path_type=Path),
              help="Directory to write into (created; files of the same names are replaced).")
@click.option("--seed", default=0, show_default=True, type=int, help="Same seed, same files, byte for byte.")
@click.option("--queries", "n_queries", type=click.IntRange(min=3),
              help=f"Judged queries, split 60/20/20 into train/vali/test [default: {PRESETS['default']['n_queries']}; "
                   f"--quick: {PRESETS['quick']['n_queries']}].")
@click.option("--docs", "n_docs", type=click.IntRange(min=1),
              help=f"Products in the catalogue [default: {PRESETS['default']['n_docs']}; "
                   f"--quick: {PRESETS['quick']['n_docs']}].")
@click.option("--click-queries", "n_click_queries", type=click.IntRange(min=0),
              help=f"Distinct click-log queries [default: {PRESETS['default']['n_click_queries']}; "
                   f"--quick: {PRESETS['quick']['n_click_queries']}].")
@click.option("--candidates", default="10-20", show_default=True, callback=_candidates, metavar="MIN-MAX",
              help="Candidates per judged query.")
@click.option("--control", is_flag=True,
              help="Control world: labels depend only on query-title word overlap (no semantic signal).")
@click.option("--quick", is_flag=True, help="Small preset for fast demos and tests.")
def synth(out_dir, seed, n_queries, n_docs, n_click_queries, candidates, control, quick):
    """Generate a synthetic product-search world: catalogue, judged train/vali/test LETOR
    files (no feature columns yet), query/doc/judged text tables and a click log.

    Relevance is graded 0-3 from the latent intent (product type and attributes), not
    from word overlap; queries carry synonyms, abbreviations, misspellings, inflections
    and ambiguous words. No click-log query equals a judged query. data/README.md
    describes the assumptions and every file.

    \b
    Examples:
      ltrfeat datasets synth --out world --seed 1 --quick
      ltrfeat datasets synth --out control --seed 1 --quick --control
      ltrfeat datasets synth --out big --queries 3000 --docs 8000 --click-queries 9000
    """
    sizes = dict(PRESETS["quick" if quick else "default"])
    for key, value in (("n_queries", n_queries), ("n_docs", n_docs), ("n_click_queries", n_click_queries)):
        if value is not None:
            sizes[key] = value
    try:
        world = generate_world(seed=seed, candidates=candidates, semantic=not control, **sizes)
    except ValueError as exc:
        raise click.UsageError(str(exc)) from None
    written = write_world(world, out_dir)
    for name, path in written.items():
        click.echo(f"wrote {path} ({path.stat().st_size:,} bytes)")
    stats = realism_stats(world)
    click.echo(f"{'control' if control else 'semantic'} world, seed {seed}: {len(world.docs)} docs, "
               f"{len(world.queries)} judged queries ({len(world.judged)} pairs), "
               f"{world.clicks['query'].nunique()} click-log queries ({len(world.clicks)} rows)")
    click.echo("realism: " + ", ".join(f"{k}={v}" for k, v in stats.items() if k != "label_counts")
               + f", labels 0..3={list(stats['label_counts'].values())}")
