"""The service against hostile and careless clients: bad Unicode, deep JSON, stalled uploads, slow headers,
disconnects, bursts over the concurrency limit, missing tokens. In-process where the app decides, and
against a real ``ltrfeat serve`` on loopback where the server (sockets, timeouts, logs) does."""

from __future__ import annotations

import asyncio
import json
import signal
import socket
import threading
import time

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("httpx")
pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")

from fastapi.testclient import TestClient  # noqa: E402

from ltrfeat.serving.app import ServiceLimits, create_app, json_depth, lone_surrogate  # noqa: E402
from ltrfeat.serving.fairness import STEP_CHARS, steps  # noqa: E402
from ltrfeat.serving.process import served  # noqa: E402
from builders import build_world  # noqa: E402

JSON = {"content-type": "application/json"}


class _SlowScorer:
    """Stands in for a Scorer: scores take as long as ``release`` stays unset."""

    feature_names = ["f"]
    fields = ("title",)

    def __init__(self):
        self.release, self.entered = threading.Event(), threading.Event()

    def score(self, query, candidates):
        self.entered.set()
        self.release.wait(30)
        return np.zeros(len(candidates))

    def query_params(self, query):
        return {"keywords": query}


def _client(scorer, **options) -> TestClient:
    return TestClient(create_app(scorer, **options), base_url="http://localhost")


def _request(query="q", n=1) -> dict:
    return {"query": query, "candidates": [{"docid": f"d{i}", "title": "t"} for i in range(n)]}


@pytest.fixture
def fast():
    scorer = _SlowScorer()
    scorer.release.set()
    return scorer


@pytest.mark.parametrize(
    "content, where",
    [
        (b'{"query": "\\ud800", "candidates": []}', "body.query"),
        (b'{"query": "ok", "candidates": [{"docid": "a", "title": "x\\udfff"}]}', "body.candidates[0].title"),
        (b'{"query": "ok", "candidates": [{"\\ud83d": "a"}]}', "body.candidates[0] key"),
    ],
)
def test_lone_surrogates_are_400_naming_the_field(fast, content, where):
    client = _client(fast)
    resp = client.post("/score", content=content, headers=JSON)
    assert resp.status_code == 400
    assert resp.json()["detail"].startswith(f"{where} holds a lone UTF-16 surrogate")


def test_paired_surrogates_and_non_ascii_text_are_fine(fast):
    resp = _client(fast).post(
        "/score",
        content='{"query": "caf\u00e9 \\ud83d\\ude00", "candidates": [{"docid": "a", "title": "\u00fcber"}]}'.encode(),
        headers=JSON,
    )
    assert resp.status_code == 200, resp.text


def test_deep_json_is_400_not_a_recursion_error(fast):
    client = _client(fast)
    for body in (b"[" * 100_000 + b"]" * 100_000, b'{"query": ' + b"[" * 40 + b"]" * 40 + b"}"):
        resp = client.post("/score", content=body, headers=JSON)
        assert resp.status_code == 400
        assert "levels deep; the limit is 32" in resp.json()["detail"]


def test_json_depth_ignores_brackets_inside_strings():
    assert json_depth(b'{"a": "[[[{{{\\"[[", "b": [1, [2]]}') == 3
    assert json_depth(b"") == 0 and json_depth(b"3") == 0
    assert lone_surrogate({"a": ["ok", {"b": "\ud800"}]}) == "body.a[1].b"
    assert lone_surrogate(["fine", 3, None]) is None


def test_bearer_token_guards_everything_but_the_probes(fast):
    client = _client(fast, token="s3cret")
    for path in ("/score", "/embed"):
        resp = client.post(path, json=_request())
        assert resp.status_code == 401 and resp.headers["www-authenticate"] == "Bearer"
    assert client.get("/health").status_code == 401
    wrong = {"Authorization": "Bearer s3cret-not"}
    assert client.post("/score", json=_request(), headers=wrong).status_code == 401
    right = {"Authorization": "Bearer s3cret"}
    assert client.post("/score", json=_request(), headers=right).status_code == 200
    assert client.post("/embed", json={"query": "x"}, headers=right).json() == {"params": {"keywords": "x"}}
    assert client.get("/health", headers=right).status_code == 200
    assert client.get("/healthz").json() == {"status": "ok"}
    assert client.get("/readyz").json()["status"] == "ready"


