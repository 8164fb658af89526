"""Cross-fitted encoder trainings as tasks of a Dask cluster (``ablate --dask``).

:class:`DaskTrainings` runs the same :class:`~ltrfeat.experiments._training_task.TrainingTask` list as the local
pool (:func:`ltrfeat.experiments._encoder_pool.run_trainings`), through the same worker entry
(:func:`~ltrfeat.experiments._encoder_pool.fit_task`) at the same torch thread count, so the scores equal a local
run's. A training that continues another (``after``) gets that task's future as an argument: Dask starts it when
the other one has finished, the costliest ready ones first (``priority``).

What a task reads besides its arguments -- MiniLM teacher vectors, frozen-layer states, a starting bundle, its
encoder in the run's cache -- reaches the workers one of two ways:

* ``transfer=False`` (the default on a ``LocalCluster``, whose workers share this machine's files): by path, as
  the local pool does; the workers write the run's cache themselves.
* ``transfer=True`` (the default on any other cluster): by Dask's own transfer. Each file or directory is packed
  once, scattered once and unpacked once per worker process; an encoder comes back as its bundle's bytes when the
  run has a cache (written there by this process) or another training continues it.
"""

from __future__ import annotations

import dataclasses
import hashlib
import shutil
import tempfile
import uuid
from collections.abc import Callable
from pathlib import Path

from ltrfeat.core.dask_cluster import worker_addresses
from ltrfeat.core.fileio import atomic_output
from ltrfeat.core.processes import freed_memory_kept
from ltrfeat.experiments import _encoder_pool
from ltrfeat.experiments._training_task import TrainingTask


@dataclasses.dataclass(frozen=True)
class Packed:
    """A file or directory as bytes: ``files`` maps relative paths ('' for a single file) to their contents."""

    digest: str
    files: dict[str, bytes]
    name: str  # the file's or directory's name, kept on the worker (a bundle's loader reads its suffix)

    @classmethod
    def of(cls, path) -> "Packed":
        path = Path(path)
        if path.is_file():
            files = {"": path.read_bytes()}
        else:
            files = {str(p.relative_to(path)): p.read_bytes() for p in sorted(path.rglob("*")) if p.is_file()}
        h = hashlib.sha256()
        for rel, data in files.items():
            h.update(rel.encode() + b"\x1f" + hashlib.sha256(data).digest())
        return cls(h.hexdigest()[:24], files, path.name)

    def unpack(self) -> str:
        """Its copy in this worker process's scratch directory (written on first use), as a path."""
        target = _scratch() / self.digest / self.name
        if not target.exists():
            for rel, data in self.files.items():
                out = target / rel if rel else target
                out.parent.mkdir(parents=True, exist_ok=True)
                with atomic_output(out, binary=True) as f:
                    f.write(data)
            if not self.files:  # an empty directory
                target.mkdir(parents=True)
        return str(target)


_SCRATCH: list[tempfile.TemporaryDirectory] = []  # this worker process's scratch directory, removed at its exit


def _scratch() -> Path:
    if not _SCRATCH:
        _SCRATCH.append(tempfile.TemporaryDirectory(prefix="ltrfeat-dask-"))
    return Path(_SCRATCH[0].name)


def bundle_path(cache, task: TrainingTask) -> Path:
    """Where :func:`ltrfeat.experiments._fold_trainer.train_one` keeps ``task``'s encoder in ``cache``."""
    return Path(cache) / "encoders" / f"{task.spec.name}-{task.key}.ltrenc"


def _on_worker(task: TrainingTask, train: Callable, shipped: dict, inner, transfer: bool, want_bundle: bool):
    """Dask task: unpack what was shipped, train through :func:`_encoder_pool.fit_task`, and hand back its result,
    the worker's address and (``want_bundle``) the encoder bundle's bytes."""
    import distributed

    where = f"dask worker {distributed.get_worker().address}"
    if not transfer:
        with freed_memory_kept():  # for this task only: the worker lives on (and Dask trims its memory)
            return (*_encoder_pool.fit_task(task, train), where, None)
    local = {name: packed.unpack() for name, packed in shipped.items()}
    cache = Path(tempfile.mkdtemp(dir=_scratch(), prefix="cache-"))
    task = dataclasses.replace(task, cache=cache, key=task.key or uuid.uuid4().hex, save_to=None)
    if "cached" in local:  # this training's encoder from the run's cache: only its scoring runs here
        bundle_path(cache, task).parent.mkdir(parents=True)
        shutil.copyfile(local["cached"], bundle_path(cache, task))
    task.teacher_dir, task.frozen_dir = local.get("teacher"), local.get("frozen")
    if inner is not None:  # the inner training this one continues: its bundle came with its result
        path = _scratch() / f"inner-{uuid.uuid4().hex}.ltrenc"
        path.write_bytes(inner[-1])
        task.start = _encoder_pool.FileStart(task.start.key, path, model=task.start.model)
    elif "start" in local:
        task.start = _encoder_pool.FileStart(task.start.key, local["start"], model=task.start.model)
    with freed_memory_kept():
        result = _encoder_pool.fit_task(task, train)
    bundle = bundle_path(cache, task).read_bytes() if want_bundle else None
    return (*result, where, bundle)


