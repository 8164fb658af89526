"""LETOR / svmlight reading and writing: round trips, every error message, streaming, real files."""

from __future__ import annotations

import gzip
import json
import tempfile
import warnings
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ltrfeat.core import _letor_stream, letor
from ltrfeat.core.dataset import FeatureMap, RankingSet
from ltrfeat.core.errors import LetorFormatError
from ltrfeat.core.letor import LetorWriter, iter_letor, letor_summary, parse_comment, read_letor, write_letor

from builders import dataset_path

SAMPLE = "2 qid:q1 1:0.5 2:1 3:0 #docid = D1 inc = 1 prob = 0.2\n0 qid:q1 1:0.25 3:7 # 7555 rambo\n1 qid:7 2:-1.5e-3\n"


def write(tmp_path, text, name="data.txt", mode="w"):
    path = tmp_path / name
    if mode == "wb":
        path.write_bytes(text)
    else:
        path.write_text(text)
    return path


def fresh(tmp_path):
    """A new empty directory per hypothesis example (tmp_path is shared between examples)."""
    return Path(tempfile.mkdtemp(dir=tmp_path))


def assert_same(a: RankingSet, b: RankingSet):
    assert a.qid.tolist() == b.qid.tolist()
    np.testing.assert_array_equal(a.label, b.label)
    np.testing.assert_array_equal(a.X, b.X)
    assert a.feature_map == b.feature_map
    for name in ("docid", "comment", "weight"):
        x, y = getattr(a, name), getattr(b, name)
        assert (x is None) == (y is None), name
        if x is not None:
            assert x.tolist() == y.tolist(), name


# ------------------------------------------------------------------ parsing


def test_read_sample(tmp_path):
    data = read_letor(write(tmp_path, SAMPLE))
    assert data.qid.tolist() == ["q1", "q1", "7"]
    assert data.label.tolist() == [2, 0, 1]
    assert data.feature_map.ids == [1, 2, 3]
    assert data.feature_map.names == ["f1", "f2", "f3"]
    np.testing.assert_array_equal(data.X, np.array([[0.5, 1, 0], [0.25, 0, 7], [0, -1.5e-3, 0]], dtype=np.float32))
    assert data.comment.tolist() == ["docid = D1 inc = 1 prob = 0.2", "7555 rambo", None]
    assert data.docid.tolist() == ["D1", "7555", None]
    assert data.X.dtype == np.float32 and data.weight is None


def test_parse_comment():
    assert parse_comment("docid = GX0 inc = 1 prob = 0.2") == {"docid": "GX0", "inc": "1", "prob": "0.2"}
    assert parse_comment("docid=GX0 inc=1") == {"docid": "GX0", "inc": "1"}
    assert parse_comment("7555 rambo") == {"docid": "7555"}
    assert parse_comment("docid = X free text") == {"docid": "X"}
    assert parse_comment("") == {} and parse_comment(None) == {} and parse_comment("   ") == {}


def test_blank_comment_lines_crlf_and_bom_are_handled(tmp_path):
    text = b"\xef\xbb\xbf# header line\r\n\r\n1 qid:1 1:2\r\n0 qid:1 1:3 #c\r\n"
    data = read_letor(write(tmp_path, text, mode="wb"))
    assert data.label.tolist() == [1, 0] and data.X[:, 0].tolist() == [2, 3]
    assert data.comment.tolist() == [None, "c"]


def test_gzip_input_and_output(tmp_path):
    gz = tmp_path / "data.txt.gz"
    gz.write_bytes(gzip.compress(SAMPLE.encode()))
    data = read_letor(gz)
    assert len(data) == 3
    out = tmp_path / "out.txt.gz"
    write_letor(out, data)
    assert out.read_bytes()[:2] == b"\x1f\x8b"
    assert_same(read_letor(out), data)


