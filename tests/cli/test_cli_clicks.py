"""``ltrfeat clicks summary`` and ``ltrfeat clicks aggregate``: figures, atomic output, one-line errors."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
from click.testing import CliRunner

from ltrfeat.cli.main import cli
from ltrfeat.clicks import read_click_log

DATA = Path(__file__).resolve().parents[2] / "data"


def _run(*args):
    return CliRunner().invoke(cli, [str(a) for a in args])


def test_summary_of_a_positioned_log_shows_ctr_by_position():
    result = _run("clicks", "summary", DATA / "clicks_impressions.tsv")
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert "impression-level log, 138,850 impressions, 20,510 clicks" in lines[0] and "13,885 sessions" in lines[0]
    assert lines[1].startswith("positions 1-10: positions present: position bias can be estimated and corrected")
    assert lines[3].split() == ["1", "13,885", "7,750", "0.5582"] and len(lines) == 13


def test_summary_of_a_log_without_positions_says_bias_cannot_be_corrected():
    result = _run("clicks", "summary", DATA / "clicks.tsv")
    assert result.exit_code == 0, result.output
    assert "aggregated (no positions) log" in result.output
    assert "no positions: the click log has no positions, so position bias cannot be corrected" in result.output
    figures = json.loads(_run("clicks", "summary", DATA / "clicks.tsv", "--json").output)
    assert figures["bias_correctable"] is False and figures["impressions"] == 138850 and figures["sessions"] is None


def test_aggregate_writes_the_positioned_log(tmp_path):
    out = tmp_path / "by_position.csv"
    result = _run("clicks", "aggregate", DATA / "clicks_impressions.tsv", "--out", out, "--chunk-rows", 50_000)
    assert result.exit_code == 0, result.output
    assert "41,505 (query, document, position) rows from 138,850 impressions" in result.output
    written = pd.read_csv(out, dtype={"query": str, "docid": str}, keep_default_na=False)
    expected = read_click_log(DATA / "clicks_impressions.tsv").positioned
    pd.testing.assert_frame_equal(written, expected, check_dtype=False)


def test_aggregate_errors_are_one_line_and_leave_no_output(tmp_path):
    out = tmp_path / "out.tsv"
    out.write_text("before\n")
    bad = tmp_path / "log.tsv"
    bad.write_text("session\tquery\tdocid\tposition\tclicked\ns\tq\tD1\t1\t1\ns\tq\tD2\t0\t0\n")
    for log in (bad, DATA / "clicks.tsv"):
        result = _run("clicks", "aggregate", log, "--out", out)
        assert result.exit_code == 2 and len(result.output.strip().splitlines()) == 1, result.output
        assert result.output.startswith("error: ") and out.read_text() == "before\n"
    assert f"{bad}:3: 1 rows hold a position below 1" in _run("clicks", "aggregate", bad, "--out", out).output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["log.tsv", "out.tsv"]  # no temporary file left


def test_qid_log_without_queries_names_the_option(tmp_path):
    log = tmp_path / "log.tsv"
    log.write_text("qid\tdocid\tposition\tclicked\n1\tD1\t1\t1\n")
    result = _run("clicks", "summary", log)
    assert result.exit_code == 2 and "--queries FILE" in result.output
    (tmp_path / "q.tsv").write_text("qid\tquery\n1\tred chair\n")
    assert _run("clicks", "summary", log, "--queries", tmp_path / "q.tsv").exit_code == 0