def _encode_on_worker(spec: str, texts: list[str], side: str, engine: str):
    """Dask task: MiniLM teacher vectors of ``texts`` on MiniLM engine ``engine`` (one thread, as the workers are
    single-threaded)."""
    import torch

    from ltrfeat.encoders import distill, sbert_onnx

    torch.set_num_threads(1)
    with sbert_onnx.engine(engine):
        return distill.teacher_vectors(distill.load_teacher(spec), texts, side=side)


def _frozen_on_worker(texts: list[str], base, settings: dict):
    """Dask task: MiniLM's frozen lower layers over ``texts`` (one torch thread), as the store key and the states
    :func:`~ltrfeat.encoders.sbert_prefix.save` writes, packed."""
    import torch

    from ltrfeat.encoders import sbert_prefix
    from ltrfeat.encoders.sbert_training import keep_frozen_states

    torch.set_num_threads(1)
    key = keep_frozen_states(texts, base=base, **settings)
    if key is None:
        return None, None
    directory = Path(tempfile.mkdtemp(dir=_scratch(), prefix="frozen-"))
    sbert_prefix.save(key, texts, directory)
    return key, Packed.of(directory)


def _shared_on_worker(teacher: str, whole: list[str], frozen: list[str], base, settings: dict, engine: str):
    """Dask task: :func:`~ltrfeat.encoders.sbert_shared.compute` over a part of the texts on MiniLM
    engine ``engine`` (one thread, nothing cached on the worker): the store key, the vectors of ``whole``
    (aligned) and the states of ``frozen``, packed as :func:`~ltrfeat.encoders.sbert_prefix.save` writes
    them."""
    import numpy as np
    import torch

    from ltrfeat.encoders import sbert_onnx, sbert_prefix, sbert_shared
    from ltrfeat.encoders.config import SbertConfig

    torch.set_num_threads(1)
    cfg = SbertConfig.build(None, settings)
    key = sbert_shared.states_key(teacher, cfg, base=base)
    with sbert_onnx.engine(engine):
        vectors, states, lower_only = sbert_shared.compute(teacher, whole, frozen, cfg, base=base)
    directory = Path(tempfile.mkdtemp(dir=_scratch(), prefix="frozen-"))
    sbert_prefix.write(key, states, directory)
    packed = Packed.of(directory)
    shutil.rmtree(directory)
    return key, np.stack([vectors[t] for t in whole]) if whole else None, packed, lower_only


