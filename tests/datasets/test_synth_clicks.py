"""The synthetic world's click log with positions: impressions that aggregate to clicks.tsv, the
examination curve and title attraction as options that change clicks but no random draw."""

from __future__ import annotations

import hashlib
import json

import numpy as np
import pytest
from click.testing import CliRunner

from ltrfeat.cli.main import cli
from ltrfeat.datasets.synth import PRESETS, examination_curve, generate_world, write_world
from ltrfeat.datasets.synth._judging import overlap
from ltrfeat.datasets.synth._lexicon import content_tokens

QUICK = PRESETS["quick"]
# SHA-256 of clicks.tsv of generate_world(seed=3, **QUICK) before positions were recorded: the aggregated log
# must stay byte for byte what it was (the demo's figures depend on it).
QUICK_SEED3_CLICKS_SHA256 = "e9e346f1940a7b1426e208c1b2bbab0f9023fd5e272f9156506b4bc1ae25a839"


@pytest.fixture(scope="module")
def worlds():
    return {e: generate_world(seed=3, examination_exponent=e, **QUICK) for e in (0.0, 0.8, 1.5)}


def test_aggregated_log_is_byte_identical_to_before(tmp_path, worlds):
    written = write_world(worlds[0.8], tmp_path)
    assert hashlib.sha256(written["clicks.tsv"].read_bytes()).hexdigest() == QUICK_SEED3_CLICKS_SHA256
    assert "clicks_impressions.tsv" in written


def test_impressions_aggregate_to_the_click_table(worlds):
    world = worlds[0.8]
    imp = world.impressions
    totals = imp.groupby(["query", "docid"], sort=False)["clicked"].agg(["sum", "size"])
    clicks = world.clicks.set_index(["query", "docid"])
    assert len(totals) == len(clicks)
    assert (totals.loc[clicks.index, "sum"].to_numpy() == clicks["clicks"].to_numpy()).all()
    assert (totals.loc[clicks.index, "size"].to_numpy() == clicks["impressions"].to_numpy()).all()
    # every session shows positions 1..k once, contiguously and in order, and belongs to one query
    per_session = imp.groupby("session", sort=False)
    assert (per_session["position"].apply(lambda p: list(p) == list(range(1, len(p) + 1)))).all()
    assert (per_session["query"].nunique() == 1).all()
    assert imp["position"].between(1, 10).all() and set(imp["clicked"]) <= {0, 1}


def test_examination_exponent_changes_clicks_only(worlds):
    base = worlds[0.8].impressions
    for exponent, world in worlds.items():
        imp = world.impressions
        assert imp[["session", "query", "docid", "position", "grade"]].equals(
            base[["session", "query", "docid", "position", "grade"]]
        ), exponent
        top = (imp["position"] == 1).to_numpy()
        assert (imp["clicked"].to_numpy()[top] == base["clicked"].to_numpy()[top]).all()  # r^-e = 1 at rank 1
    # the same uniform draws against a lower examination probability: clicks can only disappear
    c0, c08, c15 = (worlds[e].impressions["clicked"].to_numpy() for e in (0.0, 0.8, 1.5))
    assert (c15 <= c08).all() and (c08 <= c0).all() and c15.sum() < c08.sum() < c0.sum()


def test_click_through_rate_by_position_follows_the_curve(worlds):
    """CTR at position r over CTR at 1 tracks r^-e once the (position-independent) attraction of what is shown
    there is divided out: the ratio of the steep world to the flat one."""
    flat = worlds[0.0].impressions.groupby("position")["clicked"].mean()
    for exponent in (0.8, 1.5):
        ctr = worlds[exponent].impressions.groupby("position")["clicked"].mean()
        ratio = (ctr / flat).to_numpy()
        np.testing.assert_allclose(ratio[:5], examination_curve(exponent, 5), rtol=0.12, atol=0.01)


def test_title_attraction_draws_clicks_to_overlapping_titles():
    base = generate_world(seed=3, **QUICK)
    lured = generate_world(seed=3, title_attraction=0.6, **QUICK)
    assert lured.clicks[["query", "docid", "impressions"]].equals(base.clicks[["query", "docid", "impressions"]])
    title = base.docs.set_index("docid")["title"]
    ov = np.array(
        [
            overlap(set(content_tokens(q)), set(content_tokens(title[d])))
            for q, d in zip(base.clicks["query"], base.clicks["docid"])
        ]
    )
    irrelevant = (base.clicks["grade"] == 0).to_numpy() & (ov >= 0.5)
    assert lured.clicks["clicks"][irrelevant].sum() > 2 * base.clicks["clicks"][irrelevant].sum()
    assert lured.options["title_attraction"] == 0.6 and "title_attraction" not in base.options


def test_world_json_records_the_true_examination_curve(tmp_path):
    args = "datasets synth --quick --click-queries 40 --examination-exponent 1.5 --out".split()
    result = CliRunner().invoke(cli, [*args, str(tmp_path)])
    assert result.exit_code == 0, result.output
    meta = json.loads((tmp_path / "world.json").read_text())
    model = meta["click_model"]
    assert meta["options"]["examination_exponent"] == 1.5
    assert model["examination_exponent"] == 1.5 and len(model["examination_curve"]) == 10
    np.testing.assert_allclose(model["examination_curve"], np.arange(1, 11) ** -1.5, atol=1e-6)
    header = (tmp_path / "clicks_impressions.tsv").read_text().split("\n", 1)[0]
    assert header == "session\tquery\tdocid\tposition\tclicked"
    assert meta["counts"]["impressions"] == sum(1 for _ in open(tmp_path / "clicks_impressions.tsv")) - 1
    assert "impressions; examination r^-1.5" in result.output


def test_default_world_json_options_as_before(tmp_path):
    meta = json.loads(
        (
            write_world(generate_world(seed=0, n_queries=30, n_docs=100, n_click_queries=5), tmp_path)["world.json"]
        ).read_text()
    )
    assert "examination_exponent" not in meta["options"] and "title_attraction" not in meta["options"]
    assert meta["click_model"]["examination_exponent"] == 0.8 and meta["click_model"]["title_attraction"] == 0.12


def test_bad_click_options_raise():
    for kwargs in ({"examination_exponent": -0.1}, {"examination_exponent": float("inf")}, {"title_attraction": 1.5}):
        with pytest.raises(ValueError, match=next(iter(kwargs))):
            generate_world(n_queries=3, n_docs=5, n_click_queries=1, **kwargs)


def test_world_without_click_queries_has_empty_impressions():
    world = generate_world(n_queries=3, n_docs=5, n_click_queries=0)
    assert len(world.impressions) == 0 and list(world.impressions.columns)[:5] == [
        "session",
        "query",
        "docid",
        "position",
        "clicked",
    ]
