"""``report.html``: one self-contained page (no network, no external script or font) that a person reads in
half a minute and a ranking engineer explores: the verdict in two sentences, the warning box, a sortable and
filterable results table (scrolling sideways within 1280 px), forest plots per metric (inline SVG drawn by
matplotlib), wins/ties/losses, a per-query drill-down with the top documents under two sets side by side, model
selection, the stage profile and the setup; a section with nothing to show is left out, link and all.

Everything is built from a ``report.json`` object, the per-query table and, for the drill-down, each set's
ranking of the test documents (in memory after an ablation, or read back from a report's ``runs/``). The
drill-down is bounded (``max_queries`` queries with the largest changes, the top ``top`` documents of each
set), so the page of a Home Depot-size run stays small enough to mail.
"""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import html
import json
import math
import re
from importlib import resources
from numbers import Integral
from pathlib import Path
from typing import ClassVar

import numpy as np
import pandas as pd

from ltrfeat.experiments import _plots, click_training
from ltrfeat.experiments.in_words import (
    headline,
    kept_start_words,
    INTERVALS_UNADJUSTED,
    reconcile_words,
    report_warnings,
    results_words,
    selection_words,
    verdict_words,
)
from ltrfeat.core.fileio import atomic_output
from ltrfeat.core.settings import Interval, Settings
from ltrfeat.experiments.fold_contributions import MAX_ROWS
from ltrfeat.experiments.set_kind import SetKind
from ltrfeat.experiments.summary_types import Comparison
from ltrfeat.rankers.choices import RECOMMENDED


@dataclasses.dataclass(frozen=True)
class DrillLimits(Settings):
    """How much of an ablation the drill-down (:func:`drill_data`) holds.

    top : documents in the top ``top`` of any set are kept for each query.
    max_queries : the queries with the largest changes kept.
    max_explained : the first queries (those that change most) whose documents carry the features that moved them.
    """

    label: ClassVar[str] = "the drill-down limits"
    _parameter_constraints: ClassVar[dict] = {
        "top": [Interval(Integral, 1, None)],
        "max_queries": [Interval(Integral, 1, None)],
        "max_explained": [Interval(Integral, 0, None)],
    }
    top: int = 10
    max_queries: int = 2000
    max_explained: int = 500


_SETS_SHOWN = (SetKind.RANKER, SetKind.RECOMMENDED, SetKind.BASELINE)


def _asset(name: str) -> str:
    return resources.files("ltrfeat.experiments").joinpath("html", name).read_text(encoding="utf-8")


def _e(text) -> str:
    """Any value as HTML text or a quoted attribute value (report.json may come from someone else)."""
    return html.escape(str(text), quote=True)


def _prose(text: str) -> str:
    """Escaped text with Markdown's `code` spans as <code>."""
    return re.sub(r"`([^`]+)`", r"<code>\1</code>", _e(text))


def _real(x) -> float | None:
    """``x`` when it is a finite number, else None: the formatters below print only digits whatever
    report.json holds."""
    return x if isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) else None


def _num(x, digits: int = 4) -> str:
    return "n/a" if _real(x) is None else f"{x:.{digits}f}"


def _signed(x) -> str:
    return "n/a" if _real(x) is None else f"{x:+.4f}"


def _p(p) -> str:
    if _real(p) is None:
        return "n/a"
    return f"{p:.2g}" if p >= 1e-4 else f"{p:.1e}"


def _rel(rel) -> str:
    return "n/a" if _real(rel) is None else f"{100 * rel:+.1f}%"


def _v(x) -> str:
    """A data-v attribute (the sort key) for a number."""
    return "" if _real(x) is None else f"{x:.10g}"


def _mark(p, marks) -> str:
    """The Holm mark of ``p``, escaped (its text is a key of the report's ``marks``)."""
    return _e(_plots.mark(_real(p), marks))


def _pair(x) -> tuple:
    return tuple(x) if isinstance(x, (list, tuple)) and len(x) == 2 else (None, None)


