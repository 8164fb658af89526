"""``ltrfeat clicks propensity`` and ``ltrfeat train-encoder --debias`` end to end, and their bad input."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from ltrfeat.cli.main import cli
from ltrfeat.encoders import Encoder
from pbm_logs import one_line_error, pbm_log, write_log

FAST = ["--model", "dssm", "--epochs", "1", "--batch-size", "64", "--threads", "1", "--val-fraction", "0.25"]


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    return write_log(tmp_path_factory.mktemp("log"), pbm_log(exponent=1.0, n_queries=40, sessions=12, seed=3))


def _invoke(*args):
    return CliRunner().invoke(cli, [str(a) for a in args])


def test_propensity_prints_the_curve_with_its_interval_and_plots_it(files, tmp_path):
    log, docs = files
    text = _invoke("clicks", "propensity", log, "--docs", docs, "--resamples", "100", "--plot", tmp_path / "c.png")
    assert text.exit_code == 0, text.output
    assert "95% interval, bootstrap over queries, 100 resamples" in text.output
    assert (tmp_path / "c.png").read_bytes()[:4] == b"\x89PNG"
    as_json = _invoke("clicks", "propensity", log, "--docs", docs, "--resamples", "100", "--json", "--method", "em")
    curve = json.loads(as_json.output)
    assert curve["method"] == "em" and curve["positions"] == list(range(1, 11)) and curve["values"][0] == 1
    assert all(lo <= v <= hi for lo, v, hi in zip(curve["lower"], curve["values"], curve["upper"]))


def test_propensity_of_a_log_without_positions_is_aone_line_error(tmp_path):
    path = tmp_path / "pairs.tsv"
    path.write_text("query\tdocid\tdoc\tclicks\timpressions\nq\td1\tred shoe\t1\t3\nq\td2\tblue shoe\t0\t3\n")
    one_line_error(_invoke("clicks", "propensity", path), "no positions", "position bias cannot be estimated")


def test_propensity_refuses_an_unwritable_plot_before_reading(files, tmp_path):
    log, docs = files
    (tmp_path / "file").write_text("not a directory")
    one_line_error(_invoke("clicks", "propensity", log, "--docs", docs, "--plot", tmp_path / "file" / "c.png"))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file"]


@pytest.mark.parametrize("name", ["curve.tsv", "curve.csv", "curve.parquet"])
def test_propensity_out_writes_the_curve_train_encoder_reads_back(files, tmp_path, name):
    from ltrfeat.clicks import read_propensity_curve

    log, docs = files
    out = tmp_path / name
    text = _invoke("clicks", "propensity", log, "--docs", docs, "--resamples", "100", "--out", out, "--json")
    assert text.exit_code == 0, text.output
    printed = json.loads(text.output)
    again = read_propensity_curve(out)
    assert again.values == pytest.approx(printed["values"], abs=1e-6)  # the JSON rounds to 6 decimals
    trained = _invoke(
        "train-encoder",
        log,
        "--docs",
        docs,
        "--debias",
        "ipw",
        "--propensity",
        out,
        "--out",
        tmp_path / "m.ltrenc",
        *FAST,
    )
    assert trained.exit_code == 0, trained.output
    assert "position bias corrected by ipw (propensity by position, given: 1, " in trained.output


def test_propensity_refuses_an_unwritable_out_before_reading(files, tmp_path):
    log, docs = files
    (tmp_path / "file").write_text("not a directory")
    one_line_error(_invoke("clicks", "propensity", log, "--docs", docs, "--out", tmp_path / "file" / "c.tsv"))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file"]


@pytest.mark.parametrize("debias", ["ipw", "pbm"])
def test_train_encoder_corrects_and_records_the_position_bias(files, tmp_path, debias):
    log, docs = files
    out = tmp_path / "m.ltrenc"
    result = _invoke(
        "train-encoder", log, "--docs", docs, "--debias", debias, "--loss", "generalized", "--out", out, *FAST
    )
    assert result.exit_code == 0, result.output
    assert f"position bias corrected by {debias} (propensity by position, harvest: 1, " in result.output
    record = Encoder.load(out).training["clicks"]
    assert record["debias"] == debias and record["has_positions"] and len(record["propensity"]["values"]) == 10


def test_train_encoder_uncorrected_says_the_log_has_positions(files, tmp_path):
    log, docs = files
    out = tmp_path / "m.ltrenc"
    result = _invoke("train-encoder", log, "--docs", docs, "--debias", "none", "--out", out, *FAST)
    assert result.exit_code == 0, result.output
    assert "note: the log has positions but --debias none trains on uncorrected clicks" in result.output
    assert Encoder.load(out).training["clicks"]["debias"] == "none"


def test_train_encoder_on_a_log_without_positions_trains_and_says_so(tmp_path):
    log = pbm_log(n_queries=20, sessions=6, seed=1)
    path = tmp_path / "pairs.tsv"
    log.totals.to_csv(path, sep="\t", index=False)  # query, docid, impressions, clicks, doc: no positions
    out = tmp_path / "m.ltrenc"
    result = _invoke("train-encoder", path, "--debias", "ipw", "--out", out, *FAST)
    assert result.exit_code == 0, result.output
    assert "position bias cannot be corrected" in result.output
    record = Encoder.load(out).training["clicks"]
    assert record["debias"] == "none" and record["requested"] == "ipw" and not record["has_positions"]


@pytest.mark.parametrize(
    "extra, fragments",
    [
        (["--debias", "ipw", "--loss", "hinge"], ["--debias trains with --loss softmax or generalized, not hinge"]),
        (["--debias", "pbm", "--model", "deepmatch"], ["--model deepmatch has no --loss"]),
        (["--debias", "ipw", "--soft-labels", "linear"], ["drop --soft-labels"]),
        (["--clip", "0.1"], ["--clip goes with --debias"]),
        (["--debias", "ipw", "--columns", "query=q"], ["--columns reads a pairs table"]),
        (["--debias", "ipw", "--clip", "0"], ["--clip"]),
    ],
)
def test_train_encoder_bad_click_options(files, tmp_path, extra, fragments):
    log, docs = files
    out = tmp_path / "m.ltrenc"
    one_line_error(_invoke("train-encoder", log, "--docs", docs, "--out", out, *FAST, *extra), *fragments)
    assert not out.exists()


def test_train_encoder_bad_propensity_file_names_its_line(files, tmp_path):
    log, docs = files
    curve, out = tmp_path / "curve.csv", tmp_path / "m.ltrenc"
    curve.write_text("position,propensity\n1,1\n2,1.5\n")
    result = _invoke(
        "train-encoder", log, "--docs", docs, "--debias", "ipw", "--propensity", curve, "--out", out, *FAST
    )
    one_line_error(result, f"{curve}:3: propensity '1.5' is not a probability")
    assert not out.exists()


SPEC_FAST = ["--encoder-option", "epochs=1", "--encoder-option", "batch_size=64", "--encoder-option", "threads=1"]


@pytest.mark.parametrize("debias", ["ipw", "none"])
def test_train_encoder_spec_trains_on_the_click_log_as_ablate_does(files, tmp_path, debias):
    log, docs = files
    out = tmp_path / "m.ltrenc"
    args = ["train-encoder", log, "--docs", docs, "--debias", debias, "--clip", "0.1", "--spec", "dssm:generalized"]
    result = _invoke(*args, *SPEC_FAST, "--out", out)
    assert result.exit_code == 0, result.output
    assert "encoders train on the clicks of" in result.output and "position bias: " in result.output
    record = Encoder.load(out).training["clicks"]  # the bundle (and so its extracted columns' pins) say what trained it
    assert record["debias"] == debias and record["has_positions"]
    if debias == "ipw":
        assert record["clip"] == 0.1 and len(record["propensity"]["values"]) == 10


@pytest.mark.parametrize(
    "extra, fragments",
    [
        (["--debias", "ipw", "--spec", "dssm:hinge"], ["--click-log trains encoders with the softmax or generalized"]),
        (["--debias", "ipw", "--spec", "sbert"], ["no --encoder is trained"]),
        (["--debias", "ipw", "--spec", "dssm", "--columns", "query=q"], ["--columns reads a pairs table"]),
        (["--clip", "0.1", "--spec", "dssm"], ["--clip goes with --debias"]),
        (["--debias", "ipw", "--spec", "dssm", "--epochs", "2"], ["--epochs does not go with --spec"]),
    ],
)
def test_train_encoder_spec_bad_click_options(files, tmp_path, extra, fragments):
    log, docs = files
    out = tmp_path / "m.ltrenc"
    one_line_error(_invoke("train-encoder", log, "--docs", docs, "--out", out, *extra), *fragments)
    assert not out.exists()


def test_train_encoder_spec_needs_the_documents_texts(files, tmp_path):
    log, _ = files
    out = tmp_path / "m.ltrenc"
    result = _invoke("train-encoder", log, "--debias", "ipw", "--spec", "dssm:generalized", "--out", out)
    one_line_error(result, "does not give the documents' texts", "--docs")
    assert not out.exists()
