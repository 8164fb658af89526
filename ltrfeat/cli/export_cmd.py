"""``ltrfeat export-ranker`` (LTR plugins, XGBoost JSON, LightGBM) and ``export-encoder`` (ONNX)."""

from __future__ import annotations

import json
import os

import click

from ltrfeat.cli._paths import DIR, FILE

from ltrfeat.cli._options import encoders_option, lexical_options, option_group
from ltrfeat.core.errors import LtrfeatError
from ltrfeat.encoders.registry import export_formats
from ltrfeat.rankers.registry import EXPORT_TARGETS


def _json_file(path, what: str) -> dict | None:
    if path is None:
        return None
    try:
        with open(path, encoding="utf-8") as fh:
            value = json.load(fh)
    except (OSError, UnicodeDecodeError) as exc:
        raise LtrfeatError(f"cannot read {what}: {exc}", path=path) from None
    except json.JSONDecodeError as exc:
        raise LtrfeatError(f"{what} is not valid JSON ({exc.msg})", path=path, line=exc.lineno) from None
    if not isinstance(value, dict):
        raise LtrfeatError(f"{what} must be a JSON object keyed by feature name", path=path)
    return value


_PLUGIN = option_group(  # the es-ltr / opensearch-ltr model's names, templates and normalizers
    "plugin",
    click.option("--name", default=None, help="Plugin model name (default: the output file stem)."),
    click.option("--featureset", default=None, help="Plugin featureset name (default: the output file stem)."),
    click.option(
        "--templates",
        type=FILE,
        help="JSON {feature: ES query template} for the featureset (bm25_<field> gets a match query).",
    ),
    click.option(
        "--normalizers",
        type=FILE,
        help='JSON {feature: {"standard": {"mean": M, "standard_deviation": S}}} or min_max '
        '{"minimum", "maximum"}: the plugin\'s feature_normalizers.',
    ),
)


