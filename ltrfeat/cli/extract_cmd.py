"""``ltrfeat extract`` (append feature columns to a LETOR file) and ``ltrfeat features list``."""

from __future__ import annotations

import contextlib
import dataclasses
import warnings
from pathlib import Path

import click

from ltrfeat.cli._paths import DIR, FILE

from ltrfeat.cli._options import (
    encoders_option,
    columns_option,
    duplicates_option,
    encoding_option,
    label_map_option,
    lexical_options,
    option_group,
    read_pairs_table,
)
from ltrfeat.features import extract as ex
from ltrfeat.features.extract import save_corpus_stats
from ltrfeat.core import text
from ltrfeat.core.analysis import STOPWORD_LISTS
from ltrfeat.features.extractor_options import build_extractors, name_corpus_file
from ltrfeat.core.errors import LtrfeatError, cli_fixes
from ltrfeat.core.letor import write_letor


def _split(value: str | None) -> list[str]:
    return [v.strip() for v in (value or "").split(",") if v.strip()]


_READING = option_group(
    "reading",
    columns_option("Pairs column mapping, e.g. query=search_term,doc=product_title."),
    label_map_option("Pairs labels to grades: {maps}"),
    click.option(
        "--conflicts",
        type=click.Choice(text.CONFLICTS),
        default="error",
        help="Pairs: an id with different texts on different rows fails, or keeps its first text.",
    ),
    click.option(
        "--missing",
        type=click.Choice(list(ex.MISSING_POLICIES)),
        default="error",
        help="Rows whose query or document text is missing: fail, or NaN / 0 in the new columns.",
    ),
    encoding_option("Encoding of the text tables."),
    click.option("--qid-col", default="qid", help="Query id column of --queries."),
    click.option("--query-col", default="query", help="Query text column of --queries."),
    click.option("--docid-col", default="docid", help="Document id column of --docs."),
    duplicates_option,
)


_SCORING = option_group(
    "scoring",
    click.option("--lexical", default=None, help="Comma-separated lexical features, or 'all'."),
    encoders_option(
        "Neural column per field (repeatable): clsm=M.ltrenc, dssm=M.ltrenc, deepmatch=M.ltrenc, "
        "sbert[=DIR] (zero-shot), sbert-ft=FT.ltrenc (fine-tuned).",
        metavar="KIND[=PATH]",
    ),
    click.option(
        "--fields",
        "--field",
        "fields",
        default=None,
        help="Document fields to score (default: every text column of the documents/pairs table).",
    ),
    click.option("--stem", default=None, help="Snowball stemmer (PyStemmer), e.g. english."),
    click.option(
        "--stopwords", type=click.Choice(STOPWORD_LISTS), default=None, help="Drop Lucene's English stopwords."
    ),
    click.option(
        "--corpus-stats",
        "corpus_path",
        type=FILE,
        help="Use saved corpus statistics (e.g. fitted on the training documents).",
    ),
    click.option(
        "--strict",
        is_flag=True,
        help="Refuse (exit 2, no output) to score a query an --encoder was trained on; without it such "
        "queries are counted in a warning and in OUT.features.json.",
    ),
)


_OUTPUTS = option_group(
    "outputs",
    click.option("--out", "out_path", required=True, type=FILE, help="Output LETOR file."),
    click.option(
        "--save-corpus-stats",
        "save_corpus_path",
        type=FILE,
        help="Save the fitted corpus statistics here for the other splits.",
    ),
    click.option(
        "--write-texts",
        "texts_dir",
        type=DIR,
        help="With --pairs: also write DIR/queries.csv and DIR/docs.csv.",
    ),
)


_RUN = option_group(
    "run",
    click.option(
        "--chunk-queries",
        type=int,
        default=1000,
        help="Queries held in memory at a time (with --dask: queries per partition).",
    ),
    click.option(
        "--dask",
        default=None,
        metavar="SCHEDULER|local[:N]",
        help="Run the extractors on a Dask cluster (scheduler address or file, or local[:N] workers); "
        "the output is identical to a local run. Needs ltrfeat[dask].",
    ),
    click.option("--no-progress", is_flag=True, help="Hide the progress bar."),
)