def test_svmlight_with_group_and_weight_files(tmp_path):
    path = write(tmp_path, "1 1:1 2:2\n0 2:3\n2 1:4 # d9\n")
    (tmp_path / "data.txt.query").write_text("2\n1\n")
    (tmp_path / "data.txt.weight").write_text("0.5\n1\n2\n")
    data = read_letor(path)
    assert data.qid.tolist() == ["1", "1", "2"]
    assert data.weight.tolist() == [0.5, 1, 2]
    assert data.docid.tolist() == [None, None, "d9"]
    out = tmp_path / "copy.svm"
    write_letor(out, data, fmt="svmlight", sparse=True)
    assert (tmp_path / "copy.svm.query").read_text() == "2\n1\n"
    assert (tmp_path / "copy.svm.weight").exists()
    assert out.read_text().splitlines()[1] == "0 2:3"
    assert_same(read_letor(out), data)


def test_explicit_group_path_and_format(tmp_path):
    path = write(tmp_path, "1 1:1\n0 1:2\n")
    groups = write(tmp_path, "1\n1\n", name="groups.txt")
    assert read_letor(path, group_path=groups).qid.tolist() == ["1", "2"]
    assert read_letor(path, fmt="svmlight", group_path=groups).n_queries == 2


def test_sidecar_names_columns_and_must_match(tmp_path):
    path = write(tmp_path, SAMPLE)
    fmap = FeatureMap.from_ids([1, 2, 3, 4]).append(["bm25"], "lexical")
    fmap.save(FeatureMap.sidecar_path(path))
    data = read_letor(path)
    assert data.feature_map == fmap and data.X.shape == (3, 5) and not data.X[:, 3:].any()
    FeatureMap.from_ids([1, 2]).save(FeatureMap.sidecar_path(path))
    with pytest.raises(LetorFormatError, match=r"data.txt:1: feature id 3 is not in the feature map .*features.json"):
        read_letor(path)
    assert read_letor(path, feature_map=FeatureMap.from_ids([1, 2, 3])).n_features == 3


def test_feature_values_are_exact_float32(tmp_path):
    text = "0 qid:1 1:0.1 2:16777217 3:3.4028235e38 4:1e-45 5:-0\n"
    x = read_letor(write(tmp_path, text)).X[0]
    assert x.tolist() == np.array([0.1, 16777217, 3.4028235e38, 1e-45, 0], dtype=np.float32).tolist()


@pytest.mark.parametrize("policy, expected", [("keep", [np.nan, np.inf, 1.0]), ("zero", [0.0, 0.0, 1.0])])
def test_nan_policy(tmp_path, policy, expected):
    path = write(tmp_path, "0 qid:1 1:nan 2:inf 3:1\n")
    np.testing.assert_array_equal(read_letor(path, nan_policy=policy).X[0], np.array(expected, dtype=np.float32))


def test_regroup_warns_and_reorders_stably(tmp_path):
    path = write(tmp_path, "1 qid:a 1:1\n2 qid:b 1:2\n3 qid:a 1:3\n4 qid:b 1:4\n")
    with pytest.raises(LetorFormatError, match=r"data.txt:3: rows of qid 'a' are not contiguous"):
        read_letor(path)
    with pytest.warns(UserWarning, match="rows of 2 queries were not contiguous; regrouped"):
        data = read_letor(path, regroup=True)
    assert data.qid.tolist() == ["a", "a", "b", "b"] and data.label.tolist() == [1, 3, 2, 4]


# ------------------------------------------------------------------ errors: one per problem, with file and line

