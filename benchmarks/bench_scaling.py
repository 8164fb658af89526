"""Scaling curves: wall time and peak memory versus work, with the fitted growth exponent.

Three stages, each at increasing sizes (the smallest size is the baseline of the ratios):

* extraction: ``ltrfeat extract`` streaming a generated LETOR file of N judged pairs through the full
  lexical set and a CLSM bundle (default sizes 300/128, trained for one epoch on 2,000 pairs of the same
  world) on the title field; the world is ``bench_dask.generate`` (N/10 documents, 1-150 pairs per query);
* encoder training: one CLSM epoch over N (query, title) pairs, J = 4 random negatives, batch 1024, on
  random-letter words (a realistic trigram vocabulary: the trigram table's size drives the cost per batch);
* ranker training: LambdaMART (LightGBM, 1 thread, a fixed number of rounds) on N generated rows of
  136 features (``bench_rankers.generate``).

Every point runs in a fresh subprocess that times its own work (data generation and imports excluded)
and reports its peak resident memory as VmHWM from ``/proc/self/status``: the high-water mark of that
process alone. (``getrusage(RUSAGE_CHILDREN).ru_maxrss`` is not used: Linux carries the parent's peak
into a forked child, so it would report this script's own memory.) The growth exponent is the slope of a
least-squares line through (log N, log seconds); 1.0 is linear. ``--budget`` is shared by the stages
(extraction first, then ranker, then encoder; unused time passes on); a size whose time, extrapolated from
the sizes before it, would not fit what is left is skipped and listed as such, never estimated.

Targets: extraction near-linear (time exponent <= 1.15) and 1M pairs under 2 GiB peak RSS.

    python benchmarks/bench_scaling.py                       # the issue's sizes, at most 15 minutes
    python benchmarks/bench_scaling.py --quick               # small sizes for a loaded machine
    python benchmarks/bench_scaling.py --stages extraction --extraction-sizes 10000,30000
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks._common import RESULTS, write_results  # noqa: E402

STAGES = ("extraction", "ranker", "encoder")  # in order of priority: a short budget cuts the last ones
# Shares of the time budget; what a stage leaves unused goes to the stages after it.
WEIGHTS = {"extraction": 0.45, "ranker": 0.2, "encoder": 0.35}
FULL_SIZES = {
    "extraction": (10_000, 100_000, 1_000_000),
    "encoder": (10_000, 100_000),
    "ranker": (10_000, 100_000, 1_000_000),
}
QUICK_SIZES = {"extraction": (10_000, 30_000, 100_000), "encoder": (3_000, 10_000), "ranker": (10_000, 30_000, 100_000)}
RANKER_ROUNDS = 20
RSS_LIMIT = 2 * 1024**3  # extraction of 1M pairs, lexical + CLSM
GROWTH_MARGIN = 1.3  # safety factor on the extrapolated time of the next size


def fit_exponent(sizes, values) -> float | None:
    """Slope of the least-squares line through (log size, log value); None with fewer than two usable points."""
    pairs = [(s, v) for s, v in zip(sizes, values) if s > 0 and v > 0]
    if len({s for s, _ in pairs}) < 2:
        return None
    x, y = np.log([s for s, _ in pairs]), np.log([v for _, v in pairs])
    return float(np.polyfit(x, y, 1)[0])


def predict_seconds(sizes, seconds, size: int) -> float:
    """Extrapolated time of ``size`` from the points so far (at least linear growth is assumed)."""
    exponent = max(1.0, fit_exponent(sizes, seconds) or 1.0)
    return seconds[-1] * (size / sizes[-1]) ** exponent


# -- the points: each runs in a fresh process --------------------------------------------------------------
def _peak_rss_bytes() -> int:
    status = Path("/proc/self/status")
    if status.exists():
        match = re.search(r"VmHWM:\s+(\d+) kB", status.read_text())
        if match:
            return int(match.group(1)) * 1024
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def letter_words(n: int, *, seed: int) -> np.ndarray:
    """``n`` distinct random lower-case words of 3-10 letters: a trigram vocabulary like real text's (17k
    trigrams in 10k pairs over 20k words; Home Depot's titles and queries have 11k)."""
    rng = np.random.default_rng(seed)
    letters = np.array(list("abcdefghijklmnopqrstuvwxyz"))
    words = {"".join(rng.choice(letters, int(rng.integers(3, 11)))) for _ in range(2 * n)}
    return np.array(sorted(words)[:n])


