"""read_click_log: every log kind in every table format to one ClickLog, and one-line errors for bad logs."""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from ltrfeat.clicks import NO_POSITIONS_NOTE, ClickLog, read_click_log, log_summary, write_positioned
from ltrfeat.core.errors import TextTableError
from ltrfeat.core.text import write_table

DATA = Path(__file__).resolve().parents[2] / "data"
IMPRESSIONS = pd.DataFrame(
    {
        "session": ["s1", "s1", "s1", "s2", "s2", "s3"],
        "query": ["red chair", "red chair", "red chair", "red chair", "red chair", "lamp"],
        "docid": ["D1", "D2", "D3", "D2", "D1", "D3"],
        "position": [1, 2, 3, 1, 2, 1],
        "clicked": [1, 0, 1, 1, 0, 0],
    }
)
FORMATS = ["tsv", "csv", "jsonl", "parquet", "tsv.gz", "csv.gz"]


def _write(frame: pd.DataFrame, path: Path) -> Path:
    if path.suffix == ".gz":
        plain = path.with_suffix("")
        write_table(frame, plain)
        path.write_bytes(gzip.compress(plain.read_bytes()))
        plain.unlink()
    else:
        write_table(frame, path)
    return path


def _text_log(tmp_path: Path, text: str, name: str = "log.tsv") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


@pytest.mark.parametrize("ext", FORMATS)
def test_impression_level_log_in_every_format(tmp_path, ext):
    log = read_click_log(_write(IMPRESSIONS, tmp_path / f"log.{ext}"))
    assert isinstance(log, ClickLog) and log.has_positions and log.kind == "impressions" and log.sessions == 3
    positioned = log.positioned
    assert list(positioned.columns) == ["query", "docid", "position", "impressions", "clicks"]
    assert positioned[["query", "docid", "position"]].values.tolist() == [
        ["lamp", "D3", 1],
        ["red chair", "D1", 1],
        ["red chair", "D1", 2],
        ["red chair", "D2", 1],
        ["red chair", "D2", 2],
        ["red chair", "D3", 3],
    ]
    assert positioned["clicks"].tolist() == [0, 1, 0, 1, 0, 1]
    assert positioned.dtypes[["position", "impressions", "clicks"]].tolist() == [np.dtype("int64")] * 3
    totals = log.totals.set_index(["query", "docid"])
    assert totals.loc[("red chair", "D1")].tolist() == [2, 1] and totals.loc[("red chair", "D2")].tolist() == [2, 1]
    assert log.totals["query"].tolist()[0] == "red chair"  # pairs in the order they first appear


@pytest.mark.parametrize("ext", FORMATS)
def test_aggregated_logs_with_and_without_positions(tmp_path, ext):
    positioned = read_click_log(_write(IMPRESSIONS, tmp_path / f"i.{ext}")).positioned
    again = read_click_log(_write(positioned, tmp_path / f"p.{ext}"))
    assert again.kind == "positioned" and again.sessions is None
    pd.testing.assert_frame_equal(again.positioned, positioned)
    pairs = again.totals.assign(doc=["chair one", "chair two", "lamp", "chair three"])
    legacy = read_click_log(_write(pairs, tmp_path / f"c.{ext}"))
    assert not legacy.has_positions and legacy.positioned is None and legacy.kind == "pairs"
    pd.testing.assert_frame_equal(legacy.totals, pairs)


def test_the_synthetic_worlds_two_logs_agree():
    impressions = read_click_log(DATA / "clicks_impressions.tsv")
    legacy = read_click_log(DATA / "clicks.tsv")
    raw = pd.read_csv(DATA / "clicks.tsv", sep="\t", dtype=str, keep_default_na=False)
    assert legacy.totals["doc"].tolist() == raw["doc"].tolist()  # clicks.tsv's rows, order and texts as they were
    merged = impressions.totals.merge(legacy.totals, on=["query", "docid"], validate="one_to_one")
    assert len(merged) == len(legacy.totals) == len(impressions.totals)
    assert (merged["clicks_x"] == merged["clicks_y"]).all() and (
        merged["impressions_x"] == merged["impressions_y"]
    ).all()
    assert impressions.positioned["position"].between(1, 10).all()


