"""What trained an ablation's click-trained encoders, for the report and the verdict.

An encoder trained on a click log (``train-encoder --debias``) keeps the log's facts in its bundle's training record
(``clicks``: the log, its impressions and clicks, whether it has positions, the position-bias correction and the
propensity curve; :mod:`ltrfeat.clicks.debias`), and its extracted columns carry them in their pipeline pin
(:mod:`ltrfeat.features.pins`). A cross-fitted encoder of ``ablate --pairs`` carries them in the scheme's
``encoders`` entry. :func:`click_training` gathers them per encoder into the report's ``config.click_training``;
:func:`uncorrected_warnings` is the warning the verdict and the report's warning box give when a click-trained
feature was trained on uncorrected clicks of a log that has positions.

``ablate --click-log`` trains its encoders on a click log: :func:`click_train_table` builds one training table for
every loss its encoders use (:func:`~ltrfeat.clicks.debias.click_labels`), and :func:`spec_table` gives each encoder
its loss's labels and soft-label mapping.
"""

from __future__ import annotations

import pandas as pd

from ltrfeat.core.dataset import FeatureMap
from ltrfeat.core.errors import LtrfeatError, ParameterError

_BY_LOSS = "click_labels"  # the attrs key of a click log's training table: {loss: soft-label mapping}

CORRECTIONS = {
    "none": "none: raw click counts",
    "ipw": "inverse propensity weighting (clipped, self-normalised)",
    "pbm": "relevance estimated by the position-based click model",
}


def click_training(feature_map: FeatureMap, encoders: dict[str, dict] | None = None) -> dict[str, dict]:
    """``{encoder name: its click record}`` for the encoders of ``feature_map``'s columns (their pins) and the
    cross-fitted ``encoders`` (:attr:`~ltrfeat.experiments.pairs_input.CrossFitScheme.encoders`) that were trained
    on a click log (encoders trained on judgments are left out)."""
    found = {r["name"]: r["clicks"] for r in feature_map.pipeline if r.get("kind") == "encoder" and "clicks" in r}
    for name, encoder in (encoders or {}).items():
        if encoder.get("clicks"):
            found[name] = encoder["clicks"]
    return {name: dict(record) for name, record in sorted(found.items()) if isinstance(record, dict)}


def correction(record: dict) -> str:
    """The position-bias correction a click record names, in words."""
    debias = record.get("debias", "none")
    words = CORRECTIONS.get(debias, str(debias))
    if debias == "ipw" and record.get("clip") is not None:
        words = f"inverse propensity weighting (propensities clipped at {record['clip']:g}, self-normalised)"
    if not record.get("has_positions", True):
        asked = f" (--debias {record['requested']} asked)" if record.get("requested") else ""
        words += f"; the log has no positions, so position bias cannot be corrected{asked}"
    return words


def uncorrected_warnings(records: dict[str, dict]) -> list[str]:
    """One warning per click log that has positions and trained encoders on its uncorrected clicks, naming them."""
    by_log: dict[str, list[str]] = {}
    for name, record in records.items():
        if record.get("has_positions") and record.get("debias", "none") == "none":
            by_log.setdefault(str(record.get("source", "its log")), []).append(f"`{name}`")
    out = []
    for source, names in by_log.items():
        who = f"encoder {names[0]} was" if len(names) == 1 else f"encoders {', '.join(names[:-1])} and {names[-1]} were"
        out.append(
            f"{who} trained on the clicks of {source} uncorrected (--debias none) although the log has positions: "
            "people click what is on top, so a click-trained feature partly learns where the logging ranker put "
            "results, which the lexical features know already; retrain with --debias ipw or pbm (train-encoder, or "
            "ablate --click-log)"
        )
    return out


def curves(records: dict[str, dict]) -> list[tuple[dict, list[str]]]:
    """The distinct propensity curves of ``records`` with the encoders each corrected, in order of first use."""
    out: list[tuple[dict, list[str]]] = []
    for name, record in records.items():
        curve = record.get("propensity")
        if not isinstance(curve, dict):
            continue
        for known, names in out:
            if known == curve:
                names.append(name)
                break
        else:
            out.append((curve, [name]))
    return out


def curve_text(curve: dict, *, limit: int = 10) -> str:
    """``1: 1, 2: 0.62 [0.55, 0.70], ...``: a propensity curve by position, with its interval when it has one."""
    parts = []
    for k, (position, value) in enumerate(zip(curve["positions"], curve["values"])):
        if k == limit:
            parts.append("...")
            break
        lower, upper = curve.get("lower", [None] * (k + 1))[k], curve.get("upper", [None] * (k + 1))[k]
        interval = f" [{lower:.3g}, {upper:.3g}]" if lower is not None and upper is not None and lower < upper else ""
        parts.append(f"{position}: {value:.3g}{interval}")
    return ", ".join(parts)


