"""`serve --interleave` and `POST /events`: interleaved answers, replayable by request id, the event log in the
impression-level click format, hostile and careless event bodies, and acknowledged events surviving `kill -9`."""

from __future__ import annotations

import json
import signal

import numpy as np
import pytest

pytest.importorskip("httpx")
pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")

from click.testing import CliRunner  # noqa: E402
from fastapi.testclient import TestClient  # noqa: E402

from ltrfeat.cli.main import cli  # noqa: E402
from ltrfeat.clicks.served import COLUMNS, impressions, read_event_log  # noqa: E402
from ltrfeat.experiments.event_log import EventLog  # noqa: E402
from ltrfeat.serving.app import ServiceLimits, create_app  # noqa: E402
from ltrfeat.serving.impressions import Impressions, Interleaving  # noqa: E402
from ltrfeat.serving.process import served  # noqa: E402
from ltrfeat.serving.scorer import Scorer  # noqa: E402
from builders import build_world, candidates_of, with_ranker_b  # noqa: E402

JSON = {"content-type": "application/json"}


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    return with_ranker_b(build_world(tmp_path_factory.mktemp("interleave"), n_queries=12))


def _scorer(world, key="ranker"):
    return Scorer.load(world[key], encoders={"clsm": world["encoder"]}, corpus_stats=world["corpus"])


def _app(world, log_dir, *, share=1.0, method="team-draft", token=None, depth=20, memory=64 * 2**20):
    setting = Interleaving(_scorer(world, "ranker_b"), method=method, share=share, seed=3)
    kept = Impressions(EventLog(log_dir), rankers=("a.txt", "b.txt"), depth=depth, max_bytes=memory)
    app = create_app(
        _scorer(world), limits=ServiceLimits(max_candidates=30), token=token, interleave=setting, impressions=kept
    )
    client = TestClient(app, base_url="http://localhost")
    client.kept = kept
    return client


@pytest.fixture(scope="module")
def client(world, tmp_path_factory):
    log_dir = tmp_path_factory.mktemp("log") / "events"
    with _app(world, log_dir) as c:
        c.log_dir = log_dir
        yield c


def _request(world, qid="q4", **extra):
    _, cands = candidates_of(world, qid)
    return {"query": world["queries"]["query"][int(qid[1:])], "candidates": cands, **extra}


def _click(answer, position, **extra):
    return {
        "action_name": "click",
        "query_id": answer["impression_id"],
        "event_attributes": {"position": {"ordinal": position}, **extra},
    }


def test_interleaved_answer_holds_every_candidate_once_with_teams(client, world):
    body = client.post("/score", json=_request(world, request_id="r1")).json()
    _, cands = candidates_of(world, "q4")
    assert sorted(body["order"]) == sorted(c["docid"] for c in cands)
    assert body["interleaved"] is True and len(body["teams"]) == len(cands)
    assert set(body["teams"]) == {"A", "B"} and abs(body["teams"].count("A") - body["teams"].count("B")) <= 1
    # team-draft: each team's results appear in its ranker's own order
    for team, key in (("A", "scores"), ("B", "scores_b")):
        score = {c["docid"]: s for c, s in zip(cands, body[key])}
        mine = [score[d] for d, t in zip(body["order"], body["teams"]) if t == team]
        assert mine == sorted(mine, reverse=True)
    np.testing.assert_allclose(body["scores"], world["model"].predict(world["data"])[candidates_of(world, "q4")[0]])


def test_the_same_seed_and_request_id_replay_the_same_list(client, world):
    answers = [client.post("/score", json=_request(world, request_id=f"r{k % 3}")).json() for k in range(6)]
    for k in range(3):
        assert (answers[k]["order"], answers[k]["teams"]) == (answers[k + 3]["order"], answers[k + 3]["teams"])
        assert answers[k]["impression_id"] != answers[k + 3]["impression_id"]
    lists = {tuple(a["teams"]) for a in (client.post("/score", json=_request(world)).json() for _ in range(12))}
    assert len(lists) > 1  # without a request id, each request draws its own


