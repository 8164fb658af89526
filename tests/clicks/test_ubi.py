"""OpenSearch UBI query and event records read as a click log (fixture written from the public schema)."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from builders import write_ubi_fixture
from ltrfeat.clicks import read_click_log
from ltrfeat.core.errors import TextTableError


@pytest.fixture(scope="module")
def ubi(tmp_path_factory):
    return write_ubi_fixture(tmp_path_factory.mktemp("ubi"))


def _jsonl(path, records) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))


def _event(action, query_id, docid, ordinal=None, **more):
    attributes = {"object": {"object_id": docid, "object_id_field": "sku"}}
    if ordinal is not None:
        attributes["position"] = {"ordinal": ordinal}
    return {"action_name": action, "query_id": query_id, "timestamp": "2026-01-01T00:00:00Z",
            "event_attributes": attributes, **more}  # fmt: skip


def test_ubi_records_read_as_the_impression_log_they_came_from(ubi):
    log = read_click_log(ubi["events"], queries=ubi["queries"])
    same = read_click_log(ubi["impressions"])
    assert log.kind == "ubi" and log.has_positions and log.sessions == same.sessions
    pd.testing.assert_frame_equal(log.positioned, same.positioned)
    pd.testing.assert_frame_equal(
        log.totals.sort_values(["query", "docid"]).reset_index(drop=True),
        same.totals.sort_values(["query", "docid"]).reset_index(drop=True),
    )
    first = json.loads(ubi["events"].read_text().splitlines()[0])
    assert first["event_attributes"]["position"]["ordinal"] >= 1 and first["action_name"] == "click"


def test_impression_events_without_query_records(tmp_path):
    events = [
        _event("impression", "q1", "A", 1, user_query="red chair", client_id="u1"),
        _event("impression", "q1", "B", 2, user_query="red chair"),
        _event("impression", "q2", "B", 1, user_query="red chair"),
        _event("click", "q1", "B", 2),
        _event("click", "q1", "B", 2),  # a second click on the same result counts once
        _event("add_to_cart", "q1", "B", 2),  # other actions are ignored
        _event("click", "q2", "B", 1),
    ]
    _jsonl(tmp_path / "events.jsonl", events)
    log = read_click_log(tmp_path / "events.jsonl")
    assert log.positioned.values.tolist() == [
        ["red chair", "A", 1, 1, 0],
        ["red chair", "B", 1, 1, 1],
        ["red chair", "B", 2, 1, 1],
    ]
    assert log.sessions == 2


@pytest.mark.parametrize(
    "events, line, needle",
    [
        ([_event("click", "q1", "Z", 1)], 1, "never shown"),
        ([_event("click", "q9", "A", 1)], 1, "nothing records what that query showed"),
        ([_event("impression", "q3", "A", 0, user_query="x")], 1, "ordinal is 0"),
        ([_event("impression", "q3", "A", 2.5, user_query="x")], 1, "ordinal is 2.5"),
        ([_event("impression", "q3", "A", user_query="x")], 1, "without event_attributes.position.ordinal"),
        ([_event("click", None, "A", 1)], 1, "without a query_id"),
        ([{"query_id": "q1", "timestamp": "t"}], 1, "the log holds no UBI events"),
    ],
)
def test_bad_ubi_events_are_one_line_errors(tmp_path, events, line, needle):
    _jsonl(
        tmp_path / "queries.jsonl",
        [{"query_id": "q1", "user_query": "red chair", "query_response_hit_ids": ["A", "B"]}],
    )
    _jsonl(tmp_path / "events.jsonl", events)
    with pytest.raises(TextTableError) as err:
        read_click_log(tmp_path / "events.jsonl", queries=tmp_path / "queries.jsonl")
    message = str(err.value)
    assert needle in message and "\n" not in message, message
    if line:
        assert message.startswith(f"{tmp_path / 'events.jsonl'}:{line}: "), message


@pytest.mark.parametrize(
    "queries, needle",
    [
        ([{"user_query": "x", "query_response_hit_ids": ["A"]}], "without a query_id"),
        ([{"query_id": "q1", "user_query": "x"}, {"query_id": "q1", "user_query": "y"}], "appears twice"),
        ([{"query_id": "q1", "user_query": "x", "query_response_hit_ids": "A"}], "not a list"),
        ([{"query_id": "q1", "query_response_hit_ids": ["A"]}], "has no user_query"),
    ],
)
def test_bad_ubi_query_records_are_one_line_errors(tmp_path, queries, needle):
    _jsonl(tmp_path / "queries.jsonl", queries)
    _jsonl(tmp_path / "events.jsonl", [_event("click", "q1", "A", 1)])
    with pytest.raises(TextTableError, match=needle) as err:
        read_click_log(tmp_path / "events.jsonl", queries=tmp_path / "queries.jsonl")
    assert str(err.value).startswith(str(tmp_path / "queries.jsonl")), str(err.value)


def test_query_records_passed_as_the_log_say_so(ubi):
    with pytest.raises(TextTableError, match="UBI query records.*pass the UBI event records as the log"):
        read_click_log(ubi["queries"])
