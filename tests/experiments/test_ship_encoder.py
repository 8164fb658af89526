"""Shipping what an ablation recommends: out-of-fold features, the encoder trained as every fold trained it, the
verdict's commands."""

from __future__ import annotations

import hashlib
import json

import numpy as np
import pytest
from click.testing import CliRunner

from builders import StubTrainer, write_judged_pairs
from ltrfeat.cli.main import cli
from ltrfeat.core.errors import LtrfeatError, ParameterError
from ltrfeat.core.letor import read_letor
from ltrfeat.experiments.ablate import AblateSettings, FoldsSource, PairsSource, ablate_folds, ablate_pairs
from ltrfeat.experiments.ablate import train_like_ablate
from ltrfeat.encoders.spec import EncoderSpec
from ltrfeat.experiments.verdict import verdict_lines
from ltrfeat.features.corpus import CorpusStats
from ltrfeat.encoders.spec import encoder_kind_of
from ltrfeat.rankers.selection import SelectionConfig


class _ByTable:
    """A stub encoder whose scores name the queries it was trained on, so every training's column differs."""

    def __init__(self, table):
        digest = hashlib.sha256("|".join(sorted(set(table["query"]))).encode()).hexdigest()
        self.tag = int(digest[:6], 16) % 1000

    def similarity(self, queries, docs):
        return np.array([self.tag + len(d) / 100 for d in docs], dtype=np.float32)