# -- drill-down data ----------------------------------------------------------------------------
def drill_data(
    rankings: dict[str, pd.DataFrame],
    labels: pd.DataFrame,
    per_query: pd.DataFrame,
    data: dict,
    limits: DrillLimits | None = None,
    *,
    texts: dict | None = None,
    words: dict | None = None,
    contributions: dict[str, pd.DataFrame] | None = None,
    **limit,
) -> dict | None:
    """The compact drill-down payload, as large as ``limits`` (a :class:`DrillLimits`, default: all defaults;
    keyword ``limit`` settings ``top``, ``max_queries``, ``max_explained`` replace single fields) allow.

    rankings : per set, a frame ``qid, docid, score`` of its test documents.
    labels : ``qid, docid, label`` of the judged test documents.
    per_query : the ablation's per-query table (its ``feature_set, qid`` and metric columns).
    texts : optional ``{"query": {qid: text}, "doc": {docid: text}}`` (either may be absent); words : optional CLSM max-pool words,
        ``{model: {"q": {qid: [[neuron, word], ...]}, "d": {docid: [...]}}}``.
    contributions : optional, per set, the frame of :func:`ltrfeat.experiments.fold_contributions.moved_by`: each
        shown document of the first ``max_explained`` queries then carries, per set, its largest contributions
        relative to its query's average document, ``[[index into "features", value], ...]``.

    Queries are ordered by the size of the change between the default pair of sets (the report's baseline
    and the set recommended or, without one, the first other set) and cut at ``max_queries``; each keeps the
    documents in the top ``top`` of any set, with every set's rank and score, and its fold's index: ``neural``
    holds per set and fold the set's neural columns (the recommended set's differ by fold), so the page shows the
    words of an encoder only beside a set that holds its columns.
    """
    top, max_queries, max_explained = dataclasses.astuple(DrillLimits.build(limits, limit))
    sets = [s for s in rankings if len(rankings[s])]
    query_text, doc_text = (texts or {}).get("query"), (texts or {}).get("doc")
    baseline = data["config"].get("baseline")
    if baseline not in sets or len(sets) < 2:
        return None
    variant = "recommended" if "recommended" in sets else next(s for s in sets if s != baseline)
    metrics = data["config"]["metrics"]
    metric = "ndcg@10" if "ndcg@10" in metrics else metrics[0]
    pq = per_query.copy()
    pq["qid"] = pq["qid"].astype(str)
    wide = pq.pivot_table(index="qid", columns="feature_set", values=metric, aggfunc="first")
    wide = wide.reindex(columns=sets)
    change = (wide[variant] - wide[baseline]).abs().fillna(-1.0)
    order = change.sort_values(ascending=False, kind="stable").index[:max_queries]
    table = _shown_documents(rankings, sets, order, top)
    lab = labels.astype({"qid": str, "docid": str}).set_index(["qid", "docid"])["label"]
    label = lab.reindex(table.index).to_numpy(float)
    fold_of = dict(zip(pq["qid"], pq["fold"])) if "fold" in pq else {}
    folds = [f["name"] for f in data["config"].get("folds", [])]
    position = {q: i for i, q in enumerate(order)}
    at = np.array([position[q] for q in table.index.get_level_values("qid")], dtype=np.int64)
    rows = np.argsort(at, kind="stable")
    bounds = np.searchsorted(at[rows], np.arange(len(order) + 1))
    docids = table.index.get_level_values("docid").to_numpy(dtype=object)
    features: dict[str, int] = {}
    moved = _moved_by(contributions or {}, sets, table.index, features)
    ranks = table[[f"rank_{i}" for i in range(len(sets))]].to_numpy(float)
    scores = table[[f"score_{i}" for i in range(len(sets))]].to_numpy(float)
    values = wide.loc[order].to_numpy(float)
    queries: list[list] = []
    docs: list[list] = []
    for i, qid in enumerate(order):
        mine = rows[bounds[i] : bounds[i + 1]]
        if not len(mine):
            continue
        why = moved if len(queries) < max_explained else None
        fold = folds.index(fold_of[qid]) if fold_of.get(qid) in folds else None
        queries.append(
            [qid, (query_text or {}).get(qid), [_or_none(v, lambda v: round(float(v), 4)) for v in values[i]], fold]
        )
        docs.append(
            [
                [
                    docids[r],
                    _or_none(label[r], lambda v: int(v) if v.is_integer() else round(v, 3)),
                    [_or_none(x, int) for x in ranks[r]],
                    [_or_none(x, lambda v: float(f"{v:.4g}")) for x in scores[r]],
                ]
                + ([] if why is None else [[why[k][r] for k in range(len(sets))]])
                for r in mine
            ]
        )
    return {
        "sets": sets,
        "default_base": sets.index(baseline),
        "default_variant": sets.index(variant),
        "metric": metric,
        "top": top,
        "n_queries": int(wide.shape[0]),
        "neural": [[neural_columns(data, s, fold) for fold in folds] for s in sets],
        "features": list(features),
        "explained": sum(any(x for d in q if len(d) > 4 for x in d[4]) for q in docs),  # queries with any
        "queries": queries,
        "docs": docs,
        **_shown_texts(queries, docs, doc_text, words),
    }


def _or_none(x, fmt):
    return None if not math.isfinite(x) else fmt(x)


def _shown_documents(rankings: dict[str, pd.DataFrame], sets: list, order, top: int) -> pd.DataFrame:
    """The documents of the ``order`` queries in the top ``top`` of any set: per set ``i``, ``rank_i`` and
    ``score_i`` (NaN where the set did not rank the document), indexed by ``(qid, docid)``."""
    frames = []
    for i, s in enumerate(sets):
        r = rankings[s][["qid", "docid", "score"]].astype({"qid": str, "docid": str})
        r = r[r["qid"].isin(order)]
        r = r.assign(rank=r.groupby("qid", sort=False)["score"].rank(method="first", ascending=False).astype(int))
        frames.append(r.set_index(["qid", "docid"]).add_suffix(f"_{i}"))
    table = pd.concat(frames, axis=1, join="outer")
    return table[(table[[f"rank_{i}" for i in range(len(sets))]] <= top).any(axis=1)]


