"""``ltrfeat ablate --pairs ... --click-log LOG --debias ...``: encoders cross-fitted on a click log (impression-level,
aggregated or UBI) with the position bias corrected, the correction recorded for the report and the verdict."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from builders import TINY_ABLATE as TINY
from builders import write_ubi_fixture
from ltrfeat.cli.main import cli
from ltrfeat.datasets.synth import write_world


def run(*args):
    return CliRunner().invoke(cli, [str(a) for a in args])


@pytest.fixture(scope="module")
def ubi(tmp_path_factory):
    """The UBI fixture's world written out (judged pairs, docs) beside its UBI query and event records."""
    fixture = write_ubi_fixture(tmp_path_factory.mktemp("ubi"))
    write_world(fixture["world"], fixture["events"].parent / "world")
    return fixture | {"dir": fixture["events"].parent / "world"}


def _ablate(ubi, report, *more):
    return run(
        "ablate",
        "--pairs",
        ubi["dir"] / "judged.tsv",
        "--click-log",
        ubi["events"],
        "--click-queries",
        ubi["queries"],
        "--click-docs",
        ubi["dir"] / "docs.tsv",
        *TINY,
        "--quick",
        "--no-select",
        "--report",
        report,
        *more,
    )


def test_a_ubi_log_trains_the_encoders_end_to_end_debiased(ubi, tmp_path):
    result = _ablate(
        ubi, tmp_path / "r", "--encoder", "dssm:generalized", "--encoder", "dssm:softmax", "--debias", "ipw"
    )
    assert result.exit_code == 0, result.output
    assert "encoders train on the clicks of" in result.output and "inverse propensity weighting" in result.output
    report = json.loads((tmp_path / "r" / "report.json").read_text())
    scheme = report["config"]["cross_fitting"]
    assert "separate training table" in scheme["encoder_training_data"]
    records = report["config"]["click_training"]
    assert set(records) == {"dssm-generalized", "dssm-softmax"}
    record = records["dssm-generalized"]
    log = ubi["world"].impressions
    assert record["source"] == str(ubi["events"]) and record["has_positions"] and record["debias"] == "ipw"
    assert record["impressions"] == len(log) and record["clicks"] == int(log["clicked"].sum())
    assert record["propensity"]["positions"][0] == 1 and record["clip"] == 0.05
    assert scheme["encoders"]["dssm-softmax"]["clicks"] == record
    html = (tmp_path / "r" / "report.html").read_text()
    assert "Click-trained encoders" in html and "inverse propensity weighting" in html
    assert "uncorrected" not in json.dumps(report.get("verdict") or {})


def test_uncorrected_clicks_of_a_positioned_log_are_warned_about(ubi, tmp_path):
    result = _ablate(ubi, tmp_path / "r", "--encoder", "dssm:generalized", "--debias", "none")
    assert result.exit_code == 0, result.output
    assert "trained on the clicks of" in result.output and "uncorrected (--debias none)" in result.output
    record = json.loads((tmp_path / "r" / "report.json").read_text())["config"]["click_training"]
    assert record["dssm-generalized"]["debias"] == "none" and "propensity" not in record["dssm-generalized"]


@pytest.mark.parametrize(
    "args, message",
    [
        (["--debias", "ipw"], "--debias goes with --click-log"),
        (["--click-docs", "DOCS"], "--click-docs goes with --click-log"),
        (["--propensity", "em"], "--propensity goes with --click-log"),
        (["--click-log", "LOG", "--click-docs", "DOCS", "--propensity", "curve.tsv"],
         "'curve.tsv' is neither harvest nor em nor a file"),
        (["--click-log", "LOG", "--train-pairs", "JUDGED"], "--click-log and --train-pairs both name"),
        (["--click-log", "LOG", "--encoder", "dssm:hinge"], "loss, not hinge"),
        (["--click-log", "LOG", "--encoder", "sbert"], "no --encoder is trained"),
        (["--click-log", "LOG", "--click-docs", "DOCS", "--debias", "pbm", "--encoder-option",
          "soft_labels=clicks"], "trains on soft labels identity"),
        (["--click-log", "JUDGED"], "JUDGED"),  # not a click log: the reader's one-line error names the file
        (["--click-log", "LOG"], "texts; give the documents table (docid and text) with --click-docs"),  # a UBI log names documents by id: --click-docs gives their texts
        (["--click-log", "LOG", "--click-docs", "DOCS", "--propensity", "JUDGED"], "JUDGED:1: no column 'position'"),
    ],
)  # fmt: skip
def test_bad_click_log_options_fail_in_one_line_without_a_report(ubi, tmp_path, args, message):
    paths = {"LOG": ubi["events"], "DOCS": ubi["dir"] / "docs.tsv", "JUDGED": ubi["dir"] / "judged.tsv"}
    args = [paths.get(a, a) for a in args]
    encoder = [] if "--encoder" in args else ["--encoder", "dssm:generalized"]
    queries = ["--click-queries", ubi["queries"]] if "LOG" in args or ubi["events"] in args else []
    result = run(
        "ablate", "--pairs", paths["JUDGED"], *encoder, *queries, *args, *TINY, "--quick", "--report", tmp_path / "r"
    )
    assert result.exit_code == 2, result.output
    errors = [line for line in result.output.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and message in errors[0].replace(str(paths["JUDGED"]), "JUDGED"), result.output
    assert not (tmp_path / "r").exists()


def test_the_verdict_ships_a_click_trained_encoder_trained_on_its_click_log():
    from ltrfeat.experiments.verdict import _encoder_ship_line

    clicks = {"source": "ubi/events.jsonl", "debias": "ipw", "has_positions": True}
    line = _encoder_ship_line(
        {
            "encoders": {
                "dssm-generalized": {"spec": "dssm:generalized", "trained": True, "clicks": clicks},
                "clsm-softmax": {"spec": "clsm:softmax", "trained": True},
            }
        }
    )
    assert "ltrfeat train-encoder PAIRS --spec clsm:softmax --out clsm-softmax.ltrenc" in line
    assert "ltrfeat train-encoder ubi/events.jsonl --debias ipw --model dssm --loss generalized" in line
    assert "--spec dssm:generalized" not in line


def test_the_click_log_is_read_once_for_the_plan_and_the_run(ubi, tmp_path, monkeypatch):
    import ltrfeat.clicks

    reads = []
    real = ltrfeat.clicks.read_click_log
    monkeypatch.setattr(ltrfeat.clicks, "read_click_log", lambda *a, **k: reads.append(a) or real(*a, **k))
    result = _ablate(ubi, tmp_path / "r", "--encoder", "dssm:generalized", "--debias", "pbm")
    assert result.exit_code == 0, result.output
    assert len(reads) == 1 and result.output.count("encoders train on the clicks of") == 1