@pytest.fixture(scope="module")
def shipped(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("ship")
    source = PairsSource(write_judged_pairs(tmp / "pairs.tsv", n_queries=18), encoders=("clsm:softmax",), k_folds=3)
    settings = AblateSettings(
        report_dir=tmp / "r",
        quick=True,
        selection=SelectionConfig(inner_folds=2),
        write_features=tmp / "ship",
        progress=False,
    )
    said: list[str] = []
    done = ablate_pairs(source, settings, say=said.append, trainer=StubTrainer(lambda spec, table: _ByTable(table)))
    return tmp, done, said


def test_write_features_holds_every_pair_once_with_its_out_of_fold_encoder_column(shipped):
    tmp, done, said = shipped
    features = read_letor(tmp / "ship" / "features.letor")
    assert any(line.startswith("wrote ") and "out-of-fold" in line for line in said)
    pairs = [(q, d) for q, d in zip(features.qid, features.docid)]
    assert len(pairs) == len(set(pairs)) == 18 * 4
    assert features.feature_map.names == done.folds[0].test.feature_map.names
    column = features.feature_map.column_of("clsm-softmax_doc_cos")
    for fold in done.folds:  # each pair's value is that of the fold where its query was a test query
        rows = {(q, d): i for i, (q, d) in enumerate(pairs)}
        got = features.X[[rows[(q, d)] for q, d in zip(fold.test.qid, fold.test.docid)]]
        np.testing.assert_array_equal(got, fold.test.X)
    assert len(set(np.floor(features.X[:, column]).tolist())) == 3  # three encoders, one per fold's test queries
    stats = CorpusStats.load(tmp / "ship" / "corpus.npz")
    assert list(stats.fields) == ["doc"] and stats.field_stats["doc"].n_docs == 18 * 4


def test_the_verdict_says_how_to_ship_the_set_and_its_encoders(shipped):
    tmp, done, _ = shipped
    verdict = done.summary.verdict
    lines = "\n".join(verdict_lines(verdict))
    written = str(tmp / "ship" / "features.letor")
    assert f"ltrfeat train-ranker {written} --features lexical" in lines and "DIR" not in lines.split("its encoders")[0]
    unwritten = "\n".join(verdict_lines(verdict | {"features_dir": None}))
    assert "--write-features DIR" in unwritten and "train-ranker DIR/features.letor --features lexical" in unwritten
    feature_set = verdict["recommended"].split(" / ")[0]
    if feature_set != "lexical":
        assert verdict["encoders"] == {"clsm-softmax": {"spec": "clsm:softmax", "trained": True, "transformer": False}}
        assert "train-encoder PAIRS --spec clsm:softmax --out clsm-softmax.ltrenc" in lines
        assert "--encoder clsm-softmax=clsm-softmax.ltrenc --corpus-stats DIR/corpus.npz" in lines
    # a set holding the encoder names it; LETOR folds (no cross-fitting) keep the generic line
    with_encoder = verdict | {"encoders": {"clsm-softmax": {"spec": "clsm:softmax", "trained": True}}}
    assert "--features lexical,encoder:clsm-softmax --select" in "\n".join(verdict_lines(with_encoder))
    zero_shot = verdict | {"encoders": {"sbert": {"spec": "sbert", "trained": False}}}
    text = "\n".join(verdict_lines(zero_shot))
    assert "train-encoder" not in text and "serve --ranker MODEL --encoder sbert --corpus-stats" in text
    letor = "\n".join(verdict_lines(verdict | {"encoders": None}))
    assert "train-ranker TRAIN --valid VALID --select" in letor and "write-features" not in letor


def test_write_features_is_for_text_mode(tmp_path):
    settings = AblateSettings(report_dir=tmp_path / "r", write_features=tmp_path / "f", progress=False)
    with pytest.raises(ParameterError, match="--write-features is for --pairs"):
        ablate_folds(FoldsSource(tmp_path, base="1-3", neural={"x": "x_doc_cos"}), settings)


@pytest.mark.parametrize(
    "text, canonical",
    [
        ("clsm", "clsm:softmax"),
        ("clsm:generalized+spans+teacher", "clsm:generalized+spans+teacher"),
        ("dssm:hinge+rbm@cosine", "dssm:hinge+rbm@cosine"),
        ("sbert-ft:generalized", "sbert-ft:generalized"),
        ("sbert", "sbert"),
        ("clsm:generalized+init=/tmp/a b.ltrenc", "clsm:generalized+init=/tmp/a b.ltrenc"),
    ],
)
def test_a_spec_writes_back_as_the_ablation_reads_it(text, canonical):
    spec = EncoderSpec.parse(text)
    assert spec.text == canonical and EncoderSpec.parse(spec.text) == spec


def test_an_ablation_encoder_name_is_an_extract_and_serve_name():
    assert encoder_kind_of("clsm-generalized-spans-teacher").name == "clsm"
    assert encoder_kind_of("sbert-ft-generalized").name == "sbert-ft"
    assert encoder_kind_of("clsm--x") is None and encoder_kind_of("clsm-") is None


def test_train_like_ablate_reuses_the_ablations_pre_training_and_its_own_result(tmp_path):
    pairs = write_judged_pairs(tmp_path / "pairs.tsv", n_queries=16)
    options = {"epochs": 1, "span_epochs": 1, "spans_per_doc": 2}
    source = PairsSource(pairs, encoders=("clsm:generalized+spans",), encoder_options=options)
    cache = tmp_path / "cache"
    encoder, spec = train_like_ablate(source, cache=cache, say=lambda line: None)
    assert spec.text == "clsm:generalized+spans" and encoder.training["keep_start"]["queries"] > 0
    (pretrained,) = (cache / "encoders").glob("clsm-generalized-spans-pretrain-*.ltrenc")
    made = {p: p.stat().st_mtime_ns for p in (cache / "encoders").glob("*.ltrenc")}
    again, _ = train_like_ablate(source, cache=cache, say=lambda line: None)
    assert {p: p.stat().st_mtime_ns for p in (cache / "encoders").glob("*.ltrenc")} == made  # nothing retrained
    np.testing.assert_array_equal(
        again.similarity(["query 1 red"], ["doc 1 2 red"]), encoder.similarity(["query 1 red"], ["doc 1 2 red"])
    )
    with pytest.raises(LtrfeatError, match="sbert is zero-shot: there is nothing to train"):
        train_like_ablate(PairsSource(pairs, encoders=("sbert",)), say=lambda line: None)
    with pytest.raises(ParameterError, match="give one encoder spec"):
        train_like_ablate(PairsSource(pairs, encoders=("clsm", "dssm")), say=lambda line: None)


def test_train_encoder_spec_command(tmp_path):
    pairs = write_judged_pairs(tmp_path / "pairs.tsv", n_queries=16)
    run = CliRunner().invoke
    out = tmp_path / "e.ltrenc"
    done = run(
        cli,
        [
            "train-encoder",
            str(pairs),
            "--spec",
            "dssm:generalized",
            "--encoder-option",
            "epochs=1",
            "--out",
            str(out),
            "--json",
        ],
    )
    assert done.exit_code == 0, done.output
    summary = json.loads(done.output.strip().splitlines()[-1])
    assert summary["spec"] == "dssm:generalized" and summary["out"] == str(out) and out.exists()
    for extra, message in (
        (["--model", "dssm"], "--model does not go with --spec"),
        (["--epochs", "3"], "--epochs does not go with --spec"),
        (["--from-docs", str(pairs)], "--from-docs does not go with --spec"),
    ):
        bad = run(cli, ["train-encoder", str(pairs), "--spec", "dssm", *extra, "--out", str(tmp_path / "x.ltrenc")])
        assert bad.exit_code == 2 and message in bad.output
        assert not (tmp_path / "x.ltrenc").exists()
    bad = run(cli, ["train-encoder", "--spec", "dssm", "--out", str(tmp_path / "x.ltrenc")])
    assert bad.exit_code == 2 and "--spec trains on PAIRS: give the ablation's --pairs table" in bad.output