def _shown_texts(queries: list, docs: list, doc_text: dict | None, words: dict | None) -> dict:
    """``doc_text`` and ``words`` cut to the queries and documents the drill-down shows."""
    shown_docs = {d[0] for q in docs for d in q}
    shown_q = {q[0] for q in queries}
    return {
        "doc_text": None if doc_text is None else {d: doc_text[d] for d in sorted(shown_docs) if d in doc_text},
        "words": None
        if not words
        else {
            m: {
                "q": {q: w for q, w in per["q"].items() if q in shown_q},
                "d": {d: w for d, w in per["d"].items() if d in shown_docs},
            }
            for m, per in words.items()
        },
    }


def _moved_by(contributions: dict[str, pd.DataFrame], sets: list, index: pd.MultiIndex, features: dict) -> list | None:
    """Per set, per row of ``index``: None or ``[[feature index, value], ...]`` (values to 3 decimals, zeros left
    out); ``features`` (name -> index) grows with the names used. None when no set has contributions."""
    if not any(contributions.get(s) is not None for s in sets):
        return None
    out: list[list] = []
    for s in sets:
        frame = contributions.get(s)
        if frame is None:
            out.append([None] * len(index))
            continue
        frame = frame.astype({"qid": str, "docid": str}).drop_duplicates(["qid", "docid"])
        frame = frame.set_index(["qid", "docid"]).reindex(index)
        columns = [(frame[c].to_numpy(dtype=object), frame[v].to_numpy(float)) for c, v in _pairs_of(frame)]
        rows = []
        for r in range(len(index)):
            pairs = [
                [features.setdefault(str(name[r]), len(features)), round(float(value[r]), 3)]
                for name, value in columns
                if name[r] is not None and name[r] == name[r] and math.isfinite(value[r]) and round(value[r], 3)
            ]
            rows.append(pairs or None)
        out.append(rows)
    return out


def _pairs_of(frame: pd.DataFrame) -> list[tuple[str, str]]:
    return [(c, "value_" + c.split("_", 1)[1]) for c in frame.columns if c.startswith("feature_")]


def contributions_from_ablation(result, folds) -> dict[str, pd.DataFrame]:
    """Per shown set of ``result`` with contribution summaries, the frame :func:`drill_data` takes (rows as
    :func:`rankings_from_ablation`'s)."""
    from ltrfeat.experiments._fold_runs import _ids
    from ltrfeat.experiments.fold_contributions import moved_by

    qids, docids, _ = _ids(folds)
    out = {}
    for fs in result.feature_sets:
        if fs.kind in _SETS_SHOWN and fs.name in result.contributions:
            frame = moved_by(result.contributions[fs.name], folds, qids, docids)
            if frame is not None:
                out[fs.name] = frame
    return out


def neural_columns(data: dict, name: str, fold: str) -> list[str]:
    """The columns of set ``name`` in ``fold`` that the report's baseline set does not hold (for the recommended
    set, those of the set the fold's selection picked)."""
    columns = {s["name"]: s["columns"] for s in data["config"].get("feature_sets", [])}
    if name == RECOMMENDED:
        name = ((data["config"].get("selection") or {}).get("recommended") or {}).get(fold, {}).get("feature_set")
    base = set(columns.get(data["config"].get("baseline"), []))
    return [c for c in columns.get(name, []) if c not in base]


def rankings_from_ablation(result, folds) -> tuple[dict[str, pd.DataFrame], pd.DataFrame]:
    """Each shown set's ranking of the test documents (the first seed's scores) and the test labels."""
    from ltrfeat.experiments._fold_runs import _ids

    qids, docids, _ = _ids(folds)
    qid = np.concatenate([qids[f.name] for f in folds])
    docid = np.concatenate([docids[f.name] for f in folds])
    label = np.concatenate([np.asarray(f.test.label, dtype=np.float64) for f in folds])
    rankings = {}
    for fs in result.feature_sets:
        if fs.kind in _SETS_SHOWN and fs.name in result.test_scores:
            score = np.concatenate([result.test_scores[fs.name][f.name]["scores"][0] for f in folds])
            rankings[fs.name] = pd.DataFrame({"qid": qid, "docid": docid, "score": score})
    return rankings, pd.DataFrame({"qid": qid, "docid": docid, "label": label})


