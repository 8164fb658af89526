"""Which folds' fine-tunings kept their starting model travels from each training's record into the report: report.json,
report.md, report.html and the verdict in words (also for a report read back from disk)."""

from __future__ import annotations

import json

import numpy as np

from builders import make_pairs, StubTrainer, write_judged_pairs
from ltrfeat.experiments.ablate import AblateSettings, PairsSource, ablate_pairs
from ltrfeat.encoders.spec import EncoderSpec
from ltrfeat.experiments._starting_points import ContinuedStart
from ltrfeat.experiments._training_plan import Training
from ltrfeat.experiments.crossfit import crossfit_columns, kept_starts
from ltrfeat.experiments.fold_plans import plan_folds
from ltrfeat.experiments.in_words import kept_start_words, summary_in_words
from ltrfeat.core.stages import StageProfile
from ltrfeat.encoders.training import train_encoder


def _record(kept: bool) -> dict:
    return {
        "kept": kept,
        "margin": 1.0,
        "start_ndcg@10": 0.8,
        "best_epoch": 1,
        "best_ndcg@10": 0.79 if kept else 0.9,
        "mean_diff": -0.01 if kept else 0.1,
        "se": 0.02,
        "queries": 4,
    }


class _Stub:
    """A 'fine-tuned' encoder whose training kept its start unless it was trained on query 0 and query 1."""

    def __init__(self, table):
        queries = set(table["query"])
        self.training = {"keep_start": _record(not {"query 0 red", "query 1 red"} <= queries)}

    @staticmethod
    def similarity(queries, docs):
        return np.array([len(d) for d in docs], dtype=float)


def test_the_report_names_the_folds_that_kept_the_start(tmp_path):
    source = PairsSource(  # the double trains every encoder afresh: no outer training continues an inner one
        write_judged_pairs(tmp_path / "pairs.tsv"),
        encoders=("sbert-ft", "clsm:softmax"),
        k_folds=3,
        continue_outer=False,
    )
    settings = AblateSettings(report_dir=tmp_path / "r", quick=True, selection=None, progress=False)
    done = ablate_pairs(source, settings, say=lambda _: None, trainer=StubTrainer(lambda spec, table: _Stub(table)))
    tested = {f.name: set(f.test.qid) for f in done.folds}
    expected = [name for name, qids in tested.items() if {"q0", "q1"} & qids]  # their encoders lack q0 or q1
    assert 0 < len(expected) < 3
    data = json.loads((tmp_path / "r" / "report.json").read_text())
    (entry,) = data["config"]["cross_fitting"]["keep_start"].values()  # a from-scratch CLSM has no start to keep
    assert entry["kept_in"] == expected and entry["start"] == "the zero-shot model" and entry["margin"] == 1.0
    assert entry["folds"][expected[0]] == {**_record(True), "start_kept": True}
    assert entry["inner"]["trainings"] == 3
    folds = ("fold " if len(expected) == 1 else "folds ") + " and ".join(name[4:] for name in expected)
    sentence = f"`sbert-ft-softmax` kept its start (the zero-shot model) in {len(expected)} of 3 folds ({folds})"
    assert sentence in summary_in_words(data)  # what ablate prints and `ltrfeat report DIR` words again
    markdown = (tmp_path / "r" / "report.md").read_text()
    assert sentence in markdown and f"{expected[0]} kept it (start .8000, epoch 1 .7900, gain -.0100" in markdown
    assert sentence in (tmp_path / "r" / "report.html").read_text()


def test_cross_fitted_init_trainings_that_only_get_worse_keep_the_start_and_the_cache_remembers(tmp_path):
    pairs = make_pairs()
    sizes = {"conv": 48, "out": 24}
    start, _ = train_encoder(pairs, model="clsm", sizes=sizes, epochs=4, lr=1e-2, batch_size=32, progress=False)
    start.save(tmp_path / "start.ltrenc")
    spec = EncoderSpec.parse(f"clsm:generalized+init={tmp_path / 'start.ltrenc'}")
    plans = plan_folds(pairs["qid"], k=3, seed=0)
    options = {"epochs": 1, "lr": 0.5, "batch_size": 32}
    run = lambda starts, profile=None: crossfit_columns(  # noqa: E731
        pairs, plans, [spec], options=options, cache=tmp_path / "c", progress=False, starts=starts, profile=profile
    )
    first: dict = {}
    columns = run(first)
    entry = first[spec.name]
    assert entry["kept_in"] == ["fold1", "fold2", "fold3"] and entry["inner"] == {"trainings": 3, "kept": 3}
    assert entry["start"] == "the +init bundle"
    for plan in plans:  # a kept start scores exactly as the start: the column is the +init encoder's
        rows = np.flatnonzero(pairs["qid"].isin(plan.test).to_numpy())
        expected = start.similarity(pairs["query"].iloc[rows].tolist(), pairs["doc"].iloc[rows].tolist())
        assert np.array_equal(columns[plan.name][f"{spec.name}_doc_cos"][rows], expected.astype(np.float32))
    again: dict = {}
    profile = StageProfile()
    run(again, profile)
    assert profile.encoders[spec.name]["from_cache"] == 6 and again == first  # scores and records from the cache


def test_a_continued_fold_kept_the_start_only_when_both_its_trainings_kept_it():
    spec = EncoderSpec.parse("sbert-ft:generalized")

    def training(name, record, start=None, outer=None):
        return Training(spec, "c", name, None, {}, start, {}, {}, outer=outer, record={"keep_start": record})

    stopped = {"checkpoints": 2, "planned_checkpoints": 8, "steps": 24, "planned_steps": 96}
    inner_kept, inner_replaced = training("a", _record(True) | stopped), training("b", _record(False))
    trainings = [
        inner_kept,
        inner_replaced,
        training("f1", _record(True), ContinuedStart(inner_replaced, trainer=None, seed=0, cache=None), "fold1"),
        training("f2", _record(True), ContinuedStart(inner_kept, trainer=None, seed=0, cache=None), "fold2"),
        training("f3", _record(False), ContinuedStart(inner_kept, trainer=None, seed=0, cache=None), "fold3"),
    ]
    entry = kept_starts([spec], trainings, {})[spec.name]
    assert [entry["folds"][f]["start_kept"] for f in ("fold1", "fold2", "fold3")] == [False, True, False]
    assert entry["kept_in"] == ["fold2"] and entry["inner"] == {"trainings": 2, "kept": 1}
    (words,) = kept_start_words({"keep_start": {spec.name: entry}}, per_fold=True)
    assert "kept its start (the zero-shot model) in 1 of 3 folds (fold 2)" in words
    assert "fold1 replaced it: the inner encoder replaced it (start .8000, epoch 1 .9000, gain +.1000" in words
    assert "the training continuing it kept the inner encoder (start .8000, epoch 1 .7900" in words
    # where each training stopped: 2 of 8 validation checkpoints (a training that does not beat its start)
    stop = "stopped at checkpoint 2 of 8, 24 of 96 steps"
    assert f"inner encoder kept it (start .8000, epoch 1 .7900, gain -.0100 ± .0200 SE over 4 queries; {stop})" in words
