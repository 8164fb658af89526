"""Export a trained ranker for serving outside ltrfeat.

Targets (``--to``):

- ``es-ltr`` / ``opensearch-ltr`` -- the Elasticsearch (o19s) / OpenSearch Learning-to-Rank
  plugin: ``OUT`` is the ``_createmodel`` request body, ``OUT.featureset.json`` the
  featureset body naming every feature in the model's order, with a template for every feature
  the engine can compute (see :mod:`ltrfeat.export.plugin_features`), and ``OUT.index.json`` the index
  settings and mappings those templates need. XGBoost models become
  ``model/xgboost+json``, LightGBM models ``model/ranklib`` (a LambdaMART ensemble with 1-based
  feature ordinals); ``feature_normalizers`` (``standard`` / ``min_max``) are carried when given.
  Linear rankers become ``model/linear`` (a weight per feature) with a ``standard`` normalizer per
  feature (their training mean and standard deviation), the best single feature a one-weight
  ``model/linear`` (its direction). Boost-best is refused: its trees start from a per-query z-score
  that an engine scoring one document at a time cannot compute. A model feature the engine cannot
  compute is an error naming it and its share of the model, unless ``allow_missing_features``.
  ``manifest["upload"]`` lists the requests in order (index, feature store, featureset, model, an
  ``sltr`` rescore search); both plugins serve the feature store under ``/_ltr``.
- ``xgboost-json`` -- XGBoost's JSON tree dump (the ``model/xgboost+json`` definition), for
  XGBoost or LightGBM models.
- ``lightgbm`` -- LightGBM's own text model (LightGBM models only).

Every export writes a manifest ``OUT.export.json`` with the SHA-256 of each file, the feature
order and the missing-value policy; :func:`load_export` refuses a file that was changed or
truncated and rebuilds a predictor from the exported text alone.

Conversion is exact for every input without NaN. Both plugins compare float32 feature values:
ranklib splits go left when ``x <= t`` and xgboost+json splits when ``x < t``, so each engine's
threshold is mapped to the float32 that gives the same decision (LightGBM ``x <= t`` with a double
``t``; XGBoost ``x < t`` with a float32 ``t``). XGBoost's ``base_score`` is added to the leaves of
the first tree. Leaf values are stored as float32 text, as the plugins read them.

Missing values: the plugins have no NaN -- a feature whose query does not match scores 0. A
LightGBM split with ``missing_type=Zero`` (``zero_as_missing``) sends 0 to a learned side and
cannot be expressed, so it is refused. A model trained on data with NaN cells learned default
directions that the plugins cannot apply; it is refused unless ``missing_as_zero=True``, which
accepts that a missing value is scored as 0 (as the plugins do). The exported model itself never
sees NaN; :class:`ExportedRanker` scores NaN as 0.
"""

from __future__ import annotations

import hashlib
import contextlib
import json
import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from numbers import Integral, Real
from pathlib import Path
from typing import ClassVar

import lightgbm as lgb
import numpy as np

from ltrfeat.core.analysis import Analyzer
from ltrfeat.features.lexical import BM25_B, BM25_K1
from ltrfeat.core.errors import LtrfeatError, ModelFileError, ParameterError
from ltrfeat.core.fileio import StaleSideFiles, atomic_output, is_stream
from ltrfeat.core.settings import Interval, Settings, check_value
from ltrfeat.rankers.lambdamart import LambdaMART
from ltrfeat.export.plugin_features import KEYWORDS, index_body, plugin_featureset
from ltrfeat.rankers import registry
from ltrfeat.rankers.model_check import check_model

MANIFEST_FORMAT = "ltrfeat.export/1"
# both plugins keep the feature store under /_ltr (RestStoreManager, RestFeatureManager, RestCreateModelFromSet);
# OpenSearch's /_plugins/_ltr holds only the stats
PLUGIN_TARGETS = registry.LTR_ENGINES
NORMALIZERS = {"standard": ("mean", "standard_deviation"), "min_max": ("minimum", "maximum")}
EXPORT_MISSING_POLICY = (
    "exact for inputs without NaN; NaN is scored as 0 (the plugins score a feature whose query does not match as 0)"
)


def manifest_path(path) -> Path:
    """``<out>.export.json`` beside an exported model."""
    return Path(f"{path}.export.json")


def featureset_path(path) -> Path:
    """``<out>.featureset.json`` beside an exported plugin model."""
    return Path(f"{path}.featureset.json")