def test_traffic_share_serves_the_rest_by_a_alone(world, tmp_path):
    with _app(world, tmp_path / "events", share=0.3) as c:
        answers = [c.post("/score", json=_request(world, request_id=str(k))).json() for k in range(60)]
    share = np.mean([a["interleaved"] for a in answers])
    assert 0.1 < share < 0.5
    alone = next(a for a in answers if not a["interleaved"])
    assert set(alone["teams"]) == {"A"} and "scores_b" not in alone
    assert alone["order"] == [alone["order"][i] for i in range(len(alone["order"]))]
    log = read_event_log(tmp_path / "events")
    assert set(log.loc[log["impression_id"] == alone["impression_id"], "method"]) == {"none"}


def test_events_land_in_the_log_in_the_click_format(world, tmp_path):
    with _app(world, tmp_path / "events", depth=5) as c:
        first = c.post("/score", json=_request(world, "q2", request_id="x", session="s1", user="u1")).json()
        second = c.post("/score", json=_request(world, "q5")).json()
        resp = c.post("/events", json={"events": [_click(first, 2), _click(second, 1)]})
        assert resp.status_code == 200 and resp.json() == {"accepted": 2}
        docid = first["order"][3]
        one = {"action_name": "click", "query_id": first["impression_id"]}
        one["event_attributes"] = {"object": {"object_id": docid, "object_id_field": "docid"}}
        assert c.post("/events", json={**one, "client_id": "c", "message_type": "INFO"}).json() == {"accepted": 1}
        hover = {"action_name": "hover", "query_id": second["impression_id"]}
        hover["event_attributes"] = {"position": {"ordinal": 5}}
        assert c.post("/events", json=hover).status_code == 200
    shown = impressions(read_event_log(tmp_path / "events"))
    assert list(shown.columns[: len(COLUMNS)]) == list(COLUMNS)
    assert len(shown) == 10  # depth 5 of two impressions
    mine = shown[shown["impression_id"] == first["impression_id"]].set_index("position")
    assert mine["clicked"].tolist() == [0, 1, 0, 1, 0]
    assert mine["docid"].tolist() == first["order"][:5] and mine["team"].tolist() == first["teams"][:5]
    assert set(mine["session"]) == {"s1"} and set(mine["user"]) == {"u1"}
    assert set(mine["ranker"]) <= {"a.txt", "b.txt"}
    assert mine.loc[mine["team"] == "A", "ranker"].eq("a.txt").all()
    theirs = shown[shown["impression_id"] == second["impression_id"]]
    assert theirs["clicked"].tolist() == [1, 0, 0, 0, 0] and set(theirs["session"]) == {second["impression_id"]}


@pytest.mark.parametrize(
    "event, status, message",
    [
        ({"action_name": "click"}, 422, "query_id: Field required"),
        (
            {"action_name": "click", "query_id": "nope", "event_attributes": {"position": {"ordinal": 1}}},
            422,
            "names no impression",
        ),
        ({"action_name": "click", "query_id": "{id}"}, 422, "names no result"),
        (
            {"action_name": "click", "query_id": "{id}", "event_attributes": {"position": {"ordinal": 0}}},
            422,
            "greater than or equal to 1",
        ),
        (
            {"action_name": "click", "query_id": "{id}", "event_attributes": {"position": {"ordinal": 99}}},
            422,
            "outside the impression's 1..10",
        ),
        (
            {"action_name": "click", "query_id": "{id}", "event_attributes": {"position": {"ordinal": "2"}}},
            422,
            "valid integer",
        ),
        (
            {"action_name": "click", "query_id": "{id}", "event_attributes": {"position": {"ordinal": True}}},
            422,
            "valid integer",
        ),
        (
            {"action_name": "click", "query_id": "{id}", "event_attributes": {"object": {"object_id": "zz"}}},
            422,
            "not among",
        ),
        ({"action_name": "", "query_id": "{id}", "event_attributes": {"position": {"ordinal": 1}}}, 422, "action_name"),
        ({"action_name": 3, "query_id": "{id}"}, 422, "action_name"),
        ({"events": []}, 422, "events: List should have at least 1 item"),
        ({"events": [{"action_name": "click", "query_id": "{id}"}], "more": 1}, 422, "more: Extra inputs"),
        ([1, 2], 422, "Input should be a valid dictionary"),
        (
            {
                "events": [
                    {"action_name": "click", "query_id": "{id}", "event_attributes": {"position": {"ordinal": 1}}}
                ]
                * 31
            },
            413,
            "31 events exceed",
        ),
        ({"action_name": "click", "query_id": "x" * 30_000}, 413, "events[0].query_id holds 30,000 characters"),
    ],
)
def test_bad_events_are_refused_and_nothing_is_logged(client, world, event, status, message):
    answer = client.post("/score", json=_request(world)).json()
    body = json.loads(json.dumps(event).replace("{id}", answer["impression_id"]))
    before = len(read_event_log(client.log_dir))
    resp = client.post("/events", json=body)
    assert resp.status_code == status, resp.text
    assert message in resp.json()["detail"]
    assert len(read_event_log(client.log_dir)) == before


