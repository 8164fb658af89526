"""``ltrfeat datasets ...``: generate data sets (the synthetic search world) and convert public ones."""

from __future__ import annotations

import textwrap
from pathlib import Path

import click

from ltrfeat.core.duplicates import duplicates_line
from ltrfeat.cli._options import duplicates_option, option_group
from ltrfeat.core.analysis import STOPWORD_LISTS, Analyzer
from ltrfeat.features.lexical import BM25_B, BM25_K1
from ltrfeat.datasets.converters import SOURCES, convert_to_dir, parse_split
from ltrfeat.datasets.synth import PRESETS, ClickModel, generate_world, realism_stats, write_world


@click.group()
def datasets():
    """Generate data sets for demos, tests and ablations, or convert public ones.

    \b
    Examples:
      ltrfeat datasets synth --out world --seed 1 --quick
      ltrfeat datasets convert homedepot train.csv --out homedepot --split 0.6,0.2,0.2
    """


def _candidates(ctx, param, value: str) -> tuple[int, int]:
    try:
        lo, hi = (int(v) for v in value.split("-"))
    except ValueError:
        raise click.BadParameter(f"expected MIN-MAX such as 10-20, got {value!r}") from None
    if not 1 <= lo <= hi:
        raise click.BadParameter(f"need 1 <= MIN <= MAX, got {value!r}")
    return lo, hi


_USERS = option_group(
    "users",
    click.option(
        "--examination-exponent",
        type=float,
        default=ClickModel().examination_exponent,
        help="Users examine position r with probability r^-EXPONENT: 0 = no position bias, 1.5 = steep.",
    ),
    click.option(
        "--title-attraction",
        type=float,
        default=ClickModel().title_attraction,
        help="Extra click attraction per unit of query-title word overlap, whatever the relevance; e.g. 0.5 for a "
        "world where titles that look relevant draw clicks (a bias no position correction removes).",
    ),
)


@datasets.command()
@click.option(
    "--out",
    "out_dir",
    required=True,
    type=click.Path(file_okay=False, path_type=Path),
    help="Directory to write into (created; files of the same names are replaced).",
)
@click.option("--seed", default=0, type=int, help="Same seed, same files, byte for byte.")
@click.option(
    "--queries",
    "n_queries",
    type=int,
    help=f"Judged queries, split 60/20/20 into train/vali/test [default: {PRESETS['default']['n_queries']}; "
    f"--quick: {PRESETS['quick']['n_queries']}].",
)
@click.option(
    "--docs",
    "n_docs",
    type=int,
    help=f"Products in the catalogue [default: {PRESETS['default']['n_docs']}; --quick: {PRESETS['quick']['n_docs']}].",
)
@click.option(
    "--click-queries",
    "n_click_queries",
    type=int,
    help=f"Distinct click-log queries [default: {PRESETS['default']['n_click_queries']}; "
    f"--quick: {PRESETS['quick']['n_click_queries']}].",
)
@click.option(
    "--candidates",
    default="10-20",
    callback=_candidates,
    metavar="MIN-MAX",
    help="Candidates per judged query.",
)
@click.option(
    "--control",
    is_flag=True,
    help="Control world: labels depend only on query-title word overlap (no semantic signal).",
)
@click.option(
    "--long-queries",
    is_flag=True,
    help="Long natural-language needs judged against the descriptions (the doc column), candidates the "
    "BM25 top-k of the descriptions.",
)
@_USERS
@click.option("--quick", is_flag=True, help="Small preset for fast demos and tests.")
def synth(out_dir, seed, n_queries, n_docs, n_click_queries, candidates, control, long_queries, users, quick):
    """Generate a synthetic product-search world: catalogue, judged train/vali/test LETOR
    files (no feature columns yet), query/doc/judged text tables and a click log: aggregated
    (clicks.tsv) and one row per shown result with its position (clicks_impressions.tsv).

    Relevance is graded 0-3 from the latent intent (product type and attributes), not
    from word overlap; queries carry synonyms, abbreviations, misspellings, inflections
    and ambiguous words. No click-log query equals a judged query. --long-queries: needs of
    5-25 words ("i need a sturdy writing desk for small apartments in espresso") judged
    against the descriptions, over BM25 candidate lists. data/README.md describes the
    assumptions and every file.

    \b
    Examples:
      ltrfeat datasets synth --out world --seed 1 --quick
      ltrfeat datasets synth --out control --seed 1 --quick --control
      ltrfeat datasets synth --out big --queries 3000 --docs 8000 --click-queries 9000
      ltrfeat datasets synth --out long --quick --long-queries --candidates 20-20
      ltrfeat datasets synth --out steep --quick --examination-exponent 1.5
    """
    sizes = dict(PRESETS["quick" if quick else "default"])
    for key, value in (("n_queries", n_queries), ("n_docs", n_docs), ("n_click_queries", n_click_queries)):
        if value is not None:
            sizes[key] = value
    try:
        world = generate_world(
            seed=seed,
            candidates=candidates,
            semantic=not control,
            query_style="long" if long_queries else "short",
            **users,
            **sizes,
        )
    except ValueError as exc:
        raise click.UsageError(str(exc)) from None
    written = write_world(world, out_dir)
    for path in written.values():
        click.echo(f"wrote {path} ({path.stat().st_size:,} bytes)")
    stats = realism_stats(world)
    click.echo(
        f"{'control' if control else 'semantic'} world{' (long queries)' if long_queries else ''}, seed {seed}: "
        f"{len(world.docs)} docs, "
        f"{len(world.queries)} judged queries ({len(world.judged)} pairs), "
        f"{world.clicks['query'].nunique()} click-log queries ({len(world.clicks)} rows, "
        f"{len(world.impressions)} impressions; examination r^-{users['examination_exponent']:g})"
    )
    click.echo(
        "realism: "
        + ", ".join(f"{k}={v}" for k, v in stats.items() if k != "label_counts")
        + f", labels 0..3={list(stats['label_counts'].values())}"
    )


