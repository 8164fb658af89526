"""``ltrfeat explain``: the score (cosine or dot) of one (query, document) pair and which words produced it;
``ltrfeat explain-ranker``: each feature's contribution to a ranker's scores of a query's top documents."""

from __future__ import annotations

import json

import click

from ltrfeat.cli._paths import FILE

from ltrfeat.cli._options import notices
from ltrfeat.cli.ranker_cmd import _check_columns, _label_file, _nan_option, _read
from ltrfeat.core.errors import LtrfeatError
from ltrfeat.rankers.registry import kind_of


@click.command()
@click.argument("model", type=FILE)
@click.argument("query")
@click.argument("document")
@click.option(
    "--top",
    type=click.IntRange(min=1),
    default=5,
    help="Neurons (CLSM) or trigrams (DSSM) listed per side.",
)
@click.option(
    "--shared-top",
    type=int,
    default=10,
    help="CLSM: neurons in both sides' top N are listed as shared.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the explanation as JSON.")
def explain(model, query, document, top, shared_top, as_json):
    """Explain an encoder's score for one query and one document text: the cosine, or the
    dot product for an encoder trained with --score dot (DSE).

    CLSM: the five most active max-pooling neurons of each side, the word (centre of the
    window) that wins each, and the neurons both sides share among their top N. DSSM: the
    letter trigrams whose removal lowers the score most.

    \b
    Example:
      ltrfeat explain clsm.ltrenc "cordless drill" "DEWALT 20V MAX Cordless Drill Kit"
    """
    from ltrfeat.encoders.encoder import Encoder
    from ltrfeat.features.explain import explain as explain_pair, format_explanation

    result = explain_pair(Encoder.load(model), query, document, top=top, shared_top=shared_top)
    if as_json:
        click.echo(json.dumps(result.to_dict(), indent=1))
    else:
        click.echo(format_explanation(result, query=query, doc=document))


@click.command("explain-ranker")
@click.argument("model_path", metavar="MODEL", type=FILE)
@click.argument("file", metavar="LETOR", type=FILE)
@click.option("--qid", "qids", multiple=True, help="Query to explain (repeatable; default every query of LETOR).")
@click.option("--top", type=click.IntRange(min=1), default=10, help="Documents per query, best score first.")
@click.option(
    "--features",
    "n_features",
    type=int,
    help="Contributions listed per document in the table, largest |contribution| first (default all; --json has all).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the explanation as JSON.")
@_nan_option
def explain_ranker(model_path, file, qids, top, n_features, as_json, nan_policy):
    """Why MODEL ranks LETOR's documents as it does: for the top documents of a query, each feature's
    contribution to the score (engine TreeSHAP for LambdaMART, the exact terms of the linear and
    single-feature rankers), largest first. Contributions plus the bias add up to the score `rank` writes.

    \b
    Example:
      ltrfeat explain-ranker model.txt test.letor --qid 12 --top 3
    """
    from ltrfeat.rankers.contributions import explain_queries, format_explanations
    from ltrfeat.rankers.models import load_ranker

    model = load_ranker(model_path)
    with notices():
        data = _read(file, nan_policy, align_to=model.feature_map_)
    _check_columns(model.feature_map_, data, file, "an explanation of these queries")
    with _label_file({}, LtrfeatError, default=file):
        explained = explain_queries(model, data, list(qids) or None, top=top)
    if as_json:
        click.echo(json.dumps({"model": str(model_path), "kind": kind_of(model).name, "queries": explained}, indent=1))
    else:
        click.echo(format_explanations(explained, features=n_features))
