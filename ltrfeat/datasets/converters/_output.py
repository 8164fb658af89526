"""Writing a converted data set into a directory, all or nothing.

Files: ``pairs.tsv``, ``queries.tsv``, ``docs.tsv``, ``all.letor`` (zero feature columns,
``#docid = X`` comments, ``.features.json`` sidecar), with a split also
``train.letor vali.letor test.letor`` (and a ``split`` column in the pairs and queries
tables), and ``convert.json`` (options, counts, label rule, retrieval figures, SHA-256 of
every input and output file). Everything is written into a temporary sibling directory
that replaces ``DIR`` only when complete.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pandas as pd

from ltrfeat.core.dataset import FeatureMap, RankingSet
from ltrfeat.core.errors import LtrfeatError
from ltrfeat.core.fileio import atomic_output, check_output_dir, replaced_dir
from ltrfeat.core.letor import write_letor
from ltrfeat.core.splits import SPLITS, cut_queries, share_sizes
from ltrfeat.core.text import write_table
from ltrfeat.datasets.converters._base import Converted, convert

CONVERT_FORMAT = "ltrfeat.convert/1"


def parse_split(spec: str | None) -> tuple[float, float, float] | None:
    """``"0.6,0.2,0.2"`` → shares of queries in train, vali, test (positive, summing to 1)."""
    if spec is None:
        return None
    try:
        shares = tuple(float(p) for p in spec.split(","))
    except ValueError:
        shares = ()
    if len(shares) != 3 or min(shares) <= 0 or abs(sum(shares) - 1) > 1e-6:
        raise LtrfeatError(
            f"bad split {spec!r}", fix="give --split three positive shares summing to 1, e.g. 0.6,0.2,0.2"
        )
    return shares


def check_out_dir(out_dir, *, overwrite: bool) -> None:
    """Refuse an existing non-empty ``out_dir`` unless ``overwrite`` and ltrfeat wrote it."""
    check_output_dir(out_dir, overwrite=overwrite, option="--out")


def assign_splits(qids, shares, seed: int) -> dict[str, str]:
    """qid → split name: a seeded permutation of the distinct qids cut by ``shares``."""
    qids = list(dict.fromkeys(qids))
    parts = cut_queries(qids, share_sizes(len(qids), shares), seed)
    if min(len(p) for p in parts) == 0:
        raise LtrfeatError(
            f"{len(qids)} queries are too few for the split {', '.join(f'{s:g}' for s in shares)}",
            fix="use more queries or larger shares so that every split gets one",
        )
    return {q: name for name, part in zip(SPLITS, parts) for q in part.tolist()}


def _ranking(pairs: pd.DataFrame) -> RankingSet:
    docid = pairs["docid"].to_numpy(dtype=object)
    return RankingSet(
        qid=pairs["qid"].to_numpy(dtype=object),
        label=pairs["label"].to_numpy(dtype=np.float64),
        X=np.zeros((len(pairs), 0), dtype=np.float32),
        feature_map=FeatureMap(()),
        docid=docid,
        comment=np.array([f"docid = {d}" for d in docid], dtype=object),
    )


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def write_converted(
    conv: Converted, out_dir, *, split=None, seed: int = 0, overwrite: bool = False, options: dict | None = None
) -> dict:
    """Write ``conv`` into ``out_dir`` (see the module docstring); returns the ``convert.json`` record.

    ``split`` : ``(train, vali, test)`` shares of queries, or None; ``seed`` seeds it.
    ``options`` : recorded as given in ``convert.json``.
    """
    out = Path(out_dir)
    check_out_dir(out, overwrite=overwrite)
    pairs, queries = conv.pairs, conv.queries
    assignment = assign_splits(pairs["qid"], split, seed) if split else None
    if assignment:
        pairs = pairs.assign(split=pairs["qid"].map(assignment))
        queries = queries.assign(split=queries["qid"].map(assignment))
    ranking = _ranking(pairs)
    with replaced_dir(out, kind="dataset") as tmp:
        write_table(pairs, tmp / "pairs.tsv")
        write_table(queries, tmp / "queries.tsv")
        write_table(conv.docs, tmp / "docs.tsv")
        write_letor(tmp / "all.letor", ranking)
        split_counts = {}
        if assignment:
            for name in SPLITS:
                part = ranking.take((pairs["split"] == name).to_numpy())
                write_letor(tmp / f"{name}.letor", part)
                split_counts[name] = {"queries": part.n_queries, "pairs": len(part)}
        summary = {
            "format": CONVERT_FORMAT,
            "source": conv.source,
            "options": {**(options or {}), "split": list(split) if split else None, "seed": seed if split else None},
            "inputs": {
                role: {"name": Path(p).name, "bytes": Path(p).stat().st_size, "sha256": _sha256(Path(p))}
                for role, p in conv.inputs.items()
            },
            "counts": {
                "queries": int(queries["qid"].nunique()),
                "docs": len(conv.docs),
                "pairs": len(pairs),
                "fields": list(conv.fields),
                "splits": split_counts or None,
            },
            "labels": conv.labels,
            "duplicates": conv.duplicates,
            "retrieval": conv.retrieval,
            "notes": conv.notes,
            "outputs": {p.name: _sha256(p) for p in sorted(tmp.iterdir())},
        }
        with atomic_output(tmp / "convert.json") as fh:
            json.dump(summary, fh, indent=1)
            fh.write("\n")
    return summary


def convert_to_dir(
    name: str, inputs, out_dir, *, split=None, seed: int = 0, overwrite: bool = False, **options
) -> dict:
    """:func:`~ltrfeat.datasets.converters.convert` then :func:`write_converted`; ``options`` go to
    ``convert`` (``k``, ``label_map``, ``encoding``, ``analyzer``, ``k1``, ``b``, ``progress``)."""
    check_out_dir(out_dir, overwrite=overwrite)
    conv = convert(name, inputs, **options)
    recorded = {k: (v.to_json() if hasattr(v, "to_json") else v) for k, v in options.items() if k != "progress"}
    return write_converted(conv, out_dir, split=split, seed=seed, overwrite=overwrite, options=recorded)