@click.command("export-ranker")
@click.argument("model", type=FILE)
@click.option("--to", "target", type=click.Choice(EXPORT_TARGETS), required=True, help="Export format.")
@click.option("--out", "out_path", required=True, type=FILE, help="Output model file.")
@_PLUGIN
@click.option(
    "--missing-as-zero",
    is_flag=True,
    help="Export a model trained with NaN cells; the plugins score a missing value as 0.",
)
@encoders_option("Encoder bundle of NAME_<field>_cos/_dot features: its vector width goes into OUT.index.json.")
@click.option(
    "--corpus-stats",
    type=FILE,
    help="Corpus statistics of the extraction: their analyzer (stopwords, stemmer) goes into OUT.index.json.",
)
@lexical_options(used_at_extraction=True, names=("k1", "b", "bm25_norms"))
@option_group(  # features the engine cannot compute
    "missing_features",
    click.option(
        "--allow-missing-features",
        "allow",
        is_flag=True,
        help="Export although the engine cannot compute some of the model's features (named, with their share "
        "of the model, in the error otherwise).",
    ),
    click.option(
        "--fill-zero",
        is_flag=True,
        help="Give features the engine cannot compute a match_none template: the model then sees 0 for them.",
    ),
)
@option_group(
    "parity",
    click.option(
        "--parity",
        "pairs_path",
        type=FILE,
        help="Judged pairs (qid, query, docid, the model's fields): write OUT.parity.json, per lexical feature the "
        "share of rows where the engine's value differs from ltrfeat's beyond 1e-6 relative, and the largest difference.",
    ),
    click.option(
        "--parity-columns", default=None, help="--parity column mapping, e.g. query=search_term,doc=product_title."
    ),
    click.option("--parity-encoding", default="utf-8", help="Encoding of the --parity table."),
)
def export_ranker(
    model, target, out_path, plugin, missing_as_zero, encoders, corpus_stats, lexical_params, missing_features, parity
):
    """Export a trained ranker for Elasticsearch/OpenSearch LTR, XGBoost JSON or LightGBM.

    es-ltr/opensearch-ltr write OUT (the _createmodel body: model/xgboost+json for XGBoost
    rankers, model/ranklib for LightGBM ones, model/linear with its feature normalizers for
    linear and best-single rankers), OUT.featureset.json (every feature in the model's order)
    and OUT.index.json, and print the upload requests in order and an sltr rescore search.
    Boost-best rankers cannot run in an engine (train-ranker --select --deployable TARGET
    avoids them). A feature the engine cannot compute is an error unless
    --allow-missing-features. Every target writes OUT.export.json with checksums; the export
    gives the same scores as the ranker (to float32 precision) for inputs without NaN.

    \b
    Examples:
      ltrfeat export-ranker ranker.txt --to es-ltr --out ltr_model.json --featureset my_features
      curl -XPUT localhost:9200/_ltr/_featureset/my_features -H 'Content-Type: application/json' \\
          -d @ltr_model.json.featureset.json
      ltrfeat export-ranker ranker.txt --to xgboost-json --out trees.json
    """
    from ltrfeat.core.fileio import check_writable
    from ltrfeat.export.ltr_plugin import PluginScoring
    from ltrfeat.export.ltr_plugin import export_ranker as export
    from ltrfeat.export.plugin_features import lexical_scoring, norms_warning
    from ltrfeat.rankers.models import load_ranker

    from ltrfeat.encoders.spec import parse_encoder_specs
    from ltrfeat.features.neural import encoder_width, load_encoder

    check_writable(out_path)  # before loading anything
    named = parse_encoder_specs(encoders)
    ranker = load_ranker(model)
    dims = {name: encoder_width(load_encoder(name, path)) for name, path in named.items()}
    corpus = None
    if corpus_stats:
        from ltrfeat.features.corpus import CorpusStats

        corpus = CorpusStats.load(corpus_stats)
    columns, settings, note = lexical_scoring(
        ranker.feature_map_, dims=dims, corpus=corpus, given=lexical_params, path=model
    )
    scoring = PluginScoring(
        templates=_json_file(plugin["templates"], "--templates"),
        dims=dims,
        analyzer=None if corpus is None else corpus.analyzer,
        fill_zero=missing_features["fill_zero"],
        **{k: settings[k] for k in ("k1", "b") if k in settings},
    )
    report = _parity(parity, ranker.feature_map_.names, corpus, settings, target) if parity["pairs_path"] else None
    manifest = export(
        ranker,
        out_path,
        to=target,
        name=plugin["name"],
        featureset=plugin["featureset"],
        normalizers=_json_file(plugin["normalizers"], "--normalizers"),
        missing_as_zero=missing_as_zero,
        scoring=scoring,
        allow_missing_features=missing_features["allow"],
    )
    size = f"{manifest['trees']} trees" if manifest["trees"] is not None else manifest["model_type"]
    click.echo(
        f"wrote {', '.join(os.path.join(os.path.dirname(str(out_path)), f) for f in manifest['files'])} "
        f"({manifest['kind']} ranker, {size}, "
        f"{len(manifest['features'])} features) and {out_path}.export.json",
        err=True,
    )
    for line in manifest.get("upload", []):
        click.echo(f"  upload: {line}", err=True)
    shares = manifest.get("missing_features_share") or {}
    for feature, reason in (manifest.get("not_reproduced") or {}).items():
        click.echo(
            f"warning: the engine cannot compute {feature} ({100 * shares.get(feature, 0.0):.1f}% of the model): "
            f"{reason}",
            err=True,
        )
    if note:
        click.echo(f"warning: {note}", err=True)
    norms = norms_warning(columns, settings, target)
    if norms:
        click.echo(f"warning: {norms}", err=True)
    if report is not None:
        _write_parity(report, parity["pairs_path"], out_path)
    untemplated = manifest.get("features_without_template") or []
    if untemplated:
        click.echo(
            f"warning: {len(untemplated)} feature(s) have no query template ({', '.join(untemplated[:6])}"
            f"{', ...' if len(untemplated) > 6 else ''}); add them with --templates before uploading",
            err=True,
        )


def _parity(parity: dict, names, corpus, settings: dict, target: str) -> dict:
    from ltrfeat.core.text import read_judged_pairs
    from ltrfeat.export.parity import parity_report
    from ltrfeat.core.analysis import Analyzer

    if target not in ("es-ltr", "opensearch-ltr"):
        raise LtrfeatError(
            "--parity compares the LTR plugins' featureset", fix="use it with --to es-ltr or opensearch-ltr"
        )
    pairs = read_judged_pairs(
        parity["pairs_path"], columns=parity["parity_columns"], encoding=parity["parity_encoding"], label_map="round"
    )
    analyzer = corpus.analyzer if corpus is not None else Analyzer()
    return parity_report(names, pairs, analyzer=analyzer, settings=settings, target=target)