# ------------------------------------------------------------------------------ canonical trees
# A node is {"leaf": value} or {"feature": column, "threshold": float32 t, "left": node, "right": node}:
# a row goes left when x <= t.


def _f32_floor(t: float) -> np.float32:
    """Largest float32 <= ``t``: for float32 x, ``x <= t`` iff ``x <= _f32_floor(t)``."""
    c = np.float32(t)
    return np.nextafter(c, np.float32(-np.inf)) if float(c) > t else c


def _lightgbm_node(node: dict, path) -> dict:
    if "leaf_value" in node:
        return {"leaf": float(node["leaf_value"])}
    if node.get("decision_type") != "<=":
        raise LtrfeatError(
            "the model has categorical splits, which the LTR plugins cannot express",
            path=path,
            fix="train without categorical features",
        )
    if node.get("missing_type") == "Zero":
        raise LtrfeatError(
            "the model treats 0 as missing (zero_as_missing), which the LTR plugins cannot express",
            path=path,
            fix="retrain without zero_as_missing",
        )
    return {
        "feature": int(node["split_feature"]),
        "threshold": _f32_floor(float(node["threshold"])),
        "left": _lightgbm_node(node["left_child"], path),
        "right": _lightgbm_node(node["right_child"], path),
    }


def _xgboost_node(node: dict, columns: dict, path) -> dict:
    if "leaf" in node:
        return {"leaf": float(node["leaf"])}
    children = {c["nodeid"]: c for c in node["children"]}
    # XGBoost: x < t (float32 t) goes to "yes"; x <= previous float32 is the same decision
    t = np.float32(node["split_condition"])
    return {
        "feature": columns[node["split"]],
        "threshold": np.nextafter(t, np.float32(-np.inf)),
        "left": _xgboost_node(children[node["yes"]], columns, path),
        "right": _xgboost_node(children[node["no"]], columns, path),
    }


def _add_to_leaves(node: dict, value: float) -> dict:
    if "leaf" in node:
        return {"leaf": node["leaf"] + value}
    return node | {"left": _add_to_leaves(node["left"], value), "right": _add_to_leaves(node["right"], value)}


def _xgboost_base_score(booster) -> float:
    raw = json.loads(booster.save_config())["learner"]["learner_model_param"]["base_score"]
    values = [float(v) for v in re.findall(r"[-+0-9.eE]+", raw)]
    if len(values) != 1:
        raise LtrfeatError(f"unexpected XGBoost base_score {raw!r}", fix="export a single-target ranking model")
    return values[0]


def canonical_trees(model: LambdaMART, *, path=None) -> list[dict]:
    """The model's trees (prediction-time ones only) as canonical ``x <= t`` trees on column indices."""
    if model.engine == "lightgbm":
        dump = model.booster_.dump_model(num_iteration=model.best_iteration_)
        trees = [_lightgbm_node(t["tree_structure"], path) for t in dump["tree_info"]]
    else:
        from ltrfeat.rankers.lambdamart import _engine_feature_names  # same names the booster was trained with

        columns = {n: j for j, n in enumerate(_engine_feature_names(model.feature_map_))}
        booster = model.booster_[: model.best_iteration_]
        trees = [_xgboost_node(json.loads(t), columns, path) for t in booster.get_dump(dump_format="json")]
        if trees:
            trees[0] = _add_to_leaves(trees[0], _xgboost_base_score(model.booster_))
    if not trees:
        raise LtrfeatError("the model has no trees", path=path, fix="train the ranker for at least one round")
    return trees


def _check_missing(model: LambdaMART, missing_as_zero: bool, path) -> None:
    nan_cells = int(((model.metadata_ or {}).get("missing_values") or {}).get("train_nan_cells") or 0)
    if nan_cells and not missing_as_zero:
        raise LtrfeatError(
            f"the model was trained with {nan_cells} NaN cells and learned where missing values go; the LTR "
            "plugins have no missing values (an unmatched feature scores 0)",
            path=path,
            fix="pass --missing-as-zero to accept that a missing value is scored as 0, or retrain without NaN",
        )


# ------------------------------------------------------------------------------ writers


def _num(value) -> str:
    """Shortest text that reads back as the same float32."""
    return np.format_float_scientific(np.float32(value), unique=True, trim="-") if value != 0 else "0.0"