def markdown_lines(records: dict[str, dict]) -> list[str]:
    """The report.md section on click-trained encoders (empty without one)."""
    if not records:
        return []
    lines = [
        "## Click-trained encoders",
        "",
        "| encoder | click log | impressions | clicks | positions | correction |",
        "|---|---|---:|---:|---|---|",
    ]
    for name, r in records.items():
        lines.append(
            f"| `{name}` | {r.get('source', '?')} | {r.get('impressions', '?')} | {r.get('clicks', '?')} | "
            f"{'yes' if r.get('has_positions') else 'no'} | {correction(r)} |"
        )
    lines.append("")
    for curve, names in curves(records):
        lines.append(
            f"- Propensity curve ({curve.get('method', '?')}) that corrected {', '.join(f'`{n}`' for n in names)}: "
            f"P(examined | position) {curve_text(curve)}"
        )
    return lines + [""]


def click_log_table(source, specs: list, say, *, docs_option: str = "--click-docs") -> pd.DataFrame:
    """The encoders' training table of ``source.click_log`` (a :class:`~ltrfeat.experiments.ablate.PairsSource`:
    read once, labelled for every loss of the trainable ``specs`` by :func:`click_train_table`), what trains them
    said through ``say``; ``docs_option`` names the option that gives the documents' texts."""
    from ltrfeat.clicks import read_click_log, read_propensity_curve

    losses = [s.loss for s in specs if s.trainable]
    check_click_losses(losses)
    log = read_click_log(
        source.click_log,
        queries=source.click_queries,
        docs=source.click_docs,
        fmt=source.click_format,
        encoding=source.encoding,
    )
    if "doc" not in log.totals:
        raise LtrfeatError(
            "the click log does not give the documents' texts",
            path=log.source,
            fix=f"give the documents table (docid and text) with {docs_option}",
        )
    curve = None if source.propensity is None else read_propensity_curve(source.propensity)
    table, record = click_train_table(
        log,
        losses,
        debias=source.debias,
        propensity=curve,
        method=source.propensity_method,
        clip=source.clip,
        seed=source.split_seed,
    )
    say(
        f"encoders train on the clicks of {record['source']}: {record['impressions']:,} impressions, "
        f"{record['clicks']:,} clicks on {record['pairs']:,} (query, document) pairs; position bias: "
        f"{correction(record)}"
    )
    return table


def click_train_table(log, losses, *, debias: str, propensity=None, method: str, clip: float, seed: int):
    """``(table, record)``: the encoders' training table of the click ``log`` for the ``losses`` they train with
    (``query, doc, label`` plus ``label:LOSS`` and, where the loss takes one, ``weight:LOSS`` per loss; the same
    rows in the same order for every loss) and the record of the correction (:attr:`ClickLabels.record`)."""
    from ltrfeat.clicks.debias import click_labels

    check_click_losses(losses)
    table = None
    soft: dict[str, str] = {}
    for loss in sorted(set(losses)):
        labels = click_labels(log, debias=debias, loss=loss, propensity=propensity, method=method, clip=clip, seed=seed)
        if table is None:
            table = labels.pairs[["query", "doc", "label"]].copy()
        table[f"label:{loss}"] = labels.pairs["label"].to_numpy()
        if "weight" in labels.pairs:
            table[f"weight:{loss}"] = labels.pairs["weight"].to_numpy()
        soft[loss] = labels.soft_labels
        record = labels.record
    assert table is not None, "no trainable encoder"
    table.attrs = {_BY_LOSS: soft, "clicks": record}
    return table, record


def check_click_losses(losses) -> None:
    """Encoders of these losses can train on a click log's labels, or a :class:`ParameterError` says which not."""
    from ltrfeat.clicks.debias import CORRECTED_LOSSES

    if not losses:
        raise ParameterError(
            "--click-log trains encoders, and no --encoder is trained (zero-shot ones are not)",
            fix="give e.g. --encoder dssm:generalized, or drop --click-log",
            param="encoders",
        )
    wrong = [loss for loss in losses if loss not in CORRECTED_LOSSES]
    if wrong:
        raise ParameterError(
            f"--click-log trains encoders with the {' or '.join(CORRECTED_LOSSES)} loss, not {wrong[0]}",
            fix="give e.g. --encoder clsm:softmax or --encoder dssm:generalized",
            param="encoders",
        )


def spec_table(table: pd.DataFrame, loss: str | None, options: dict) -> tuple[pd.DataFrame, dict]:
    """``(table, options)`` an encoder of ``loss`` trains with: a click log's table (:func:`click_train_table`) as
    ``query, doc, label[, weight]`` of that loss, its soft-label mapping in ``options``; any other table as given."""
    soft = table.attrs.get(_BY_LOSS)
    if soft is None:
        return table, options
    if options.get("soft_labels", soft[loss]) != soft[loss]:
        raise ParameterError(
            f"--click-log with the {loss} loss trains on soft labels {soft[loss]}",
            fix="drop --encoder-option soft_labels",
            param="encoder_options",
        )
    columns = {f"label:{loss}": "label", f"weight:{loss}": "weight"}
    own = table.drop(columns="label")[["query", "doc", *(c for c in columns if c in table)]].rename(columns=columns)
    own.attrs = {}
    return own, options | {"soft_labels": soft[loss]}
