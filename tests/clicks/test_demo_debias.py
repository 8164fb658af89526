"""The demo's click tables: uncorrected as before (and said so in the bundle), or corrected from the positioned log."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from ltrfeat.experiments.demo import ENCODERS, click_tables
from ltrfeat.cli.main import cli
from ltrfeat.datasets.synth import generate_world, write_world
from ltrfeat.encoders import Encoder


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    world = generate_world(seed=3, n_queries=30, n_docs=200, n_click_queries=60)
    directory = tmp_path_factory.mktemp("world")
    write_world(world, directory)
    return world, directory


def test_uncorrected_tables_are_the_aggregated_log_as_before(world):
    world, directory = world
    table, soft = click_tables(world, directory, "none", seed=0)("generalized")
    assert soft == "clicks"
    assert table["label"].tolist() == world.clicks["clicks"].tolist()  # the demo's training data, row for row
    assert table["doc"].tolist() == world.clicks["doc"].tolist()
    assert table.attrs["clicks"]["debias"] == "none" and table.attrs["clicks"]["has_positions"]


@pytest.mark.parametrize("debias", ["ipw", "pbm"])
def test_corrected_tables_come_from_the_positioned_log(world, debias):
    world, directory = world
    tables = click_tables(world, directory, debias, seed=0)
    for loss in dict.fromkeys(name for _, name in ENCODERS):
        table, _ = tables(loss)
        assert table.attrs["clicks"]["debias"] == debias
        assert ("weight" in table) == (loss == "softmax")
        assert int(table.attrs["clicks"]["impressions"]) == len(world.impressions)


@pytest.mark.slow
def test_quick_demo_with_ipw_records_the_correction_in_every_bundle(tmp_path):
    result = CliRunner().invoke(cli, ["demo", "--quick", "--debias", "ipw", "--out", str(tmp_path / "demo")])
    assert result.exit_code == 0, result.output
    assert "position bias: corrected by inverse propensity weighting" in result.output
    for bundle in (tmp_path / "demo" / "models").glob("*.ltrenc"):
        assert Encoder.load(bundle).training["clicks"]["debias"] == "ipw"
