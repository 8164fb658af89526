"""Feature extraction on a Dask cluster, row for row identical to :func:`ltrfeat.features.extract.extract_file`.

The client streams the input by query (:func:`~ltrfeat.core.letor.iter_letor`: a partition never
splits a query), joins each partition to its query and document texts, and submits the joined
partition to the cluster; workers run the fitted extractors and send back only the new columns
(float32). The client writes the results strictly in input order through the same
:class:`~ltrfeat.core.letor.LetorWriter` as a local run, so the output and its ``.features.json`` are
byte-identical to the single-machine run. At most ``in_flight`` partitions are on the cluster at a time
(backpressure: memory on the client stays bounded by that window).

The fitted extractors travel once per worker in a :class:`distributed.WorkerPlugin` (also re-run on
workers that join or restart later): lexical extractors with their fitted corpus statistics as
pickled objects of this process (our own data, sent to our own workers), neural encoders as the bytes
of their ``.ltrenc`` bundle, loaded once per worker (never unpickled). Each worker keeps its
encoders' vector caches across partitions.

A partition whose worker dies is recomputed elsewhere (the scheduler reschedules it, and ``retries``
re-runs failed tasks); when it still fails the run raises :class:`~ltrfeat.core.errors.LtrfeatError`
and the output file is never put in place (``LetorWriter`` writes a temporary file and renames it only
after the last partition).
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import itertools
import pickle
import uuid
from numbers import Integral, Real
from pathlib import Path
from typing import ClassVar

import numpy as np

from ltrfeat.core.dask_cluster import worker_addresses
from ltrfeat.core.dataset import RankingSet
from ltrfeat.core.errors import LtrfeatError, TextTableError
from ltrfeat.features.extract import (
    _append_columns,
    _check_missing,
    _doc_fields,
    _join,
    _MissingTally,
    _output_map,
    _progress,
    _TextIndex,
    _transform,
    finish_guard,
    fit_extractors,
    watch_queries,
)
from ltrfeat.encoders.leakage import LeakageGuard
from ltrfeat.core.letor import LetorWriter, iter_letor
from ltrfeat.core.settings import Interval, Settings
from ltrfeat.features.neural import EncoderExtractor

try:
    import cloudpickle
    import distributed
    from distributed.diagnostics.plugin import WorkerPlugin
except ImportError:  # the optional `dask` extra is not installed
    distributed = None
    WorkerPlugin = object

_STATES: dict[str, list] = {}  # worker side: fitted extractors by run token


# ---------------------------------------------------------------------------- shipping extractors


def pack_extractors(extractors) -> bytes:
    """Fitted extractors as bytes for the workers: encoder extractors as their bundle bytes and
    parameters (reloaded on the worker), everything else as the fitted object itself."""
    items = []
    for ex in extractors:
        if isinstance(ex, EncoderExtractor):
            path = None if ex.path is None else Path(ex.path)
            bundle = path.read_bytes() if path is not None and path.is_file() else None
            items.append(("encoder", ex.get_params(), bundle))
        else:
            items.append(("object", ex, None))
    return cloudpickle.dumps(items)


def unpack_extractors(payload: bytes, directory) -> list:
    """The extractors of :func:`pack_extractors`, encoders loaded from bundles written to ``directory``."""
    extractors = []
    for k, (kind, value, bundle) in enumerate(pickle.loads(payload)):
        if kind == "object":
            extractors.append(value)
            continue
        params = dict(value)
        if bundle is not None:
            path = Path(directory) / f"ltrfeat-{uuid.uuid4().hex}-{k}.ltrenc"
            path.write_bytes(bundle)
            params["path"] = str(path)
        extractors.append(EncoderExtractor(**params).fit())
    return extractors


class ExtractorsPlugin(WorkerPlugin):
    """Loads a run's fitted extractors once on every worker (including workers started later)."""

    def __init__(self, token: str, payload: bytes):
        self.token = token
        self.name = f"ltrfeat-extract-{token}"
        self.payload = payload

    def setup(self, worker):
        if any(kind == "encoder" for kind, _, _ in pickle.loads(self.payload)):
            import torch

            torch.set_num_threads(max(1, int(worker.state.nthreads)))
        _STATES[self.token] = unpack_extractors(self.payload, worker.local_directory)

    def teardown(self, worker):
        _STATES.pop(self.token, None)