def test_requests_beyond_the_concurrency_limit_get_503_with_retry_after():
    scorer = _SlowScorer()
    with _client(scorer, limits=ServiceLimits(max_concurrent=2)) as client:
        answers = []
        workers = [
            threading.Thread(target=lambda: answers.append(client.post("/score", json=_request()))) for _ in range(2)
        ]
        for w in workers:
            w.start()
        assert scorer.entered.wait(10)
        deadline = time.monotonic() + 10
        while client.get("/readyz").status_code != 503 and time.monotonic() < deadline:
            time.sleep(0.02)  # the second request is admitted and waits for the scorer
        busy = client.post("/score", json=_request())
        assert busy.status_code == 503 and busy.headers["retry-after"] == "1"
        assert "2 requests in progress" in busy.json()["detail"]
        assert client.get("/readyz").status_code == 503
        scorer.release.set()
        for w in workers:
            w.join(10)
        assert [a.status_code for a in answers] == [200, 200]
        assert client.get("/readyz").status_code == 200


def _asgi_post(app, body: bytes, arrived: asyncio.Event | None = None):
    """POST /score straight to the ASGI app, the body arriving once ``arrived`` is set; the response's status."""

    async def receive():
        if arrived is not None:
            await arrived.wait()
        return {"type": "http.request", "body": body, "more_body": False}

    sent = []

    async def send(message):
        sent.append(message)

    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": "/score",
        "raw_path": b"/score",
        "query_string": b"",
        "root_path": "",
        "headers": [(b"host", b"localhost"), (b"content-type", b"application/json")],
        "client": ("127.0.0.1", 5000),
        "server": ("127.0.0.1", 8000),
    }

    async def status():
        await app(scope, receive, send)
        start = next(m for m in sent if m["type"] == "http.response.start")
        return start["status"], dict(start["headers"])

    return status()


def test_bodies_received_at_once_are_capped_and_the_slots_come_back(fast):
    """Every connection's body was read at once, however many: a thousand clients each sending a megabyte held a
    gigabyte. Beyond --max-readers bodies in flight the answer is 503 before any of the body is read."""
    body = json.dumps(_request()).encode()

    async def main():
        app = create_app(fast, limits=ServiceLimits(max_readers=2, max_concurrent=8))
        arrived = asyncio.Event()
        held = [asyncio.create_task(_asgi_post(app, body, arrived)) for _ in range(2)]
        await asyncio.sleep(0.2)  # both are receiving their bodies
        refused, headers = await _asgi_post(app, body)
        arrived.set()
        done = [status for status, _ in await asyncio.gather(*held)]
        again, _ = await _asgi_post(app, body)
        return refused, headers, done, again

    refused, headers, done, again = asyncio.run(main())
    assert refused == 503 and headers[b"retry-after"] == b"1" and headers[b"connection"] == b"close"
    assert done == [200, 200] and again == 200


def test_memory_is_released_after_a_large_request_only(fast, monkeypatch):
    import ltrfeat.serving.app as service

    calls = []
    monkeypatch.setattr(service, "release_memory", lambda: calls.append(1))
    client = _client(fast, limits=ServiceLimits(trim_after_bytes=5_000))
    assert client.post("/score", json=_request(n=3)).status_code == 200
    assert calls == []
    assert client.post("/score", json=_request(n=200)).status_code == 200
    assert calls == [1]


def test_release_memory_runs_here():
    import ltrfeat.serving.app as service

    service.release_memory()  # glibc malloc_trim and pyarrow's pool: must not raise


def test_service_limits_are_validated():
    with pytest.raises(ValueError, match="max_concurrent must be at least 1"):
        ServiceLimits(max_concurrent=0)
    with pytest.raises(ValueError, match="client_timeout must be positive"):
        ServiceLimits(client_timeout=0)
    with pytest.raises(ValueError, match="min_body_rate must be positive"):
        ServiceLimits(min_body_rate=0)
    with pytest.raises(ValueError, match="max_text_chars must be at least 1"):
        ServiceLimits(max_text_chars=0)
    with pytest.raises(ValueError, match="max_readers must be at least 1"):
        ServiceLimits(max_readers=0)


