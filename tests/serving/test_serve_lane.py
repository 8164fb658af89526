"""The second scoring lane (:mod:`ltrfeat.serving.lane`): a request with more text than the lane's bound has its
features computed by the worker process, with the service's own scores (both rankers' when interleaving); a small
request stays in the service; a stopped worker leaves large requests to the service; the worker ends with it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

pytest.importorskip("httpx")
pytest.importorskip("fastapi")

from fastapi.testclient import TestClient  # noqa: E402

from ltrfeat.experiments.event_log import EventLog  # noqa: E402
from ltrfeat.serving.app import create_app  # noqa: E402
from ltrfeat.serving.fairness import steps  # noqa: E402
from ltrfeat.serving.impressions import Impressions, Interleaving  # noqa: E402
from ltrfeat.serving.lane import Lane  # noqa: E402
from ltrfeat.serving.scorer import Scorer  # noqa: E402
from builders import build_world, candidates_of, with_ranker_b  # noqa: E402

CHARS = 2000  # the test's lane bound: the world's 10 candidates of a query hold ~1,000 characters


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    return with_ranker_b(build_world(tmp_path_factory.mktemp("lane"), n_queries=8))


def _scorer(world, key="ranker") -> Scorer:
    return Scorer.load(world[key], encoders={"clsm": world["encoder"]}, corpus_stats=world["corpus"])


def _requests(world) -> tuple[dict, dict, dict]:
    """A small request, a large one of many candidates, and a large one of one candidate."""
    _, candidates = candidates_of(world, "q3")
    query = world["queries"]["query"][3]
    long = {"docid": "long", "title": candidates[0]["title"], "body": " ".join(c["body"] for c in candidates) * 4}
    return (
        {"query": query, "candidates": candidates},
        {"query": query, "candidates": [{**c, "docid": f"{c['docid']}.{k}"} for k in range(6) for c in candidates]},
        {"query": query, "candidates": [long, *candidates[:2]]},
    )


def _counted(lane: Lane) -> list:
    """The worker's steps from now on, one entry each."""
    calls, original = [], lane.pair_features
    lane.pair_features = lambda *args: calls.append(args[0]) or original(*args)  # type: ignore[method-assign]
    return calls


def test_large_requests_are_scored_by_the_worker_with_the_services_scores(world):
    scorer = _scorer(world)
    lane = Lane([scorer.load_args], chars=CHARS)
    calls = _counted(lane)
    small, many, one_long = _requests(world)
    with TestClient(create_app(scorer, lane=lane), base_url="http://localhost") as client:
        answer = client.post("/score", json=small)
        assert answer.status_code == 200 and calls == []  # small: scored here
        assert answer.json()["scores"] == scorer.score(small["query"], small["candidates"]).tolist()
        for request in (many, one_long):  # by text, not by candidates: one long candidate goes to the worker too
            calls.clear()
            answer = client.post("/score", json=request)
            assert answer.status_code == 200, answer.text
            assert len(calls) == len(steps(request["candidates"], scorer.fields))
            assert answer.json()["scores"] == scorer.score(request["query"], request["candidates"]).tolist()
        explained = client.post("/explain", json=many)
        assert explained.status_code == 200
        assert explained.json()["scores"] == scorer.score(many["query"], many["candidates"]).tolist()
    assert not lane.running  # closed with the app


def test_both_rankers_of_an_interleaving_are_scored_by_the_worker(world, tmp_path):
    a, b = _scorer(world), _scorer(world, "ranker_b")
    lane = Lane([a.load_args, b.load_args], chars=CHARS)
    calls = _counted(lane)
    kept = Impressions(EventLog(tmp_path / "events"), rankers=("a.txt", "b.txt"))
    app = create_app(a, interleave=Interleaving(b, share=1.0, seed=3), impressions=kept, lane=lane)
    _, many, _ = _requests(world)
    with TestClient(app, base_url="http://localhost") as client:
        answer = client.post("/score", json=many).json()
    assert answer["scores"] == a.score(many["query"], many["candidates"]).tolist()
    assert answer["scores_b"] == b.score(many["query"], many["candidates"]).tolist()
    assert set(calls) == {0, 1}


def test_large_requests_are_scored_in_the_service_once_the_worker_has_stopped(world):
    scorer = _scorer(world)
    lane = Lane([scorer.load_args], chars=CHARS)
    _, many, _ = _requests(world)
    with TestClient(create_app(scorer, lane=lane), base_url="http://localhost") as client:
        assert client.post("/score", json=many).status_code == 200  # the worker is up
        for pid in list(lane._pool._processes):  # type: ignore[union-attr]
            os.kill(pid, signal.SIGKILL)
        answer = client.post("/score", json=many)
        assert answer.status_code == 200, answer.text
        assert answer.json()["scores"] == scorer.score(many["query"], many["candidates"]).tolist()
        assert not lane.running


def _gone(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"  # a zombie until its new parent reaps it
    except FileNotFoundError:
        return True


@pytest.mark.slow  # three processes start, each importing torch
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_the_worker_ends_when_the_service_is_killed(world):
    """A killed service shuts no pool down: its worker would stay, holding the models' memory."""
    code = (
        "import os, sys\n"
        "from ltrfeat.serving.lane import Lane\n"
        "from ltrfeat.serving.scorer import Scorer\n"
        "if __name__ == '__main__':\n"
        "    s = Scorer.load(sys.argv[1], encoders={'clsm': sys.argv[2]}, corpus_stats=sys.argv[3])\n"
        "    lane = Lane([s.load_args])\n"
        "    lane._pool.submit(int).result()\n"
        "    print(*lane._pool._processes, flush=True)\n"
        "    os._exit(0)\n"
    )
    args = [world["ranker"], world["encoder"], world["corpus"]]
    out = subprocess.run([sys.executable, "-c", code, *map(str, args)], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    worker = int(out.stdout.split()[0])
    deadline = time.monotonic() + 10
    while not _gone(worker) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _gone(worker)
