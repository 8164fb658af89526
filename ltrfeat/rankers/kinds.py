"""The built-in ranker kinds' implementations (registered in :mod:`ltrfeat.rankers.registry`).

Files (``MODEL`` and ``MODEL.meta.json``, whose ``kind`` names the kind):

- LambdaMART (``lightgbm``, ``xgboost``, ``*-tuned``): the engine's native model
  (:meth:`ltrfeat.rankers.lambdamart.LambdaMART.save`);
- ``boost-best``: LambdaMART trees plus the initial score they boost from (feature, direction, scale)
  in the metadata;
- ``linear``: a JSON model file with the features, standardisation and weights;
- ``best-single``: a JSON model file naming the feature and its direction.

Kinds that LTR engines can run also have ``plugin_model(model)`` (the plugin's model type, definition
and feature normalizers); kinds they cannot run say why in ``NOT_EXPORTABLE``.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from ltrfeat.core.dataset import FeatureMap
from ltrfeat.core.errors import ModelFileError
from ltrfeat.core.versions import library_versions
from ltrfeat.rankers.choices import MODEL_FILE_FIX
from ltrfeat.rankers.lambdamart import META_FORMAT, LambdaMART, meta_path, write_model_files
from ltrfeat.rankers.linear import LinearRanker
from ltrfeat.rankers.single import BestSingleFeature, BoostedFromFeature, FeatureChoice


def _common(settings) -> dict:
    return {
        "criterion": settings.criterion,
        "gain": settings.gain,
        "no_relevant": settings.no_relevant,
        "ties": settings.ties,
    }


def _loading_error(exc: Exception, path) -> ModelFileError:
    return ModelFileError(f"cannot load model ({type(exc).__name__}: {str(exc)[:200]})", path=path, fix=MODEL_FILE_FIX)


def _json_body(path, meta: dict) -> dict:
    """The JSON model file of a linear / best-single model, checked against the metadata's SHA-256."""
    raw = Path(path).read_bytes()
    if hashlib.sha256(raw).hexdigest() != meta.get("model_sha256"):
        raise ModelFileError(
            "model file does not match its metadata (SHA-256 differs)",
            path=path,
            fix=f"keep {Path(path).name} and {meta_path(path).name} from the same train-ranker run",
        )
    try:
        return json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise _loading_error(exc, path) from None


def _write_json_model(model, path, body: dict, meta: dict) -> None:
    meta = meta | {
        "format": META_FORMAT,
        "params": model.get_params(),
        "features": model.feature_map_.to_json(),
        "versions": library_versions("numpy", "scikit-learn"),
    }
    write_model_files(path, (json.dumps(body, indent=1) + "\n").encode(), meta)


class LAMBDAMART:
    """LambdaMART over LightGBM or XGBoost; tuned kinds get the searched engine parameters."""

    MODEL = LambdaMART

    @staticmethod
    def make(settings, *, seed: int, tuned: dict | None = None, engine: str) -> LambdaMART:
        params = settings.ranker_params | {"seed": seed, "features": list(settings.columns)}
        extra = dict(params.get("params") or {}) | dict(tuned or {})
        return LambdaMART(**(params | {"engine": engine, "params": extra}))

    @staticmethod
    def save(model: LambdaMART, path, meta: dict) -> None:
        model.metadata_ = model.metadata_ | meta
        model.save(path)

    @staticmethod
    def load(path, meta: dict) -> LambdaMART:
        return LambdaMART.load(path)


class BOOST_BEST:
    """LambdaMART trees boosted from the best single feature's per-query z-score."""

    MODEL = BoostedFromFeature
    NOT_EXPORTABLE = (
        "its trees start from a per-query z-score of the best feature (mean and standard deviation over each "
        "query's candidates), and the engine scores every document on its own"
    )

    @staticmethod
    def make(settings, *, seed: int, tuned: dict | None = None) -> BoostedFromFeature:
        params = settings.ranker_params | {"seed": seed, "features": list(settings.columns)}
        return BoostedFromFeature(lambdamart=params, **_common(settings))

    @staticmethod
    def save(model: BoostedFromFeature, path, meta: dict) -> None:
        inner = model.model_
        meta = (
            inner.metadata_
            | meta
            | {
                "boost_params": model.get_params(),
                "init": {"feature": model.feature_, "direction": model.direction_, "scale": model.scale_},
            }
        )
        write_model_files(path, inner.booster_dump(), meta)

    @staticmethod
    def load(path, meta: dict) -> BoostedFromFeature:
        inner = LambdaMART.load(path, kind="boost-best")
        try:
            model = BoostedFromFeature(**meta["boost_params"])
            init = meta["init"]
            model.feature_, model.direction_, model.scale_ = (
                str(init["feature"]),
                int(init["direction"]),
                float(init["scale"]),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise _loading_error(exc, meta_path(path)) from None
        model.model_ = inner
        model.feature_map_ = inner.feature_map_
        return model


class LINEAR:
    """The pairwise linear ranker."""

    MODEL = LinearRanker

    @staticmethod
    def make(settings, *, seed: int, tuned: dict | None = None) -> LinearRanker:
        return LinearRanker(features=list(settings.columns), seed=seed)

    @staticmethod
    def save(model: LinearRanker, path, meta: dict) -> None:
        _write_json_model(model, path, {"format": "ltrfeat.linear/1"} | model.to_json(), meta)

    @staticmethod
    def load(path, meta: dict) -> LinearRanker:
        body = _json_body(path, meta)
        try:
            return LinearRanker.from_json(body, meta["params"], path=path)
        except (KeyError, TypeError, ValueError) as exc:
            raise _loading_error(exc, path) from None

    @staticmethod
    def plugin_model(model: LinearRanker) -> dict:
        """``model/linear``: the weights, and each feature's training standardisation as a normalizer."""
        names = model.feature_map_.names
        return {
            "type": "model/linear",
            "definition": {n: float(w) for n, w in zip(names, model.coef_)},
            "feature_normalizers": {
                n: {"standard": {"mean": float(m), "standard_deviation": float(s)}}
                for n, m, s in zip(names, model.mean_, model.scale_)
            },
        }


class BEST_SINGLE:
    """The best single feature and its direction."""

    MODEL = BestSingleFeature

    @staticmethod
    def make(settings, *, seed: int, tuned: dict | None = None) -> BestSingleFeature:
        return BestSingleFeature(features=list(settings.columns), **_common(settings))

    @staticmethod
    def save(model: BestSingleFeature, path, meta: dict) -> None:
        body = {"format": "ltrfeat.single/1", "feature": model.feature_, "direction": model.direction_}
        _write_json_model(model, path, body, meta)

    @staticmethod
    def load(path, meta: dict) -> BestSingleFeature:
        body = _json_body(path, meta)
        try:
            model = BestSingleFeature(**meta["params"])
            model.choice_ = FeatureChoice(str(body["feature"]), int(body["direction"]))
            model.feature_, model.direction_ = model.choice_.name, model.choice_.direction
            model.feature_map_ = FeatureMap.from_json(meta["features"], path=meta_path(path))
        except (KeyError, TypeError, ValueError) as exc:
            raise _loading_error(exc, path) from None
        return model

    @staticmethod
    def plugin_model(model: BestSingleFeature) -> dict:
        """``model/linear`` with one weight: the feature's direction."""
        return {"type": "model/linear", "definition": {model.feature_: float(model.direction_)}}