def ranklib_text(trees: list[dict], *, learning_rate: float, source: str) -> str:
    """RankLib LambdaMART ensemble text: 1-based feature ordinals, ``x <= threshold`` goes left, weight 1."""

    def leaves(n):
        return 1 if "leaf" in n else leaves(n["left"]) + leaves(n["right"])

    out = [
        "## LambdaMART",
        f"## No. of trees = {len(trees)}",
        f"## No. of leaves = {max(map(leaves, trees))}",
        "## No. of threshold candidates = 256",
        f"## Learning rate = {learning_rate}",
        "## Stop early = 100",
        f"## Converted by ltrfeat from a {source} model (tree weights 1: the leaves include the shrinkage)",
        "",
        "<ensemble>",
    ]

    def emit(node, indent):
        pad = "\t" * indent
        if "leaf" in node:
            out.append(f"{pad}<output> {_num(node['leaf'])} </output>")
            return
        out.append(f"{pad}<feature> {node['feature'] + 1} </feature>")
        out.append(f"{pad}<threshold> {_num(node['threshold'])} </threshold>")
        for side in ("left", "right"):
            out.append(f'{pad}<split pos="{side}">')
            emit(node[side], indent + 1)
            out.append(f"{pad}</split>")

    for i, tree in enumerate(trees, 1):
        out.append(f'\t<tree id="{i}" weight="1.0">')
        out.append("\t\t<split>")
        emit(tree, 3)
        out.append("\t\t</split>")
        out.append("\t</tree>")
    out.append("</ensemble>")
    return "\n".join(out) + "\n"


def xgboost_dump(trees: list[dict], names: list[str]) -> list[dict]:
    """XGBoost JSON dump trees: ``x < split_condition`` goes to ``yes`` (the first child)."""

    def build(node, nodeid, depth, counter):
        if "leaf" in node:
            return {"nodeid": nodeid, "leaf": float(np.float32(node["leaf"]))}
        yes, no = counter[0], counter[0] + 1
        counter[0] += 2
        # x <= t  <=>  x < next float32 after t
        cond = np.nextafter(np.float32(node["threshold"]), np.float32(np.inf))
        return {
            "nodeid": nodeid,
            "depth": depth,
            "split": names[node["feature"]],
            "split_condition": float(cond),
            "yes": yes,
            "no": no,
            "missing": yes if 0 <= node["threshold"] else no,  # NaN scores as 0
            "children": [build(node["left"], yes, depth + 1, counter), build(node["right"], no, depth + 1, counter)],
        }

    return [build(tree, 0, 0, [1]) for tree in trees]


def index_path(path) -> Path:
    """``<out>.index.json`` beside an exported plugin model: the index settings and mappings."""
    return Path(f"{path}.index.json")


def _check_normalizers(normalizers: dict, features: list[str]) -> dict:
    normalizers = dict(normalizers or {})
    fix = (
        'give {"FEATURE": {"standard": {"mean": M, "standard_deviation": S}}} or '
        '{"FEATURE": {"min_max": {"minimum": A, "maximum": B}}}'
    )
    for name, spec in normalizers.items():
        if name not in features:
            raise LtrfeatError(f"normalizer for unknown feature {name!r}", fix=f"the model's features are {features}")
        kind = next(iter(spec), None) if isinstance(spec, dict) and len(spec) == 1 else None
        if kind not in NORMALIZERS or set(spec[kind]) != set(NORMALIZERS[kind]):
            raise LtrfeatError(f"bad normalizer for {name!r}: {spec!r}", fix=fix)
        a, b = (float(spec[kind][k]) for k in NORMALIZERS[kind])
        if not (np.isfinite(a) and np.isfinite(b)) or (kind == "standard" and b <= 0) or (kind == "min_max" and b <= a):
            raise LtrfeatError(f"bad normalizer for {name!r}: {spec!r} (need a positive spread)", fix=fix)
    return normalizers


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@dataclass(frozen=True)
class PluginScoring(Settings):
    """How the search engine computes the model's features (plugin targets: the featureset's templates
    and ``out.index.json``).

    templates : plugin query template per feature name, instead of the generated ones
        (:mod:`ltrfeat.export.plugin_features` writes one for every feature the engine can compute).
    dims : ``{encoder name: vector width}`` for the index mapping of neural features (and dot scores).
    analyzer : the extraction's :class:`~ltrfeat.core.analysis.Analyzer` (default: lowercase tokens only).
    k1, b : the extraction's BM25 parameters.
    fill_zero : give features the engine cannot compute a ``match_none`` template (the model then sees 0).
    """

    label: ClassVar[str] = "plugin scoring"
    _parameter_constraints: ClassVar[dict] = {
        "templates": [dict, None],
        "analyzer": [Analyzer, None],
        "k1": [Interval(Real, 0, None)],
        "b": [Interval(Real, 0, 1)],
        "fill_zero": [bool],
    }
    _fixes: ClassVar[dict] = {
        "templates": 'e.g. {"bm25_title": {"match": {"title": "{{keywords}}"}}}',
        "analyzer": "pass the extraction's analyzer (CorpusStats.load(path).analyzer) or None",
        "k1": "give the value the extraction used",
        "b": "give the value the extraction used",
    }

    templates: dict | None = field(default=None, hash=False)
    dims: dict | None = field(default=None, hash=False)
    analyzer: Analyzer | None = None
    k1: float = BM25_K1
    b: float = BM25_B
    fill_zero: bool = False

    def _check(self) -> None:
        if self.dims is not None and not isinstance(self.dims, dict):
            raise ParameterError(
                f"dims must be a mapping, got {self.dims!r}", fix='e.g. dims={"clsm": 128}', param="dims"
            )
        for encoder, width in (self.dims or {}).items():
            check_value(f"dims[{encoder!r}]", width, [Interval(Integral, 1, None)], fix='e.g. dims={"clsm": 128}')


