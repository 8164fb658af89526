"""Extraction throughput on Dask: one process vs a LocalCluster of 1 and 2 workers (lexical + CLSM).

Generates a LETOR file of N judged pairs (default 1M; queries of 1-150 documents), a document table
(titles from a Zipfian vocabulary) and an untrained default-size CLSM bundle (300 conv, 128 out; the
speed does not depend on the weights). Then, in one run:

- ``local``: :func:`ltrfeat.features.extract.extract_file` in this process (torch uses every core);
- ``dask_1`` / ``dask_2``: :func:`ltrfeat.features.dask_extract.extract_file_dask` on a LocalCluster of 1 / 2
  single-threaded worker processes (cluster start-up excluded, shipping the extractors included);
- ``noop``: the same two paths with an extractor that only returns zeros, which measures the client's
  serial work (parse, join, write) and the per-partition overhead of the cluster round trip.

Prints throughputs as ratios against ``local`` and writes ``results/bench_dask.json``. The machine has
2 cores shared with the client process (and other users), so 2 workers cannot show a clean 2x here.

Run: python benchmarks/bench_dask.py [--pairs 1000000] [--partition-queries 500]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._common import write_results  # noqa: E402

LEXICAL = "bm25,tf,idf,lm_dirichlet,coverage,bigram_match"


class Zeros(BaseEstimator):
    """An extractor that does nothing: isolates the pipeline's own costs."""

    feature_source = "bench"

    def fit(self, docs, queries=None):
        self.fitted_ = True
        return self

    def feature_names(self):
        return ["zero"]

    def transform(self, pairs):
        return np.zeros((len(pairs), 1), dtype=np.float32)


