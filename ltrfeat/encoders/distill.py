"""Distilling a sentence-transformer teacher into CLSM / DSSM towers (the fast student).

The student's query tower encodes the training queries, its document tower the training documents; for a mini-batch
of B aligned (query, document) training pairs the student's B x B in-batch cosine matrix (every query against every
document of the batch, the aligned pairs on the diagonal) is fitted to the teacher's: ``loss="kl"`` (default)
matches each query row's softmax over the batch's documents (cosines / temperature: the teacher's in-batch ranking),
``loss="mse"`` regresses the cosines themselves (why KL: docs/history.md, "Encoder defaults chosen on Home Depot").
``same_side`` adds the query-query and document-document matrices (weighted). ``loss="vector"`` instead regresses
each text's student vector onto its teacher vector (embedding-level distillation,
:func:`~ltrfeat.encoders.losses.vector.vector_loss`; the towers' output width must be the teacher's, e.g.
``sizes={"out": 384}`` for MiniLM): every cosine between two texts then approaches the teacher's, not only those
inside a batch. After distillation the encoder is fine-tuned with its ranking loss as usual
(:func:`ltrfeat.encoders.training.train_encoder` with ``teacher=``), optionally with the batch's KL term kept in
that loss (``distill_weight``, :class:`KeptTeacher`; off by default, docs/history.md has the weights tried).

Teacher vectors are computed once per distinct text and kept in a process-level cache keyed by
(teacher, side, text), so the cross-fitted trainings of one ablation (several encoders trained on
overlapping texts in one process) encode each text once. Loaded teacher models are cached the same way.
"""

from __future__ import annotations

import dataclasses
import hashlib
import sys
import time
from numbers import Integral, Real
from pathlib import Path
from typing import ClassVar

import numpy as np
import torch
import torch.nn.functional as F
from tqdm import tqdm

from ltrfeat.encoders import sbert_onnx
from ltrfeat.encoders.losses.vector import vector_loss
from ltrfeat.encoders.config import DISTILL_LOSSES
from ltrfeat.encoders.encoder import aligned_cosine, check_texts, distinct
from ltrfeat.core.errors import LtrfeatError, ParameterError
from ltrfeat.core.fileio import atomic_output
from ltrfeat.core.logs import show_progress
from ltrfeat.core.settings import Interval, OneOf, Settings
from ltrfeat.core.stages import teacher_clock

# teacher key -> loaded model; (teacher key, side) -> {text: vector}
_TEACHERS: dict[str, object] = {}
_VECTORS: dict[tuple[str, str], dict[str, np.ndarray]] = {}
_CALLS: dict[tuple[str, str, str], np.ndarray] = {}  # CachedTeacher(per_call=True): (key, side, texts hash) -> vectors
_AGREEMENT_PAIRS = 512


def teacher_key(spec: str) -> str:
    """Canonical name of a teacher spec: ``sbert`` (the packaged MiniLM) or ``sbert=/abs/path``.

    ``spec`` is ``sbert``, ``sbert=PATH`` or a model directory PATH.
    """
    spec = str(spec).strip()
    if spec == "sbert":
        return spec
    path = spec.split("=", 1)[1] if spec.startswith("sbert=") else spec
    return f"sbert={Path(path).expanduser().resolve()}"


def describe_teacher(teacher) -> str:
    """JSON-able name of a teacher (spec string or object) for training parameters."""
    if isinstance(teacher, str):
        return teacher_key(teacher)
    path = getattr(teacher, "path", None)
    return f"sbert={path}" if path is not None else type(teacher).__name__


def load_teacher(spec: str):
    """The :class:`SbertEncoder` of a teacher spec (see :func:`teacher_key`), loaded once per process."""
    from ltrfeat.encoders.sbert import SbertEncoder

    key = teacher_key(spec)
    if key not in _TEACHERS:
        _TEACHERS[key] = SbertEncoder.load(None if key == "sbert" else key.split("=", 1)[1])
    return _TEACHERS[key]


def clear_cache() -> None:
    """Forget cached teacher models and vectors (frees memory)."""
    _TEACHERS.clear()
    _VECTORS.clear()
    _CALLS.clear()


