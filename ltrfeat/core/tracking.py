"""Runs recorded in MLflow (the optional extra ``ltrfeat[mlflow]``): ``--mlflow [URI]`` on ``ablate``,
``train-ranker`` and ``train-encoder``.

A run holds the command's settings as parameters (nested settings flattened with dots), its measurements as
metrics, its outputs as artifacts and, as tags, the feature-pipeline pins of its columns and the SHA-256 of
the files it read or wrote. MLflow refuses ``@`` and ``+`` in metric names, so ``ndcg@10`` is logged as
``ndcg_at_10`` (and ``lexical+clsm`` as ``lexical_plus_clsm``); each run's ``metric_names.json`` artifact maps
every logged name back to ltrfeat's.
"""

from __future__ import annotations

import contextlib
import json
import re
from pathlib import Path

from ltrfeat.core.errors import LtrfeatError

DEFAULT_URI = "sqlite:///mlflow.db"  # --mlflow without a URI: a SQLite store in the working directory
MAX_PARAM = 6000  # MLflow's longest parameter value
_ILLEGAL = re.compile(r"[^A-Za-z0-9_\-. /]")


def mlflow_name(name: str) -> str:
    """An MLflow-legal metric or parameter name for ``name``: ``@`` -> ``_at_``, ``+`` -> ``_plus_``, any other
    character MLflow refuses -> ``_``."""
    return _ILLEGAL.sub("_", str(name).replace("@", "_at_").replace("+", "_plus_"))


def flat_params(settings: dict, prefix: str = "") -> dict[str, str]:
    """``settings`` as MLflow parameters: nested mappings flattened with dots, other values as JSON."""
    out: dict[str, str] = {}
    for key, value in settings.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict) and value:
            out |= flat_params(value, f"{name}.")
        else:
            text = value if isinstance(value, str) else json.dumps(value, default=str)
            out[mlflow_name(name)] = text[:MAX_PARAM]
    return out


def pin_tags(features: dict) -> dict[str, str]:
    """Tags from a feature map's JSON (``FeatureMap.to_json``): each pipeline record (what defines its columns)
    as ``pin.<columns>``, and each encoder bundle's SHA-256 as ``bundle_sha256.<name>``."""
    tags = {}
    for record in features.get("pipeline", []) if isinstance(features, dict) else []:
        columns = ",".join(record.get("columns", []))
        tags[mlflow_name(f"pin.{columns}")[:250]] = json.dumps(record, sort_keys=True)[:MAX_PARAM]
        if record.get("bundle_sha256"):
            tags[mlflow_name(f"bundle_sha256.{record.get('name', columns)}")] = record["bundle_sha256"]
    return tags


def _mlflow():
    try:
        import mlflow
    except ImportError:
        raise LtrfeatError(
            "--mlflow needs MLflow, which is not installed", fix="pip install 'ltrfeat[mlflow]'"
        ) from None
    return mlflow


def check_store(uri: str) -> None:
    """Open the tracking store at ``uri`` (creating a SQLite store's tables), so that a bad ``--mlflow`` stops the
    command before its work, with a one-line error."""
    mlflow = _mlflow()
    try:
        mlflow.MlflowClient(tracking_uri=uri).search_experiments(max_results=1)
    except Exception as exc:  # MLflow raises many kinds (unknown scheme, unreachable server, bad database)
        message = " ".join(str(exc).split())[:200]
        raise LtrfeatError(
            f"--mlflow {uri}: cannot open the tracking store ({type(exc).__name__}: {message})",
            fix="give a tracking URI such as sqlite:///mlflow.db or http://HOST:5000",
        ) from None


class TrackedRun:
    """One MLflow run: ``log_*`` map names to MLflow-legal ones and remember the mapping."""

    def __init__(self, mlflow, run):
        self.mlflow, self.run, self.names = mlflow, run, {}

    @property
    def run_id(self) -> str:
        return self.run.info.run_id

    def _name(self, name: str) -> str:
        legal = mlflow_name(name)
        self.names[legal] = name
        return legal

    def log_params(self, settings: dict, prefix: str = "") -> None:
        self.mlflow.log_params(flat_params(settings, prefix))

    def log_metrics(self, values: dict[str, float], step: int | None = None) -> None:
        """Finite values only (an excluded query set leaves a NaN mean, which says nothing)."""
        clean = {self._name(k): float(v) for k, v in values.items() if v is not None and float(v) == float(v)}
        self.mlflow.log_metrics(clean, step=step)

    def set_tags(self, tags: dict[str, str]) -> None:
        self.mlflow.set_tags(tags)

    def log_artifacts(self, paths, folder: str | None = None) -> None:
        for path in paths:
            if Path(path).is_file():
                self.mlflow.log_artifact(str(path), artifact_path=folder)


@contextlib.contextmanager
def tracked(uri: str | None, command: str, *, experiment: str | None = None):
    """An MLflow run for ``command`` at tracking ``uri`` (None: nothing is tracked, yields None); on success the
    run ends with its ``metric_names.json``, on an error it is marked failed."""
    if uri is None:
        yield None
        return
    mlflow = _mlflow()
    mlflow.set_tracking_uri(uri)
    mlflow.set_experiment(experiment or f"ltrfeat {command}")
    with mlflow.start_run(run_name=command, tags={"ltrfeat.command": command}) as run:
        tracked_run = TrackedRun(mlflow, run)
        yield tracked_run
        mlflow.log_dict({"mlflow_to_ltrfeat": tracked_run.names}, "metric_names.json")