ERRORS = [
    ("1 qid:1 1:1\n0 1:2\n", r"data.txt:2: missing qid: \(second token is '1:2'\)"),
    ("1 qid:1 qid:2 1:1\n", r"data.txt:1: duplicate qid:"),
    ("1 qid: 1:1\n", r"data.txt:1: empty qid"),
    ("1 qid:1 1:1 3:1 2:1\n", r"data.txt:1: feature ids are not increasing \(3 then 2\)"),
    ("1 qid:1 2:1 2:1\n", r"data.txt:1: feature ids are not increasing \(2 then 2\)"),
    ("1 qid:1 0:1\n", r"data.txt:1: feature id 0: ids are 1-based"),
    ("1 qid:1 -1:1\n", r"data.txt:1: feature id '-1' is not a positive integer"),
    ("1 qid:1 x:1\n", r"data.txt:1: feature id 'x' is not a positive integer"),
    ("1 qid:1 1:2:3\n", r"data.txt:1: feature token '1:2:3' is not id:value"),
    ("1 qid:1 1:1 7\n", r"data.txt:1: feature token '7' is not id:value"),
    ("1 qid:1 1:abc\n", r"data.txt:1: value 'abc' of feature 1 is not a number"),
    ("1 qid:1 1:\n", r"data.txt:1: value '' of feature 1 is not a number"),
    ("1 qid:1 1:0x10\n", r"data.txt:1: value '0x10' of feature 1 is not a number"),
    ("1 qid:1 1:1\n0 qid:1 1:nan\n", r"data.txt:2: feature 1 is nan \(NaN, infinite or beyond float32\)"),
    ("1 qid:1 1:-inf\n", r"data.txt:1: feature 1 is -inf"),
    ("1 qid:1 1:1e39\n", r"data.txt:1: feature 1 is 1e\+39 \(NaN, infinite or beyond float32\)"),
    ("high qid:1 1:1\n", r"data.txt:1: label 'high' is not a number"),
    ("nan qid:1 1:1\n", r"data.txt:1: label 'nan' is not finite"),
    ("qid:1 1:1\n", r"data.txt:1: line starts with 'qid:1' instead of a label"),
    ("1 qid:1 1:1\n\n# only comments\n0 qid:2 9999999999:1\n", r"data.txt:4: feature id '9999999999' is too large"),
    ("1 qid:1 1:1\n0 qid:1 1:2\n\x00", r"data.txt:3: NUL byte in the line"),
    ("1 qid:1 1:1\n0 qid:1\x001:2\n", r"data.txt:2: NUL byte in the line"),
    ("1\x00 \x00q\x00i\x00d\x00:\x001\x00\n", r"data.txt:1: NUL byte in the line \(a binary or UTF-16 file"),
    ("", r"data.txt: empty file \(no data lines\)"),
    ("# nothing but a comment\n\n", r"data.txt: empty file"),
]


@pytest.mark.parametrize("text, message", ERRORS)
def test_error_names_file_line_and_problem(tmp_path, text, message):
    path = write(tmp_path, text)
    with pytest.raises(LetorFormatError, match=message) as info:
        read_letor(path)
    assert "\n" not in str(info.value) and "; " in str(info.value) or "empty" in str(info.value)
    with pytest.raises(LetorFormatError, match=message):
        list(iter_letor(path, chunk_queries=1))


def test_error_line_numbers_across_blocks(tmp_path, monkeypatch):
    monkeypatch.setattr(_letor_stream, "_BLOCK_BYTES", 64)
    lines = [f"1 qid:{i // 3} 1:{i} 2:0.5 #d{i}" for i in range(200)]
    lines[150] = "1 qid:50 1:1 2:oops"
    with pytest.raises(LetorFormatError, match=r"data.txt:151: value 'oops' of feature 2"):
        read_letor(write(tmp_path, "\n".join(lines) + "\n"))


def test_invalid_utf8_is_named(tmp_path):
    path = write(tmp_path, b"1 qid:1 1:1 #ok\n1 qid:1 1:1 # caf\xe9\n", mode="wb")
    with pytest.raises(LetorFormatError, match=r"data.txt:2: comment is not valid UTF-8; re-encode"):
        read_letor(path)
    path = write(tmp_path, b"1 qid:\xff 1:1\n", mode="wb")
    with pytest.raises(LetorFormatError, match=r"data.txt:1: qid is not valid UTF-8"):
        read_letor(path)


def test_group_file_errors(tmp_path):
    path = write(tmp_path, "1 1:1\n0 1:2\n1 1:3\n")
    query = tmp_path / "data.txt.query"
    query.write_text("1\n1\n")
    with pytest.raises(
        LetorFormatError, match=r"data.txt:3: more rows than the group sizes in .*data.txt.query sum to \(2\)"
    ):
        read_letor(path)
    query.write_text("2\n5\n")
    with pytest.raises(LetorFormatError, match=r"data.txt.query: group sizes sum to 7 but the data file has 3 rows"):
        read_letor(path)
    query.write_text("2\nx\n")
    with pytest.raises(LetorFormatError, match=r"data.txt.query:2: group size 'x' is not an integer"):
        read_letor(path)
    query.write_text("3\n0\n")
    with pytest.raises(LetorFormatError, match=r"data.txt.query:2: group size 0 is not positive"):
        read_letor(path)
    query.unlink()
    with pytest.raises(LetorFormatError, match=r"data.txt:1: missing qid:"):
        read_letor(path)
    with pytest.raises(
        LetorFormatError, match=r"svmlight file without a group file; write the group sizes to data.txt.query"
    ):
        read_letor(path, fmt="svmlight")


