"""`ltrfeat interleave-report`: credit, wins/ties/losses, the sign test, impressions needed, its three formats, and
simulated users (identical rankers keep the test's level; the better ranker is named)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner

from ltrfeat.cli.main import cli
from ltrfeat.datasets.synth import generate_world
from ltrfeat.clicks.served import impressions, read_event_log
from ltrfeat.experiments.event_log import EventLog
from ltrfeat.experiments.interleave_report import impressions_needed, preference, summarise_interleaving
from ltrfeat.experiments.user_simulation import query_grades, sign_test_p, simulate, simulated_log


@pytest.fixture(scope="module")
def grades():
    return query_grades(generate_world(seed=0, n_queries=300, n_docs=1000, n_click_queries=10).judged)


@pytest.fixture(scope="module")
def better_b_log(grades, tmp_path_factory):
    folder = tmp_path_factory.mktemp("log")
    with EventLog(folder) as writer:
        writer.append(simulated_log(grades, noise_a=1.0, noise_b=0.4, impressions=3000, seed=1))
    return folder


def test_preference_matches_scipys_sign_test_and_wilson_interval():
    from scipy import stats

    got = preference(30, 50, 20)
    test = stats.binomtest(50, 80)
    assert got["p_sign"] == pytest.approx(test.pvalue) and got["preference_b"] == 50 / 80
    assert got["interval"] == pytest.approx(list(test.proportion_ci(method="wilson")))
    assert got["delta_ab"] == pytest.approx((50 + 10) / 100 - 0.5)
    assert sign_test_p(np.array([30]), np.array([50]))[0] == pytest.approx(test.pvalue)
    assert preference(0, 0, 5)["preference_b"] is None


def test_impressions_needed_shrink_with_the_effect_and_grow_with_ties():
    assert impressions_needed(0.05, 1.0) > impressions_needed(0.1, 1.0) > 0
    assert impressions_needed(0.05, 0.5) == pytest.approx(2 * impressions_needed(0.05, 1.0), abs=2)
    assert impressions_needed(0.05, 0.0) is None
    with pytest.raises(ValueError, match="effect"):
        impressions_needed(0.0, 1.0)


def test_identical_rankers_are_preferred_at_most_at_the_tests_alpha(grades):
    result = simulate(grades, noise_a=1.0, noise_b=None, impressions=(300,), experiments=500, seed=5)
    row = result["by_impressions"][0]
    false = row["interleaving_prefers_a"] + row["interleaving_prefers_b"]
    assert false <= 0.05 + 3 * np.sqrt(0.05 * 0.95 / 500), row  # the sign test keeps its level


def test_the_report_names_the_better_ranker_in_every_format(better_b_log, tmp_path):
    runner = CliRunner()
    md = runner.invoke(cli, ["interleave-report", str(better_b_log)])
    assert md.exit_code == 0, md.output
    assert md.output.startswith("# Interleaving report\n\nUsers prefer B (b)")
    data = json.loads(runner.invoke(cli, ["interleave-report", str(better_b_log), "--json"]).output)
    o = data["overall"]
    assert o["impressions"] == 3000 and o["wins_b"] > o["wins_a"] and o["p_sign"] < 0.05
    assert o["interval"][0] > 0.5 and data["queries_preferring"]["B"] > data["queries_preferring"]["A"]
    assert sum(q["impressions"] for q in data["queries"]) == 3000
    page = tmp_path / "r.html"
    result = runner.invoke(cli, ["interleave-report", str(better_b_log), "--html", str(page)])
    assert result.exit_code == 0 and "Content-Security-Policy" in page.read_text()


def test_credit_from_the_log_equals_the_simulations(better_b_log):
    shown = impressions(read_event_log(better_b_log))
    data = summarise_interleaving(shown)
    on = shown.assign(b=shown["clicked"] * (shown["team"] == "B"), a=shown["clicked"] * (shown["team"] == "A"))
    sums = on.groupby("impression_id")[["a", "b"]].sum()
    clicks_a, clicks_b = sums["a"], sums["b"]
    assert data["overall"]["wins_b"] == int((clicks_b > clicks_a).sum())
    assert data["overall"]["wins_a"] == int((clicks_a > clicks_b).sum())


def test_hostile_query_text_is_escaped_in_markdown_and_html(tmp_path):
    from ltrfeat.experiments.interleave_report import interleaving_markdown, render_html

    base = {"session": "s", "docid": "d", "position": 1, "timestamp": "t", "impression_id": "i", "ranker": "r"}
    base |= {"method": "team-draft", "rank_a": 1, "rank_b": 2, "query": "<script>alert(1)</script>|x"}
    lines = [
        {**base, "team": "B", "clicked": 0, "action": "impression"},
        {**base, "team": "B", "clicked": 1, "action": "click"},
    ]
    with EventLog(tmp_path) as writer:
        writer.append(lines)
    data = summarise_interleaving(impressions(read_event_log(tmp_path)))
    assert "<script>alert" not in render_html(data) and "&lt;script&gt;" in render_html(data)
    assert "\\|x" in interleaving_markdown(data)


@pytest.mark.parametrize(
    "setup, message",
    [
        ("empty", "no event-log segments"),
        ("plain", "holds no interleaved impression"),
        ("bad", ":1: not a JSON line"),
    ],
)
def test_bad_logs_are_one_line_errors_and_write_no_page(tmp_path, setup, message):
    log = tmp_path / "log"
    log.mkdir()
    if setup == "plain":
        line = {"session": "s", "query": "q", "docid": "d", "position": 1, "clicked": 0, "timestamp": "t"}
        line |= {
            "impression_id": "i",
            "ranker": "a",
            "team": "A",
            "method": "none",
            "rank_a": 1,
            "action": "impression",
        }
        with EventLog(log) as writer:
            writer.append([line])
    elif setup == "bad":
        (log / "events-000001.jsonl").write_text("{oops\n")
    page = tmp_path / "r.html"
    result = CliRunner().invoke(cli, ["interleave-report", str(log), "--html", str(page)])
    assert result.exit_code == 2 and message in result.output and result.output.startswith("error: ")
    assert not page.exists()


@pytest.mark.parametrize("option", [["--alpha", "0"], ["--effect", "0.5"], ["--power", "1"], ["--top", "0"]])
def test_bad_options_are_usage_errors(better_b_log, option):
    result = CliRunner().invoke(cli, ["interleave-report", str(better_b_log), *option])
    assert result.exit_code == 2 and option[0] in result.output


def test_balanced_credit_from_log_lines_in_any_order(tmp_path):
    from ltrfeat.experiments.interleave_report import impression_credits

    def line(imp, position, rank_a, rank_b, clicked):
        return {"session": imp, "query": "q", "docid": f"{imp}{position}", "position": position, "clicked": clicked,
                "timestamp": "t", "impression_id": imp, "ranker": "r", "team": "A", "method": "balanced",
                "rank_a": rank_a, "rank_b": rank_b, "action": "impression"}  # fmt: skip

    # i1: A ranks the shown 1,3,2,4, B 2,1,4,3; clicks at 2 and 4 -> k = min(4, 3) = 3: A has 1 click, B 2 (B wins)
    # i2: one click at position 1 (A's 1st, B's 2nd) -> k = 1: A wins; i3 (five results): no click, a tie
    lines = [line("i1", p, ra, rb, c) for p, ra, rb, c in ((4, 4, 3, 1), (2, 3, 1, 1), (1, 1, 2, 0), (3, 2, 4, 0))]
    lines += [line("i2", p, ra, rb, c) for p, ra, rb, c in ((2, 2, 1, 0), (1, 1, 2, 1))]
    lines += [line("i3", p, p, p, 0) for p in range(1, 6)]
    clicks = [{**x, "action": "click"} for x in lines if x["clicked"]]
    with EventLog(tmp_path) as writer:
        writer.append([{**x, "clicked": 0} for x in lines] + clicks)
    got = impression_credits(impressions(read_event_log(tmp_path))).set_index("impression_id")
    assert got["outcome"].to_dict() == {"i1": "B", "i2": "A", "i3": "tie"}
    assert got.loc["i1", ["credit_a", "credit_b", "clicks"]].tolist() == [1, 2, 2]