def test_an_object_id_that_contradicts_the_position_is_refused(client, world):
    answer = client.post("/score", json=_request(world)).json()
    event = _click(answer, 1, object={"object_id": answer["order"][1]})
    resp = client.post("/events", json={"events": [_click(answer, 2), event]})
    assert resp.status_code == 422 and "events[1]: object_id" in resp.json()["detail"]


def test_events_share_the_guards_of_the_other_endpoints(world, tmp_path):
    with _app(world, tmp_path / "events", token="s3cret") as c:
        assert c.post("/events", json={"action_name": "click", "query_id": "x"}).status_code == 401
        right = {"Authorization": "Bearer s3cret"}
        assert c.post("/events", content=b"{bad", headers={**right, **JSON}).status_code == 400
        assert c.post("/events", content=b"[" * 50 + b"]" * 50, headers={**right, **JSON}).status_code == 400
        assert c.post("/events", content=b"{}", headers={**right, "content-type": "text/plain"}).status_code == 415
        assert c.post("/events", content=b"x" * 2_000_000, headers={**right, **JSON}).status_code == 413
        bad_host = {**right, "host": "evil.example"}
        assert c.post("/events", json={"action_name": "click", "query_id": "x"}, headers=bad_host).status_code == 400
        health = c.get("/health", headers=right).json()
        assert health["interleave"]["method"] == "team-draft" and health["event_log"] == {"depth": 20}


def test_without_an_event_log_events_are_404_and_answers_unchanged(world):
    with TestClient(create_app(_scorer(world)), base_url="http://localhost") as c:
        resp = c.post("/events", json={"action_name": "click", "query_id": "x"})
        assert resp.status_code == 404 and "--event-log DIR" in resp.json()["detail"]
        assert set(c.post("/score", json=_request(world)).json()) == {"scores", "order"}
    with pytest.raises(ValueError, match="needs an event log"):
        create_app(_scorer(world), interleave=Interleaving(_scorer(world, "ranker_b")))


def test_memory_keeps_only_the_latest_impressions(world, tmp_path):
    with _app(world, tmp_path / "events", memory=12_000) as c:
        answers = [c.post("/score", json=_request(world)).json() for _ in range(10)]
        old = c.post("/events", json=_click(answers[0], 1))
        assert old.status_code == 422 and "dropped from memory" in old.json()["detail"]
        assert c.post("/events", json=_click(answers[-1], 1)).status_code == 200


def test_balanced_interleaving_is_served(world, tmp_path):
    with _app(world, tmp_path / "events", method="balanced") as c:
        body = c.post("/score", json=_request(world, request_id="b")).json()
    log = read_event_log(tmp_path / "events")
    assert set(log["method"]) == {"balanced"} and body["interleaved"]
    assert log["rank_a"].notna().all() and log["rank_b"].notna().all()


