"""Run every benchmark (``make bench``) and write ``results/SUMMARY.md``: each target of the issues as met
or missed, with its ratio.

Each benchmark runs as a subprocess within a time budget (its own limit and what is left of the total);
its output is shown and kept in ``results/logs/<script>.log``; it writes ``results/<name>.json`` itself.
Benchmarks whose data set is absent are skipped. The summary reads the results files, marks figures
from an earlier run as such, and lists the scaling exponents and the profiles. The exit status is
non-zero only when a benchmark crashed: a missed target or a timed-out benchmark is reported, not fatal.
``quality_homedepot.py`` (about 28 minutes) is not part of this run: ``make bench-quality``; the scale simulation
(``bench_scale_sim.py``, about 10 minutes at 10k pairs, 30 with 100k) runs only when named: ``--only bench_scale_sim``;
it re-measures the small sizes with the settings of the 1M-pair point and keeps that point (``--add``).

    python benchmarks/run_all.py                      # the issue sizes; 9-17 minutes on 2 cores, 30 at most
    python benchmarks/run_all.py --quick              # smaller sizes, for a loaded machine
    python benchmarks/run_all.py --only bench_letor,bench_scaling
    python benchmarks/run_all.py --summary-only       # rewrite SUMMARY.md from the results files
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from collections.abc import Callable

BENCH_DIR = Path(__file__).resolve().parent
ROOT = BENCH_DIR.parent
RESULTS = BENCH_DIR / "results"
DATASETS = ROOT.parent / "shared" / "datasets"
GIB = 1024**3


@dataclass(frozen=True)
class Benchmark:
    """One script, the results file it writes, its arguments per profile and its own time limit.

    ``budget_s`` (full, quick) makes the benchmark elastic: it gets ``--budget`` = that many seconds, or less
    when the run's time left minus the ``expected_s`` of the benchmarks after it is smaller.
    """

    script: str
    results: str
    full: tuple[str, ...] = ()
    quick: tuple[str, ...] = ()
    timeout_s: float = 600.0
    needs: tuple[str, ...] = ()  # data sets under shared/datasets
    expected_s: float = 60.0  # typical seconds of the full profile on 2 idle cores (for planning only)
    budget_s: tuple[float, float] | None = None
    default: bool = True  # False: run only when named with --only


# Targets first, then the elastic scaling curves, then the benchmarks without a target.
BENCHMARKS = (
    Benchmark("bench_letor.py", "bench_letor", quick=("--rows", "30000"), expected_s=150),
    Benchmark("bench_lexical.py", "bench_lexical", timeout_s=300, needs=("home_depot",), expected_s=30),
    Benchmark("bench_encoders.py", "bench_encoders", needs=("home_depot",), expected_s=180),
    Benchmark(
        "bench_rankers.py",
        "bench_rankers",
        full=("--rows", "300000", "--rounds", "25", "--threads", "1"),
        quick=("--rows", "30000", "--rounds", "25", "--threads", "1"),
        expected_s=120,
    ),
    Benchmark("bench_end_to_end.py", "end_to_end", quick=("--quick-only",), timeout_s=900, expected_s=360),
    Benchmark("profile_stages.py", "profiles", expected_s=70),
    Benchmark("bench_scaling.py", "scaling", quick=("--quick",), timeout_s=1000, budget_s=(780, 240)),
    Benchmark("bench_text.py", "text", timeout_s=120, needs=("home_depot",), expected_s=5),
    Benchmark("bench_tables.py", "tables", timeout_s=120, needs=("home_depot",), expected_s=10),
    Benchmark("bench_stats.py", "stats", timeout_s=120, expected_s=5),
    Benchmark(
        "bench_retrieval.py", "retrieval", quick=("--docs", "20000", "--queries", "300"), timeout_s=300, expected_s=40
    ),
    Benchmark("bench_onnx.py", "bench_onnx", timeout_s=300, expected_s=15),
    Benchmark("bench_serve.py", "bench_serve", quick=("100",), timeout_s=300, expected_s=30),
    Benchmark("bench_ablation_threads.py", "ablation_threads", timeout_s=300, needs=("letor4_mq2008",), expected_s=20),
    Benchmark("bench_dask.py", "bench_dask", full=("--pairs", "50000"), quick=("--pairs", "20000"), expected_s=40),
    Benchmark("bench_deepmatch.py", "bench_deepmatch", needs=("home_depot",), expected_s=150),
    Benchmark("clicks_aggregate.py", "clicks_aggregate", quick=("--rows", "1000000"), timeout_s=1200, expected_s=240),
    Benchmark(  # about 10 minutes even at its small sizes: only with --only bench_scale_sim
        "bench_scale_sim.py",
        "scale_simulation",
        full=("--sizes", "10000,100000", "--add"),
        quick=("--sizes", "10000", "--add"),
        timeout_s=3600,
        expected_s=1700,
        default=False,
    ),
)


def chosen(only: set[str], skip: set[str]) -> list[Benchmark]:
    """The benchmarks to run: those named in ``only`` (else every default one), less those in ``skip``."""
    return [
        b
        for b in BENCHMARKS
        if (Path(b.script).stem in only if only else b.default) and Path(b.script).stem not in skip
    ]


def arguments(bench: Benchmark, *, quick: bool, time_left: float, reserved: float) -> list[str]:
    """The benchmark's arguments; an elastic one gets ``--budget`` within ``time_left - reserved``."""
    args = list(bench.quick if quick else bench.full)
    if bench.budget_s is not None:
        nominal = bench.budget_s[1 if quick else 0]
        args += ["--budget", f"{max(60.0, min(nominal, time_left - reserved)):.0f}"]
    return args


