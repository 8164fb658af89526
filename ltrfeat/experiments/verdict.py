"""The verdict of a model-selection ablation: what to ship, how it compares with the untuned
lexical LambdaMART and with the best single feature, and plain warnings where a learned ranker
does not beat its best input or a neural lift disappears against that stronger baseline.

Everything here reads the summary's Holm-adjusted comparisons (:func:`ltrfeat.experiments.summary.summarise`);
the recommendation itself was made on training queries only (inner cross-validation per fold).
"""

from __future__ import annotations

import collections
import math
import shlex
from pathlib import Path

from ltrfeat.experiments.click_training import uncorrected_warnings
from ltrfeat.experiments.set_kind import SetKind
from ltrfeat.experiments.summary_types import LEVEL, Comparison, Summary
from ltrfeat.rankers import registry
from ltrfeat.rankers.choices import BEST_SINGLE, RECOMMENDED


def _better(c: Comparison | None) -> bool:
    return c is not None and c.better()


def _worse(c: Comparison | None) -> bool:
    return c is not None and c.worse()


def _fmt(p) -> str:
    return "n/a" if p is None or not math.isfinite(p) else (f"{p:.2g}" if p >= 1e-4 else f"{p:.1e}")


def _signed_feature(chose: dict) -> str:
    """The feature a best-single ranker sorts by, ``-name`` when it sorts ascending."""
    return chose["feature"] if chose["direction"] > 0 else f"-{chose['feature']}"


def verdict(result, summary: Summary) -> dict | None:
    """The verdict of an :class:`~ltrfeat.experiments.ablation_result.AblationResult` and its summary (None without model
    selection)."""
    selection = result.config.get("selection")
    if selection is None or not selection.get("recommended"):
        return None
    comps: dict[tuple, Comparison] = {(c.baseline, c.variant, c.metric): c for c in summary.comparisons}
    means = {key: r.mean for key, r in summary.means().items()}
    metrics = [m for m in selection["criterion"] if (BEST_SINGLE, RECOMMENDED, m) in comps]
    base = summary.baseline
    untuned = f"{base}/{result.config['engine']}"
    per_fold = selection["recommended"]
    counts = collections.Counter(f"{r['feature_set']} / {r['candidate']}" for r in per_fold.values())
    singles = collections.Counter(_signed_feature(r["chose"]) for r in result.runs if r["feature_set"] == BEST_SINGLE)
    candidate_rows = [s.name for s in result.feature_sets if s.kind == SetKind.CANDIDATE]
    table = []
    for m in metrics:
        vs_untuned, vs_single = comps.get((untuned, RECOMMENDED, m)), comps[(BEST_SINGLE, RECOMMENDED, m)]
        fixed = max(candidate_rows, key=lambda n: means.get((n, m), float("-inf")), default=None)
        bm25 = {
            c.baseline: {"mean": c.base_mean, "p_holm": c.p_holm}
            for c in summary.comparisons
            if c.variant == RECOMMENDED and c.metric == m and c.baseline.startswith("bm25")
        }
        table.append(
            {
                "metric": m,
                "recommended": means.get((RECOMMENDED, m)),
                "untuned": means.get((untuned, m)),
                "best_single": means.get((BEST_SINGLE, m)),
                "p_holm_vs_untuned": None if vs_untuned is None else vs_untuned.p_holm,
                "p_holm_vs_best_single": vs_single.p_holm,
                "bm25_alone": bm25,
                # the configuration with the best test mean, known only in hindsight: what choosing cost
                "best_fixed": None if fixed is None else {"name": fixed, "mean": means.get((fixed, m))},
                "selection_cost": None if fixed is None else means[(fixed, m)] - means[(RECOMMENDED, m)],
            }
        )
    warnings = []
    rankers = [s.name for s in result.feature_sets if s.kind == SetKind.RANKER]
    below, not_above = collections.defaultdict(list), collections.defaultdict(list)  # metrics -> set names
    for name in rankers + [RECOMMENDED]:
        worse = tuple(m for m in metrics if _worse(comps.get((BEST_SINGLE, name, m))))
        level = tuple(m for m in metrics if not _better(comps.get((BEST_SINGLE, name, m))) and m not in worse)
        if worse:
            below[worse].append(name)
        if level:
            not_above[level].append(name)
    single_of_fold = {r["fold"]: _signed_feature(r["chose"]) for r in result.runs if r["feature_set"] == BEST_SINGLE}
    picked = "; ".join(
        f"`{k}` in {n} of {len(per_fold)} folds" for k, n in collections.Counter(single_of_fold.values()).items()
    )
    meanings = {
        "significantly BELOW": f"ranking by that one feature alone ({picked}) does better than a learned ranker on "
        "{these}; ship the single feature, or find what the ranker loses",
        "not significantly better than": "a learned ranker on {these} is not shown to beat ranking by that one feature "
        f"alone ({picked}); you could ship the single feature",
    }
    for found, text in ((below, "significantly BELOW"), (not_above, "not significantly better than")):
        for at, names in found.items():
            warnings.append(
                f"{', '.join(f'`{n}`' for n in names)} {'is' if len(names) == 1 else 'are'} {text} "
                f"the best single feature at {', '.join(at)}: "
                + meanings[text].format(these="this set" if len(names) == 1 else "these sets")
            )
    for name in rankers:
        if name == base:
            continue
        gone = [
            m for m in metrics if _better(comps.get((base, name, m))) and not _better(comps.get((BEST_SINGLE, name, m)))
        ]
        if gone:
            warnings.append(
                f"the lift of `{name}` over `{base}` at {', '.join(gone)} disappears against the best single feature: "
                f"`{name}` beats the learned ranker on `{base}` but is not shown to beat ranking by that one feature "
                f"alone ({picked}), so its neural features may only make up for what `{base}` loses against it"
            )
    recommended = counts.most_common(1)[0][0]
    return {
        "recommended": recommended,
        "chosen_in_folds": counts.most_common(1)[0][1],
        "n_folds": len(per_fold),
        "per_fold": per_fold,
        "all_choices": dict(counts),
        "untuned": untuned,
        "best_single_features": dict(singles),
        "metrics": table,
        "warnings": warnings,
        "level": LEVEL,
        "rule": selection["rule"],
        "how": how_chosen(selection["rule"], per_fold),
        "encoders": _encoders_of(result, recommended.split(" / ")[0]),
        "lighter": _lighter(result, per_fold, recommended.split(" / ")[0], means, metrics),
        "click_warnings": uncorrected_warnings(result.config.get("click_training") or {}),
    }


