"""Streaming click-log aggregation: peak memory and time of ``read_click_log`` + ``write_positioned`` (what
``ltrfeat clicks aggregate`` runs) on a generated impression-level log, against a naive full pandas read.

The log: ``--rows`` impressions (default 10,000,000) as TSV ``session, query, docid, position, clicked``: sessions of
10 results; ``--queries`` distinct queries (default 20,000) drawn Zipf-like (a few head queries, a long tail), each
with a pool of 20 documents of which a session shows 10 in a random order; clicks with probability
0.3 * position^-0.8. Baseline, measured the same way: ``pandas.read_csv`` of the whole file, a group-by over
(query, docid, position) and ``to_csv``. Each run is a fresh process reporting its own peak resident memory
(VmHWM from ``/proc/self/status``; the parent's ``ru_maxrss`` would carry into a forked child); the outputs of
the two are compared. ``--dask local:N`` adds a run on a local Dask cluster (the client's peak is reported;
workers are separate processes).

Target: 10M impression rows aggregate in < 2 GiB peak RSS.

    python benchmarks/clicks_aggregate.py                      # 10M rows
    python benchmarks/clicks_aggregate.py --rows 1000000 --dask local:2
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from _common import ROOT, write_results

GIB = 1024**3
SHOWN, POOL = 10, 20

CHILD = """
import json, re, sys, time
from pathlib import Path

def peak():
    return int(re.search(r"VmHWM:\\s+(\\d+) kB", Path("/proc/self/status").read_text()).group(1)) * 1024

how, log, out, chunk, dask = sys.argv[1:6]
start = time.perf_counter()
if how == "naive":
    import pandas as pd
    frame = pd.read_csv(log, sep="\\t", dtype={"session": str, "query": str, "docid": str}, keep_default_na=False)
    grouped = frame.groupby(["query", "docid", "position"], as_index=False).agg(
        impressions=("clicked", "size"), clicks=("clicked", "sum")
    )
    grouped.to_csv(out, sep="\\t", index=False)
    keys = len(grouped)
else:
    import contextlib
    from ltrfeat.clicks import read_click_log, write_positioned
    from ltrfeat.core.dask_cluster import dask_client
    with (dask_client(dask) if dask != "-" else contextlib.nullcontext()) as client:
        log_ = read_click_log(log, chunk_rows=int(chunk), client=client)
    write_positioned(log_, out)
    keys = len(log_.positioned)
print(json.dumps({"seconds": time.perf_counter() - start, "peak_rss_bytes": peak(), "keys": keys}))
"""


def generate(path: Path, rows: int, n_queries: int, *, seed: int = 0) -> None:
    """Write the impression-level TSV (see the module docstring), a million rows at a time."""
    rng = np.random.default_rng(seed)
    weights = 1.0 / np.arange(1, n_queries + 1) ** 0.9
    weights /= weights.sum()
    names = np.array([f"query {q} {'abcdefgh'[q % 8]}word" for q in range(n_queries)], dtype=object)
    examine = 0.3 * np.arange(1, SHOWN + 1) ** -0.8
    sessions = rows // SHOWN
    with open(path, "w") as fh:
        fh.write("session\tquery\tdocid\tposition\tclicked\n")
        for start in range(0, sessions, 100_000):
            n = min(100_000, sessions - start)
            query = rng.choice(n_queries, size=n, p=weights)
            shown = np.argsort(rng.random((n, POOL)), axis=1)[:, :SHOWN]  # 10 of the query's 20 documents
            clicked = (rng.random((n, SHOWN)) < examine).astype(np.int8)
            session = np.repeat(np.arange(start + 1, start + n + 1), SHOWN)
            docid = (np.repeat(query, SHOWN) * POOL + shown.ravel()).astype(str)
            lines = [
                f"s{s}\t{q}\tD{d}\t{p}\t{c}\n"
                for s, q, d, p, c in zip(
                    session.tolist(),
                    np.repeat(names[query], SHOWN).tolist(),
                    docid.tolist(),
                    np.tile(np.arange(1, SHOWN + 1), n).tolist(),
                    clicked.ravel().tolist(),
                )
            ]
            fh.write("".join(lines))


def run(how: str, log: Path, out: Path, *, chunk: int, dask: str | None) -> dict:
    done = subprocess.run(
        [sys.executable, "-c", CHILD, how, str(log), str(out), str(chunk), dask or "-"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT), "CI": "1"},
    )
    if done.returncode:
        sys.exit(f"{how} failed: {done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def same_output(a: Path, b: Path) -> bool:
    import pandas as pd

    def load(path):
        frame = pd.read_csv(path, sep="\t", dtype={"query": str, "docid": str}, keep_default_na=False)
        return frame.sort_values(["query", "docid", "position"]).reset_index(drop=True)

    return load(a).equals(load(b))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--queries", type=int, default=20_000)
    parser.add_argument("--chunk-rows", type=int, default=1_000_000)
    parser.add_argument("--dask", default=None, metavar="local[:N]", help="also run on this Dask cluster")
    parser.add_argument("--keep", type=Path, default=None, help="generate into (or reuse) this directory")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(dir=args.keep) as tmp:
        work = args.keep or Path(tmp)
        log = work / f"impressions_{args.rows}.tsv"
        if not log.exists():
            start = time.perf_counter()
            generate(log, args.rows, args.queries)
            print(f"generated {log} ({log.stat().st_size / 2**20:.0f} MiB) in {time.perf_counter() - start:.0f} s")
        figures: dict = {"rows": args.rows, "queries": args.queries, "chunk_rows": args.chunk_rows}
        figures["log_bytes"] = log.stat().st_size
        runs = {"streaming": (None,), "naive_pandas": (None,)} | ({"dask": (args.dask,)} if args.dask else {})
        outs = {}
        for name, (dask,) in runs.items():
            outs[name] = work / f"{name}.tsv"
            how = "naive" if name == "naive_pandas" else "ours"
            figures[name] = run(how, log, outs[name], chunk=args.chunk_rows, dask=dask) | (
                {"dask": dask} if dask else {}
            )
            point = figures[name]
            print(
                f"{name:>12}: {point['seconds']:6.1f} s, peak RSS {point['peak_rss_bytes'] / 2**20:6.0f} MiB, "
                f"{point['keys']:,} (query, docid, position) keys"
            )
        figures["same_output"] = all(same_output(outs["naive_pandas"], outs[n]) for n in outs if n != "naive_pandas")
        ours, naive = figures["streaming"], figures["naive_pandas"]
        figures["peak_rss_gib"] = ours["peak_rss_bytes"] / GIB
        figures["peak_rss_ratio_streaming_over_naive"] = ours["peak_rss_bytes"] / naive["peak_rss_bytes"]
        figures["time_ratio_streaming_over_naive"] = ours["seconds"] / naive["seconds"]
        figures["under_2_gib"] = ours["peak_rss_bytes"] < 2 * GIB
        print(
            f"streaming / naive pandas: peak RSS {figures['peak_rss_ratio_streaming_over_naive']:.2f}x, "
            f"time {figures['time_ratio_streaming_over_naive']:.2f}x; same output: {figures['same_output']}; "
            f"peak {figures['peak_rss_gib']:.2f} GiB (target < 2 GiB)"
        )
        for path in outs.values():
            path.unlink(missing_ok=True)
    print(f"wrote {write_results('clicks_aggregate', figures)}")


if __name__ == "__main__":
    sys.exit(main())