# -- targets ------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Measured:
    value: float | None
    note: str = ""
    lower_bound: bool = False  # the value is a lower bound of the real figure


@dataclass(frozen=True)
class Target:
    """A goal of an issue: ``measure(figures)`` compared with ``goal`` by ``op`` (">=" or "<=")."""

    name: str
    results: str
    measure: Callable[[dict], Measured]
    op: str
    goal: float
    unit: str  # "x", "s", "GiB" or "" (plain number)


def lookup(figures: dict, path: str):
    """``figures["a"]["b"]`` for ``"a.b"``; None when any part is missing."""
    value = figures
    for part in path.split("."):
        if not isinstance(value, dict) or part not in value:
            return None
        value = value[part]
    return value


def figure(path: str, *, note: str = "", note_path: str | None = None, note_unit: str = "x") -> Callable:
    """A measure reading ``path``; ``note_path`` adds a second figure to the note."""

    def measure(figures: dict) -> Measured:
        extra = lookup(figures, note_path) if note_path else None
        return Measured(lookup(figures, path), note.format(fmt(extra, note_unit)) if extra is not None else "")

    return measure


def scaling_point(stage: str, size: int, key: str, scale: float = 1.0) -> Callable:
    """A measure reading one scaling point; when it was not measured the note names the largest that was."""

    def measure(figures: dict) -> Measured:
        points = lookup(figures, f"stages.{stage}.points") or []
        for point in points:
            if point["size"] == size and point["status"] == "ok":
                return Measured(point[key] * scale)
        ok = [p for p in points if p["status"] == "ok"]
        status = next((p["status"] for p in points if p["size"] == size), "not in this profile")
        largest = (
            f"; largest measured: {ok[-1]['size']:,} at {fmt(ok[-1][key] * scale, 'GiB' if scale != 1 else 's')}"
            if ok
            else ""
        )
        return Measured(None, f"{size:,}: {status}{largest}")

    return measure


def run_time(name: str) -> Callable:
    """A measure reading an end-to-end run's wall time; the note gives its status when it has none."""

    def measure(figures: dict) -> Measured:
        run = figures.get(name, {})
        return Measured(run.get("wall_s"), "" if run.get("status") == "ok" else run.get("status", "absent"))

    return measure