def test_qid_in_svmlight_file_and_weight_errors(tmp_path):
    path = write(tmp_path, "1 1:1\n0 qid:3 1:2\n")
    (tmp_path / "data.txt.query").write_text("2\n")
    with pytest.raises(LetorFormatError, match=r"data.txt:2: unexpected qid: in an svmlight file"):
        read_letor(path)
    path = write(tmp_path, "1 qid:1 1:1\n0 qid:1 1:2\n", name="w.txt")
    (tmp_path / "w.txt.weight").write_text("1\n")
    with pytest.raises(LetorFormatError, match=r"w.txt.weight: 1 weights for 2 rows"):
        read_letor(path)
    (tmp_path / "w.txt.weight").write_text("1\ninf\n")
    with pytest.raises(LetorFormatError, match=r"w.txt.weight:2: weight 'inf' is not finite"):
        read_letor(path)


def test_bad_sidecar_and_missing_file(tmp_path):
    path = write(tmp_path, SAMPLE)
    FeatureMap.sidecar_path(path).write_text("{not json")
    with pytest.raises(LetorFormatError, match=r"features.json:1: feature map is not valid JSON"):
        read_letor(path)
    with pytest.raises(LetorFormatError, match=r"nope.txt: no such file"):
        read_letor(tmp_path / "nope.txt")
    with pytest.raises(ValueError, match="nan_policy"):
        read_letor(path, nan_policy="ignore")


# ------------------------------------------------------------------ round trips

_qid = st.text(alphabet="abcxyz0123456789_-", min_size=1, max_size=6)
_comment = st.one_of(
    st.none(),
    st.text(
        alphabet=st.characters(
            blacklist_categories=("Cs",), blacklist_characters="\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"
        ),
        max_size=20,
    ),
)
_value = st.floats(width=32, allow_nan=False, allow_infinity=False)


@st.composite
def ranking_sets(draw, *, with_qids=True):
    n_queries = draw(st.integers(1, 5))
    qids = draw(st.lists(_qid, min_size=n_queries, max_size=n_queries, unique=True))
    sizes = draw(st.lists(st.integers(1, 4), min_size=n_queries, max_size=n_queries))
    n = sum(sizes)
    ids = sorted(draw(st.sets(st.integers(1, 60), min_size=1, max_size=6)))
    values = draw(st.lists(st.one_of(st.just(0.0), _value), min_size=n * len(ids), max_size=n * len(ids)))
    X = np.asarray(values, dtype=np.float32).reshape(n, len(ids))
    labels = draw(st.lists(st.one_of(st.integers(0, 40).map(float), st.floats(-1e6, 1e6)), min_size=n, max_size=n))
    comments = draw(st.lists(_comment, min_size=n, max_size=n))
    weights = draw(st.one_of(st.none(), st.lists(st.floats(0, 10), min_size=n, max_size=n)))
    qid = np.repeat(np.asarray(qids if with_qids else [str(i + 1) for i in range(n_queries)], dtype=object), sizes)
    docid = [letor._docid_of(c) for c in comments]
    return RankingSet(
        qid,
        labels,
        X,
        FeatureMap.from_ids(ids),
        docid=docid if any(docid) else None,
        comment=comments if any(c is not None for c in comments) else None,
        weight=weights,
    )


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=ranking_sets(), sparse=st.booleans())
def test_letor_round_trip(tmp_path, data, sparse):
    path = fresh(tmp_path) / "rt.txt"
    write_letor(path, data, sparse=sparse)
    assert_same(read_letor(path), data)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=ranking_sets(with_qids=False), sparse=st.booleans())
def test_svmlight_round_trip(tmp_path, data, sparse):
    path = fresh(tmp_path) / "rt.svm"
    write_letor(path, data, fmt="svmlight", sparse=sparse)
    assert "qid:" not in path.read_text().split("#")[0]
    assert_same(read_letor(path), data)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(lines=st.lists(st.text(alphabet="0123456789 .:-+eqidnaf#x\t", max_size=30), min_size=1, max_size=6))