def _transform_partition(token: str, pairs, ok: np.ndarray, missing: str) -> list[np.ndarray]:
    """Worker task: the new column blocks of one joined partition."""
    try:
        extractors = _STATES[token]
    except KeyError:
        raise RuntimeError(f"worker has no extractors for run {token} (plugin not set up)") from None
    return _transform(extractors, pairs, ok, missing)


# ---------------------------------------------------------------------------- the run


@dataclasses.dataclass(frozen=True)
class DaskScheduling(Settings):
    """How a run's partitions are cut and sent to the cluster.

    partition_queries : queries per partition (a task); partitions never split a query.
    in_flight : partitions on the cluster at a time (None: twice the number of workers).
    retries : re-runs of a failed partition task (a dead worker's tasks are rescheduled anyway).
    timeout : seconds to wait for any one partition (None: no limit).
    """

    label: ClassVar[str] = "Dask scheduling"
    _parameter_constraints: ClassVar[dict] = {
        "partition_queries": [Interval(Integral, 1, None)],
        "in_flight": [Interval(Integral, 1, None), None],
        "retries": [Interval(Integral, 0, None)],
        "timeout": [Interval(Real, 0, None, closed="neither"), None],
    }
    _fixes: ClassVar[dict] = {"timeout": "seconds, or None: no limit"}
    partition_queries: int = 1000
    in_flight: int | None = None
    retries: int = 2
    timeout: float | None = None


class _Run:
    """Submits joined partitions and yields ``(chunk, blocks)`` in input order."""

    def __init__(self, client, extractors, *, queries, docs, missing, scheduling: DaskScheduling, source):
        self.client, self.extractors, self.missing = client, extractors, missing
        self.fields = _doc_fields(docs, extractors)
        self.q_index, self.d_index = _TextIndex(queries, "qid", "query"), _TextIndex(docs, "docid", "document")
        self.in_flight = scheduling.in_flight or 2 * max(1, len(worker_addresses(client)))
        self.retries, self.timeout, self.source = scheduling.retries, scheduling.timeout, source
        self.tally = _MissingTally()
        self.rows = 0

    def results(self, chunks):
        token = uuid.uuid4().hex
        plugin = ExtractorsPlugin(token, pack_extractors(self.extractors))
        self.client.register_plugin(plugin)
        pending: collections.deque = collections.deque()
        try:
            for index, chunk in enumerate(chunks):
                pairs, ok = _join(chunk, self.q_index, self.d_index, self.fields, self.tally, self.rows)
                first_row = self.rows
                self.rows += len(chunk)
                if self.tally.rows and self.missing == "error":
                    self._cancel(pending)  # keep scanning only to report every missing id
                    continue
                future = self.client.submit(
                    _transform_partition,
                    token,
                    pairs,
                    ok,
                    self.missing,
                    key=f"ltrfeat-extract-{token}-{index}",
                    retries=self.retries,
                    pure=False,
                )
                pending.append((chunk, future, index, first_row))
                while len(pending) >= self.in_flight:
                    yield self._collect(pending)
            if self.tally.rows and self.missing == "error":
                raise TextTableError(
                    self.tally.message(),
                    path=self.source,
                    fix="add the texts to the queries/documents tables, or pass --missing nan|zero",
                )
            while pending:
                yield self._collect(pending)
        finally:
            self._cancel(pending)
            with contextlib.suppress(Exception):
                self.client.unregister_worker_plugin(plugin.name)

    def _collect(self, pending):
        chunk, future, index, first_row = pending.popleft()
        try:
            blocks = future.result(timeout=self.timeout)
        except LtrfeatError:
            raise
        except Exception as exc:  # KilledWorker, lost data, a timeout, an extractor's own error
            problem = " ".join(str(exc).split())[:300] or type(exc).__name__
            raise LtrfeatError(
                f"partition {index} (rows {first_row + 1}-{first_row + len(chunk)}) failed on the "
                f"Dask cluster: {type(exc).__name__}: {problem}; no output was written",
                path=self.source,
                fix="check the workers' logs (memory, killed processes) and rerun",
            ) from exc
        return chunk, blocks

    @staticmethod
    def _cancel(pending) -> None:
        if pending:
            for _, future, _, _ in pending:
                future.cancel()
            pending.clear()