def ablation_time(figures: dict) -> Measured:
    run = figures.get("homedepot_ablation", {})
    if run.get("status") != "ok":
        return Measured(None, run.get("status", "not run"))
    return Measured(run["wall_s"] / 60, run.get("note", ""), lower_bound="lower bound" in run.get("note", ""))


TARGETS = (
    Target(
        "LETOR reader rows/s vs scikit-learn load_svmlight_file",
        "bench_letor",
        figure("speed_ratio_ours_over_sklearn"),
        ">=",
        2,
        "x",
    ),
    Target("LETOR reader peak memory / float32 matrix", "bench_letor", figure("peak_over_matrix"), "<=", 2.5, "x"),
    Target(
        "BM25 vs rank_bm25 (same tokens, scoring)",
        "bench_lexical",
        figure("score_vs_rank_bm25", note="end-to-end from raw text: {}", note_path="end_to_end_vs_rank_bm25"),
        ">=",
        50,
        "x",
    ),
    Target(
        "BM25 vs bm25s (same tokens, scoring)",
        "bench_lexical",
        figure("score_vs_bm25s", note="end-to-end from raw text: {}", note_path="end_to_end_vs_bm25s"),
        ">=",
        1,
        "x",
    ),
    Target(
        "full lexical set, 74k Home Depot pairs (fit + transform)",
        "bench_lexical",
        figure("full_set_total_s"),
        "<=",
        10,
        "s",
    ),
    Target("CLSM texts/s vs MiniLM", "bench_encoders", figure("ratios.clsm_vs_minilm"), ">=", 100, "x"),
    Target("DSSM texts/s vs MiniLM", "bench_encoders", figure("ratios.dssm_vs_minilm"), ">=", 300, "x"),
    Target(
        "CLSM texts/s vs dense one-hot Conv1d CLSM", "bench_encoders", figure("ratios.clsm_vs_dense"), ">=", 20, "x"
    ),
    Target("CLSM training epoch, 50k pairs, J=4", "bench_encoders", figure("train.epoch_seconds"), "<=", 60, "s"),
    Target(
        "LambdaMART wrapper fit time / raw lightgbm.train (median)",
        "bench_rankers",
        figure(
            "fit_ratio_median",
            note="wrapper's own work: {} of the raw fit",
            note_path="wrapper_own_over_raw_fit",
            note_unit="%",
        ),
        "<=",
        1.05,
        "x",
    ),
    Target(
        "extraction of 1M pairs, lexical + CLSM: peak RSS",
        "scaling",
        scaling_point("extraction", 1_000_000, "peak_rss_bytes", 1 / GIB),
        "<=",
        2,
        "GiB",
    ),
    Target(
        "extraction time growth exponent (near-linear)",
        "scaling",
        figure(
            "stages.extraction.time_exponent",
            note="between the two largest sizes: {}",
            note_path="stages.extraction.time_exponent_largest_two",
            note_unit="",
        ),
        "<=",
        1.15,
        "",
    ),
    Target(
        "click-log aggregation of 10M impression rows: peak RSS",
        "clicks_aggregate",
        figure("peak_rss_gib", note="vs a full pandas read: {}", note_path="peak_rss_ratio_streaming_over_naive"),
        "<=",
        2,
        "GiB",
    ),
    Target("ltrfeat demo wall time", "end_to_end", run_time("demo"), "<=", 300, "s"),
    Target("ltrfeat demo --quick wall time", "end_to_end", run_time("demo_quick"), "<=", 60, "s"),
    Target("Home Depot ablation wall time (minutes)", "end_to_end", ablation_time, "<=", 45, ""),
)


def fmt(value, unit: str) -> str:
    if isinstance(value, str):
        return value
    if unit == "x":
        return f"{value:,.2f}x" if abs(value) < 100 else f"{value:,.0f}x"
    if unit == "%":
        return f"{100 * value:.1f} %"
    if unit == "s":
        return f"{value:,.1f} s"
    if unit == "GiB":
        return f"{value:.2f} GiB"
    return f"{value:,.2f}"