def test_bodies_not_sent_as_json_are_415(fast):
    """A web page can POST text/plain, a form or multipart to the service without a CORS preflight."""
    client = _client(fast)
    body = json.dumps(_request())
    for kind in ("text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", None):
        resp = client.post("/score", content=body, headers={} if kind is None else {"content-type": kind})
        assert resp.status_code == 415, kind
        assert resp.json()["detail"].startswith("the body must be sent as Content-Type: application/json")
    assert client.post("/embed", content=b'{"query": "x"}', headers={"content-type": "text/plain"}).status_code == 415
    fine = client.post("/score", content=body, headers={"content-type": "Application/JSON; charset=utf-8"})
    assert fine.status_code == 200


def test_a_host_header_outside_the_allow_list_is_refused_but_probes_answer(fast):
    """A DNS-rebinding page reaches the service under its own name: everything but the probes refuses it."""
    rebound = TestClient(create_app(fast), base_url="http://attacker.example:8000")
    for resp in (
        rebound.post("/score", json=_request()),
        rebound.post("/embed", json={"query": "x"}),
        rebound.get("/health"),
    ):
        assert resp.status_code == 400
        assert resp.json()["detail"] == (
            "Host header 'attacker.example:8000' names none of the hosts this service answers to "
            "(127.0.0.1, ::1, localhost); start serve with --allow-host NAME for a name clients use"
        )
    assert rebound.get("/healthz").status_code == 200 and rebound.get("/readyz").status_code == 200
    for host in ("localhost:8000", "LOCALHOST", "127.0.0.1:1", "[::1]:8080", "[::1]", "localhost."):
        assert _client(fast).post("/score", json=_request(), headers={"host": host}).status_code == 200, host
    named = TestClient(create_app(fast, hosts=("api.example",)), base_url="http://API.example:80")
    assert named.post("/score", json=_request()).status_code == 200
    assert TestClient(create_app(fast, hosts=("*",)), base_url="http://any.where").get("/health").status_code == 200


def test_texts_over_the_length_limit_are_413_naming_the_field(fast):
    client = _client(fast, limits=ServiceLimits(max_text_chars=10))
    marks = "\u0301" * 12
    cases = [
        ("/score", {"query": "q" * 11, "candidates": []}, "query holds 11 characters"),
        (
            "/score",
            {"query": "q", "candidates": [{"docid": "a", "title": "x" * 10}, {"docid": "b", "title": marks}]},
            "candidates[1].title holds 12 characters",
        ),
        ("/embed", {"query": "é" * 11}, "query holds 11 characters"),
    ]
    for path, body, where in cases:
        resp = client.post(path, json=body)
        assert resp.status_code == 413
        assert resp.json()["detail"] == f"{where}; the limit is 10 (--max-text-chars)"
    fits = {"query": "q" * 10, "candidates": [{"docid": "a", "title": "x" * 10}]}
    assert client.post("/score", json=fits).status_code == 200


class _SteppedScorer:
    """Stands in for a Scorer whose every step of candidates (fairness.steps) takes STEP seconds."""

    STEP = 0.05
    feature_names = ["f"]
    fields = ("title",)

    def score(self, query, candidates):
        time.sleep(self.STEP * len(steps(candidates, self.fields)))
        return np.zeros(len(candidates))

    def prepare(self, query, candidates):
        return pd.DataFrame({"title": [c["title"] for c in candidates]})

    def pair_features(self, part):
        time.sleep(self.STEP)
        return np.zeros((len(part), 1), dtype=np.float32)

    def predict(self, X):
        return np.zeros(len(X))


