"""Content-addressed store of ablation runs, so a re-run only trains the rankers whose inputs changed.

A run's key hashes everything its result depends on: the run settings (engine, seeds, ranker
parameters, metrics, conventions, model selection, library versions), the feature set's kind and
columns, and the fold's rows restricted to those columns (values, labels, qids, weights). Adding an
encoder to an ablation changes the sets that contain it (and the best-single baseline over all
columns); every other set's runs come back from the store bit for bit.

Results are stored as JSON with arrays as exact raw bytes (no pickles: a store on a shared disk
never executes anything when read), behind a SHA-256 of the content checked on every read
(:func:`~ltrfeat.core.fileio.read_checked`): a torn, foreign or damaged entry is recomputed, with
a one-line notice for a damaged one.

Within one ablation two runs whose columns hold the same values in the same order differ only in their
feature names (a MiniLM fine-tuning that kept its zero-shot start scores exactly as the ``sbert`` column):
:func:`fit_once` runs such a group once and gives each other run that result under its own feature names,
and the store keeps each under its own key.
"""

from __future__ import annotations

import base64
import hashlib
import json
from pathlib import Path

import numpy as np
import pandas as pd

from ltrfeat.core.fileio import read_checked, write_checked
from ltrfeat.core.versions import library_versions

RUN_CACHE_FORMAT = 6  # 6: runs keep their models' contribution summaries
_TAGS = ("__nd__", "__obj__", "__df__", "__np__", "__tuple__", "__map__")


def _pack(obj):
    if isinstance(obj, np.ndarray):
        if obj.dtype == object:
            return {"__obj__": [_pack(x) for x in obj.tolist()]}
        data = np.ascontiguousarray(obj)
        return {"__nd__": [data.dtype.str, list(data.shape), base64.b64encode(data.tobytes()).decode("ascii")]}
    if isinstance(obj, pd.DataFrame):
        return {
            "__df__": {
                "index": _pack(obj.index.to_numpy()),
                "index_name": obj.index.name,
                "columns": [[name, _pack(obj[name].to_numpy())] for name in obj.columns],
            }
        }
    if isinstance(obj, np.generic):
        return {"__np__": [obj.dtype.str, _pack(obj.item())]}
    if isinstance(obj, tuple):
        return {"__tuple__": [_pack(x) for x in obj]}
    if isinstance(obj, list):
        return [_pack(x) for x in obj]
    if isinstance(obj, dict):
        if all(isinstance(k, str) and k not in _TAGS for k in obj):
            return {k: _pack(v) for k, v in obj.items()}
        return {"__map__": [[_pack(k), _pack(v)] for k, v in obj.items()]}
    if obj is None or isinstance(obj, (bool, int, float, str)):
        return obj
    raise TypeError(f"cannot store a {type(obj).__name__} in the run cache")


def _unpack(obj):
    if isinstance(obj, list):
        return [_unpack(x) for x in obj]
    if not isinstance(obj, dict):
        return obj
    if len(obj) == 1:
        ((tag, value),) = obj.items()
        if tag == "__nd__":
            dtype, shape, data = value
            return np.frombuffer(base64.b64decode(data), dtype=np.dtype(dtype)).reshape(shape).copy()
        if tag == "__obj__":
            out = np.empty(len(value), dtype=object)
            out[:] = [_unpack(x) for x in value]
            return out
        if tag == "__df__":
            return pd.DataFrame(
                {name: _unpack(col) for name, col in value["columns"]},
                index=pd.Index(_unpack(value["index"]), name=value["index_name"]),
            )
        if tag == "__np__":
            return np.dtype(value[0]).type(_unpack(value[1]))
        if tag == "__tuple__":
            return tuple(_unpack(x) for x in value)
        if tag == "__map__":
            return {_unpack(k): _unpack(v) for k, v in value}
    return {k: _unpack(v) for k, v in obj.items()}


class RunStore:
    """Ablation runs kept in ``directory`` under a key of their inputs (see the module docstring).

    ``settings`` are the run settings shared by every run (JSON-able; :func:`~ltrfeat.experiments.ablation.run_ablation`
    sets them); ``hits`` and ``misses`` count this store's lookups, ``shared`` the misses given the result of
    an identical run (:func:`fit_once`) instead of running.
    """

    def __init__(self, directory, settings: dict | None = None):
        self.directory = Path(directory)
        self.settings = dict(settings or {})
        self.hits = 0
        self.misses = 0
        self.shared = 0

    def _count_shared(self) -> None:
        self.shared += 1

    def key(self, fold, feature_set, seed=None) -> str:
        """The key of one run: ``fold`` (a :class:`~ltrfeat.experiments.folds.Fold`), ``feature_set``, ``seed``."""
        h = hashlib.sha256(
            json.dumps(
                {
                    "format": RUN_CACHE_FORMAT,
                    "settings": self.settings,
                    "fold": fold.name,
                    "set": [feature_set.kind, feature_set.columns],
                    "seed": seed,
                    "versions": library_versions("numpy", "lightgbm", "xgboost", "scikit-learn"),
                },
                sort_keys=True,
                default=str,
            ).encode()
        )
        _hash_rows(h, fold, feature_set.columns)
        return h.hexdigest()[:32]

    def get(self, key: str):
        """The stored result of run ``key``, or None (absent, torn or unreadable)."""
        try:
            payload = read_checked(self.directory / f"{key}.json", what="cached ranker run")
            if payload is None:
                raise ValueError("absent or damaged")
            data = json.loads(payload.decode("utf-8"))
            if data.get("format") != RUN_CACHE_FORMAT or data.get("key") != key:
                raise ValueError("foreign file")
            result = _unpack(data["result"])
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            self.misses += 1
            return None
        self.hits += 1
        return result

    def put(self, key: str, result) -> None:
        """Store ``result`` of run ``key`` (atomically; a result that cannot be stored is skipped)."""
        try:
            text = json.dumps({"format": RUN_CACHE_FORMAT, "key": key, "result": _pack(result)})
        except TypeError:
            return
        write_checked(self.directory / f"{key}.json", text.encode("utf-8"))

    def map(self, mapper, run, *columns):
        """``mapper(run, *columns)`` (like :func:`map`), in order, with stored results taken from the store
        and new ones stored as they arrive; a missing run identical to another but for its feature names
        (:func:`fit_once`) takes that one's result, stored or fresh (counted in ``shared``)."""
        plan = list(zip(*columns))
        keys = [self.key(*item) for item in plan]
        found = [self.get(k) for k in keys]
        missing = [item for item, result in zip(plan, found) if result is None]
        known = [(item, result) for item, result in zip(plan, found) if result is not None]
        fresh = fit_once(mapper, run, *zip(*missing), known=known, on_share=self._count_shared) if missing else iter(())
        for key, result in zip(keys, found):
            if result is None:
                result = next(fresh)
                self.put(key, result)
            yield result


