"""Leakage guard: the queries an encoder was trained on, kept in its bundle and checked wherever it scores.

Training records (:func:`trained_queries_record`, in every encoder bundle's ``training`` record) keep
8-byte BLAKE2b hashes of the normalised training query texts (:func:`ltrfeat.core.text.normalise_query`: NFKC,
case-folded, whitespace collapsed) and of the query ids, sorted, base64 encoded: 11 characters per query. An encoder
feature computed for a query it was trained on is optimistic -- the ablation's numbers would lie
-- so ``extract``, ``rerank`` and ``serve`` count such queries (:class:`LeakageGuard`) and warn,
or refuse with ``--strict``; ``extract`` records the count in the sidecar's pipeline record of the
encoder's columns (``trained_queries``), which ``train-ranker`` and ``evaluate`` report
(:func:`leaked_columns`). A query counts as seen when its normalised text matches; query ids are
reported beside it (ids of different data sets may coincide).
"""

from __future__ import annotations

import base64
import hashlib

import numpy as np

from ltrfeat.core.errors import LtrfeatError
from ltrfeat.core.text import QUERY_NORMALISATION, normalise_query


def _hashes(values) -> np.ndarray:
    """Sorted distinct 8-byte hashes of ``values`` (uint64)."""
    return np.unique(_hashes_each(values))


def _encode(hashes: np.ndarray) -> str:
    return base64.b64encode(hashes.astype("<u8").tobytes()).decode("ascii")


def trained_queries_record(pairs) -> dict:
    """``{"trained_queries": {...}}`` for a training table with a ``query`` (and optional ``qid``) column."""
    texts = {normalise_query(q) for q in pairs["query"].tolist()}
    record = {"normalisation": QUERY_NORMALISATION, "n_queries": len(texts), "query_hashes": _encode(_hashes(texts))}
    if "qid" in pairs:
        record["qid_hashes"] = _encode(_hashes({str(q) for q in pairs["qid"].tolist()}))
    return {"trained_queries": record}


class TrainedQueries:
    """The hashed training queries of one encoder (from its bundle's training record)."""

    def __init__(self, query_hashes: np.ndarray, qid_hashes: np.ndarray | None):
        self.query_hashes = query_hashes
        self.qid_hashes = qid_hashes

    @classmethod
    def of(cls, encoder) -> "TrainedQueries | None":
        """The encoder's training queries; None for encoders trained before they were recorded (or not by ltrfeat)."""
        record = (getattr(encoder, "training", None) or {}).get("trained_queries")
        if not isinstance(record, dict) or record.get("normalisation") != QUERY_NORMALISATION:
            return None

        def decode(key):
            raw = record.get(key)
            return None if raw is None else np.frombuffer(base64.b64decode(raw), dtype="<u8").astype(np.uint64)

        return cls(decode("query_hashes"), decode("qid_hashes"))

    def seen(self, texts) -> np.ndarray:
        """Whether each query text (normalised here) is one the encoder was trained on."""
        return np.isin(_hashes_each(normalise_query(t) for t in texts), self.query_hashes)

    def seen_ids(self, qids) -> np.ndarray:
        """Whether each query id is one of the training table's (False without recorded ids)."""
        if self.qid_hashes is None:
            return np.zeros(len(qids), dtype=bool)
        return np.isin(_hashes_each(str(q) for q in qids), self.qid_hashes)


def _hashes_each(values) -> np.ndarray:
    """The 8-byte BLAKE2b hash of each string, in order (uint64)."""
    return np.fromiter(
        (
            int.from_bytes(hashlib.blake2b(v.encode("utf-8", "surrogatepass"), digest_size=8).digest(), "little")
            for v in values
        ),
        dtype=np.uint64,
    )


class LeakageGuard:
    """Counts the distinct queries each encoder extractor scores that it was trained on.

    ``extractors``: fitted extractors (those with a ``trained_queries_`` are watched); ``strict``:
    :meth:`add` raises as soon as one such query is scored (before anything is written).
    """

    def __init__(self, extractors, *, strict: bool = False):
        self.strict = strict
        self.watched = [ex for ex in extractors if getattr(ex, "trained_queries_", None) is not None]
        self.scored: dict[str, str] = {}  # qid -> query text, every distinct query scored
        # qid -> query text seen in training
        self.seen: dict[str, dict[str, str]] = {ex.name: {} for ex in self.watched}
        self.seen_ids = {ex.name: 0 for ex in self.watched}

    def add(self, qids, texts) -> None:
        """Record the (qid, query text) pairs of scored rows; raise under ``strict`` when one was trained on."""
        if not self.watched:
            return
        new = {}
        for q, t in zip(map(str, qids), texts):
            if q not in self.scored and q not in new and isinstance(t, str):
                new[q] = t
        if not new:
            return
        self.scored.update(new)
        ids, texts = list(new), list(new.values())
        for ex in self.watched:
            hit = ex.trained_queries_.seen(texts)
            self.seen[ex.name].update((ids[i], texts[i]) for i in np.flatnonzero(hit))
            self.seen_ids[ex.name] += int(ex.trained_queries_.seen_ids(ids).sum())
            if self.strict and hit.any():
                raise LtrfeatError(
                    f"encoder {ex.name} was trained on {int(hit.sum())} of the queries to score "
                    f"(e.g. {texts[int(np.flatnonzero(hit)[0])]!r}): its columns would be optimistic",
                    fix="score queries held out from the encoder's training data, or retrain the encoder without "
                    "them (drop --strict to score them with a warning)",
                )

    def messages(self) -> list[str]:
        """One warning line per encoder that scored queries it was trained on."""
        return [
            f"encoder {name} was trained on {len(seen)} of the {len(self.scored)} queries scored (by text; "
            f"{self.seen_ids[name]} by query id), e.g. {next(iter(seen.values()))!r}: its columns are optimistic "
            "for them -- leakage if they are test or validation queries (--strict refuses)"
            for name, seen in self.seen.items()
            if seen
        ]

    def records(self, feature_map):
        """``feature_map`` with each watched encoder's pipeline record counting the queries it was trained on."""
        records = []
        for ex in self.watched:
            record = feature_map.record_of(ex.feature_names()[0])
            if record is not None:
                count = {"seen": len(self.seen[ex.name]), "scored": len(self.scored)}
                records.append(record | {"trained_queries": count})
        return feature_map.with_records(records) if records else feature_map


def leaked_columns(feature_map, names) -> dict[str, dict]:
    """``{column: {"seen", "scored"}}`` for columns among ``names`` whose file was scored by an encoder
    trained on some of its queries (from the sidecar's pipeline records)."""
    out = {}
    for name in names:
        record = feature_map.record_of(name) or {}
        count = record.get("trained_queries")
        if isinstance(count, dict) and count.get("seen"):
            out[name] = count
    return out
