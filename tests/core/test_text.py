import gzip
import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ltrfeat.core.errors import TextTableError
from ltrfeat.core.text import (
    TextTableWarning,
    derive_id,
    map_labels,
    pairs_to_ranking,
    parse_column_mapping,
    read_docs,
    read_judged_pairs,
    read_queries,
    table_format,
    write_table,
)
from builders import dataset_path


def write(path, text, encoding="utf-8"):
    path.write_bytes(text.encode(encoding))
    return path


# ---- formats -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name,fmt",
    [
        ("a.tsv", "tsv"),
        ("a.TSV.gz", "tsv"),
        ("a.csv", "csv"),
        ("a.jsonl.gz", "jsonl"),
        ("a.ndjson", "jsonl"),
        ("a.parquet", "parquet"),
    ],
)
def test_table_format_from_extension(name, fmt):
    assert table_format(name) == fmt


def test_table_format_errors():
    with pytest.raises(TextTableError, match="cannot tell the table format"):
        table_format("queries.txt")
    with pytest.raises(TextTableError, match="cannot be .gz"):
        table_format("a.parquet.gz")
    with pytest.raises(TextTableError, match="unknown table format"):
        table_format("a.tsv", fmt="xlsx")
    assert table_format("queries.txt", fmt="tsv") == "tsv"


# ---- queries -----------------------------------------------------------------------------------


def test_read_queries_tsv_keeps_quotes_and_string_ids(tmp_path):
    p = write(tmp_path / "q.tsv", 'qid\tquery\n007\t"quoted" start\n8\tit\'s "half\n')
    df = read_queries(p)
    assert list(df.columns) == ["qid", "query"]
    assert df["qid"].tolist() == ["007", "8"]
    assert df["query"].tolist() == ['"quoted" start', "it's \"half"]
    assert df.index.name == "line" and df.index.tolist() == [2, 3]


def test_read_queries_csv_multiline_lines_are_file_lines(tmp_path):
    p = write(tmp_path / "q.csv", 'qid,query\n1,"two\nlines"\n2,b\n1,c\n')
    with pytest.raises(TextTableError) as err:
        read_queries(p)
    assert err.value.line == 5
    assert "duplicate qid" in str(err.value) and "lines 2, 5" in str(err.value)


def test_read_queries_column_mapping_and_missing_column(tmp_path):
    p = write(tmp_path / "q.csv", "id,text,x\n1,a,z\n")
    df = read_queries(p, qid_col="id", text_col="text")
    assert df.to_dict("list") == {"qid": ["1"], "query": ["a"]}
    with pytest.raises(TextTableError) as err:
        read_queries(p)
    msg = str(err.value)
    assert msg.startswith(f"{p}:1: no column 'qid'") and "'id', 'text', 'x'" in msg and "qid_col" in msg


@pytest.mark.parametrize(
    "content,problem", [("", "file is empty"), ("\n\n", "file is empty"), ("qid\tquery\n", "no data rows")]
)
def test_read_queries_empty(tmp_path, content, problem):
    with pytest.raises(TextTableError, match=problem):
        read_queries(write(tmp_path / "q.tsv", content))


def test_read_queries_ragged_tsv_row(tmp_path):
    p = write(tmp_path / "q.tsv", "qid\tquery\n1\ta\n2\tb\tc\n")
    with pytest.raises(TextTableError) as err:
        read_queries(p)
    assert err.value.line == 3 and "3 tab-separated fields" in str(err.value)


def test_read_queries_malformed_csv(tmp_path):
    p = write(tmp_path / "q.csv", 'qid,query\n1,"a"b\n')
    with pytest.raises(TextTableError, match="malformed CSV") as err:
        read_queries(p)
    assert err.value.line == 2