def test_small_requests_are_scored_between_the_steps_of_a_large_one():
    """The scorer was held for a request's whole computation: one client's 250 KB of text kept every other
    client waiting for all of it."""
    big = {"query": "q", "candidates": [{"docid": str(i), "title": "x" * STEP_CHARS} for i in range(30)]}
    with _client(_SteppedScorer()) as client:
        done = {}

        def send_big():
            done["big"] = client.post("/score", json=big)
            done["big at"] = time.monotonic()

        worker = threading.Thread(target=send_big)
        worker.start()
        time.sleep(0.3)  # the large request is being scored (30 steps, 1.5 s)
        start = time.monotonic()
        small = client.post("/score", json=_request())
        finished = time.monotonic()
        worker.join(10)
    assert small.status_code == 200 and done["big"].status_code == 200
    assert finished - start < 0.4 and finished < done["big at"] - 0.5


# --- a real server: sockets, deadlines and logs -------------------------------------------------------------


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    return build_world(tmp_path_factory.mktemp("hostile"), n_queries=8)


def _serve_args(world, *extra):
    return [
        "--ranker",
        world["ranker"],
        "--corpus-stats",
        world["corpus"],
        "--encoder",
        f"clsm={world['encoder']}",
        "--client-timeout",
        "1",
        *extra,
    ]


def _address(http):
    return http.base_url.host, http.base_url.port


def _recv_all(sock, timeout=5.0) -> bytes:
    sock.settimeout(timeout)
    data = b""
    while True:
        chunk = sock.recv(65536)
        if not chunk:
            return data
        data += chunk


def test_stalled_clients_are_cut_off_and_disconnects_are_one_line(world):
    with served(_serve_args(world)) as (proc, http):
        host, port = _address(http)
        slow_headers = [socket.create_connection((host, port)) for _ in range(20)]
        for s in slow_headers:
            s.sendall(b"POST /score HTTP/1.1\r\nHost: localhost\r\n")  # and never the rest
        silent = socket.create_connection((host, port))
        stalled_body = socket.create_connection((host, port))
        stalled_body.sendall(
            b"POST /score HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
            b'Content-Length: 1000\r\n\r\n{"query": '
        )
        gone = socket.create_connection((host, port))
        gone.sendall(
            b"POST /score HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
            b'Content-Length: 1000\r\n\r\n{"query"'
        )
        time.sleep(0.3)
        gone.close()

        started = time.monotonic()
        assert all(_recv_all(s) == b"" for s in slow_headers)  # closed by the server, no answer
        assert _recv_all(silent) == b""
        answer = _recv_all(stalled_body).decode()
        assert time.monotonic() - started < 5
        assert answer.startswith("HTTP/1.1 408") and "request body not received within 1 s" in answer
        for s in (*slow_headers, silent, stalled_body):
            s.close()
        ok = http.post("/score", json={"query": "a", "candidates": [{"docid": "x", "title": "a", "body": "b"}]})
        assert ok.status_code == 200  # still serving
    err = proc.stderr.read().decode()
    assert proc.returncode in (0, -signal.SIGTERM), err
    assert "Traceback" not in err and "Exception" not in err, err
    lines = err.strip().splitlines()
    assert sum("request headers incomplete after 1 s" in line for line in lines) == 20, err
    assert sum("disconnected before sending its whole /score request" in line for line in lines) == 1, err


def test_token_from_the_environment_end_to_end(world):
    with served(_serve_args(world), env={"LTRFEAT_SERVE_TOKEN": "tok"}) as (_, http):
        body = json.dumps({"query": "a", "candidates": [{"docid": "x", "title": "a", "body": "b"}]})
        assert http.post("/score", content=body, headers=JSON).status_code == 401
        assert http.post("/score", content=body, headers=JSON | {"Authorization": "Bearer tok"}).status_code == 200
        assert http.get("/readyz").status_code == 200


def test_listening_beyond_loopback_needs_a_token(world):
    from click.testing import CliRunner

    from ltrfeat.cli.main import cli

    result = CliRunner().invoke(cli, ["serve", *map(str, _serve_args(world)), "--host", "0.0.0.0"])
    assert result.exit_code != 0
    assert "--host 0.0.0.0 listens beyond this machine without authentication" in result.output
    assert "Traceback" not in result.output


@pytest.fixture(scope="module")
def guarded(world):
    """One server for the tests of slow bodies, heavy requests and hosts (each start costs seconds)."""
    args = _serve_args(world, "--client-timeout", "10", "--max-concurrent", "4", "--allow-host", "api.example")
    with served([*args, "--max-text-chars", "300000", "--max-bytes", "3000000"]) as (proc, http):
        yield http
    assert "Traceback" not in proc.stderr.read().decode()