def generate(root: Path, n_pairs: int, seed: int = 0):
    from ltrfeat.core.dataset import FeatureMap, RankingSet
    from ltrfeat.core.letor import write_letor

    rng = np.random.default_rng(seed)
    vocab = np.array([f"term{i}" for i in range(5000)])
    p = 1.0 / np.arange(1, len(vocab) + 1)
    p /= p.sum()
    n_docs = max(1000, n_pairs // 10)
    sizes = []
    while sum(sizes) < n_pairs:
        sizes.append(int(rng.integers(1, 151)))
    sizes[-1] -= sum(sizes) - n_pairs
    qids = [f"q{i}" for i in range(len(sizes))]
    docs = pd.DataFrame(
        {
            "docid": [f"d{i}" for i in range(n_docs)],
            "title": [" ".join(rng.choice(vocab, int(rng.integers(4, 12)), p=p)) for _ in range(n_docs)],
        }
    )
    queries = pd.DataFrame(
        {"qid": qids, "query": [" ".join(rng.choice(vocab, int(rng.integers(1, 5)), p=p)) for _ in qids]}
    )
    qid = np.repeat(qids, sizes)
    docid = np.char.add("d", rng.integers(0, n_docs, n_pairs).astype(str)).astype(object)
    X = rng.random((n_pairs, 5)).astype(np.float32)
    data = RankingSet(
        qid,
        rng.integers(0, 3, n_pairs).astype(float),
        X,
        FeatureMap.from_ids([1, 2, 3, 4, 5]),
        docid=docid,
        comment=[f"docid = {d}" for d in docid.tolist()],
    )
    write_letor(root / "in.letor", data, write_feature_map=False)
    return queries, docs, len(sizes)


def clsm_bundle(root: Path, docs, queries) -> Path:
    import torch

    from ltrfeat.encoders.encoder import Encoder
    from ltrfeat.encoders.model import TwoTowerModel, model_config
    from ltrfeat.encoders.hashing import TrigramHasher

    torch.manual_seed(0)
    hasher = TrigramHasher().fit(list(docs["title"]) + list(queries["query"]))
    Encoder(hasher, TwoTowerModel(model_config("clsm", hasher.n_features_))).save(root / "clsm.ltrenc")
    return root / "clsm.ltrenc"


def agreement(path: Path, reference: Path) -> str:
    """``"byte-identical"``, or the largest difference of any value (CLSM cosines round differently
    in other batch shapes; everything else must be equal)."""
    if path.read_bytes() == reference.read_bytes():
        return "byte-identical"
    from ltrfeat.core.letor import read_letor

    a, b = read_letor(path), read_letor(reference)
    same_rows = (a.qid == b.qid).all() and (a.label == b.label).all() and (a.comment == b.comment).all()
    return f"rows identical: {bool(same_rows)}, max |value difference| {float(np.abs(a.X - b.X).max()):.1e}"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=1_000_000)
    parser.add_argument("--partition-queries", type=int, default=500)
    args = parser.parse_args()

    import distributed

    from ltrfeat.features.dask_extract import DaskScheduling, extract_file_dask
    from ltrfeat.features.extract import extract_file, lexical_extractors
    from ltrfeat.features.neural import EncoderExtractor

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        start = time.perf_counter()
        queries, docs, n_queries = generate(root, args.pairs)
        bundle = clsm_bundle(root, docs, queries)
        print(
            f"generated {args.pairs} pairs, {n_queries} queries, {len(docs)} documents "
            f"in {time.perf_counter() - start:.1f}s; partitions of {args.partition_queries} queries "
            f"({-(-n_queries // args.partition_queries)} partitions)"
        )

        def full():
            return lexical_extractors(LEXICAL, fields=["title"]) + [
                EncoderExtractor(name="clsm", path=str(bundle), field="title")
            ]

        def run_local(make, name):
            t = time.perf_counter()
            extract_file(
                root / "in.letor",
                root / f"{name}.letor",
                queries=queries,
                docs=docs,
                extractors=make(),
                chunk_queries=args.partition_queries,
                progress=False,
            )
            return time.perf_counter() - t

        seconds = {"local": run_local(full, "local"), "noop_local": run_local(lambda: [Zeros()], "noop_local")}
        for workers in (1, 2):
            with (
                distributed.LocalCluster(
                    n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=":0"
                ) as cluster,
                distributed.Client(cluster) as client,
            ):
                for name, make in ((f"dask_{workers}", full), (f"noop_dask_{workers}", lambda: [Zeros()])):
                    t = time.perf_counter()
                    extract_file_dask(
                        root / "in.letor",
                        root / f"{name}.letor",
                        queries=queries,
                        docs=docs,
                        extractors=make(),
                        client=client,
                        scheduling=DaskScheduling(partition_queries=args.partition_queries),
                        progress=False,
                    )
                    seconds[name] = time.perf_counter() - t
            print(f"  {workers} worker(s) done", flush=True)
        identical = {name: agreement(root / f"{name}.letor", root / "local.letor") for name in ("dask_1", "dask_2")}

    n_parts = -(-n_queries // args.partition_queries)
    rate = {name: args.pairs / s for name, s in seconds.items()}
    overhead = (seconds["noop_dask_2"] - seconds["noop_local"]) / n_parts
    figures = {
        "pairs": args.pairs,
        "queries": n_queries,
        "documents": len(docs),
        "partitions": n_parts,
        "extractors": f"lexical ({LEXICAL}) on title + CLSM 300/128 on title",
        "seconds": seconds,
        "pairs_per_s": rate,
        "ratio_vs_local": {name: rate[name] / rate["local"] for name in ("dask_1", "dask_2")},
        "speedup_2_vs_1_workers": seconds["dask_1"] / seconds["dask_2"],
        "client_serial_pairs_per_s": rate["noop_local"],
        "per_partition_overhead_s": overhead,
        "worker_compute_pairs_per_s": args.pairs / max(1e-9, seconds["dask_1"] - seconds["noop_dask_1"]),
        "output_vs_local": identical,
    }
    print(f"local (1 process, torch on all cores): {rate['local']:>9.0f} pairs/s  (1.00)")
    for name in ("dask_1", "dask_2"):
        print(
            f"{name:<37}: {rate[name]:>9.0f} pairs/s  ({figures['ratio_vs_local'][name]:.2f}x local)"
            f"  output vs local: {identical[name]}"
        )
    print(f"2 workers vs 1 worker: {figures['speedup_2_vs_1_workers']:.2f}x")
    shown = f"{1000 * overhead:.1f} ms" if overhead > 0 else f"below the noise ({1000 * overhead:.1f} ms measured)"
    print(
        f"client serial work (no-op extractor, local): {rate['noop_local']:.0f} pairs/s; "
        f"per-partition cluster overhead: {shown}"
    )
    print(f"one worker's extraction compute: {figures['worker_compute_pairs_per_s']:.0f} pairs/s")
    print(f"wrote {write_results('bench_dask', figures)}")


if __name__ == "__main__":
    main()