def rankings_from_runs(report_dir, data: dict) -> tuple[dict[str, pd.DataFrame], pd.DataFrame] | None:
    """The same from a report's ``runs/`` directory (written by ``ablate --write-runs``), or None without it."""
    from ltrfeat.core.trec import read_qrels, read_run

    runs = data.get("runs")
    if not isinstance(runs, dict) or not runs.get("qrels"):
        return None
    directory = Path(report_dir) / runs["directory"]
    kinds = {s["name"]: s["kind"] for s in data["config"].get("feature_sets", [])}
    kinds |= {r["feature_set"]: r["kind"] for r in data["results"]}
    rankings = {}
    for name, files in runs["files"].items():
        if kinds.get(name) in _SETS_SHOWN and files:
            run = read_run(directory / next(iter(files)))
            rankings[name] = run[["qid", "docid", "score"]]
    qrels = read_qrels(directory / runs["qrels"])
    return rankings, qrels[["qid", "docid", "label"]]


# -- the page -----------------------------------------------------------------------------------
def _comparisons(data: dict) -> list[Comparison]:
    return [Comparison.from_dict(c) for c in data["comparisons"]]


def _results_table(data: dict) -> str:
    cfg = data["config"]
    metrics = cfg["metrics"]
    baseline = cfg.get("baseline")
    marks = cfg.get("statistics", {}).get("marks", _plots.MARKS)
    comps = {(c.variant, c.metric): c for c in _comparisons(data) if c.baseline == baseline}
    ncols = {s["name"]: len(s["columns"]) for s in cfg.get("feature_sets", [])}
    rows: dict[tuple[str, str], dict[str, dict]] = {}
    for r in data["results"]:
        rows.setdefault((r["feature_set"], r["kind"]), {})[r["metric"]] = r
    head = "".join(f"<th>{_e(m)}</th>" for m in metrics)
    body = []
    for (name, kind), per in rows.items():
        cells = []
        for m in metrics:
            r = per.get(m)
            if r is None or _real(r.get("mean")) is None:
                cells.append("<td data-v=''>n/a</td>")
                continue
            c = comps.get((name, m))
            lo, hi = _pair(r.get("ci95"))
            title = f"95% interval {_num(lo)}–{_num(hi)}" if lo is not None else ""
            extra, cls = "", ""
            if c is not None:
                sig = _mark(c.p_holm, marks)
                extra = f" <small>({_rel(c.relative)}{sig})</small>"
                title += f"; vs {baseline}: {_signed(c.delta)}, Holm p {_p(c.p_holm)}"
                cls = " class='sig " + ("up" if (_real(c.delta) or 0) > 0 else "down") + "'" if sig else ""
            cells.append(f"<td data-v='{_v(r['mean'])}' title='{_e(title)}'{cls}>{_num(r['mean'])}{extra}</td>")
        body.append(
            f"<tr data-kind='{_e(kind)}'><td>{_e(name)}</td><td class=text>{_e(kind)}</td>"
            f"<td data-v='{ncols.get(name, '')}'>{ncols.get(name, '')}</td>{''.join(cells)}</tr>"
        )
    return (
        "<div class=tools><input type=search placeholder='filter sets, e.g. clsm' data-filter=results>"
        "<label><input type=checkbox data-candidates=results> show every candidate of the model selection</label>"
        "</div><div class=scroll><table id=results class=sortable><thead><tr><th>feature set</th><th class=text>kind</th>"
        f"<th>features</th>{head}</tr></thead><tbody>{''.join(body)}</tbody></table></div>"
        f"<p class=note>Mean over test queries; in brackets the change against <code>{_e(baseline)}</code> and its Holm "
        "mark (* p &lt; 0.05, ** p &lt; 0.01); hover a cell for its 95% interval (not adjusted, see below). Click a "
        "header to sort; the table scrolls sideways.</p>" + "".join(f"<p>{_prose(s)}</p>" for s in results_words(data))
    )


def _comparisons_table(data: dict) -> str:
    marks = data["config"].get("statistics", {}).get("marks", _plots.MARKS)
    if not data["comparisons"]:
        return ""
    rows = []
    for c in _comparisons(data):
        lo, hi = _pair(c.ci95_delta)
        sig = _mark(c.p_holm, marks)
        wins, ties, losses = c.wins, c.ties, c.losses
        net = wins - losses if _real(wins) is not None and _real(losses) is not None else None
        rows.append(
            "<tr>"
            f"<td>{_e(c.baseline)}</td><td class=text>{_e(c.variant)}</td><td class=text>{_e(c.metric)}</td>"
            f"<td data-v='{_v(c.base_mean)}'>{_num(c.base_mean)}</td>"
            f"<td data-v='{_v(c.variant_mean)}'>{_num(c.variant_mean)}</td>"
            f"<td data-v='{_v(c.delta)}'>{_signed(c.delta)} [{_signed(lo)}, {_signed(hi)}]</td>"
            f"<td data-v='{_v(c.relative)}'>{_rel(c.relative)}</td>"
            f"<td data-v='{_v(c.p_randomization)}'>{_p(c.p_randomization)}</td>"
            f"<td data-v='{_v(c.p_holm)}'{' class=sig' if sig else ''}>{_p(c.p_holm)}{sig}</td>"
            f"<td data-v='{_v(net)}'>{_e(wins)}/{_e(ties)}/{_e(losses)}</td>"
            f"<td data-v='{_v(c.n_queries)}'>{_e(c.n_queries)}</td></tr>"
        )
    return (
        "<div class=tools><input type=search placeholder='filter, e.g. ndcg@10 clsm' data-filter=comparisons></div>"
        "<div class=scroll><table id=comparisons class=sortable><thead><tr><th>baseline</th><th class=text>variant</th>"
        "<th class=text>metric</th><th>baseline mean</th><th>variant mean</th><th>delta [95% CI]</th><th>relative</th>"
        "<th>p (randomisation)</th><th>p (Holm)</th><th>W/T/L</th><th>queries</th></tr></thead>"
        f"<tbody>{''.join(rows)}</tbody></table></div><p class=note>{_e(INTERVALS_UNADJUSTED)}</p>"
    )


