"""Reading and writing LETOR 4.0 and svmlight (LightGBM ``.query``) ranking files.

Line formats
------------
LETOR:    ``label qid:ID fid:val fid:val ... #comment``
svmlight: ``label fid:val ...`` with group sizes (one per query, in row order) in ``<file>.query``.

Feature ids are 1-based and strictly increasing within a line; zeros may be omitted
(sparse) or present (dense). Qids are strings. Lines that hold only whitespace or only a
comment are skipped. ``.gz`` files are read and written compressed. An optional
``<file>.weight`` holds one weight per row, ``<file>.position`` (LightGBM's convention, 1-based here) the
position at which each row was shown (click data); ``<file>.features.json`` names the columns.

Comments
--------
The comment of a row is the text after the first ``#`` with the line ending and *one*
leading space removed (``# 7555 rambo`` → ``"7555 rambo"``, ``#docid = X`` →
``"docid = X"``). The writer emits ``#`` + comment, or ``# `` + comment when the comment
itself starts with whitespace, so comments round-trip exactly. :func:`parse_comment`
turns a comment into key/value pairs (``docid = X inc = 1``) or a bare docid (``7555``).

Speed
-----
Files are read in blocks of whole lines. Each block is tokenised with numpy on its raw
bytes (whitespace, ``#`` and ``:`` positions), feature ids are parsed as digit arrays,
and every label and value of the block is converted by one ``np.fromstring`` call. When
anything looks wrong, a strict per-line parser re-reads the block only to name the first
bad line. Values are parsed as float64 and stored as float32.

Modules
-------
This module reads; the format's names, comments and side-file paths are in ``_letor_format``, bounded line reading
in ``_letor_lines``, the block parser in ``_letor_parse``, the stream of checked blocks in ``_letor_stream`` and the
writer in ``_letor_write``. Every public name is imported from here.
"""

from __future__ import annotations

import warnings
from collections import Counter
from collections.abc import Iterator

import numpy as np

from ltrfeat.core._letor_format import (
    LETOR_FORMATS,
    NAN_POLICIES,
    _docid_of,
    group_path_of,
    parse_comment,
    position_path_of,
    weight_path_of,
)
from ltrfeat.core._letor_stream import (
    _check_width,
    _columns_of,
    _dense,
    _estimate_rows,
    _ranking_set,
    _resolve,
    _seen_ids,
    _Stream,
)
from ltrfeat.core._letor_write import LetorWriter, _format_label, write_letor
from ltrfeat.core.dataset import FeatureMap, RankingSet

__all__ = [
    "LETOR_FORMATS",
    "NAN_POLICIES",
    "LetorWriter",
    "group_path_of",
    "iter_letor",
    "letor_summary",
    "parse_comment",
    "position_path_of",
    "read_letor",
    "weight_path_of",
    "write_letor",
]