def teacher_vectors(
    teacher, texts, *, side: str, key: str | None = None, chunk: int = 2048, progress: bool = False
) -> np.ndarray:
    """Teacher vectors (n, dim) float32 of ``texts``; each distinct text is encoded once.

    A MiniLM teacher (an :class:`~ltrfeat.encoders.sbert.SbertEncoder`) runs on the process's engine
    (:mod:`ltrfeat.encoders.sbert_onnx`). With a ``key``, vectors are cached for the process under
    (key, side, text) and only texts not seen before are encoded (in chunks of ``chunk`` texts, with a progress
    bar when ``progress``); ``teacher`` may then be a spec string, loaded (:func:`load_teacher`) only when a text
    is missing.
    """
    uniq, inverse = distinct(list(texts))
    if key is None:
        with teacher_clock(len(uniq)):
            return np.asarray(sbert_onnx.vectors(teacher, uniq, side=side), dtype=np.float32)[inverse]
    cache = _VECTORS.setdefault((key, side), {})
    missing = [t for t in uniq if t not in cache]
    with (
        teacher_clock(len(missing)),
        tqdm(
            total=len(missing),
            desc=f"teacher {side} texts",
            disable=not progress or not missing,
            file=sys.stderr,
            leave=False,
            unit="text",
        ) as bar,
    ):
        model = load_teacher(teacher) if missing and isinstance(teacher, str) else teacher
        for start in range(0, len(missing), chunk):
            part = missing[start : start + chunk]
            cache.update(zip(part, np.asarray(sbert_onnx.vectors(model, part, side=side), dtype=np.float32)))
            bar.update(len(part))
    if not uniq:
        return np.zeros((0, 0), dtype=np.float32)
    return np.stack([cache[t] for t in uniq])[inverse]


def teacher_width(spec: str, text: str) -> int:
    """The width of a teacher spec's vectors: that of a cached vector, else of ``text``'s (encoded, then cached)."""
    key = teacher_key(spec)
    for (cached, _), vectors in _VECTORS.items():
        if cached == key and vectors:
            return len(next(iter(vectors.values())))
    return int(teacher_vectors(spec, [text], side="doc", key=key).shape[1])


def missing_vectors(key: str, side: str, texts) -> list[str]:
    """The distinct ``texts`` whose ``side`` vectors of teacher ``key`` this process has not cached yet."""
    cache = _VECTORS.get((key, side), {})
    return [t for t in dict.fromkeys(texts) if t not in cache]


def add_vectors(key: str, side: str, texts: list[str], vectors: np.ndarray) -> None:
    """Cache ``vectors`` (aligned with ``texts``) as teacher ``key``'s ``side`` vectors in this process, e.g.
    vectors computed elsewhere (:meth:`ltrfeat.experiments._dask_trainings.DaskTrainings.teacher_vectors`)."""
    _VECTORS.setdefault((key, side), {}).update(zip(texts, np.asarray(vectors, dtype=np.float32)))


def _model_dir(key: str) -> Path:
    from ltrfeat.encoders.sbert import packaged_model_path

    return packaged_model_path() if key == "sbert" else Path(key.split("=", 1)[1])