def _lighter(result, per_fold: dict, recommended: str, means: dict, metrics: list[str]) -> dict | None:
    """When the recommended set holds the column of a transformer encoder (:attr:`~ltrfeat.encoders.kind.
    EncoderKind.transformer`: hundreds of times the serving CPU per text), the feature set without one that the
    folds' selection could least tell from its pick: ``{"feature_set", "kept_in_folds"`` (folds whose inner
    cross-validation kept it within that fold's margin of the best: ``gap_to_best <= margin_z x se``), ``"n_folds",
    "means": {metric: test mean}}``; the first in plan order among equals. None otherwise, or when no fold kept one."""
    specs = (result.config.get("cross_fitting") or {}).get("encoders") or {}
    heavy = [name for name, spec in specs.items() if spec.get("transformer")]
    columns = {s.name: s.columns for s in result.feature_sets}

    def holds_heavy(feature_set: str) -> bool:
        return any(c.startswith(f"{name}_") for c in columns.get(feature_set, []) for name in heavy)

    if not heavy or not holds_heavy(recommended):
        return None
    light = [s.name for s in result.feature_sets if s.kind == SetKind.RANKER and not holds_heavy(s.name)]
    kept: collections.Counter[str] = collections.Counter()
    for r in per_fold.values():
        stats, z = (r.get("stats") or {}) | (r.get("aside") or {}), r.get("margin_z", 1.0)
        for name in light:  # rule joint names configurations SET/CANDIDATE, the others sets
            rows = [st for key, st in stats.items() if key == name or key.startswith(f"{name}/")]
            if any(st["gap_to_best"] <= max(z * st["se"], 0.0) for st in rows):
                kept[name] += 1
    if not kept:
        return None
    name = max(light, key=lambda n: kept[n])
    return {
        "feature_set": name,
        "kept_in_folds": kept[name],
        "n_folds": len(per_fold),
        "means": {m: means.get((name, m)) for m in metrics},
    }


def _encoders_of(result, feature_set: str) -> dict[str, dict] | None:
    """{name: {"spec": its ``ablate --encoder`` text, "trained": bool}} of the cross-fitted encoders whose columns
    ``feature_set`` holds; None without cross-fitted encoders (LETOR folds)."""
    specs = (result.config.get("cross_fitting") or {}).get("encoders")
    if specs is None:
        return None
    columns: list[str] = next((s.columns for s in result.feature_sets if s.name == feature_set), [])
    return {name: spec for name, spec in specs.items() if any(c.startswith(f"{name}_") for c in columns)}


_SIMPLEST = (
    "(complexity = the model fitted: a single feature before a linear ranker before trees, then the number of "
    "features it uses -- a single feature is 1 whichever set offered it; among equally complex ones the first in "
    "plan order unless another leads it by more than one standard error)"
)
_GROWING = (
    "the number of distinct configurations close to the best (Holm's step-down over their effective number: "
    "1 for one, 2.0 for 7 independent ones; copies and near-copies count about once)"
)


