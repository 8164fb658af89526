"""Speed and peak memory of the LETOR reader on a generated MSLR-like file.

The file: ``--rows`` lines (default 300,000) of ``label qid:Q 1:v ... 136:v #docid = D inc = 1 prob = p``,
about 20 rows per query, values like MSLR-WEB's (small integer counts and 6-decimal floats).
Baseline, in the same process: ``sklearn.datasets.load_svmlight_file(query_id=True)``, which
drops the comments. Each reader is timed once, ours first (``--repeat`` to change).

Peak memory of ``read_letor`` is measured in a fresh subprocess with ``tracemalloc`` (numpy
reports its buffers to it), as a ratio to the float32 matrix it returns (``ru_maxrss`` is not used: Linux carries
the parent's peak into a forked child). Target: ours ≥ 2× scikit-learn's rows/s, peak ≤ 2.5× the matrix.

    python benchmarks/bench_letor.py            # full size
    python benchmarks/bench_letor.py --rows 30000
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
from _common import ROOT, timed, write_results

N_FEATURES = 136


def generate(path: Path, rows: int, *, seed: int = 0) -> None:
    """Write the MSLR-like file; feature parts come from 4,000 distinct random rows."""
    rng = np.random.default_rng(seed)
    n_bodies = 4000
    counts = rng.poisson(3.0, size=(n_bodies, N_FEATURES)).astype(str)
    floats = np.char.mod("%.6f", rng.gamma(1.0, 2.0, size=(n_bodies, N_FEATURES)) * rng.choice([1, -1], (n_bodies, 1)))
    use_float = rng.random(N_FEATURES) < 0.6
    bodies = [
        " ".join(f"{j + 1}:{floats[i, j] if use_float[j] else counts[i, j]}" for j in range(N_FEATURES))
        for i in range(n_bodies)
    ]
    pick = rng.integers(0, n_bodies, rows)
    labels = rng.choice(5, rows, p=[0.5, 0.3, 0.13, 0.05, 0.02])
    probs = rng.random(rows)
    with open(path, "w") as fh:
        for start in range(0, rows, 50_000):
            fh.write(
                "".join(
                    f"{labels[r]} qid:{r // 20 + 1} {bodies[pick[r]]} #docid = D{r} inc = 1 prob = {probs[r]:.6f}\n"
                    for r in range(start, min(rows, start + 50_000))
                )
            )


_MEMORY_PROBE = """
import json, sys, tracemalloc
from ltrfeat.core.letor import read_letor
tracemalloc.start()
data = read_letor(sys.argv[1])
current, peak = tracemalloc.get_traced_memory()
print(json.dumps({"peak": peak, "matrix": data.X.nbytes}))
"""


def memory(path: Path) -> dict:
    out = subprocess.run(
        [sys.executable, "-c", _MEMORY_PROBE, str(path)],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    return json.loads(out.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=300_000)
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args()

    from sklearn.datasets import load_svmlight_file

    from ltrfeat.core.letor import read_letor

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "mslr_like.txt"
        start = time.perf_counter()
        generate(path, args.rows)
        size_mb = path.stat().st_size / 1e6
        print(
            f"generated {args.rows:,} rows x {N_FEATURES} features, {size_mb:.0f} MB "
            f"in {time.perf_counter() - start:.1f} s"
        )

        ours_s, data = timed(lambda: read_letor(path), repeat=args.repeat)
        assert len(data) == args.rows and data.n_features == N_FEATURES and data.comment is not None
        del data
        sk_s, (X, y, qid) = timed(lambda: load_svmlight_file(str(path), query_id=True), repeat=args.repeat)
        assert X.shape == (args.rows, N_FEATURES)
        del X, y, qid
        mem = memory(path)

    ours_rps, sk_rps = args.rows / ours_s, args.rows / sk_s
    figures = {
        "rows": args.rows,
        "features": N_FEATURES,
        "file_mb": round(size_mb, 1),
        "ours_seconds": round(ours_s, 3),
        "ours_rows_per_s": round(ours_rps),
        "ours_mb_per_s": round(size_mb / ours_s, 1),
        "sklearn_seconds": round(sk_s, 3),
        "sklearn_rows_per_s": round(sk_rps),
        "sklearn_mb_per_s": round(size_mb / sk_s, 1),
        "speed_ratio_ours_over_sklearn": round(ours_rps / sk_rps, 2),
        "peak_tracemalloc_bytes": mem["peak"],
        "matrix_bytes": mem["matrix"],
        "peak_over_matrix": round(mem["peak"] / mem["matrix"], 2),
        "memory_method": "tracemalloc peak in a fresh subprocess (numpy buffers included)",
    }
    print(
        f"read_letor (keeps qids, comments, docids): {ours_s:7.2f} s  {ours_rps:9,.0f} rows/s  "
        f"{size_mb / ours_s:6.1f} MB/s"
    )
    print(
        f"sklearn load_svmlight_file(query_id=True): {sk_s:7.2f} s  {sk_rps:9,.0f} rows/s  {size_mb / sk_s:6.1f} MB/s"
    )
    print(f"ratio ours / sklearn rows/s: {ours_rps / sk_rps:.2f}x   (target >= 2x)")
    print(
        f"peak memory (tracemalloc): {mem['peak'] / 1e6:.0f} MB = {figures['peak_over_matrix']:.2f}x the float32 "
        f"matrix ({mem['matrix'] / 1e6:.0f} MB; target <= 2.5x)"
    )
    print(f"wrote {write_results('bench_letor', figures)}")


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    main()
