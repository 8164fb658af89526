"""Writing LETOR and svmlight files: :class:`LetorWriter` streams chunks, atomic at close; :func:`write_letor`."""

from __future__ import annotations

import contextlib
import json

import numpy as np

from ltrfeat.core._letor_format import LETOR_FORMATS, group_path_of, position_path_of, weight_path_of
from ltrfeat.core.dataset import FeatureMap, RankingSet
from ltrfeat.core.errors import LetorWriteError
from ltrfeat.core.fileio import StaleSideFiles, atomic_output, is_stream


def _format_float32(values: np.ndarray) -> np.ndarray:
    """Shortest text that reads back to the same float32, for each value (object array).

    Formatting goes through the distinct values only (feature files repeat values a lot).
    """
    values = np.asarray(values, dtype=np.float32)
    unique, inverse = np.unique(values, return_inverse=True)
    text = []
    for v in unique:
        s = str(v)
        text.append(s[:-2] if s.endswith(".0") else s)
    return np.asarray(text, dtype=object)[inverse.reshape(values.shape)]


def _format_label(x: float) -> str:
    return str(int(x)) if float(x).is_integer() and abs(x) < 1e15 else repr(float(x))


def _comment_text(comment, docid) -> str:
    if comment is None:
        return "" if docid is None else f" #docid = {docid}"
    if "\n" in comment or "\r" in comment:
        raise LetorWriteError(
            f"comment {comment[:40]!r} contains a line break, which a LETOR line cannot hold",
            fix="remove line breaks from comments",
        )
    return " #" + (" " + comment if comment[:1].isspace() else comment)


_ROW_SIDE_FILES = {"weight": weight_path_of, "position": position_path_of}  # one value per data row


