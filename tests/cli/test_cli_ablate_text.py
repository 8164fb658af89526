"""``ltrfeat ablate --pairs``: text mode with cross-fitted encoders on a generated world."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from ltrfeat.cli.main import cli
from ltrfeat.datasets.synth import generate_world, write_world
from builders import TINY_ABLATE as TINY
from builders import reproducible_report

DATA = Path(__file__).resolve().parents[2] / "data"


def run(*args):
    return CliRunner().invoke(cli, [str(a) for a in args])


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    out = tmp_path_factory.mktemp("world")
    write_world(generate_world(seed=3, n_queries=90, n_docs=300, n_click_queries=200), out)
    return out


def test_text_mode_writes_cross_fitting_scheme_and_is_reproducible(world, tmp_path):
    args = ["ablate", "--pairs", world / "judged.tsv", "--encoder", "dssm:generalized", *TINY]
    first = run(*args, "--report", tmp_path / "a")
    assert first.exit_code == 0, first.output
    assert "cross-fitting dssm-generalized over 3 query folds (6 encoder trainings)" in first.output
    report = json.loads((tmp_path / "a" / "report.json").read_text())
    scheme = report["config"]["cross_fitting"]
    assert scheme["outer_folds"] == 3 and scheme["inner_parts"] == 2 and "out-of-fold" in scheme["description"]
    names = {r["feature_set"] for r in report["results"]}
    assert {"lexical", "lexical+dssm-generalized", "dssm-generalized_doc_cos"} <= names
    assert "No encoder scores a query it was trained on" in (tmp_path / "a" / "report.md").read_text()
    stages = report["stage_seconds"]
    assert set(stages) >= {"reading", "lexical features", "encoder columns", "rankers", "tests", "encoders"}
    dssm = stages["encoders"]["dssm-generalized"]
    assert dssm["trainings"] == 6 and dssm["from_cache"] == 0 and len(dssm["jobs"]) == 6
    assert "without fold1+fold2" in dssm["jobs"] and "without fold3" in dssm["jobs"]
    assert 0 < dssm["train_seconds"] <= stages["encoder columns"]
    assert stages["teacher_encoding"] == {"seconds": 0.0, "texts": 0}  # no MiniLM in this run
    md = (tmp_path / "a" / "report.md").read_text()
    assert "**Time: reading " in md and "dssm-generalized " in md and "in 6 trainings" in md
    second = run(*args, "--report", tmp_path / "b")
    assert second.exit_code == 0, second.output
    assert reproducible_report(tmp_path / "b" / "report.json") == reproducible_report(tmp_path / "a" / "report.json")


def test_separate_click_table_trains_the_encoders(world, tmp_path):
    result = run(
        "ablate",
        "--pairs",
        world / "judged.tsv",
        "--train-pairs",
        world / "clicks.tsv",
        "--train-columns",
        "label=clicks",
        "--encoder",
        "dssm:generalized",
        "--encoder-option",
        "soft_labels=clicks",
        *TINY,
        "--report",
        tmp_path / "r",
    )
    assert result.exit_code == 0, result.output
    scheme = json.loads((tmp_path / "r" / "report.json").read_text())["config"]["cross_fitting"]
    assert "separate training table" in scheme["encoder_training_data"]


@pytest.mark.parametrize(
    "args, message",
    [
        ([], "needs at least one --encoder"),
        (["--encoder", "bert"], "unknown encoder 'bert'"),
        (["--encoder", "clsm", "--base", "1"], "--base/--neural are for --folds"),
        (["--encoder", "clsm", "--folds", "x"], "exactly one of --folds"),
    ],
)
def test_text_mode_usage_errors(world, tmp_path, args, message):
    result = run("ablate", "--pairs", world / "judged.tsv", *args, "--report", tmp_path / "r")
    assert result.exit_code == 2 and message in result.output
    assert not (tmp_path / "r").exists()


@pytest.mark.slow
@pytest.mark.parametrize("semantic", [True, False])
def test_planted_semantic_signal_is_significant_and_control_is_not(tmp_path, semantic):
    out = tmp_path / "world"
    write_world(generate_world(seed=1, n_queries=240, n_docs=800, n_click_queries=800, semantic=semantic), out)
    result = run(
        "ablate", "--pairs", out / "judged.tsv", "--encoder", "dssm:generalized", "--quick", "--report", tmp_path / "r"
    )
    assert result.exit_code == 0, result.output
    report = json.loads((tmp_path / "r" / "report.json").read_text())
    lift = [c for c in report["comparisons"] if c["variant"] == "lexical+dssm-generalized"]
    significant = [c["metric"] for c in lift if c["p_holm"] < 0.05]
    if semantic:
        assert significant, lift
    else:
        assert not significant, lift


def test_span_pretrained_dssm_is_compared_with_minilm_in_the_report(world, tmp_path):
    res = run(
        "ablate", "--pairs", world / "judged.tsv", "--encoder", "dssm:generalized+spans", "--encoder", "sbert",
        *TINY, "--encoder-option", "spans_per_doc=2", "--encoder-option", "span_epochs=1", "--no-select",
        "--collection", world / "docs.tsv", "--collection-field", "description",
        "--report", tmp_path / "r",
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    report = json.loads((tmp_path / "r" / "report.json").read_text())
    scheme = report["config"]["cross_fitting"]["description"]
    n_texts = int(re.search(r"query-like spans of (\d+) distinct document texts \(the pairs' documents and", scheme)[1])
    assert n_texts > 500  # the descriptions of --collection besides the judged documents' titles
    jobs = report["stage_seconds"]["encoders"]["dssm-generalized-spans"]["jobs"]
    assert "span pre-training" in jobs and len(jobs) == 7
    against = {(c["baseline"], c["variant"], c["metric"]) for c in report["comparisons"]}
    assert ("sbert_doc_cos", "dssm-generalized-spans_doc_cos", "ndcg@1") in against
    assert ("lexical+sbert", "lexical+dssm-generalized-spans", "ndcg@1") in against
    assert ("lexical+sbert", "lexical+all", "ndcg@1") not in against  # only single neural features meet MiniLM
    assert "against the zero-shot MiniLM feature (sbert), ndcg@1, Holm-adjusted with the report:" in res.output
    assert "dssm-generalized-spans_doc_cos " in res.output.split("against the zero-shot MiniLM")[1]
    assert "against the zero-shot MiniLM feature" in (tmp_path / "r" / "report.md").read_text()


def test_a_collection_needs_a_spans_encoder(world, tmp_path):
    res = run(
        "ablate", "--pairs", world / "judged.tsv", "--encoder", "dssm:generalized", "--collection",
        world / "docs.tsv", "--report", tmp_path / "r",
    )  # fmt: skip
    assert res.exit_code == 2 and "--collection is read by +spans / +spans+teacher encoders only" in res.output


@pytest.mark.parametrize("teacher", [True, False])
def test_bare_clsm_on_few_judged_queries_is_span_pretrained_and_says_so(teacher):
    from ltrfeat.experiments.ablate import SPANS_BELOW_QUERIES, small_data_specs
    from ltrfeat.encoders.spec import EncoderSpec

    said = []
    texts = ["clsm", " dssm", "clsm:softmax", "sbert"]
    specs = small_data_specs(texts, [EncoderSpec.parse(t) for t in texts], 240, said.append, teacher=teacher)
    upgrade = "generalized-spans-teacher" if teacher else "generalized-spans"
    assert [s.name for s in specs] == [f"clsm-{upgrade}", f"dssm-{upgrade}", "clsm-softmax", "sbert"]
    assert all(s.pretrain is not None for s in specs[:2])
    assert len(said) == 2 and "240 judged queries" in said[0] and "clsm:softmax for the from-scratch" in said[0]
    assert ("write clsm:generalized+spans for no MiniLM" in said[0]) is teacher
    assert ("with the sbert extra installed it would be clsm:generalized+spans+teacher" in said[0]) is not teacher
    many = small_data_specs(["clsm"], [EncoderSpec.parse("clsm")], SPANS_BELOW_QUERIES, said.append, teacher=teacher)
    assert many[0].pretrain is None and len(said) == 2


def test_the_upgrade_asks_for_the_packaged_minilm(monkeypatch):
    from ltrfeat.experiments.ablate import small_data_specs
    from ltrfeat.encoders.spec import EncoderSpec
    from ltrfeat.encoders import sbert

    monkeypatch.setattr(sbert, "packaged_available", lambda: False)
    (spec,) = small_data_specs(["dssm"], [EncoderSpec.parse("dssm")], 240, lambda _: None)
    assert spec.name == "dssm-generalized-spans"
    monkeypatch.setattr(sbert, "packaged_available", lambda: True)
    (spec,) = small_data_specs(["dssm"], [EncoderSpec.parse("dssm")], 240, lambda _: None)
    assert spec.name == "dssm-generalized-spans-teacher"


def test_the_packaged_minilm_is_found_here():
    from ltrfeat.encoders.sbert import packaged_available

    assert packaged_available()  # make install has the sbert extra


def test_the_help_says_encoder_jobs_is_ignored_with_dask():
    result = CliRunner().invoke(cli, ["ablate", "--help"], terminal_width=400)
    assert result.exit_code == 0
    (line,) = [line for line in result.output.splitlines() if "--encoder-jobs" in line]
    assert "not --dask" in line  # in full (docs/ablate.md): "Ignored with --dask: every training is then a task ..."


@pytest.mark.parametrize("encoder", ["dssm", "clsm:softmax"])
def test_too_few_queries_for_the_encoders_validation_fail_before_any_training(tmp_path, monkeypatch, encoder):
    """Ten judged queries and the default validation share: the error comes before any encoder trains, and names
    the option that fixes it (and which option does what)."""
    import time

    import pandas as pd

    from ltrfeat.encoders import training_pairs

    def no_training(*args, **kwargs):
        raise AssertionError("an encoder started training")

    monkeypatch.setattr(training_pairs, "prepare_pairs", no_training)
    judged = pd.read_csv(DATA / "judged.tsv", sep="\t")
    judged[judged["qid"].isin(sorted(judged["qid"].unique())[:10])].to_csv(tmp_path / "small.tsv", sep="\t")
    started = time.perf_counter()
    result = run("ablate", "--pairs", tmp_path / "small.tsv", "--encoder", encoder, "--report", tmp_path / "r")
    assert time.perf_counter() - started < 5
    assert result.exit_code == 2, result.output
    error = result.output.strip().splitlines()[-1]
    assert error.startswith("error: ") and "cannot be split into training and validation" in error
    assert "--encoder-option val_fraction=0" in error and "--valid-fraction is the rankers'" in error
    assert not (tmp_path / "r").exists()