def _cost(charged: dict, name: str) -> str:
    """`` (N features)``: the complexity the rule charged ``name``, when the fold recorded it."""
    return f" ({charged[name]} feature{'s' if charged[name] != 1 else ''})" if name in charged else ""


def how_chosen(rule: str, per_fold: dict) -> list[str]:
    """In words, how the rule chose in each fold (from the inner-CV statistics of the recommendation)."""
    lines = []
    if rule == "joint":
        n = max((r.get("n_configurations", 0) for r in per_fold.values()), default=0)
        lines.append(
            f"rule joint: one choice per fold among {n} feature set / candidate configurations, the simplest "
            f"{_SIMPLEST} that inner cross-validation cannot tell from the best: within z standard errors, z growing "
            f"with {_GROWING}, so a more complex configuration wins only by a lead larger than the noise of picking "
            "the best of many"
        )
    elif rule == "one-se":
        lines.append(
            "rule one-se: per feature set the simplest candidate within one standard error of its best, "
            "then the first feature set (plan order) within one standard error of the best set"
        )
    elif rule == "tiered":
        lines.append(
            "rule tiered: per feature set the simplest candidate within one standard error of its best, then the "
            f"simplest of those and of their sets' simpler candidates {_SIMPLEST} within z standard errors of the best "
            f"set, z growing with {_GROWING}"
        )
    else:
        lines.append("rule best: the highest inner-CV criterion, however small the lead")
    for fold, r in per_fold.items():
        stats = r.get("stats") or {}
        name = f"{r['feature_set']}/{r['candidate']}" if f"{r['feature_set']}/{r['candidate']}" in stats else None
        name = name or (r["feature_set"] if r["feature_set"] in stats else None)
        best = r.get("best") or max(stats, key=lambda n: stats[n]["mean"], default=None)
        if name is None or best is None:
            continue
        charged = r.get("complexity") or {}
        text = (
            f"fold {fold}: {r['feature_set']} / {r['candidate']}{_cost(charged, name)} inner-CV "
            f"{stats[name]['mean']:.4f}"
        )
        if best != name:
            z = r.get("margin_z", 1.0)
            text += (
                f"; best {best}{_cost(charged, best)} {stats[best]['mean']:.4f} leads by {stats[name]['gap_to_best']:.4f}, "
                f"within {z:.2f} x SE {stats[name]['se']:.4f} = {z * stats[name]['se']:.4f}"
            )
        else:
            text += " (the best, and no simpler configuration within the margin)"
        lines.append(text)
    return lines


def _ship_lines(v: dict) -> list[str]:
    """The commands that train what to ship, each on its own line to run as printed; with ``v["deploy_to"]`` (an
    LTR engine), only candidates it can run on features it computes, then the export. In text mode
    (``v["encoders"]`` not None) the ranker trains on ``ablate --write-features``' out-of-fold features
    (``v["features_dir"]``, DIR when not written), restricted to the recommended set's columns."""
    target, encoders, written = v.get("deploy_to"), v.get("encoders"), v.get("features_dir")
    if encoders is None:
        data = "TRAIN --valid VALID"
    else:
        columns = ",".join(["lexical", *(f"encoder:{name}" for name in encoders)])
        features = "DIR/features.letor" if written is None else shlex.quote(str(Path(written) / "features.letor"))
        data = f"{features} --features {columns}"
    train = f"    ltrfeat train-ranker {data} --select"
    first = (
        ["    (rerun ltrfeat ablate with --write-features DIR: every judged pair with out-of-fold encoder columns)"]
        if encoders is not None and written is None
        else []
    )
    if target is None:
        return [
            "  to ship: the same candidates and rule choose on all your judged queries:",
            *first,
            f"{train} --out ranker.txt",
        ]
    runs = registry.deployable(target)
    head = (
        f"  to ship on {target}: the same rule chooses among the candidates {target} can run ({', '.join(runs)}), "
        f"on the features it computes"
    )
    blocked = sorted({r["candidate"] for r in v["per_fold"].values()} - set(runs))
    if blocked:
        head += f" ({', '.join(blocked)}, chosen in some folds here, cannot run there)"
    return [
        head + ":",
        *first,
        f"{train} --deployable {target} --out ranker.txt",
        f"    ltrfeat export-ranker ranker.txt --to {target} --out ltr.json",
    ]


