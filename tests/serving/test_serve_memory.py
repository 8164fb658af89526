"""The service's memory is bounded whatever clients send: distinct random queries (each a handful of words no
one has sent before) leave every cache at its bound and the process's RSS flat, and the scores are those of a
scorer that forgets nothing (a cache changes the speed, never a score)."""

from __future__ import annotations

import gc
import random
import string

import pytest

pytest.importorskip("httpx")
pytest.importorskip("fastapi")

from fastapi.testclient import TestClient  # noqa: E402

from ltrfeat.serving.app import create_app, release_memory  # noqa: E402
from ltrfeat.serving.scorer import CacheLimits, Scorer  # noqa: E402
from builders import build_world  # noqa: E402

SMALL = CacheLimits(words=2_000, vectors=300, vector_bytes=200_000, logged_queries=50)
UNBOUNDED = CacheLimits(words=10**9, vectors=10**9, vector_bytes=10**15, logged_queries=10**9)


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    return build_world(tmp_path_factory.mktemp("memory"), n_queries=8)


def _rss_mb() -> float:
    gc.collect()
    release_memory()
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096 / 2**20


def _distinct_queries(n: int, seed: int = 0):
    rng = random.Random(seed)
    for i in range(n):
        yield f"q{i} " + " ".join("".join(rng.choices(string.ascii_lowercase, k=10)) for _ in range(30))


def _load(world, caches) -> Scorer:
    return Scorer.load(
        world["ranker"], encoders={"clsm": world["encoder"]}, corpus_stats=world["corpus"], caches=caches
    )


def _caches(scorer) -> dict:
    clsm = scorer.extractors[-1]
    return {
        "words": clsm.encoder_.hasher.cached_words,
        "vectors": max(len(c.vectors) for c in clsm._caches.values()),
        "vector_bytes": max(c.nbytes for c in clsm._caches.values()),
        "logged_queries": len(scorer._logged),
    }


def _send_distinct_queries(world, n: int, *, rss_bound_mb: float):
    bounded, reference = _load(world, SMALL), _load(world, UNBOUNDED)
    with TestClient(create_app(bounded), base_url="http://localhost") as client:
        queries = _distinct_queries(n + 200)
        for query in (next(queries) for _ in range(200)):  # warm up: allocations settle, caches fill
            assert (
                client.post(
                    "/score", json={"query": query, "candidates": [{"docid": "d", "title": query[:60], "body": query}]}
                ).status_code
                == 200
            )
        before, peak = _rss_mb(), {}
        for i, query in enumerate(queries):
            candidates = [
                {"docid": "d", "title": query[:60], "body": query},
                {"docid": "e", "title": "fan", "body": "x"},
            ]
            answer = client.post("/score", json={"query": query, "candidates": candidates})
            assert answer.status_code == 200, answer.text
            if i % 20 == 0:
                assert answer.json()["scores"] == reference.score(query, candidates).tolist()
                held = _caches(bounded)
                assert all(held[k] <= getattr(SMALL, k) for k in held), held
                peak = {k: max(peak.get(k, 0), v) for k, v in held.items()}
        grown = _rss_mb() - before
    assert peak["words"] > SMALL.words * 0.9 and peak["vectors"] == SMALL.vectors  # in use, up to their bound
    assert _caches(reference)["words"] > 30 * (n // 20)  # what the service kept: every word it was sent
    assert grown < rss_bound_mb, f"RSS grew {grown:.0f} MB over {n:,} distinct queries"


def test_distinct_queries_leave_the_caches_at_their_bound(world):
    _send_distinct_queries(world, 400, rss_bound_mb=20)


@pytest.mark.slow
def test_ten_thousand_distinct_queries_keep_memory_flat(world):
    _send_distinct_queries(world, 10_000, rss_bound_mb=20)


def test_an_onnx_exports_word_cache_stays_at_its_bound(world, tmp_path):
    """Served from an ONNX export, the encoder's word -> trigram table holds at most CacheLimits.words words
    whatever clients send (it is emptied when full), and the scores are those of a table that forgets nothing."""
    pytest.importorskip("onnxruntime")
    from ltrfeat.export.onnx import export_onnx
    from ltrfeat.encoders import Encoder

    export_onnx(Encoder.load(world["encoder"]), tmp_path / "clsm_onnx")
    onnx_world = world | {"encoder": tmp_path / "clsm_onnx"}
    bounded, reference = _load(onnx_world, SMALL), _load(onnx_world, UNBOUNDED)
    table, everything = (s.extractors[-1].encoder_._hashing.cache for s in (bounded, reference))
    peak = 0
    with TestClient(create_app(bounded), base_url="http://localhost") as client:
        for i, query in enumerate(_distinct_queries(150)):
            candidates = [
                {"docid": "d", "title": query[:60], "body": query},
                {"docid": "e", "title": "fan", "body": "x"},
            ]
            answer = client.post("/score", json={"query": query, "candidates": candidates})
            assert answer.status_code == 200, answer.text
            assert len(table) <= SMALL.words
            peak = max(peak, len(table))
            if i % 10 == 0:
                assert answer.json()["scores"] == pytest.approx(reference.score(query, candidates).tolist(), abs=1e-9)
    assert peak > SMALL.words * 0.9  # in use, up to its bound
    assert len(everything) > 30 * 15  # unbounded, it keeps every word it was sent
