"""``ltrfeat.experiments.ablate``: the whole ablation as library calls, the one ``ltrfeat ablate`` makes."""

from __future__ import annotations

import re

import numpy as np
import pytest
from click.testing import CliRunner

from builders import planted_folds, reproducible_report, StubTrainer, write_folds, write_judged_pairs
from ltrfeat.cli.main import cli
from ltrfeat.core.errors import LtrfeatError
from ltrfeat.experiments.ablate import (
    DEFAULTS,
    QUICK,
    AblateSettings,
    FoldsSource,
    PairsSource,
    ablate_folds,
    ablate_pairs,
    pairs_folds,
    ranker_params,
    read_pairs_source,
)
from ltrfeat.experiments.pairs_input import CrossFitScheme, PairsFolds, PairsRead

RANKER = {"learning_rate": 0.1, "num_leaves": 7, "early_stopping_rounds": 10, "n_jobs": 1}  # as the options below


def test_ablate_folds_writes_the_report_the_command_writes(tmp_path):
    write_folds(tmp_path / "folds", planted_folds(n_folds=3, queries_per_fold=20), ext=".letor", sidecars=True)
    said = []
    settings = AblateSettings(
        report_dir=tmp_path / "lib", seeds=(0,), n_estimators=20, resamples=300, ranker_params=RANKER, progress=False
    )
    done = ablate_folds(
        FoldsSource(tmp_path / "folds", base="1-3", neural={"clsm": "clsm_title_cos"}), settings, say=said.append
    )
    assert said[0].startswith("plan: 3 folds, 0 encoders, 12 ranker runs; this machine: ")  # then the plan's lines
    assert said[-1] == (
        "3 folds x 4 feature sets (lexical, lexical+clsm, clsm_title_cos, bm25_title) x 1 seeds: 12 runs (plain LambdaMART)"
    )
    assert [f.name for f in done.folds] == ["Fold1", "Fold2", "Fold3"] and done.report_dir == tmp_path / "lib"
    args = ["ablate", "--folds", tmp_path / "folds", "--base", "1-3", "--neural", "clsm=clsm_title_cos", "--no-select"]
    args += [
        "--seeds",
        "0",
        "--n-estimators",
        "20",
        "--resamples",
        "300",
        "--num-leaves",
        "7",
        "--learning-rate",
        "0.1",
    ]
    args += ["--early-stopping-rounds", "10", "--threads", "1", "--report", tmp_path / "cli"]
    result = CliRunner().invoke(cli, [str(a) for a in args])
    assert result.exit_code == 0, result.output
    assert reproducible_report(tmp_path / "cli" / "report.json") == reproducible_report(
        tmp_path / "lib" / "report.json"
    )


def test_ablate_pairs_cross_fits_and_reports(tmp_path):
    stub = type("E", (), {"similarity": staticmethod(lambda q, d: np.array([len(x) for x in d], float))})()
    source = PairsSource(write_judged_pairs(tmp_path / "pairs.tsv"), encoders=("clsm:softmax",), k_folds=3)
    settings = AblateSettings(report_dir=tmp_path / "r", quick=True, selection=None, progress=False)
    said = []
    done = ablate_pairs(source, settings, say=said.append, trainer=StubTrainer(lambda spec, table: stub))
    assert said[0].startswith("plan: 3 folds, 1 encoders, ")
    assert said[said.index(next(x for x in said if x.startswith("dominant: "))) + 1] == (
        "cross-fitting clsm-softmax over 3 query folds (6 encoder trainings)"
    )
    assert done.folds[0].origin.startswith(f"query fold 1 of 3 of {tmp_path / 'pairs.tsv'}, encoder columns")
    config = done.result.config
    assert config["seeds"] == list(QUICK["seeds"]) and config["ranker_params"]["n_estimators"] == QUICK["n_estimators"]
    assert config["cross_fitting"]["encoder_options"] == {"epochs": 2, "sbert-ft.epochs": 1}
    assert "duplicates" in config and (tmp_path / "r" / "report.json").exists()


def test_text_mode_reads_and_cross_fits_into_typed_values(tmp_path):
    """read_pairs_source and pairs_folds return dataclasses; the scheme's report form keeps report.json's keys and
    order, and leaves out what is not report config (duplicates, fitted extractors, texts)."""
    stub = type("E", (), {"similarity": staticmethod(lambda q, d: np.array([len(x) for x in d], float))})()
    source = PairsSource(write_judged_pairs(tmp_path / "pairs.tsv"), encoders=("clsm:softmax",), k_folds=3)
    read = read_pairs_source(source, say=lambda m: None)
    assert isinstance(read, PairsRead) and read.collection is None and read.train_table is None
    assert [s.name for s in read.specs] == ["clsm-softmax"] and len(read.pairs) == 48
    assert set(read.duplicates) == {"pairs"}
    made = pairs_folds(
        source, quick=True, progress=False, say=lambda m: None, trainer=StubTrainer(lambda spec, table: stub)
    )
    assert isinstance(made, PairsFolds) and isinstance(made.scheme, CrossFitScheme)
    assert len(made.folds) == 3 and list(made.groups) == ["clsm-softmax"] and made.base.startswith("bm25_doc,")
    scheme = made.scheme
    assert scheme.duplicates == read.duplicates and scheme.lexical and set(scheme.texts) == {"query", "doc"}
    assert scheme.encoders == {"clsm-softmax": {"spec": "clsm:softmax", "trained": True, "transformer": False}}
    report = scheme.to_json()
    assert list(report)[-2:] == ["encoder_options", "encoders"] and list(report)[0] == "outer_folds"
    assert not {"duplicates", "lexical", "texts"} & set(report)