def _fingerprint(key: str) -> str:
    """SHA-256 over a teacher directory's files (names and contents): stored vectors of a changed model
    are not reused."""
    h = hashlib.sha256()
    root = _model_dir(key)
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        h.update(str(path.relative_to(root)).encode("utf-8") + b"\x00")
        with open(path, "rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                h.update(block)
    return h.hexdigest()


def save_vectors(directory) -> None:
    """Write the process's cached teacher vectors to ``directory`` (one ``.npz`` per teacher and side,
    no pickles), for :func:`load_vectors` in a later run."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    fingerprints: dict[str, str | None] = {}
    for (key, side), cache in _VECTORS.items():
        if key not in fingerprints:
            try:
                fingerprints[key] = _fingerprint(key)
            except (OSError, LtrfeatError):  # the model directory is gone: nothing to vouch for the vectors
                fingerprints[key] = None
        if not cache or fingerprints[key] is None:
            continue
        texts = [t.encode("utf-8", "surrogatepass") for t in cache]
        offsets = np.zeros(len(texts) + 1, dtype=np.int64)
        np.cumsum([len(t) for t in texts], out=offsets[1:])
        name = hashlib.sha256(f"{key}\x1e{side}".encode()).hexdigest()[:24]
        with atomic_output(directory / f"{name}.npz", binary=True) as fh:
            np.savez(
                fh,
                key=np.array(key),
                side=np.array(side),
                fingerprint=np.array(fingerprints[key]),
                vectors=np.stack(list(cache.values())).astype(np.float32),
                text_utf8=np.frombuffer(b"".join(texts), dtype=np.uint8),
                text_offsets=offsets,
            )


def load_vectors(directory) -> int:
    """Add the teacher vectors stored by :func:`save_vectors` to the process cache; files of a teacher whose
    model files changed since, or unreadable files, are skipped. Returns the number of vectors added."""
    added = 0
    fingerprints: dict[str, str] = {}
    for path in sorted(Path(directory).glob("*.npz")):
        try:
            with np.load(path, allow_pickle=False) as data:
                key, side = str(data["key"]), str(data["side"])
                if key not in fingerprints:
                    fingerprints[key] = _fingerprint(key)
                if str(data["fingerprint"]) != fingerprints[key]:
                    continue
                raw, offsets, vectors = data["text_utf8"].tobytes(), data["text_offsets"], data["vectors"]
        except (OSError, ValueError, KeyError, LtrfeatError):
            continue
        cache = _VECTORS.setdefault((key, side), {})
        for i in range(len(vectors)):
            text = raw[offsets[i] : offsets[i + 1]].decode("utf-8", "surrogatepass")
            if text not in cache:
                cache[text] = vectors[i]
                added += 1
    return added


class CachedTeacher:
    """A teacher spec's model as an encoder whose vectors go through the process-level cache, so zero-shot
    scoring (the ablation's ``sbert`` column) and distillation encode each text once between them.

    ``per_call``: bypass that cache and encode each call's distinct texts together, so a vector depends only on
    the call's texts (a batch's padded shape and size round the last bits) and not on what the process encoded
    before: the same in any process. The result is kept for the process by the call's whole list of texts.
    """

    def __init__(self, spec: str = "sbert", *, per_call: bool = False):
        self.spec, self.per_call = spec, per_call

    def encode(self, texts, *, side: str = "query", batch_size: int | None = None) -> np.ndarray:
        """L2-normalised float32 vectors (n, dim), cached per (teacher, side, text) unless ``per_call``."""
        texts = check_texts(texts, side)
        if not self.per_call:
            return teacher_vectors(self.spec, texts, side=side, key=teacher_key(self.spec))
        # kept by the whole list: the same fold's rows, scored again by another training, are not encoded again
        key = (teacher_key(self.spec), side, hashlib.sha256("\0".join(texts).encode()).hexdigest())
        if key not in _CALLS:
            _CALLS[key] = teacher_vectors(load_teacher(self.spec), texts, side=side)
        return _CALLS[key]

    def similarity(self, queries, docs, *, batch_size: int = 64) -> np.ndarray:
        """Cosine of each aligned (query, doc) pair, float32 (n,)."""
        return aligned_cosine(self, queries, docs, batch_size=batch_size)


class KeptTeacher:
    """The teacher's in-batch KL term kept in the ranking loss after distillation
    (``train_encoder(distill_weight=...)``): ``weight`` x the distillation loss of the batch's queries
    against its positive documents, so fine-tuning on the judgments does not drift away from the teacher.

    ``queries``/``docs`` are the training table's distinct texts; only those at ``q_rows``/``d_rows`` (the
    training rows' indices) are encoded by the teacher.
    """

    def __init__(self, teacher, queries, docs, *, q_rows, d_rows, weight: float, temperature: float = 0.05):
        key = teacher_key(teacher) if isinstance(teacher, str) else None
        # a spec string is loaded only if a vector is not cached
        self.tq = self._vectors(teacher, queries, np.unique(q_rows), side="query", key=key)
        self.td = self._vectors(teacher, docs, np.unique(d_rows), side="doc", key=key)
        self.weight, self.temperature = weight, temperature

    @staticmethod
    def _vectors(model, texts, rows, *, side, key) -> torch.Tensor:
        vectors = teacher_vectors(model, [texts[i] for i in rows], side=side, key=key)
        out = np.zeros((len(texts), vectors.shape[1]), dtype=np.float32)
        out[rows] = vectors
        return torch.from_numpy(out)

    def loss(self, q_vectors, d_vectors, q, d) -> torch.Tensor:
        """The weighted KL term for a batch: student vectors of its queries and positive documents (rows
        aligned), ``q``/``d`` their text indices."""
        student = F.normalize(q_vectors, dim=1) @ F.normalize(d_vectors, dim=1).T
        teacher = self.tq[torch.from_numpy(q)] @ self.td[torch.from_numpy(d)].T
        return self.weight * _matrix_loss(student, teacher, "kl", self.temperature)


def agreement(student_q, student_d, teacher_q, teacher_d) -> dict:
    """How well student cosines reproduce the teacher's over every (query, doc) combination.

    Arguments are L2-normalised vectors of the same n queries and n documents (any widths per side
    pair). Returns the Pearson correlation and the mean squared error of the two n x n cosine matrices.
    """
    s = np.asarray(student_q, np.float64) @ np.asarray(student_d, np.float64).T
    t = np.asarray(teacher_q, np.float64) @ np.asarray(teacher_d, np.float64).T
    return {"pearson": float(np.corrcoef(s.ravel(), t.ravel())[0, 1]), "mse": float(np.mean((s - t) ** 2))}


def _student(tower, hasher, tokens, rows: np.ndarray) -> torch.Tensor:
    uniq, inv = np.unique(rows, return_inverse=True)
    return F.normalize(tower(tower.prepare(hasher, tokens.take(uniq))), dim=1)[torch.from_numpy(inv)]


def _matrix_loss(student: torch.Tensor, teacher: torch.Tensor, how: str, temperature: float) -> torch.Tensor:
    if how == "mse":
        return F.mse_loss(student, teacher)
    # "kl": each row's softmax over the batch (which document the teacher would rank first) is matched
    return F.kl_div(
        F.log_softmax(student / temperature, dim=1),
        F.log_softmax(teacher / temperature, dim=1),
        log_target=True,
        reduction="batchmean",
    )


def _batch_loss(net, hasher, tokens, vectors, q, d, settings: DistillSettings) -> torch.Tensor:
    """The loss of one mini-batch of (query row ``q``, document row ``d``) pairs; ``tokens`` and ``vectors`` are
    the (query, document) token lists and teacher vectors."""
    sq = _student(net.tower("query"), hasher, tokens[0], q)
    sd = _student(net.tower("doc"), hasher, tokens[1], d)
    tq, td = torch.from_numpy(vectors[0][q]), torch.from_numpy(vectors[1][d])
    how, temperature = settings.loss, settings.temperature
    if how == "vector":  # each tower onto the teacher's vectors of its own side's texts
        return vector_loss(sq, tq) + vector_loss(sd, td)
    loss = _matrix_loss(sq @ sd.T, tq @ td.T, how, temperature)
    if settings.same_side:
        loss = (
            loss
            + settings.same_side
            * (
                _matrix_loss(sq @ sq.T, tq @ tq.T, how, temperature)
                + _matrix_loss(sd @ sd.T, td @ td.T, how, temperature)
            )
            / 2
        )
    return loss


@torch.no_grad()
def _agreement(net, hasher, q_tokens, d_tokens, tq, td, q, d) -> dict:
    was = net.training
    net.eval()
    sq = _student(net.tower("query"), hasher, q_tokens, q).numpy()
    sd = _student(net.tower("doc"), hasher, d_tokens, d).numpy()
    net.train(was)
    return agreement(sq, sd, tq[q], td[d])


@dataclasses.dataclass(frozen=True)
class DistillSettings(Settings):
    """How :func:`distill` trains the student (validated on creation).

    epochs : passes over the distinct pairs (4; docs/history.md, "Encoder defaults chosen on Home Depot").
    batch_size : pairs per mini-batch (the cosine matrices are batch x batch).
    lr : Adam learning rate.
    same_side : weight of the query-query and document-document cosine matrices (0: cross only; not used by
        ``"vector"``).
    loss : ``"mse"`` regresses the cosine matrices; ``"kl"`` matches each row's softmax over the batch
        (cosines divided by ``temperature``), i.e. the teacher's in-batch ranking rather than its values;
        ``"vector"`` regresses each text's student vector onto its teacher vector (``1 - cosine``; the towers'
        output width must be the teacher's).
    patience : with a ``validate`` of :func:`distill`, stop after this many epochs in a row without a better
        validation score than the best so far and keep the best epoch's weights; None: every epoch, no validation.
    """

    label: ClassVar[str] = "distillation"
    _parameter_constraints: ClassVar[dict] = {
        "epochs": [Interval(Integral, 1, None)],
        "batch_size": [Interval(Integral, 2, None)],
        "lr": [Interval(Real, 0, None, closed="neither")],
        "same_side": [Interval(Real, 0, None)],
        "loss": [OneOf(*DISTILL_LOSSES)],
        "temperature": [Interval(Real, 0, None, closed="neither")],
        "patience": [Interval(Integral, 1, None), None],
    }
    epochs: int = 4
    batch_size: int = 256
    lr: float = 3e-3
    same_side: float = 0.0
    loss: str = "kl"
    temperature: float = 0.05
    patience: int | None = None


def distill(
    net,
    hasher,
    queries,
    docs,
    teacher,
    settings: DistillSettings | None = None,
    *,
    seed: int = 0,
    key: str | None = None,
    progress: bool | None = None,
    validate=None,
    **options,
) -> dict:
    """Train ``net``'s towers (a :class:`TwoTowerModel`) to reproduce ``teacher``'s cosines.

    Parameters
    ----------
    net : the student; trained in place.
    hasher : its fitted :class:`TrigramHasher`.
    queries, docs : aligned training pairs (query text i with document text i); duplicates are merged.
    teacher : anything with ``encode(texts, side=) -> L2-normalised float32 (n, dim)`` (an
        :class:`SbertEncoder`, or a spec string for :func:`load_teacher`).
    settings : a :class:`DistillSettings` (default: its defaults); keyword ``options`` replace single fields.
    seed : seeds the pair order and the agreement sample.
    key : teacher-vector cache key (default: the spec's :func:`teacher_key`; None for objects: no cache).
    progress : show a progress bar (default: when stderr is a terminal and ``CI`` is unset).
    validate : ``() -> mean NDCG@10`` of the student on held-out queries, scored after every epoch when
        ``settings.patience`` is set (early stopping on it; the best epoch's weights are kept).

    Returns a JSON-able record: settings, sizes, per-epoch loss, seconds spent on teacher vectors and on
    training, and the student-teacher :func:`agreement` on a seeded sample of the pairs before and after; with
    early stopping also each epoch's ``val_ndcg@10``, the ``best_epoch`` kept and the ``steps`` run of the
    ``planned_steps``.
    """
    queries, docs = list(queries), list(docs)
    if len(queries) != len(docs) or not queries:
        raise ValueError(
            f"distillation needs aligned, non-empty query and doc lists (got {len(queries)} and {len(docs)})"
        )
    settings = dataclasses.replace(settings or DistillSettings(), **options)
    if progress is None:
        progress = show_progress()
    if isinstance(teacher, str):  # loaded only if a vector is not cached (teacher_vectors)
        key = key or teacher_key(teacher)
    t0 = time.perf_counter()
    (q_texts, q_of), (d_texts, d_of) = distinct(queries), distinct(docs)
    tq = teacher_vectors(teacher, q_texts, side="query", key=key, progress=progress)
    td = teacher_vectors(teacher, d_texts, side="doc", key=key, progress=progress)
    teacher_seconds = time.perf_counter() - t0
    _check_width(net, tq, settings)
    pairs = np.unique(np.stack([q_of, d_of], axis=1), axis=0)
    q_tokens, d_tokens = hasher.tokenize(q_texts), hasher.tokenize(d_texts)
    rng = np.random.default_rng([seed, 4])
    sample = pairs[np.sort(rng.permutation(len(pairs))[:_AGREEMENT_PAIRS])]
    before = _agreement(net, hasher, q_tokens, d_tokens, tq, td, sample[:, 0], sample[:, 1])

    t1 = time.perf_counter()
    epochs, n_batches = settings.epochs, -(-len(pairs) // settings.batch_size)
    stopping = validate is not None and settings.patience is not None

    def step(batch: np.ndarray) -> torch.Tensor:
        return _batch_loss(net, hasher, (q_tokens, d_tokens), (tq, td), batch[:, 0], batch[:, 1], settings)

    losses, scores, best_epoch = _fit(net, pairs, rng, step, settings, validate if stopping else None, progress)
    after = _agreement(net, hasher, q_tokens, d_tokens, tq, td, sample[:, 0], sample[:, 1])
    return {
        "method": "distillation",
        "teacher": key or describe_teacher(teacher),
        "epochs": epochs,
        "batch_size": settings.batch_size,
        "lr": settings.lr,
        "same_side": settings.same_side,
        "loss_function": settings.loss,
        **({"temperature": settings.temperature} if settings.loss == "kl" else {}),
        **(
            {
                "patience": settings.patience,
                "val_ndcg@10": scores,
                "best_epoch": best_epoch,
                "steps": len(losses) * n_batches,
                "planned_steps": epochs * n_batches,
            }
            if stopping
            else {}
        ),
        "n_pairs": int(len(pairs)),
        "n_queries": len(q_texts),
        "n_docs": len(d_texts),
        "loss": losses,
        "agreement": {"before": before, "after": after},
        "teacher_seconds": round(teacher_seconds, 3),
        "seconds": round(time.perf_counter() - t1, 3),
    }


def _check_width(net, teacher_vectors: np.ndarray, settings: DistillSettings) -> None:
    """Refuse the vector loss when the towers are not as wide as the teacher's vectors."""
    width, wanted = net.config["tower"]["out"], teacher_vectors.shape[1]
    if settings.loss == "vector" and width != wanted:
        raise ParameterError(
            f"distill_loss='vector' regresses the student's vectors onto the teacher's, but the towers are {width} "
            f"wide and the teacher's vectors {wanted}",
            fix=f"give sizes={{'out': {wanted}}} (JSON: --encoder-option 'sizes={{\"out\": {wanted}}}')",
            param="distill_loss",
        )


def _fit(net, pairs: np.ndarray, rng, step, settings: DistillSettings, validate, progress: bool):
    """The distillation's epochs: ``step(batch)`` per mini-batch of the shuffled ``pairs``; with ``validate``, a
    score after every epoch, a stop after ``settings.patience`` epochs without a better one and the best epoch's
    weights kept. Returns the per-epoch losses, the validation scores and the best epoch (0: none)."""
    epochs, batch_size = settings.epochs, settings.batch_size
    opt = torch.optim.Adam(net.parameters(), lr=settings.lr, fused=True)
    net.train()
    losses: list[float] = []
    n_batches = -(-len(pairs) // batch_size)
    scores: list[float] = []
    best: tuple[int, float, dict | None] = (0, float("nan"), None)  # epoch, validation score, weights
    for epoch in range(1, epochs + 1):
        if validate is not None and epoch - 1 - best[0] >= (settings.patience or 0):
            break
        order = pairs[rng.permutation(len(pairs))]
        total = 0.0
        bar = tqdm(total=n_batches, desc=f"distil {epoch}/{epochs}", disable=not progress, file=sys.stderr, leave=False)
        for b in range(n_batches):
            value = step(order[b * batch_size : (b + 1) * batch_size])
            opt.zero_grad(set_to_none=True)
            value.backward()
            opt.step()
            total += value.item()
            bar.update(1)
            bar.set_postfix(loss=f"{total / (b + 1):.5f}")
        bar.close()
        losses.append(total / n_batches)
        if validate is not None:
            scores.append(float(validate()))
            if np.isnan(best[1]) or scores[-1] > best[1]:
                best = (epoch, scores[-1], {k: v.clone() for k, v in net.state_dict().items()})
    if validate is not None and best[2] is not None and best[0] != len(losses):
        net.load_state_dict(best[2])
    return losses, scores, best[0]