def test_missing_text_policies(tmp_path):
    p = write(tmp_path / "q.tsv", "qid\tquery\n1\ta\n2\t \n3\t\n4\td\n")
    with pytest.raises(TextTableError) as err:
        read_queries(p)
    assert err.value.line == 3 and "2 rows have empty or missing text" in str(err.value)
    assert "lines 3, 4" in str(err.value) and "missing='drop'" in str(err.value)
    with pytest.warns(TextTableWarning, match="2 rows .* dropped"):
        dropped = read_queries(p, missing="drop")
    assert dropped["qid"].tolist() == ["1", "4"] and dropped.index.tolist() == [2, 5]
    with pytest.warns(TextTableWarning, match="kept with empty text"):
        kept = read_queries(p, missing="keep")
    assert kept["query"].tolist() == ["a", " ", "", "d"]
    with pytest.raises(TextTableError, match="unknown missing-text policy"):
        read_queries(p, missing="ignore")


def test_empty_id_is_an_error(tmp_path):
    p = write(tmp_path / "q.csv", "qid,query\n1,a\n ,b\n")
    with pytest.raises(TextTableError, match="1 rows have an empty qid") as err:
        read_queries(p)
    assert err.value.line == 3


def test_file_not_found(tmp_path):
    with pytest.raises(TextTableError, match="file not found"):
        read_queries(tmp_path / "nope.tsv")


# ---- encodings ---------------------------------------------------------------------------------


def test_decoding_error_names_line_offset_and_suggests_cp1252(tmp_path):
    p = write(tmp_path / "q.tsv", "qid\tquery\n1\tcafe\n2\tcafé “x”\n", encoding="cp1252")
    with pytest.raises(TextTableError) as err:
        read_queries(p)
    msg = str(err.value)
    assert err.value.line == 3 and "byte offset 22" in msg and "encoding='cp1252'" in msg
    assert read_queries(p, encoding="cp1252")["query"].tolist() == ["cafe", "café “x”"]


def test_decoding_error_suggests_latin1_when_cp1252_fails(tmp_path):
    p = tmp_path / "q.csv"
    p.write_bytes(b"qid,query\n1,30\xe5\xa1 \x90\n")  # 0x90 is undefined in cp1252
    with pytest.raises(TextTableError, match="encoding='latin-1'"):
        read_queries(p)
    with pytest.raises(TextTableError, match="encoding='utf-8'"):
        write(tmp_path / "u.csv", "qid,query\n1,é\n")
        read_queries(tmp_path / "u.csv", encoding="ascii")


def test_utf8_bom_and_unknown_encoding(tmp_path):
    p = tmp_path / "q.csv"
    p.write_bytes(b"\xef\xbb\xbfqid,query\n1,a\n")
    assert read_queries(p)["qid"].tolist() == ["1"]
    with pytest.raises(TextTableError, match="unknown encoding"):
        read_queries(p, encoding="klingon")


def test_gzip_input(tmp_path):
    p = tmp_path / "q.tsv.gz"
    p.write_bytes(gzip.compress("qid\tquery\n1\tä\n".encode()))
    assert read_queries(p)["query"].tolist() == ["ä"]


# ---- JSONL and Parquet -------------------------------------------------------------------------


def test_jsonl_numbers_become_string_ids(tmp_path):
    p = write(tmp_path / "q.jsonl", '{"qid": 7, "query": "a"}\n\n{"qid": "007", "query": "b\\tc"}\n')
    df = read_queries(p)
    assert df["qid"].tolist() == ["7", "007"] and df.index.tolist() == [1, 3]
    assert df["query"].tolist() == ["a", "b\tc"]


@pytest.mark.parametrize(
    "line,problem",
    [("{bad", "invalid JSON"), ("[1, 2]", "expected a JSON object"), ('{"qid": 1, "query": ["x"]}', "nested value")],
)
def test_jsonl_errors(tmp_path, line, problem):
    p = write(tmp_path / "q.jsonl", '{"qid": 1, "query": "a"}\n' + line + "\n")
    with pytest.raises(TextTableError, match=problem) as err:
        read_queries(p)
    assert err.value.line == 2