def test_qids_through_a_query_table_and_doc_texts_from_a_docs_table(tmp_path):
    log = IMPRESSIONS.assign(qid=IMPRESSIONS["query"].map({"red chair": "7", "lamp": "8"})).drop(columns="query")
    queries = pd.DataFrame({"qid": ["7", "8"], "query": ["red chair", "lamp"]})
    docs = pd.DataFrame(
        {"docid": ["D1", "D2", "D3"], "title": ["Red Chair", "Blue Chair", "Lamp"], "body": list("abc")}
    )
    write_table(queries, tmp_path / "q.tsv")
    write_table(docs, tmp_path / "d.tsv")
    read = read_click_log(_write(log, tmp_path / "log.tsv"), queries=tmp_path / "q.tsv", docs=tmp_path / "d.tsv")
    assert set(read.totals["query"]) == {"red chair", "lamp"}
    assert dict(zip(read.totals["docid"], read.totals["doc"])) == {"D1": "Red Chair", "D2": "Blue Chair", "D3": "Lamp"}
    body = read_click_log(tmp_path / "log.tsv", queries=queries, docs=docs, doc_field="body")
    assert dict(zip(body.totals["docid"], body.totals["doc"])) == {"D1": "a", "D2": "b", "D3": "c"}


def test_summary_says_whether_bias_can_be_corrected(tmp_path):
    with_positions = log_summary(read_click_log(_write(IMPRESSIONS, tmp_path / "i.tsv")))
    assert with_positions["impressions"] == 6 and with_positions["clicks"] == 3 and with_positions["sessions"] == 3
    assert with_positions["queries"] == 2 and with_positions["bias_correctable"] is True
    assert [p["ctr"] for p in with_positions["ctr_by_position"]] == pytest.approx([2 / 3, 0.0, 1.0], abs=1e-6)
    without = log_summary(read_click_log(DATA / "clicks.tsv"))
    assert without["bias_correctable"] is False and without["note"] == NO_POSITIONS_NOTE
    assert without["ctr_by_position"] == [] and without["sessions"] is None


def test_write_positioned_round_trips_and_refuses_a_log_without_positions(tmp_path):
    log = read_click_log(_write(IMPRESSIONS, tmp_path / "i.tsv"))
    write_positioned(log, tmp_path / "p.parquet")
    pd.testing.assert_frame_equal(read_click_log(tmp_path / "p.parquet").positioned, log.positioned)
    with pytest.raises(TextTableError, match="no positions"):
        write_positioned(read_click_log(DATA / "clicks.tsv"), tmp_path / "x.tsv")
    assert not (tmp_path / "x.tsv").exists()


HEADER = "session\tquery\tdocid\tposition\tclicked\n"


@pytest.mark.parametrize(
    "text, line, needle",
    [
        (HEADER + "s\tq\tD1\t0\t1\n", 2, "position below 1"),
        (HEADER + "s\tq\tD1\t1\t1\ns\tq\tD2\t-3\t0\n", 3, "position below 1"),
        (HEADER + "s\tq\tD1\t1.5\t1\n", 2, "not a whole number"),
        (HEADER + "s\tq\tD1\tnan\t1\n", 2, "not finite"),
        (HEADER + "s\tq\tD1\tinf\t1\n", 2, "not finite"),
        (HEADER + "s\tq\tD1\ttop\t1\n", 2, "not a number"),
        (HEADER + "s\tq\tD1\t\t1\n", 2, "empty position"),
        (HEADER + "s\tq\tD1\t1\t2\n", 2, "not 0 or 1"),
        (HEADER + "s\t\tD1\t1\t1\n", 2, "empty query"),
        (HEADER + "s\tq\t \t1\t1\n", 2, "empty docid"),
        ("query\tdocid\tposition\timpressions\tclicks\nq\tD1\t1\t3\t4\n", 2, "more clicks than impressions"),
        ("query\tdocid\timpressions\tclicks\nq\tD1\t0\t1\n", 2, "never shown"),
        ("query\tdocid\timpressions\tclicks\nq\tD1\t3\t-1\n", 2, "clicks below 0"),
        ("query\tdocid\timpressions\tclicks\nq\tD1\t3\tinf\n", 2, "not finite"),
        ("query\tdocid\timpressions\tclicks\nq\tD1\t99999999999999999999\t1\n", 2, "too large"),
        (HEADER + "s\tq\tD1\t 2\t 1\ns\tq\tD1\t+1\t1.0\ns\tq\tD1\t1e0\tx\n", 4, "not 0 or 1"),
        ("query\tdocid\tclicks\nq\tD1\t1\n", 1, "no impressions"),
        ("query\tposition\tclicked\nq\t1\t1\n", 1, "no docid"),
        ("docid\tposition\tclicked\nD1\t1\t1\n", 1, "no query (or qid)"),
        ("query\tdocid\tclicked\nq\tD1\t1\n", 1, "no position"),
        ("query\tdocid\tposition\tclicked\tquery\nq\tD1\t1\t1\tq\n", 1, "duplicate column"),
        ("qid\tdocid\tposition\tclicked\n7\tD1\t1\t1\n", 1, "no query table"),
        (HEADER + "s\tq\tD1\t1\t1\textra\n", None, "malformed TSV"),
        (HEADER, None, "no data rows"),
        ("", None, "file is empty"),
    ],
)
def test_bad_logs_are_one_line_errors_naming_file_line_and_fix(tmp_path, text, line, needle):
    path = _text_log(tmp_path, text)
    with pytest.raises(TextTableError) as err:
        read_click_log(path)
    message = str(err.value)
    assert needle in message and "\n" not in message and "; " in message, message
    assert message.startswith(f"{path}:{line}: " if line else f"{path}: "), message