def _wtl(data: dict) -> str:
    baseline = data["config"].get("baseline")
    out = []
    for m in headline(data["config"]["metrics"]):
        comps = [c for c in _comparisons(data) if c.baseline == baseline and c.metric == m]
        if not comps:
            continue
        rows = []
        for c in comps:
            counts = {key: _real(getattr(c, key)) or 0 for key in ("wins", "ties", "losses")}
            n = max(sum(counts.values()), 1)
            bar = "".join(
                f"<span class={k} style='width:{100 * counts[key] / n:.1f}%' title='{key} {_e(getattr(c, key))}'></span>"
                for k, key in (("w", "wins"), ("t", "ties"), ("l", "losses"))
            )
            rows.append(
                f"<tr><td>{_e(c.variant)}</td><td><span class=wtl>{bar}</span></td>"
                f"<td>{_e(c.wins)}</td><td>{_e(c.ties)}</td><td>{_e(c.losses)}</td></tr>"
            )
        out.append(
            f"<h3>{_e(m)} against <code>{_e(baseline)}</code></h3><table><thead><tr><th>variant</th><th></th>"
            f"<th>wins</th><th>ties</th><th>losses</th></tr></thead><tbody>{''.join(rows)}</tbody></table>"
        )
    return "".join(out)


def _selection(data: dict) -> str:
    sel = data["config"].get("selection")
    if not sel:
        return ""
    rows = []
    for fold, sets in sel["chosen"].items():
        rec = sel["recommended"][fold]
        for name, choice in sets.items():
            cv = ", ".join(f"{c} {_num(st['mean'])}" for c, st in choice["stats"].items())
            flag = f" <b>(recommended: {_e(rec['candidate'])})</b>" if rec["feature_set"] == name else ""
            rows.append(
                f"<tr><td>{_e(fold)}</td><td class=text>{_e(name)}</td><td class=text>{_e(choice['chosen'])}{flag}</td>"
                f"<td class=text>{_e(cv)}</td></tr>"
            )
    metrics = headline(data["config"]["metrics"])
    cand: dict[str, dict[str, float]] = {}
    for r in data["results"]:
        if r["kind"] == SetKind.CANDIDATE and r["metric"] in metrics:
            cand.setdefault(r["feature_set"], {})[r["metric"]] = r["mean"]
    crow = "".join(
        f"<tr><td>{_e(n)}</td>"
        + "".join(f"<td data-v='{_v(v.get(m))}'>{_num(v.get(m))}</td>" for m in metrics)
        + "</tr>"
        for n, v in cand.items()
    )
    return (
        "".join(f"<p>{_prose(s)}</p>" for s in selection_words(data))
        + f"<p>Candidates {', '.join(f'<code>{_e(c)}</code>' for c in sel['candidates'])}, chosen per fold by "
        f"{_e(sel['inner_folds'])}-fold inner cross-validation on training queries only (rule {_e(sel['rule'])}, "
        f"criterion {_e(', '.join(sel['criterion']))}).</p>"
        "<table class=sortable><thead><tr><th>fold</th><th class=text>feature set</th><th class=text>chosen</th>"
        f"<th class=text>inner-CV criterion per candidate</th></tr></thead><tbody>{''.join(rows)}</tbody></table>"
        "<details><summary>Test scores of every candidate (what the selection cost or gained)</summary>"
        "<table class=sortable><thead><tr><th>set / candidate</th>"
        + "".join(f"<th>{_e(m)}</th>" for m in metrics)
        + f"</tr></thead><tbody>{crow}</tbody></table></details>"
    )