def test_parquet_integer_ids_and_bad_file(tmp_path):
    p = tmp_path / "q.parquet"
    pd.DataFrame({"qid": [1, 2], "query": ["a", None]}).to_parquet(p)
    with pytest.raises(TextTableError) as err:
        read_queries(p)
    assert err.value.line == 2
    with pytest.warns(TextTableWarning):
        assert read_queries(p, missing="drop")["qid"].tolist() == ["1"]
    bad = write(tmp_path / "bad.parquet", "not parquet")
    with pytest.raises(TextTableError, match="not a readable Parquet file"):
        read_queries(bad)


# ---- documents ---------------------------------------------------------------------------------


def test_read_docs_fields(tmp_path):
    p = write(tmp_path / "d.csv", "docid,title,body,url\nd1,T1,B1,u\nd2,T2,B2,v\n")
    assert list(read_docs(p).columns) == ["docid", "title", "body", "url"]
    assert list(read_docs(p, fields="title, body").columns) == ["docid", "title", "body"]
    renamed = read_docs(p, fields={"text": "body"})
    assert renamed.to_dict("list") == {"docid": ["d1", "d2"], "text": ["B1", "B2"]}
    with pytest.raises(TextTableError, match="no column 'abstract'"):
        read_docs(p, fields=["abstract"])


def test_read_docs_duplicates_and_missing(tmp_path):
    p = write(tmp_path / "d.tsv", "docid\ttitle\nd1\ta\nd2\t\nd1\tc\n")
    with pytest.raises(TextTableError, match="in 'title'"):
        read_docs(p)
    with (
        pytest.raises(TextTableError, match=r"duplicate docid \(docid 'd1'\) at lines 2, 4"),
        pytest.warns(TextTableWarning),
    ):
        read_docs(p, missing="keep")


# ---- judged pairs ------------------------------------------------------------------------------

PAIRS_CSV = (
    "search_term,title,uid,relevance,extra\nred shoe,Red Shoe,p1,3,x\nred shoe,Blue Shoe,p2,1,x\nbag,Red Shoe,p1,2,x\n"
)


def test_parse_column_mapping():
    assert parse_column_mapping(" query = search_term,doc=title,, ") == {"query": "search_term", "doc": "title"}
    for bad in ("query", "query=", "=x", "a=b,a=c"):
        with pytest.raises(TextTableError):
            parse_column_mapping(bad)


def test_read_judged_pairs_mapping_and_derived_ids(tmp_path):
    p = write(tmp_path / "pairs.csv", PAIRS_CSV)
    df = read_judged_pairs(p, columns="query=search_term,doc=title,docid=uid,label=relevance")
    assert list(df.columns) == ["qid", "query", "docid", "doc", "label"]
    assert df["label"].dtype == np.float64 and df["label"].tolist() == [3.0, 1.0, 2.0]
    assert df["qid"].tolist()[0] == df["qid"].tolist()[1] == derive_id("q", "red shoe")
    assert df["qid"].str.fullmatch(r"q[0-9a-f]{12}").all()
    assert df["docid"].tolist() == ["p1", "p2", "p1"]
    # derived ids agree across files holding the same text
    other = write(tmp_path / "other.tsv", "query\tdoc\tlabel\nbag\tRed Shoe\t0\n")
    df2 = read_judged_pairs(other)
    assert df2["qid"].iloc[0] == df["qid"].iloc[2]
    assert df2["docid"].iloc[0] == derive_id("d", "Red Shoe")


def test_read_judged_pairs_extra_text_field(tmp_path):
    p = write(tmp_path / "pairs.csv", PAIRS_CSV)
    df = read_judged_pairs(p, columns={"query": "search_term", "doc": "title", "label": "relevance", "body": "extra"})
    assert list(df.columns) == ["qid", "query", "docid", "doc", "body", "label"]
    assert df["docid"].iloc[0] == derive_id("d", "Red Shoe", "x")


