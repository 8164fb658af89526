"""The ablation report on click-trained encoders: the click facts travel from the bundle through the column pins into
report.json/md/html (the log's impressions and clicks, the correction, the propensity curve), and the verdict and the
warning box warn about a feature trained on uncorrected clicks of a log that has positions."""

from __future__ import annotations

import json
import re

import pytest
from click.testing import CliRunner

from builders import planted_folds, write_folds
from ltrfeat.cli.main import cli
from ltrfeat.clicks.debias import click_labels
from ltrfeat.core.dataset import FeatureMap
from ltrfeat.experiments.ablate import AblateSettings, FoldsSource, ablate_folds
from ltrfeat.experiments.click_training import click_training, uncorrected_warnings
from ltrfeat.experiments.verdict import verdict_lines
from ltrfeat.encoders.training import train_encoder
from ltrfeat.features.neural import EncoderExtractor
from ltrfeat.rankers.selection import SelectionConfig
from pbm_logs import pbm_log

RANKER = {"learning_rate": 0.1, "num_leaves": 7, "early_stopping_rounds": 10, "n_jobs": 1}
CURVE = {
    "method": "harvest",
    "positions": [1, 2, 3],
    "values": [1.0, 0.6, 0.45],
    "lower": [1.0, 0.5, 0.35],
    "upper": [1.0, 0.7, 0.55],
    "level": 0.95,
    "resamples": 200,
}


def _record(debias: str, *, source="world/clicks_impressions.tsv", positions=True) -> dict:
    record = {
        "source": source,
        "has_positions": positions,
        "impressions": 5000,
        "clicks": 700,
        "pairs": 900,
        "debias": debias,
    }
    if debias == "ipw":
        record |= {"clip": 0.05, "propensity": CURVE}
    return record


def _write_folds(tmp_path, record: dict | None) -> None:
    """LETOR folds whose encoder column was extracted from a bundle with this click ``record``."""
    folds = planted_folds(n_folds=3, queries_per_fold=20)
    if record is not None:
        pin = {"kind": "encoder", "name": "clsm", "columns": ["clsm_title_cos"], "bundle_sha256": "0" * 64}
        pin |= {"score": "cosine", "model": None, "debias": record["debias"], "clicks": record}
        for fold in folds:
            for part in (fold.train, fold.valid, fold.test):
                part.feature_map = FeatureMap(part.feature_map.features, [pin])
    write_folds(tmp_path / "folds", folds, ext=".letor", sidecars=True)


def _ablate(tmp_path, record: dict | None, *, select: bool = False):
    _write_folds(tmp_path, record)
    settings = AblateSettings(
        report_dir=tmp_path / "report",
        seeds=(0,),
        n_estimators=20,
        resamples=300,
        ranker_params=RANKER,
        progress=False,
        selection=SelectionConfig.default("lightgbm") if select else None,
    )
    return ablate_folds(FoldsSource(tmp_path / "folds", base="1-3", neural={"clsm": "clsm_title_cos"}), settings)


def _files(done):
    out = done.report_dir
    return (
        json.loads((out / "report.json").read_text()),
        (out / "report.md").read_text(),
        (out / "report.html").read_text(),
    )


def test_an_uncorrected_click_feature_is_warned_about_in_every_part_of_the_report(tmp_path):
    done = _ablate(tmp_path, _record("none"), select=True)
    data, md, page = _files(done)
    assert data["config"]["click_training"] == {"clsm": _record("none")}
    warning = "encoder `clsm` was trained on the clicks of world/clicks_impressions.tsv uncorrected (--debias none)"
    assert any(line.startswith(f"warning: {warning}") for line in verdict_lines(data["verdict"]))
    assert (
        warning in md and "## Click-trained encoders" in md and "| `clsm` | world/clicks_impressions.tsv | 5000 |" in md
    )
    box = page[page.index("id=warnings") : page.index("id='s-results'")]
    assert "trained on the clicks of world/clicks_impressions.tsv uncorrected" in box
    assert "id='s-clicks'" in page and "href='#s-clicks'" in page and "none: raw click counts" in page