def test_serve_options_are_checked_before_anything_starts(world, tmp_path):
    args = ["serve", "--ranker", str(world["ranker"]), "--corpus-stats", str(world["corpus"])]
    result = CliRunner().invoke(cli, [*args, "--interleave", str(world["ranker_b"])])
    assert result.exit_code == 2 and "--interleave needs --event-log DIR" in result.output
    result = CliRunner().invoke(cli, [*args, "--interleave", str(world["ranker_b"]), "--interleave-share", "0"])
    assert result.exit_code == 2 and "--interleave-share" in result.output
    for option, value, needs in (
        ("--interleave-share", "0.5", "--interleave B"),
        ("--interleave-method", "balanced", "--interleave B"),
        ("--event-log-depth", "5", "--event-log DIR"),
    ):
        result = CliRunner().invoke(cli, [*args, option, value])
        assert result.exit_code == 2 and f"{option} needs {needs}" in result.output, result.output
    (tmp_path / "file").write_text("x")
    result = CliRunner().invoke(cli, [*args, "--event-log", str(tmp_path / "file" / "sub")])
    assert result.exit_code == 2 and "cannot write the event log" in result.output


def test_acknowledged_events_survive_kill_9(world, tmp_path):
    log_dir = tmp_path / "events"
    args = [
        "--ranker",
        world["ranker"],
        "--interleave",
        world["ranker_b"],
        "--corpus-stats",
        world["corpus"],
        "--encoder",
        f"clsm={world['encoder']}",
        "--event-log",
        log_dir,
        "--event-log-segment-bytes",
        "4096",
        "--event-log-depth",
        "10",
    ]
    acknowledged = []
    with served(args, request_timeout=20) as (proc, http):
        for k in range(8):
            answer = http.post("/score", json=_request(world, f"q{k}", request_id=str(k))).json()
            assert answer["interleaved"]
            resp = http.post("/events", json=_click(answer, 1 + k % 3))
            assert resp.status_code == 200
            acknowledged.append((answer["impression_id"], 1 + k % 3, answer["order"][k % 3]))
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=20)
    assert proc.returncode == -signal.SIGKILL
    assert len(list(log_dir.glob("events-*.jsonl"))) > 1  # rotated by size
    shown = impressions(read_event_log(log_dir))
    clicked = shown[shown["clicked"] == 1]
    assert sorted(zip(clicked["impression_id"], clicked["position"], clicked["docid"])) == sorted(acknowledged)
    assert len(shown) == 80


@pytest.mark.parametrize(
    "extra, status, message",
    [
        ({"request_id": 7}, 422, "request_id: Input should be a valid string"),
        ({"session": ["s"]}, 422, "session: Input should be a valid string"),
        ({"request_id": "r" * 30_000}, 413, "request_id holds 30,000 characters"),
        ({"user": "u" * 30_000}, 413, "user holds 30,000 characters"),
    ],
)
def test_bad_request_ids_sessions_and_users_are_refused_and_not_logged(client, world, extra, status, message):
    before = len(read_event_log(client.log_dir))
    resp = client.post("/score", json=_request(world, **extra))
    assert resp.status_code == status and message in resp.json()["detail"]
    assert len(read_event_log(client.log_dir)) == before


def test_an_unwritable_log_is_503_and_keeps_nothing(world, tmp_path, monkeypatch):
    with _app(world, tmp_path / "events") as c:
        answer = c.post("/score", json=_request(world)).json()
        from ltrfeat.experiments.event_log import EventLog as Log

        def full(self, records):
            raise OSError(28, "No space left on device")

        monkeypatch.setattr(Log, "append", full)
        resp = c.post("/score", json=_request(world))
        assert resp.status_code == 503 and resp.headers["retry-after"] == "5"
        assert "event log cannot be written" in resp.json()["detail"] and len(c.kept) == 1
        assert c.post("/events", json=_click(answer, 1)).status_code == 503
        monkeypatch.undo()
        assert c.post("/events", json=_click(answer, 1)).status_code == 200
    assert len(read_event_log(tmp_path / "events")) == 11  # the first impression and its click
