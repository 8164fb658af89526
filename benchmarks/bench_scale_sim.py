"""Scale simulation: a generated world of N judged pairs through ``ablate`` and ``extract`` on a Dask cluster.

For each size N (default 10k, 100k and 1M judged pairs) the script:

1. generates a synth world (``ltrfeat datasets synth``: N/15 judged queries of 10-20 candidates, 3 products
   per query, no click log; not timed);
2. starts a LocalCluster of ``--workers`` single-threaded worker processes with ``--memory-limit`` each, and
   gives its address to the commands, exactly as one would give a real cluster's scheduler address:
   ``ltrfeat ablate --pairs judged.tsv --encoder dssm:generalized --encoder clsm:softmax --dask ADDRESS``
   (3 query folds: 12 encoder trainings and the ranker runs as Dask tasks; ``--cache`` keeps the encoders), then
   ``ltrfeat extract --pairs judged.tsv --lexical all --encoder clsm=... --encoder dssm=... --dask ADDRESS``
   with two of the ablation's cached encoders;
3. records per command the wall time, the peak resident memory of the command's own process (VmHWM of
   ``/proc/PID/status``, polled every 0.2 s, so a peak in its last moments may be missed) and of every worker
   (VmHWM read on each worker after the command; the workers are restarted before each command).

The growth exponent is the slope of the least-squares line through (log N, log value); 1.0 is linear. Results go
to ``results/scale_simulation.json``. On a real cluster, run the two commands of step 2 with the scheduler's
address (``--dask tcp://HOST:8786``) or its scheduler file (``--dask scheduler.json``).

    python benchmarks/bench_scale_sim.py --sizes 3000,10000 --memory-limit 1GiB    # the small sizes
    python benchmarks/bench_scale_sim.py                                           # 10k, 100k, 1M
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks._common import write_results  # noqa: E402
from benchmarks.bench_scaling import fit_exponent  # noqa: E402

SIZES = (10_000, 100_000, 1_000_000)
PAIRS_PER_QUERY = 15  # the synth default of 10-20 candidates per judged query
LTRFEAT = [sys.executable, "-m", "ltrfeat.cli.main"]
ABLATE = ["--encoder", "dssm:generalized", "--encoder", "clsm:softmax", "--k-folds", "3"]
ABLATE += ["--encoder-option", "epochs=1", "--n-estimators", "50", "--seeds", "0", "--resamples", "1000"]
ABLATE += ["--no-select"]


def _vm_hwm(status: str) -> int:
    match = re.search(r"VmHWM:\s+(\d+) kB", status)
    return int(match.group(1)) * 1024 if match else 0


def _worker_peak() -> int:
    return _vm_hwm(Path("/proc/self/status").read_text())


def run_measured(command: list[str]) -> dict:
    """Run ``command``; its wall seconds and peak resident bytes (polled)."""
    start = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    peak = [0]

    def poll():
        status = Path(f"/proc/{process.pid}/status")
        while process.poll() is None:
            try:
                peak[0] = max(peak[0], _vm_hwm(status.read_text()))
            except OSError:
                break
            time.sleep(0.2)

    watcher = threading.Thread(target=poll, daemon=True)
    watcher.start()
    output = process.communicate()[0]
    watcher.join()
    seconds = time.perf_counter() - start
    if process.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed:\n{output[-3000:]}")
    return {"seconds": round(seconds, 1), "client_peak_mib": round(peak[0] / 2**20, 1)}


def one_size(n_pairs: int, *, workers: int, memory_limit: str, root: Path) -> dict:
    import distributed

    world = root / f"world-{n_pairs}"
    queries = max(30, n_pairs // PAIRS_PER_QUERY)
    synth = [*LTRFEAT, "datasets", "synth", "--out", str(world), "--queries", str(queries)]
    subprocess.run([*synth, "--docs", str(3 * queries), "--click-queries", "0"], check=True, capture_output=True)
    pairs = sum(1 for _ in open(world / "judged.tsv")) - 1
    out: dict = {"judged_pairs": pairs, "queries": queries}
    with (
        distributed.LocalCluster(
            n_workers=workers, threads_per_worker=1, memory_limit=memory_limit, dashboard_address=":0"
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        address = cluster.scheduler_address
        cache = root / f"cache-{n_pairs}"
        commands = {
            "ablate": [*LTRFEAT, "ablate", "--pairs", str(world / "judged.tsv"), *ABLATE, "--cache", str(cache)]
            + ["--dask", address, "--report", str(root / f"report-{n_pairs}"), "--overwrite"],
        }
        for stage in ("ablate", "extract"):
            client.restart()  # fresh workers: their peaks are this command's
            if stage == "extract":
                bundles = {kind: sorted((cache / "encoders").glob(f"{kind}-*.ltrenc"))[0] for kind in ("clsm", "dssm")}
                commands["extract"] = [*LTRFEAT, "extract", "--pairs", str(world / "judged.tsv"), "--lexical", "all"]
                commands["extract"] += [f"--encoder={kind}={path}" for kind, path in bundles.items()]
                commands["extract"] += ["--dask", address, "--no-progress", "--out", str(root / f"x-{n_pairs}.letor")]
            figures = run_measured(commands[stage])
            peaks = client.run(_worker_peak)
            figures["worker_peak_mib"] = [round(peaks[w] / 2**20, 1) for w in sorted(peaks)]
            out[stage] = figures
            print(f"{pairs:>9} pairs  {stage:<8} {figures}", flush=True)
    return out


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default=",".join(map(str, SIZES)), help="judged pairs per point, comma-separated")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--memory-limit", default="2GiB", help="per worker (Dask's memory_limit)")
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")]
    points: list[dict] = []
    with tempfile.TemporaryDirectory(prefix="ltrfeat-scale-") as tmp:
        for n_pairs in sizes:  # the results file is rewritten after each size: a stopped run keeps its points
            points.append(one_size(n_pairs, workers=args.workers, memory_limit=args.memory_limit, root=Path(tmp)))
            growth = {stage: _exponents(points, stage) for stage in ("ablate", "extract")}
            figures = {"workers": args.workers, "memory_limit": args.memory_limit, "points": points}
            path = write_results("scale_simulation", figures | {"exponents": growth})
    print("growth exponents (1.0 = linear):", growth)
    print("wrote", path)


def _exponents(points: list[dict], stage: str) -> dict:
    n = [p["judged_pairs"] for p in points]
    return {
        "seconds": fit_exponent(n, [p[stage]["seconds"] for p in points]),
        "client_peak": fit_exponent(n, [p[stage]["client_peak_mib"] for p in points]),
        "worker_peak": fit_exponent(n, [max(p[stage]["worker_peak_mib"]) for p in points]),
    }


if __name__ == "__main__":
    main()