@click.command()
@click.argument("letor_in", required=False, type=FILE)
@click.option("--queries", "queries_path", type=FILE, help="Query table (qid, query).")
@click.option("--docs", "docs_path", type=FILE, help="Document table (docid, fields...).")
@click.option(
    "--pairs",
    "pairs_path",
    type=FILE,
    help="Judged-pairs table instead of LETOR_IN + --queries/--docs.",
)
@click.option(
    "--clicks",
    "clicks_path",
    type=click.Path(exists=True),
    help="Instead: an impression-level click log (a table, UBI events, serve's event-log directory) with --docs "
    "(and --queries for qids or UBI query records): a click LETOR, one qid per shown list, label = clicked, "
    "and OUT.position (the rows' positions) for train-ranker's position-bias correction.",
)
@_READING
@_SCORING
@_OUTPUTS
@lexical_options()
@_RUN
def extract(letor_in, queries_path, docs_path, pairs_path, clicks_path, reading, scoring, outputs, lexical_params, run):
    """Append lexical and neural feature columns to a LETOR file (or build one from judged pairs).

    New columns get ids after the input's largest id and names such as bm25_title in
    OUT.features.json. Fit the corpus statistics once (on the training documents, with
    --save-corpus-stats) and reuse them for the other splits with --corpus-stats.

    \b
    Examples:
      ltrfeat extract train.letor --queries queries.tsv --docs docs.tsv \\
          --lexical bm25,lm_dirichlet,coverage --fields title,body --out train.lex.letor
      ltrfeat extract --pairs train.csv --encoding latin-1 --label-map linear:1:3:7 \\
          --columns query=search_term,doc=product_title,docid=product_uid,label=relevance \\
          --conflicts first --lexical all --out hd.letor --write-texts hd_texts
      ltrfeat extract train.letor --queries queries.tsv --docs docs.tsv \\
          --encoder clsm=clsm.ltrenc --encoder sbert --field title --out train.nn.letor
      ltrfeat extract train.letor --queries queries.tsv --docs docs.tsv \\
          --lexical all --encoder clsm=clsm.ltrenc --dask local:2 --out train.all.letor
      ltrfeat extract --clicks clicks_impressions.tsv --docs docs.tsv --lexical all --out clicks.letor
    """
    with warnings.catch_warnings():
        warnings.simplefilter("default")
        warnings.showwarning = lambda message, *args, **kwargs: click.echo(f"warning: {message}", err=True)
        inputs = (letor_in, queries_path, docs_path, pairs_path, clicks_path)
        _extract(inputs, reading, scoring, outputs, lexical_params, run)


def _extract(inputs, reading, scoring, outputs, lexical_params, run):
    letor_in, queries_path, docs_path, pairs_path, clicks_path = inputs
    if sum(map(bool, (letor_in, pairs_path, clicks_path))) != 1:
        raise LtrfeatError(
            "give one of LETOR_IN (with --queries and --docs), --pairs or --clicks (with --docs)",
            fix="see `ltrfeat extract --help` for the three forms",
        )
    options = {name: scoring[name] for name in ("lexical", "encoders", "stem", "stopwords", "corpus_path")}
    options["lexical_params"] = lexical_params
    if letor_in:
        queries, docs = _tables(queries_path, docs_path, reading, scoring["fields"])
        extractors = build_extractors(fields=[c for c in docs.columns if c != "docid"], **options)
    else:
        if clicks_path:
            pairs = _click_pairs(clicks_path, queries_path, docs_path, reading, scoring["fields"])
        else:
            pairs = read_pairs_table(pairs_path, reading)
        positions = pairs.pop("position").to_numpy() if clicks_path else None
        doc_fields = [*(["doc"] if "doc" in pairs else []), *[c for c in pairs.columns if c not in text.PAIR_COLUMNS]]
        extractors = build_extractors(fields=_split(scoring["fields"]) or doc_fields, **options)
        ranking, queries, docs = text.pairs_to_ranking(pairs, fields=doc_fields, conflicts=reading["conflicts"])
    name_corpus_file(extractors, outputs["save_corpus_path"], docs, queries)
    out_path = outputs["out_path"]
    tables = dict(queries=queries, docs=docs, missing=reading["missing"], strict=scoring["strict"])
    with _dask_keywords(run) as on_dask:
        if letor_in:
            files = dict(extractors=extractors, progress=not run["no_progress"], **tables)
            if on_dask:
                from ltrfeat.features import dask_extract

                rows = dask_extract.extract_file_dask(letor_in, out_path, **files, **on_dask)
            else:
                rows = ex.extract_file(letor_in, out_path, chunk_queries=run["chunk_queries"], **files)
        else:
            rows = _write_ranking(ranking, positions, extractors, tables, out_path, on_dask)
    if outputs["save_corpus_path"]:
        save_corpus_stats(extractors, outputs["save_corpus_path"])
    if outputs["texts_dir"] and not letor_in:
        text.write_table(queries, Path(outputs["texts_dir"]) / "queries.csv")
        text.write_table(docs, Path(outputs["texts_dir"]) / "docs.csv")
    names = [n for e in extractors for n in e.feature_names()]
    click.echo(
        f"wrote {out_path}: {rows} rows, {len(names)} new columns ({', '.join(names[:6])}"
        f"{', ...' if len(names) > 6 else ''})",
        err=True,
    )