def feature_shares(model) -> dict[str, float]:
    """Each feature's share of ``model``: of the total gain for trees, of the summed |weight| (standardised
    units) for a linear model, an equal share otherwise (a single feature: all of it)."""
    names = model.feature_map_.names
    if hasattr(model, "feature_importance_"):
        values = [float(model.feature_importance_.get(n, 0.0)) for n in names]
    elif hasattr(model, "coef_"):
        values = [abs(float(w)) for w in model.coef_]
    else:
        values = [1.0] * len(names)
    total = sum(values) or 1.0
    return {n: v / total for n, v in zip(names, values)}


def _refusal(kind, to: str) -> LtrfeatError:
    """Why ``to`` cannot run a ranker of ``kind``, and what to train instead."""
    why = getattr(kind.implementation(), "NOT_EXPORTABLE", None) or (
        f"the {kind.name} ranker kind names no LTR engine it exports to (RankerKind.exports_to)"
    )
    if to not in PLUGIN_TARGETS:
        target = "es-ltr" if "es-ltr" in kind.exports_to else None
        return LtrfeatError(
            f"a {kind.name} ranker has no trees to write as {to}",
            fix=f"export it with --to {target}" if target else f"{why}; serve it with ltrfeat serve",
        )
    return LtrfeatError(
        f"{to} cannot run a {kind.name} ranker: {why}",
        fix=f"retrain with ltrfeat train-ranker --select --deployable {to} (candidates "
        f"{', '.join(registry.deployable(to))}), or serve this one with ltrfeat serve",
    )


def _missing_features(missing: dict, shares: dict, what: str) -> LtrfeatError:
    heavy = sorted(missing, key=lambda n: -shares.get(n, 0.0))  # the biggest shares first
    shown = ", ".join(f"{n} ({100 * shares.get(n, 0.0):.1f}%)" for n in heavy[:6])
    total = 100 * sum(shares.get(n, 0.0) for n in missing)
    return LtrfeatError(
        f"the engine cannot compute {len(missing)} of the model's {len(shares)} features, carrying {total:.1f}% "
        f"of its {what}: {shown}{', ...' if len(missing) > 6 else ''}",
        fix="give them engine queries with --templates, retrain without them (train-ranker --features), or pass "
        "--allow-missing-features (with --fill-zero the engine scores them 0)",
    )


def _compose(plan_normalizers: dict, model_normalizers: dict) -> dict:
    """One normalizer per feature: a neural feature's offset (standard, deviation 1) followed by the model's
    own standardisation is one standard normalizer with the offset added to the mean."""
    out = dict(plan_normalizers)
    for name, spec in model_normalizers.items():
        if name in out:
            offset = out[name]["standard"]["mean"]
            ((kind, p),) = spec.items()
            first, second = NORMALIZERS[kind]
            spec = {kind: {first: p[first] + offset, second: p[second] + (offset if kind == "min_max" else 0.0)}}
        out[name] = spec
    return out


