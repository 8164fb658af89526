"""Propensity curves estimated from generated click logs against the simulated truth, by log size.

Worlds (``ltrfeat.datasets.synth.generate_world``: 60 judged queries, 800 products), examination P(rank r) = r^-e
for e = 0, 0.8 and 1.5, stray clicks at 0.005 per shown result. A log is its number of click-log queries and their
median number of sessions (log-normal, one user each): 10 (a long tail of rare queries, the generated world's
default) or 100 (head queries, the traffic a propensity is usually estimated from) -- ``LOGS``. The impression-level log ``clicks_impressions.tsv`` is read with
``read_click_log`` and the curve of ranks 1-10 estimated by each estimator of ``ltrfeat clicks propensity``
(``harvest``, ``em``), harvest with a 95% bootstrap interval over queries (``--resamples``; on logs of up to
``--interval-up-to`` click queries, larger ones are measured without one; ``em`` without one unless
``--em-resamples``: its bootstrap costs three times harvest's and its point errors already decide it). Per world seed (``--seeds``): the
relative error per rank, whether it is within +-10%, and whether the interval holds the truth.

``information_limit``: the relative standard deviation, per rank, of an oracle that knows every pair's
attractiveness and the stray-click rate (Poisson: sqrt(C_k) / (C_k - 0.005 N_k), with C_k clicks and N_k
impressions at rank k). No estimator from the log can be much more precise: where it exceeds 5%, +-10% at that rank
fails for a fair share of logs whatever the estimator.

``holds_at``: per exponent and estimator, the first log (of ``LOGS``, fewest impressions first) whose every seed is
within +-10% at ranks 1-10.

Run: python benchmarks/clicks_propensity.py [--seeds 0 1 2] [--exponents 1.5 0.8 0] [--rows ROWS.jsonl]
Writes benchmarks/results/clicks_propensity.json after every log (``--rows``: every measured row is appended there
and a rerun skips what it holds, so runs for different exponents can share one file).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks")]

EXPONENTS = (0.0, 0.8, 1.5)
ESTIMATORS = ("harvest", "em")
# (click-log queries, median sessions per query) per exponent, fewest impressions first
LOGS = {
    1.5: [(800, 10), (3000, 10), (9000, 10), (3000, 100), (27000, 10), (9000, 100)],
    0.8: [(800, 10), (3000, 10), (800, 100), (3000, 100)],
    0.0: [(800, 10)],
}
RANKS = 10


def world_log(exponent: float, click_queries: int, sessions: int, seed: int, work: Path):
    """The impression-level click log of a generated world (median ``sessions`` per click-log query), read as
    ``ltrfeat clicks propensity`` reads it."""
    from ltrfeat.clicks.log import read_click_log
    from ltrfeat.datasets.synth import generate_world, write_world

    world = generate_world(
        seed=seed,
        n_queries=60,
        n_docs=800,
        n_click_queries=click_queries,
        examination_exponent=exponent,
        median_sessions=sessions,
    )
    write_world(world, work)
    return read_click_log(work / "clicks_impressions.tsv", docs=work / "docs.tsv")


def information_limit(log, stray: float) -> list[float]:
    """The oracle's relative standard deviation per rank 1..10 (see the module docstring)."""
    rows = log.positioned[log.positioned["position"] <= RANKS]
    by_rank = rows.groupby("position")[["impressions", "clicks"]].sum().reindex(range(1, RANKS + 1), fill_value=0)
    examined = (by_rank["clicks"] - stray * by_rank["impressions"]).to_numpy(np.float64)
    sd = np.sqrt(by_rank["clicks"].to_numpy(np.float64)) / np.maximum(examined, 1e-12)
    return [round(float(v), 4) for v in sd]


def log_label(click_queries: int, sessions: int) -> str:
    """How the results name a log: ``"3000x100"``."""
    return f"{click_queries}x{sessions}"


def measure(exponents, logs, seeds, *, resamples, work: Path, rows=(), done=lambda rows: None, log=print) -> list[dict]:
    """One row per (exponent, log, seed, estimator): the curve's errors against the truth; ``logs[e]`` the (click
    queries, median sessions) of each log; ``resamples(size, method)`` the bootstrap resamples of a log of ``size``
    click queries; ``rows`` measured already (skipped), ``done(rows)`` called after every log."""
    from clicks_debias import curve_accuracy
    from ltrfeat.clicks.propensity import estimate_propensity
    from ltrfeat.datasets.synth._clicks import STRAY_CLICK

    rows = list(rows)
    have = {(r["exponent"], r["click_queries"], r["median_sessions"], r["seed"]) for r in rows}
    for exponent, (size, sessions) in ((e, s) for e in exponents for s in logs[e]):
        for seed in seeds:
            if (exponent, size, sessions, seed) in have:
                continue
            click_log = world_log(exponent, size, sessions, seed, work / f"e{exponent}-{size}x{sessions}-{seed}")
            truth = np.arange(1, RANKS + 1, dtype=float) ** -exponent
            limit = information_limit(click_log, STRAY_CLICK)
            for method in ESTIMATORS:
                start = time.process_time()
                draws = resamples(size, method)
                curve = estimate_propensity(click_log, method=method, seed=seed, resamples=draws)
                accuracy = curve_accuracy(curve, truth, intervals=bool(draws))
                rows.append(
                    {
                        "exponent": exponent,
                        "click_queries": size,
                        "median_sessions": sessions,
                        "seed": seed,
                        "estimator": method,
                        "impressions": int(click_log.totals["impressions"].sum()),
                        "clicks": int(click_log.totals["clicks"].sum()),
                        **accuracy,
                        "information_limit": limit,
                        "cpu_seconds": round(time.process_time() - start, 1),
                    }
                )
                inside = np.asarray((curve.lower <= truth) & (truth <= curve.upper))
                log(
                    f"e={exponent} {size} click queries x {sessions} sessions seed {seed} {method}: max |error| "
                    f"{max(map(abs, accuracy['relative_error'])):.1%}, within 10% at ranks "
                    f"{[k + 1 for k, ok in enumerate(accuracy['within_10pct']) if ok]}"
                    f", truth in interval at {int(inside.sum())}/{RANKS}"
                )
            done(rows)
    return rows