def test_read_judged_pairs_errors(tmp_path):
    p = write(tmp_path / "pairs.csv", PAIRS_CSV)
    with pytest.raises(TextTableError, match="no column 'query'.*columns=") as err:
        read_judged_pairs(p)
    assert err.value.line == 1
    dup = write(tmp_path / "dup.tsv", "qid\tquery\tdocid\tdoc\tlabel\n1\ta\td\tx\t1\n1\ta\td\tx\t2\n")
    with pytest.raises(TextTableError, match="duplicate judged pairs: 1 row judges .* at lines 2, 3"):
        read_judged_pairs(dup)
    bad = write(tmp_path / "bad.tsv", "query\tdoc\tlabel\na\tx\t1\nb\ty\thigh\nc\tz\t\n")
    with pytest.raises(TextTableError, match="label 'high' is not a finite number .2 such rows") as err:
        read_judged_pairs(bad)
    assert err.value.line == 3
    frac = write(tmp_path / "frac.tsv", "query\tdoc\tlabel\na\tx\t1\nb\ty\t2.5\n")
    with pytest.raises(TextTableError, match="not an integer grade.*linear:1:3:7") as err:
        read_judged_pairs(frac)
    assert err.value.line == 3
    assert read_judged_pairs(frac, label_map="round")["label"].tolist() == [1.0, 3.0]


def test_missing_text_drop_skips_bad_labels_of_dropped_rows(tmp_path):
    p = write(tmp_path / "pairs.tsv", "query\tdoc\tlabel\na\tx\t1\n\ty\tnan\n")
    with pytest.warns(TextTableWarning, match="1 rows"):
        df = read_judged_pairs(p, missing="drop")
    assert df.index.tolist() == [2]


# ---- labels ------------------------------------------------------------------------------------


def test_map_labels_specs():
    home_depot = [1, 1.25, 1.33, 1.5, 1.67, 2, 2.33, 2.5, 2.67, 3]
    np.testing.assert_array_equal(map_labels(home_depot, "linear:1:3:7"), [0, 1, 1, 2, 2, 3, 4, 5, 5, 6])
    np.testing.assert_array_equal(map_labels([0.4, 0.5, 2.49, 2.5], "round"), [0, 1, 2, 3])
    np.testing.assert_array_equal(map_labels([1.33, 1.5, 2, 2.67], "threshold:1.5,2.5"), [0, 1, 1, 2])
    np.testing.assert_array_equal(map_labels([0, 4, 31], "none"), [0, 4, 31])
    assert map_labels([2.0], "none").dtype == np.float64


@pytest.mark.parametrize(
    "values,spec,problem",
    [
        ([1, 2.5], "none", "label 2.5 is not an integer grade"),
        ([1, 3.5], "linear:1:3:7", "outside the linear map range"),
        ([1, float("nan")], "round", "not a finite number"),
        ([1], "linear:3:1:7", "bad label map"),
        ([1], "linear:1:3:1.5", "bad label map"),
        ([1], "threshold:2,1", "bad label map"),
        ([1], "threshold:", "bad label map"),
        ([1], "sqrt", "unknown label map"),
    ],
)
def test_map_labels_errors(values, spec, problem):
    with pytest.raises(TextTableError, match=problem):
        map_labels(values, spec)


def test_map_labels_error_names_line():
    with pytest.raises(TextTableError) as err:
        map_labels([1, 2, 2.5], "none", path="x.csv", lines=[2, 5, 9])
    assert str(err.value).startswith("x.csv:9: label 2.5")


@given(st.lists(st.floats(1, 3), min_size=1), st.integers(2, 10))
def test_linear_map_is_monotone_and_in_range(values, grades):
    values = np.sort(values)
    out = map_labels(values, f"linear:1:3:{grades}")
    assert out.min() >= 0 and out.max() <= grades - 1 and (np.diff(out) >= 0).all()
    assert (out == np.rint(out)).all()


# ---- pairs -> ranking --------------------------------------------------------------------------


