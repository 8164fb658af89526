"""Saving and loading every ranker kind model selection can ship, without pickles.

``MODEL.meta.json`` names the kind (absent = ``lambdamart``, as written before there were kinds):

- ``lambdamart``: the engine's native model (:meth:`ltrfeat.rankers.lambdamart.LambdaMART.save`);
- ``boost-best``: LambdaMART trees plus the initial score they boost from (feature, direction,
  scale) in the metadata;
- ``linear``: a JSON model file with the features, standardisation and weights;
- ``best-single``: a JSON model file naming the feature and its direction.

Every kind has ``predict(RankingSet) -> scores``; only plain LambdaMART models can be served
or exported to ES/OpenSearch (they hold nothing but trees).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from ltrfeat.core.dataset import FeatureMap
from ltrfeat.core.errors import ModelFileError
from ltrfeat.core.versions import library_versions
from ltrfeat.rankers.lambdamart import META_FORMAT, LambdaMART, meta_path, write_model_files
from ltrfeat.rankers.linear import LinearRanker
from ltrfeat.rankers.single import BestSingleFeature, BoostedFromFeature, FeatureChoice

KINDS = ("lambdamart", "boost-best", "linear", "best-single")
_FIX = "give a model file written by ltrfeat train-ranker (its .meta.json beside it)"


def kind_of(model) -> str:
    return {
        LambdaMART: "lambdamart",
        BoostedFromFeature: "boost-best",
        LinearRanker: "linear",
        BestSingleFeature: "best-single",
    }[type(model)]


def save_ranker(model, path, *, extra: dict | None = None) -> None:
    """Write any fitted ranker to ``path`` (+ ``path.meta.json``); ``extra`` is merged into the metadata
    (e.g. the selection that chose it)."""
    kind = kind_of(model)
    extra = dict(extra or {})
    if kind == "lambdamart":
        model.metadata_ = model.metadata_ | extra
        model.save(path)
        return
    if kind == "boost-best":
        inner = model.model_
        meta = (
            inner.metadata_
            | extra
            | {
                "kind": kind,
                "boost_params": model.get_params(),
                "init": {"feature": model.feature_, "direction": model.direction_, "scale": model.scale_},
            }
        )
        write_model_files(path, inner.booster_dump(), meta)
        return
    if kind == "linear":
        body = {"format": "ltrfeat.linear/1"} | model.to_json()
        features = model.feature_map_.to_json()
    else:
        body = {"format": "ltrfeat.single/1", "feature": model.feature_, "direction": model.direction_}
        features = model.feature_map_.to_json()
    raw = (json.dumps(body, indent=1) + "\n").encode()
    meta = extra | {
        "format": META_FORMAT,
        "kind": kind,
        "params": model.get_params(),
        "features": features,
        "versions": library_versions("numpy", "scikit-learn"),
    }
    write_model_files(path, raw, meta)


def _meta(path: Path) -> dict:
    mpath = meta_path(path)
    for p in (path, mpath):
        if not p.is_file():
            raise ModelFileError("file not found", path=p, fix=_FIX)
    try:
        meta = json.loads(mpath.read_text(encoding="utf-8"))
    except UnicodeDecodeError:
        raise ModelFileError("metadata is not UTF-8 text", path=mpath, fix=_FIX) from None
    except json.JSONDecodeError as exc:
        raise ModelFileError(f"metadata is not valid JSON ({exc.msg})", path=mpath, line=exc.lineno, fix=_FIX) from None
    if not isinstance(meta, dict) or meta.get("format") != META_FORMAT or meta.get("kind", "lambdamart") not in KINDS:
        raise ModelFileError(
            f"not ltrfeat ranker metadata (expected format {META_FORMAT} and a kind of {', '.join(KINDS)})",
            path=mpath,
            fix=_FIX,
        )
    return meta


def load_ranker(path):
    """Any ranker written by :func:`save_ranker` or ``train-ranker`` (never unpickles)."""
    path = Path(path)
    meta = _meta(path)
    kind = meta.get("kind", "lambdamart")
    if kind == "lambdamart":
        return LambdaMART.load(path)
    if kind == "boost-best":
        inner = LambdaMART.load(path, kind=kind)
        try:
            model = BoostedFromFeature(**meta["boost_params"])
            init = meta["init"]
            model.feature_, model.direction_, model.scale_ = (
                str(init["feature"]),
                int(init["direction"]),
                float(init["scale"]),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise ModelFileError(
                f"cannot load model ({type(exc).__name__}: {exc})", path=meta_path(path), fix=_FIX
            ) from None
        model.model_ = inner
        model.feature_map_ = inner.feature_map_
        return model
    raw = path.read_bytes()
    if hashlib.sha256(raw).hexdigest() != meta.get("model_sha256"):
        raise ModelFileError(
            "model file does not match its metadata (SHA-256 differs)",
            path=path,
            fix=f"keep {path.name} and {meta_path(path).name} from the same train-ranker run",
        )
    try:
        body = json.loads(raw.decode("utf-8"))
        if kind == "linear":
            return LinearRanker.from_json(body, meta["params"], path=path)
        model = BestSingleFeature(**meta["params"])
        model.choice_ = FeatureChoice(str(body["feature"]), int(body["direction"]))
        model.feature_, model.direction_ = model.choice_.name, model.choice_.direction
        model.feature_map_ = FeatureMap.from_json(meta["features"], path=meta_path(path))
        return model
    except (KeyError, TypeError, ValueError, UnicodeDecodeError) as exc:
        raise ModelFileError(
            f"cannot load model ({type(exc).__name__}: {str(exc)[:200]})", path=path, fix=_FIX
        ) from None