@pytest.mark.parametrize(
    "change, message",
    [
        ({"encoders": ()}, "needs at least one --encoder"),
        ({"encoders": ("clsm:softmax", "clsm:softmax")}, "each --encoder may be given once"),
        ({"collection": "docs.tsv"}, "--collection is read by +spans / +spans+teacher encoders only"),
        ({"lexical": ""}, "--lexical must name at least one lexical feature"),
    ],
)
def test_ablate_pairs_errors_are_one_line_library_errors(tmp_path, change, message):
    fields = {"encoders": ("clsm:softmax",)} | change
    source = PairsSource(write_judged_pairs(tmp_path / "pairs.tsv"), **fields)
    with pytest.raises(LtrfeatError, match=re.escape(message)):
        ablate_pairs(source, AblateSettings(report_dir=tmp_path / "r", progress=False))
    assert not (tmp_path / "r").exists()


def test_settings_resolve_the_command_defaults():
    plain, quick = AblateSettings(report_dir="r"), AblateSettings(report_dir="r", quick=True, seeds=(4,))
    assert plain.resolved("seeds") == DEFAULTS["seeds"] and plain.resolved("resamples") == 10_000
    assert quick.resolved("seeds") == (4,) and quick.resolved("n_estimators") == 50
    xgb = AblateSettings(report_dir="r", engine="xgboost", ranker_params={"n_jobs": 1, "params": {"subsample": 1}})
    assert ranker_params(xgb) == {"n_estimators": 500, "n_jobs": 1, "params": {"subsample": 1}}
    with pytest.raises(LtrfeatError, match="LETOR mode needs --base"):
        FoldsSource("folds", base="1-3", neural={})


@pytest.mark.parametrize(
    "change, message",
    [
        ({"debias": "ipw"}, "--debias goes with --click-log"),
        ({"propensity_method": "em"}, "--propensity goes with --click-log"),
        ({"click_log": "log.tsv", "train_pairs": "clicks.tsv"}, "--click-log and --train-pairs both name"),
        ({"click_log": "log.tsv", "debias": "dcm"}, "debias"),
        ({"click_log": "log.tsv", "clip": 0.0}, "clip"),
    ],
)
def test_click_log_settings_are_checked_when_made(change, message):
    with pytest.raises(LtrfeatError, match=re.escape(message)):
        PairsSource("pairs.tsv", encoders=("dssm:generalized",), **change)


def _positioned_folds(root):
    """Planted folds whose training files carry a ``.position`` file (1..n within each query: click data)."""
    import dataclasses

    import pandas as pd

    folds = []
    for fold in planted_folds(n_folds=3, queries_per_fold=12):
        position = pd.Series(fold.train.qid).groupby(fold.train.qid, sort=False).cumcount().to_numpy() + 1
        folds.append(dataclasses.replace(fold, train=dataclasses.replace(fold.train, position=position)))
    write_folds(root, folds, ext=".letor", sidecars=True)
    assert (root / "Fold1" / "train.letor.position").exists()
    return root


def test_a_folds_ablation_on_positioned_clicks_says_the_engine_corrects_them(tmp_path):
    from ltrfeat.rankers.selection import SelectionConfig

    folds = _positioned_folds(tmp_path / "folds")
    source = FoldsSource(folds, base="1-3", neural={"clsm": "clsm_title_cos"})
    said = []
    settings = AblateSettings(
        report_dir=tmp_path / "r", seeds=(0,), n_estimators=10, resamples=100, ranker_params=RANKER, progress=False
    )
    ablate_folds(source, settings, say=said.append)
    assert (
        "the training file of fold Fold1 (and 2 more) has display positions (.position: click data): LambdaMART "
        "trains with LightGBM lambdarank with Dataset position" in "\n".join(said)
    )
    # linear and best-single candidates (and inner CV on clicks) cannot honour positions: refused before any run
    selecting = AblateSettings(report_dir=tmp_path / "s", selection=SelectionConfig(), progress=False)
    with pytest.raises(LtrfeatError, match="has display positions .*linear, best-single and boost-best candidates"):
        ablate_folds(source, selecting, say=said.append)
    assert not (tmp_path / "s").exists()


def test_ablate_command_refuses_model_selection_on_positioned_folds(tmp_path):
    folds = _positioned_folds(tmp_path / "folds")
    args = ["ablate", "--folds", folds, "--base", "1-3", "--neural", "clsm=clsm_title_cos", "--report", tmp_path / "r"]
    result = CliRunner().invoke(cli, [str(a) for a in args])
    assert result.exit_code == 2 and not (tmp_path / "r").exists()
    lines = result.output.strip().splitlines()
    assert lines[-1].startswith("error: ") and "give --no-select" in lines[-1], result.output
