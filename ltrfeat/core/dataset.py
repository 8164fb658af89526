"""The in-memory ranking data set and its feature map: the seam every other module uses.

A :class:`RankingSet` holds one row per (query, document) pair: ``qid`` (strings),
``label`` (float64), a float32 feature matrix ``X`` whose columns are described by a
:class:`FeatureMap`, and optional ``docid``, ``comment`` and ``weight`` columns.
Rows of one query are contiguous once :meth:`RankingSet.regroup` has been applied
(readers check this and say so).
"""

from __future__ import annotations

import dataclasses
import fnmatch
import hashlib
import json
import re
from pathlib import Path

import numpy as np

from ltrfeat.core.errors import LetorFormatError
from ltrfeat.core.fileio import atomic_output

FEATURE_MAP_FORMAT = "ltrfeat.features/1"
MAX_FEATURE_ID = 10**9 - 1  # LETOR readers (ours included) refuse ids of ten digits


@dataclasses.dataclass(frozen=True)
class Feature:
    """One feature column: its 1-based LETOR id, a unique name and where it came from."""

    id: int
    name: str
    source: str = "input"


class FeatureMap:
    """Ordered feature ids ↔ names; column ``j`` of a matrix is ``features[j]``.

    Ids are positive and strictly increasing; names are unique. Columns read from a
    file without a sidecar are named ``f<id>``. ``pipeline`` records how columns were made:
    JSON objects, each with the ``columns`` it covers and the settings that define them
    (see :mod:`ltrfeat.features.pins`); it travels with the map into sidecars and ranker
    metadata and does not take part in equality.
    """

    def __init__(self, features=(), pipeline=()):
        self.features = tuple(features)
        self.pipeline = tuple(pipeline)
        ids = [f.id for f in self.features]
        if any(i <= 0 for i in ids) or any(b <= a for a, b in zip(ids, ids[1:])):
            raise ValueError(f"feature ids must be positive and strictly increasing, got {ids[:10]}")
        names = [f.name for f in self.features]
        if len(set(names)) != len(names):
            dup = sorted({n for n in names if names.count(n) > 1})
            raise ValueError(f"duplicate feature names: {dup[:5]}")

    @classmethod
    def from_ids(cls, ids, source: str = "input") -> "FeatureMap":
        return cls(Feature(int(i), f"f{int(i)}", source) for i in ids)

    @classmethod
    def dense(cls, n: int, source: str = "input") -> "FeatureMap":
        return cls.from_ids(range(1, n + 1), source)

    def __len__(self) -> int:
        return len(self.features)

    def __iter__(self):
        return iter(self.features)

    def __eq__(self, other) -> bool:
        return isinstance(other, FeatureMap) and self.features == other.features

    def __repr__(self) -> str:
        return f"FeatureMap({len(self)} features: {', '.join(self.names[:5])}{', ...' if len(self) > 5 else ''})"

    @property
    def ids(self) -> list[int]:
        return [f.id for f in self.features]

    @property
    def names(self) -> list[str]:
        return [f.name for f in self.features]

    @property
    def max_id(self) -> int:
        return self.features[-1].id if self.features else 0

    def column_of(self, key) -> int:
        """Column index of a feature given by id (int or digit string) or by name."""
        if isinstance(key, (int, np.integer)) or (isinstance(key, str) and key.isdigit()):
            fid = int(key)
            for j, f in enumerate(self.features):
                if f.id == fid:
                    return j
            raise KeyError(f"no feature with id {fid} (ids {self._id_summary()})")
        for j, f in enumerate(self.features):
            if f.name == key:
                return j
        raise KeyError(f"no feature named {key!r} (names: {self._name_summary()})")

    def _name_summary(self) -> str:
        return f"{', '.join(self.names[:8])}{'...' if len(self) > 8 else ''}"

    def _id_summary(self) -> str:
        return f"{self.ids[0]}..{self.ids[-1]}" if self.features else "none"

    def resolve(self, spec) -> list[int]:
        """Column indices for a selection such as ``"1-46,bm25_title,clsm_title_cos"``.

        ``spec`` is a comma-separated string or a list of ids, ``a-b`` id ranges
        (inclusive; ids absent from the map inside a range are skipped), names, name patterns with
        shell wildcards (``bm25_*``, in id order), and sources: an item that names no column but is the
        ``source`` of some (``lexical``, ``encoder:sbert``) selects them all. ``None`` or ``"all"``
        selects every column. Order follows the spec, duplicates are dropped.
        """
        if spec is None or spec == "all":
            return list(range(len(self)))
        items = spec.split(",") if isinstance(spec, str) else list(spec)
        cols: list[int] = []
        for item in items:
            item = str(item).strip()
            if not item:
                continue
            m = re.fullmatch(r"(\d+)-(\d+)", item)
            if m:
                lo, hi = int(m.group(1)), int(m.group(2))
                if lo > hi:
                    raise KeyError(f"empty id range {item!r}")
                found = [j for j, f in enumerate(self.features) if lo <= f.id <= hi]
                if found and (lo < self.features[0].id or hi > self.max_id):
                    raise KeyError(f"id range {item!r} reaches beyond the ids present ({self._id_summary()})")
                if not found:
                    raise KeyError(f"no feature ids in range {item!r} (ids {self._id_summary()})")
                cols.extend(found)
            elif item not in self.names and any(f.source == item for f in self.features):
                cols.extend(j for j, f in enumerate(self.features) if f.source == item)
            elif item not in self.names and any(c in item for c in "*?["):
                found = [j for j, f in enumerate(self.features) if fnmatch.fnmatchcase(f.name, item)]
                if not found:
                    raise KeyError(f"no feature name matches {item!r} (names: {self._name_summary()})")
                cols.extend(found)
            else:
                cols.append(self.column_of(item))
        return list(dict.fromkeys(cols))  # first occurrence of each column, in order

    def select(self, columns) -> "FeatureMap":
        """The map of a column subset; ids keep their values, order follows ``columns``
        and must stay increasing in id (use sorted columns). Pipeline records keep the kept columns."""
        features = [self.features[j] for j in columns]
        kept = {f.name for f in features}
        pipeline = [
            r | {"columns": [c for c in r["columns"] if c in kept]}
            for r in self.pipeline
            if any(c in kept for c in r["columns"])
        ]
        return FeatureMap(features, pipeline)

    def record_of(self, name: str) -> dict | None:
        """The pipeline record covering column ``name`` (None for columns without one)."""
        return next((r for r in self.pipeline if name in r["columns"]), None)

    def with_records(self, records) -> "FeatureMap":
        """The same columns with ``records`` replacing the records of the columns they cover."""
        covered = {c for r in records for c in r["columns"]}
        kept = [r for r in self.pipeline if not covered & set(r["columns"])]
        return FeatureMap(self.features, [*kept, *records])

    def append(self, names, source: str, record: dict | None = None) -> "FeatureMap":
        """A new map with ``names`` appended after the largest id (and ``record``, the pipeline
        record of the new columns, if given)."""
        start = self.max_id + 1
        if start + len(names) - 1 > MAX_FEATURE_ID:
            raise LetorFormatError(
                f"appending {len(names)} columns after id {self.max_id} needs ids above "
                f"{MAX_FEATURE_ID}, which LETOR files cannot hold",
                fix="renumber the input's features from 1 (e.g. ltrfeat letor convert)",
            )
        pipeline = [*self.pipeline, record | {"columns": list(names)}] if record is not None else self.pipeline
        return FeatureMap(self.features + tuple(Feature(start + k, n, source) for k, n in enumerate(names)), pipeline)

    def to_json(self) -> dict:
        out = {
            "format": FEATURE_MAP_FORMAT,
            "features": [{"id": f.id, "name": f.name, "source": f.source} for f in self.features],
        }
        return out | ({"pipeline": [dict(r) for r in self.pipeline]} if self.pipeline else {})

    @classmethod
    def from_json(cls, obj, *, path=None) -> "FeatureMap":
        if (
            not isinstance(obj, dict)
            or obj.get("format") != FEATURE_MAP_FORMAT
            or not isinstance(obj.get("features"), list)
        ):
            raise LetorFormatError(
                f"not a feature map (expected {{'format': '{FEATURE_MAP_FORMAT}', 'features': [...]}})",
                path=path,
                fix="regenerate it with ltrfeat or delete it to use default names",
            )
        pipeline = obj.get("pipeline", [])
        if not isinstance(pipeline, list) or not all(
            isinstance(r, dict) and isinstance(r.get("columns"), list) for r in pipeline
        ):
            raise LetorFormatError(
                "bad feature map 'pipeline' (expected a list of objects with 'columns')",
                path=path,
                fix="regenerate it with ltrfeat extract",
            )
        try:
            features = [Feature(int(d["id"]), str(d["name"]), str(d.get("source", "input"))) for d in obj["features"]]
            return cls(features, pipeline)
        except (KeyError, TypeError, ValueError) as exc:
            raise LetorFormatError(
                f"bad feature map entry ({exc})", path=path, fix="each entry needs an integer 'id' and a 'name'"
            ) from None

    @staticmethod
    def sidecar_path(data_path) -> Path:
        """``<file>.features.json`` beside a data file."""
        return Path(f"{data_path}.features.json")

    def save(self, path) -> None:
        with atomic_output(path) as fh:
            json.dump(self.to_json(), fh, indent=1)
            fh.write("\n")

    @classmethod
    def load(cls, path) -> "FeatureMap":
        try:
            with open(path, encoding="utf-8") as fh:
                obj = json.load(fh)
        except UnicodeDecodeError as exc:
            raise LetorFormatError(
                f"feature map is not UTF-8 text (byte offset {exc.start})",
                path=path,
                fix="regenerate it with ltrfeat or delete it to use default names",
            ) from None
        except OSError as exc:
            raise LetorFormatError(
                f"cannot read the feature map ({exc.strerror or exc})",
                path=path,
                fix="check the file and its permissions",
            ) from None
        except json.JSONDecodeError as exc:
            raise LetorFormatError(
                f"feature map is not valid JSON ({exc.msg})",
                path=path,
                line=exc.lineno,
                fix="regenerate it with ltrfeat or delete it to use default names",
            ) from None
        return cls.from_json(obj, path=path)