def _source_help() -> str:
    lines = ["\b", "Sources (inputs in order; a directory holding the usual names also works):"]
    for name, src in SOURCES.items():
        usual = " ".join(names[0] for names in src.file_names)
        lines.append(f"  {name} {' '.join(r.upper() for r in src.roles)}   e.g. {usual}")
        lines += textwrap.wrap(
            f"{src.summary}. Labels: {src.label_rule}.", 96, initial_indent="      ", subsequent_indent="      "
        )
    return "\n".join(lines)


_READING = option_group(
    "reading",
    click.option(
        "--label-map",
        default=None,
        help="Raw label -> grade for homedepot [default: linear:1:3:7] and crowdflower [default: linear:1:4:4]; "
        "also round or threshold:T1,T2,...",
    ),
    click.option("--encoding", default=None, help="Input encoding [default: latin-1 for homedepot, else utf-8]."),
)


_SPLITTING = option_group(
    "splitting",
    click.option(
        "--split",
        default=None,
        metavar="TRAIN,VALI,TEST",
        help="Also write train/vali/test.letor with these shares of queries, e.g. 0.6,0.2,0.2.",
    ),
    click.option("--seed", default=0, type=int, help="Seed of the query split."),
)


_RETRIEVAL = option_group(
    "retrieval",
    click.option("--stem", default=None, help="Snowball stemmer for BM25 retrieval (PyStemmer), e.g. english."),
    click.option(
        "--stopwords",
        type=click.Choice(STOPWORD_LISTS),
        default=None,
        help="Drop Lucene's English stopwords in BM25 retrieval.",
    ),
    click.option("--k1", type=float, default=BM25_K1, help="BM25 k1 for retrieval."),
    click.option("--b", "b", type=float, default=BM25_B, help="BM25 b for retrieval."),
)


@datasets.command(epilog=_source_help())
@click.argument("name", type=click.Choice(list(SOURCES)))
@click.argument("inputs", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option(
    "--out",
    "out_dir",
    required=True,
    type=click.Path(file_okay=False, path_type=Path),
    help="Output directory (must be new or empty unless --overwrite; written all at once).",
)
@click.option(
    "--k",
    "top_k",
    type=int,
    default=100,
    help="BM25 candidates per query for qrels sources (cranfield, trec, msmarco).",
)
@_READING
@_SPLITTING
@_RETRIEVAL
@click.option("--overwrite", is_flag=True, help="Replace a non-empty output directory.")
@click.option("--no-progress", is_flag=True, help="Hide the retrieval progress bar.")
@duplicates_option
def convert(name, inputs, out_dir, top_k, reading, splitting, retrieval, overwrite, no_progress, duplicates):
    """Convert the public data set NAME from its files INPUTS (in the order shown under
    Sources, or one directory holding them under their usual names) into DIR:
    pairs.tsv (qid, query, docid, doc, label, ...), queries.tsv, docs.tsv, all.letor
    (no feature columns; #docid comments) with .features.json, train/vali/test.letor
    with --split, and convert.json (counts, label rule, input and output SHA-256).

    For qrels sources the candidates of each judged query are its BM25 top --k documents
    over the whole corpus, labelled from the qrels (unjudged = 0); convert.json reports
    how many judged relevant documents fell outside the top k. Text whitespace (tabs,
    line breaks) is collapsed to single spaces.

    \b
    Examples:
      ltrfeat datasets convert homedepot train.csv --out hd --split 0.6,0.2,0.2 --seed 1
      ltrfeat datasets convert crowdflower train.csv --out cf --label-map round
      ltrfeat datasets convert cranfield cran.all.1400 cran.qry cranqrel --out cran --stem english
      ltrfeat datasets convert trec scifact/ --out scifact --k 100    # BEIR folder
      ltrfeat datasets convert msmarco collection.tsv queries.dev.small.tsv qrels.dev.small.tsv --out mm
    """
    try:
        analyzer = Analyzer(stemmer=retrieval["stem"], stopwords=retrieval["stopwords"])
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--stem") from None
    summary = convert_to_dir(
        name,
        inputs,
        out_dir,
        split=parse_split(splitting["split"]),
        seed=splitting["seed"],
        overwrite=overwrite,
        k=top_k,
        label_map=reading["label_map"],
        encoding=reading["encoding"],
        analyzer=analyzer,
        k1=retrieval["k1"],
        b=retrieval["b"],
        progress=not no_progress,
        duplicates=duplicates,
    )
    counts = summary["counts"]
    click.echo(
        f"wrote {out_dir}/: {counts['queries']} queries, {counts['docs']} docs, {counts['pairs']} pairs; "
        f"labels {summary['labels']['histogram']}"
    )
    if counts["splits"]:
        click.echo(
            "splits: "
            + ", ".join(f"{k} {v['queries']} queries / {v['pairs']} pairs" for k, v in counts["splits"].items())
        )
    r = summary["retrieval"]
    if r:
        click.echo(
            f"BM25 top-{r['k']} over {', '.join(r['fields'])}: {r['relevant_in_top_k']} of "
            f"{r['judged_relevant']} judged relevant documents retrieved, {r['relevant_outside_top_k']} outside "
            f"the top {r['k']}; {r['queries_without_candidates']} judged queries had no candidate"
        )
    for note in summary["notes"]:
        click.echo(f"note: {note}", err=True)
    if duplicates_line(summary["duplicates"]):
        click.echo(duplicates_line(summary["duplicates"]), err=True)