def _hash_rows(h, fold, columns) -> None:
    """Feed ``h`` the fold's rows restricted to ``columns`` (in that order): values, labels, qids, weights,
    display positions, docids."""
    for part in (fold.train, fold.valid, fold.test):
        if part is None:
            h.update(b"\x00none")
            continue
        cols = [part.feature_map.column_of(c) for c in columns]
        h.update(np.ascontiguousarray(part.X[:, cols]).tobytes())
        h.update(part.label.tobytes())
        h.update("\x1e".join(map(str, part.qid)).encode("utf-8", "surrogatepass"))
        h.update(b"\x00" if part.weight is None else np.asarray(part.weight, np.float64).tobytes())
        if part.position is not None:  # click data: the engines' position-bias correction trains on them
            h.update(b"position" + np.ascontiguousarray(part.position).tobytes())
        if part.docid is not None:  # ties="docid" orders tied scores by them
            h.update("\x1e".join(map(str, part.docid)).encode("utf-8", "surrogatepass"))


def value_key(fold, feature_set, seed=None) -> str:
    """What one run of an ablation (settings fixed) depends on besides its feature names: the fold, the set's
    kind, the seed and its columns' values in order, with the orders a ranker may put them in (by column and
    by feature id). Runs with equal keys fit the same models on the same numbers."""
    fmap = fold.train.feature_map
    cols = [fmap.column_of(c) for c in feature_set.columns]
    ids = [fmap.features[j].id for j in cols]
    h = hashlib.sha256(
        json.dumps(
            {
                "fold": fold.name,
                "kind": feature_set.kind,
                "seed": seed,
                "by_column": np.argsort(cols, kind="stable").tolist(),
                "by_id": np.argsort(ids, kind="stable").tolist(),
            },
            default=str,
        ).encode()
    )
    _hash_rows(h, fold, feature_set.columns)
    return h.hexdigest()


def _renamed(result: dict, names: dict) -> dict:
    """A run's ``result`` with the feature names in its importances (``shares``, ``contrib``), in what each fitted
    candidate chose (``runs[*]["chose"]``: features, linear weights) and in the features each uses
    (``selection["used"]``) replaced by ``names`` (old -> new); everything else is shared with ``result``."""

    def walk(obj):
        if isinstance(obj, str):
            return names.get(obj, obj)
        if isinstance(obj, dict):
            return {walk(k): walk(v) for k, v in obj.items()}
        if isinstance(obj, (list, tuple)):
            return type(obj)(walk(x) for x in obj)
        return obj

    out = dict(result)
    for key in ("shares", "contrib"):  # contrib: the contribution summaries' feature names (arrays are not walked)
        if out.get(key) is not None:
            out[key] = walk(out[key])
    if "runs" in out:
        out["runs"] = [r | {"chose": walk(r["chose"])} for r in out["runs"]]
    if "used" in out.get("selection", {}):
        out["selection"] = out["selection"] | {"used": walk(out["selection"]["used"])}
    return out


def fit_once(mapper, run, *columns, known=(), on_share=None):
    """``mapper(run, *columns)`` (like :func:`map`: items ``(fold, feature_set[, seed])``), in order, with each
    group of items of equal :func:`value_key` run once: the others get the first one's result under their own
    feature names. ``known``: ``(item, result)`` pairs already at hand, whose results are given the same way;
    ``on_share()`` is called for each item that did not run."""
    plan = list(zip(*columns))
    keys = [value_key(*item) for item in plan]
    source: dict[str, tuple] = {value_key(*item): (item, result) for item, result in known}
    first: dict[str, int] = {}
    for i, key in enumerate(keys):
        first.setdefault(key, i)
    runs = [i for i, key in enumerate(keys) if key not in source and first[key] == i]
    needed = {keys[i] for i in set(range(len(plan))) - set(runs)}  # results another item takes
    fresh = iter(mapper(run, *zip(*[plan[i] for i in runs]))) if runs else iter(())
    running = set(runs)
    for i, (item, key) in enumerate(zip(plan, keys)):
        if i in running:
            result = next(fresh)
            if key in needed:
                source[key] = (item, result)
            yield result
            continue
        if on_share is not None:
            on_share()
        twin, result = source[key]
        yield _renamed(result, dict(zip(twin[1].columns, item[1].columns)))