def _vocab_pairs(n: int, *, seed: int, vocab: np.ndarray):
    """(query, title, label) pairs over a Zipfian ``vocab``: each clicked title contains its query."""
    import pandas as pd

    rng = np.random.default_rng(seed)
    p = 1.0 / np.arange(1, len(vocab) + 1)
    p /= p.sum()
    queries = [" ".join(rng.choice(vocab, int(rng.integers(1, 5)), p=p)) for _ in range(max(1, n // 10))]
    qi = rng.integers(0, len(queries), n)
    docs = [queries[q] + " " + " ".join(rng.choice(vocab, int(rng.integers(3, 9)), p=p)) for q in qi]
    return pd.DataFrame(
        {"qid": [f"q{q}" for q in qi], "query": [queries[q] for q in qi], "doc": docs, "label": np.ones(n)}
    )


def _point_extraction(workdir: Path) -> float:
    import ltrfeat.features.extract  # noqa: F401  (imports are start-up cost, not extraction: done before the clock)
    import ltrfeat.features.neural  # noqa: F401
    from ltrfeat.cli.main import cli

    args = [
        "extract",
        str(workdir / "in.letor"),
        "--queries",
        str(workdir / "queries.tsv"),
        "--docs",
        str(workdir / "docs.tsv"),
        "--lexical",
        "all",
        "--fields",
        "title",
        "--encoder",
        f"clsm={workdir / 'clsm.ltrenc'}",
        "--out",
        str(workdir / "out.letor"),
        "--no-progress",
    ]
    start = time.perf_counter()
    cli(args=args, standalone_mode=False)
    return time.perf_counter() - start


def _point_encoder(size: int) -> float:
    from ltrfeat.encoders.training import train_encoder

    pairs = _vocab_pairs(size, seed=1, vocab=letter_words(20_000, seed=1))
    start = time.perf_counter()
    train_encoder(
        pairs,
        model="clsm",
        loss="softmax",
        epochs=1,
        negatives=4,
        in_batch=False,
        batch_size=1024,
        soft_labels="identity",
        val_fraction=0.0,
        seed=0,
        progress=False,
    )
    return time.perf_counter() - start


def _point_ranker(size: int) -> float:
    from benchmarks.bench_rankers import generate
    from ltrfeat.rankers.lambdamart import LambdaMART

    data = generate(size, 136, 100)
    start = time.perf_counter()
    LambdaMART(n_estimators=RANKER_ROUNDS, n_jobs=1, early_stopping_rounds=None).fit(data)
    return time.perf_counter() - start


def run_point(stage: str, size: int, workdir: Path) -> None:
    """Child side: do one point's work and print ``{"seconds", "peak_rss_bytes"}`` as JSON."""
    if stage == "extraction":
        seconds = _point_extraction(workdir)
    elif stage == "encoder":
        seconds = _point_encoder(size)
    else:
        seconds = _point_ranker(size)
    print(json.dumps({"seconds": seconds, "peak_rss_bytes": _peak_rss_bytes()}))


# -- the parent: data, budget, fit, plots --------------------------------------------------------------------
def extraction_bundle(path: Path) -> Path:
    """A CLSM bundle (default sizes) trained for one epoch on 2,000 pairs of the extraction world's vocabulary."""
    from ltrfeat.encoders.training import train_encoder

    terms = np.array([f"term{i}" for i in range(5000)])  # bench_dask.generate's vocabulary
    encoder, _ = train_encoder(
        _vocab_pairs(2000, seed=0, vocab=terms),
        model="clsm",
        epochs=1,
        soft_labels="identity",
        val_fraction=0.0,
        seed=0,
        progress=False,
    )
    encoder.save(path)
    return path


def prepare_extraction(workdir: Path, size: int, bundle: Path) -> None:
    """Write the LETOR file and text tables for ``size`` pairs, beside a link to the shared ``bundle``."""
    from benchmarks.bench_dask import generate

    workdir.mkdir(parents=True)
    queries, docs, _ = generate(workdir, size)
    queries.to_csv(workdir / "queries.tsv", sep="\t", index=False)
    docs.to_csv(workdir / "docs.tsv", sep="\t", index=False)
    (workdir / "clsm.ltrenc").symlink_to(bundle)


def measure(stage: str, size: int, workdir: Path, timeout: float) -> dict:
    """Run one point in a fresh subprocess; ``status`` is ok, timed out or failed (with the error's tail)."""
    cmd = [sys.executable, __file__, "--point", stage, str(size), "--workdir", str(workdir)]
    env = dict(os.environ, PYTHONPATH=str(ROOT), CI="1")
    start = time.perf_counter()
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env, cwd=ROOT)
    except subprocess.TimeoutExpired:
        return {"size": size, "status": f"timed out after {timeout:.0f} s"}
    if proc.returncode != 0:
        return {"size": size, "status": "failed: " + (proc.stderr.strip().splitlines() or ["?"])[-1][:300]}
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    return {"size": size, "status": "ok", **out, "process_seconds": time.perf_counter() - start}


def run_stage(stage: str, sizes, budget: float) -> dict:
    """Measure ``sizes`` in order while the extrapolated next point fits the remaining ``budget``."""
    started = time.monotonic()
    points = []
    with tempfile.TemporaryDirectory(prefix=f"scaling-{stage}-") as tmp:
        for size in sizes:
            done = [p for p in points if p["status"] == "ok"]
            left = budget - (time.monotonic() - started)
            if done:
                expected = GROWTH_MARGIN * predict_seconds(
                    [p["size"] for p in done], [p["seconds"] for p in done], size
                )
                if expected > left:
                    points.append(
                        {
                            "size": size,
                            "status": f"skipped: about {expected:.0f} s expected, "
                            f"{max(left, 0):.0f} s of the stage budget left",
                        }
                    )
                    print(f"  {stage:10s} {size:>9,d}: {points[-1]['status']}", flush=True)
                    continue
            workdir = Path(tmp) / str(size)
            if stage == "extraction":
                bundle = Path(tmp) / "clsm.ltrenc"
                prepare_extraction(workdir, size, bundle if bundle.exists() else extraction_bundle(bundle))
            else:
                workdir.mkdir()
            point = measure(stage, size, workdir, timeout=max(budget - (time.monotonic() - started), 30.0))
            points.append(point)
            print(f"  {stage:10s} {size:>9,d}: {describe(point)}", flush=True)
    return summarise_stage(points)


def describe(point: dict) -> str:
    if point["status"] != "ok":
        return point["status"]
    return (
        f"{point['seconds']:8.2f} s  {point['size'] / point['seconds']:>10,.0f}/s  "
        f"peak RSS {point['peak_rss_bytes'] / 2**20:7.0f} MiB"
    )


def summarise_stage(points: list[dict]) -> dict:
    """Exponents of time and memory (all sizes; time also over the two largest), and the baseline ratios
    (largest measured vs smallest)."""
    ok = [p for p in points if p["status"] == "ok"]
    sizes = [p["size"] for p in ok]
    out = {
        "points": points,
        "measured_sizes": sizes,
        "time_exponent": fit_exponent(sizes, [p["seconds"] for p in ok]),
        "memory_exponent": fit_exponent(sizes, [p["peak_rss_bytes"] for p in ok]),
        # fixed costs flatten the fit at small sizes: the slope between the two largest sizes is the growth now
        "time_exponent_largest_two": fit_exponent(sizes[-2:], [p["seconds"] for p in ok[-2:]]),
    }
    if len(ok) >= 2:
        first, last = ok[0], ok[-1]
        out["work_ratio"] = last["size"] / first["size"]
        out["time_ratio"] = last["seconds"] / first["seconds"]
        out["memory_ratio"] = last["peak_rss_bytes"] / first["peak_rss_bytes"]
    return out


def plot_stage(stage: str, summary: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ok = [p for p in summary["points"] if p["status"] == "ok"]
    sizes = np.array([p["size"] for p in ok], dtype=float)
    fig, (ax_t, ax_m) = plt.subplots(1, 2, figsize=(10, 4))
    unit = {"extraction": "judged pairs", "encoder": "training pairs (one epoch)", "ranker": "rows"}[stage]
    for ax, key, scale, label, exponent in (
        (ax_t, "seconds", 1.0, "wall time (s)", summary["time_exponent"]),
        (ax_m, "peak_rss_bytes", 2**-20, "peak RSS (MiB)", summary["memory_exponent"]),
    ):
        values = np.array([p[key] for p in ok], dtype=float) * scale
        ax.loglog(sizes, values, "o-", label="measured")
        if exponent is not None:
            coef = np.polyfit(np.log(sizes), np.log(values), 1)
            grid = np.geomspace(sizes.min(), sizes.max(), 20)
            ax.loglog(grid, np.exp(np.polyval(coef, np.log(grid))), "--", label=f"fit: N^{exponent:.2f}")
        if key == "peak_rss_bytes" and stage == "extraction":
            ax.axhline(RSS_LIMIT * scale, color="red", linestyle=":", label="2 GiB target")
        ax.set_xlabel(unit)
        ax.set_ylabel(label)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend()
    skipped = [p for p in summary["points"] if p["status"] != "ok"]
    note = "; ".join(f"{p['size']:,}: {p['status']}" for p in skipped)
    fig.suptitle(f"{stage} scaling" + (f"\nnot measured: {note}" if note else ""), fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="small sizes (a loaded machine, a smoke run)")
    parser.add_argument("--stages", default=",".join(STAGES), help="comma-separated subset of " + ",".join(STAGES))
    for stage in STAGES:
        parser.add_argument(f"--{stage}-sizes", help=f"comma-separated sizes for {stage} (overrides the profile)")
    parser.add_argument(
        "--budget",
        type=float,
        default=900.0,
        help="seconds for all stages (shared by weight; unused time passes to the next stage)",
    )
    parser.add_argument("--point", nargs=2, metavar=("STAGE", "SIZE"), help=argparse.SUPPRESS)
    parser.add_argument("--workdir", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.point:
        run_point(args.point[0], int(args.point[1]), args.workdir)
        return

    wanted = {s.strip() for s in args.stages.split(",") if s.strip()}
    if wanted - set(STAGES):
        parser.error(f"unknown stage(s) {sorted(wanted - set(STAGES))}; choose from {','.join(STAGES)}")
    stages = [s for s in STAGES if s in wanted]
    started = time.monotonic()
    profile = QUICK_SIZES if args.quick else FULL_SIZES
    figures = {
        "profile": "quick" if args.quick else "full",
        "budget_s": args.budget,
        "ranker_rounds": RANKER_ROUNDS,
        "memory_method": "VmHWM of each point's own fresh process",
        "stages": {},
    }
    for stage in stages:
        override = getattr(args, f"{stage}_sizes")
        sizes = sorted(int(s) for s in override.split(",")) if override else profile[stage]
        print(f"{stage}: sizes {', '.join(f'{s:,}' for s in sizes)}", flush=True)
        left = args.budget - (time.monotonic() - started)
        summary = run_stage(
            stage, sizes, left * WEIGHTS[stage] / sum(WEIGHTS[s] for s in stages[stages.index(stage) :])
        )
        figures["stages"][stage] = summary
        if summary["measured_sizes"]:
            plot = RESULTS / f"scaling_{stage}.png"
            RESULTS.mkdir(parents=True, exist_ok=True)
            plot_stage(stage, summary, plot)
            summary["plot"] = plot.name
    print(f"wrote {write_results('scaling', figures)}")
    for stage, s in figures["stages"].items():
        if "work_ratio" in s:
            print(
                f"{stage:10s} {s['work_ratio']:.0f}x the work (baseline: {s['measured_sizes'][0]:,}) took "
                f"{s['time_ratio']:.1f}x the time and {s['memory_ratio']:.2f}x the peak memory: "
                f"time ~ N^{s['time_exponent']:.2f}, memory ~ N^{s['memory_exponent']:.2f}"
            )
        else:
            print(f"{stage:10s} fewer than two sizes measured: no exponent")


if __name__ == "__main__":
    main()
