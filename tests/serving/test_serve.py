"""The HTTP service: request validation in-process, and `ltrfeat serve` end to end on loopback."""

from __future__ import annotations

import json
import signal
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("httpx")
pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")

from fastapi.testclient import TestClient  # noqa: E402

from ltrfeat.serving.app import ServiceLimits, create_app  # noqa: E402
from ltrfeat.serving.process import served  # noqa: E402
from ltrfeat.serving.scorer import Scorer  # noqa: E402
from builders import build_world, candidates_of  # noqa: E402

JSON = {"content-type": "application/json"}


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    return build_world(tmp_path_factory.mktemp("serve"), n_queries=12)


@pytest.fixture(scope="module")
def client(world):
    scorer = Scorer.load(world["ranker"], encoders={"clsm": world["encoder"]}, corpus_stats=world["corpus"])
    with TestClient(
        create_app(scorer, limits=ServiceLimits(max_candidates=20, max_bytes=20_000)), base_url="http://localhost"
    ) as c:
        yield c


def test_health(client):
    body = client.get("/health").json()
    assert body["status"] == "ok" and body["fields"] == ["title", "body"] and "clsm_title_cos" in body["features"]


def test_score_and_order(client, world):
    rows, cands = candidates_of(world, "q4")
    resp = client.post("/score", json={"query": world["queries"]["query"][4], "candidates": cands})
    assert resp.status_code == 200
    body = resp.json()
    np.testing.assert_allclose(body["scores"], world["model"].predict(world["data"])[rows], atol=1e-9)
    best_first = [cands[i]["docid"] for i in np.argsort(-np.array(body["scores"]), kind="stable")]
    assert body["order"] == best_first


@pytest.mark.parametrize(
    "content, status, message",
    [
        (b"{not json", 400, "not valid JSON"),
        (b"\xff\xfe", 400, "not valid JSON"),
        (json.dumps({"candidates": []}).encode(), 422, "query: Field required"),
        (json.dumps({"query": "x", "candidates": "nope"}).encode(), 422, "candidates: Input should be a valid list"),
        (json.dumps({"query": "x", "candidates": [], "extra": 1}).encode(), 422, "extra: Extra inputs"),
        (
            json.dumps({"query": "x", "candidates": [{"docid": "a", "title": "t"}]}).encode(),
            422,
            "needs text field 'body'",
        ),
        (
            json.dumps(
                {"query": "x", "candidates": [{"docid": str(i), "title": "t", "body": "b"} for i in range(21)]}
            ).encode(),
            413,
            "21 candidates exceed the limit of 20",
        ),
        (json.dumps({"query": "x" * 30_000, "candidates": []}).encode(), 413, "exceeds the limit of 20000"),
    ],
)
def test_bad_requests(client, content, status, message):
    resp = client.post("/score", content=content, headers=JSON)
    assert resp.status_code == status
    assert message in resp.json()["detail"]


def test_oversize_body_without_content_length_is_cut(client):
    def chunks():
        for _ in range(30):
            yield b"x" * 1000

    resp = client.post("/score", content=chunks(), headers=JSON)  # chunked transfer: no Content-Length
    assert resp.status_code == 413


def test_serve_end_to_end(world):
    args = [
        "--ranker",
        world["ranker"],
        "--corpus-stats",
        world["corpus"],
        "--encoder",
        f"clsm={world['encoder']}",
        "--max-candidates",
        "50",
        "--max-bytes",
        "100000",
    ]
    with served(args, request_timeout=10) as (proc, http):
        rows, cands = candidates_of(world, "q2")
        body = http.post("/score", json={"query": world["queries"]["query"][2], "candidates": cands}).json()
        np.testing.assert_allclose(body["scores"], world["model"].predict(world["data"])[rows], atol=1e-9)
        assert sorted(body["order"]) == sorted(c["docid"] for c in cands)
        bad = http.post("/score", content=b"[1,", headers={"content-type": "application/json"})
        assert bad.status_code == 400
        assert http.post("/score", json={"query": "q"}).status_code == 422
        assert http.get("/nope").status_code == 404
        address = str(http.base_url).rstrip("/")
    err = proc.stderr.read().decode()
    # uvicorn shuts down gracefully, then re-raises the signal it caught (exit by SIGTERM)
    assert proc.returncode in (0, -signal.SIGTERM), err
    assert f"on {address}" in err and "Traceback" not in err


def test_serve_refuses_a_ranker_it_cannot_feed(world, tmp_path):
    from click.testing import CliRunner

    from ltrfeat.cli.main import cli

    # without the record of where its encoder is (a ranker from before the records, or a moved bundle)
    meta = json.loads(Path(f"{world['ranker']}.meta.json").read_text())
    meta["features"].pop("pipeline")
    (tmp_path / "ranker.txt").write_bytes(Path(world["ranker"]).read_bytes())
    (tmp_path / "ranker.txt.meta.json").write_text(json.dumps(meta))
    result = CliRunner().invoke(
        cli, ["serve", "--ranker", str(tmp_path / "ranker.txt"), "--corpus-stats", str(world["corpus"])]
    )
    assert result.exit_code == 2
    assert "cannot compute: clsm_title_cos" in result.output
