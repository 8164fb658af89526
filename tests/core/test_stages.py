"""Stage profile of an ablation: stages add up, encoder trainings are counted, teacher time is process-wide."""

from __future__ import annotations

import time

from ltrfeat.core.stages import StageProfile, profile_line, teacher_clock, teacher_totals


def test_stages_accumulate_and_encoders_count_trainings_and_cache_hits():
    profile = StageProfile()
    for _ in range(2):
        with profile.stage("rankers"):
            time.sleep(0.01)
    profile.encoder("clsm-softmax", "without fold1", train_seconds=2.0, score_seconds=0.5, cached=False)
    profile.encoder("clsm-softmax", "without fold2", train_seconds=0.1, score_seconds=0.5, cached=True, where="cache")
    out = profile.as_dict()
    assert out["rankers"] >= 0.02
    clsm = out["encoders"]["clsm-softmax"]
    assert clsm == {
        "train_seconds": 2.1,
        "score_seconds": 1.0,
        "trainings": 1,
        "from_cache": 1,
        "jobs": {"without fold1": 2.5, "without fold2": 0.6},
        "ran_on": {"without fold1": "this process", "without fold2": "cache"},
    }


def test_zero_shot_encoders_are_not_trainings():
    profile = StageProfile()
    profile.zero_shot("sbert", score_seconds=3.0)
    assert profile.as_dict()["encoders"]["sbert"]["trainings"] == 0
    assert "sbert 3.0 s zero-shot" in profile_line(profile.as_dict() | {"encoder columns": 3.0})


def test_teacher_time_counts_only_what_happened_since_the_profile_began():
    with teacher_clock(5):
        pass
    before = teacher_totals()
    profile = StageProfile()
    with teacher_clock(3):
        time.sleep(0.01)
    assert teacher_totals()[1] == before[1] + 3
    assert profile.as_dict()["teacher_encoding"]["texts"] == 3


def test_profile_line_names_every_stage_and_encoder():
    stages = {
        "reading": 1.0,
        "lexical features": 2.5,
        "encoder columns": 1234.0,
        "rankers": 30.0,
        "encoders": {
            "dssm-generalized": {
                "train_seconds": 1000.0,
                "score_seconds": 4.0,
                "trainings": 6,
                "from_cache": 0,
                "jobs": {},
            },
            "sbert": {"train_seconds": 0.0, "score_seconds": 200.0, "trainings": 0, "from_cache": 0, "jobs": {}},
            "clsm-softmax": {"train_seconds": 9.0, "score_seconds": 1.0, "trainings": 1, "from_cache": 5, "jobs": {}},
        },
        "teacher_encoding": {"seconds": 190.0, "texts": 1000},
    }
    line = profile_line(stages)
    assert line == (
        "Time: reading 1.0 s, lexical features 2.5 s, encoder columns 1,234 s (dssm-generalized 1,004 s "
        "in 6 trainings, sbert 200 s zero-shot, clsm-softmax 10.0 s in 1 training + 5 from cache; MiniLM encoding "
        "190 s of it), "
        "rankers 30.0 s."
    )


def test_profile_line_counts_ranker_runs_from_cache_and_shared():
    profile = StageProfile()
    profile.ranker_runs(from_cache=0, total=42, shared=6)
    assert profile.as_dict()["ranker_runs"] == {"total": 42, "from_cache": 0, "shared": 6}
    line = profile_line({"rankers": 30.0, "ranker_runs": profile.as_dict()["ranker_runs"]})
    assert line == "Time: rankers 30.0 s (6 the same as another set's)."
    profile.ranker_runs(from_cache=36, total=42)
    assert profile.as_dict()["ranker_runs"] == {"total": 42, "from_cache": 36}  # as before: no "shared" key
    line = profile_line({"rankers": 3.0, "ranker_runs": profile.as_dict()["ranker_runs"]})
    assert line == "Time: rankers 3.0 s (36 of 42 runs from cache)."
