"""The ablation report: Markdown, JSON, per-query TSV, timings and PNG plots, written as one directory.

``report.json`` depends only on the inputs, seeds and library versions (wall times go to
``timings.json``), so rerunning an ablation reproduces it byte for byte. The directory is
built under a temporary name beside the target and renamed at the end: a failed run
leaves no partial report.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np

from ltrfeat.core.fileio import atomic_output, check_output_dir, replaced_dir
from ltrfeat.core.stages import profile_line
from ltrfeat.experiments import _plots
from ltrfeat.experiments.summary import MINILM, minilm_pairs
from ltrfeat.experiments.ablation_result import AblationResult
from ltrfeat.experiments._fold_runs import RUNS_DIR, write_test_runs
from ltrfeat.experiments.fold_contributions import contribution_table
from ltrfeat.experiments.in_words import HEADLINE, summary_in_words, tie_analysis  # noqa: F401 (HEADLINE: API)
from ltrfeat.experiments.in_words import tie_warnings
from ltrfeat.experiments.in_words import headline as headline_metrics
from ltrfeat.experiments.in_words import (
    kept_start_words,
    reconcile_words,
    report_warnings,
    results_words,
    selection_words,
    verdict_words,
)
from ltrfeat.experiments._plots import _TOP_FEATURES
from ltrfeat.experiments._plots import mark as significance_mark
from ltrfeat.experiments.click_training import markdown_lines as click_markdown
from ltrfeat.experiments.verdict import verdict_lines
from ltrfeat.experiments.set_kind import SetKind
from ltrfeat.experiments.summary_types import SetResult, Summary

REPORT_FORMAT = "ltrfeat.ablation/1"


SEED_HINT = (
    "training without row or feature subsampling is deterministic, so extra seeds only cost time; "
    "to measure seed variance add subsampling, e.g. LightGBM bagging_fraction=0.8, bagging_freq=1, "
    "feature_fraction=0.8 or XGBoost subsample=0.8, colsample_bytree=0.8"
)


def seed_inert_sets(result: AblationResult) -> list[str]:
    """Ranker sets whose per-query metrics were identical for every seed (with several seeds)."""
    if len(result.config["seeds"]) < 2:
        return []
    return [name for name, changed in result.seed_effect.items() if not changed]


def _clean(obj):
    """JSON-safe copy: non-finite floats become null, numpy scalars plain numbers."""
    if isinstance(obj, dict):
        return {str(k): _clean(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_clean(v) for v in obj]
    if isinstance(obj, (np.integer,)):
        return int(obj)
    if isinstance(obj, (float, np.floating)):
        return float(obj) if math.isfinite(obj) else None
    return obj


def report_json(result: AblationResult, summary: Summary) -> dict:
    """The ``report.json`` object: config, results, comparisons, per-run best iterations, importance (split gain
    and, per fold, mean |contribution| with the neural columns' share)."""
    from ltrfeat.experiments.html_report import neural_columns

    runs = [{k: v for k, v in r.items() if k != "seconds"} for r in result.runs]
    config = result.config | {"baseline": summary.baseline, "statistics": summary.statistics}
    shown = {s.name for s in result.feature_sets if s.kind != SetKind.CANDIDATE}  # candidates: in the recommended set
    contrib = contribution_table(
        {s: v for s, v in result.contributions.items() if s in shown},
        lambda s, fold: neural_columns({"config": config}, s, fold),
    )
    return _clean(
        {
            "format": REPORT_FORMAT,
            "config": config,
            "results": [r.to_dict() for r in summary.results],
            "comparisons": [c.to_dict() for c in summary.comparisons],
            "verdict": summary.verdict,
            "runs": runs,
            "importance": result.importance,
            "contributions": contrib,
            "seed_effect": result.seed_effect,
            "stage_seconds": summary.stages,
        }
    )


def _index(summary: Summary):
    """Means by (set, metric); the comparisons against the report's baseline by (variant, metric)."""
    comps = {(c.variant, c.metric): c for c in summary.comparisons if c.baseline == summary.baseline}
    return summary.means(), comps


def _cell(means, comps, name: str, metric: str, marks: dict, *, relative: bool = True) -> str:
    r = means[(name, metric)]
    if r.mean is None or not math.isfinite(r.mean):
        return "n/a"
    text = f"{r.mean:.4f}"
    c = comps.get((name, metric))
    if c is not None:
        rel = c.relative
        shown = f"{100 * rel:+.1f}%" if relative and rel is not None and math.isfinite(rel) else f"{c.delta:+.4f}"
        text += f" ({shown}){significance_mark(c.p_holm, marks)}"
    return text


def headline_table(result: AblationResult, summary: Summary, metrics=None) -> list[str]:
    """Plain-text lines: one row per feature set with its means, relative deltas and marks."""
    metrics = list(metrics or headline_metrics(result.metrics))
    means, comps = _index(summary)
    marks = summary.statistics["marks"]
    rows = [
        [s.name + (" (alone)" if s.kind == SetKind.ALONE else "")]
        + [_cell(means, comps, s.name, m, marks) for m in metrics]
        for s in result.feature_sets
        if s.kind != SetKind.CANDIDATE
    ]
    header = ["feature set"] + metrics
    widths = [max(len(str(row[j])) for row in rows + [header]) for j in range(len(header))]
    fmt = lambda row: "  ".join(str(v).ljust(w) for v, w in zip(row, widths)).rstrip()  # noqa: E731
    return [fmt(header)] + [fmt(row) for row in rows]


def _md_table(header: list[str], rows: list[list]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    return lines + ["| " + " | ".join(str(v) for v in row) + " |" for row in rows]


def format_p(p) -> str:
    if p is None or not math.isfinite(p):
        return "n/a"
    return f"{p:.2g}" if p >= 1e-4 else f"{p:.1e}"


def minilm_lines(result: AblationResult, summary: Summary) -> list[str]:
    """One line per neural feature against the zero-shot MiniLM feature (alone, and added to the base set) at
    the first headline metric, with the Holm-adjusted p; empty when the ablation has no ``sbert`` feature."""
    pairs = set(minilm_pairs(result.feature_sets, summary.baseline))
    comparisons = [c for c in summary.comparisons if (c.baseline, c.variant) in pairs]
    if not comparisons:
        return []
    metric = comparisons[0].metric
    lines = [f"against the zero-shot MiniLM feature ({MINILM}), {metric}, Holm-adjusted with the report:"]
    for c in comparisons:
        if c.metric == metric:
            lines.append(
                f"  {c.variant} {c.variant_mean:.4f} vs {c.baseline} {c.base_mean:.4f}: "
                f"{c.delta:+.4f} [{c.ci95_delta[0]:+.4f}, {c.ci95_delta[1]:+.4f}], "
                f"p Holm {format_p(c.p_holm)}{significance_mark(c.p_holm)}"
            )
    return lines


_TOP_FEATURES_CONTRIB = 5


def report_markdown(result: AblationResult, summary: Summary, *, data: dict | None = None) -> str:
    """The human-readable report: the verdict in two sentences and the warnings (from ``data``, the report's
    ``report.json`` object), setup and conventions, the tables, the model selection with the verdict's details,
    plots and files."""
    cfg = result.config
    rankers = [s for s in result.feature_sets if s.kind == SetKind.RANKER]
    lines = ["# Feature ablation", ""]
    if data is not None:
        lines += _verdict_markdown(data)
    lines += _setup_markdown(result, summary)
    if rankers:
        lines += _rankers_markdown(result, summary, data)
    if summary.comparisons:
        lines += _comparisons_markdown(result, summary)
    if any(s.kind == SetKind.ALONE for s in result.feature_sets):
        lines += _single_features_markdown(result, summary)
    if rankers:
        lines += _importance_markdown(result, data)
    lines += click_markdown(cfg.get("click_training") or {})
    lines += _plots_and_files_markdown(summary, bool(rankers))
    return "\n".join(lines)


def _verdict_markdown(data: dict) -> list[str]:
    """The verdict in two sentences, how it reconciles with the tables, and the warnings."""
    lines = [f"**Verdict**: {' '.join(verdict_words(data))}", ""]
    reconcile = reconcile_words(data)
    if reconcile:
        lines += [reconcile, ""]
    warnings = report_warnings(data)
    if warnings:
        lines += [f"**{len(warnings)} warning{'s' if len(warnings) != 1 else ''}**:", ""]
        lines += [f"- {w}" for w in warnings] + [""]
    return lines


def _setup_markdown(result: AblationResult, summary: Summary) -> list[str]:
    """## Setup: folds, settings, cross-fitting, seeds, engine, metrics, conventions, statistics, versions."""
    cfg = result.config
    stats = summary.statistics
    marks = stats["marks"]
    conv = cfg["conventions"]
    lines = ["## Setup", ""]
    if summary.stages:
        lines.append(f"- **{profile_line(summary.stages)[:-1]}** (per training in report.json `stage_seconds`).")
    lines.append(
        f"- **Folds**: {len(cfg['folds'])}; each query is tested in exactly one fold and never trained on "
        "in that fold; test queries of all folds are pooled for the statistics."
    )
    for f in cfg["folds"]:
        sizes = ", ".join(
            f"{part} {f[part]['queries']} queries / {f[part]['rows']} rows"
            for part in ("train", "valid", "test")
            if f[part] is not None
        )
        origin = f" — from {f['origin']}" if f["origin"] else ""
        lines.append(f"  - `{f['name']}`: {sizes}{origin}")
    if cfg.get("config_file"):
        settings = ", ".join(f"--{k} {json.dumps(v)}" for k, v in cfg["config_file"]["options"].items())
        lines.append(
            f"- **Settings file**: `{cfg['config_file']['path']}` supplied {settings or 'no option'} "
            "(options given on the command line override it)."
        )
    if cfg.get("cross_fitting"):
        lines.append(f"- **Cross-fitting**: {cfg['cross_fitting']['description']}")
        lines += [f"- **Starting point**: {s}" for s in kept_start_words(cfg["cross_fitting"], per_fold=True)]
    lines.append(
        f"- **Seeds**: {', '.join(map(str, cfg['seeds']))} — every ranker set is trained with each seed on "
        "every fold (paired); per-query metrics are averaged over seeds. Single-feature rankers are "
        "deterministic and run once."
    )
    inert = seed_inert_sets(result)
    if inert:
        lines.append(f"- **Note**: the seeds changed nothing for {', '.join(f'`{n}`' for n in inert)}: {SEED_HINT}.")
    lines.append(
        f"- **Engine**: {cfg['engine']} LambdaMART; parameters: `{json.dumps(_clean(cfg['ranker_params']))}`; "
        f"engine parameters: `{json.dumps(_clean(cfg['engine_params']))}`. Early stopping uses the fold's "
        "validation part when it has one."
    )
    lines.append(
        f"- **Metrics**: {', '.join(cfg['metrics'])}. recall@k = share of the relevant documents in the "
        "top k; top3recall@k = share of the query's 3 best relevant documents in the top k (GDSSM paper)."
    )
    lines.append(
        f"- **Conventions**: {conv['description']}. NDCG gain: {conv['gain']}; ties: {conv['ties']}; queries "
        f"without a relevant document: {conv['no_relevant']}."
    )
    lines.append(
        "- **Single-feature rankers** sort documents by the raw feature value, descending (equal values are "
        "ties, measured as above); NaN/inf values go last."
    )
    lines.append(
        (
            f"- **Significance marks**: {stats['marks_test']}; `*` adjusted p < {marks['*']}, "
            f"`**` adjusted p < {marks['**']}; {len(summary.comparisons)} comparisons of "
            f"`{summary.baseline}` against the other ranker sets over all metrics."
        )
        if summary.comparisons
        else "- **Significance marks**: none (no ranker set to compare)."
    )
    b = stats["bootstrap"]
    lines.append(
        f"- **Intervals**: {b['method']} bootstrap, {int(b['level'] * 100)}% level, {b['n_resamples']} "
        f"resamples, seed {b['seed']}; randomisation test with {stats['randomization']['n_resamples']} "
        "sign-flip resamples (exact enumeration up to "
        f"{stats['randomization']['exact_up_to_queries']} queries)."
    )
    if summary.comparisons:
        floor = len(summary.comparisons) / (stats["randomization"]["n_resamples"] + 1)
        lines.append(
            f"- **Resolution**: with {stats['randomization']['n_resamples']} resamples and "
            f"{len(summary.comparisons)} comparisons the smallest attainable Holm-adjusted p is about "
            f"{floor:.2g} (for more than {stats['randomization']['exact_up_to_queries']} queries); "
            "raise the resamples if that exceeds a mark's threshold."
        )
    lines.append(f"- **Versions**: {', '.join(f'{k} {v}' for k, v in cfg['versions'].items() if v)}.")
    lines.append("")
    return lines


def _rankers_markdown(result: AblationResult, summary: Summary, data: dict | None) -> list[str]:
    """## Rankers: the mean of every metric per ranker set with its change against the baseline; the model
    selection when there was one."""
    cfg = result.config
    means, comps = _index(summary)
    marks = summary.statistics["marks"]
    shown = [s for s in result.feature_sets if s.kind in (SetKind.RANKER, SetKind.RECOMMENDED, SetKind.BASELINE)]
    lines = [
        "## Rankers",
        "",
        f"Mean over test queries; in brackets the change relative to `{summary.baseline}` and its "
        "significance mark." + "".join(f" {s}" for s in (results_words(data) if data is not None else [])),
        "",
    ]
    lines += _md_table(
        ["feature set", "features"] + cfg["metrics"],
        [
            [f"`{s.name}`", len(s.columns)] + [_cell(means, comps, s.name, m, marks) for m in cfg["metrics"]]
            for s in shown
        ],
    )
    lines.append("")
    if cfg.get("selection"):
        lines += _selection_markdown(result, summary, data)
    return lines


def _comparisons_markdown(result: AblationResult, summary: Summary) -> list[str]:
    """## Comparisons: every paired comparison with its interval, p-values and wins/ties/losses."""
    marks = summary.statistics["marks"]
    lines = [
        "## Comparisons",
        "",
        "delta = variant − baseline (mean over queries, with its 95% bootstrap interval); W/T/L = queries "
        "where the variant wins / ties / loses. With the zero-shot MiniLM feature (`sbert`) in the ablation, "
        "every other neural feature is also compared with it, alone and added to the base set, at the "
        "headline metrics, in the same Holm family.",
        "",
    ]
    if minilm_lines(result, summary):
        lines += ["```", *minilm_lines(result, summary), "```", ""]
    lines += _md_table(
        [
            "baseline",
            "variant",
            "metric",
            "baseline mean",
            "variant mean",
            "delta [95% CI]",
            "relative",
            "p (t-test)",
            "p (randomisation)",
            "p (Holm)",
            "W/T/L",
            "queries",
        ],
        [
            [
                f"`{c.baseline}`",
                f"`{c.variant}`",
                c.metric,
                f"{c.base_mean:.4f}",
                f"{c.variant_mean:.4f}",
                f"{c.delta:+.4f} [{c.ci95_delta[0]:+.4f}, {c.ci95_delta[1]:+.4f}]",
                "n/a" if c.relative is None or not math.isfinite(c.relative) else f"{100 * c.relative:+.1f}%",
                format_p(c.p_ttest),
                format_p(c.p_randomization),
                format_p(c.p_holm) + significance_mark(c.p_holm, marks),
                f"{c.wins}/{c.ties}/{c.losses}",
                c.n_queries,
            ]
            for c in summary.comparisons
        ],
    )
    lines.append("")
    return lines


def _single_features_markdown(result: AblationResult, summary: Summary) -> list[str]:
    """## Single features: each feature alone as a ranker, with its interval."""
    cfg = result.config
    means, _ = _index(summary)
    alone = [s for s in result.feature_sets if s.kind == SetKind.ALONE]
    lines = [
        "## Single features",
        "",
        "Each feature alone, documents sorted by its raw value (as in Table 5 of "
        "the CLSM paper); mean [95% bootstrap interval].",
        "",
    ]
    lines += _md_table(
        ["feature"] + cfg["metrics"],
        [[f"`{s.name}`"] + [_mean_ci(means[(s.name, m)]) for m in cfg["metrics"]] for s in alone],
    )
    lines.append("")
    return lines


def _importance_markdown(result: AblationResult, data: dict | None) -> list[str]:
    """## Feature importance: gain shares, mean contributions with the neural share, best iterations."""
    rankers = [s for s in result.feature_sets if s.kind == SetKind.RANKER]
    lines = [
        "## Feature importance",
        "",
        f"Share of each ranker's total split gain, averaged over folds and seeds (top {_TOP_FEATURES} per set).",
        "",
    ]
    for s in rankers:
        top = list(result.importance.get(s.name, {}).items())[:_TOP_FEATURES]
        lines.append(f"- `{s.name}`: " + ", ".join(f"{k} {100 * v:.1f}%" for k, v in top))
    contrib = (data or {}).get("contributions") or {}
    if contrib:
        lines += [
            "",
            "Mean |contribution| to the test documents' scores (per document, unlike gain), averaged over folds, "
            f"top {_TOP_FEATURES_CONTRIB} per set, and the share the set's neural columns take of the total per "
            "fold (report.html has every fold):",
            "",
        ]
        for name, entry in contrib.items():
            folds = list(entry["per_fold"].values())
            mean = {f: sum(d.get(f, 0.0) for d in folds) / len(folds) for d in folds for f in d}
            top = sorted(mean.items(), key=lambda kv: -kv[1])[:_TOP_FEATURES_CONTRIB]
            shares = [v for v in entry["neural_share"].values() if v is not None]
            lines.append(
                f"- `{name}`: "
                + ", ".join(f"{k} {v:.3g}" for k, v in top)
                + ("; neural share " + ", ".join(f"{100 * v:.0f}%" for v in shares) if shares else "")
            )
    best: dict[str, list[int]] = {}
    for r in result.runs:
        if r["best_iteration"] is not None:
            best.setdefault(r["feature_set"], []).append(r["best_iteration"])
    lines += [
        "",
        "Best iteration (trees used) per ranker set, over folds and seeds: "
        + "; ".join(f"`{k}` median {int(np.median(v))} (range {min(v)}–{max(v)})" for k, v in best.items()),
        "",
    ]
    return lines


def _plots_and_files_markdown(summary: Summary, rankers: bool) -> list[str]:
    """## Plots and ## Files: what report.html, the images and the other files hold."""
    lines = [
        "## Plots",
        "",
        "The page `report.html` holds every table, a forest plot per metric and a per-query view.",
        "",
    ]
    if summary.comparisons:
        lines += ["![changes against the baseline with 95% intervals](metrics.png)", ""]
        lines += ["![per-query deltas](deltas.png)", ""]
    if rankers:
        lines += ["![feature importance](importance.png)", ""]
    lines += [
        "## Files",
        "",
        "- `report.html`: the same report as one self-contained page (sortable tables, forest plots, per-query "
        "drill-down); `ltrfeat report DIR --open` shows it",
        "- `report.json`: config, results, comparisons, per-run best iterations, importance "
        "(identical on reruns with the same inputs and seeds)",
        "- `per_query.tsv`: one row per feature set (and, with model selection, per `SET/CANDIDATE`), fold "
        "and test query (metrics averaged over seeds); `ltrfeat compare` reads it",
        "- `timings.json`: wall time of every run",
        "",
    ]
    return lines


def _selection_markdown(result: AblationResult, summary: Summary, data: dict | None) -> list[str]:
    """How each ranker was chosen: the verdict's details (the rule, the selection cost, the lighter set, what to
    run to ship it), the inner-CV scores, the choice per fold, every candidate's test scores."""
    sel = result.config["selection"]
    means, _ = _index(summary)
    headline = headline_metrics(result.metrics)
    lines = [
        "## Model selection",
        "",
        f"Candidates: {', '.join(f'`{c}`' for c in sel['candidates'])}; tuning: {sel['tune']}"
        + (f" ({sel['tune_trials']} trials)" if sel["tune"] == "optuna" else "")
        + f"; {sel['inner_folds']}-fold inner cross-validation over each fold's training queries (trees "
        f"early-stop on {sel['valid_fraction']:.0%} of the inner training queries); criterion: mean of "
        f"{', '.join(sel['criterion'])} per query; rule: {sel['rule']} "
        "(tiered: per set the simplest candidate within one standard error of the best, then the least complex "
        "set's pick or simpler candidate within z standard errors of the best set, z growing with the number of distinct close picks, "
        "complexity being the model fitted -- its ranker kind, then the features it uses -- and among equally "
        "complex picks the first in plan order unless another leads it by one standard error; joint: the same "
        "among all configurations; one-se: the first set in plan order within one standard error). The test "
        "queries are "
        "never read. Tuned candidates report their best trial, so their inner scores are optimistic.",
        "",
    ]
    if summary.verdict:
        lines += [" ".join(selection_words(data)), ""] if data is not None and selection_words(data) else []
        lines += [
            "The recommendation is made per fold on training queries only; the test metrics are pooled over the "
            "folds' test queries, compared by the paired randomisation test, Holm-adjusted with every other "
            "comparison of this report.",
            "",
            "```",
            *verdict_lines(summary.verdict),
            "```",
            "",
        ]
    rows = []
    for fold, sets in sel["chosen"].items():
        rec = sel["recommended"][fold]
        for name, choice in sets.items():
            cv = ", ".join(f"{c} {st['mean']:.4f}" for c, st in choice["stats"].items())
            tuned = choice["tuned"].get(choice["chosen"])
            rows.append(
                [
                    fold,
                    f"`{name}`",
                    f"`{choice['chosen']}`"
                    + (f" (recommended: `{rec['candidate']}`)" if rec["feature_set"] == name else ""),
                    cv,
                    "" if not tuned else f"`{json.dumps(_clean(tuned))}`",
                ]
            )
    lines += _md_table(["fold", "feature set", "chosen", "inner-CV criterion per candidate", "tuned parameters"], rows)
    lines += ["", "Test scores of every candidate (what selection cost or gained):", ""]
    candidates = [s for s in result.feature_sets if s.kind == SetKind.CANDIDATE]
    lines += _md_table(
        ["feature set / candidate"] + headline,
        [[f"`{s.name}`"] + [_cell(means, {}, s.name, m, {}) for m in headline] for s in candidates],
    )
    return lines + [""]


def _mean_ci(r: SetResult) -> str:
    if r.mean is None or not math.isfinite(r.mean):
        return "n/a"
    return f"{r.mean:.4f} [{r.ci95[0]:.4f}, {r.ci95[1]:.4f}]"


# -- plots --------------------------------------------------------------------------------
def plot_metrics(data: dict, path) -> None:
    """Forest plot of every set's change against the baseline at the headline metrics (see
    :func:`ltrfeat.experiments._plots.forest_figure`)."""
    _plots.save_png(_plots.forest_figure(data), path)


def plot_deltas(data: dict, per_query, path) -> None:
    """Per-query NDCG@10 changes per set, with mean and wins/ties/losses."""
    _plots.save_png(_plots.deltas_figure(data, per_query), path)


def plot_importance(data: dict, path) -> None:
    """Gain share of the top features of every ranker set, as one heat map."""
    _plots.save_png(_plots.importance_figure(data), path)


# -- writing ------------------------------------------------------------------------------
def check_report_dir(out_dir, *, overwrite: bool = False) -> Path:
    """Fail early when ``out_dir`` exists and may not be replaced (see :func:`check_output_dir`)."""
    return check_output_dir(out_dir, overwrite=overwrite, option="--report", what="report")


def write_report(
    result: AblationResult,
    summary: Summary,
    out_dir,
    *,
    overwrite: bool = False,
    timings: dict | None = None,
    runs_of=None,
    folds=None,
    texts: dict | None = None,
    words: dict | None = None,
) -> Path:
    """Write ``report.md``, ``report.json``, ``report.html``, ``per_query.tsv``, ``timings.json`` and the PNG
    plots into ``out_dir``, all at once (built in a temporary directory, then renamed). ``timings`` (e.g.
    ``wall_seconds`` and per-stage seconds of the whole command) go to ``timings.json`` beside the runs'.
    ``runs_of``: the ablation's folds; every set's test-fold scores are then written as TREC runs
    into ``runs/`` with the test queries' qrels (see :mod:`ltrfeat.experiments._fold_runs`).
    ``folds`` (default ``runs_of``): the ablation's folds, for the tie analysis and report.html's per-query
    drill-down; ``texts`` (``{"query": {qid: text}, "doc": {docid: text}}``) and ``words`` (CLSM max-pool
    words, see :func:`ltrfeat.experiments.html_report.drill_data`) enrich the drill-down."""
    from ltrfeat.experiments import html_report

    folds = runs_of if folds is None else folds
    out_dir = check_report_dir(out_dir, overwrite=overwrite)
    with replaced_dir(out_dir, kind="report") as tmp:
        ties = None if folds is None else _clean(tie_analysis(result, folds))
        if summary.verdict:  # the tie warnings join the verdict's: the report's warning box shows them
            summary.verdict["tie_warnings"] = tie_warnings(ties)
            summary.verdict["warnings"] = [
                w for w in summary.verdict["warnings"] if w not in summary.verdict["tie_warnings"]
            ] + summary.verdict["tie_warnings"]
        data = report_json(result, summary)
        if runs_of is not None:
            data["runs"] = write_test_runs(result, runs_of, tmp / RUNS_DIR)
        if ties is not None:
            data["ties"] = ties
        data["summary"] = summary_in_words(data)
        if data["verdict"]:
            data["verdict"]["summary"] = data["summary"]
        with atomic_output(tmp / "report.json") as fh:
            json.dump(data, fh, indent=1, allow_nan=False)
            fh.write("\n")
        with atomic_output(tmp / "report.md") as fh:
            fh.write(report_markdown(result, summary, data=data))
        with atomic_output(tmp / "per_query.tsv") as fh:
            result.per_query.to_csv(fh, sep="\t", index=False, na_rep="NaN", float_format="%.10g", lineterminator="\n")
        with atomic_output(tmp / "timings.json") as fh:
            json.dump(
                {**(timings or {}), "total_seconds": sum(r["seconds"] for r in result.runs), "runs": result.runs},
                fh,
                indent=1,
            )
            fh.write("\n")
        if summary.comparisons:
            plot_metrics(data, tmp / "metrics.png")
            plot_deltas(data, result.per_query, tmp / "deltas.png")
        if any(s.kind == SetKind.RANKER for s in result.feature_sets):
            plot_importance(data, tmp / "importance.png")
        drill = None
        if folds is not None:
            drill = html_report.drill_data(
                *html_report.rankings_from_ablation(result, folds),
                result.per_query,
                data,
                texts=texts,
                words=words,
                contributions=html_report.contributions_from_ablation(result, folds),
            )
        html_report.write_html(tmp / "report.html", data, drill=drill, report_dir=tmp)
    return out_dir