def _write_parity(report: dict, pairs_path, out_path) -> None:
    from ltrfeat.core.fileio import atomic_output
    from ltrfeat.export.parity import format_report

    path = f"{out_path}.parity.json"
    with atomic_output(path) as fh:
        json.dump(report | {"pairs": str(pairs_path)}, fh, indent=1)
        fh.write("\n")
    for line in format_report(report):
        click.echo(line, err=True)
    click.echo(f"wrote {path}", err=True)


@click.command("export-encoder")
@click.argument("model", type=FILE)
@click.option("--to", "target", type=click.Choice(export_formats()), default="onnx", help="Export format.")
@click.option(
    "--out",
    "out_dir",
    required=True,
    type=DIR,
    help="Output directory: query.onnx, doc.onnx and encoder.json (hashing table); new, empty or an earlier "
    "export, which is replaced as a whole.",
)
def export_encoder(model, target, out_dir):
    """Export a CLSM/DSSM encoder's query and document towers to ONNX.

    The text-to-trigram hashing stays outside the graphs: OUT/encoder.json holds the
    vocabulary and normalisation rules, and ltrfeat.export.onnx.prepare builds
    the graph inputs with numpy alone; OnnxEncoder.load(OUT).encode(texts, side=...) runs them.

    \b
    Example:
      ltrfeat export-encoder clsm.ltrenc --to onnx --out clsm_onnx
    """
    from ltrfeat.encoders.encoder import Encoder
    from ltrfeat.encoders.registry import bundle_kind, encoder_kinds
    from ltrfeat.export.onnx import check_export_dir, export_onnx

    check_export_dir(out_dir)  # before the model is read: only an export of ours is replaced
    kinds = encoder_kinds()
    kind = kinds.get(bundle_kind(model))
    if kind is not None and target not in kind.exports:
        able = [k.name for k in kinds.values() if target in k.exports]
        raise LtrfeatError(
            f"a {kind.name} encoder cannot be exported to {target}",
            path=model,
            fix=f"export-encoder --to {target} takes {', '.join(able)} bundles",
        )
    sidecar = export_onnx(Encoder.load(model), out_dir)
    click.echo(
        f"wrote {out_dir}/query.onnx, doc.onnx and encoder.json ({sidecar['architecture']}, "
        f"dim {sidecar['dim']}, opset {sidecar['opset']})",
        err=True,
    )


@click.command("embed")
@click.option("--docs", "docs_path", required=True, type=FILE, help="Documents table (docid + text fields).")
@encoders_option("Encoder whose document vectors to write (repeatable): NAME_<field>_vector fields.", required=True)
@click.option("--fields", default="title", help="Comma-separated document fields to embed.")
@click.option("--index", "index_name", required=True, help="Target index name for the bulk action lines.")
@click.option("--out", "out_path", required=True, type=FILE, help="Output NDJSON file.")
@click.option("--update", is_flag=True, help="Write update actions with the vectors only (documents already indexed).")
def embed(docs_path, encoders, fields, index_name, out_path, update):
    """Write document vectors as Elasticsearch/OpenSearch _bulk NDJSON, for the exported featureset's
    script_score templates (index mapping: export-ranker's OUT.index.json).

    \b
    Example:
      ltrfeat embed --docs data/docs.tsv --encoder clsm=clsm.ltrenc --fields title --index products --out bulk.ndjson
      curl -s -XPOST localhost:9200/_bulk -H 'Content-Type: application/x-ndjson' --data-binary @bulk.ndjson
    """
    from ltrfeat.encoders.spec import parse_encoder_specs
    from ltrfeat.features.neural import load_encoder
    from ltrfeat.core.text import read_docs
    from ltrfeat.export.bulk import write_bulk

    field_list = [f.strip() for f in fields.split(",") if f.strip()]
    named = parse_encoder_specs(encoders)
    docs = read_docs(docs_path, fields=field_list)
    loaded = {name: load_encoder(name, path) for name, path in named.items()}
    n = write_bulk(docs, loaded, out_path, fields=field_list, index=index_name, update=update)
    click.echo(f"wrote {n} documents x {len(loaded) * len(field_list)} vector field(s) to {out_path}", err=True)
