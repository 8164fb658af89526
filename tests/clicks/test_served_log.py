"""The event log `serve --event-log` writes, read as a click log: click lines fold onto the results they clicked
(never counted as impressions), across rotated segments and past a torn last line, positions as shown."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from click.testing import CliRunner

from ltrfeat.cli.main import cli
from ltrfeat.clicks import log_summary, read_click_log
from ltrfeat.core.errors import TextTableError
from ltrfeat.core.text import write_table
from ltrfeat.experiments.event_log import EventLog


def _line(imp, position, docid, action="impression", clicked=0, *, query="red chair", session="s1", rank_b=None):
    return {
        "session": session,
        "query": query,
        "docid": docid,
        "position": position,
        "clicked": clicked,
        "timestamp": "2026-01-01T00:00:00.000Z",
        "impression_id": imp,
        "ranker": "a.txt",
        "team": "A",
        "method": "none" if rank_b is None else "team-draft",
        "rank_a": 7 - position,  # the ranks differ from the positions shown: the positions are what counts
        "rank_b": rank_b,
        "action": action,
        "user": "u1",
    }


def _shown(imp, docids, **kw):
    return [_line(imp, p, d, **kw) for p, d in enumerate(docids, 1)]


@pytest.fixture
def served(tmp_path):
    """A rotated log: i1 (clicks on D2 twice, a hover on D3, the click after i2 in another segment), i2
    (interleaved), a click on a result never shown, and a torn last line."""
    log = EventLog(tmp_path / "events", max_bytes=1024)
    log.append(_shown("i1", ["D1", "D2", "D3"]))
    log.append([_line("i1", 2, "D2", "click", 1)])
    log.append(_shown("i2", ["D2", "D1"], session="s2", rank_b=1))
    log.append([_line("i1", 2, "D2", "click", 1), _line("i1", 3, "D3", "hover", 0)])
    log.append([_line("i2", 2, "D1", "click", 1, session="s2", rank_b=1), _line("gone", 1, "D9", "click", 1)])
    log.append(_shown("i3", ["D3"], query="lamp", session="s3"))
    log.close()
    with open(log.path, "ab") as fh:
        fh.write(json.dumps(_line("i4", 1, "D1")).encode()[:40])  # a crash during a write: never acknowledged
    assert len(list((tmp_path / "events").glob("events-*.jsonl"))) >= 2
    # what it holds, as an impression-level table
    expected = pd.DataFrame(
        {
            "session": ["s1", "s1", "s1", "s2", "s2", "s3"],
            "query": ["red chair"] * 5 + ["lamp"],
            "docid": ["D1", "D2", "D3", "D2", "D1", "D3"],
            "position": [1, 2, 3, 1, 2, 1],
            "clicked": [0, 1, 0, 0, 1, 0],
        }
    )
    write_table(expected, tmp_path / "expected.tsv")
    return tmp_path / "events", read_click_log(tmp_path / "expected.tsv")


def test_the_event_log_directory_reads_as_its_impressions(served):
    directory, expected = served
    got = read_click_log(directory)
    assert got.kind == "impressions" and got.sessions == 3
    pd.testing.assert_frame_equal(got.positioned, expected.positioned)
    pd.testing.assert_frame_equal(got.totals, expected.totals)
    assert log_summary(got)["impressions"] == 6 and log_summary(got)["clicks"] == 2


def test_a_segment_alone_folds_its_clicks_too(tmp_path):
    with EventLog(tmp_path) as log:
        log.append(_shown("i1", ["D1", "D2"]))
        log.append([_line("i1", 2, "D2", "click", 1), _line("i1", 2, "D2", "click", 1)])
    got = read_click_log(log.path)
    assert got.positioned[["docid", "position", "impressions", "clicks"]].values.tolist() == [
        ["D1", 1, 1, 0],
        ["D2", 2, 1, 1],
    ]


def test_chunks_and_docs_apply_to_the_event_log(served, tmp_path):
    directory, expected = served
    write_table(pd.DataFrame({"docid": ["D1", "D2", "D3"], "title": ["a", "b", "c"]}), tmp_path / "docs.tsv")
    got = read_click_log(directory, chunk_rows=2, docs=tmp_path / "docs.tsv")
    pd.testing.assert_frame_equal(got.positioned, expected.positioned)
    assert got.totals["doc"].tolist() == ["a", "b", "c", "c"]


def test_an_event_log_without_impressions_or_with_another_format_is_an_error(tmp_path):
    EventLog(tmp_path / "empty").close()
    with pytest.raises(TextTableError, match="holds no impressions yet"):
        read_click_log(tmp_path / "empty")
    with pytest.raises(TextTableError, match="read as the event log .* not as tsv"):
        read_click_log(tmp_path / "empty", fmt="tsv")


def test_clicks_summary_reads_the_event_log_directory(served):
    directory, _ = served
    result = CliRunner().invoke(cli, ["clicks", "summary", str(directory), "--json"])
    assert result.exit_code == 0, result.output
    figures = json.loads(result.output)
    assert (figures["impressions"], figures["clicks"], figures["sessions"]) == (6, 2, 3)


def test_train_encoder_says_an_event_log_directory_needs_debias(served):
    directory, _ = served
    result = CliRunner().invoke(cli, ["train-encoder", str(directory), "--out", str(directory.parent / "m.ltrenc")])
    assert result.exit_code == 2 and "is a directory: the event log `serve --event-log` wrote is a click log" in (
        result.output
    )
    assert "give --debias ipw, pbm or none" in result.output and not (directory.parent / "m.ltrenc").exists()
