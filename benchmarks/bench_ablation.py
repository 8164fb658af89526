"""A whole `ltrfeat ablate` in text mode, cold and warm, stage by stage, with each encoder feature's quality
beside its time (so speed is never bought with silent quality loss).

Data: a generated 10k-pair set (``ltrfeat datasets synth``: seed 5, 400 judged queries, 20-30 candidates
each, 10,184 pairs), or Home Depot's train.csv with ``--homedepot`` (74,067 pairs; the README's command).
Encoders: the README's list (clsm:softmax, dssm:generalized, sbert, sbert-ft:generalized,
clsm:generalized+teacher), 3 folds, 3 seeds, default settings.

Runs, each a fresh process:
  cold       a new cache directory: every encoder trained.
  warm       the same cache, one encoder added (dssm:softmax): only that encoder is trained.
  baseline   (``--baseline``) cold with ``sbert-ft.keep_frozen=false``: MiniLM fine-tuning as before the
             frozen-layer store, the same-run reference for that change.
  rankers    (``--encoder-cache DIR``) instead of the runs above: the cold run with its encoders read from
             ``DIR`` (trained there on first use) and the ranker store emptied first, so only the ranker stage
             is cold -- the stage to time when changing the rankers; ``--repeat N`` runs it N times.
Figures come from each report's ``stage_seconds`` plus each process's CPU seconds (user + system, its
workers included); quality is each encoder column alone (NDCG@1, @10) and the lexical+encoder
LambdaMART's NDCG@1 lift over lexical.

``--without SPEC`` (repeatable) drops an encoder from the list (results file ``..._without-SPEC``): e.g.
``--without sbert-ft:generalized`` times the command without MiniLM fine-tuning.

``--keep-report DIR`` copies the cold run's report directory to DIR (to compare two trees' reports).

Run: python benchmarks/bench_ablation.py [--homedepot] [--baseline] [--skip-warm] [--encoder-cache DIR [--repeat N]]
         [--without SPEC] [--keep-report DIR]
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT)]

from benchmarks._common import HOME_DEPOT, HOME_DEPOT_COLUMNS, write_results  # noqa: E402

ENCODERS = ["clsm:softmax", "dssm:generalized", "sbert", "sbert-ft:generalized", "clsm:generalized+teacher"]


def _ltrfeat(*args) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "ltrfeat.cli.main", *map(str, args)],
        cwd=ROOT,
        text=True,
        capture_output=True,
        env={**__import__("os").environ, "CI": "1"},
    )


def _data(tmp: Path, homedepot: bool) -> list:
    if homedepot:
        if not HOME_DEPOT.exists():
            sys.exit(f"Home Depot data not found at {HOME_DEPOT}")
        return [
            "--pairs",
            HOME_DEPOT,
            "--encoding",
            "latin-1",
            "--label-map",
            "linear:1:3:7",
            "--conflicts",
            "first",
            "--columns",
            HOME_DEPOT_COLUMNS,
        ]
    done = _ltrfeat(
        "datasets",
        "synth",
        "--out",
        tmp / "world",
        "--seed",
        5,
        "--queries",
        400,
        "--docs",
        3000,
        "--click-queries",
        0,
        "--candidates",
        "20-30",
    )
    if done.returncode:
        sys.exit(done.stderr)
    return ["--pairs", tmp / "world" / "judged.tsv"]


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _ablate(data: list, encoders: list[str], cache: Path, report: Path, *extra) -> dict:
    start, cpu = time.perf_counter(), _children_cpu()
    done = _ltrfeat(
        "ablate",
        *data,
        *[a for e in encoders for a in ("--encoder", e)],
        "--cache",
        cache,
        "--report",
        report,
        "--overwrite",
        *extra,
    )
    wall, cpu = time.perf_counter() - start, _children_cpu() - cpu
    if done.returncode:
        sys.exit(f"ablate failed: {done.stderr[-2000:]}")
    rep = json.loads((report / "report.json").read_text())
    means = {(r["feature_set"], r["metric"]): r["mean"] for r in rep["results"]}
    quality = {}
    for name in rep["stage_seconds"]["encoders"]:
        alone = next((s for (s, _) in means if s.startswith(f"{name}_doc_")), None)
        lift = None
        if ("lexical+" + name, "ndcg@1") in means and ("lexical", "ndcg@1") in means:
            lift = means[("lexical+" + name, "ndcg@1")] - means[("lexical", "ndcg@1")]
        quality[name] = {
            "alone_ndcg@1": means.get((alone, "ndcg@1")),
            "alone_ndcg@10": means.get((alone, "ndcg@10")),
            "lift_ndcg@1": lift,
        }
    return {"wall_seconds": wall, "cpu_seconds": cpu, "stages": rep["stage_seconds"], "quality": quality}


def _print(label: str, run: dict) -> None:
    st = run["stages"]
    print(
        f"{label}: {run['wall_seconds']:.0f} s wall, {run['cpu_seconds']:.0f} cpu-s; "
        + ", ".join(f"{k} {v:.0f} s" for k, v in st.items() if isinstance(v, float))
    )
    for name, e in st["encoders"].items():
        q = run["quality"].get(name, {})
        fmt = lambda x: "n/a" if x is None else f"{x:.4f}"  # noqa: E731
        print(
            f"  {name:<28} {e['train_seconds'] + e['score_seconds']:>7.0f} s  trainings {e['trainings']}"
            f" (+{e['from_cache']} cached)  alone NDCG@1 {fmt(q.get('alone_ndcg@1'))} @10 "
            f"{fmt(q.get('alone_ndcg@10'))}  lift NDCG@1 {fmt(q.get('lift_ndcg@1'))}"
        )
    print(f"  MiniLM encoding {st['teacher_encoding']['seconds']:.0f} s for {st['teacher_encoding']['texts']} texts")
    if "ranker_runs" in st:
        print(f"  ranker runs {st['ranker_runs']['total']}, {st['ranker_runs']['from_cache']} from cache")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--homedepot", action="store_true", help="Home Depot train.csv instead of the 10k-pair set")
    parser.add_argument("--baseline", action="store_true", help="also a cold run with sbert-ft.keep_frozen=false")
    parser.add_argument("--skip-warm", action="store_true", help="no warm run")
    parser.add_argument(
        "--encoder-cache",
        type=Path,
        help="time the ranker stage only: encoders from this cache (trained there on first use), ranker store emptied",
    )
    parser.add_argument("--repeat", type=int, default=1, help="with --encoder-cache: ranker-stage runs")
    parser.add_argument("--without", action="append", default=[], choices=ENCODERS, help="leave this encoder out")
    parser.add_argument("--keep-report", type=Path, help="copy the cold run's report directory here")
    args = parser.parse_args()
    homedepot, baseline, skip_warm = args.homedepot, args.baseline, args.skip_warm
    encoders = [e for e in ENCODERS if e not in args.without]
    suffix = "".join(f"_without-{e.replace(':', '-')}" for e in args.without)
    figures: dict = {"data": "homedepot" if homedepot else "synth 10k pairs", "encoders": encoders}
    with tempfile.TemporaryDirectory() as tmp_:
        tmp = Path(tmp_)
        data = _data(tmp, homedepot)
        if args.encoder_cache is not None:
            figures["rankers_cold"] = []
            for i in range(args.repeat):
                shutil.rmtree(args.encoder_cache / "rankers", ignore_errors=True)
                run = _ablate(data, encoders, args.encoder_cache, tmp / f"rep-rankers{i}")
                _print(f"ranker stage cold (encoders from {args.encoder_cache}), run {i + 1}", run)
                figures["rankers_cold"].append(run)
            write_results("bench_ablation_rankers" + ("_homedepot" if homedepot else "") + suffix, figures)
            return
        if baseline:
            figures["baseline"] = _ablate(
                data, encoders, tmp / "cache-base", tmp / "rep-base", "--encoder-option", "sbert-ft.keep_frozen=false"
            )
            _print("baseline (MiniLM without the frozen-layer store), cold", figures["baseline"])
        figures["cold"] = _ablate(data, encoders, tmp / "cache", tmp / "rep-cold")
        _print("cold", figures["cold"])
        if args.keep_report is not None:
            shutil.copytree(tmp / "rep-cold", args.keep_report, dirs_exist_ok=True)
        if not skip_warm:
            figures["warm_plus_one"] = _ablate(data, [*encoders, "dssm:softmax"], tmp / "cache", tmp / "rep-warm")
            _print("warm, dssm:softmax added", figures["warm_plus_one"])
    if baseline and "sbert-ft:generalized" in encoders:
        b, c = figures["baseline"]["stages"]["encoders"], figures["cold"]["stages"]["encoders"]
        ft = "sbert-ft-generalized"
        ratio = (c[ft]["train_seconds"] + c[ft]["score_seconds"]) / (b[ft]["train_seconds"] + b[ft]["score_seconds"])
        figures["sbert_ft_time_ratio_vs_baseline"] = ratio
        print(f"sbert-ft cross-fitting time: {ratio:.2f}x the baseline's in this run")
    write_results("bench_ablation" + ("_homedepot" if homedepot else "") + suffix, figures)


if __name__ == "__main__":
    main()
