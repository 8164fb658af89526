"""Issue 21 (part A) regressions: each test reproduces one reported defect through the CLI."""
from __future__ import annotations

import math

import numpy as np
import pytest
from click.testing import CliRunner

from cli.main import cli
from ltr_features.dataset import RankingSet
from ltr_features.letor import write_letor
from test_lambdamart import small, synthetic


def run(*args):
    return CliRunner().invoke(cli, [str(a) for a in args])


def one_line_error(result, *needles):
    """Exit 2, a single ``error:`` line holding every needle, no traceback."""
    assert result.exit_code == 2, (result.exit_code, result.output, result.exception)
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), result.output
    assert "Traceback" not in result.output
    for needle in needles:
        assert str(needle) in lines[0], (needle, lines[0])
    return lines[0]


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("rank")
    small("lightgbm", n_estimators=10, early_stopping_rounds=0).fit(synthetic(seed=0, n_features=4)).save(tmp / "m.txt")
    return tmp / "m.txt"


def test_evaluate_with_label_1024_reports_the_exact_ndcg(model, tmp_path):
    # before: 2^1024 overflowed, query a's NDCG was NaN and dropped, the tool printed query b's value alone
    data = synthetic(seed=3, n_queries=2, docs=2, n_features=4)
    data.label[:] = [1024, 0, 1, 0]
    path = tmp_path / "big.letor"
    write_letor(path, data)
    from rankers.lambdamart import LambdaMART

    scores = LambdaMART.load(model).predict(data)
    expected = []
    for q in (slice(0, 2), slice(2, 4)):
        lab, sc = data.label[q], scores[q]
        first = lab[np.argmax(sc)] if sc[0] != sc[1] else lab[0]
        expected.append(1.0 if first > 0 else 1 / math.log2(3))
    res = run("evaluate", model, path, "--metrics", "ndcg@10", "--json")
    assert res.exit_code == 0, res.output
    import json

    summary = json.loads(res.output)
    assert summary["n_evaluated"] == 2
    assert summary["metrics"]["ndcg@10"] == pytest.approx(np.mean(expected), rel=1e-12)


def test_evaluate_negative_label_is_one_line(model, tmp_path):
    data = synthetic(seed=3, n_queries=2, docs=3, n_features=4)
    data.label[1] = -1
    path = tmp_path / "neg.letor"
    write_letor(path, data)
    one_line_error(run("evaluate", model, path), path, "row 2 has label -1")


@pytest.mark.parametrize("label", [1100, 1e300])
def test_train_ranker_absurd_labels_are_one_line(tmp_path, label):
    data = synthetic(seed=0, n_queries=5, docs=4, n_features=3)
    data.label[6] = label
    path = tmp_path / "train.letor"
    write_letor(path, data)
    out = tmp_path / "m.txt"
    one_line_error(run("train-ranker", path, "--out", out, "--n-estimators", "2"), path, "above 1023", "row 7")
    assert not out.exists()