@contextlib.contextmanager
def _dask_keywords(run: dict):
    """With ``--dask``: a client of the cluster it names and the scheduling, as keywords of the ``*_dask``
    extraction; an empty dict without it."""
    if not run["dask"]:
        yield {}
        return
    from ltrfeat.core import dask_cluster
    from ltrfeat.features.dask_extract import DaskScheduling

    with dask_cluster.dask_client(run["dask"]) as client:
        yield {"client": client, "scheduling": DaskScheduling(partition_queries=run["chunk_queries"])}


def _tables(queries_path, docs_path, reading: dict, fields):
    """LETOR_IN's query and document tables."""
    if not queries_path or not docs_path:
        raise LtrfeatError("LETOR_IN needs --queries and --docs", fix="pass the query and document tables")
    fixes = {
        "qid_col": "pick the column with --qid-col <column>",
        "text_col": "pick the column with --query-col <column>",
        "docid_col": "pick the column with --docid-col <column>",
        "fields": "list existing columns in --fields",
    }
    with cli_fixes(fixes):
        queries = text.read_queries(
            queries_path, qid_col=reading["qid_col"], text_col=reading["query_col"], encoding=reading["encoding"]
        )
        docs = _docs(docs_path, reading, fields)
    return queries, docs


def _docs(path, reading: dict, fields):
    """The documents table; an empty field is scorable (it matches nothing)."""
    return text.read_docs(
        path,
        docid_col=reading["docid_col"],
        fields=_split(fields) or None,
        encoding=reading["encoding"],
        missing="keep",
    )


def _write_ranking(ranking, positions, extractors, tables: dict, out_path, on_dask: dict) -> int:
    """``--pairs`` / ``--clicks``: the pairs' ranking with its feature columns written to OUT (with OUT.position
    when the rows have positions: a click log's); the number of rows."""
    if on_dask:
        from ltrfeat.features import dask_extract

        data = dask_extract.extract_ranking_dask(ranking, extractors, **tables, **on_dask)
    else:
        data = ex.extract_ranking(ranking, extractors, **tables)
    if positions is not None:  # rows in the lists' order: pairs_to_ranking keeps it
        data = dataclasses.replace(data, position=positions)
    write_letor(out_path, data)
    return len(data)


def _click_pairs(clicks_path, queries_path, docs_path, reading: dict, fields):
    """``--clicks``: the shown results of an impression-level log as pairs (``qid`` per shown list, ``query``,
    ``docid``, the documents' fields, ``label`` = clicked, ``position``), rows by list and position."""
    from ltrfeat.clicks.log import read_shown_lists

    if not docs_path:
        raise LtrfeatError("--clicks needs --docs", fix="pass the documents table (docid and text fields)")
    fixes = {"docid_col": "pick the column with --docid-col <column>", "fields": "list existing columns in --fields"}
    with cli_fixes(fixes):
        docs = _docs(docs_path, reading, fields)
    shown = read_shown_lists(clicks_path, queries=queries_path, docs=docs, encoding=reading["encoding"])
    pairs = shown.rename(columns={"clicked": "label"}).merge(docs, on="docid", how="left", validate="many_to_one")
    pairs.attrs["source"] = str(clicks_path)
    return pairs


@click.group()
def features():
    """Feature extractors available to `ltrfeat extract`.

    \b
    Example:
      ltrfeat features list
    """


@features.command("list")
def list_features():
    """List every extractor with a one-line description.

    \b
    Example:
      ltrfeat features list
    """
    registry = ex.available_extractors()
    width = max(map(len, registry))
    for name, (description, _) in registry.items():
        click.echo(f"{name:<{width}}  {description}")