def _integers(values, name: str) -> np.ndarray:
    """``values`` as int64, refusing what a cast would change (2.5, NaN, text)."""
    array = np.asarray(values)
    if array.dtype.kind in "iub":
        return array.astype(np.int64)
    try:
        floats = array.astype(np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must hold integers, got {array.dtype} values") from None
    bad = ~np.isfinite(floats) | (floats != np.round(floats))
    if bad.any():
        k = int(np.flatnonzero(bad)[0])
        raise ValueError(f"{name} must hold integers; row {k + 1} has {floats[k]:g}")
    return floats.astype(np.int64)


@dataclasses.dataclass
class RankingSet:
    """Rows of (query, document) pairs with labels and a float32 feature matrix.

    Attributes
    ----------
    qid : object array of str, shape (n,)
    label : float64 array, shape (n,)
    X : float32 array, shape (n, len(feature_map))
    feature_map : FeatureMap describing the columns of ``X``
    docid : object array of str (or None where unknown), or None for the whole set
    comment : object array of the verbatim text after ``#`` (or None), or None
    weight : float64 array of per-row weights, or None
    position : int64 array of the 1-based position at which each row was shown (click data), or None
    """

    qid: np.ndarray
    label: np.ndarray
    X: np.ndarray
    feature_map: FeatureMap
    docid: np.ndarray | None = None
    comment: np.ndarray | None = None
    weight: np.ndarray | None = None
    position: np.ndarray | None = None

    def __post_init__(self):
        self.qid = np.asarray(self.qid, dtype=object)
        self.label = np.asarray(self.label, dtype=np.float64)
        self.X = np.asarray(self.X, dtype=np.float32)
        n = len(self.qid)
        if self.X.ndim != 2 or self.X.shape[0] != n or self.label.shape != (n,):
            raise ValueError(f"shape mismatch: qid {n}, label {self.label.shape}, X {self.X.shape}")
        if self.X.shape[1] != len(self.feature_map):
            raise ValueError(f"X has {self.X.shape[1]} columns but the feature map names {len(self.feature_map)}")
        if self.position is not None:
            self.position = _integers(self.position, "position")
        for name, dtype in (("docid", object), ("comment", object), ("weight", np.float64), ("position", np.int64)):
            value = getattr(self, name)
            if value is not None:
                value = np.asarray(value, dtype=dtype)
                if value.shape != (n,):
                    raise ValueError(f"{name} has shape {value.shape}, expected ({n},)")
                setattr(self, name, value)

    def __len__(self) -> int:
        return len(self.qid)

    @property
    def n_features(self) -> int:
        return self.X.shape[1]

    def query_boundaries(self) -> np.ndarray:
        """Row offsets where the qid changes, with 0 and n: query i is rows [b[i], b[i+1])."""
        n = len(self.qid)
        if n == 0:
            return np.zeros(1, dtype=np.int64)
        change = np.flatnonzero(self.qid[1:] != self.qid[:-1]) + 1
        return np.concatenate([[0], change, [n]]).astype(np.int64)

    def is_contiguous(self) -> bool:
        b = self.query_boundaries()
        return len(b) - 1 == len(set(self.qid[b[:-1]].tolist()))

    def queries(self) -> np.ndarray:
        """Distinct qids in order of first appearance."""
        _, first = np.unique(self.qid.astype(str), return_index=True)
        return self.qid[np.sort(first)]

    @property
    def n_queries(self) -> int:
        return len(self.queries())

    def group_sizes(self) -> np.ndarray:
        """Rows per query, in row order; requires contiguous queries."""
        if not self.is_contiguous():
            raise ValueError("queries are not contiguous; call regroup() first")
        return np.diff(self.query_boundaries())

    def regroup(self) -> "RankingSet":
        """Stably reorder rows so each query's rows are contiguous (queries in order of first
        appearance, rows within a query in input order). Returns self when already contiguous."""
        if self.is_contiguous():
            return self
        order_of_qid = {q: k for k, q in enumerate(self.queries().tolist())}
        key = np.fromiter((order_of_qid[q] for q in self.qid.tolist()), dtype=np.int64, count=len(self))
        return self.take(np.argsort(key, kind="stable"))

    def take(self, rows) -> "RankingSet":
        """A new set holding ``rows`` (indices or boolean mask) in that order."""
        rows = np.asarray(rows)
        pick = lambda a: None if a is None else a[rows]  # noqa: E731
        return RankingSet(
            self.qid[rows],
            self.label[rows],
            self.X[rows],
            self.feature_map,
            pick(self.docid),
            pick(self.comment),
            pick(self.weight),
            pick(self.position),
        )

    def subset_queries(self, qids) -> "RankingSet":
        """Rows whose qid is in ``qids``, in their current order."""
        wanted = set(np.asarray(list(qids), dtype=object).tolist())
        mask = np.fromiter((q in wanted for q in self.qid.tolist()), dtype=bool, count=len(self))
        return self.take(mask)

    def select_features(self, spec) -> "RankingSet":
        """Keep the columns chosen by :meth:`FeatureMap.resolve` (kept in id order)."""
        cols = sorted(self.feature_map.resolve(spec), key=lambda j: self.feature_map.features[j].id)
        return dataclasses.replace(self, X=self.X[:, cols], feature_map=self.feature_map.select(cols))

    def with_columns(self, names, values, *, source: str, record: dict | None = None) -> "RankingSet":
        """Append feature columns (ids after the largest id) named ``names`` (``record``: their
        pipeline record, see :class:`FeatureMap`)."""
        values = np.asarray(values, dtype=np.float32).reshape(len(self), -1)
        names = list(names)
        if values.shape[1] != len(names):
            raise ValueError(f"{len(names)} names for {values.shape[1]} columns")
        return dataclasses.replace(
            self, X=np.hstack([self.X, values]), feature_map=self.feature_map.append(names, source, record)
        )

    def content_hash(self) -> str:
        """SHA-256 of qids, labels, features and feature ids: identifies training data in metadata."""
        h = hashlib.sha256()
        h.update("\x1f".join(map(str, self.qid.tolist())).encode())
        h.update(np.ascontiguousarray(self.label).tobytes())
        h.update(np.ascontiguousarray(self.X).tobytes())
        h.update(json.dumps(self.feature_map.to_json(), sort_keys=True).encode())
        if self.position is not None:  # the same clicks shown elsewhere are other training data
            h.update(b"position" + np.ascontiguousarray(self.position).tobytes())
        return h.hexdigest()
