"""``POST /explain``: per-document, per-feature contributions that add up to ``/score``'s scores, behind the
same token, Host check, body limits and validation as ``/score``."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("httpx")
pytest.importorskip("fastapi")

from fastapi.testclient import TestClient  # noqa: E402

from ltrfeat.rankers.linear import LinearRanker  # noqa: E402
from ltrfeat.rankers.models import save_ranker  # noqa: E402
from ltrfeat.serving.app import ServiceLimits, create_app  # noqa: E402
from ltrfeat.serving.fairness import STEP_CHARS  # noqa: E402
from ltrfeat.serving.scorer import Scorer  # noqa: E402
from builders import build_world, candidates_of  # noqa: E402

JSON = {"content-type": "application/json"}
TOKEN = {"Authorization": "Bearer s3cret"}
LIMITS = ServiceLimits(max_candidates=20, max_bytes=60_000, max_text_chars=STEP_CHARS)


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    root = tmp_path_factory.mktemp("explain")
    world = build_world(root, n_queries=12)
    save_ranker(LinearRanker().fit(world["data"]), root / "linear.json")
    return world | {"linear": root / "linear.json"}


def _client(world, ranker) -> TestClient:
    scorer = Scorer.load(world[ranker], encoders={"clsm": world["encoder"]}, corpus_stats=world["corpus"])
    return TestClient(create_app(scorer, limits=LIMITS, token="s3cret"), base_url="http://localhost")


@pytest.mark.parametrize("ranker", ["ranker", "linear"])
@pytest.mark.parametrize("long_texts", [False, True], ids=["one step", "in steps"])
def test_contributions_add_up_to_the_scores_of_score(world, ranker, long_texts):
    _, cands = candidates_of(world, "q4")
    if long_texts:  # candidates of more than one scoring step are computed in steps
        cands = [c | {"body": (c["body"] + " ") * (STEP_CHARS // (2 * len(c["body"]) + 2))} for c in cands]
    request = {"query": world["queries"]["query"][4], "candidates": cands}
    with _client(world, ranker) as client:
        scored = client.post("/score", json=request, headers=TOKEN).json()
        answer = client.post("/explain", json=request, headers=TOKEN)
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert body["scores"] == scored["scores"] and body["order"] == scored["order"]
    assert [d["docid"] for d in body["documents"]] == body["order"]
    assert [d["rank"] for d in body["documents"]] == list(range(1, len(cands) + 1))
    for doc in body["documents"]:
        terms = [c["contribution"] for c in doc["contributions"]]
        assert doc["score"] == scored["scores"][[c["docid"] for c in cands].index(doc["docid"])]
        assert abs(sum(terms) + doc["bias"] - doc["score"]) < 1e-5
        assert [abs(t) for t in terms] == sorted((abs(t) for t in terms), reverse=True)
    features = {c["feature"] for d in body["documents"] for c in d["contributions"]}
    assert "clsm_title_cos" in features and features <= set(world["data"].feature_map.names)


@pytest.fixture(scope="module")
def client(world):
    with _client(world, "ranker") as client:
        yield client


def _request(n=1, **fields) -> dict:
    return {"query": "q", "candidates": [{"docid": f"d{i}", "title": "t", "body": "b"} | fields for i in range(n)]}


def test_explain_needs_the_token_and_an_allowed_host(client):
    no_token = client.post("/explain", json=_request())
    assert no_token.status_code == 401 and no_token.headers["www-authenticate"] == "Bearer"
    assert client.post("/explain", json=_request(), headers={"Authorization": "Bearer wrong"}).status_code == 401
    evil = client.post("/explain", json=_request(), headers=TOKEN | {"host": "evil.example"})
    assert evil.status_code == 400 and "Host header" in evil.json()["detail"]
    assert client.post("/explain", json=_request(), headers=TOKEN).status_code == 200
    empty = client.post("/explain", json={"query": "q", "candidates": []}, headers=TOKEN).json()
    assert empty == {"scores": [], "order": [], "documents": []}


@pytest.mark.parametrize(
    "content, headers, status, message",
    [
        (b"{not json", JSON, 400, "not valid JSON"),
        (b"[" * 40 + b"]" * 40, JSON, 400, "nests 40 levels deep"),
        (json.dumps(_request()).encode(), {"content-type": "text/plain"}, 415, "application/json"),
        (json.dumps({"query": "q"}).encode(), JSON, 422, "candidates: Field required"),
        (json.dumps(_request(title=3)).encode(), JSON, 422, "needs text field 'title', got int"),
        (json.dumps(_request(n=21)).encode(), JSON, 413, "21 candidates exceed the limit of 20"),
        (json.dumps(_request(body="b" * (STEP_CHARS + 1))).encode(), JSON, 413, "candidates[0].body holds"),
        (json.dumps(_request(n=20, body="b" * 3000)).encode(), JSON, 413, "exceeds the limit of 60000"),
    ],
)
def test_bad_explain_requests_get_the_answers_of_score(client, content, headers, status, message):
    for path in ("/score", "/explain"):
        answer = client.post(path, content=content, headers=TOKEN | headers)
        assert answer.status_code == status, (path, answer.text)
        assert message in answer.json()["detail"], (path, answer.text)


def test_a_ranker_without_contributions_is_501_and_still_scores(world):
    scorer = Scorer.load(world["ranker"], encoders={"clsm": world["encoder"]}, corpus_stats=world["corpus"])

    class Opaque:  # another package's kind: predicts, cannot explain
        feature_map_ = scorer.ranker.feature_map_
        predict = staticmethod(scorer.ranker.predict)

    scorer.ranker = Opaque()
    with TestClient(create_app(scorer), base_url="http://localhost") as client:
        answer = client.post("/explain", json=_request())
        assert answer.status_code == 501 and "Opaque" in answer.json()["detail"]
        assert client.post("/score", json=_request()).status_code == 200