def _contributions(data: dict) -> str:
    """Per set, the mean |contribution| of its leading features in each fold's test queries, the neural columns'
    share of the total, and (LambdaMART) the split-gain share beside it."""
    table = data.get("contributions")
    if not isinstance(table, dict) or not table:
        return ""
    parts = [
        "<p class=note>Mean |contribution| of each feature to the scores of the fold's test documents (engine TreeSHAP "
        f"for LambdaMART, the exact terms of linear and single-feature rankers; first seed; at most {MAX_ROWS:,} "
        "documents, whole queries): unlike split gain, it is measured per document, on the documents ranked. "
        "<i>neural share</i>: the part of the total that the set's neural columns (those the baseline lacks) take in "
        "that fold.</p>"
    ]
    for name, entry in table.items():
        per_fold = entry.get("per_fold") if isinstance(entry, dict) else None
        if not isinstance(per_fold, dict) or not per_fold:
            continue
        folds = list(per_fold)
        means: dict[str, list] = {}
        for fold in folds:
            for feature, value in (per_fold[fold] or {}).items():
                means.setdefault(feature, []).append(_real(value) or 0.0)
        top = sorted(means, key=lambda f: -sum(means[f]) / len(folds))[: _plots._TOP_FEATURES]
        gain = (data.get("importance") or {}).get(name) or {}
        head = "".join(f"<th>{_e(f)}</th>" for f in folds) + ("<th>split-gain share</th>" if gain else "")
        rows = "".join(
            f"<tr><td>{_e(f)}</td>"
            + "".join(
                f"<td data-v='{_v((per_fold[fold] or {}).get(f))}'>{_num((per_fold[fold] or {}).get(f))}</td>"
                for fold in folds
            )
            + (f"<td data-v='{_v(gain.get(f))}'>{_rel_share(gain.get(f))}</td>" if gain else "")
            + "</tr>"
            for f in top
        )
        share = entry.get("neural_share") or {}
        rows += (
            "<tr class=share><td>neural share</td>"
            + "".join(f"<td data-v='{_v(share.get(fold))}'>{_rel_share(share.get(fold))}</td>" for fold in folds)
            + ("<td></td>" if gain else "")
            + "</tr>"
        )
        parts.append(
            f"<h3><code>{_e(name)}</code></h3><table class=sortable><thead><tr><th class=text>feature</th>{head}"
            f"</tr></thead><tbody>{rows}</tbody></table>"
        )
    return "".join(parts) if len(parts) > 1 else ""


def _rel_share(x) -> str:
    return "n/a" if _real(x) is None else f"{100 * x:.1f}%"


def _stages(data: dict) -> str:
    from ltrfeat.core.stages import profile_line

    stages = data.get("stage_seconds")
    if not stages:
        return ""
    plain = {k: v for k, v in stages.items() if isinstance(v, (int, float))}
    top = max(plain.values(), default=1.0) or 1.0
    rows = "".join(
        f"<tr><td>{_e(k)}</td><td data-v='{v}'>{v:,.1f} s</td><td><span class=bar style='width:{240 * v / top:.0f}px'>"
        "</span></td></tr>"
        for k, v in plain.items()
    )
    return f"<p>{_e(profile_line(stages))}</p><table><tbody>{rows}</tbody></table>"


def _setup(data: dict) -> str:
    cfg = data["config"]
    stats = cfg.get("statistics", {})
    items = [
        f"<b>Folds</b>: {len(cfg['folds'])} — "
        + "; ".join(
            f"{_e(f['name'])}: test {_e(f['test']['queries'])} queries / {_e(f['test']['rows'])} rows"
            for f in cfg["folds"]
        ),
        f"<b>Engine</b>: {_e(cfg['engine'])} LambdaMART, seeds {_e(', '.join(map(str, cfg['seeds'])))}; parameters "
        f"<code>{_e(json.dumps(cfg['ranker_params']))}</code>",
        f"<b>Conventions</b>: {_e(cfg['conventions']['description'])}",
        f"<b>Statistics</b>: {_e(stats.get('marks_test', ''))}; {_e(stats.get('pooling', ''))}",
        f"<b>Versions</b>: {_e(', '.join(f'{k} {v}' for k, v in cfg['versions'].items() if v))}",
    ]
    if cfg.get("cross_fitting"):
        items.insert(1, f"<b>Cross-fitting</b>: {_e(cfg['cross_fitting'].get('description', ''))}")
        for i, sentence in enumerate(kept_start_words(cfg["cross_fitting"], per_fold=True)):
            items.insert(2 + i, f"<b>Starting point</b>: {_e(sentence)}")
    return "<ul>" + "".join(f"<li>{i}</li>" for i in items) + "</ul>"


def _forests(data: dict) -> str:
    metrics = data["config"]["metrics"]
    first = headline(metrics)
    fig = _plots.forest_figure(data, first, title=False)
    if fig is None:
        return ""
    marks = data["config"].get("statistics", {}).get("marks", _plots.MARKS)
    parts = [
        f"<p class=note>Each set's mean change against <code>{_e(data['config']['baseline'])}</code> with its 95% "
        "bootstrap interval; the label gives the relative change and the Holm mark ("
        + ", ".join(f"{_e(mark)} p &lt; {_e(level)}" for mark, level in marks.items())
        + f"); the axis is zoomed to the intervals, the dashed line is no change. {_e(INTERVALS_UNADJUSTED)}</p>",
        f"<div class=forest>{_plots.svg_text(fig)}</div>",
    ]
    for m in metrics:
        if m not in first and (fig := _plots.forest_figure(data, [m], title=False)) is not None:
            parts.append(f"<details><summary>{_e(m)}</summary><div class=forest>{_plots.svg_text(fig)}</div></details>")
    return "".join(parts)