def summary(rows: list[dict]) -> dict:
    """Per exponent and estimator: the first log (of ``LOGS``) every seed holds +-10% at ranks 1-10 in (None: none
    measured), and per log the worst error per rank and the interval's coverage."""
    out: dict = {}
    for exponent in sorted({r["exponent"] for r in rows}):
        for method in ESTIMATORS:
            mine = [r for r in rows if r["exponent"] == exponent and r["estimator"] == method]
            logs = [
                log for log in LOGS[exponent] if any((r["click_queries"], r["median_sessions"]) == log for r in mine)
            ]
            by_log = {}
            for log in logs:
                these = [r for r in mine if (r["click_queries"], r["median_sessions"]) == log]
                errors = np.abs([r["relative_error"] for r in these])
                inside = np.array([r["truth_inside_interval"] for r in these if r["truth_inside_interval"]])
                by_log[log_label(*log)] = {
                    "worst_error": [round(float(v), 4) for v in errors.max(axis=0)],
                    "all_within_10pct": bool((errors <= 0.1).all()),
                    "coverage": round(float(inside.mean()), 3) if len(inside) else None,
                }
            holds = [label for label, found in by_log.items() if found["all_within_10pct"]]
            out[f"e{exponent}/{method}"] = {"holds_at": holds[0] if holds else None, "logs": by_log}
    return out


def quoted_lines(figures: dict) -> list[str]:
    """The lines docs/clicks.md quotes from the results: per exponent, estimator and sessions per query the worst
    |error| at ranks 1-10 over the seeds per number of click queries, the interval's coverage and the information
    limit at rank 10."""
    runs = figures["runs"]
    sizes = sorted({r["click_queries"] for r in runs})
    lines = [
        "| e | estimator | sessions per query | " + " | ".join(f"{s:,} click queries" for s in sizes) + " |",
        "|---|---|---:|" + "---:|" * len(sizes),
    ]
    for key, found in figures["summary"].items():
        exponent, method = key[1:].split("/")
        for sessions in sorted({int(label.split("x")[1]) for label in found["logs"]}):
            cells = [
                f"{max(found['logs'][label]['worst_error']):.0%}" if label in found["logs"] else ""
                for label in (log_label(s, sessions) for s in sizes)
            ]
            lines.append(f"| {exponent} | {method} | {sessions} | " + " | ".join(cells) + " |")
    inside = [
        v
        for r in runs
        if r["estimator"] == "harvest" and r["truth_inside_interval"]
        for v in r["truth_inside_interval"]
    ]
    lines.append(f"harvest's 95% intervals held the truth at {sum(inside)} of {len(inside)} (log, seed, rank) points")
    for log in LOGS[1.5]:
        limits = [
            r["information_limit"][RANKS - 1]
            for r in runs
            if r["exponent"] == 1.5 and (r["click_queries"], r["median_sessions"]) == log
        ]
        if limits:
            lines.append(
                f"at e = 1.5 on {log[0]:,} click queries x {log[1]} sessions: {min(limits):.0%} to {max(limits):.0%}"
                " at rank 10"
            )
    return lines


def main(argv=None) -> None:
    from _common import write_results

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--exponents", type=float, nargs="+", default=[1.5, 0.8, 0.0])
    parser.add_argument("--resamples", type=int, default=100)
    parser.add_argument("--em-resamples", type=int, default=0)
    parser.add_argument("--interval-up-to", type=int, default=3000)
    parser.add_argument("--rows", type=Path, default=None)
    args = parser.parse_args(argv)
    logs = {e: LOGS[e] for e in args.exponents}
    known = (
        [json.loads(line) for line in args.rows.read_text().splitlines()] if args.rows and args.rows.exists() else []
    )

    def done(rows):
        if args.rows is not None:
            args.rows.write_text("".join(json.dumps(r) + "\n" for r in rows))
        measured = sorted({r["exponent"] for r in rows})
        setup = {
            "world": {"n_queries": 60, "n_docs": 800, "stray_click": 0.005},
            "seeds": args.seeds,
            "logs": {str(e): [log_label(*log) for log in LOGS[e]] for e in measured},
            "resamples": {"harvest": args.resamples, "em": args.em_resamples},
            "interval_up_to": args.interval_up_to,
            "level": 0.95,
        }
        write_results("clicks_propensity", {"setup": setup, "runs": rows, "summary": summary(rows)})

    with tempfile.TemporaryDirectory() as tmp:
        rows = measure(
            args.exponents,
            logs,
            args.seeds,
            resamples=lambda size, method: (
                0 if size > args.interval_up_to else args.resamples if method == "harvest" else args.em_resamples
            ),
            work=Path(tmp),
            rows=known,
            done=done,
        )
    done(rows)


if __name__ == "__main__":
    main()