@dataclass
class Row:
    name: str
    goal: str
    measured: str
    vs_goal: str
    status: str
    note: str
    source: str = ""


def evaluate(target: Target, figures: dict | None) -> Row:
    """Met, missed or not measured; ``vs_goal`` > 1 means within the goal (headroom), < 1 short of it."""
    goal = f"{'≥' if target.op == '>=' else '≤'} {fmt(target.goal, target.unit)}"
    if figures is None:
        return Row(target.name, goal, "—", "—", "not measured", f"no results/{target.results}.json")
    m = target.measure(figures.get("figures") or {})
    if m.value is None or isinstance(m.value, bool) or not isinstance(m.value, (int, float)):
        return Row(target.name, goal, "—", "—", "not measured", m.note)
    value = float(m.value)
    if target.op == ">=":
        vs_goal, met = (value / target.goal if target.goal else float("inf")), value >= target.goal
    else:
        vs_goal, met = (target.goal / value if value > 0 else float("inf")), value <= target.goal
    status = "met" if met else "missed"
    if m.lower_bound and met:
        status = "unknown (lower bound within goal)"
    measured = ("≥ " if m.lower_bound else "") + fmt(value, target.unit)
    return Row(target.name, goal, measured, f"{vs_goal:.2f}", status, m.note)


# -- running -------------------------------------------------------------------------------------------------
@dataclass
class Outcome:
    benchmark: Benchmark
    status: str  # ok, crashed (exit N), timed out, skipped: ...
    seconds: float = 0.0
    command: list[str] = field(default_factory=list)

    @property
    def crashed(self) -> bool:
        return self.status.startswith("crashed")


def run_logged(cmd: list[str], log: Path, *, timeout: float, env: dict) -> tuple[int | None, float]:
    """Run ``cmd``, echoing and logging its output; returns (exit code or None on timeout, seconds)."""
    log.parent.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    with open(log, "w") as out:
        proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        killer = threading.Timer(timeout, proc.kill)
        killer.start()
        try:
            for line in proc.stdout:
                out.write(line)
                sys.stdout.write("    " + line)
                sys.stdout.flush()
            proc.wait()
        finally:
            killer.cancel()
    seconds = time.perf_counter() - start
    timed_out = proc.returncode is not None and proc.returncode < 0 and seconds >= timeout
    return (None if timed_out else proc.returncode), seconds


def run_benchmark(
    bench: Benchmark,
    *,
    quick: bool,
    time_left: float,
    reserved: float = 0.0,
    datasets: Path | None = None,
    results: Path | None = None,
) -> Outcome:
    """Run one benchmark within ``time_left`` seconds (``reserved`` of them kept for the ones after it)."""
    datasets, results = datasets or DATASETS, results or RESULTS
    missing = [name for name in bench.needs if not (datasets / name).is_dir()]
    if missing:
        return Outcome(bench, f"skipped: data set {', '.join(missing)} absent under {datasets}")
    if time_left < 30:
        return Outcome(bench, "skipped: the time budget is spent")
    timeout = min(bench.timeout_s, time_left)
    cmd = [
        sys.executable,
        str(BENCH_DIR / bench.script),
        *arguments(bench, quick=quick, time_left=time_left, reserved=reserved),
    ]
    env = dict(os.environ, PYTHONPATH=str(ROOT), CI="1")
    code, seconds = run_logged(cmd, results / "logs" / f"{Path(bench.script).stem}.log", timeout=timeout, env=env)
    if code is None:
        status = f"timed out after {timeout:.0f} s"
    elif code != 0:
        status = f"crashed (exit {code})"
    else:
        status = "ok"
    return Outcome(bench, status, seconds, cmd)


