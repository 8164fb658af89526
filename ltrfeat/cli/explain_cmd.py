"""``ltrfeat explain``: the score (cosine or dot) of one (query, document) pair and which words produced it."""

from __future__ import annotations

import json

import click


@click.command()
@click.argument("model", type=click.Path(dir_okay=False))
@click.argument("query")
@click.argument("document")
@click.option(
    "--top",
    type=click.IntRange(min=1),
    default=5,
    show_default=True,
    help="Neurons (CLSM) or trigrams (DSSM) listed per side.",
)
@click.option(
    "--shared-top",
    type=click.IntRange(min=1),
    default=10,
    show_default=True,
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
    from ltrfeat.features.encoders.encoder import Encoder
    from ltrfeat.features.explain import explain as explain_pair, format_explanation

    result = explain_pair(Encoder.load(model), query, document, top=top, shared_top=shared_top)
    if as_json:
        click.echo(json.dumps(result.to_dict(), indent=1))
    else:
        click.echo(format_explanation(result, query=query, doc=document))
