"""Team-draft and balanced interleaving, and their credit rules, against hand-worked examples."""

from __future__ import annotations

import numpy as np
import pytest

from ltrfeat.experiments.interleaving import credit, interleave, request_rng


def _lists(n=2000, m=8, seed=0):
    rng = np.random.default_rng(seed)
    return np.argsort(rng.random((n, m)), axis=1), np.argsort(rng.random((n, m)), axis=1)


@pytest.mark.parametrize("method", ["team-draft", "balanced"])
def test_every_candidate_is_shown_once(method):
    a, b = _lists()
    shown, team = interleave(a, b, np.random.default_rng(1), method=method)
    assert (np.sort(shown, axis=1) == np.arange(a.shape[1])).all()
    assert set(np.unique(team)) == {0, 1}


def test_team_draft_keeps_teams_even_and_each_team_in_its_rankers_order():
    a, b = _lists()
    shown, team = interleave(a, b, np.random.default_rng(2))
    sizes = np.cumsum(team == 0, axis=1) - np.cumsum(team == 1, axis=1)
    assert np.abs(sizes).max() <= 1
    rank = [np.argsort(a, axis=1), np.argsort(b, axis=1)]
    for side in (0, 1):
        for row in range(50):
            mine = rank[side][row][shown[row][team[row] == side]]
            assert (np.diff(mine) > 0).all()
    assert abs((team[:, 0] == 0).mean() - 0.5) < 0.05  # a fair coin decides who starts


def test_balanced_top_k_holds_the_top_of_both_rankings():
    a, b = _lists(n=300)
    shown, _ = interleave(a, b, np.random.default_rng(3), method="balanced")
    for row in range(300):
        for k in range(1, 9):
            top = set(shown[row, :k])  # the union of the top ka of A and top kb of B, |ka - kb| <= 1
            assert any(
                top == set(a[row, :ka]) | set(b[row, :kb]) for ka in range(9) for kb in (ka - 1, ka, ka + 1) if kb >= 0
            )


def test_identical_rankings_interleave_to_that_ranking():
    a = np.array([[3, 1, 0, 2]])
    for method in ("team-draft", "balanced"):
        shown, _ = interleave(a, a, np.random.default_rng(0), method=method)
        assert shown.tolist() == a.tolist()


def test_the_request_stream_depends_on_seed_and_request_id_only():
    assert request_rng(1, "r").random() == request_rng(1, "r").random()
    assert request_rng(1, "r").random() != request_rng(2, "r").random()
    assert request_rng(1, "r").random() != request_rng(1, "s").random()


def test_credit_rules():
    clicked = np.array([[0, 1, 0, 1], [0, 0, 0, 0], [1, 0, 0, 0]])
    team = np.array([[0, 1, 0, 1], [0, 1, 0, 1], [0, 1, 0, 1]])
    a, b = credit(clicked, team, None, None, method="team-draft")
    assert a.tolist() == [0, 0, 1] and b.tolist() == [2, 0, 0]
    # balanced: A ranks the shown results 1,3,2,4; B 2,1,4,3; lowest click at shown 4 -> k = min(4, 3) = 3
    rank_a = np.array([[1, 3, 2, 4]] * 3)
    rank_b = np.array([[2, 1, 4, 3]] * 3)
    a, b = credit(clicked, team, rank_a, rank_b, method="balanced")
    assert a.tolist() == [1, 0, 1] and b.tolist() == [2, 0, 0]  # row 3: k = min(1, 2) = 1
    with pytest.raises(ValueError, match="unknown interleaving method"):
        credit(clicked, team, rank_a, rank_b, method="coin")
