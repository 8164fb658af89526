"""A data file's parsed blocks with the checks that span blocks (query contiguity, NaN policy, row counts of the
side files), and the pieces :func:`~ltrfeat.core.letor.read_letor` and its streaming relatives build rows from."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from ltrfeat.core import limits
from ltrfeat.core._letor_format import (
    LETOR_FORMATS,
    NAN_POLICIES,
    _docid_of,
    group_path_of,
    position_path_of,
    weight_path_of,
)
from ltrfeat.core._letor_lines import _byte_blocks, _first_data_tokens, _read_numbers
from ltrfeat.core._letor_parse import _Block, _parse_block
from ltrfeat.core.dataset import FeatureMap, RankingSet
from ltrfeat.core.errors import LetorFormatError

_BLOCK_BYTES = 4 << 20
_DENSE_LOOKUP_LIMIT = 10_000_000


@dataclasses.dataclass
class _Options:
    path: Path
    svmlight: bool
    groups: np.ndarray | None
    group_path: Path | None
    weights: np.ndarray | None
    weight_path: Path | None
    positions: np.ndarray | None
    position_path: Path | None
    nan_policy: str
    feature_map: FeatureMap | None
    map_path: Path | None


def _resolve(path, *, fmt, group_path, weight_path, nan_policy, feature_map, position_path=None) -> _Options:
    path = Path(path)
    if fmt not in ("auto",) + LETOR_FORMATS:
        raise ValueError(f"fmt must be 'auto', 'letor' or 'svmlight', got {fmt!r}")
    if nan_policy not in NAN_POLICIES:
        raise ValueError(f"nan_policy must be one of {NAN_POLICIES}, got {nan_policy!r}")
    if not path.exists():
        raise LetorFormatError("no such file", path=path, fix="check the path")
    if group_path is None and group_path_of(path).exists():
        group_path = group_path_of(path)
    if fmt == "auto":
        fmt = "letor"
        if group_path is not None and not any(t.startswith(b"qid:") for t in _first_data_tokens(path)[1:2]):
            fmt = "svmlight"
    svmlight = fmt == "svmlight"
    if svmlight and group_path is None:
        raise LetorFormatError(
            "svmlight file without a group file",
            path=path,
            fix=f"write the group sizes to {group_path_of(path).name} or pass group_path",
        )
    groups = _read_numbers(group_path, kind="group size", integer=True) if svmlight else None
    if weight_path is None and weight_path_of(path).exists():
        weight_path = weight_path_of(path)
    weights = _read_numbers(weight_path, kind="weight", integer=False) if weight_path is not None else None
    if position_path is None and position_path_of(path).exists():
        position_path = position_path_of(path)
    positions = _read_numbers(position_path, kind="position", integer=True) if position_path is not None else None
    map_path = None
    if feature_map is None and FeatureMap.sidecar_path(path).exists():
        map_path = FeatureMap.sidecar_path(path)
        feature_map = FeatureMap.load(map_path)
    return _Options(
        path,
        svmlight,
        groups,
        None if group_path is None else Path(group_path),
        weights,
        None if weight_path is None else Path(weight_path),
        positions,
        None if position_path is None else Path(position_path),
        nan_policy,
        feature_map,
        map_path,
    )


class _Stream:
    """Parsed blocks of a file with qids (svmlight: from the group file), weights and checks
    that span blocks: query contiguity and row counts of the group and weight files."""

    def __init__(self, opts: _Options, *, regroup: bool):
        self.opts = opts
        self.regroup = regroup
        self.rows = 0
        self.noncontiguous: list[str] = []
        self._finished: set = set()
        self._last_qid: str | None = None

    def blocks(self) -> Iterator[_Block]:
        opts = self.opts
        ends = None if opts.groups is None else np.cumsum(opts.groups)
        for line0, data in _byte_blocks(opts.path, _BLOCK_BYTES):
            block = _parse_block(data, path=opts.path, line0=line0, svmlight=opts.svmlight)
            if not len(block):
                continue
            if ends is not None:
                index = np.arange(self.rows, self.rows + len(block))
                if index[-1] >= ends[-1]:
                    over = block.lineno[int(ends[-1]) - self.rows]
                    raise LetorFormatError(
                        f"more rows than the group sizes in {opts.group_path} sum to ({int(ends[-1])})",
                        path=opts.path,
                        line=int(over),
                        fix="fix the group file so its sizes sum to the rows",
                    )
                g = np.searchsorted(ends, index, side="right") + 1
                block.qid = [str(x) for x in g.tolist()]
            self._check_contiguous(block)
            self._apply_nan_policy(block)
            self.rows += len(block)
            yield block
        self._check_totals()

    def _check_contiguous(self, block: _Block) -> None:
        qid = block.qid
        runs = [0] + [i for i in range(1, len(qid)) if qid[i] != qid[i - 1]]
        for i in runs:
            q = qid[i]
            if i == 0 and q == self._last_qid:
                continue
            if q in self._finished:
                if not self.regroup:
                    raise LetorFormatError(
                        f"rows of qid {q!r} are not contiguous (the query appeared earlier)",
                        path=self.opts.path,
                        line=int(block.lineno[i]),
                        fix="sort the file by query, or read it with regroup=True (CLI: --regroup)",
                    )
                self.noncontiguous.append(q)
            self._finished.add(q)
        self._last_qid = qid[-1]

    def _apply_nan_policy(self, block: _Block) -> None:
        value = block.value
        with np.errstate(over="ignore"):
            finite32 = np.isfinite(value.astype(np.float32))
        if finite32.all():
            return
        if self.opts.nan_policy == "error":
            k = int(np.argmax(~finite32))
            raise LetorFormatError(
                f"feature {int(block.fid[k])} is {float(value[k])!r} (NaN, infinite or beyond float32)",
                path=self.opts.path,
                line=int(block.lineno[block.row[k]]),
                fix="clean the value, or read with nan_policy='keep' or 'zero' (CLI: --nan-policy)",
            )
        if self.opts.nan_policy == "zero":
            value[~finite32] = 0.0
            return
        overflow = np.isfinite(value) & ~finite32  # "keep" keeps NaN and inf, but 1e39 would turn into inf
        if overflow.any():
            k = int(np.argmax(overflow))
            raise LetorFormatError(
                f"feature {int(block.fid[k])} is {float(value[k])!r}, beyond the float32 range (about 3.4e38)",
                path=self.opts.path,
                line=int(block.lineno[block.row[k]]),
                fix="rescale the feature, or read with nan_policy='zero' (CLI: --nan-policy zero)",
            )

    def _check_totals(self) -> None:
        opts = self.opts
        if self.rows == 0:
            raise LetorFormatError(
                "empty file (no data lines)", path=opts.path, fix="write lines like '2 qid:1 1:0.5 2:0.3'"
            )
        if opts.groups is not None and int(opts.groups.sum()) != self.rows:
            raise LetorFormatError(
                f"group sizes sum to {int(opts.groups.sum())} but the data file has {self.rows} rows",
                path=opts.group_path,
                fix="regenerate the group file from the data",
            )
        for kind, values, path in (
            ("weight", opts.weights, opts.weight_path),
            ("position", opts.positions, opts.position_path),
        ):
            if values is not None and len(values) != self.rows:
                raise LetorFormatError(
                    f"{len(values)} {kind}s for {self.rows} rows", path=path, fix=f"write one {kind} per data row"
                )


def _seen_ids(fid: np.ndarray) -> np.ndarray:
    if not len(fid):
        return np.zeros(0, dtype=np.int64)
    top = int(fid.max())
    if top <= _DENSE_LOOKUP_LIMIT:
        seen = np.zeros(top + 1, dtype=bool)
        seen[fid] = True
        return np.flatnonzero(seen)
    return np.unique(fid)


def _columns_of(block: _Block, ids: np.ndarray, opts: _Options) -> np.ndarray:
    """Column of each feature of ``block`` in a matrix whose columns are ``ids``."""
    col = np.searchsorted(ids, block.fid)
    missing = (
        (col >= len(ids)) | (ids[np.minimum(col, len(ids) - 1)] != block.fid)
        if len(ids)
        else np.ones(len(col), dtype=bool)
    )
    if missing.any():
        k = int(np.argmax(missing))
        raise LetorFormatError(
            f"feature id {int(block.fid[k])} is not in the feature map {opts.map_path or ''}".rstrip(),
            path=opts.path,
            line=int(block.lineno[block.row[k]]),
            fix="regenerate or delete the .features.json sidecar, or pass a matching feature_map",
        )
    return col


def _dense(block: _Block, col: np.ndarray, width: int) -> np.ndarray:
    X = np.zeros((len(block), width), dtype=np.float32)
    X[block.row, col] = block.value
    return X


def _ranking_set(X, block_like, fmap, opts: _Options, rows) -> RankingSet:
    qid, label, comment = block_like
    comment = np.asarray(comment, dtype=object)
    docid = np.array([_docid_of(c) for c in comment.tolist()], dtype=object)
    has_comment = any(c is not None for c in comment.tolist())
    weight = None if opts.weights is None else opts.weights[rows[0] : rows[1]]
    position = None if opts.positions is None else opts.positions[rows[0] : rows[1]]
    return RankingSet(
        np.asarray(qid, dtype=object),
        label,
        X,
        fmap,
        docid=docid if any(d is not None for d in docid.tolist()) else None,
        comment=comment if has_comment else None,
        weight=weight,
        position=position,
    )


def _check_width(n_ids: int, opts: _Options, *, rows: int | None = None) -> None:
    """Refuse, before any matrix is allocated, a file whose distinct feature ids exceed ``max_features``
    (see :mod:`ltrfeat.core.limits`): the rows are held as a dense float32 matrix."""
    bound = limits.current().max_features
    if n_ids <= bound:
        return
    size = "" if rows is None else f"; its first {rows} rows alone would take {rows * n_ids * 4 / 2**30:.1f} GiB"
    raise LetorFormatError(
        f"{n_ids} distinct feature ids exceed the limit of {bound} for a dense feature matrix{size}",
        path=opts.map_path if opts.feature_map is not None and opts.map_path else opts.path,
        fix="renumber the features densely (1..N), or raise ltrfeat --max-features if rows x ids x 4 bytes fits "
        "in memory",
    )


def _estimate_rows(path: Path, first: _Block) -> int:
    """Row capacity to start with: the file size over the first block's bytes per row
    (gzip files are guessed to expand four times)."""
    size = path.stat().st_size * (4 if str(path).endswith(".gz") else 1)
    return max(len(first), int(size / (first.nbytes / len(first)) * 1.02) + 16)