class DaskTrainings:
    """Runs cross-fitted trainings on the cluster of ``client`` (see the module docstring); ``transfer``: ship
    inputs by Dask instead of by path (None: unless the cluster is a ``LocalCluster``). ``run`` has the
    arguments of :func:`~ltrfeat.experiments._encoder_pool.run_trainings` but ``workers``."""

    def __init__(self, client, *, transfer: bool | None = None):
        self.client = client
        self.transfer = transfer

    def workers(self) -> int:
        return max(1, len(worker_addresses(self.client)))

    def _transfers(self) -> bool:
        if self.transfer is not None:
            return self.transfer
        import distributed

        return not isinstance(getattr(self.client, "cluster", None), distributed.LocalCluster)

    def teacher_vectors(self, spec: str, texts, *, side: str, chunk: int = 512) -> int:
        """Encode the ``texts`` not yet cached here with teacher ``spec`` (``sbert[=DIR]``; the directory must be
        readable by the workers) on the cluster, ``chunk`` texts per task on this process's MiniLM engine, and cache
        the vectors in this process (:func:`ltrfeat.encoders.distill.add_vectors`). Returns how many texts
        were encoded."""
        from ltrfeat.encoders import distill, sbert_onnx

        key = distill.teacher_key(spec)
        missing = distill.missing_vectors(key, side, texts)
        parts = [missing[i : i + chunk] for i in range(0, len(missing), chunk)]
        n = len(parts)
        futures = self.client.map(
            _encode_on_worker, [spec] * n, parts, [side] * n, [sbert_onnx.chosen()] * n, pure=False
        )
        try:
            for part, future in zip(parts, futures):
                distill.add_vectors(key, side, part, future.result())
        finally:
            for future in futures:
                future.cancel()
        return len(missing)

    def frozen_states(self, texts: list[str], *, base=None, **settings) -> tuple | None:
        """:func:`~ltrfeat.encoders.sbert_training.keep_frozen_states` run on the cluster: the states come
        back and are kept in this process (memory-mapped) under the returned key, for the trainings to read."""
        from ltrfeat.encoders import sbert_prefix

        future = self.client.submit(_frozen_on_worker, texts, base, settings, pure=False)
        try:
            key, packed = future.result()
        finally:
            future.cancel()
        if key is not None:
            sbert_prefix.load(packed.unpack())
        return key

    def shared_pass(
        self, teacher: str, wanted: dict[str, list[str]], frozen: list[str], *, base=None, chunk: int = 512, **settings
    ) -> tuple:
        """:func:`~ltrfeat.encoders.sbert_shared.shared_pass` on the cluster, ``chunk`` texts per task (the
        vectors not cached here, every frozen text): the vectors and states come back and are cached and kept in this
        process (states memory-mapped). Returns ``(store key, texts run whole, texts run through the frozen layers
        only)``."""
        from ltrfeat.encoders import distill, sbert_onnx, sbert_prefix

        teacher_key = distill.teacher_key(teacher)
        missing = {side: distill.missing_vectors(teacher_key, side, texts) for side, texts in wanted.items()}
        whole = list(dict.fromkeys(t for texts in missing.values() for t in texts))
        texts = list(dict.fromkeys([*whole, *frozen]))
        parts = [set(texts[i : i + chunk]) for i in range(0, len(texts), chunk)]
        asked = [([t for t in whole if t in part], [t for t in dict.fromkeys(frozen) if t in part]) for part in parts]
        futures = [
            self.client.submit(
                _shared_on_worker, teacher, part_whole, part_frozen, base, settings, sbert_onnx.chosen(), pure=False
            )
            for part_whole, part_frozen in asked
        ]
        key, vectors, lower_only = None, {}, 0
        try:
            for (part_whole, _), future in zip(asked, futures):
                key, values, packed, count = future.result()
                vectors.update(zip(part_whole, values if values is not None else []))
                sbert_prefix.load(packed.unpack())
                lower_only += count
        finally:
            for future in futures:
                future.cancel()
        for side, side_texts in missing.items():
            if side_texts:
                distill.add_vectors(teacher_key, side, side_texts, [vectors[t] for t in side_texts])
        return key, len(whole), lower_only

    def run(self, tasks: list[TrainingTask], *, train: Callable, on_done: Callable[[int, tuple], None]) -> None:
        """Submit every task, call ``on_done(i, (scores by fold, train seconds, score seconds, from cache,
        training record, where))`` here as task ``i`` finishes; on an error every task is cancelled and the error raised."""
        import distributed

        transfer = self._transfers()
        continued = {t.after for t in tasks if t.after is not None}
        scattered: dict[str, object] = {}

        def ship(path) -> object:
            if str(path) not in scattered:
                scattered[str(path)] = self.client.scatter(Packed.of(path), hash=False, broadcast=False)
            return scattered[str(path)]

        futures: dict[int, object] = {}
        index: dict[object, int] = {}
        waiting = list(range(len(tasks)))
        try:
            while waiting:  # a task after the one it continues (whose future it takes)
                ready = [i for i in waiting if tasks[i].after is None or tasks[i].after in futures]
                if not ready:
                    raise ValueError("encoder trainings wait for each other in a circle")
                for i in ready:
                    waiting.remove(i)
                    task = tasks[i]
                    shipped = {}
                    kept = task.cache is not None and task.key is not None and bundle_path(task.cache, task).exists()
                    if transfer:
                        for name, path in (("teacher", task.teacher_dir), ("frozen", task.frozen_dir)):
                            if path is not None:
                                shipped[name] = ship(path)
                        if task.start is not None and task.after is None:
                            shipped["start"] = ship(task.start.path)
                        if kept:
                            shipped["cached"] = ship(bundle_path(task.cache, task))
                    want = transfer and ((task.cache is not None and not kept) or i in continued)
                    inner = None if task.after is None else futures[task.after]
                    future = self.client.submit(
                        _on_worker,
                        task,
                        train,
                        shipped,
                        inner,
                        transfer,
                        want,
                        pure=False,
                        priority=int(_encoder_pool.task_cost(task)),
                        key=f"ltrfeat-training-{task.spec.name}-{i}-{uuid.uuid4().hex[:8]}",
                    )
                    futures[i] = future
                    index[future] = i
            for future in distributed.as_completed(list(futures.values())):
                i = index[future]
                *result, where, bundle = future.result()
                if (
                    bundle is not None
                    and tasks[i].cache is not None
                    and not bundle_path(tasks[i].cache, tasks[i]).exists()
                ):
                    with atomic_output(bundle_path(tasks[i].cache, tasks[i]), binary=True) as f:
                        f.write(bundle)
                on_done(i, (*result, where))
        finally:
            for future in [*futures.values(), *scattered.values()]:
                future.cancel()