def test_any_input_parses_or_raises_letor_format_error(tmp_path, lines):
    path = tmp_path / "fuzz.txt"
    path.write_text("\n".join(lines))
    try:
        data = read_letor(path, nan_policy="keep")
    except LetorFormatError:
        return
    assert len(data) == sum(bool(line.split("#")[0].split()) for line in lines)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(values=st.lists(st.floats(allow_nan=False, allow_infinity=False, width=64), min_size=1, max_size=8))
def test_values_equal_python_float_then_float32(tmp_path, values):
    texts = [repr(v) for v in values]
    path = tmp_path / "v.txt"
    path.write_text("0 qid:1 " + " ".join(f"{i + 1}:{t}" for i, t in enumerate(texts)) + "\n")
    with np.errstate(over="ignore"):
        expected = np.asarray([float(t) for t in texts]).astype(np.float32)
    if not np.isfinite(expected).all():
        return
    np.testing.assert_array_equal(read_letor(path).X[0], expected)


def test_writer_formats_and_comment_spacing(tmp_path):
    data = RankingSet(
        ["a", "a"],
        [2.0, 0.5],
        np.array([[0.1, 0], [3, 1e-7]], dtype=np.float32),
        FeatureMap.from_ids([1, 4]),
        docid=["D1", None],
        comment=[None, "  two spaces"],
    )
    path = tmp_path / "w.txt"
    write_letor(path, data)
    assert path.read_text() == "2 qid:a 1:0.1 4:0 #docid = D1\n0.5 qid:a 1:3 4:1e-07 #   two spaces\n"
    back = read_letor(path)
    assert back.comment.tolist() == ["docid = D1", "  two spaces"]
    assert back.docid.tolist() == ["D1", "two"]  # a bare first token is taken as the docid
    assert json.loads(FeatureMap.sidecar_path(path).read_text())["features"][1]["id"] == 4


# ------------------------------------------------------------------ streaming


def _many_queries(tmp_path, n_queries=40, name="many.txt"):
    rng = np.random.default_rng(0)
    lines = []
    for q in range(n_queries):
        for d in range(int(rng.integers(1, 7))):
            ids = sorted(rng.choice(np.arange(1, 12 if q < n_queries - 3 else 20), size=4, replace=False))
            feats = " ".join(f"{i}:{rng.random():.4f}" for i in ids)
            lines.append(f"{int(rng.integers(0, 3))} qid:Q{q} {feats} #docid = d{q}_{d}")
    return write(tmp_path, "\n".join(lines) + "\n", name=name)


@pytest.mark.parametrize("block_bytes", [50, 300, 1 << 20])
def test_iter_letor_chunks_concatenate_to_read_letor(tmp_path, monkeypatch, block_bytes):
    monkeypatch.setattr(_letor_stream, "_BLOCK_BYTES", block_bytes)
    path = _many_queries(tmp_path)
    whole = read_letor(path)
    assert whole.feature_map.max_id > 11  # ids only seen in the last queries made the matrix grow
    chunks = list(iter_letor(path, chunk_queries=7))
    assert [c.n_queries for c in chunks] == [7] * 5 + [5]
    assert all(c.feature_map == whole.feature_map for c in chunks)
    qids_per_chunk = [set(c.qid.tolist()) for c in chunks]
    assert sum(len(q) for q in qids_per_chunk) == len(set().union(*qids_per_chunk))  # no query split
    joined = RankingSet(
        np.concatenate([c.qid for c in chunks]),
        np.concatenate([c.label for c in chunks]),
        np.vstack([c.X for c in chunks]),
        whole.feature_map,
        docid=np.concatenate([c.docid for c in chunks]),
        comment=np.concatenate([c.comment for c in chunks]),
    )
    assert_same(joined, whole)


