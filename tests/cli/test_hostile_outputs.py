"""Hostile inputs, round three (issue 48, items 7-12): outputs checked before any work, side files replaced
with their output, names shown as text in plots, write failures, option bounds, Ctrl-C at start-up."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from builders import planted_folds, write_folds
from ltrfeat.cli.main import cli

FAST = ["--n-estimators", "20", "--num-leaves", "7", "--early-stopping-rounds", "5", "--threads", "1"]
FAST += ["--seeds", "0", "--resamples", "200", "--no-select"]


def _invoke(*args):
    return CliRunner().invoke(cli, [str(a) for a in args])


@pytest.fixture(scope="module")
def folds_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("folds")
    write_folds(root, planted_folds(n_folds=3, queries_per_fold=20), ext=".letor", sidecars=True)
    return root


# -- 9. names are text in plots --------------------------------------------------------------------

MATH_NAMES = ["a$b$c", "$\\frac$", "x^_y$", "$$"]


@pytest.mark.parametrize("name", MATH_NAMES)
def test_names_with_dollars_are_plain_text_in_the_plots(folds_dir, tmp_path, name):
    out = tmp_path / "report"
    res = _invoke(
        "ablate", "--folds", folds_dir, "--base", "1-3", "--neural", "clsm=clsm_title_cos",
        "--base-name", name, "--report", out, *FAST,
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    assert "Traceback" not in res.output
    assert list(out.glob("*.png"))
    assert json.loads((out / "report.json").read_text())["config"]["baseline"] == name


@pytest.mark.parametrize("name", MATH_NAMES)
def test_feature_and_system_names_with_dollars_draw_as_text(name):
    from ltrfeat.experiments._plots import importance_figure, svg_text

    fig = importance_figure({"importance": {f"set {name}": {f"feature {name}": 0.7, "other": 0.3}}})
    svg = svg_text(fig)
    assert f"feature {name}" in svg.replace("&#36;", "$")