def search_example(index: str, model_name: str, params, *, field: str | None, window: int = 100) -> dict:
    """An ``sltr`` rescore search: the first-stage query's top ``window`` hits re-scored by the model alone
    (``query_weight`` 0), with every template parameter the featureset needs (``/embed`` answers them)."""
    first = {"match": {field: "QUERY TEXT"}} if field else {"match_all": {}}
    values = {p: "QUERY TEXT" if p == KEYWORDS else f"<{p} from ltrfeat serve /embed>" for p in params}
    return {
        "index": index,
        "body": {
            "query": first,
            "rescore": {
                "window_size": window,
                "query": {
                    "rescore_query": {"sltr": {"params": values, "model": model_name}},
                    "query_weight": 0.0,
                    "rescore_query_weight": 1.0,
                },
            },
        },
    }


def export_ranker(
    model,
    out,
    *,
    to: str,
    name: str | None = None,
    featureset: str | None = None,
    normalizers: dict | None = None,
    missing_as_zero: bool = False,
    scoring: PluginScoring | None = None,
    allow_missing_features: bool = False,
) -> dict:
    """Write ``model`` for serving (see the module docstring) and return the manifest.

    Parameters
    ----------
    model : a fitted or loaded ranker: LambdaMART (every target), or a kind whose registry entry names the LTR
        engine (linear, best-single: ``model/linear``); boost-best and other kinds are refused with the reason.
    out : output file; its manifest is ``out.export.json`` (plugin targets also write
        ``out.featureset.json`` and ``out.index.json``).
    to : one of :data:`ltrfeat.rankers.registry.EXPORT_TARGETS`.
    name, featureset : plugin model and featureset names (default: the file stem).
    normalizers : plugin ``feature_normalizers`` per feature name (plugin targets, LambdaMART only).
    missing_as_zero : accept a model trained with NaN cells (the plugins score missing as 0).
    scoring : how the search engine computes the features (plugin targets only; default
        :class:`PluginScoring()`: generated templates, lowercase tokens, BM25 k1 and b Lucene's defaults).
    allow_missing_features : export although the engine cannot compute some of the model's features
        (otherwise an error naming them and their share of the model).
    """
    if to not in registry.EXPORT_TARGETS:
        raise LtrfeatError(f"unknown export target {to!r}", fix=f"use one of {', '.join(registry.EXPORT_TARGETS)}")
    if not hasattr(model, "feature_map_"):
        raise LtrfeatError("the ranker is not fitted", fix="train it or load it with ltrfeat.load_ranker")
    kind = registry.kind_of(model)
    trees_model = isinstance(model, LambdaMART)
    plugin = to in PLUGIN_TARGETS
    if (plugin and to not in kind.exports_to) or (not plugin and not trees_model):
        raise _refusal(kind, to)
    out = Path(out)
    features = model.feature_map_.names
    if normalizers and not plugin:
        raise LtrfeatError(
            f"feature normalizers are a plugin feature; {to} has none", fix="export to es-ltr or opensearch-ltr"
        )
    if normalizers and not trees_model:
        raise LtrfeatError(f"a {kind.name} model brings its own feature normalizers", fix="leave out --normalizers")
    normalizers = _check_normalizers(normalizers, features)
    scoring = scoring or PluginScoring()
    manifest = {
        "format": MANIFEST_FORMAT,
        "target": to,
        "kind": kind.name,
        "engine": getattr(model, "engine", None),
        "features": features,
        "feature_ids": model.feature_map_.ids,
        "trees": None,
        "missing": EXPORT_MISSING_POLICY,
        "source_model": {
            "engine_version": (getattr(model, "metadata_", {}).get("versions") or {}).get(getattr(model, "engine", "")),
            "train_hash": (getattr(model, "metadata_", {}).get("training") or {}).get("train_hash"),
        },
    }
    if to == "lightgbm":
        files = _lightgbm_files(model, out, manifest)
    elif not plugin:
        _check_missing(model, missing_as_zero, out)
        files = _xgboost_json_files(model, out, manifest)
    else:
        plan = plugin_featureset(
            features, target=to, dims=scoring.dims, templates=scoring.templates, fill_zero=scoring.fill_zero
        )
        shares = feature_shares(model)
        if plan["not_reproduced"] and not allow_missing_features:
            raise _missing_features(plan["not_reproduced"], shares, "|weight|" if hasattr(model, "coef_") else "gain")
        if trees_model:
            _check_missing(model, missing_as_zero, out)
        spec = _plugin_model(model, kind, plan, normalizers, manifest, out)
        names = (name or out.stem, featureset or out.stem)
        files = _plugin_files(out, manifest, plan, shares, spec, scoring, names)
    _write_export(out, files, manifest)
    return manifest