def test_a_corrected_feature_shows_its_curve_and_gets_no_warning(tmp_path):
    done = _ablate(tmp_path, _record("ipw"))
    data, md, page = _files(done)
    assert uncorrected_warnings(data["config"]["click_training"]) == []
    assert "uncorrected" not in page and "uncorrected" not in md
    section = page[page.index("id='s-clicks'") :]
    assert "propensities clipped at 0.05" in section and "<svg" in section
    assert "1: 1, 2: 0.6 [0.5, 0.7], 3: 0.45 [0.35, 0.55]" in section
    assert "P(examined | position) 1: 1, 2: 0.6 [0.5, 0.7]" in md


def test_no_click_section_without_a_click_trained_encoder(tmp_path):
    data, md, page = _files(_ablate(tmp_path, None))
    assert "click_training" not in data["config"] and "Click-trained" not in md and "s-clicks" not in page


def test_a_log_without_positions_is_said_to_be_uncorrectable_not_warned_about(tmp_path):
    record = _record("none", positions=False) | {"requested": "ipw"}
    data, md, page = _files(_ablate(tmp_path, record))
    assert uncorrected_warnings(data["config"]["click_training"]) == []
    assert "the log has no positions, so position bias cannot be corrected (--debias ipw asked)" in md
    assert "position bias cannot be corrected (--debias ipw asked)" in page


def test_hostile_click_log_names_are_escaped(tmp_path):
    source = "<script>alert(1)</script>|x"
    page = _files(_ablate(tmp_path, _record("none", source=source)))[2]
    assert "<script>alert(1)" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;|x" in page
    assert len(re.findall(r"<script", page)) == 2  # the report's own data and code only


def test_one_warning_per_log_names_every_encoder_it_trained_uncorrected():
    records = {"a": _record("none"), "b": _record("none"), "c": _record("ipw"), "d": _record("none", source="x.tsv")}
    assert [w.split(" trained on the clicks of ")[0] for w in uncorrected_warnings(records)] == [
        "encoders `a` and `b` were",
        "encoder `d` was",
    ]


def test_cross_fitted_encoders_report_their_click_logs():
    encoders = {"gdssm": {"spec": "clsm:generalized", "clicks": _record("pbm")}, "bm": {"spec": "x"}}
    assert click_training(FeatureMap(), encoders) == {"gdssm": _record("pbm")}


@pytest.fixture(scope="module")
def log():
    return pbm_log(exponent=1.0, n_queries=30, sessions=5, seed=3)


@pytest.mark.parametrize("debias", ["none", "ipw"])
def test_the_bundles_click_record_reaches_the_column_pin(tmp_path, log, debias):
    labels = click_labels(log, debias=debias, loss="generalized")
    tiny = {"model": "dssm", "sizes": {"hidden": [8], "out": 4}, "epochs": 1, "batch_size": 64, "progress": False}
    encoder, _ = train_encoder(labels.pairs, loss="generalized", soft_labels=labels.soft_labels, threads=1, **tiny)
    encoder.save(tmp_path / "m.ltrenc")
    pin = EncoderExtractor(name="dssm", path=tmp_path / "m.ltrenc").fit().pipeline_record()
    assert pin["clicks"] == json.loads(json.dumps(labels.record)) and pin["debias"] == debias
    columns = FeatureMap([], [pin | {"columns": []}])
    assert click_training(columns)["dssm"]["impressions"] == labels.record["impressions"]


def test_ablate_without_a_verdict_prints_the_warning(tmp_path):
    _write_folds(tmp_path, _record("none"))
    args = ["ablate", "--folds", tmp_path / "folds", "--base", "1-3", "--neural", "clsm=clsm_title_cos", "--no-select"]
    args += ["--seeds", "0", "--n-estimators", "10", "--resamples", "200", "--threads", "1", "--report", tmp_path / "r"]
    result = CliRunner().invoke(cli, [str(a) for a in args])
    assert result.exit_code == 0, result.output
    assert "warning: encoder `clsm` was trained on the clicks of world/clicks_impressions.tsv uncorrected" in (
        result.output
    )
