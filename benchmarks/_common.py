"""Shared benchmark plumbing: timing, peak memory, environment facts and the results file.

Every benchmark prints its figures as ratios against a baseline measured in the same run, and writes
``benchmarks/results/<name>.json`` with the figures plus the environment they were measured in.
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import time
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"
ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"

_PACKAGES = (
    "numpy",
    "scipy",
    "pandas",
    "scikit-learn",
    "lightgbm",
    "xgboost-cpu",
    "torch",
    "rank-bm25",
    "bm25s",
    "sentence-transformers",
)


def run_ltrfeat(*args, capture: bool = False):
    """Run ``ltrfeat ARGS`` from the checkout (``CI=1``: no progress bars); its stdout with ``capture``, else its
    wall seconds. A failure ends the benchmark with the command and the end of its stderr."""
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "ltrfeat.cli.main", *map(str, args)],
        cwd=ROOT,
        text=True,
        capture_output=True,
        env={**os.environ, "CI": "1"},
    )
    if done.returncode:
        sys.exit(f"ltrfeat {' '.join(map(str, args[:3]))} failed: {done.stderr[-3000:]}")
    return done.stdout if capture else time.perf_counter() - start


def timed(fn, *, repeat: int = 3):
    """Best wall time of ``repeat`` calls and the last call's result."""
    best, result = float("inf"), None
    for _ in range(repeat):
        start = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - start)
    return best, result


def environment() -> dict:
    """Hardware, threads, library versions and git commit, for the results file."""
    try:
        head = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=True
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        head = None
    cpuinfo = Path("/proc/cpuinfo")
    model = None
    if cpuinfo.exists():
        model = next(
            (
                line.split(":", 1)[1].strip()
                for line in cpuinfo.read_text().splitlines()
                if line.startswith("model name")
            ),
            None,
        )
    versions = {}
    for name in _PACKAGES:
        try:
            versions[name] = version(name)
        except PackageNotFoundError:
            pass
    threads = {}
    if "torch" in sys.modules:
        threads["torch"] = sys.modules["torch"].get_num_threads()
    return {
        "cpu_count": os.cpu_count(),
        "cpu_model": model or platform.processor(),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "threads": threads,
        "versions": versions,
        "git_head": head,
        "load_average": os.getloadavg() if hasattr(os, "getloadavg") else None,
    }


def write_results(name: str, figures: dict) -> Path:
    """Write ``results/<name>.json`` (figures + environment) and return its path."""
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"{name}.json"
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(
        json.dumps({"benchmark": name, "figures": figures, "environment": environment()}, indent=1, default=float)
        + "\n"
    )
    os.replace(tmp, path)
    return path


HOME_DEPOT = SHARED / "datasets" / "home_depot" / "raw" / "train.csv"
HOME_DEPOT_COLUMNS = "query=search_term,doc=product_title,docid=product_uid,label=relevance"


def home_depot_pairs():
    """Home Depot judged pairs (labels 1..3 -> grades 0..6) and the products table (first title per id)."""
    import warnings

    from ltrfeat.core.text import pairs_to_ranking, read_judged_pairs

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # 15 retitled products keep their first title
        pairs = read_judged_pairs(
            HOME_DEPOT, columns=HOME_DEPOT_COLUMNS, encoding="ISO-8859-1", label_map="linear:1:3:7"
        )
        _, _, docs = pairs_to_ranking(pairs, conflicts="first")
    return pairs, docs


def report_means(report: Path, metrics) -> dict[str, float]:
    """``{"SET|METRIC": mean}`` of an ablation report's feature sets (no ranker variants) at ``metrics``."""
    rep = json.loads((Path(report) / "report.json").read_text())
    return {
        f"{r['feature_set']}|{r['metric']}": r["mean"]
        for r in rep["results"]
        if "/" not in r["feature_set"] and r["metric"] in metrics
    }


def scoring_speed(cache: Path, titles: list[str], specs: list[str]) -> dict:
    """Titles scored per CPU second (one torch thread) by the document tower of each span pre-trained encoder of
    ``specs`` (its newest ``-pretrain-`` bundle in ``cache``, hashing included) and by MiniLM; ``ratio``: each
    encoder's rate over MiniLM's, and with two or more specs ``all`` (every tower in turn, as serving all of
    them as columns does: 1 / the sum of 1 / rate)."""
    import torch

    from ltrfeat.encoders.encoder import Encoder
    from ltrfeat.encoders.sbert import SbertEncoder
    from ltrfeat.encoders.hashing import TrigramHasher

    torch.set_num_threads(1)
    students = {}
    for spec in specs:
        name = spec.replace(":", "-").replace("+", "-")
        bundle = max((Path(cache) / "encoders").glob(f"{name}-pretrain-*.ltrenc"), key=lambda p: p.stat().st_mtime)
        students[name] = Encoder.load(bundle)
    minilm = SbertEncoder.load()
    minilm.encode(titles[:64], side="doc")  # warm-up
    cpu: dict[str, list[float]] = {name: [] for name in [*students, "minilm"]}
    for _ in range(2):  # alternating rounds
        for name, student in students.items():
            hasher = TrigramHasher.from_json(student.hasher.to_json())  # a fresh hasher: no cached trigrams
            start = time.process_time()
            Encoder(hasher, student.model).encode(titles, side="doc", batch_size=1024)
            cpu[name].append(time.process_time() - start)
        start = time.process_time()
        minilm.encode(titles, side="doc", batch_size=64)
        cpu["minilm"].append(time.process_time() - start)
    rate = {name: len(titles) / min(seconds) for name, seconds in cpu.items()}
    if len(students) > 1:
        rate["all"] = 1 / sum(1 / rate[name] for name in students)
    ratio = {name: r / rate["minilm"] for name, r in rate.items() if name != "minilm"}
    return {
        "titles": len(titles),
        "texts_per_cpu_s": rate,
        "ratio": ratio if len(specs) > 1 else next(iter(ratio.values())),
    }
