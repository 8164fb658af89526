"""What ``--mlflow`` records for each command (:mod:`ltrfeat.core.tracking` holds the MLflow side)."""

from __future__ import annotations

import json
from pathlib import Path

from ltrfeat.core.tracking import pin_tags, tracked

REPORT_ARTIFACTS = ("report.html", "report.json", "report.md", "timings.json", "per_query.tsv")


def _hash_tags(config, prefix: str = "") -> dict[str, str]:
    """Every SHA-256 / content hash in a nested record (data files, bundles), as tags named by their path."""
    tags: dict[str, str] = {}
    items = config.items() if isinstance(config, dict) else enumerate(config) if isinstance(config, list) else ()
    for key, value in items:
        name = f"{prefix}{key}"
        if isinstance(value, (dict, list)):
            tags |= _hash_tags(value, f"{name}.")
        elif isinstance(value, str) and ("sha256" in str(key) or str(key).endswith("hash")):
            tags[name] = value
    return tags


def track_ranker(uri: str, model_path, *, register: str | None = None) -> str:
    """Record a ranker ``train-ranker`` saved: its settings, validation and model-selection scores, feature
    pins, the model files; ``register``: also as MLflow model ``register``. Returns the run id."""
    meta = json.loads(Path(f"{model_path}.meta.json").read_text(encoding="utf-8"))
    with tracked(uri, "train-ranker") as run:
        selection = meta.get("selection") or {}
        run.log_params({"kind": meta["kind"], "ranker": meta.get("ranker_config") or meta.get("params") or {}})
        run.log_params(
            {k: v for k, v in selection.items() if k not in ("chosen", "stats", "tuned", "trials")}, "select."
        )
        training = meta.get("training") or {}
        run.log_metrics({f"valid/{k}": v for k, v in (training.get("best_valid_score") or {}).items()})
        run.log_metrics({f"inner_cv/{cand}": s["mean"] for cand, s in (selection.get("stats") or {}).items()})
        run.set_tags(
            pin_tags(meta.get("features") or {})
            | _hash_tags(training)
            | {"ltrfeat.kind": meta["kind"], "model_sha256": meta["model_sha256"]}
        )
        run.log_artifacts([model_path, f"{model_path}.meta.json"], "model_files")
        if register is not None:
            from ltrfeat.experiments.mlflow_model import log_ranker

            log_ranker(model_path, register=register)
        return run.run_id


def track_ablation(uri: str, done, settings) -> str:
    """Record an ablation: its settings, every ranker set's metrics per fold and pooled over the folds' test
    queries, the report (HTML, JSON, Markdown, stage timings, plots), the columns' pins and each fold's data
    hashes. Returns the run id."""
    result = done.result
    with tracked(uri, "ablate") as run:
        run.log_params(settings.to_dict())
        per_query = result.per_query
        for fs, rows in per_query.groupby("feature_set", sort=False):
            run.log_metrics({f"{fs}/{m}": rows[m].mean() for m in result.metrics})
            for step, (fold, fold_rows) in enumerate(rows.groupby("fold", sort=False)):
                run.log_metrics({f"{fs}/fold_{fold}/{m}": fold_rows[m].mean() for m in result.metrics}, step=step)
        tags = _hash_tags(result.config)
        for fold in done.folds:
            tags |= pin_tags(fold.train.feature_map.to_json())
            parts = {"train": fold.train, "valid": fold.valid, "test": fold.test}
            tags |= {f"data_hash.{fold.name}.{k}": d.content_hash() for k, d in parts.items() if d is not None}
        run.set_tags({k[:250]: v for k, v in tags.items()})
        report = Path(done.report_dir)
        run.log_artifacts([report / name for name in REPORT_ARTIFACTS], "report")
        run.log_artifacts(sorted(report.glob("*.png")), "report/plots")
        return run.run_id


def track_encoder(uri: str, bundle, config: dict, history: list[dict]) -> str:
    """Record an encoder training: its settings, the per-epoch loss and validation NDCG@10 (epoch as step), the
    bundle and its SHA-256. Returns the run id."""
    from ltrfeat.features.pins import encoder_fingerprint

    with tracked(uri, "train-encoder") as run:
        run.log_params(config)
        for h in history:
            values = {k: v for k, v in h.items() if isinstance(v, (int, float)) and k not in ("epoch", "seconds")}
            run.log_metrics(values, step=int(h.get("epoch", 0)))
        run.set_tags({"bundle_sha256": encoder_fingerprint(bundle) or ""})
        run.log_artifacts([bundle], "encoder")
        return run.run_id