def _clicks(data: dict) -> str:
    """The click-trained encoders: the log, its impressions and clicks, the correction and the propensity curve."""
    records = data["config"].get("click_training") or {}
    if not records:
        return ""
    rows = "".join(
        f"<tr><td><code>{_e(name)}</code></td><td>{_e(r.get('source', '?'))}</td><td data-v='{_e(r.get('impressions'))}'>"
        f"{_e(r.get('impressions', '?'))}</td><td data-v='{_e(r.get('clicks'))}'>{_e(r.get('clicks', '?'))}</td>"
        f"<td>{'yes' if r.get('has_positions') else 'no'}</td><td>{_e(click_training.correction(r))}</td></tr>"
        for name, r in records.items()
    )
    parts = [
        "<table><thead><tr><th>encoder</th><th>click log</th><th>impressions</th><th>clicks</th><th>positions</th>"
        f"<th>correction</th></tr></thead><tbody>{rows}</tbody></table>"
    ]
    curves = click_training.curves(records)
    fig = _plots.propensity_figure(curves)
    if fig is not None:
        parts.append(
            "<p class=note>The log's examination curve, P(examined | position) relative to position 1, with its "
            "interval, as the correction used it:</p>"
            f"<div class=forest>{_plots.svg_text(fig)}</div>"
        )
    parts += [
        f"<p class=note>{_e(curve.get('method', '?'))} curve of {_e(', '.join(names))}: "
        f"{_e(click_training.curve_text(curve))}</p>"
        for curve, names in curves
    ]
    return "".join(parts)


def _images(report_dir) -> str:
    if report_dir is None:
        return ""
    out = []
    for name, alt in (("deltas.png", "per-query deltas"), ("importance.png", "feature importance")):
        path = Path(report_dir) / name
        if path.is_file():
            data = base64.b64encode(path.read_bytes()).decode("ascii")
            out.append(f"<p><img alt='{alt}' src='data:image/png;base64,{data}'></p>")
    return "".join(out)


def _drill_section(drill: dict | None) -> str:
    if drill is None:  # an older report without runs/: `ltrfeat report --html` says so
        return ""
    cut = (
        f" It holds the {len(drill['queries'])} of {_e(drill['n_queries'])} queries whose {_e(drill['metric'])} changes most "
        "between the default pair of sets (per_query.tsv has them all)."
        if len(drill["queries"]) < drill["n_queries"]
        else ""
    )
    explained = (
        " <i>moved by</i>: beside a document two sets rank differently, the features with the largest contributions "
        "to its score under that set relative to the query's average document (+ up, − down); shown for "
        f"{_e(drill['explained'])} of the queries that change most (contributions are computed for at most "
        f"{MAX_ROWS:,} test rows per fold and set, whole queries, the same for every set)."
        if drill.get("explained")
        else ""
    )
    return (
        "<div id=drill><div class=tools><input type=search id=drill-search placeholder='search a query id or text'>"
        "<label>baseline <select id=drill-base></select></label><label>variant <select id=drill-variant></select>"
        "</label></div><div id=drill-results></div><div id=drill-view></div>"
        f"<p class=note>Top {_e(drill['top'])} documents of each set (first seed's scores); label = judged grade; ▲ n "
        "higher / ▼ n lower = ranked n places higher or lower than under the other set (the label says whether that "
        "is better); the words explaining a match are those of the set's own CLSM encoder, shown only for a set that "
        f"holds one.{explained}{cut}</p></div>"
    )


def _warning_box(warnings: list[str]) -> str:
    """The report's warnings in one box that says how many there are and what a warning about the best single
    feature means for the reader."""
    if not warnings:
        return ""
    single = (
        "<p>The best single feature is the one feature inner cross-validation picks in each fold, used alone as the "
        "ranking score: when a learned ranker is not shown to beat it, ranking by that feature alone is as good as "
        "these sets show, and simpler to ship.</p>"
        if any("best single feature" in w for w in warnings)
        else ""
    )
    items = "".join(f"<li>{_prose(w)}</li>" for w in warnings)
    count = f"{len(warnings)} warning{'s' if len(warnings) != 1 else ''}"
    return f"<div class=warning id=warnings><p><b>{count}</b></p>{single}<ul>{items}</ul></div>"


