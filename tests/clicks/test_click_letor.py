"""``ltrfeat extract --clicks LOG``: an impression-level log as a click LETOR (one qid per shown list, label =
clicked) with its ``.position`` file, which ``train-ranker`` corrects with the engine's unbiased lambdarank."""

from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner

from ltrfeat.cli.main import cli
from ltrfeat.core.letor import read_letor
from pbm_logs import one_line_error, pbm_log, write_log


def _invoke(*args):
    return CliRunner().invoke(cli, [str(a) for a in args])


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    return write_log(tmp_path_factory.mktemp("log"), pbm_log(n_queries=30, sessions=6, seed=5))


def test_a_log_becomes_a_click_letor_with_positions_that_train_ranker_corrects(files, tmp_path):
    log, docs = files
    out = tmp_path / "clicks.letor"
    made = _invoke("extract", "--clicks", log, "--docs", docs, "--lexical", "bm25,coverage", "--out", out)
    assert made.exit_code == 0, made.output
    data = read_letor(out)
    shown = pbm_log(n_queries=30, sessions=6, seed=5).impressions
    assert len(data) == len(shown) and data.position is not None
    assert data.n_queries == shown["session"].nunique()  # one qid per shown list
    # each list's rows by position 1..10, its label the click of that impression
    bounds = data.query_boundaries()
    assert all((data.position[a:b] == np.arange(1, b - a + 1)).all() for a, b in zip(bounds[:-1], bounds[1:]))
    first = shown[shown["session"] == shown["session"].iloc[0]].sort_values("position")
    assert data.label[: len(first)].tolist() == first["clicked"].tolist()
    for engine, model in (("lightgbm", "m.txt"), ("xgboost", "m.json")):
        trained = _invoke(
            "train-ranker", out, "--engine", engine, "--position-bias", "engine", "--n-estimators", "5", "--threads",
            "1", "--out", tmp_path / model,
        )  # fmt: skip
        assert trained.exit_code == 0, trained.output
        meta = json.loads((tmp_path / f"{model}.meta.json").read_text())
        assert meta["position_bias"]["positions"] == {"min": 1, "max": 10}


@pytest.mark.parametrize(
    "text, fragments",
    [
        (
            "query\tdocid\tposition\timpressions\tclicks\nq0\td0_1\t1\t3\t1\n",
            ["aggregated click log", "impression-level"],
        ),
        (
            "session\tquery\tdocid\tposition\tclicked\ns\tq0\td0_1\t1\t1\ns\tq0\td0_2\t1\t0\n",
            [":3: ", "two results at position 1"],
        ),
        ("query\tdocid\tposition\tclicked\nq0\td0_1\t1\t1\n", [":1: ", "no session (or impression_id) column"]),
        ("session\tquery\tdocid\tposition\tclicked\ns\tq0\tnope\t1\t1\n", [":2: ", "docid 'nope'"]),
        ("session\tquery\tdocid\tposition\tclicked\ns\tq0\td0_1\t0\t1\n", [":2: ", "position below 1"]),
    ],
)
def test_bad_logs_are_one_line_errors_and_write_nothing(files, tmp_path, text, fragments):
    _, docs = files
    log, out = tmp_path / "log.tsv", tmp_path / "out" / "c.letor"
    log.write_text(text)
    one_line_error(_invoke("extract", "--clicks", log, "--docs", docs, "--lexical", "bm25", "--out", out), *fragments)
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())


def test_clicks_needs_docs_and_excludes_the_other_forms(files, tmp_path):
    log, docs = files
    out = tmp_path / "c.letor"
    one_line_error(_invoke("extract", "--clicks", log, "--lexical", "bm25", "--out", out), "--clicks needs --docs")
    both = _invoke("extract", "--clicks", log, "--pairs", log, "--docs", docs, "--lexical", "bm25", "--out", out)
    one_line_error(both, "give one of LETOR_IN")
    assert not out.exists()