def test_pairs_to_ranking_groups_queries(tmp_path):
    p = write(
        tmp_path / "p.tsv",
        "qid\tquery\tdocid\tdoc\tlabel\nb\tqb\td1\tone\t1\na\tqa\td2\ttwo\t0\nb\tqb\td3\tthree\t2\na\tqa\td1\tone\t1\n",
    )
    ranking, queries, docs = pairs_to_ranking(read_judged_pairs(p))
    assert ranking.qid.tolist() == ["b", "b", "a", "a"]
    assert ranking.docid.tolist() == ["d1", "d3", "d2", "d1"]
    assert ranking.label.tolist() == [1, 2, 0, 1]
    assert ranking.X.shape == (4, 0) and len(ranking.feature_map) == 0 and ranking.is_contiguous()
    assert ranking.comment.tolist() == ["docid = d1", "docid = d3", "docid = d2", "docid = d1"]
    assert queries.to_dict("list") == {"qid": ["b", "a"], "query": ["qb", "qa"]}
    assert docs.to_dict("list") == {"docid": ["d1", "d3", "d2"], "doc": ["one", "three", "two"]}
    assert docs.index.tolist() == [2, 4, 3]


def test_pairs_to_ranking_conflicting_texts(tmp_path):
    p = write(tmp_path / "p.tsv", "qid\tquery\tdocid\tdoc\tlabel\n1\tq\td1\tone\t1\n2\tr\td1\tONE\t0\n")
    pairs = read_judged_pairs(p)
    with pytest.raises(TextTableError, match="1 docids name different document texts.*lines 2, 3") as err:
        pairs_to_ranking(pairs)
    assert str(err.value).startswith(f"{p}:2:")
    with pytest.warns(TextTableWarning, match="kept the first text"):
        _, _, docs = pairs_to_ranking(pairs, conflicts="first")
    assert docs["doc"].tolist() == ["one"]


def test_pairs_to_ranking_rejects_whitespace_ids_and_missing_columns():
    pairs = pd.DataFrame({"qid": ["a b"], "query": ["q"], "docid": ["d"], "doc": ["x"], "label": [1.0]})
    with pytest.raises(TextTableError, match="contains whitespace"):
        pairs_to_ranking(pairs)
    with pytest.raises(TextTableError, match=r"lack columns \['body'\]"):
        pairs_to_ranking(pairs, fields=("doc", "body"))


# ---- writing and round trips -------------------------------------------------------------------


def test_write_table_refuses_tsv_tabs_without_output(tmp_path):
    out = tmp_path / "q.tsv"
    with pytest.raises(TextTableError) as err:
        write_table(pd.DataFrame({"qid": ["1", "2"], "query": ["a", "b\tc"]}), out)
    assert err.value.line == 3 and "contains a tab" in str(err.value) and ".csv" in str(err.value)
    assert list(tmp_path.iterdir()) == []


def test_write_table_works_a_slice_at_a_time_with_the_same_bytes(tmp_path, monkeypatch):
    df = pd.DataFrame({"qid": [str(i) for i in range(10)], "query": [f"q {i}" for i in range(10)], "n": range(10)})
    for name in ("a.tsv", "a.csv", "a.jsonl"):
        write_table(df, tmp_path / name)
    monkeypatch.setattr("ltrfeat.core._table_write._WRITE_ROWS", 3)
    for name in ("a.tsv", "a.csv", "a.jsonl"):
        write_table(df, tmp_path / f"sliced_{name}")
        assert (tmp_path / f"sliced_{name}").read_bytes() == (tmp_path / name).read_bytes()
    bad = df.assign(query=[*df["query"][:7], "x\ty", "z", "w"])
    with pytest.raises(TextTableError) as err:
        write_table(bad, tmp_path / "bad.tsv")
    assert err.value.line == 9 and not (tmp_path / "bad.tsv").exists()  # row 8 of a later slice, on line 9
    write_table(df.assign(query=[*df["query"][:8], "a\rb", "c"]), tmp_path / "cr.csv")
    assert (tmp_path / "cr.csv").read_bytes().split(b"\n")[1] == b'"0","q 0","0"'  # quoted from the start


def test_csv_lone_carriage_return_round_trip(tmp_path):
    df = pd.DataFrame({"qid": ["1"], "query": ["a\rb"]})
    write_table(df, tmp_path / "q.csv")
    assert read_queries(tmp_path / "q.csv")["query"].tolist() == ["a\rb"]


