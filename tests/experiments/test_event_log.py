"""The event log: segments rotated by size, a torn last line skipped, bad lines named by file and line."""

from __future__ import annotations

import json
import os

import pytest

from ltrfeat.core.errors import LtrfeatError
from ltrfeat.clicks.served import impressions, read_event_log
from ltrfeat.experiments.event_log import EventLog


def _line(imp="i1", position=1, action="impression", clicked=0, **extra):
    return {
        "session": "s",
        "query": "red shoes",
        "docid": f"d{position}",
        "position": position,
        "clicked": clicked,
        "timestamp": "2026-01-01T00:00:00.000Z",
        "impression_id": imp,
        "ranker": "a.txt",
        "team": "A",
        "method": "team-draft",
        "rank_a": position,
        "rank_b": position,
        "action": action,
        **extra,
    }


def test_segments_rotate_by_size_and_read_back_in_order(tmp_path):
    log = EventLog(tmp_path / "log", max_bytes=600)
    for k in range(6):
        log.append([_line(f"i{k}", p) for p in (1, 2)])
    log.close()
    segments = sorted((tmp_path / "log").glob("events-*.jsonl"))
    assert len(segments) >= 3 and all(s.stat().st_size <= 600 for s in segments)
    back = read_event_log(tmp_path / "log")
    assert back["impression_id"].tolist() == [f"i{k}" for k in range(6) for _ in (1, 2)]
    EventLog(tmp_path / "log", max_bytes=600).append([_line("i9")])  # a restart appends after them
    assert read_event_log(tmp_path / "log")["impression_id"].iloc[-1] == "i9"


def test_a_torn_last_line_is_skipped_and_the_next_writer_starts_a_new_segment(tmp_path):
    log = EventLog(tmp_path)
    log.append([_line("i1", 1), _line("i1", 2)])
    log.close()
    with open(log.path, "ab") as fh:
        fh.write(json.dumps(_line("i2")).encode()[:30])  # a crash during a write
    assert read_event_log(tmp_path)["impression_id"].tolist() == ["i1", "i1"]
    again = EventLog(tmp_path)
    assert again.path != log.path
    again.append([_line("i3")])
    assert read_event_log(tmp_path)["impression_id"].tolist() == ["i1", "i1", "i3"]


def test_clicks_fold_into_one_row_per_shown_result(tmp_path):
    log = EventLog(tmp_path)
    log.append([_line("i1", p) for p in (1, 2, 3)])
    log.append([_line("i1", 2, "click", 1), _line("i1", 2, "click", 1), _line("i1", 3, "hover", 0)])
    log.append([_line("gone", 1, "click", 1)])
    shown = impressions(read_event_log(tmp_path))
    assert shown["clicked"].tolist() == [0, 1, 0] and shown.attrs["orphan_events"] == 1
    assert list(shown.columns[:6]) == ["session", "query", "docid", "position", "clicked", "timestamp"]


@pytest.mark.parametrize(
    "content, message",
    [
        (b"{not json\n", ":1: not a JSON line"),
        (b"[1]\n", ":1: a JSON list, not an object"),
        (json.dumps(_line(position="2")).encode() + b"\n", ":1: field 'position' must be int, got str '2'"),
        (json.dumps(_line(position=True)).encode() + b"\n", "field 'position' must be int, got bool"),
        (
            json.dumps({k: v for k, v in _line().items() if k != "team"}).encode() + b"\n",
            "field 'team' must be str, got missing",
        ),
        (
            json.dumps(_line()).encode() + b"\n" + json.dumps(_line(position=0)).encode() + b"\n",
            ":2: position must be 1 to 100,000",
        ),
        (json.dumps(_line(clicked=2)).encode() + b"\n", "clicked 0 or 1"),
        (b"\xff\xfe\n", ":1: not a JSON line"),
        (json.dumps(_line(team="C")).encode() + b"\n", "team must be A or B"),
        (json.dumps(_line(method="coin")).encode() + b"\n", "method none, team-draft, balanced; got 'A', 'coin'"),
        (json.dumps(_line(rank_a="1")).encode() + b"\n", "rank_a must be a rank (1 or more) in an interleaved"),
        (json.dumps(_line(rank_b=None)).encode() + b"\n", "rank_b must be a rank"),
        (json.dumps(_line(rank_b=0)).encode() + b"\n", "rank_b must be a rank"),
        (json.dumps(_line(rank_b=10**30)).encode() + b"\n", "rank_b must be a rank"),
        (json.dumps(_line(position=10**12)).encode() + b"\n", "position must be 1 to 100,000"),
    ],
)
def test_bad_lines_are_one_line_errors_naming_file_and_line(tmp_path, content, message):
    path = tmp_path / "events-000001.jsonl"
    path.write_bytes(content)
    with pytest.raises(LtrfeatError, match=None) as err:
        read_event_log(path)
    assert message in str(err.value) and str(path) in str(err.value) and "\n" not in str(err.value)


def test_missing_logs_are_errors(tmp_path):
    with pytest.raises(LtrfeatError, match="no event-log segments"):
        read_event_log(tmp_path)
    with pytest.raises(LtrfeatError, match="no such file"):
        read_event_log(tmp_path / "nope.jsonl")
    with pytest.raises(ValueError, match="max_bytes"):
        EventLog(tmp_path, max_bytes=0)


def test_one_writer_per_log(tmp_path):
    first = EventLog(tmp_path)
    with pytest.raises(LtrfeatError, match="another process is writing this event log"):
        EventLog(tmp_path)
    first.close()
    EventLog(tmp_path).append([_line()])  # free again once the first one closed


def test_concurrent_appends_share_syncs_and_are_never_split(tmp_path, monkeypatch):
    import threading

    import stat
    import time

    syncs = []
    real = os.fsync

    def slow_fsync(fd):  # a disk's sync takes milliseconds: appends arrive meanwhile
        if not stat.S_ISDIR(os.fstat(fd).st_mode):
            syncs.append(fd)
            time.sleep(0.003)
        real(fd)

    monkeypatch.setattr(os, "fsync", slow_fsync)
    with EventLog(tmp_path, max_bytes=5000) as log:

        def work(t):
            for k in range(25):
                log.append([_line(f"t{t}-{k}", p) for p in (1, 2, 3)])

        threads = [threading.Thread(target=work, args=(t,)) for t in range(8)]
        [t.start() for t in threads]
        [t.join() for t in threads]
    back = read_event_log(tmp_path)
    assert len(back) == 8 * 25 * 3
    ids = back["impression_id"].tolist()
    assert all(ids[i] == ids[i + 1] == ids[i + 2] for i in range(0, len(ids), 3))  # each append's lines together
    assert len(syncs) < 8 * 25 / 2  # one sync serves several appends


def test_a_failed_write_is_not_acknowledged_and_the_log_goes_on_in_a_new_segment(tmp_path, monkeypatch):
    log = EventLog(tmp_path)
    log.append([_line("i1")])
    real = os.write
    monkeypatch.setattr(
        os,
        "write",
        lambda fd, data: (real(fd, bytes(data)[:10]), (_ for _ in ()).throw(OSError(28, "No space left on device"))),
    )
    with pytest.raises(OSError, match="No space left"):
        log.append([_line("i2")])
    monkeypatch.setattr(os, "write", real)
    log.append([_line("i3")])
    assert read_event_log(tmp_path)["impression_id"].tolist() == ["i1", "i3"]
    assert len(list(tmp_path.glob("events-*.jsonl"))) == 2