# -- the summary ---------------------------------------------------------------------------------------------
def load_results(names, results: Path | None = None) -> dict[str, dict]:
    """``{name: parsed results file}`` for the files that exist and parse, with ``_mtime``."""
    results, out = results or RESULTS, {}
    for name in names:
        path = results / f"{name}.json"
        try:
            out[name] = json.loads(path.read_text()) | {"_mtime": path.stat().st_mtime}
        except (OSError, json.JSONDecodeError):
            continue
    return out


def freshness(data: dict | None, since: float | None) -> str:
    if data is None:
        return "absent"
    if since is not None and data["_mtime"] >= since:
        return "this run"
    head = (data.get("environment") or {}).get("git_head") or "?"
    return f"{'earlier run ' if since is not None else ''}{_when(data['_mtime'])} @{head[:7]}"


def _when(timestamp: float) -> str:
    return dt.datetime.fromtimestamp(timestamp).strftime("%Y-%m-%d %H:%M")


def ratio_figures(figures, prefix: str = "") -> list[tuple[str, float]]:
    """Every numeric figure whose own name (not its parents') says it is a ratio (ratio, speedup, _vs_, _over_)."""
    out = []
    for key, value in (figures or {}).items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            out += ratio_figures(value, name + ".")
        elif (
            isinstance(value, (int, float))
            and not isinstance(value, bool)
            and not name.startswith("targets.")
            and "diff" not in key
            and any(word in key for word in ("ratio", "speedup", "_vs_", "_over_"))
        ):
            out.append((name, float(value)))
    return out


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    clean = lambda cell: str(cell).replace("|", "\\|").replace("\n", " ")  # noqa: E731
    return ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)] + [
        "| " + " | ".join(clean(c) for c in row) + " |" for row in rows
    ]


def runs_record(outcomes: list[Outcome], *, profile: str, started: float) -> dict:
    """What ``results/run_all.json`` keeps of a run, for the summary (also when rewritten later)."""
    return {
        "profile": profile,
        "started": started,
        "outcomes": [
            {
                "script": o.benchmark.script,
                "status": o.status,
                "seconds": o.seconds,
                "arguments": " ".join(o.command[2:]),
            }
            for o in outcomes
        ],
    }


def summary_markdown(results: dict[str, dict], runs: dict | None, *, since: float | None, profile: str | None) -> str:
    """The SUMMARY.md text: targets, benchmark runs (``runs_record``), scaling, end-to-end, profiles and every
    ratio. ``profile`` None: rewritten from the results files, outside a run."""
    lines = ["# Benchmark summary", ""]
    newest = max(results.values(), key=lambda r: r["_mtime"], default={})
    env = newest.get("environment") or {}
    run = (
        f"Profile: **{profile}**."
        if profile
        else "Rewritten from the results files (`--summary-only`): "
        "the results column says when each figure was measured."
    )
    lines += [
        f"{run} Machine: {env.get('cpu_count', '?')} × {env.get('cpu_model', '?')}, "
        f"Python {env.get('python', '?')}, commit {(env.get('git_head') or '?')[:10]}, load average at the "
        f"last benchmark {env.get('load_average') or '?'}. The machine is shared: timings are noisy; "
        f"each figure is a ratio to a baseline measured in the same run where one exists.",
        "",
    ]

    rows = []
    for target in TARGETS:
        row = evaluate(target, results.get(target.results))
        row.source = f"{target.results} ({freshness(results.get(target.results), since)})"
        rows.append(row)
    met = sum(r.status == "met" for r in rows)
    lines += [
        "## Targets",
        "",
        f"{met} of {len(rows)} targets met. *vs goal* = measured / goal for ≥ goals and goal / measured for "
        "≤ goals: above 1 is headroom, below 1 is the shortfall.",
        "",
    ]
    lines += _table(
        ["target", "goal", "measured", "vs goal", "status", "note", "results"],
        [[r.name, r.goal, r.measured, r.vs_goal, r.status, r.note, r.source] for r in rows],
    )

    if runs:
        lines += ["", "## Benchmark runs", ""]
        if profile is None:
            lines += [f"The last `run_all.py` run ({runs['profile']} profile, started {_when(runs['started'])}):", ""]
        lines += _table(
            ["script", "status", "seconds", "arguments"],
            [
                [o["script"], o["status"], f"{o['seconds']:.0f}", o["arguments"] or "(defaults)"]
                for o in runs["outcomes"]
            ],
        )
        lines += [
            "",
            f"Total: {sum(o['seconds'] for o in runs['outcomes']) / 60:.1f} minutes. Logs: `logs/<script>.log`.",
        ]

    lines += _scaling_section(results.get("scaling"))
    lines += _end_to_end_section(results.get("end_to_end"))
    lines += _profile_section(results.get("profiles"), results.get("end_to_end"))

    lines += [
        "",
        "## Every ratio figure",
        "",
        "Ratios the benchmarks report, with or without a target (see each script's docstring for the baseline).",
        "",
    ]
    other = [
        [name, key, f"{value:,.3g}"]
        for name in sorted(results)
        if name not in {"scaling", "end_to_end", "profiles"}
        for key, value in ratio_figures(results[name].get("figures"))
    ]
    lines += _table(["results", "figure", "value"], other) if other else ["(none)"]
    return "\n".join(lines) + "\n"


