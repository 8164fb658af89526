"""Ablation folds read from LETOR files: ``DIR/Fold1/{train,vali,test}.txt`` and the like."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import numpy as np

from ltrfeat.core.dataset import FeatureMap, RankingSet
from ltrfeat.core.errors import LtrfeatError
from ltrfeat.core.letor import read_letor
from ltrfeat.experiments.folds import Fold

FOLD_FILES = {"train": ("train",), "valid": ("vali", "valid"), "test": ("test",)}
FOLD_EXTENSIONS = (".letor", ".txt", ".letor.gz", ".txt.gz")


def _natural_key(path: Path):
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", path.name)]


def _fold_file(directory: Path, part: str) -> Path | None:
    found = [
        directory / f"{stem}{ext}"
        for stem in FOLD_FILES[part]
        for ext in FOLD_EXTENSIONS
        if (directory / f"{stem}{ext}").is_file()
    ]
    if len(found) > 1:
        raise LtrfeatError(
            f"{len(found)} {part} files: {', '.join(p.name for p in found)}",
            path=directory,
            fix="keep one file per part",
        )
    if not found and part != "valid":
        stems = "/".join(FOLD_FILES[part])
        raise LtrfeatError(
            f"no {part} file ({stems} with extension {', '.join(FOLD_EXTENSIONS)})",
            path=directory,
            fix="each fold directory needs train and test files (vali is optional)",
        )
    return found[0] if found else None


def _is_default_map(fmap: FeatureMap) -> bool:
    return all(f.name == f"f{f.id}" for f in fmap)


def _pad(data: RankingSet, fmap: FeatureMap) -> RankingSet:
    """``data`` with the columns of ``fmap``; ids it never saw (sparse files omit zeros) are 0."""
    if data.feature_map == fmap:
        return data
    X = np.zeros((len(data), len(fmap)), dtype=np.float32)
    position = {fid: j for j, fid in enumerate(fmap.ids)}
    X[:, [position[i] for i in data.feature_map.ids]] = data.X
    return dataclasses.replace(data, X=X, feature_map=fmap)


def load_letor_folds(directory, *, fold_glob: str = "Fold*", nan_policy: str = "keep") -> list[Fold]:
    """Read ``DIRECTORY/<fold_glob>/{train,vali,test}.{letor,txt}[.gz]`` into folds.

    Folds are taken in natural order (Fold2 before Fold10); ``vali``/``valid`` is optional.
    Files without a ``.features.json`` sidecar get the union of the ids seen in all files
    (ids a file never shows are zeros); files with sidecars must all name the same features.
    Non-contiguous queries are regrouped with a warning.
    """
    directory = Path(directory)
    if not directory.is_dir():
        raise LtrfeatError("not a directory", path=directory, fix="give the directory holding Fold1, Fold2, ...")
    fold_dirs = sorted((p for p in directory.glob(fold_glob) if p.is_dir()), key=_natural_key)
    if not fold_dirs:
        raise LtrfeatError(
            f"no fold directory matches {fold_glob!r}",
            path=directory,
            fix="lay folds out as DIR/Fold1/{train,vali,test}.txt or pass --fold-glob",
        )
    files = {d.name: {part: _fold_file(d, part) for part in FOLD_FILES} for d in fold_dirs}
    data = {
        name: {
            part: None if path is None else read_letor(path, nan_policy=nan_policy, regroup=True)
            for part, path in parts.items()
        }
        for name, parts in files.items()
    }
    loaded = [(files[n][p], d) for n, parts in data.items() for p, d in parts.items() if d is not None]
    if all(_is_default_map(d.feature_map) for _, d in loaded):
        fmap = FeatureMap.from_ids(sorted({i for _, d in loaded for i in d.feature_map.ids}))
    else:
        first_path, first = loaded[0]
        for path, d in loaded[1:]:
            if d.feature_map != first.feature_map:
                raise LtrfeatError(
                    f"its features ({d.feature_map!r}) differ from those of {first_path} ({first.feature_map!r})",
                    path=path,
                    fix="give every fold file the same columns and .features.json sidecar",
                )
        fmap = first.feature_map
    folds = []
    for name, parts in data.items():
        paths = files[name]
        origin = ", ".join(f"{part}={paths[part]}" for part in FOLD_FILES if paths[part] is not None)
        train, valid, test = parts["train"], parts["valid"], parts["test"]
        assert train is not None and test is not None  # _fold_file refuses a fold without them
        folds.append(
            Fold(name, _pad(train, fmap), None if valid is None else _pad(valid, fmap), _pad(test, fmap), origin=origin)
        )
    return folds
