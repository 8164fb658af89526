"""The shape of the +spans pre-training's spans: 1-4 words from titles as before, longer spans for long queries
over long documents (``span_min_words`` / ``span_max_words``), the span held out of its positive (``span_hold_out``),
the whole documents as spans too (``span_whole``); ``+spans+teacher`` over long documents takes 8-24-word spans and
the whole documents by default."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ltrfeat.core.errors import ParameterError
from ltrfeat.experiments.crossfit import CrossFitConfig
from ltrfeat.encoders.spec import EncoderSpec
from ltrfeat.experiments._starting_points import StartingPoint
from ltrfeat.experiments.span_settings import LONG_DOC_FOLD_DISTILL, long_documents
from ltrfeat.encoders.weak import span_pairs

DOCS = pd.read_csv(
    Path(__file__).resolve().parents[2] / "data" / "docs.tsv", sep="\t", dtype=str, keep_default_na=False
)


def _digest(frame: pd.DataFrame) -> str:
    return hashlib.sha256(frame.to_csv(index=False).encode()).hexdigest()


def test_default_spans_are_as_before():
    """Digests of the spans the sampler drew before it had ``min_words`` (main at 4a60e09)."""
    titles = span_pairs(DOCS.head(200), field="title", per_doc=4, negatives=2, seed=3)
    assert _digest(titles) == "0145353d290a08ab9d67caef7aae447671a6ee700ce69a8d56891ba851f7c230"
    descriptions = span_pairs(DOCS.head(200), field="description", per_doc=3, negatives=2, seed=3)
    assert _digest(descriptions) == "c476aa84a28827ccb2b37c1dc86a1431a73ef511d8c29cc8d92ec20c4dd157e0"
    explicit = span_pairs(DOCS.head(200), field="title", per_doc=4, min_words=1, max_words=4, negatives=2, seed=3)
    pd.testing.assert_frame_equal(titles, explicit)


@settings(max_examples=40, deadline=None)
@given(
    st.lists(
        st.lists(st.sampled_from(["oak", "desk", "with", "2", "drawers", "black"]), min_size=1, max_size=30),
        min_size=2,
        max_size=6,
    ),
    st.integers(1, 12),
    st.integers(0, 12),
    st.integers(0, 2**32 - 1),
)
def test_spans_are_runs_of_their_document_within_the_lengths(texts, low, extra, seed):
    docs = pd.DataFrame({"docid": [f"d{i}" for i in range(len(texts))], "title": [" ".join(t) for t in texts]})
    if (docs["title"].str.contains("[a-z]")).sum() < 2:
        return
    high = low + extra
    pairs = span_pairs(docs, per_doc=3, min_words=low, max_words=high, negatives=0, seed=seed)
    held = span_pairs(docs, per_doc=3, min_words=low, max_words=high, hold_out=True, negatives=0, seed=seed)
    assert held["query"].tolist() == pairs["query"].tolist()  # the same spans, other positives
    own = dict(zip(docs["docid"], docs["title"]))
    for qid, span, rest in zip(pairs["qid"], pairs["query"], held["doc"]):
        words = own[qid.split("#")[0]].split()
        n = len(span.split())
        assert min(low, len(words)) <= n <= high
        starts = [i for i in range(len(words) - n + 1) if words[i : i + n] == span.split()]
        assert starts
        cut = [" ".join(words[:i] + words[i + n :]) for i in starts]
        assert rest in cut or (rest == own[qid.split("#")[0]] and not any(c.isalpha() for c in " ".join(cut)))


def test_span_lengths_for_long_documents_and_refusals():
    pairs = span_pairs(DOCS.head(100), field="description", per_doc=2, min_words=8, max_words=24, negatives=0)
    assert pairs["query"].str.split().str.len().between(8, 24).all()
    with pytest.raises(ValueError, match="min_words <= max_words"):
        span_pairs(DOCS.head(10), min_words=5, max_words=4)
    spec = EncoderSpec.parse("clsm:generalized+spans")
    with pytest.raises(ParameterError, match="span_min_words=9 > span_max_words=4"):
        StartingPoint(spec, ["a b"], options={"span_min_words": 9}, seed=0, cache=None)
    CrossFitConfig(options={"span_hold_out": 0})._check()
    CrossFitConfig(options={"clsm.span_hold_out": 1})._check()
    for bad in ({"span_hold_out": 2}, {"span_min_words": 0}, {"span_max_words": True}):
        with pytest.raises(ParameterError, match="whole numbers"):
            CrossFitConfig(options=bad)._check()


def test_pre_training_key_is_unchanged_at_the_default_lengths():
    """Default span lengths leave the key as it was: ``+spans`` as main 4a60e09 gave it (caches of earlier runs stay
    valid), ``+spans+teacher`` as its defaults (vector distillation in batches of 1,024, distilled towers) give it; other
    lengths, other keys."""
    titles = DOCS["title"].head(50).tolist()
    expected = {
        "clsm:generalized+spans": "6668f4cf588d172f121015ac",
        "dssm:generalized+spans+teacher": "6b87731bdc8f44d9025bd9c0",
    }
    for text, key in expected.items():
        spec = EncoderSpec.parse(text)
        for options in ({}, {"span_min_words": 1, "span_max_words": 4, "span_hold_out": 0}):
            assert StartingPoint(spec, titles, options={"span_epochs": 2} | options, seed=0, cache=None).key == key
        for other in ({"span_min_words": 8, "span_max_words": 24}, {"span_hold_out": 1}):
            assert StartingPoint(spec, titles, options={"span_epochs": 2} | other, seed=0, cache=None).key != key


def test_pre_training_key_names_the_distillation_loss_and_batch_size():
    titles = DOCS["title"].head(50).tolist()
    spec = EncoderSpec.parse("clsm:generalized+spans+teacher")
    keys = {
        StartingPoint(spec, titles, options=options, seed=0, cache=None).key
        for options in ({}, {"distill_loss": "kl"}, {"distill_batch_size": 256}, {"distill_loss": "mse"})
    }
    assert len(keys) == 4
    given = {"distill_loss": "vector", "distill_batch_size": 1024}  # the defaults
    default = StartingPoint(spec, titles, options=given, seed=0, cache=None)
    assert default.key == StartingPoint(spec, titles, options={}, seed=0, cache=None).key
    assert default.distill_settings["distill_loss"] == "vector" and "distill_loss" not in default.options


def test_whole_adds_each_document_once_as_its_own_span():
    plain = span_pairs(DOCS.head(50), field="description", per_doc=3, negatives=0, seed=1)
    whole = span_pairs(DOCS.head(50), field="description", per_doc=3, whole=True, negatives=0, seed=1)
    added = whole[~whole["qid"].isin(plain["qid"])]
    pd.testing.assert_frame_equal(whole[whole["qid"].isin(plain["qid"])].reset_index(drop=True), plain)
    assert added["qid"].str.endswith("#0").all() and len(added) == 50
    assert (added["query"] == added["doc"]).all() and set(added["query"]) == set(DOCS["description"].head(50))
    short = pd.DataFrame({"docid": ["a", "b"], "title": ["oak desk", "steel shelf"]})  # a span may be all of it
    assert span_pairs(short, per_doc=5, whole=True, negatives=0)["query"].value_counts().max() == 1


def test_spans_teacher_over_long_documents_takes_long_spans_and_the_whole_documents_by_default():
    descriptions, titles = DOCS["description"].head(50).tolist(), DOCS["title"].head(50).tolist()
    assert long_documents(descriptions) and not long_documents(titles) and not long_documents([])

    def start(text, texts, **options):
        return StartingPoint(EncoderSpec.parse(text), texts, options=options, seed=0, cache=None)

    def shape(*args, **options):
        settings = start(*args, **options).span_settings
        return settings["span_min_words"], settings["span_max_words"], settings["span_whole"]

    assert shape("clsm:generalized+spans+teacher", descriptions) == (8, 24, 1)
    assert shape("clsm:generalized+spans+teacher", descriptions, span_whole=0) == (8, 24, 0)
    assert shape("clsm:generalized+spans+teacher", descriptions, span_max_words=6) == (1, 6, 1)
    assert shape("clsm:generalized+spans+teacher", descriptions, span_min_words=2) == (2, 4, 1)
    assert shape("clsm:generalized+spans", descriptions) == (1, 4, 0)  # no teacher: the span task as before
    assert shape("clsm:generalized+spans+teacher", titles) == (1, 4, 0)
    # titles keep their key (test_pre_training_key_is_unchanged_at_the_default_lengths); long documents name it
    teacher = "dssm:generalized+spans+teacher"
    assert (
        start(teacher, titles, span_whole=0).key
        == start(teacher, titles).key
        != start(teacher, titles, span_whole=1).key
    )
    same = {"span_whole": 1, "span_min_words": 8, "span_max_words": 24}
    assert start(teacher, descriptions).key == start(teacher, descriptions, **same).key
    assert start(teacher, descriptions).key != start(teacher, descriptions, span_whole=0).key
    CrossFitConfig(options={"span_whole": 1})._check()
    with pytest.raises(ParameterError, match="span_whole: 0 or 1"):
        CrossFitConfig(options={"clsm.span_whole": 2})._check()


def test_pre_training_key_holds_what_the_pre_training_reads_not_the_fold_epochs():
    """``span_epochs`` replaces the fold trainings' ``epochs``: a --quick (epochs 2) and a full run (epochs 4) make the
    same pre-training, so they share its key (and cache); an option it reads still changes the key."""
    titles = DOCS["title"].head(40).tolist()
    spec = EncoderSpec.parse("clsm:generalized+spans")

    def start(**options):
        small = {"span_epochs": 1, "spans_per_doc": 2, "batch_size": 64, "sizes": {"conv": 16, "out": 8}}
        return StartingPoint(spec, titles, options=small | options, seed=0, cache=None)

    quick, full = start(epochs=2), start(epochs=4)
    assert quick.key == full.key == start().key == start(epochs=2, val_fraction=0.3).key
    assert start(batch_size=32).key != quick.key and start(lr=0.01).key != quick.key
    texts = titles[:10]
    a, b = quick.encoder(), full.encoder()
    assert a.encode(texts).tobytes() == b.encode(texts).tobytes()
    assert a.training["params"]["epochs"] == b.training["params"]["epochs"] == 1


def test_spans_teacher_folds_distil_their_training_queries_over_long_documents_only():
    """Over long documents the fold trainings distil MiniLM's vectors of their own pairs first (the pre-training's
    vector settings); titles keep their fold options (and cache keys) as before; the option decides either way."""
    descriptions, titles = DOCS["description"].head(50).tolist(), DOCS["title"].head(50).tolist()

    def fold_options(text, texts, **options):
        return StartingPoint(EncoderSpec.parse(text), texts, options=options, seed=0, cache=None).fold_options

    distilled = fold_options("clsm:generalized+spans+teacher", descriptions, epochs=3)
    assert distilled == {
        "epochs": 3,
        "distill_epochs": LONG_DOC_FOLD_DISTILL,
        "distill_rows": "all",
        "distill_loss": "vector",
        "distill_batch_size": 1024,
        "distill_temperature": 0.1,
    }
    assert fold_options("clsm:generalized+spans+teacher", titles, epochs=3) == {"epochs": 3}
    assert fold_options("clsm:generalized+spans+teacher", descriptions, epochs=3, fold_distill_epochs=0) == {
        "epochs": 3
    }
    assert fold_options("clsm:generalized+spans+teacher", titles, fold_distill_epochs=2)["distill_epochs"] == 2
    assert fold_options("clsm:generalized+spans", descriptions, epochs=3) == {"epochs": 3}
    start = StartingPoint(
        EncoderSpec.parse("clsm:generalized+spans+teacher"), descriptions, options={}, seed=0, cache=None
    )
    assert start.options == {} and "distill_epochs" in start.distill_settings  # the pre-training's own settings