def _lightgbm_files(model: LambdaMART, out: Path, manifest: dict) -> dict[str, bytes]:
    """``--to lightgbm``: the booster's own text model, holding the trees used for prediction."""
    if model.engine != "lightgbm":
        raise LtrfeatError(
            "only a LightGBM-trained ranker can be exported as a LightGBM model",
            fix="use --to xgboost-json or es-ltr for XGBoost rankers",
        )
    text = model.booster_.model_to_string(num_iteration=model.best_iteration_)
    manifest["trees"] = model.best_iteration_
    return {out.name: text.encode()}


def _xgboost_json_files(model: LambdaMART, out: Path, manifest: dict) -> dict[str, bytes]:
    """``--to xgboost-json``: the canonical trees as an XGBoost JSON dump (either engine's model)."""
    trees = canonical_trees(model, path=out)
    manifest["trees"] = len(trees)
    manifest["model_type"] = "xgboost-json-dump"
    return {out.name: (json.dumps(xgboost_dump(trees, model.feature_map_.names), indent=1) + "\n").encode()}


def _plugin_model(model, kind, plan: dict, normalizers: dict, manifest: dict, out: Path) -> dict:
    """The plugin's ``model`` object (type, definition, feature normalizers): LambdaMART trees as RankLib text
    (LightGBM) or XGBoost JSON, another kind as its registry entry writes it; the neural features' normalizers
    added from the featureset plan."""
    if isinstance(model, LambdaMART):
        trees = canonical_trees(model, path=out)
        manifest["trees"] = len(trees)
        use_ranklib = model.engine == "lightgbm"
        manifest["model_type"] = "model/ranklib" if use_ranklib else "model/xgboost+json"
        definition = (
            ranklib_text(trees, learning_rate=model.learning_rate, source=model.engine)
            if use_ranklib
            else json.dumps(xgboost_dump(trees, model.feature_map_.names), indent=1)
        )
        clash = sorted(set(normalizers) & set(plan["normalizers"]))
        if clash:
            raise LtrfeatError(
                f"{clash[0]} is a neural feature: its normalizer maps the engine's shifted score "
                "back to the cosine the model was trained on",
                fix="drop it from --normalizers",
            )
        normalizers = {**normalizers, **plan["normalizers"]}
    else:
        spec = kind.implementation().plugin_model(model)
        manifest["model_type"], definition = spec["type"], spec["definition"]
        normalizers = _compose(plan["normalizers"], spec.get("feature_normalizers") or {})
    found = {"type": manifest["model_type"], "definition": definition}
    return found | {"feature_normalizers": normalizers} if normalizers else found


def _plugin_files(
    out: Path, manifest: dict, plan: dict, shares: dict, spec: dict, scoring: PluginScoring, names: tuple[str, str]
) -> dict[str, bytes]:
    """An LTR plugin export: the model, its featureset and the index body, with the upload steps in the manifest.
    ``spec``: the plugin's model object; ``names``: the model's and the featureset's."""
    model_name, set_name = names
    body = {"model": {"name": model_name, "model": spec}}
    fs = {"featureset": {"name": set_name, "features": plan["features"]}}
    index = index_body(
        plan["fields"],
        target=manifest["target"],
        vectors=plan["vectors"],
        analyzer=scoring.analyzer,
        k1=scoring.k1,
        b=scoring.b,
    )
    params = dict.fromkeys(p for f in plan["features"] for p in f["params"])
    example = search_example("INDEX", model_name, params, field=(plan["fields"] or [None])[0])
    manifest["upload"] = [
        f"PUT INDEX  <- {index_path(out).name} (then index documents and vectors: ltrfeat embed)",
        "PUT _ltr  (create the default feature store, once per cluster)",
        f"PUT _ltr/_featureset/{set_name}  <- {featureset_path(out).name}",
        f"POST _ltr/_featureset/{set_name}/_createmodel  <- {out.name}",
        f"POST INDEX/_search  <- {json.dumps(example['body'])}",
    ]
    manifest["search_example"] = example
    manifest["features_without_template"] = [f["name"] for f in fs["featureset"]["features"] if f["template"] is None]
    manifest["not_reproduced"] = plan["not_reproduced"]
    manifest["missing_features_share"] = {n: shares.get(n, 0.0) for n in plan["not_reproduced"]}
    return {
        out.name: (json.dumps(body, indent=1) + "\n").encode(),
        featureset_path(out).name: (json.dumps(fs, indent=1) + "\n").encode(),
        index_path(out).name: (json.dumps(index, indent=1) + "\n").encode(),
    }


