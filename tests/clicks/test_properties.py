"""Property tests of the click-log parsers: any log, in any table format, cut into any chunks, read as UBI records
or on Dask, sums to what a plain pandas group-by of its rows gives."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ltrfeat.clicks import read_click_log
from ltrfeat.clicks.ubi import write_ubi
from ltrfeat.core.text import write_table

DATA = Path(__file__).resolve().parents[2] / "data"
# text a TSV can hold (no tab, newline, carriage return), with accents, quotes, commas and inner spaces
WORD = st.text(alphabet=st.sampled_from(list("abcxyz é\"',;ñ0123456789-") + ["日"]), min_size=1, max_size=12).filter(
    lambda t: t.strip() != "" and t.strip().lower() not in ("nan", "null", "none")
)
ROW = st.tuples(
    st.integers(0, 6), WORD, st.sampled_from(["D1", "D2", "007", "d-4", "Ä5"]), st.integers(1, 25), st.booleans()
)
SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def _frame(rows) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "session": [f"s{r[0]}" for r in rows],
            "query": [r[1] for r in rows],
            "docid": [r[2] for r in rows],
            "position": [r[3] for r in rows],
            "clicked": [int(r[4]) for r in rows],
        }
    )


def _expected(frame: pd.DataFrame) -> pd.DataFrame:
    stripped = frame.assign(query=frame["query"].str.strip(), docid=frame["docid"].str.strip())
    grouped = stripped.groupby(["query", "docid", "position"], as_index=False).agg(
        impressions=("clicked", "size"), clicks=("clicked", "sum")
    )
    return grouped.sort_values(["query", "docid", "position"]).reset_index(drop=True)


def _same(log, frame: pd.DataFrame) -> None:
    expected = _expected(frame)
    got = log.positioned
    assert got[["query", "docid"]].astype(object).values.tolist() == expected[["query", "docid"]].values.tolist()
    assert got[["position", "impressions", "clicks"]].values.tolist() == (
        expected[["position", "impressions", "clicks"]].values.tolist()
    )
    totals = log.totals.set_index(["query", "docid"])[["impressions", "clicks"]].sort_index()
    by_pair = expected.groupby(["query", "docid"])[["impressions", "clicks"]].sum().sort_index()
    assert totals.values.tolist() == by_pair.values.tolist()
    assert log.sessions == frame["session"].nunique()


@SETTINGS
@given(
    rows=st.lists(ROW, min_size=1, max_size=60),
    ext=st.sampled_from(["tsv", "csv", "jsonl", "parquet", "csv.gz"]),
    chunk=st.integers(1, 70),
)
def test_impression_logs_sum_like_pandas_in_every_format_and_chunking(tmp_path, rows, ext, chunk):
    frame = _frame(rows)
    path = tmp_path / f"log.{ext}"
    if ext.endswith(".gz"):
        import gzip

        write_table(frame, tmp_path / "plain.csv")
        path.write_bytes(gzip.compress((tmp_path / "plain.csv").read_bytes()))
    else:
        write_table(frame, path)
    _same(read_click_log(path, chunk_rows=chunk), frame)


@SETTINGS
@given(rows=st.lists(ROW, min_size=1, max_size=40), ext=st.sampled_from(["tsv", "csv", "jsonl", "parquet"]))
def test_aggregated_logs_read_back_what_was_aggregated(tmp_path, rows, ext):
    log = read_click_log(_write(_frame(rows), tmp_path / "log.tsv"))
    again = read_click_log(_write(log.positioned, tmp_path / f"agg.{ext}"), chunk_rows=7)
    pd.testing.assert_frame_equal(again.positioned, log.positioned)
    pairs = read_click_log(_write(log.totals, tmp_path / f"pairs.{ext}"), chunk_rows=5)
    assert pairs.positioned is None
    pd.testing.assert_frame_equal(pairs.totals, log.totals)


@SETTINGS
@given(rows=st.lists(ROW, min_size=1, max_size=40))
def test_ubi_round_trip(tmp_path, rows):
    frame = _frame(rows)
    frame = frame.assign(query=frame["query"].str.strip()).drop_duplicates(["session", "docid"])
    frame = frame.drop_duplicates(["session", "position"])
    frame = frame.assign(query=frame.groupby("session")["query"].transform("first"))  # one query per result page
    frame = frame.assign(position=frame.groupby("session")["position"].rank(method="first").astype(int))
    write_ubi(frame, tmp_path / "q.jsonl", tmp_path / "e.jsonl")
    _same(read_click_log(tmp_path / "e.jsonl", queries=tmp_path / "q.jsonl"), frame)


def _write(frame: pd.DataFrame, path: Path) -> Path:
    write_table(frame, path)
    return path


def test_dask_gives_the_local_result(dask_client):
    local = read_click_log(DATA / "clicks_impressions.tsv", chunk_rows=20_000)
    on_dask = read_click_log(DATA / "clicks_impressions.tsv", chunk_rows=20_000, client=dask_client)
    pd.testing.assert_frame_equal(on_dask.positioned, local.positioned)
    pd.testing.assert_frame_equal(on_dask.totals, local.totals)
    assert on_dask.sessions == local.sessions == 13885


def test_dask_errors_name_file_and_line(dask_client, tmp_path):
    rows = "".join(f"s{i}\tq{i % 5}\tD{i % 3}\t{1 + i % 10}\t{i % 2}\n" for i in range(300))
    path = tmp_path / "log.tsv"
    path.write_text("session\tquery\tdocid\tposition\tclicked\n" + rows + "s\tq\tD1\t0\t1\n")
    with pytest.raises(Exception, match=rf"{path}:302: 1 rows hold a position below 1"):
        read_click_log(path, chunk_rows=100, client=dask_client)