def _scaling_section(data: dict | None) -> list[str]:
    lines = ["", "## Scaling", ""]
    if data is None:
        return lines + ["Not measured (`python benchmarks/bench_scaling.py`)."]
    figures = data["figures"]
    lines += [
        f"Profile {figures.get('profile')}; each point in a fresh process; "
        f"peak memory = {figures.get('memory_method')}. "
        "Exponent: least-squares slope of log time (memory) on log size; 1 = linear.",
        "",
    ]
    rows = []
    for stage, s in figures.get("stages", {}).items():
        for p in s["points"]:
            ok = p["status"] == "ok"
            rows.append(
                [
                    stage,
                    f"{p['size']:,}",
                    fmt(p["seconds"], "s") if ok else "—",
                    f"{p['peak_rss_bytes'] / 2**20:,.0f} MiB" if ok else "—",
                    "" if ok else p["status"],
                ]
            )
        exp_t, exp_m = s.get("time_exponent"), s.get("memory_exponent")
        rows.append(
            [
                f"**{stage}**",
                "exponent",
                "—" if exp_t is None else f"N^{exp_t:.2f}",
                "—" if exp_m is None else f"N^{exp_m:.2f}",
                "",
            ]
        )
    lines += _table(["stage", "size", "time", "peak RSS", "note"], rows)
    for stage, s in figures.get("stages", {}).items():
        if s.get("plot"):
            lines += ["", f"![{stage} scaling]({s['plot']})"]
    return lines


def _end_to_end_section(data: dict | None) -> list[str]:
    lines = ["", "## End to end", ""]
    if data is None:
        return lines + ["Not measured (`python benchmarks/bench_end_to_end.py`)."]
    rows = []
    for name, run in data["figures"].items():
        if not isinstance(run, dict):
            continue
        stages = ", ".join(f"{k} {v:.0f} s" for k, v in run.get("stages_s", {}).items())
        rows.append(
            [
                name,
                run["status"],
                fmt(run["wall_s"], "s") if "wall_s" in run else "—",
                fmt(run["budget_s"], "s"),
                stages or run.get("note", ""),
            ]
        )
    return lines + _table(["run", "status", "wall time", "budget", "stages / note"], rows)