def _write_export(out: Path, files: dict[str, bytes], manifest: dict) -> None:
    """``files`` and the manifest (their SHA-256 recorded) put in place together, the model last, and the side files
    of an earlier export that this one does not make (a plugin export's featureset and index beside an xgboost-json
    one) removed with them."""
    manifest["files"] = {fname: _sha(data) for fname, data in files.items()}
    manifest["model_file"] = out.name
    with contextlib.ExitStack() as stack:
        stale = stack.enter_context(StaleSideFiles())
        for fname, data in files.items():
            sidecar_of = None if fname == out.name else out  # the featureset and index files go with the model
            stack.enter_context(atomic_output(out.parent / fname, binary=True, sidecar_of=sidecar_of)).write(data)
        fh = stack.enter_context(atomic_output(manifest_path(out), sidecar_of=out))
        json.dump(manifest, fh, indent=1)
        fh.write("\n")
        if not is_stream(out):
            stale.retire(p for p in (featureset_path(out), index_path(out)) if p.name not in files)


# ------------------------------------------------------------------------------ loading


@dataclass
class ExportedRanker:
    """An export read back from its files (checked against the manifest), able to score rows.

    ``predict(X)`` takes float features in ``features`` order (NaN is scored as 0) and
    computes the exported trees as the plugins do: float32 features, float32 thresholds.
    """

    target: str
    features: list
    manifest: dict
    trees: list | None = None
    normalizers: dict | None = None
    booster: object = None
    weights: np.ndarray | None = None

    def predict(self, X) -> np.ndarray:
        X = np.nan_to_num(np.asarray(X, dtype=np.float32), nan=0.0)
        if X.ndim != 2 or X.shape[1] != len(self.features):
            raise LtrfeatError(f"expected {len(self.features)} feature columns, got shape {X.shape}")
        if self.booster is not None:
            return self.booster.predict(X.astype(np.float64))
        X = X.copy()
        for name, spec in (self.normalizers or {}).items():
            j = self.features.index(name)
            kind, p = next(iter(spec.items()))
            a, b = (np.float32(p[k]) for k in NORMALIZERS[kind])
            X[:, j] = (X[:, j] - a) / (b if kind == "standard" else (b - a))
        if self.weights is not None:  # model/linear: float32 products summed in float32, as the plugins do
            score = np.zeros(len(X), dtype=np.float32)
            for j, w in enumerate(self.weights):
                score += w * X[:, j]
            return score.astype(np.float64)
        out = np.zeros(len(X))
        for tree in self.trees:
            out += _eval_tree(tree, X)
        return out


def _eval_tree(node: dict, X: np.ndarray) -> np.ndarray:
    out = np.empty(len(X))
    stack = [(node, np.arange(len(X)))]
    while stack:
        n, rows = stack.pop()
        if "leaf" in n:
            out[rows] = n["leaf"]
            continue
        go_left = n["test"](X[rows, n["feature"]])
        stack.append((n["left"], rows[go_left]))
        stack.append((n["right"], rows[~go_left]))
    return out


def _parse_ranklib(text: str, n_features: int, path) -> list[dict]:
    body = "\n".join(line for line in text.splitlines() if not line.startswith("##"))
    root = ET.fromstring(body)

    def node(split: ET.Element) -> dict:
        output = split.find("output")
        if output is not None:
            return {"leaf": float(np.float32(output.text))}
        feature = int(split.find("feature").text) - 1
        if not 0 <= feature < n_features:
            raise ValueError(f"feature ordinal {feature + 1} outside 1..{n_features}")
        t = np.float32(split.find("threshold").text)
        sides = {s.get("pos"): s for s in split.findall("split")}
        return {
            "feature": feature,
            "test": lambda x, t=t: x <= t,
            "left": node(sides["left"]),
            "right": node(sides["right"]),
        }

    if root.tag != "ensemble":
        raise ValueError("no <ensemble>")
    trees = []
    for tree in root.findall("tree"):
        weight = np.float32(tree.get("weight"))
        parsed = node(tree.find("split"))
        trees.append(parsed if weight == 1 else _scale(parsed, float(weight)))
    return trees