@pytest.mark.parametrize("name", ["p.csv", "p.tsv.gz", "p.jsonl", "p.parquet"])
def test_write_table_pairs_round_trip(tmp_path, name):
    df = pd.DataFrame(
        {"qid": ["007", "8"], "query": ["a", "b"], "docid": ["d", "e"], "doc": ["x", "y"], "label": [2.0, 0.1 + 0.2]}
    )
    write_table(df, tmp_path / name)
    back = read_judged_pairs(tmp_path / name, label_map="round")
    assert back[["qid", "query", "docid", "doc"]].to_dict("list") == df.drop(columns="label").to_dict("list")
    assert back["label"].tolist() == [2.0, 0.0]
    assert read_docs(tmp_path / name, fields=["label"])["label"].tolist() == ["2.0", "0.30000000000000004"]


ID = st.text(st.characters(blacklist_categories=("Cs", "Zs", "Zl", "Zp", "Cc")), min_size=1, max_size=8)
TEXT = st.text(min_size=1, max_size=30).filter(lambda t: t.strip())


@pytest.mark.parametrize("name", ["q.csv", "q.csv.gz", "q.tsv", "q.jsonl", "q.parquet"])
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_round_trip_arbitrary_text(tmp_path, name, data):
    tsv = name.startswith("q.tsv")
    text = TEXT.filter(lambda t: not any(c in t for c in "\t\n\r")) if tsv else TEXT
    qids = data.draw(st.lists(ID, min_size=1, max_size=6, unique=True))
    df = pd.DataFrame({"qid": qids, "query": [data.draw(text) for _ in qids]})
    write_table(df, tmp_path / name)
    back = read_queries(tmp_path / name)
    assert back["qid"].tolist() == qids
    assert back["query"].tolist() == df["query"].tolist()


HEADERS = {".tsv": b"qid\tquery\n1\ta\n", ".csv": b"qid,query\n1,a\n", ".jsonl": b'{"qid": "1", "query": "a"}\n'}


@pytest.mark.parametrize("suffix", sorted(HEADERS))
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(raw=st.binary(max_size=200) | st.text(alphabet='12ab,\t\n\r"{}:', max_size=60).map(str.encode))
def test_parsers_fail_only_with_text_table_errors(tmp_path, suffix, raw):
    p = tmp_path / f"q{suffix}"
    p.write_bytes(HEADERS[suffix] + raw)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TextTableWarning)
        for missing in ("error", "keep"):
            try:
                df = read_queries(p, missing=missing, encoding="latin-1")
            except TextTableError:
                continue
            assert list(df.columns) == ["qid", "query"] and df["qid"].is_unique


# ---- real data ---------------------------------------------------------------------------------


def test_home_depot_train():
    path = dataset_path("home_depot", "raw", "train.csv")
    mapping = "query=search_term,doc=product_title,docid=product_uid,label=relevance"
    with pytest.raises(TextTableError) as err:
        read_judged_pairs(path, columns=mapping, label_map="linear:1:3:7")
    assert err.value.line == 325 and "encoding='latin-1'" in str(err.value)
    pairs = read_judged_pairs(path, columns=mapping, encoding="latin-1", label_map="linear:1:3:7")
    assert len(pairs) == 74_067
    assert pairs["qid"].nunique() == 11_795
    assert pairs["docid"].nunique() == 54_667
    assert set(pairs["label"].unique()) == set(range(7))
    with pytest.warns(TextTableWarning, match="15 docids"):  # 15 products were retitled in the data
        ranking, queries, docs = pairs_to_ranking(pairs, conflicts="first")
    assert ranking.n_queries == len(queries) == 11_795 and len(docs) == 54_667 and ranking.is_contiguous()


def test_normalise_query_is_the_one_comparison_form():
    from ltrfeat.core.text import normalise_query

    assert normalise_query("  Cheap\tFLIGHTS \u00a0 rome ") == "cheap flights rome"
    assert normalise_query("\uff31\uff55\uff45\uff52\uff59 2") == "query 2"  # full-width letters (NFKC)
    assert normalise_query("Stra\u00dfe") == normalise_query("STRASSE")  # case folding, not lower()
    assert normalise_query(7) == "7"