def _profile_section(data: dict | None, end_to_end: dict | None = None) -> list[str]:
    lines = ["", "## Profiles of the slowest stages", ""]
    if data is None:
        return lines + ["Not measured (`python benchmarks/profile_stages.py`)."]
    figures = data["figures"]
    stages = ", ".join(f"{k} {v:.1f} s" for k, v in figures.get("stages_s", {}).items())
    lines += [f"`{figures['workload']}` under pyinstrument: {stages}."]
    run = lookup(end_to_end or {}, "figures.demo" + ("_quick" if figures["workload"].endswith("--quick") else ""))
    if run and run.get("status") == "ok":
        lines[-1] += (
            f" Unprofiled (bench_end_to_end): {run['wall_s']:.1f} s in all, "
            + ", ".join(f"{k} {v:.1f} s" for k, v in run.get("stages_s", {}).items())
            + "; the machine's load differs between the two runs."
        )
    lines += [""]
    for stage in figures.get("slowest", []):
        lines += [
            f"**{stage['stage']}** ({stage['seconds']:.1f} s, {100 * stage['share_of_demo']:.0f} % of the demo; "
            f"call tree `{stage['tree']}`). Most self time:",
            "",
        ]
        lines += _table(
            ["frame", "self s", "share of stage"],
            [
                [r["frame"], f"{r['self_seconds']:.2f}", f"{100 * r['share_of_stage']:.1f} %"]
                for r in stage["top_self"][:8]
            ],
        )
        lines += [""]
    return lines


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="smaller sizes (for a loaded machine)")
    parser.add_argument("--budget", type=float, default=1800.0, help="seconds for the whole run")
    parser.add_argument("--only", help="comma-separated script names (with or without .py)")
    parser.add_argument("--skip", help="comma-separated script names to leave out")
    parser.add_argument("--summary-only", action="store_true", help="only rewrite SUMMARY.md from results/")
    args = parser.parse_args(argv)

    def names(text):
        return {n.strip().removesuffix(".py") for n in (text or "").split(",") if n.strip()}

    known = {Path(b.script).stem for b in BENCHMARKS}
    unknown = (names(args.only) | names(args.skip)) - known
    if unknown:
        parser.error(f"unknown benchmark(s) {sorted(unknown)}; known: {', '.join(sorted(known))}")
    benchmarks = chosen(names(args.only), names(args.skip))

    started, outcomes = time.time(), []
    if not args.summary_only:
        deadline = time.monotonic() + args.budget
        for i, bench in enumerate(benchmarks):
            reserved = sum(b.expected_s for b in benchmarks[i + 1 :]) * (0.3 if args.quick else 1.0)
            print(f"== {bench.script}", flush=True)
            outcome = run_benchmark(bench, quick=args.quick, time_left=deadline - time.monotonic(), reserved=reserved)
            outcomes.append(outcome)
            print(
                f"== {bench.script}: {outcome.status} ({outcome.seconds:.0f} s) {' '.join(outcome.command[2:])}",
                flush=True,
            )
    RESULTS.mkdir(parents=True, exist_ok=True)
    record = RESULTS / "run_all.json"
    if args.summary_only:
        profile, runs = None, json.loads(record.read_text()) if record.is_file() else None
    else:
        profile = "quick" if args.quick else "full"
        runs = runs_record(outcomes, profile=profile, started=started)
        record.write_text(json.dumps(runs, indent=1) + "\n")
    results = load_results({b.results for b in BENCHMARKS})
    text = summary_markdown(results, runs, since=None if args.summary_only else started, profile=profile)
    tmp = RESULTS / "SUMMARY.md.tmp"
    tmp.write_text(text)
    os.replace(tmp, RESULTS / "SUMMARY.md")
    rows = [evaluate(t, results.get(t.results)) for t in TARGETS]
    print(
        f"\nwrote {RESULTS / 'SUMMARY.md'}: {sum(r.status == 'met' for r in rows)} of {len(rows)} targets met, "
        f"{sum(r.status == 'missed' for r in rows)} missed, "
        f"{sum(r.status not in ('met', 'missed') for r in rows)} not measured or unknown"
    )
    crashed = [o.benchmark.script for o in outcomes if o.crashed]
    if crashed:
        print(f"crashed: {', '.join(crashed)} (see results/logs/)", file=sys.stderr)
    return 1 if crashed else 0


if __name__ == "__main__":
    sys.exit(main())