def _scale(node: dict, w: float) -> dict:
    if "leaf" in node:
        return {"leaf": node["leaf"] * w}
    return node | {"left": _scale(node["left"], w), "right": _scale(node["right"], w)}


def _parse_xgboost(trees: list, features: list, path) -> list[dict]:
    index = {n: j for j, n in enumerate(features)}

    def node(n: dict) -> dict:
        if "leaf" in n:
            return {"leaf": float(np.float32(n["leaf"]))}
        yes, no = n["children"]
        if (yes["nodeid"], no["nodeid"]) != (n["yes"], n["no"]):
            raise ValueError(f"node {n['nodeid']}: children do not match yes/no")
        t = np.float32(n["split_condition"])
        return {"feature": index[n["split"]], "test": lambda x, t=t: x < t, "left": node(yes), "right": node(no)}

    return [node(t) for t in trees]


def load_export(path) -> ExportedRanker:
    """Read an export written by :func:`export_ranker`; a changed or truncated file is refused."""
    path = Path(path)
    mpath = manifest_path(path)
    fix = "export the ranker again with `ltrfeat export-ranker`"
    try:
        manifest = json.loads(mpath.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ModelFileError("no export manifest beside the model", path=mpath, fix=fix) from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ModelFileError(f"export manifest is not valid JSON ({exc})", path=mpath, fix=fix) from None
    if (
        not isinstance(manifest, dict)
        or manifest.get("format") != MANIFEST_FORMAT
        or manifest.get("target") not in registry.EXPORT_TARGETS
    ):
        raise ModelFileError(f"not an ltrfeat export manifest (expected format {MANIFEST_FORMAT})", path=mpath, fix=fix)
    data = {}
    for fname, digest in (manifest.get("files") or {}).items():
        fpath = path.parent / fname
        try:
            raw = fpath.read_bytes()
        except OSError as exc:
            raise ModelFileError(f"cannot read exported file: {exc.strerror}", path=fpath, fix=fix) from None
        if _sha(raw) != digest:
            raise ModelFileError(
                "exported file was changed or truncated (SHA-256 differs from the manifest)", path=fpath, fix=fix
            )
        data[fname] = raw
    target, features = manifest["target"], list(manifest["features"])
    model_raw = data.get(path.name)
    if model_raw is None or manifest.get("model_file") != path.name:
        raise ModelFileError("the manifest does not describe this file", path=path, fix=fix)
    try:
        if target == "lightgbm":
            check_model(
                "lightgbm", model_raw, feature_names=None, min_trees=int(manifest.get("trees") or 0), path=path
            )  # LightGBM's parser crashes on a damaged file
            return ExportedRanker(target, features, manifest, booster=lgb.Booster(model_str=model_raw.decode()))
        text = model_raw.decode("utf-8")
        normalizers = None
        if target in PLUGIN_TARGETS:
            inner = json.loads(text)["model"]["model"]
            normalizers = inner.get("feature_normalizers")
            fs = json.loads(data[featureset_path(path).name])["featureset"]["features"]
            if [f["name"] for f in fs] != features:
                raise ValueError("featureset order differs from the manifest")
            definition = inner["definition"]
            if inner["type"] == "model/linear":
                weights = definition if isinstance(definition, dict) else json.loads(definition)
                if not set(weights) <= set(features):
                    raise ValueError(f"weights for unknown features {sorted(set(weights) - set(features))[:3]}")
                vector = np.array([weights.get(f, 0.0) for f in features], dtype=np.float32)
                return ExportedRanker(target, features, manifest, normalizers=normalizers, weights=vector)
            trees = (
                _parse_ranklib(definition, len(features), path)
                if inner["type"] == "model/ranklib"
                else _parse_xgboost(json.loads(definition), features, path)
            )
        else:
            trees = _parse_xgboost(json.loads(text), features, path)
    except (ValueError, KeyError, TypeError, IndexError, AttributeError, ET.ParseError, lgb.basic.LightGBMError) as exc:
        raise ModelFileError(
            f"cannot parse the exported model ({type(exc).__name__}: {str(exc)[:200]})", path=path, fix=fix
        ) from None
    if len(trees) != manifest.get("trees"):
        raise ModelFileError(
            f"the export holds {len(trees)} trees, the manifest says {manifest.get('trees')}", path=path, fix=fix
        )
    return ExportedRanker(target, features, manifest, trees=trees, normalizers=normalizers)