def _slow_body_connection(host, port) -> socket.socket:
    s = socket.create_connection((host, port))
    s.sendall(
        b"POST /score HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
        b'Content-Length: 100000\r\n\r\n{"query": "'
    )
    return s


def test_slow_bodies_do_not_lock_normal_clients_out(guarded):
    """40 connections sending a body a byte at a time held every --max-concurrent place: /score answered 503
    for as long as they kept it up. Now a body takes a place only once it is in, and one arriving slower than
    --min-body-rate is cut off after its first second."""
    http = guarded
    request = {"query": "a", "candidates": [{"docid": "x", "title": "a", "body": "b"}]}
    host, port = _address(http)
    slow = [_slow_body_connection(host, port) for _ in range(40)]
    for s in slow:
        s.setblocking(False)
    answers, cut_off = [], 0
    end = time.monotonic() + 3
    while time.monotonic() < end:
        for i, s in enumerate(slow):  # a byte each, and a new connection for each one cut off
            try:
                s.send(b"x")
            except OSError:
                s.close()
                slow[i] = _slow_body_connection(host, port)
                slow[i].setblocking(False)
                cut_off += 1
        answers.append(http.post("/score", json=request).status_code)
        time.sleep(0.1)
    for s in slow:
        s.close()
    assert answers.count(200) == len(answers) >= 10, answers
    assert cut_off >= 40  # each was cut off after about a second, and came back
    assert http.post("/score", json=request, headers={"host": "api.example:80"}).status_code == 200
    assert http.post("/score", json=request, headers={"host": "evil.example"}).status_code == 400


def test_health_checks_answer_while_a_heavy_request_is_scored(guarded):
    """A normalisation bomb ('a' + N x U+0301 U+0316: quadratic NFKC, holding the GIL) kept /healthz waiting
    for the whole computation: 15 s for a 240 KB body. Now it is normalised in linear time, and the request's
    300 candidates of unseen words are scored in steps in a worker thread."""
    rng = np.random.default_rng(0)
    letters = np.array(list("abcdefghijklmnopqrstuvwxyz"))
    unseen = [" ".join("".join(rng.choice(letters, 8)) for _ in range(150)) for _ in range(300)]
    heavy = {
        "query": "a" + "\u0301\u0316" * 100_000,
        "candidates": [{"docid": str(i), "title": "a" + "\u0301\u0316" * 500, "body": t} for i, t in enumerate(unseen)],
    }
    body = json.dumps(heavy, ensure_ascii=False).encode()
    http = guarded
    answer = {}

    def post():
        try:
            answer["heavy"] = http.post("/score", content=body, headers=JSON)
        except Exception as e:  # noqa: BLE001 - shown by the assertion below
            answer["heavy"] = e

    worker = threading.Thread(target=post)
    worker.start()
    waits = []
    while worker.is_alive() and len(waits) < 400:
        start = time.monotonic()
        assert http.get("/healthz").status_code == 200
        waits.append(time.monotonic() - start)
        time.sleep(0.02)
    worker.join(600)  # generous: on a loaded machine the scoring itself can take minutes
    assert not worker.is_alive() and not isinstance(answer["heavy"], Exception), answer.get("heavy")
    assert answer["heavy"].status_code == 200, answer["heavy"].text
    assert len(waits) >= 5 and max(waits) < 0.5, waits


def test_the_scorer_goes_first_to_the_connection_that_used_it_least_lately():
    import asyncio

    from ltrfeat.serving.fairness import Turns

    order = []

    async def main():
        turns = Turns()
        await turns.run("flooding", time.sleep, 0.05)  # this connection has used the scorer lately
        first = asyncio.create_task(turns.run("flooding", time.sleep, 0.2))
        await asyncio.sleep(0.05)  # the scorer is busy: the next two wait
        waiting = [asyncio.create_task(turns.run(who, order.append, who)) for who in ("flooding", "fresh", "flooding")]
        await asyncio.gather(first, *waiting)

    asyncio.run(main())
    assert order == ["fresh", "flooding", "flooding"]
