"""The summary's typed objects: what report.json holds of them (keys and order), read back, and one significance rule
for every reader."""

import dataclasses
import json
import math

import pytest

from ltrfeat.experiments.in_words import lift_words, summary_in_words
from ltrfeat.experiments.set_kind import SetKind
from ltrfeat.experiments.summary_types import Comparison, SetResult, Summary

# the keys of a report.json comparison, in the order every report since the first has written them
REPORT_KEYS = [
    "baseline",
    "variant",
    "metric",
    "base_mean",
    "variant_mean",
    "delta",
    "ci95_delta",
    "relative",
    "p_ttest",
    "p_randomization",
    "wins",
    "ties",
    "losses",
    "n_queries",
    "p_holm",
]


def _comparison(**changes) -> Comparison:
    c = Comparison(
        "lexical",
        "lexical+clsm",
        "ndcg@10",
        base_mean=0.5,
        variant_mean=0.515,
        delta=0.015,
        ci95_delta=(0.005, 0.025),
        relative=0.03,
        p_ttest=0.01,
        p_randomization=0.002,
        wins=30,
        ties=60,
        losses=10,
        n_queries=100,
        p_holm=0.004,
    )
    return dataclasses.replace(c, **changes)


def test_a_comparison_is_written_as_reports_hold_it_and_read_back():
    c = _comparison()
    data = c.to_dict()
    assert list(data) == REPORT_KEYS and data["ci95_delta"] == [0.005, 0.025]
    assert Comparison.from_dict(json.loads(json.dumps(data))) == c
    with pytest.raises(dataclasses.FrozenInstanceError):
        c.p_holm = 0.5  # type: ignore[misc]


def test_a_set_result_and_the_summary_as_dicts():
    r = SetResult("lexical", SetKind.RANKER, "ndcg@10", mean=0.5, ci95=(0.45, 0.55), n_queries=100)
    assert r.to_dict() == {
        "feature_set": "lexical",
        "kind": "ranker",
        "metric": "ndcg@10",
        "mean": 0.5,
        "ci95": [0.45, 0.55],
        "n_queries": 100,
    }
    summary = Summary("lexical", {"marks": {"*": 0.05}}, [r], [_comparison()])
    assert summary.means() == {("lexical", "ndcg@10"): r}
    assert summary.to_dict()["comparisons"] == [_comparison().to_dict()]


def test_one_significance_rule_for_the_verdict_and_the_words():
    """A Holm p of 0 is significant in the words as in the verdict (the words once read ``p or 1``)."""
    assert _comparison(p_holm=0.0).better() and _comparison(delta=-0.01, p_holm=0.0).worse()
    assert not _comparison(p_holm=None).significant() and not _comparison(p_holm=0.05).significant()
    assert lift_words([_comparison(p_holm=0.0)]).startswith("lifts NDCG@10 by 3.0%")
    assert lift_words([_comparison(delta=-0.015, relative=-0.03, p_holm=0.0)]).startswith("lowers NDCG@10")


def test_an_old_report_json_is_worded_from_its_comparisons():
    """``ltrfeat report DIR`` reads a saved report.json: its comparisons (NaN written as null) become Comparisons."""
    saved = _comparison(relative=math.nan).to_dict() | {"relative": None}
    data = {
        "config": {"baseline": "lexical", "metrics": ["ndcg@10"], "feature_sets": []},
        "comparisons": [saved],
        "verdict": None,
    }
    assert "lifts NDCG@10 by n/a (0.5000 → 0.5150, Holm p < .01)" in summary_in_words(data)
