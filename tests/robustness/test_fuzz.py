"""Hypothesis fuzzing of the input readers: damaged LETOR text is parsed or refused with a
:class:`LtrfeatError`, never another exception; metrics stay finite for any labels.

The default suite runs a few hundred examples; ``-m slow`` runs >= 10,000 of the LETOR fuzz.
"""

from __future__ import annotations

import atexit
import json
import math
import shutil
import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ltrfeat.core.dataset import FeatureMap
from ltrfeat.core.errors import LtrfeatError
from ltrfeat.core.letor import read_letor
from ltrfeat.core.text import parse_column_mapping
from ltrfeat.core import metrics as M

SEED_TEXT = b"".join(b"%d qid:%d 1:0.5 2:-%d.25 4:1e-3 #docid = d%d\n" % (i % 3, i // 4, i % 5, i) for i in range(12))
ALPHABET = b"0123456789:.-+eE #qid\n\r\t\x00\xff\xc3naif"

edits = st.lists(
    st.tuples(
        st.integers(0, len(SEED_TEXT)),
        st.integers(0, 4),
        st.binary(max_size=4).map(lambda b: bytes(ALPHABET[x % len(ALPHABET)] for x in b)),
    ),
    min_size=1,
    max_size=6,
)


def mutate(data: bytes, changes) -> bytes:
    for pos, cut, insert in changes:
        pos = min(pos, len(data))
        data = data[:pos] + insert + data[pos + cut :]
    return data


_TMP = Path(tempfile.mkdtemp(prefix="ltrfeat-fuzz-"))  # hypothesis examples cannot take function-scoped tmp_path
atexit.register(shutil.rmtree, _TMP, ignore_errors=True)


@pytest.fixture(scope="module", autouse=True)
def _remove_tmp():
    yield
    shutil.rmtree(_TMP, ignore_errors=True)


def read_or_refuse(data: bytes, suffix: str = ".letor") -> None:
    path = _TMP / f"f{suffix}"
    path.write_bytes(data)
    try:
        ranking = read_letor(path)
    except LtrfeatError as exc:
        assert "\n" not in str(exc) and str(path) in str(exc)
        return
    assert len(ranking.label) == ranking.X.shape[0] and np.isfinite(ranking.label).all()
    assert len(ranking.label) == sum(1 for line in data.split(b"\n") if line.split(b"#")[0].strip())


def _fuzz_letor(changes):
    read_or_refuse(mutate(SEED_TEXT, changes))


test_letor_fuzz = settings(max_examples=300, deadline=None)(given(edits)(_fuzz_letor))
test_letor_fuzz_10k = pytest.mark.slow(
    settings(max_examples=10_000, deadline=None, suppress_health_check=list(HealthCheck))(given(edits)(_fuzz_letor))
)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.integers(0, 3),
            st.one_of(st.integers(0, 5), st.integers(0, 5000), st.floats(0, 1e300)),
            st.floats(-1e6, 1e6),
        ),
        min_size=1,
        max_size=30,
    ),
    st.sampled_from(M.GAINS),
)
def test_metrics_are_finite_for_any_finite_labels(rows, gain):
    qid = [f"q{q}" for q, _, _ in rows]
    label = [lab for _, lab, _ in rows]
    score = [s for _, _, s in rows]
    df = M.evaluate_queries(qid, label, score, "ndcg@3,ndcg@10,err@10,map,recall@3", gain=gain)
    evaluated = df[df["n_relevant"] > 0].drop(columns=["n_docs", "n_relevant"])
    values = evaluated.to_numpy(float)
    assert np.isfinite(values).all() and (values >= -1e-12).all() and (values <= 1 + 1e-9).all()
    summary = M.summarise_queries(df)
    assert summary["n_evaluated"] == len(evaluated)
    assert all(math.isfinite(v) for v in summary["metrics"].values()) or not len(evaluated)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=",=-0123456789abq_ ", max_size=20))
def test_selection_and_mapping_specs_are_parsed_or_refused(spec):
    try:
        FeatureMap.dense(46).resolve(spec)
    except KeyError:
        pass
    try:
        parse_column_mapping(spec)
    except LtrfeatError:
        pass


# -- serve's request parsing and --config files (issue 34) ------------------------------------------------

JSON_PIECES = st.sampled_from(
    [b"{", b"}", b"[", b"]", b'"', b"\\", b'\\"', b"\\u", b"d800", b":", b",", b" ", b"1", b"-", b"e9", b".5"]
    + [b"9" * 5000, b"NaN", b"Infinity", b"true", b"null", b'"query"', b'"candidates"', b"\xff", b"\xc3\xa9"]
)
json_bodies = st.one_of(
    st.lists(JSON_PIECES, max_size=60).map(b"".join),
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
        lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
        max_leaves=30,
    ).map(lambda v: json.dumps(v).encode()),
)


@settings(max_examples=400, deadline=None)
@given(json_bodies, st.integers(1, 40))
def test_request_bodies_are_parsed_or_refused_with_400(body, max_depth):
    from ltrfeat.core.config_files import json_depth
    from ltrfeat.serving.app import _Refused, parse_body

    try:
        value = parse_body(body, max_depth)
    except _Refused as exc:
        assert exc.status == 400 and "\n" not in exc.detail
        return
    assert json_depth(body) <= max_depth
    json.dumps(value)  # what was accepted can be answered


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=300))
def test_json_depth_agrees_with_the_parser_on_valid_json(text):
    from ltrfeat.core.config_files import json_depth

    body = json.dumps([text, {"k": [text]}]).encode()
    assert json_depth(body) == 3


CONFIG_PIECES = st.sampled_from(
    ["a", "b", "seed", " = ", ": ", "\n", "[", "]", "{", "}", ",", '"', "'", "&x ", "*x", "- ", "  ", "#", "1"]
    + ["9" * 5000, "1e400", "nan", "inf", "true", "<<: *x", "!!python/object:os.system", "\t", "\\", "."]
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(CONFIG_PIECES, max_size=50).map("".join), st.sampled_from([".toml", ".yaml", ".json"]))
def test_config_files_are_read_or_refused_in_one_line(text, suffix):
    from ltrfeat.core.config_files import read_config

    path = _TMP / f"settings{suffix}"
    path.write_text(text, encoding="utf-8")
    try:
        values = read_config(path)
    except LtrfeatError as exc:
        assert "\n" not in str(exc) and str(path) in str(exc)
        return
    assert isinstance(values, dict)