def test_errors_name_the_right_line_in_later_chunks(tmp_path):
    rows = [f"s{i}\tq\tD{i % 7}\t{1 + i % 10}\t{i % 2}" for i in range(2500)]
    rows[2222] = "s\tq\tD1\t0\t1"
    path = _text_log(tmp_path, HEADER + "\n".join(rows) + "\n")
    with pytest.raises(TextTableError, match=rf"{path}:2224: .*position below 1"):
        read_click_log(path, chunk_rows=1000)
    jsonl = tmp_path / "log.jsonl"
    records = IMPRESSIONS.astype(str).to_dict("records")
    jsonl.write_text("\n\n".join(pd.Series(records).map(lambda r: pd.Series(r).to_json())) + "\n")
    bad = jsonl.read_text().replace('"position":"3"', '"position":"-1"')
    jsonl.write_text(bad)
    with pytest.raises(TextTableError, match=rf"{jsonl}:5: .*position below 1"):
        read_click_log(jsonl, chunk_rows=2)


def test_a_jsonl_chunk_whose_records_lack_a_column_is_refused(tmp_path):
    path = tmp_path / "log.jsonl"
    rows = ['{"query": "q", "docid": "D1", "position": 1, "clicked": 0}'] * 3
    path.write_text("\n".join([*rows, '{"query": "q", "docid": "D1", "clicked": 1}']) + "\n")
    with pytest.raises(TextTableError, match=rf"{path}:4: 1 rows have an empty position"):
        read_click_log(path, chunk_rows=3)


def test_unknown_documents_and_qids_are_errors_with_their_line(tmp_path):
    path = _write(IMPRESSIONS, tmp_path / "log.tsv")
    docs = pd.DataFrame({"docid": ["D1", "D2"], "title": ["a", "b"]})
    with pytest.raises(TextTableError, match=r"log.tsv:4: 2 rows name a document the docs table lacks.*'D3'"):
        read_click_log(path, docs=docs)
    log = IMPRESSIONS.assign(qid=["7"] * 5 + ["9"]).drop(columns="query")
    with pytest.raises(TextTableError, match=r"log2.tsv:7: 1 rows name a qid the query table lacks.*'9'"):
        read_click_log(_write(log, tmp_path / "log2.tsv"), queries=pd.DataFrame({"qid": ["7"], "query": ["x"]}))


def test_wrong_encoding_is_a_one_line_error(tmp_path):
    path = tmp_path / "log.tsv"
    path.write_bytes((HEADER + "s\tcaf\u00e9 chair\tD1\t1\t1\n").encode("cp1252"))
    with pytest.raises(TextTableError, match="cannot decode the file as utf-8.*encoding"):
        read_click_log(path)
    assert read_click_log(path, encoding="cp1252").totals["query"].tolist() == ["caf\u00e9 chair"]


def test_parquet_nan_and_missing_values_are_refused(tmp_path):
    frame = IMPRESSIONS.assign(position=[1.0, 2.0, np.nan, 1.0, 2.0, 1.0])
    with pytest.raises(TextTableError, match=r"log.parquet:3: 1 rows have an empty position"):
        read_click_log(_write(frame, tmp_path / "log.parquet"))
    frame = IMPRESSIONS.assign(position=[1.0, 2.0, np.inf, 1.0, 2.0, 1.0])
    with pytest.raises(TextTableError, match=r"log2.parquet:3: .*not finite"):
        read_click_log(_write(frame, tmp_path / "log2.parquet"))


def test_unknown_format_is_refused(tmp_path):
    with pytest.raises(TextTableError, match="unknown table format 'xlsx'"):
        read_click_log(_write(IMPRESSIONS, tmp_path / "log.tsv"), fmt="xlsx")
    with pytest.raises(TextTableError, match="cannot tell the table format"):
        read_click_log(_text_log(tmp_path, HEADER, "log.txt"))