def read_letor(
    path,
    *,
    fmt: str = "auto",
    group_path=None,
    weight_path=None,
    position_path=None,
    nan_policy: str = "error",
    regroup: bool = False,
    feature_map: FeatureMap | None = None,
) -> RankingSet:
    """Load a whole LETOR or svmlight file into a :class:`RankingSet`.

    Parameters
    ----------
    path : the data file (``.gz`` is decompressed).
    fmt : ``"letor"``, ``"svmlight"`` or ``"auto"`` (svmlight when a group file exists, from
        ``group_path`` or ``<path>.query``, and the first data line has no ``qid:``).
    group_path : group-size file of an svmlight file (default ``<path>.query``).
    weight_path : per-row weights (default ``<path>.weight`` when it exists).
    position_path : per-row 1-based display positions of click data (default ``<path>.position`` when it
        exists).
    nan_policy : what to do with NaN/inf (or beyond-float32) values: ``"error"``, ``"keep"``, ``"zero"``.
    regroup : when a query's rows are not contiguous, stably regroup them (with a warning)
        instead of raising :class:`LetorFormatError`.
    feature_map : the columns to read into; default the ``<path>.features.json`` sidecar when
        present, else the ids seen in the file named ``f<id>``. Ids in the file that the map
        lacks raise :class:`LetorFormatError`; ids of the map absent from the file are zeros.

    Peak memory is about the float32 matrix plus one block (4 MiB of text) of working
    arrays: the matrix grows in place (``ndarray.resize``), and is only copied when a later
    block brings feature ids not seen before (possible without a feature map).
    """
    sides = {"group_path": group_path, "weight_path": weight_path, "position_path": position_path}
    opts = _resolve(path, fmt=fmt, nan_policy=nan_policy, feature_map=feature_map, **sides)
    stream = _Stream(opts, regroup=regroup)
    ids = None if opts.feature_map is None else np.asarray(opts.feature_map.ids, dtype=np.int64)
    if ids is not None:
        _check_width(len(ids), opts)
    X = None
    qids: list[str] = []
    labels: list[np.ndarray] = []
    comments: list = []
    n = 0
    for block in stream.blocks():
        if ids is None or (opts.feature_map is None and not np.isin(_seen_ids(block.fid), ids).all()):
            new_ids = _seen_ids(block.fid) if ids is None else np.union1d(ids, _seen_ids(block.fid))
            _check_width(len(new_ids), opts, rows=n + len(block))
            if X is not None and ids is not None:  # the matrix is made once the ids are known
                grown = np.zeros((X.shape[0], len(new_ids)), dtype=np.float32)
                grown[:, np.searchsorted(new_ids, ids)] = X
                X = grown
            ids = new_ids
        col = _columns_of(block, ids, opts)
        if X is None:
            X = np.zeros((_estimate_rows(opts.path, block), len(ids)), dtype=np.float32)
        if n + len(block) > X.shape[0]:
            X.resize((max(n + len(block), int(X.shape[0] * 1.5)), X.shape[1]), refcheck=False)
        X[n + block.row, col] = block.value
        n += len(block)
        qids.extend(block.qid)
        labels.append(block.label)
        comments.extend(block.comment)
    assert X is not None and ids is not None, "_resolve refuses a file without data lines"
    X.resize((n, X.shape[1]), refcheck=False)
    fmap = opts.feature_map if opts.feature_map is not None else FeatureMap.from_ids(ids.tolist())
    data = _ranking_set(X, (qids, np.concatenate(labels), comments), fmap, opts, (0, n))
    if stream.noncontiguous:
        warnings.warn(
            f"{opts.path}: rows of {len(set(stream.noncontiguous))} queries were not contiguous; "
            "regrouped them stably (queries in order of first appearance)",
            stacklevel=2,
        )
        data = data.regroup()
    return data


def iter_letor(
    path,
    *,
    chunk_queries: int = 1000,
    fmt: str = "auto",
    group_path=None,
    weight_path=None,
    position_path=None,
    nan_policy: str = "error",
    regroup: bool = False,
    feature_map: FeatureMap | None = None,
) -> Iterator[RankingSet]:
    """Stream a LETOR or svmlight file as :class:`RankingSet` chunks of ``chunk_queries`` queries.

    Chunks never split a query and all share one :class:`FeatureMap`: the given
    ``feature_map``, else the ``<path>.features.json`` sidecar, else the ids seen in the
    whole file, found by a first pass over the file (so a file without a sidecar is
    parsed twice; the first pass also validates it entirely). Memory is bounded by one
    chunk plus one block of text. Options are those of :func:`read_letor`; with
    ``regroup=True`` the whole file is loaded (regrouping needs every row) and then chunked.
    """
    if chunk_queries < 1:
        raise ValueError(f"chunk_queries must be at least 1, got {chunk_queries}")
    sides = {"group_path": group_path, "weight_path": weight_path, "position_path": position_path}
    options = dict(fmt=fmt, nan_policy=nan_policy, feature_map=feature_map, **sides)
    if regroup:
        data = read_letor(path, regroup=True, **options)
        bounds = data.query_boundaries()
        for q in range(0, len(bounds) - 1, chunk_queries):
            yield data.take(np.arange(bounds[q], bounds[min(q + chunk_queries, len(bounds) - 1)]))
        return
    opts = _resolve(path, **options)
    if opts.feature_map is None:
        seen = np.zeros(0, dtype=np.int64)
        for block in _Stream(opts, regroup=False).blocks():
            seen = np.union1d(seen, _seen_ids(block.fid))
        opts.feature_map = FeatureMap.from_ids(seen.tolist())
    ids = np.asarray(opts.feature_map.ids, dtype=np.int64)
    _check_width(len(ids), opts)
    stream = _Stream(opts, regroup=False)
    pending: list[tuple] = []  # (X, qid, label, comment) pieces not yet emitted
    n_pending_queries = 0
    emitted = 0

    def emit(rows: int):
        nonlocal pending, emitted
        X = np.concatenate([p[0] for p in pending])
        qid = [q for p in pending for q in p[1]]
        label = np.concatenate([p[2] for p in pending])
        comment = [c for p in pending for c in p[3]]
        out = _ranking_set(
            X[:rows],
            (qid[:rows], label[:rows], comment[:rows]),
            opts.feature_map,
            opts,
            (emitted, emitted + rows),
        )
        pending = [(X[rows:], qid[rows:], label[rows:], comment[rows:])] if rows < len(qid) else []
        emitted += rows
        return out

    for block in stream.blocks():
        X = _dense(block, _columns_of(block, ids, opts), len(ids))
        previous = pending[-1][1][-1] if pending else None
        starts = [
            i for i in range(len(block.qid)) if (block.qid[i] != block.qid[i - 1] if i else block.qid[0] != previous)
        ]
        pending.append((X, block.qid, block.label, block.comment))
        n_pending_queries += len(starts)
        while n_pending_queries > chunk_queries:  # the last query may continue in the next block
            rows = _rows_of_first_queries([p[1] for p in pending], chunk_queries)
            yield emit(rows)
            n_pending_queries -= chunk_queries
    if pending:
        yield emit(sum(len(p[1]) for p in pending))


