"""The fast (pyarrow + vectorised scan) CSV/TSV reader agrees with the exact line-by-line parser.

Whenever ``_fast_delimited`` accepts a file, its columns, missing cells and source lines must equal
what ``_parse_csv`` / ``_parse_tsv`` give; otherwise it must decline (None) so the exact parser
reports the problem with its line number.
"""

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ltrfeat.core import _raw_tables
from ltrfeat.core import text as T
from ltrfeat.core.errors import TextTableError


def both(raw: bytes, fmt: str):
    exact = {"csv": _raw_tables._parse_csv, "tsv": _raw_tables._parse_tsv}[fmt]
    try:
        want = exact(raw.decode("utf-8"), "t")
    except TextTableError as err:
        want = err
    return _raw_tables._fast_delimited(raw, "t", fmt), want


def same(fast, exact) -> None:
    assert fast.columns == exact.columns
    assert fast.lines.tolist() == exact.lines.tolist()
    for c in fast.columns:
        assert fast.cells[c].tolist() == pd.Series(exact.cells[c], dtype="str").tolist()


@pytest.mark.parametrize(
    "fmt,raw,lines",
    [
        ("csv", b'qid,query\n1,"two\nlines"\n2,b\n', [2, 4]),
        ("csv", b'qid,query\r\n1,"a ""b"", c"\r\n\r\n2,\r\n', [2, 4]),
        ("csv", b"\n\nqid,query\n1,a\n\n2,b", [4, 6]),
        ("tsv", b'qid\tquery\n007\t"quoted" start\n8\tit\'s "half\n', [2, 3]),
        ("tsv", b"qid\tquery\n\n1\t\n2\tb\n", [3, 4]),
    ],
)
def test_fast_reader_matches_exact_parser(fmt, raw, lines):
    fast, exact = both(raw, fmt)
    assert fast is not None
    same(fast, exact)
    assert fast.lines.tolist() == lines


@pytest.mark.parametrize(
    "fmt,raw",
    [
        ("csv", b'qid,query\n1,"a"b\n'),  # text after a closing quote
        ("csv", b'qid,query\n1,a"b\n'),  # quote inside an unquoted field
        ("csv", b'qid,query\n1,"open\n'),  # unterminated quote
        ("csv", b"qid,query\n1,a,extra\n"),  # too many fields
        ("csv", b"qid,query\n1\n"),  # too few fields
        ("csv", b"qid,query\n  \n1,a\n"),  # a blank line holding spaces (the exact parser skips it)
        ("tsv", b"qid\tquery\n1\ta\tb\n"),
        ("tsv", b"qid\tquery\n1\ta\rb\n"),  # lone carriage return inside a TSV field
        ("csv", b"query\nonly one column\n"),
    ],
)
def test_fast_reader_declines_what_it_cannot_read_exactly(fmt, raw):
    fast, _ = both(raw, fmt)
    assert fast is None


def test_ragged_row_error_still_names_the_line(tmp_path):
    p = tmp_path / "q.csv"
    p.write_bytes(b"qid,query\n" + b"".join(b"%d,q%d\n" % (i, i) for i in range(1000)) + b"7,a,b\n")
    with pytest.raises(TextTableError) as err:
        T.read_queries(p)
    assert err.value.line == 1002 and "3 comma-separated fields" in str(err.value)


def test_latin1_and_utf8_bom_through_the_fast_reader(tmp_path):
    p = tmp_path / "d.csv"
    p.write_bytes('docid,title,body\nd1,caf\u00e9,"x, y"\nd2,na\u00efve,z\n'.encode("latin-1"))
    df = T.read_docs(p, encoding="latin-1")
    assert df["title"].tolist() == ["caf\u00e9", "na\u00efve"] and df["body"].tolist() == ["x, y", "z"]
    assert df.index.tolist() == [2, 3]
    p.write_bytes(b"\xef\xbb\xbf" + "docid,title\nd1,\u00e9\n".encode())
    assert T.read_docs(p)["title"].tolist() == ["\u00e9"]


CELL = st.text(alphabet='ab ,"\n\r\t\u00e9', max_size=6)


@settings(max_examples=150, deadline=None)
@given(rows=st.lists(st.lists(CELL, min_size=2, max_size=2), max_size=6), quote_all=st.booleans(), crlf=st.booleans())
def test_fast_csv_equals_exact_csv_on_random_tables(rows, quote_all, crlf):
    import csv
    import io

    buf = io.StringIO()
    writer = csv.writer(
        buf, lineterminator="\r\n" if crlf else "\n", quoting=csv.QUOTE_ALL if quote_all else csv.QUOTE_MINIMAL
    )
    writer.writerow(["qid", "query"])
    writer.writerows(rows)
    fast, exact = both(buf.getvalue().encode(), "csv")
    if fast is not None:
        assert not isinstance(exact, TextTableError)
        same(fast, exact)


@pytest.mark.parametrize("fmt,header", [("csv", "qid,query\n"), ("tsv", "qid\tquery\n")])
@settings(max_examples=150, deadline=None)
@given(raw=st.text(alphabet='ab,"\n\r \t\x0c', max_size=40))
def test_fast_reader_never_disagrees_on_hostile_bytes(fmt, header, raw):
    fast, exact = both((header + raw).encode(), fmt)
    if fast is not None:
        assert not isinstance(exact, TextTableError), raw
        same(fast, exact)


def test_parquet_types_become_text(tmp_path):
    p = tmp_path / "p.parquet"
    pd.DataFrame(
        {"qid": np.array([1, 2], dtype=np.int64), "query": ["a", "b"], "flag": [True, False], "x": [0.5, np.nan]}
    ).to_parquet(p)
    table = _raw_tables._read_raw(p, encoding="utf-8", fmt=None)
    assert table.text("qid").tolist() == ["1", "2"]
    assert table.text("flag").tolist() == ["true", "false"]
    assert table.text("x").iloc[0] == "0.5" and pd.isna(table.text("x").iloc[1])
    pairs = pd.DataFrame({"query": ["a", "b"], "doc": ["x", "y"], "label": [1.0, 2.0]})
    pairs.to_parquet(p)
    assert T.read_judged_pairs(p)["label"].tolist() == [1.0, 2.0]
