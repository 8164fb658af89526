"""The debiasing benchmark's criterion, computed end to end on tiny generated worlds (slow)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from benchmarks import clicks_debias  # noqa: E402

TINY = {"n_queries": 90, "n_docs": 300, "n_click_queries": 300}


@pytest.mark.slow
def test_the_criterion_holds_on_tiny_worlds(tmp_path):
    figures = clicks_debias.run(
        ["e0", "e1.5"],
        [0],
        work=tmp_path,
        quick_sizes={"conv": 32, "out": 16},
        encoder={"epochs": 1, "batch_size": 256},
        world_size=TINY,
        resamples=100,
        ranker_seeds=2,
        log=lambda line: None,
    )
    criterion = figures["criterion"]
    assert set(criterion) == {"e0", "e1.5"} and set(criterion["e0"]) == {"ipw", "pbm"}
    # no bias: a correction changes nothing significant; steep bias: a correction is not worse than none
    assert all(c["same"] for c in criterion["e0"].values())
    assert all(c["not_worse"] for c in criterion["e1.5"].values())
    curve = figures["worlds"]["e1.5"]["seeds"]["0"]["propensity"]
    assert all(abs(e) <= 0.1 for e in curve["relative_error"][:3])  # the top of the curve, even from a tiny log
    # the control: the uncorrected set under two ranker seeds, beside the corrections in every world
    controls = [c for c in figures["comparisons"] if c["variant"] == "lexical+clsm-none@r1"]
    assert [c["world"] for c in controls] == ["e0", "e1.5"] and all(c["n_queries"] == 90 for c in controls)
    weights = figures["worlds"]["e0"]["seeds"]["0"]["ipw_weights"]
    assert 0.8 < weights["min"] <= 1 <= weights["max"] < 1.25  # no bias: every click weighs about 1
    assert len(clicks_debias.markdown_table(figures)) == 4
    holm = [c["p_holm"] for c in figures["comparisons"]]
    assert all(h >= c["p_randomization"] for h, c in zip(holm, figures["comparisons"]))


def test_ranker_seeds_are_averaged_and_the_control_keeps_two_of_them_apart():
    import pandas as pd

    def run(values):
        sets = ["lexical", "lexical+clsm-none"]
        return pd.DataFrame(
            {
                "feature_set": [s for s in sets for _ in range(2)],
                "fold": "f0",
                "qid": ["a", "b"] * 2,
                "n_docs": 5,
                "n_relevant": 1,
                "ndcg@10": values,
            }
        )

    mean = clicks_debias.ranker_mean([run([0.2, 0.4, 0.6, 0.8]), run([0.4, 0.6, 0.8, 1.0]), run([0.3, 0.5, 0.7, 0.9])])
    by_set = mean.groupby("feature_set")["ndcg@10"].apply(list).to_dict()
    assert by_set["lexical"] == pytest.approx([0.3, 0.5]) and by_set["lexical+clsm-none"] == pytest.approx([0.7, 0.9])
    assert by_set["lexical+clsm-none@r0"] == [0.6, 0.8] and by_set["lexical+clsm-none@r1"] == [0.8, 1.0]
    assert set(clicks_debias.ranker_mean([run([0.2, 0.4, 0.6, 0.8])])["feature_set"]) == {
        "lexical",
        "lexical+clsm-none",
    }


def test_kept_results_are_reused_only_for_the_same_signature(tmp_path):
    import pandas as pd

    calls = []

    def compute():
        calls.append(1)
        return {"figure": len(calls)}, pd.DataFrame({"qid": ["a"], "ndcg@10": [0.5 * len(calls)]})

    first = clicks_debias.kept(tmp_path, "e0-0", {"epochs": 2}, compute)
    again = clicks_debias.kept(tmp_path, "e0-0", {"epochs": 2}, compute)
    other = clicks_debias.kept(tmp_path, "e0-0", {"epochs": 4}, compute)
    assert len(calls) == 2 and again[0] == first[0] == {"figure": 1} and other[0] == {"figure": 2}
    assert again[1].equals(first[1]) and clicks_debias.kept(None, "x", {}, compute)[0] == {"figure": 3}


def test_the_weight_spread_is_zero_without_bias_and_grows_with_it():
    from types import SimpleNamespace

    import numpy as np
    import pandas as pd

    from ltrfeat.clicks.propensity import propensity_from_values

    log = SimpleNamespace(positioned=pd.DataFrame({"position": [1, 2, 3, 3], "clicks": [3, 1, 1, 0]}))
    assert clicks_debias.weight_spread(log, propensity_from_values(np.ones(3))) == {
        "min": 1.0,
        "max": 1.0,
        "sd_per_click": 0.0,
    }
    spread = clicks_debias.weight_spread(log, propensity_from_values([1.0, 0.5, 0.25]))
    assert spread["min"] == round(5 / 9, 4) and spread["max"] == round(20 / 9, 4) and spread["sd_per_click"] > 0.5
