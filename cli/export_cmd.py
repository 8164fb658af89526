"""``ltrfeat export-ranker`` (LTR plugins, XGBoost JSON, LightGBM) and ``export-encoder`` (ONNX)."""
from __future__ import annotations

import json

import click

from ltr_features.errors import LtrfeatError

RANKER_TARGETS = ("es-ltr", "opensearch-ltr", "xgboost-json", "lightgbm")


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


@click.command("export-ranker")
@click.argument("model", type=click.Path(dir_okay=False))
@click.option("--to", "target", type=click.Choice(RANKER_TARGETS), required=True, help="Export format.")
@click.option("--out", "out_path", required=True, type=click.Path(dir_okay=False), help="Output model file.")
@click.option("--name", default=None, help="Plugin model name (default: the output file stem).")
@click.option("--featureset", default=None, help="Plugin featureset name (default: the output file stem).")
@click.option("--templates", type=click.Path(dir_okay=False),
              help="JSON {feature: ES query template} for the featureset (bm25_<field> gets a match query).")
@click.option("--normalizers", type=click.Path(dir_okay=False),
              help='JSON {feature: {"standard": {"mean": M, "standard_deviation": S}}} or min_max '
                   '{"minimum", "maximum"}: the plugin\'s feature_normalizers.')
@click.option("--missing-as-zero", is_flag=True,
              help="Export a model trained with NaN cells; the plugins score a missing value as 0.")
def export_ranker(model, target, out_path, name, featureset, templates, normalizers, missing_as_zero):
    """Export a trained ranker for Elasticsearch/OpenSearch LTR, XGBoost JSON or LightGBM.

    es-ltr/opensearch-ltr write OUT (the _createmodel body: model/xgboost+json for XGBoost
    rankers, model/ranklib for LightGBM ones) and OUT.featureset.json (every feature in the
    model's order). Every target writes OUT.export.json with checksums; the exported trees
    give the same scores as the ranker (to float32 precision) for inputs without NaN.

    \b
    Examples:
      ltrfeat export-ranker ranker.txt --to es-ltr --out ltr_model.json --featureset my_features
      curl -XPUT localhost:9200/_ltr/_featureset/my_features -H 'Content-Type: application/json' \\
          -d @ltr_model.json.featureset.json
      ltrfeat export-ranker ranker.txt --to xgboost-json --out trees.json
    """
    from rankers.export import export_ranker as export
    from rankers.lambdamart import LambdaMART

    manifest = export(LambdaMART.load(model), out_path, to=target, name=name, featureset=featureset,
                      templates=_json_file(templates, "--templates"),
                      normalizers=_json_file(normalizers, "--normalizers"), missing_as_zero=missing_as_zero)
    click.echo(f"wrote {', '.join(manifest['files'])} ({manifest['trees']} trees, "
               f"{len(manifest['features'])} features) and {out_path}.export.json", err=True)
    for line in manifest.get("upload", []):
        click.echo(f"  upload: {line}", err=True)
    untemplated = manifest.get("features_without_template") or []
    if untemplated:
        click.echo(f"warning: {len(untemplated)} feature(s) have no query template ({', '.join(untemplated[:6])}"
                   f"{', ...' if len(untemplated) > 6 else ''}); add them with --templates before uploading", err=True)


@click.command("export-encoder")
@click.argument("model", type=click.Path(dir_okay=False))
@click.option("--to", "target", type=click.Choice(["onnx"]), default="onnx", show_default=True, help="Export format.")
@click.option("--out", "out_dir", required=True, type=click.Path(file_okay=False),
              help="Output directory: query.onnx, doc.onnx and encoder.json (hashing table).")
def export_encoder(model, target, out_dir):
    """Export a CLSM/DSSM encoder's query and document towers to ONNX.

    The text-to-trigram hashing stays outside the graphs: OUT/encoder.json holds the
    vocabulary and normalisation rules, and ltr_features.encoders.onnx_export.prepare builds
    the graph inputs with numpy alone; OnnxEncoder.load(OUT).encode(texts, side=...) runs them.

    \b
    Example:
      ltrfeat export-encoder clsm.ltrenc --to onnx --out clsm_onnx
    """
    from ltr_features.encoders.encoder import Encoder
    from ltr_features.encoders.onnx_export import export_onnx

    sidecar = export_onnx(Encoder.load(model), out_dir)
    click.echo(f"wrote {out_dir}/query.onnx, doc.onnx and encoder.json ({sidecar['architecture']}, "
               f"dim {sidecar['dim']}, opset {sidecar['opset']})", err=True)