class LetorWriter:
    """Streaming writer of LETOR or svmlight files, atomic at close.

    Use as a context manager; each :meth:`write` appends a chunk whose rows of one query
    are contiguous (a query may continue from the previous chunk). At close the data file,
    ``<path>.query`` (svmlight), ``<path>.weight`` and ``<path>.position`` (when chunks carry them) and the
    ``<path>.features.json`` sidecar are put in place, and the side files of an earlier write that this
    one does not make are removed; on an exception none of that happens.

    Parameters
    ----------
    path : output file (``.gz`` compresses).
    feature_map : the columns every chunk has.
    fmt : ``"letor"`` (``label qid:ID fid:val ... #comment``) or ``"svmlight"`` (no qid).
    sparse : omit zero values.
    write_feature_map : write the ``.features.json`` sidecar.
    """

    def __init__(
        self, path, feature_map: FeatureMap, *, fmt: str = "letor", sparse: bool = False, write_feature_map: bool = True
    ):
        self.path = path
        self.feature_map = feature_map
        self.fmt = fmt
        self.sparse = sparse
        self.write_feature_map = write_feature_map

    def __enter__(self) -> "LetorWriter":
        if self.fmt not in LETOR_FORMATS:
            raise ValueError(f"fmt must be 'letor' or 'svmlight', got {self.fmt!r}")
        self._stack = contextlib.ExitStack()
        self._stale = self._stack.enter_context(StaleSideFiles())  # exits last: once the data file is in place
        self._out = self._stack.enter_context(atomic_output(self.path))
        self._row_outs: dict = {}  # "weight"/"position" -> its open side file, once a chunk carries them
        self._groups: list[int] = []
        self._finished: set = set()
        self._last_qid: str | None = None
        self._chunks = 0
        self._prefix = np.asarray([f"{i}:" for i in self.feature_map.ids], dtype=object)
        return self

    def write(self, chunk: RankingSet) -> None:
        """Append ``chunk`` (same feature map as the writer)."""
        if chunk.feature_map != self.feature_map:
            raise ValueError(f"chunk columns {chunk.feature_map!r} differ from the writer's {self.feature_map!r}")
        if not len(chunk):
            return
        for name in _ROW_SIDE_FILES:
            if (getattr(chunk, name) is not None) != (name in self._row_outs) and self._chunks:
                raise ValueError(f"either every chunk has {name}s or none has")
        self._chunks += 1
        self._track_groups(chunk)
        for name, side in _ROW_SIDE_FILES.items():
            if getattr(chunk, name) is not None and name not in self._row_outs:
                self._row_outs[name] = self._stack.enter_context(atomic_output(side(self.path), sidecar_of=self.path))
        labels = [_format_label(x) for x in chunk.label.tolist()]
        tokens = self._prefix[None, :] + _format_float32(chunk.X)
        nonzero = chunk.X != 0 if self.sparse else None
        qids = chunk.qid.tolist()
        comments = [None] * len(chunk) if chunk.comment is None else chunk.comment.tolist()
        docids = [None] * len(chunk) if chunk.docid is None else chunk.docid.tolist()
        lines = []
        for i, row in enumerate(tokens.tolist()):
            head = labels[i] if self.fmt == "svmlight" else f"{labels[i]} qid:{qids[i]}"
            feats = " ".join(row if nonzero is None else tokens[i, nonzero[i]].tolist())
            lines.append(
                f"{head} {feats}{_comment_text(comments[i], docids[i])}"
                if feats
                else f"{head}{_comment_text(comments[i], docids[i])}"
            )
        lines.append("")
        self._out.write("\n".join(lines))
        for name, out in self._row_outs.items():
            out.write("".join(f"{v!r}\n" for v in getattr(chunk, name).tolist()))

    def _track_groups(self, chunk: RankingSet) -> None:
        b = chunk.query_boundaries()
        for start, end in zip(b[:-1].tolist(), b[1:].tolist()):
            q = str(chunk.qid[start])
            if not q or any(ch.isspace() for ch in q) or "#" in q:
                raise LetorWriteError(
                    f"qid {q!r} cannot be written (empty, whitespace or '#')",
                    path=self.path,
                    fix="use query ids without spaces or '#'",
                )
            if q == self._last_qid:
                self._groups[-1] += end - start
                continue
            if q in self._finished:
                raise ValueError(f"rows of qid {q!r} are not contiguous; call regroup() before writing")
            self._finished.add(q)
            self._groups.append(end - start)
            self._last_qid = q

    def __exit__(self, exc_type, exc, tb) -> bool:
        if exc_type is None:
            try:
                self._finish()
            except BaseException as error:  # every temporary file goes, the earlier output stays
                if not self._stack.__exit__(type(error), error, error.__traceback__):
                    raise
                return False
        return bool(self._stack.__exit__(exc_type, exc, tb))

    def _finish(self) -> None:
        # The side files enter the stack last, so they are renamed before the data file:
        # a data file in place means its side files are too.
        if self.fmt == "svmlight":
            fh = self._stack.enter_context(atomic_output(group_path_of(self.path), sidecar_of=self.path))
            fh.write("".join(f"{g}\n" for g in self._groups))
        if self.write_feature_map:
            fh = self._stack.enter_context(atomic_output(FeatureMap.sidecar_path(self.path), sidecar_of=self.path))
            json.dump(self.feature_map.to_json(), fh, indent=1)
            fh.write("\n")
        written = [
            *(name in self._row_outs for name in _ROW_SIDE_FILES),
            self.fmt == "svmlight",
            self.write_feature_map,
        ]
        sides = [*(side(self.path) for side in _ROW_SIDE_FILES.values()), group_path_of(self.path)]
        sides.append(FeatureMap.sidecar_path(self.path))
        if not is_stream(self.path):
            self._stale.retire(side for side, made in zip(sides, written) if not made)


def write_letor(
    path, data: RankingSet, *, fmt: str = "letor", sparse: bool = False, write_feature_map: bool = True
) -> None:
    """Write ``data`` atomically as LETOR (``fmt="letor"``) or svmlight with ``<path>.query``.

    Also writes ``<path>.weight`` / ``<path>.position`` when ``data.weight`` / ``data.position`` is set and the
    ``.features.json`` sidecar unless ``write_feature_map=False``. Values are written in the shortest form
    that reads back to the same float32; rows keep their order (queries must be
    contiguous: see :meth:`RankingSet.regroup`); ``sparse=True`` omits zeros.
    """
    with LetorWriter(path, data.feature_map, fmt=fmt, sparse=sparse, write_feature_map=write_feature_map) as w:
        w.write(data)