def render(data: dict, *, drill: dict | None = None, report_dir=None) -> str:
    """The whole page for a ``report.json`` object: the verdict in two sentences (and why the pick differs from a
    lift, when it does), the warning box, then every section that has something to show."""
    reconcile = reconcile_words(data)
    verdict = f"<p>{_prose(' '.join(verdict_words(data)))}</p>" + (f"<p>{_prose(reconcile)}</p>" if reconcile else "")
    sections = [
        ("results", "Results", _results_table(data)),
        ("forest", "Changes against the baseline", _forests(data)),
        ("wtl", "Wins, ties, losses", _wtl(data)),
        ("drill", "Per query", _drill_section(drill)),
        ("comparisons", "Every comparison", _comparisons_table(data)),
        ("selection", "Model selection", _selection(data)),
        ("contributions", "What the scores are made of", _contributions(data)),
        ("clicks", "Click-trained encoders", _clicks(data)),
        ("plots", "Plots", _images(report_dir)),
        ("stages", "Stage profile", _stages(data)),
        ("setup", "Setup", _setup(data)),
    ]
    return _page(
        "Feature ablation", verdict, sections, {"drill": drill}, after_verdict=_warning_box(report_warnings(data))
    )


def _page(title: str, verdict: str, sections: list[tuple[str, str, str]], payload: dict, *, after_verdict="") -> str:
    """A self-contained page: the verdict (HTML) on top, then the sections (key, title, HTML) that have content, each
    linked from the navigation; ``payload`` is the JSON the script reads (the drill-down)."""
    sections = [(key, name, content) for key, name, content in sections if content]
    nav = "".join(f"<a href='#s-{key}'>{_e(name)}</a>" for key, name, _ in sections)
    body = "".join(f"<h2 id='s-{key}'>{_e(name)}</h2>{content}" for key, name, content in sections)
    code = _asset("report.js")
    # only this script runs: no inline handler, no script a value of report.json could smuggle in
    digest = base64.b64encode(hashlib.sha256(code.encode("utf-8")).digest()).decode("ascii")
    return (
        "<!DOCTYPE html><html lang=en><head><meta charset=utf-8>"
        "<meta name=viewport content='width=device-width, initial-scale=1'>"
        "<meta http-equiv=Content-Security-Policy content=\"default-src 'none'; img-src data:; "
        f"style-src 'unsafe-inline'; script-src 'sha256-{digest}'\">"
        f"<title>{_e(title)}</title><style>{_asset('report.css')}</style></head><body><h1>{_e(title)}</h1>"
        f"<nav>{nav}</nav><div id=verdict>{verdict}</div>{after_verdict}{body}"
        f"<script type=application/json id=report-data>{script_json(payload)}</script>"
        f"<script>{code}</script></body></html>\n"
    )


# inside a <script> element no string may hold "</script", "<!--" or "<script" (which swallow the element's
# end); escaped as JSON \u escapes, the same characters reach JSON.parse
_SCRIPT_ESCAPES = {ord(c): f"\\u{ord(c):04x}" for c in "<>&\u2028\u2029"}


def script_json(payload) -> str:
    """``payload`` as JSON safe inside an HTML ``<script>`` element: ``<``, ``>``, ``&``, U+2028 and U+2029
    written as ``\\u`` escapes (they occur only inside JSON strings)."""
    return json.dumps(payload, separators=(",", ":"), ensure_ascii=False).translate(_SCRIPT_ESCAPES)


def render_comparison(data: dict) -> str:
    """The page of ``ltrfeat compare-runs`` (a :func:`ltrfeat.experiments.compare_runs.compare_systems` result)."""
    as_report = {
        "config": {"baseline": data["baseline"], "metrics": data["metrics"], "statistics": data["statistics"]},
        "comparisons": data["comparisons"],
    }
    head = "".join(f"<th>{_e(m)}</th>" for m in data["metrics"])
    rows = "".join(
        f"<tr><td>{_e(n)}</td>"
        + "".join(
            f"<td data-v='{_v(v['mean'])}' title='95% interval {_num(v['ci95'][0])}–{_num(v['ci95'][1])}'>"
            f"{_num(v['mean'])}</td>"
            for v in (data["means"][n][m] for m in data["metrics"])
        )
        + "</tr>"
        for n in data["systems"]
    )
    figures = []
    for m in data["metrics"]:
        fig = _plots.forest_figure(as_report, [m], title=False)
        if fig is not None:
            figures.append(f"<div class=forest>{_plots.svg_text(fig)}</div>")
    sections = [
        (
            "means",
            "Means",
            f"<table class=sortable><thead><tr><th>system</th>{head}</tr></thead><tbody>{rows}</tbody></table>"
            f"<p class=note>{_e(data['n_queries'])} queries every system has; hover a mean for its 95% interval.</p>",
        ),
        ("forest", f"Changes against {data['baseline']}", "".join(figures)),
        ("comparisons", "Every comparison", _comparisons_table(as_report)),
        ("setup", "Statistics", f"<p>{_e(data['statistics']['marks_test'])}. {_e(data.get('conventions') or '')}</p>"),
    ]
    return _page("ltrfeat compare-runs", f"<p>{_prose(data['summary'])}</p>", sections, {"drill": None})


def write_html(path, data: dict, *, drill: dict | None = None, report_dir=None) -> Path:
    """Write :func:`render`'s page to ``path`` atomically."""
    with atomic_output(path) as fh:
        fh.write(render(data, drill=drill, report_dir=report_dir))
    return Path(path)