def test_iter_letor_regroup_and_svmlight(tmp_path):
    path = write(tmp_path, "1 qid:a 1:1\n2 qid:b 1:2\n3 qid:a 1:3\n")
    with pytest.warns(UserWarning):
        chunks = list(iter_letor(path, chunk_queries=1, regroup=True))
    assert [c.qid.tolist() for c in chunks] == [["a", "a"], ["b"]]
    svm = write(tmp_path, "1 1:1\n0 1:2\n1 2:3\n", name="s.svm")
    (tmp_path / "s.svm.query").write_text("1\n2\n")
    (tmp_path / "s.svm.weight").write_text("1\n2\n3\n")
    chunks = list(iter_letor(svm, chunk_queries=1))
    assert [c.qid.tolist() for c in chunks] == [["1"], ["2", "2"]]
    assert [c.weight.tolist() for c in chunks] == [[1.0], [2.0, 3.0]]
    with pytest.raises(ValueError, match="chunk_queries"):
        next(iter_letor(svm, chunk_queries=0))


def test_letor_writer_streams_merges_split_queries_and_is_atomic(tmp_path):
    data = read_letor(write(tmp_path, SAMPLE))
    out = tmp_path / "out.svm"
    with LetorWriter(out, data.feature_map, fmt="svmlight") as w:
        w.write(data.take([0]))
        w.write(data.take([1, 2]))
    assert (tmp_path / "out.svm.query").read_text() == "2\n1\n"
    failed = tmp_path / "failed.svm"
    with pytest.raises(RuntimeError):
        with LetorWriter(failed, data.feature_map, fmt="svmlight") as w:
            w.write(data)
            raise RuntimeError("boom")
    with pytest.raises(ValueError, match="not contiguous"):
        with LetorWriter(failed, data.feature_map) as w:
            w.write(data.take([0, 2, 1]))
    with pytest.raises(ValueError, match="differ"):
        with LetorWriter(failed, data.feature_map) as w:
            w.write(data.select_features("1-2"))
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "data.txt",
        "out.svm",
        "out.svm.features.json",
        "out.svm.query",
    ]


def test_summary(tmp_path):
    stats = letor_summary(write(tmp_path, SAMPLE))
    assert stats["rows"] == 3 and stats["queries"] == 2 and stats["features"] == 3
    assert stats["label_histogram"] == {"0": 1, "1": 1, "2": 1}
    assert stats["docs_per_query"] == {"min": 1, "median": 1.5, "max": 2}
    assert stats["queries_without_relevant"] == 0 and stats["rows_with_docid"] == 2


# ------------------------------------------------------------------ real files


def test_real_mq2008_parses_to_the_official_size():
    raw = dataset_path("letor4_mq2008", "raw")
    parts = [read_letor(raw / f"S{i}.txt") for i in range(1, 6)]
    assert sum(len(p) for p in parts) == 15211
    assert sum(p.n_queries for p in parts) == 784
    assert all(p.n_features == 46 and p.feature_map.max_id == 46 for p in parts)
    labels = np.concatenate([p.label for p in parts])
    assert np.bincount(labels.astype(int)).tolist() == [12279, 2001, 931]
    assert parts[0].docid[0] == "GX008-86-4444840"
    assert parts[0].comment[0] == "docid = GX008-86-4444840 inc = 1 prob = 0.086622"


def test_real_mq2008_round_trips_byte_for_byte(tmp_path):
    src = dataset_path("letor4_mq2008", "raw", "S1.txt")
    out = tmp_path / "S1.txt"
    write_letor(out, read_letor(src))
    original = [line.split(" ", 48) for line in src.read_text().splitlines()]
    ours = [line.split(" ", 48) for line in out.read_text().splitlines()]
    assert [o[48] for o in original] == [o[48] for o in ours]  # comments verbatim
    np.testing.assert_array_equal(read_letor(out).X, read_letor(src).X)


def test_real_lightgbm_example_with_query_file():
    data = read_letor(dataset_path("lightgbm_lambdarank", "raw", "rank.train"))
    assert len(data) == 3005 and data.n_queries == 201
    assert data.group_sizes().sum() == 3005 and data.group_sizes().min() == 1
    assert data.feature_map.max_id == 300
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        test = read_letor(dataset_path("lightgbm_lambdarank", "raw", "rank.test"))
    assert len(test) == 768 and test.n_queries == 50


def test_nul_byte_in_a_comment_is_text(tmp_path):
    ranking = read_letor(write(tmp_path, b"1 qid:1 1:1 #a\x00b\n0 qid:1 1:2\n", mode="wb"))
    assert list(ranking.comment) == ["a\x00b", None] and len(ranking.label) == 2
