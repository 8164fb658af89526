"""Scale simulation: a generated world of N judged pairs through ``ablate`` and ``extract`` on a Dask cluster.

For each size N (default 10k, 100k and 1M judged pairs) the script:

1. generates a synth world (``ltrfeat datasets synth``: N/10 judged queries of 8-12 candidates, a catalogue of 3
   products per query, no click log; timed apart, kept in ``--worlds`` for reruns);
2. starts a LocalCluster of ``--workers`` single-threaded worker processes with ``--memory-limit`` each, and
   gives its address to the commands, exactly as one would give a real cluster's scheduler address:
   ``ltrfeat ablate --pairs judged.tsv --encoder dssm:generalized --encoder clsm:softmax --dask ADDRESS``
   (3 query folds: 12 encoder trainings and the ranker runs as Dask tasks; ``--cache`` keeps the encoders), then
   ``ltrfeat extract --pairs judged.tsv --lexical all --encoder clsm=... --encoder dssm=... --dask ADDRESS``
   with two of the ablation's cached encoders; the settings (``ABLATE``) are the same at every size;
3. records per command the wall time, the CPU time (user + system) of the command's process with the processes it
   waited for and of every worker, the peak resident memory of the command's own process (VmHWM of
   ``/proc/PID/status``, polled every 0.2 s, so a peak in its last moments may be missed) and of every worker
   (VmHWM read on each worker after the command; each command gets a new LocalCluster).

The command's output and, every 30 s, the resident memory of the command and of each worker go to
``--worlds/log-N-STAGE.txt``, so a stopped run shows where it was. On a shared machine the CPU times are the robust
figures: wall time also counts the waiting. The growth exponent is the slope of the least-squares line through
(log N, log value); 1.0 is linear. Results go to ``results/scale_simulation.json`` (rewritten after each size).
On a real cluster, run the two commands of step 2 with the scheduler's address (``--dask tcp://HOST:8786``) or its
scheduler file (``--dask scheduler.json``).

    python benchmarks/bench_scale_sim.py --sizes 10000,100000 --add    # the small sizes, keeping the 1M point
    python benchmarks/bench_scale_sim.py                                           # 10k, 100k, 1M
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks._common import RESULTS, write_results  # noqa: E402
from benchmarks.bench_scaling import fit_exponent  # noqa: E402

SIZES = (10_000, 100_000, 1_000_000)
PAIRS_PER_QUERY = 10  # candidates 8-12 per judged query
CANDIDATES = "8-12"
DOCS_PER_QUERY = 3
LTRFEAT = [sys.executable, "-m", "ltrfeat.cli.main"]
ABLATE = ["--encoder", "dssm:generalized", "--encoder", "clsm:softmax", "--k-folds", "3"]
ABLATE += ["--encoder-option", "epochs=1", "--n-estimators", "50", "--seeds", "0", "--resamples", "1000"]
ABLATE += ["--no-select"]
SAMPLE_EVERY_S = 30


def _vm_field(status: str, field: str) -> int:
    match = re.search(rf"{field}:\s+(\d+) kB", status)
    return int(match.group(1)) * 1024 if match else 0


def _worker_figures() -> dict:
    """This worker's peak resident bytes and CPU seconds (user + system, its own and its reaped children's)."""
    times = os.times()
    return {
        "peak": _vm_field(Path("/proc/self/status").read_text(), "VmHWM"),
        "cpu": times.user + times.system + times.children_user + times.children_system,
    }


def _rss_mib(pid: int) -> float | None:
    try:
        return round(_vm_field(Path(f"/proc/{pid}/status").read_text(), "VmRSS") / 2**20)
    except OSError:
        return None


def run_measured(command: list[str], *, log: Path, worker_pids: list[int]) -> dict:
    """Run ``command``; its wall seconds, CPU seconds (with the processes it waited for) and peak resident bytes.

    Its output goes to ``log``, with a line of resident memory (command, workers) every ``SAMPLE_EVERY_S``."""
    start = time.perf_counter()
    with open(log, "w") as sink:
        sink.write(" ".join(command) + "\n")
        sink.flush()
        process = subprocess.Popen(command, stdout=sink, stderr=subprocess.STDOUT, text=True)
        peak, stop = [0], threading.Event()

        def poll():
            status, last = Path(f"/proc/{process.pid}/status"), time.perf_counter()
            while not stop.is_set():
                try:
                    peak[0] = max(peak[0], _vm_field(status.read_text(), "VmHWM"))
                except OSError:
                    break
                if time.perf_counter() - last >= SAMPLE_EVERY_S:
                    last = time.perf_counter()
                    workers = [_rss_mib(pid) for pid in worker_pids]
                    sink.write(f"[{last - start:.0f} s] rss MiB: command {_rss_mib(process.pid)}, workers {workers}\n")
                    sink.flush()
                time.sleep(0.2)

        watcher = threading.Thread(target=poll, daemon=True)
        watcher.start()
        _, status, usage = os.wait4(process.pid, 0)  # the rusage of the command and the children it waited for
        stop.set()
        watcher.join()
    seconds = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{' '.join(command)} failed:\n{log.read_text()[-3000:]}")
    return {
        "seconds": round(seconds, 1),
        "client_cpu_s": round(usage.ru_utime + usage.ru_stime, 1),
        "client_peak_mib": round(peak[0] / 2**20, 1),
    }


def make_world(n_pairs: int, worlds: Path) -> tuple[Path, dict]:
    """The world of ``n_pairs`` judged pairs in ``worlds`` (generated unless there already), and its figures."""
    queries = max(30, n_pairs // PAIRS_PER_QUERY)
    world = worlds / f"world-{n_pairs}"
    options = ["--queries", str(queries), "--docs", str(DOCS_PER_QUERY * queries), "--click-queries", "0"]
    options += ["--candidates", CANDIDATES]
    done = world / "synth.json"
    if not (done.exists() and json.loads(done.read_text())["options"] == options):
        figures = run_measured(
            [*LTRFEAT, "datasets", "synth", "--out", str(world), *options],
            log=worlds_log(world, n_pairs, "synth"),
            worker_pids=[],
        )
        done.write_text(json.dumps({"options": options, "synth": figures}))
    synth = json.loads(done.read_text())["synth"]
    with open(world / "judged.tsv") as lines:
        pairs = sum(1 for _ in lines) - 1
    return world, {"judged_pairs": pairs, "queries": queries, "docs": DOCS_PER_QUERY * queries, "synth": synth}


def one_size(n_pairs: int, *, workers: int, memory_limit: str, worlds: Path, root: Path) -> dict:
    world, out = make_world(n_pairs, worlds)
    print(f"{out['judged_pairs']:>9} pairs  synth    {out['synth']}", flush=True)
    cache = root / f"cache-{n_pairs}"
    for stage in ("ablate", "extract"):
        out[stage] = on_cluster(stage, n_pairs, world, cache, workers=workers, memory_limit=memory_limit, root=root)
        print(f"{out['judged_pairs']:>9} pairs  {stage:<8} {out[stage]}", flush=True)
    return out


def on_cluster(stage: str, n_pairs: int, world: Path, cache: Path, *, workers: int, memory_limit: str, root: Path):
    """Run ``stage`` on a new LocalCluster (fresh workers: their peaks and CPU times are this command's)."""
    import distributed

    with (
        distributed.LocalCluster(
            n_workers=workers, threads_per_worker=1, memory_limit=memory_limit, dashboard_address=":0"
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        address = cluster.scheduler_address
        if stage == "ablate":
            command = [*LTRFEAT, "ablate", "--pairs", str(world / "judged.tsv"), *ABLATE, "--cache", str(cache)]
            command += ["--dask", address, "--report", str(root / f"report-{n_pairs}"), "--overwrite"]
        else:
            bundles = {kind: sorted((cache / "encoders").glob(f"{kind}-*.ltrenc"))[0] for kind in ("clsm", "dssm")}
            command = [*LTRFEAT, "extract", "--pairs", str(world / "judged.tsv"), "--lexical", "all"]
            command += [f"--encoder={kind}={path}" for kind, path in bundles.items()]
            command += ["--dask", address, "--no-progress", "--out", str(root / f"x-{n_pairs}.letor")]
        pids = list(client.run(os.getpid).values())
        figures = run_measured(command, log=worlds_log(world, n_pairs, stage), worker_pids=pids)
        measured = client.run(_worker_figures)
    figures["worker_cpu_s"] = [round(measured[w]["cpu"], 1) for w in sorted(measured)]
    figures["worker_peak_mib"] = [round(measured[w]["peak"] / 2**20, 1) for w in sorted(measured)]
    figures["cpu_s"] = round(figures["client_cpu_s"] + sum(figures["worker_cpu_s"]), 1)
    return figures


def worlds_log(world: Path, n_pairs: int, stage: str) -> Path:
    return world.parent / f"log-{n_pairs}-{stage}.txt"


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default=",".join(map(str, SIZES)), help="judged pairs per point, comma-separated")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--memory-limit", default="4GiB", help="per worker (Dask's memory_limit)")
    parser.add_argument("--worlds", type=Path, help="keep the generated worlds and the logs here [a temporary dir]")
    parser.add_argument("--add", action="store_true", help="keep the results file's points of other sizes")
    return parser.parse_args(argv)


def main(argv=None) -> None:
    args = parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")]
    points = _earlier_points(args, sizes) if args.add else []
    with tempfile.TemporaryDirectory(prefix="ltrfeat-scale-") as tmp:
        worlds = args.worlds or Path(tmp)
        worlds.mkdir(parents=True, exist_ok=True)
        for n_pairs in sizes:  # the results file is rewritten after each size: a stopped run keeps its points
            point = one_size(
                n_pairs, workers=args.workers, memory_limit=args.memory_limit, worlds=worlds, root=Path(tmp)
            )
            points = sorted([*points, point], key=lambda p: p["judged_pairs"])
            growth = {stage: _exponents(points, stage) for stage in ("ablate", "extract")}
            figures = {"workers": args.workers, "memory_limit": args.memory_limit, "ablate_options": ABLATE}
            path = write_results("scale_simulation", figures | {"points": points, "exponents": growth})
    print("growth exponents (1.0 = linear):", growth)
    print("wrote", path)


def _earlier_points(args, sizes: list[int]) -> list[dict]:
    """The points of the results file measured with the same cluster and options, for sizes not run now."""
    path = RESULTS / "scale_simulation.json"
    if not path.exists():
        return []
    figures = json.loads(path.read_text())["figures"]
    same = (figures.get("workers"), figures.get("memory_limit"), figures.get("ablate_options"))
    if same != (args.workers, args.memory_limit, ABLATE):
        return []
    running = {max(30, n // PAIRS_PER_QUERY) for n in sizes}
    return [p for p in figures["points"] if p["queries"] not in running]


def _exponents(points: list[dict], stage: str) -> dict:
    n = [p["judged_pairs"] for p in points]
    return {
        "cpu_seconds": fit_exponent(n, [p[stage]["cpu_s"] for p in points]),
        "seconds": fit_exponent(n, [p[stage]["seconds"] for p in points]),
        "client_peak": fit_exponent(n, [p[stage]["client_peak_mib"] for p in points]),
        "worker_peak": fit_exponent(n, [max(p[stage]["worker_peak_mib"]) for p in points]),
    }


if __name__ == "__main__":
    main()
