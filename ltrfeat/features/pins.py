"""Feature pins: what defines a feature column, recorded where the column is made and checked where
it is computed again.

``extract`` records, per extractor, a JSON record in the feature map's ``pipeline`` (the
``.features.json`` sidecar; :class:`~ltrfeat.core.dataset.FeatureMap`), which ``train-ranker``
carries into the ranker's metadata:

- lexical columns: ``{"kind": "lexical", "fields", "k1", "b", "mu", "jm_lambda", "ad_delta",
  "bm25_norms", "analyzer", "corpus_sha256", "corpus_file"}`` (``--save-corpus-stats`` keeps the
  same settings in the corpus statistics file; ``corpus_file`` is where that file was, for ``serve``);
- encoder columns: ``{"kind": "encoder", "name", "model", "bundle_sha256", "score"}``, plus
  ``trained_queries`` (how many of the file's queries the encoder was trained on; see
  :mod:`ltrfeat.encoders.leakage`) and, for an encoder trained on a click log, ``debias`` (the position-bias
  correction, ``none``, ``ipw`` or ``pbm``) with ``clicks``, the bundle's whole click record (the log, its
  impressions and clicks, whether it has positions, the propensity curve; :mod:`ltrfeat.clicks.debias`), which the
  ablation report shows (:mod:`ltrfeat.experiments.click_training`).

:func:`lexical_settings` gives the settings to recompute a ranker's lexical columns with (from
its record; an option that contradicts the record is an error), :func:`with_corpus_record` those of an extraction
with saved corpus statistics (the same rule against the file's record), :func:`check_encoder` and
:func:`check_same_pipeline` refuse an encoder bundle or a data file made differently from the
ranker's training data. Models and files from before the records existed load as before, with
a one-line note where a setting had to be assumed.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from ltrfeat.core.errors import LtrfeatError
from ltrfeat.features.corpus import CorpusStats
from ltrfeat.features.lexical import LEXICAL_DEFAULTS, FAMILY_SETTINGS, SETTINGS

# record keys that do not change a column's values (or describe the scored file, not the column)
_NOT_DEFINING = frozenset({"columns", "fields", "model", "trained_queries", "corpus_file", "clicks"})


def encoder_fingerprint(path) -> str | None:
    """SHA-256 of an encoder bundle file; None for a model directory or the packaged model."""
    if path is None or not Path(path).is_file():
        return None
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _option(setting: str) -> str:
    return f"--{setting.replace('_', '-')}"


def _show(value) -> str:
    if isinstance(value, dict) and "stemmer" in value:  # an analyzer
        return f"stemmer {value.get('stemmer') or 'none'}, stopwords {value.get('stopwords') or 'none'}"
    return str(value)


def _needed(families) -> list[str]:
    return [s for s in SETTINGS if any(s in FAMILY_SETTINGS.get(f, ()) for f in families)]


def with_corpus_record(given: dict, corpus) -> dict:
    """The lexical settings ``given`` (None: not given) completed from the record of ``corpus`` (a loaded
    :class:`~ltrfeat.features.corpus.CorpusStats` or None): a given setting wins, else the recorded one; a setting
    neither given nor recorded is left out. Raises :class:`LtrfeatError` naming the option and both values when a
    given setting contradicts the record (the columns would not match those of the split the file was fitted on)."""
    recorded = (corpus.settings or {}) if corpus is not None else {}
    for setting, value in given.items():
        if value is not None and setting in recorded and recorded[setting] != value:
            raise LtrfeatError(
                f"{setting} {value} ({_option(setting)}) differs from the {setting} {recorded[setting]} the corpus "
                "statistics were saved with: the columns would not match the training split's",
                path=corpus.source,
                fix=f"drop {_option(setting)} (the value comes from the file), or re-extract the training split "
                f"(and retrain) with {_option(setting)} {value}",
            )
    return {k: v if v is not None else recorded[k] for k, v in given.items() if v is not None or k in recorded}


def lexical_settings(feature_map, columns: dict, *, corpus, given: dict, path=None) -> tuple[dict, str | None]:
    """LexicalExtractor settings that recompute the ranker's lexical ``columns`` (``{name: family}``)
    as they were extracted, and a one-line note when some had to be assumed (else None).

    ``feature_map``: the ranker's (with its pipeline records); ``corpus``: the loaded
    :class:`~ltrfeat.features.corpus.CorpusStats` (None: not checked); ``given``: settings the user passed (None = not
    given). Raises :class:`LtrfeatError` naming the setting and both values when a given setting,
    the corpus statistics or its analyzer differ from the record, or when the ranker's columns were
    extracted with different settings.
    """
    given = {k: v for k, v in given.items() if v is not None}
    needed = _needed(set(columns.values()))
    records = {name: feature_map.record_of(name) for name in columns}
    records = {name: r for name, r in records.items() if r is not None and r.get("kind") == "lexical"}
    if not records:
        merged = with_corpus_record(dict.fromkeys(needed) | given, corpus)
        params = {s: merged.get(s, LEXICAL_DEFAULTS[s]) for s in needed}
        assumed = [s for s in needed if s not in merged]
        origin = "the corpus statistics' record" if corpus is not None and corpus.settings else "the defaults"
        note = (
            f"the ranker records no feature settings (trained before ltrfeat kept them); scoring with {origin}: "
            + ", ".join(f"{s} {params[s]}" for s in needed)
            + (f" (pass {', '.join(map(_option, assumed))} if the extraction used others)" if assumed else "")
        )
        return params, (note if needed else None)
    params = {}
    for setting in [*needed, "analyzer", "corpus_sha256"]:
        values: dict[str, tuple[Any, str]] = {}
        for name, record in records.items():
            if setting in FAMILY_SETTINGS.get(columns[name], ()) or setting in ("analyzer", "corpus_sha256"):
                values.setdefault(repr(record.get(setting)), (record.get(setting), name))
        if len(values) > 1:
            (a, name_a), (b, name_b) = list(values.values())[:2]
            raise LtrfeatError(
                f"the ranker's lexical columns were extracted with different {setting}: {_show(a)} ({name_a}) and "
                f"{_show(b)} ({name_b}); one scorer cannot reproduce both",
                path=path,
                fix="re-extract every split with one setting and retrain",
            )
        if not values:
            continue
        ((recorded, name),) = values.values()
        if setting in ("analyzer", "corpus_sha256") and corpus is None:
            continue
        if setting == "analyzer":
            if recorded is not None and recorded != corpus.analyzer.to_json():
                raise LtrfeatError(
                    f"the corpus statistics use the analyzer ({_show(corpus.analyzer.to_json())}) but the ranker's "
                    f"{name} was extracted with ({_show(recorded)})",
                    path=path,
                    fix="give the corpus statistics saved when the training split was extracted",
                )
        elif setting == "corpus_sha256":
            if recorded is not None and recorded != corpus.fingerprint():
                raise LtrfeatError(
                    f"the corpus statistics (sha256 {corpus.fingerprint()[:12]}) are not the ones the ranker's {name} "
                    f"was extracted with (sha256 {recorded[:12]})",
                    path=path,
                    fix="pass --corpus-stats FILE (corpus_stats= in Python), the file `extract --save-corpus-stats` "
                    "wrote for the training split",
                )
        else:
            if recorded is None:
                recorded = LEXICAL_DEFAULTS[setting]
            if setting in given and given[setting] != recorded:
                raise LtrfeatError(
                    f"{setting} {given[setting]} ({_option(setting)}) differs from the {setting} {recorded} the "
                    f"ranker's {name} was extracted with",
                    path=path,
                    fix=f"drop {_option(setting)} (the ranker's record gives it), or re-extract and retrain with "
                    f"{_option(setting)} {given[setting]}",
                )
            params[setting] = recorded
    return params, None


def corpus_needed(feature_map, names) -> str | None:
    """What the lexical records of ``names`` say about the corpus statistics they were extracted with
    (``sha256 892b53978203, k1 0.5, b 0.3, ...``), for an error when none were given; None without a record."""
    records = [r for r in map(feature_map.record_of, names) if r is not None and r.get("kind") == "lexical"]
    if not records:
        return None
    record = records[0]
    parts = [f"sha256 {record['corpus_sha256'][:12]}"] if record.get("corpus_sha256") else []
    parts += [f"{s} {record[s]}" for s in ("k1", "b", "bm25_norms") if s in record]
    if isinstance(record.get("analyzer"), dict):
        parts.append(_show(record["analyzer"]))
    return ", ".join(parts)


def recorded_corpus_path(feature_map) -> str | None:
    """The corpus statistics file a lexical record names, when that file still holds the recorded statistics."""
    for record in feature_map.pipeline:
        path = record.get("corpus_file") if record.get("kind") == "lexical" else None
        if path and record.get("corpus_sha256") and Path(path).is_file():
            try:
                if CorpusStats.load(path).fingerprint() == record["corpus_sha256"]:
                    return path
            except LtrfeatError:
                continue
    return None


def check_encoder(feature_map, name: str, path, columns) -> None:
    """Refuse an encoder bundle file that is not the one the ranker's ``columns`` were extracted with
    (a model directory, e.g. an ONNX export, cannot be compared and passes)."""
    if path is None or not Path(path).is_file():
        return
    for column in columns:
        record = feature_map.record_of(column)
        if record is None or record.get("kind") != "encoder" or record.get("bundle_sha256") is None:
            continue
        found = encoder_fingerprint(path)
        if found != record["bundle_sha256"]:
            raise LtrfeatError(
                f"encoder {name}={path} is not the bundle the ranker's {column} was extracted with "
                f"(sha256 {(found or 'none')[:12]}, recorded {record['bundle_sha256'][:12]}"
                + (f" from {record['model']}" if record.get("model") else "")
                + ")",
                fix="give the bundle used at extraction, or re-extract with this one and retrain",
            )


def recorded_encoder_path(feature_map, name: str) -> str | None:
    """The bundle path recorded for encoder ``name``'s columns, when that file still has the recorded hash."""
    for record in feature_map.pipeline:
        if record.get("kind") == "encoder" and record.get("name") == name and record.get("model"):
            if record.get("bundle_sha256") and encoder_fingerprint(record["model"]) == record["bundle_sha256"]:
                return record["model"]
    return None


def check_same_pipeline(model_map, data_map, *, path=None) -> None:
    """Refuse data whose columns (those the model uses) were made with other settings than the model's
    training data (records on both sides are compared; columns without a record pass)."""
    for name in model_map.names:
        trained, here = model_map.record_of(name), data_map.record_of(name)
        if trained is None or here is None:
            continue
        for key in sorted((set(trained) | set(here)) - _NOT_DEFINING):
            if trained.get(key) != here.get(key):
                raise LtrfeatError(
                    f"column {name} was extracted with {key} {_show(here.get(key))} here but "
                    f"{_show(trained.get(key))} for the ranker's training data",
                    path=path,
                    fix="re-extract this file as the training split was (same options, its --corpus-stats, "
                    "the same encoder bundles)",
                )
