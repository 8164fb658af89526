"""``--deployable ENGINE``: what the verdict says to ship trains on features the engine computes, and exports."""

from __future__ import annotations

import functools

import json
import shlex
from pathlib import Path

import pytest
from click.testing import CliRunner

from ltrfeat.cli.main import cli
from ltrfeat.core.dataset import Feature, FeatureMap
from ltrfeat.experiments.feature_sets import plan_feature_sets
from ltrfeat.experiments.verdict import verdict_lines
from ltrfeat.export.plugin_features import engine_features, uncomputable
from builders import TINY_ABLATE

DATA = Path(__file__).resolve().parents[2] / "data"
TINY = [*TINY_ABLATE, "--inner-folds", "2"]


def run(*args):
    return CliRunner().invoke(cli, [str(a) for a in args])


@pytest.fixture(scope="module")
def ablated(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("deployable")
    result = run(
        "ablate", "--pairs", DATA / "judged.tsv", "--encoder", "dssm:softmax", *TINY, "--quick",
        "--deployable", "es-ltr", "--write-features", tmp / "features", "--report", tmp / "report",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    return tmp, result.output


def _commands(lines) -> list[str]:
    return [line.strip() for line in lines if line.strip().startswith("ltrfeat ")]


def _run_verbatim(command: str, cwd: Path, monkeypatch) -> str:
    monkeypatch.chdir(cwd)
    argv = shlex.split(command)
    assert argv[0] == "ltrfeat"
    result = CliRunner().invoke(cli, argv[1:])
    assert result.exit_code == 0, f"{command}\n{result.output}"
    return result.output


def test_the_ablation_leaves_out_what_the_engine_cannot_compute(ablated):
    tmp, output = ablated
    assert "--deployable es-ltr: left out 6 of the 20 features of the lexical set: tfidf_sum_doc" in output
    report = json.loads((tmp / "report" / "report.json").read_text())
    for feature_set in report["config"]["feature_sets"]:
        assert not uncomputable(feature_set["columns"], target="es-ltr", encoders=["dssm-softmax"]), feature_set
    assert "trigram_cos_doc" not in {s["name"] for s in report["config"]["feature_sets"]}


def test_the_report_records_the_deploy_target(ablated):
    """report.json's verdict and report.md say where the ablation's --deployable ships, as the printed verdict does."""
    tmp, output = ablated
    assert json.loads((tmp / "report" / "report.json").read_text())["verdict"]["deploy_to"] == "es-ltr"
    head = "to ship on es-ltr: the same rule chooses among the candidates es-ltr can run"
    assert head in output and head in (tmp / "report" / "report.md").read_text()


@pytest.mark.parametrize("engine", ["es-ltr", "opensearch-ltr"])
def test_the_verdicts_commands_train_and_export_as_printed(ablated, engine, tmp_path, monkeypatch):
    tmp, output = ablated
    if engine == "es-ltr":  # as the ablation printed them
        commands = _commands(output.splitlines())
    else:  # the same ablation's verdict for the other engine, with the encoder in the set to ship
        verdict = json.loads((tmp / "report" / "report.json").read_text())["verdict"]
        encoder = {"dssm-softmax": {"spec": "dssm:softmax", "trained": True, "transformer": False}}
        commands = _commands(verdict_lines(verdict | {"deploy_to": engine, "encoders": encoder}))
    train, export = [c for c in commands if c.startswith(("ltrfeat train-ranker", "ltrfeat export-ranker"))]
    assert f"--deployable {engine}" in train and f"--to {engine}" in export
    _run_verbatim(train, tmp_path, monkeypatch)
    printed = _run_verbatim(export, tmp_path, monkeypatch)
    assert "wrote ltr.json" in printed
    manifest = json.loads((tmp_path / "ltr.json.export.json").read_text())
    assert manifest["target"] == engine and not manifest["not_reproduced"]


def test_train_ranker_features_take_patterns_and_sources_as_ablate_does(ablated, tmp_path):
    tmp, _ = ablated
    features = tmp / "features" / "features.letor"
    for spec, expected in [
        ("bm25_*", ["bm25_doc"]),
        ("idf_*_doc,query_len", ["idf_sum_doc", "idf_min_doc", "idf_max_doc", "idf_mean_doc", "query_len"]),
        ("encoder:dssm-softmax", ["dssm-softmax_doc_cos"]),
    ]:
        result = run("train-ranker", features, "--features", spec, "--n-estimators", "5", "--out", tmp_path / "m.txt")
        assert result.exit_code == 0, result.output
        assert f"{len(expected)} features" in result.output, (spec, result.output)
    result = run("train-ranker", features, "--features", "nope_*", "--out", tmp_path / "m.txt")
    assert result.exit_code == 2 and "no feature name matches 'nope_*'" in result.output


def test_train_ranker_deployable_keeps_computable_features_and_says_when_none_is(ablated, tmp_path):
    tmp, _ = ablated
    features = tmp / "features" / "features.letor"
    result = run(
        "train-ranker", features, "--features", "lm_*,bm25_doc", "--deployable", "opensearch-ltr",
        "--n-estimators", "5", "--out", tmp_path / "m.txt",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "left out 3 of the 4 features of --features 'lm_*,bm25_doc': lm_dirichlet_doc, lm_jm_doc" in result.output
    assert "1 features" in result.output
    result = run(
        "train-ranker", features, "--features", "trigram_cos_doc,tfidf_sum_doc", "--deployable", "es-ltr",
        "--out", tmp_path / "n.txt",
    )  # fmt: skip
    assert result.exit_code == 2
    (line,) = result.output.strip().splitlines()
    assert line.startswith("error: es-ltr cannot compute any feature of --features 'trigram_cos_doc,tfidf_sum_doc'")
    assert not (tmp_path / "n.txt").exists()


def test_a_group_the_engine_cannot_compute_is_left_out_in_one_line():
    names = ["bm25_doc", "trigram_cos_doc", "deepmatch_doc_score", "clsm_doc_cos"]
    fmap = FeatureMap(
        [Feature(i + 1, n, "encoder:" + n.split("_")[0] if i > 1 else "lexical") for i, n in enumerate(names)]
    )
    said: list[str] = []
    sets = plan_feature_sets(
        fmap,
        base="bm25_doc,trigram_cos_doc",
        neural={"deepmatch": "deepmatch_doc_score", "clsm": "clsm_doc_cos"},
        deployable="es-ltr",
        engine_features=functools.partial(engine_features, target="es-ltr"),
        say=said.append,
    )
    assert [s.name for s in sets] == ["lexical", "lexical+clsm", "clsm_doc_cos", "bm25_doc"]
    assert sets[1].columns == ["bm25_doc", "clsm_doc_cos"]
    assert len(said) == 2 and said[1].startswith("--deployable es-ltr: set lexical+deepmatch left out: es-ltr cannot")
    assert "DeepMatch" in said[1]