def extract_file_dask(
    in_path,
    out_path,
    *,
    queries,
    docs,
    extractors,
    client,
    missing: str = "error",
    scheduling: DaskScheduling | None = None,
    progress: bool = True,
    strict: bool = False,
) -> int:
    """:func:`ltrfeat.features.extract.extract_file` with the extractors running on a Dask cluster.

    Parameters
    ----------
    queries, docs, extractors, missing, progress, strict : as for ``extract_file``; unfitted extractors
        are fitted here (on the client) and shipped to every worker once.
    client : a :class:`distributed.Client` (see :func:`dask_client`).
    scheduling : partition size, partitions in flight, retries and timeout (default :class:`DaskScheduling()`).

    Returns the number of rows written. The output is byte-identical to ``extract_file``'s.
    """
    _check_missing(missing)
    scheduling = scheduling or DaskScheduling()
    extractors = fit_extractors(extractors, docs, queries)
    run = _Run(client, extractors, queries=queries, docs=docs, missing=missing, scheduling=scheduling, source=in_path)
    chunks = iter_letor(in_path, chunk_queries=scheduling.partition_queries)
    first = next(chunks, None)
    if first is None:
        raise LtrfeatError("the input has no rows", path=in_path, fix="check the input file")
    out_map = _output_map(first.feature_map, extractors)
    guard, q_index = LeakageGuard(extractors, strict=strict), _TextIndex(queries, "qid", "query")
    with _progress(progress) as bar, LetorWriter(out_path, out_map) as writer:
        for chunk, blocks in run.results(itertools.chain([first], chunks)):
            watch_queries(guard, chunk.qid, q_index)
            writer.write(_append_columns(chunk, extractors, blocks))
            bar.update(len(chunk))
        writer.feature_map = finish_guard(guard, writer.feature_map)
    return run.rows


def extract_ranking_dask(
    data: RankingSet,
    extractors,
    *,
    queries,
    docs,
    client,
    missing: str = "error",
    scheduling: DaskScheduling | None = None,
    strict: bool = False,
) -> RankingSet:
    """:func:`ltrfeat.features.extract.extract_ranking` on a Dask cluster (``data`` partitioned by query)."""
    _check_missing(missing)
    scheduling = scheduling or DaskScheduling()
    extractors = fit_extractors(extractors, docs, queries)
    _output_map(data.feature_map, extractors)
    guard = LeakageGuard(extractors, strict=strict)
    watch_queries(guard, data.qid, _TextIndex(queries, "qid", "query"))
    partition_queries = scheduling.partition_queries
    bounds = data.query_boundaries()
    cuts = bounds[::partition_queries].tolist() + ([] if (len(bounds) - 1) % partition_queries == 0 else [len(data)])
    chunks = (data.take(np.arange(a, b)) for a, b in zip(cuts[:-1], cuts[1:]))
    run = _Run(client, extractors, queries=queries, docs=docs, missing=missing, scheduling=scheduling, source=None)
    parts = [blocks for _, blocks in run.results(chunks)]
    joined = [
        np.concatenate([p[k] for p in parts]) if parts else np.zeros((0, len(ex.feature_names())), np.float32)
        for k, ex in enumerate(extractors)
    ]
    out = _append_columns(data, extractors, joined)
    return dataclasses.replace(out, feature_map=finish_guard(guard, out.feature_map))