def _encoder_ship_line(v: dict) -> str | None:
    """How to ship the recommended set's encoders: each trained once as every fold trained it, on all the judged
    pairs, and served beside the ranker."""
    encoders = v.get("encoders") or {}
    if not encoders:
        return None
    trained = {name: e["spec"] for name, e in encoders.items() if e["trained"]}
    clicked = {name: encoders[name]["clicks"] for name in trained if encoders[name].get("clicks")}
    steps = [
        f"ltrfeat train-encoder PAIRS --spec {spec} --out {name}.ltrenc" for name, spec in trained.items()
        if name not in clicked
    ]  # fmt: skip
    said = (
        f"{'; '.join(steps)} trains each as every fold trained it, on all your judged pairs (with this "
        "ablation's reading options, --collection and --encoder-option; its --cache skips the pre-training); "
        if steps
        else ""
    )
    for name, record in clicked.items():  # trained on a click log (ablate --click-log): train-encoder reads it
        model, _, loss = trained[name].split("+")[0].split("@")[0].partition(":")
        said += (
            f"ltrfeat train-encoder {record.get('source', 'LOG')} --debias {record.get('debias', 'none')} "
            f"--model {model}{f' --loss {loss}' if loss else ''} --out {name}.ltrenc trains {name} on the click log "
            "as the folds did (with the ablation's --click-docs as --docs, --click-queries as --queries, --clip, "
            "--encoder-option values and --propensity: FILE as it is, em as --propensity-method em; without the "
            "spec's pre-training); "
        )
    serve = " ".join(f"--encoder {name}={name}.ltrenc" if name in trained else f"--encoder {name}" for name in encoders)
    return "  its encoders: " + said + f"ltrfeat serve --ranker MODEL {serve} --corpus-stats DIR/corpus.npz"


def verdict_lines(v: dict) -> list[str]:
    """The verdict as plain-text lines (the CLI prints them last; report.md shows them first)."""
    lines = [
        f"verdict: recommended {v['recommended']} (chosen on training queries by inner cross-validation in "
        f"{v['chosen_in_folds']} of {v['n_folds']} folds"
        + (
            f"; all choices: {', '.join(f'{k} x{n}' for k, n in v['all_choices'].items())})"
            if len(v["all_choices"]) > 1
            else ")"
        )
    ]
    singles = ", ".join(f"{k} x{n}" for k, n in v["best_single_features"].items())
    for row in v["metrics"]:
        text = f"  {row['metric']}: recommended {row['recommended']:.4f}"
        if row["untuned"] is not None:
            text += f" vs untuned `{v['untuned']}` {row['untuned']:.4f} (p Holm {_fmt(row['p_holm_vs_untuned'])})"
        text += f" vs best single feature {row['best_single']:.4f} (p Holm {_fmt(row['p_holm_vs_best_single'])})"
        text += "".join(
            f" vs {name} alone {b['mean']:.4f} (p Holm {_fmt(b['p_holm'])})"
            for name, b in row.get("bm25_alone", {}).items()
        )
        lines.append(text)
    lines.append(f"  best single feature per fold (chosen on training queries): {singles}")
    for row in v["metrics"]:
        if row.get("best_fixed"):
            lines.append(
                f"  selection cost at {row['metric']}: the procedure's expected score (outer folds) "
                f"{row['recommended']:.4f} vs the best fixed configuration in hindsight `{row['best_fixed']['name']}` "
                f"{row['best_fixed']['mean']:.4f} (cost {row['selection_cost']:+.4f}; that one is picked on the test "
                "queries, for reference only)"
            )
    lines += [f"  how: {line}" for line in v.get("how", [])]
    lines += _ship_lines(v)
    encoders = _encoder_ship_line(v)
    if encoders is not None:
        lines.append(encoders)
    lighter = v.get("lighter")
    if lighter:
        lines.append(
            f"  lighter: `{lighter['feature_set']}` needs no transformer encoder when served (the recommended set's "
            "costs hundreds of times the CPU per text); inner cross-validation could not tell it from the fold's "
            f"pick in {lighter['kept_in_folds']} of {lighter['n_folds']} folds; on the test queries "
            + ", ".join(
                f"{m} {mean:.4f} vs {row['recommended']:.4f}"
                for m, mean, row in ((r["metric"], lighter["means"].get(r["metric"]), r) for r in v["metrics"])
                if mean is not None and row["recommended"] is not None
            )
            + " recommended"
        )
    ties = v.get("tie_warnings") or []  # set by the report (ltrfeat.experiments.report.write_report)
    holm = [w for w in v["warnings"] if w not in ties]
    lines += [f"warning: {w} (Holm-adjusted, level {v['level']})" for w in holm]
    if not holm:
        lines.append(
            f"no {'ranker ' if ties else ''}warning: every learned ranker is significantly better than the best "
            "single feature"
        )
    return lines + [f"warning: {w}" for w in ties + v.get("click_warnings", [])]