def _rows_of_first_queries(qid_lists: list, k: int) -> int:
    """Number of rows holding the first ``k`` queries of the concatenated qid lists."""
    seen = 0
    rows = 0
    previous = object()
    for qids in qid_lists:
        for q in qids:
            if q != previous:
                seen += 1
                if seen > k:
                    return rows
                previous = q
            rows += 1
    return rows


def letor_summary(
    path, *, fmt: str = "auto", group_path=None, weight_path=None, nan_policy: str = "error", regroup: bool = False
) -> dict:
    """Statistics of a file in one streaming pass (also a full validation).

    Keys: ``path, format, rows, queries, features, max_feature_id, label_histogram``
    (label string → rows), ``docs_per_query`` (min/median/max), ``queries_without_relevant``
    (no label > 0), ``rows_with_comment``, ``rows_with_docid``, ``weighted``, ``positioned`` (a ``.position``
    file gives display positions),
    ``feature_map`` (``"sidecar"`` or ``"ids seen"``), ``regrouped_queries``.
    """
    opts = _resolve(
        path, fmt=fmt, group_path=group_path, weight_path=weight_path, nan_policy=nan_policy, feature_map=None
    )
    stream = _Stream(opts, regroup=regroup)
    seen = np.zeros(0, dtype=np.int64)
    labels: Counter = Counter()
    per_query: dict = {}
    relevant: dict = {}
    with_comment = with_docid = 0
    for block in stream.blocks():
        seen = np.union1d(seen, _seen_ids(block.fid))
        if opts.feature_map is not None:
            _columns_of(block, np.asarray(opts.feature_map.ids, dtype=np.int64), opts)
        labels.update(block.label.tolist())
        for q, lab in zip(block.qid, block.label.tolist()):
            per_query[q] = per_query.get(q, 0) + 1
            relevant[q] = relevant.get(q, False) or lab > 0
        with_comment += sum(c is not None for c in block.comment)
        with_docid += sum(_docid_of(c) is not None for c in block.comment)
    sizes = np.fromiter(per_query.values(), dtype=np.int64)
    fmap = opts.feature_map if opts.feature_map is not None else FeatureMap.from_ids(seen.tolist())
    return {
        "path": str(opts.path),
        "format": "svmlight" if opts.svmlight else "letor",
        "rows": stream.rows,
        "queries": len(per_query),
        "features": len(fmap),
        "max_feature_id": fmap.max_id,
        "label_histogram": {_format_label(k): v for k, v in sorted(labels.items())},
        "docs_per_query": {"min": int(sizes.min()), "median": float(np.median(sizes)), "max": int(sizes.max())},
        "queries_without_relevant": int(sum(not r for r in relevant.values())),
        "rows_with_comment": with_comment,
        "rows_with_docid": with_docid,
        "weighted": opts.weights is not None,
        "positioned": opts.positions is not None,
        "feature_map": "sidecar" if opts.map_path is not None else "ids seen",
        "feature_names": [{"id": f.id, "name": f.name, "source": f.source} for f in fmap],
        "regrouped_queries": len(set(stream.noncontiguous)),
    }
