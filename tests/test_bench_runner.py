"""The benchmark runner's own logic on synthetic inputs: target evaluation, the summary, the growth-exponent
fit, stage times of the demo, the profile summaries, and the runner's exit status. No real benchmark runs, but for
one fold training of the sample data replayed by ``replay_fold_tasks.py`` (slow)."""

from __future__ import annotations

import json
import math
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks import (  # noqa: E402
    bench_end_to_end,
    bench_scaling,
    profile_stages,
    quality_candidate_growth,
    quality_small_data,
    replay_fold_tasks,
    run_all,
)
from benchmarks._common import HOME_DEPOT_COLUMNS  # noqa: E402


# -- growth exponent ----------------------------------------------------------------------------------------
@given(exponent=st.floats(0.2, 2.5), coef=st.floats(1e-6, 1e3))
def test_fit_exponent_recovers_an_exact_power_law(exponent, coef):
    sizes = [1e4, 1e5, 1e6]
    assert bench_scaling.fit_exponent(sizes, [coef * n**exponent for n in sizes]) == pytest.approx(exponent, abs=1e-9)


def test_fit_exponent_is_a_least_squares_slope_under_noise():
    rng = np.random.default_rng(0)
    sizes = np.geomspace(1e3, 1e6, 12)
    values = 3e-5 * sizes**1.1 * np.exp(rng.normal(0, 0.05, sizes.size))
    assert bench_scaling.fit_exponent(sizes, values) == pytest.approx(1.1, abs=0.05)
    slope = np.polyfit(np.log(sizes), np.log(values), 1)[0]
    assert bench_scaling.fit_exponent(sizes, values) == pytest.approx(slope)


def test_fit_exponent_needs_two_distinct_usable_sizes():
    assert bench_scaling.fit_exponent([1000], [1.0]) is None
    assert bench_scaling.fit_exponent([1000, 1000], [1.0, 2.0]) is None
    assert bench_scaling.fit_exponent([1000, 2000], [1.0, 0.0]) is None  # a zero cannot go on a log scale
    assert bench_scaling.fit_exponent([1000, 2000, 4000], [1.0, 0.0, 4.0]) == pytest.approx(1.0)


def test_predict_seconds_extrapolates_at_least_linearly():
    assert bench_scaling.predict_seconds([10, 100], [1.0, 10.0], 1000) == pytest.approx(100.0)
    assert bench_scaling.predict_seconds([10, 100], [1.0, 100.0], 1000) == pytest.approx(10_000.0)
    # sublinear so far (fixed costs): still assume linear growth, never optimistic
    assert bench_scaling.predict_seconds([10, 100], [5.0, 6.0], 1000) == pytest.approx(60.0)


def _point(size, seconds, rss):
    return {"size": size, "status": "ok", "seconds": seconds, "peak_rss_bytes": rss}


def test_summarise_stage_ratios_and_skipped_points():
    points = [_point(10, 1.0, 100), _point(100, 10.0, 100), {"size": 1000, "status": "skipped: budget"}]
    s = bench_scaling.summarise_stage(points)
    assert s["measured_sizes"] == [10, 100]
    assert s["time_exponent"] == pytest.approx(1.0) and s["memory_exponent"] == pytest.approx(0.0)
    assert (s["work_ratio"], s["time_ratio"], s["memory_ratio"]) == (10, 10, 1)
    # fixed costs: flat at first, linear at the top; the fit says 0.5, the two largest sizes say 1
    s = bench_scaling.summarise_stage([_point(10, 10.0, 1), _point(100, 10.0, 1), _point(1000, 100.0, 1)])
    assert s["time_exponent"] == pytest.approx(0.5) and s["time_exponent_largest_two"] == pytest.approx(1.0)
    assert bench_scaling.summarise_stage([{"size": 10, "status": "failed: x"}])["time_exponent"] is None


def test_run_stage_skips_sizes_beyond_the_budget(monkeypatch):
    measured = []

    def fake_measure(stage, size, workdir, timeout):
        measured.append(size)
        return _point(size, size / 100, 1)  # 10k pairs take 100 s: 100k would take 1,000 s

    monkeypatch.setattr(bench_scaling, "measure", fake_measure)
    s = bench_scaling.run_stage("ranker", (1_000, 10_000, 100_000), budget=300)
    assert measured == [1_000, 10_000]
    assert s["points"][-1]["status"].startswith("skipped: about 1300 s expected")


def test_plot_stage_writes_a_png(tmp_path):
    s = bench_scaling.summarise_stage(
        [_point(10, 1.0, 2**20), _point(100, 9.0, 2**21), {"size": 1000, "status": "skipped"}]
    )
    bench_scaling.plot_stage("extraction", s, tmp_path / "p.png")
    assert (tmp_path / "p.png").read_bytes()[:4] == b"\x89PNG"


# -- targets and the summary ----------------------------------------------------------------------------------
def _target(op, goal, path="x", unit="x", results="b"):
    return run_all.Target("t", results, run_all.figure(path), op, goal, unit)


@pytest.mark.parametrize(
    "op,goal,value,status,vs_goal",
    [
        (">=", 2, 4.0, "met", "2.00"),
        (">=", 2, 1.0, "missed", "0.50"),
        (">=", 2, 2.0, "met", "1.00"),
        ("<=", 10, 5.0, "met", "2.00"),
        ("<=", 10, 20.0, "missed", "0.50"),
        ("<=", 10, 10.0, "met", "1.00"),
    ],
)
def test_evaluate_met_missed_and_the_ratio(op, goal, value, status, vs_goal):
    row = run_all.evaluate(_target(op, goal), {"figures": {"x": value}})
    assert (row.status, row.vs_goal) == (status, vs_goal)


def test_evaluate_not_measured_never_counts_as_met():
    assert run_all.evaluate(_target(">=", 2), None).status == "not measured"
    assert run_all.evaluate(_target(">=", 2), {"figures": {}}).status == "not measured"
    assert run_all.evaluate(_target(">=", 2), {"figures": {"x": "n/a"}}).status == "not measured"
    assert run_all.evaluate(_target(">=", 2), {"figures": {"x": True}}).status == "not measured"


def test_figure_reads_nested_paths_and_notes():
    measure = run_all.figure("a.b", note="other: {}", note_path="a.c", note_unit="%")
    assert measure({"a": {"b": 3.0, "c": 0.25}}) == run_all.Measured(3.0, "other: 25.0 %")
    assert measure({"a": {"b": 3.0}}) == run_all.Measured(3.0, "")
    assert measure({"a": 1}).value is None


def test_scaling_point_names_the_largest_measured_size_when_the_target_size_is_missing():
    figures = {
        "stages": {
            "extraction": {
                "points": [_point(10_000, 1.0, 2**30), {"size": 1_000_000, "status": "skipped: about 900 s expected"}]
            }
        }
    }
    m = run_all.scaling_point("extraction", 1_000_000, "peak_rss_bytes", 1 / run_all.GIB)(figures)
    assert m.value is None and "skipped" in m.note and "largest measured: 10,000 at 1.00 GiB" in m.note
    figures["stages"]["extraction"]["points"][1] = _point(1_000_000, 60.0, 3 * 2**30)
    row = run_all.evaluate(
        run_all.Target(
            "rss",
            "scaling",
            run_all.scaling_point("extraction", 1_000_000, "peak_rss_bytes", 1 / run_all.GIB),
            "<=",
            2,
            "GiB",
        ),
        {"figures": figures},
    )
    assert (row.measured, row.status) == ("3.00 GiB", "missed")


def test_a_lower_bound_within_the_goal_is_unknown_not_met():
    target = next(t for t in run_all.TARGETS if t.name.startswith("Home Depot"))
    lower = {"figures": {"homedepot_ablation": {"status": "ok", "wall_s": 600.0, "note": "... (a lower bound)"}}}
    row = run_all.evaluate(target, lower)
    assert row.status.startswith("unknown") and row.measured == "≥ 10.00"
    over = {"figures": {"homedepot_ablation": {"status": "ok", "wall_s": 3600.0, "note": "a lower bound"}}}
    assert run_all.evaluate(target, over).status == "missed"
    assert run_all.evaluate(target, {"figures": {"homedepot_ablation": {"status": "not run"}}}).note == "not run"


def test_end_to_end_runs_without_a_time_say_why():
    target = next(t for t in run_all.TARGETS if t.name == "ltrfeat demo wall time")
    row = run_all.evaluate(target, {"figures": {"demo": {"status": "not run (--quick-only)"}}})
    assert (row.status, row.note) == ("not measured", "not run (--quick-only)")
    row = run_all.evaluate(target, {"figures": {"demo": {"status": "ok", "wall_s": 400.0}}})
    assert (row.status, row.note, row.vs_goal) == ("missed", "", "0.75")


def test_every_target_reads_a_results_file_some_benchmark_writes():
    written = {b.results for b in run_all.BENCHMARKS}
    assert {t.results for t in run_all.TARGETS} <= written
    assert len({Path(b.script).stem for b in run_all.BENCHMARKS}) == len(run_all.BENCHMARKS)
    for bench in run_all.BENCHMARKS:
        assert (run_all.BENCH_DIR / bench.script).is_file(), bench.script


def test_ratio_figures_flattens_and_filters():
    figures = {
        "speed_ratio": 2.0,
        "seconds": 3.0,
        "nested": {"a_vs_b": 4.0, "max_abs_diff_vs_x": 1e-7},
        "targets": {"clsm_vs_minilm": 100},
        "flag_ratio": True,
        "sparse_vs_dense": {"rows_per_s": 5.0, "sparse_vs_dense": 2.5},
    }
    assert run_all.ratio_figures(figures) == [
        ("speed_ratio", 2.0),
        ("nested.a_vs_b", 4.0),
        ("sparse_vs_dense.sparse_vs_dense", 2.5),
    ]


def _results(tmp_path, name, figures, mtime=None):
    path = tmp_path / f"{name}.json"
    environment = {"cpu_count": 2, "git_head": "abc"}
    path.write_text(json.dumps({"benchmark": name, "figures": figures, "environment": environment}))
    if mtime is not None:
        import os

        os.utime(path, (mtime, mtime))
    return path


def test_summary_lists_every_target_with_status_and_freshness(tmp_path):
    _results(tmp_path, "bench_letor", {"speed_ratio_ours_over_sklearn": 3.0, "peak_over_matrix": 3.0}, mtime=1e9)
    _results(tmp_path, "bench_lexical", {"score_vs_rank_bm25": 100.0})
    (tmp_path / "broken.json").write_text("{")
    results = run_all.load_results(["bench_letor", "bench_lexical", "broken", "absent"], tmp_path)
    assert set(results) == {"bench_letor", "bench_lexical"}
    text = run_all.summary_markdown(results, None, since=time.time() - 60, profile="quick")
    table = [line for line in text.splitlines() if line.startswith("| ") and "goal" not in line]
    for target in run_all.TARGETS:
        assert any(f"| {target.name} |" in line for line in table), target.name
    letor_speed = next(line for line in table if line.startswith("| LETOR reader rows/s"))
    assert "| 3.00x | 1.50 | met |" in letor_speed and "earlier run 2001-09-09" in letor_speed
    assert "| missed |" in next(line for line in table if line.startswith("| LETOR reader peak"))
    assert "this run" in next(line for line in table if line.startswith("| BM25 vs rank_bm25"))
    assert "Profile: **quick**" in text and "Not measured (`python benchmarks/bench_scaling.py`)" in text


def test_summary_renders_scaling_end_to_end_and_profiles(tmp_path):
    scaling = {
        "profile": "full",
        "memory_method": "VmHWM",
        "stages": {
            "extraction": bench_scaling.summarise_stage([_point(10_000, 1.0, 2**28), _point(100_000, 10.0, 2**29)])
            | {"plot": "scaling_extraction.png"}
        },
    }
    end_to_end = {
        "demo": {"status": "ok", "wall_s": 240.0, "budget_s": 300.0, "stages_s": {"world": 3.0}},
        "demo_quick": {"status": "timed out after 900 s", "budget_s": 60.0},
        "full_over_quick": 4.0,
    }
    profiles = {
        "workload": "ltrfeat demo --quick",
        "stages_s": {"encoders": 40.0, "ablation": 5.0},
        "slowest": [
            {
                "stage": "encoders",
                "seconds": 40.0,
                "share_of_demo": 0.8,
                "tree": "profile_encoders.txt",
                "top_self": [{"frame": "run_backward (<built-in>:0)", "self_seconds": 20.0, "share_of_stage": 0.5}],
            }
        ],
    }
    for name, figures in (("scaling", scaling), ("end_to_end", end_to_end), ("profiles", profiles)):
        _results(tmp_path, name, figures)
    outcome = run_all.Outcome(run_all.BENCHMARKS[0], "crashed (exit 1)", 12.0)
    runs = run_all.runs_record([outcome], profile="full", started=0.0)
    text = run_all.summary_markdown(
        run_all.load_results(["scaling", "end_to_end", "profiles"], tmp_path), runs, since=None, profile="full"
    )
    assert "![extraction scaling](scaling_extraction.png)" in text
    assert "| **extraction** | exponent | N^1.00 | N^0.30 |  |" in text
    assert "| extraction time growth exponent (near-linear) | ≤ 1.15 | 1.00 | 1.15 | met |" in text
    assert "| ltrfeat demo wall time | ≤ 300.0 s | 240.0 s | 1.25 | met |" in text
    assert "| demo_quick | timed out after 900 s | — | 60.0 s |" in text
    assert "| run_backward (<built-in>:0) | 20.00 | 50.0 % |" in text
    assert "Unprofiled (bench_end_to_end)" not in text  # the quick demo timed out: nothing to compare with
    quick_ok = {"figures": {"demo_quick": {"status": "ok", "wall_s": 30.0, "stages_s": {"encoders": 25.0}}}}
    section = "\n".join(run_all._profile_section({"figures": profiles}, quick_ok))
    assert "Unprofiled (bench_end_to_end): 30.0 s in all, encoders 25.0 s" in section
    assert "| bench_letor.py | crashed (exit 1) | 12 |" in text


# -- running benchmarks -----------------------------------------------------------------------------------------
def _script(tmp_path, body: str) -> str:
    path = tmp_path / "fake_bench.py"
    path.write_text(body)
    return str(path)


def test_run_benchmark_statuses(tmp_path, monkeypatch):
    monkeypatch.setattr(run_all, "BENCH_DIR", tmp_path)
    ok = run_all.Benchmark("ok.py", "ok", full=("--flag",))
    (tmp_path / "ok.py").write_text("import sys; print('figure', sys.argv[1:])\n")
    outcome = run_all.run_benchmark(ok, quick=False, time_left=60, results=tmp_path)
    assert outcome.status == "ok" and outcome.command[-1] == "--flag"
    assert "figure ['--flag']" in (tmp_path / "logs" / "ok.log").read_text()

    (tmp_path / "bad.py").write_text("raise SystemExit(3)\n")
    bad = run_all.run_benchmark(run_all.Benchmark("bad.py", "bad"), quick=True, time_left=60, results=tmp_path)
    assert bad.status == "crashed (exit 3)" and bad.crashed

    (tmp_path / "slow.py").write_text("import time; time.sleep(30)\n")
    slow = run_all.run_benchmark(
        run_all.Benchmark("slow.py", "slow", timeout_s=1), quick=False, time_left=60, results=tmp_path
    )
    assert slow.status == "timed out after 1 s" and not slow.crashed and slow.seconds < 20

    absent = run_all.run_benchmark(
        run_all.Benchmark("ok.py", "ok", needs=("nowhere",)),
        quick=False,
        time_left=60,
        datasets=tmp_path,
        results=tmp_path,
    )
    assert absent.status.startswith("skipped: data set nowhere absent")
    spent = run_all.run_benchmark(ok, quick=False, time_left=5, results=tmp_path)
    assert spent.status == "skipped: the time budget is spent"


def test_elastic_budget_leaves_room_for_the_benchmarks_after_it():
    bench = run_all.Benchmark("s.py", "s", full=("--x",), quick=("--quick",), budget_s=(600, 200))
    assert run_all.arguments(bench, quick=False, time_left=1800, reserved=300) == ["--x", "--budget", "600"]
    assert run_all.arguments(bench, quick=False, time_left=800, reserved=500) == ["--x", "--budget", "300"]
    assert run_all.arguments(bench, quick=True, time_left=100, reserved=500) == ["--quick", "--budget", "60"]
    assert run_all.arguments(run_all.Benchmark("t.py", "t", full=("--y",)), quick=False, time_left=10, reserved=0) == [
        "--y"
    ]


def test_main_exits_non_zero_only_on_a_crash(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(run_all, "BENCH_DIR", tmp_path)
    monkeypatch.setattr(run_all, "RESULTS", tmp_path / "results")
    (tmp_path / "fine.py").write_text("print('ok')\n")
    (tmp_path / "boom.py").write_text("raise RuntimeError('boom')\n")
    monkeypatch.setattr(run_all, "BENCHMARKS", (run_all.Benchmark("fine.py", "fine"),))
    assert run_all.main(["--budget", "60"]) == 0  # every target unmeasured: reported, not fatal
    summary = (tmp_path / "results" / "SUMMARY.md").read_text()
    assert f"0 of {len(run_all.TARGETS)} targets met" in summary and "| fine.py | ok |" in summary
    monkeypatch.setattr(
        run_all, "BENCHMARKS", (run_all.Benchmark("fine.py", "fine"), run_all.Benchmark("boom.py", "b"))
    )
    assert run_all.main(["--budget", "60"]) == 1
    assert "crashed: boom.py" in capsys.readouterr().err
    assert run_all.main(["--summary-only"]) == 0  # keeps the last run's table
    summary = (tmp_path / "results" / "SUMMARY.md").read_text()
    assert "The last `run_all.py` run (full profile" in summary and "| boom.py | crashed (exit 1) |" in summary
    with pytest.raises(SystemExit):
        run_all.main(["--only", "nonexistent"])


# -- end to end and profiles ---------------------------------------------------------------------------------------
def test_stage_seconds_from_progress_lines():
    events = [
        (0.5, "1/4 generating the world"),
        (0.6, "    800 documents"),
        (2.0, "2/4 training encoders"),
        (12.0, "3/4 extracting"),
        (13.0, "4/4 ablation: 3 folds"),
        (14.0, "  x 1/4 not a stage"),
    ]
    assert bench_end_to_end.stage_seconds(events, end=20.0) == pytest.approx(
        {"world": 1.5, "encoders": 10.0, "extraction": 1.0, "ablation": 7.0}
    )
    assert bench_end_to_end.stage_seconds([], end=3.0) == {}


def test_homedepot_ablation_from_timings(tmp_path):
    assert bench_end_to_end.homedepot_ablation(None)["status"] == "not run"
    assert bench_end_to_end.homedepot_ablation(tmp_path)["status"].startswith("not run:")
    (tmp_path / "timings.json").write_text(json.dumps({"total_seconds": 1200.0, "runs": []}))
    run = bench_end_to_end.homedepot_ablation(tmp_path)
    assert run["wall_s"] == 1200.0 and "lower bound" in run["note"]
    (tmp_path / "timings.json").write_text(json.dumps({"total_seconds": 1200.0, "wall_seconds": 2000.0}))
    assert bench_end_to_end.homedepot_ablation(tmp_path) == {
        "status": "ok",
        "wall_s": 2000.0,
        "source": str(tmp_path / "timings.json"),
    }


def _frame(function, time_, children=(), synthetic=False):
    return SimpleNamespace(
        function=function,
        file_path_short="m.py",
        file_path="/x/m.py",
        line_no=1,
        time=time_,
        children=list(children),
        is_synthetic=synthetic,
    )


def test_profile_tree_merges_call_sites_and_ranks_stages():
    root = _frame(
        "demo",
        10.0,
        [
            _frame(
                "train_demo_encoders",
                7.0,
                [
                    _frame("backward", 4.0, [_frame("[self]", 4.0, synthetic=True)]),
                    _frame("backward", 2.0),
                    _frame("[self]", 1.0, synthetic=True),
                ],
            ),
            _frame("run_ablation", 2.5, [_frame("update", 2.5)]),
            _frame("generate_world", 0.5),
        ],
    )
    demo = profile_stages.call_tree(root)
    ranked = profile_stages.stages(demo)
    assert [(name, node.time) for name, node in ranked] == [("encoders", 7.0), ("ablation", 2.5), ("world", 0.5)]
    encoders = ranked[0][1]
    assert list(encoders.children) == ["backward (m.py:1)"] and encoders.children["backward (m.py:1)"].time == 6.0
    top = profile_stages.top_self_frames(encoders, 5)
    assert [(r["frame"], r["self_seconds"]) for r in top] == [
        ("backward (m.py:1)", 6.0),
        ("train_demo_encoders (m.py:1)", 1.0),
    ]
    assert math.isclose(sum(r["self_seconds"] for r in top), encoders.time)
    assert [p["frame"] for p in profile_stages.hot_path(encoders)] == ["backward (m.py:1)"]
    assert profile_stages.render_tree(encoders)[1].strip().startswith("6.00 s  85.7 %  backward")
    assert profile_stages.find_node(demo, "update", "m.py").time == 2.5
    assert profile_stages.find_node(demo, "update", "other.py") is None


def test_the_scale_simulation_runs_only_when_named():
    default = [b.script for b in run_all.chosen(set(), set())]
    assert "bench_scale_sim.py" not in default and "bench_letor.py" in default
    assert [b.script for b in run_all.chosen({"bench_scale_sim"}, set())] == ["bench_scale_sim.py"]
    assert "bench_letor.py" not in [b.script for b in run_all.chosen(set(), {"bench_letor"})]


def test_run_all_keeps_the_million_pair_point_of_the_scale_simulation(tmp_path, monkeypatch):
    """run_all re-measures small sizes with the 1M point's settings and ``--add``, so that point survives."""
    from benchmarks import bench_scale_sim

    (entry,) = run_all.chosen({"bench_scale_sim"}, set())
    results = tmp_path / "results"
    results.mkdir()
    point = {"judged_pairs": 999_869, "queries": 100_000}
    figures = {"workers": 2, "memory_limit": "4GiB", "ablate_options": bench_scale_sim.ABLATE, "points": [point]}
    (results / "scale_simulation.json").write_text(json.dumps({"figures": figures}))
    monkeypatch.setattr(bench_scale_sim, "RESULTS", results)
    for argv in (entry.full, entry.quick):
        parser_args = bench_scale_sim.parse_args(list(argv))
        sizes = [int(s) for s in parser_args.sizes.split(",")]
        assert parser_args.add and max(sizes) < 1_000_000
        assert bench_scale_sim._earlier_points(parser_args, sizes) == [point]


# -- quality_small_data's files ----------------------------------------------------------------------------
def test_non_ascii_titles_reach_the_ablation_unchanged(tmp_path, monkeypatch):
    import pandas as pd

    from ltrfeat.core.text import read_docs, read_judged_pairs

    titles = ["Café table ½ in.", "Plain shelf", "Señor drill 3°", "Bracket"]
    raw = pd.DataFrame(
        {
            "id": [str(i) for i in range(4)],
            "product_uid": ["1", "2", "3", "4"],
            "product_title": titles,
            "search_term": ["table", "table", "drill", "drill"],
            "relevance": ["3", "1", "2.33", "1"],
        }
    )
    raw.to_csv(tmp_path / "train.csv", index=False, encoding="latin-1")  # as Home Depot ships it
    collection, judged = quality_small_data._data(tmp_path, 2, 0, 0, raw_path=tmp_path / "train.csv")
    calls = []
    monkeypatch.setattr(quality_small_data, "run_ltrfeat", lambda *args: calls.append(args) or 0.0)
    quality_small_data._ablate(judged, collection, tmp_path / "report", {}, [], None)
    args = list(map(str, calls[0]))
    encoding = args[args.index("--encoding") + 1]
    pairs = read_judged_pairs(judged, columns=HOME_DEPOT_COLUMNS, encoding=encoding, label_map="linear:1:3:7")
    docs = read_docs(collection, fields=["title"], encoding=encoding)
    assert sorted(pairs["doc"]) == sorted(titles)
    assert sorted(docs["title"]) == sorted(titles)


# -- quality_candidate_growth's verdict ---------------------------------------------------------------------
def _growth_figures(encoder_test: float) -> dict:
    """Two folds of 40 queries; the encoder set leads every inner CV by far and scores ``encoder_test`` on
    the test queries (lexical, the best single feature .7, BM25 alone .6)."""
    import pandas as pd

    g = quality_candidate_growth
    rng = np.random.default_rng(0)
    kinds, qids = ["best-single", "linear"], np.arange(40)
    test = {"lex/best-single": 0.7, "lex/linear": 0.7, "lex+enc/best-single": 0.7, "bm25": 0.6, "best-single": 0.7}
    test["lex+enc/linear"] = encoder_test
    rows = [
        {"feature_set": name, "fold": fold, "qid": q, **{m: mean + rng.normal(0, 0.05) for m in g.METRICS}}
        for fold in ("f0", "f1")
        for name, mean in test.items()
        for q in qids
    ]
    inner = {"lex": {"best-single": 0.6, "linear": 0.6}, "lex+enc": {"best-single": 0.6, "linear": 0.9}}
    inner_cv = {
        fold: {s: (qids, {c: m + rng.normal(0, 0.02, qids.size) for c, m in cv.items()}) for s, cv in inner.items()}
        for fold in ("f0", "f1")
    }
    used = {"best-single": ["bm25"], "linear": ["bm25", "tfidf", "enc"]}
    used = {fold: {s: used for s in inner} for fold in ("f0", "f1")}
    result = SimpleNamespace(per_query=pd.DataFrame(rows), inner_cv=inner_cv, used=used)
    sets = ["lex", "lex+enc"]
    by_set = g.growth(result, [("lex", sets[:1], kinds), ("+lex+enc", sets, kinds)], "bm25")
    by_kind = g.growth(result, [("best-single", sets, kinds[:1]), ("+linear", sets, kinds)], "bm25")
    figures = {"by_feature_set": by_set, "by_ranker_kind": by_kind}
    figures["criterion"] = g.criterion(result.per_query, by_set[-1], "bm25")
    return figures


def test_candidate_growth_verdict_passes_a_recommendation_that_holds():
    v = quality_candidate_growth.verdict(_growth_figures(encoder_test=0.72), "tiered")
    assert v["pass"]
    line = quality_candidate_growth.verdict_line("toy", v)
    assert line.startswith("verdict toy (tiered): PASS; >= BM25 alone at every step") and "within 2 SE" in line


def test_candidate_growth_verdict_fails_on_each_part_of_the_criterion():
    g = quality_candidate_growth
    figures = _growth_figures(encoder_test=0.3)  # offered second, chosen by every rule, poor on test
    v = g.verdict(figures, "best")
    assert figures["by_feature_set"][-1]["rules"]["best"]["chosen"] == dict.fromkeys(("f0", "f1"), "lex+enc/linear")
    assert not v["pass"]
    for m in g.METRICS:
        assert v["metrics"][m]["pass"] == {"bm25": False, "best_single": False, "noise": False}
        assert v["metrics"][m]["worst_step"]["step"] in ("+lex+enc", "+linear")  # both offers bring it
        assert v["metrics"][m]["worst_step"]["change"] == pytest.approx(-0.4, abs=0.03)
        assert v["metrics"][m]["bm25_lead"]["min"] == pytest.approx(-0.3, abs=0.03)
    line = g.verdict_line("toy", v)
    assert "FAIL" in line and "BELOW BM25 alone" in line and "BEYOND 2 SE" in line


# -- early-stopping patience (quality_patience) ------------------------------------------------------------
@pytest.mark.parametrize(
    "curve, patience, expected",
    [([0.1, 0.3, 0.2, 0.3, 0.25], 2, (2, 4)), ([0.1, 0.3, 0.2, 0.4, 0.25], 2, (4, 5)), ([0.5, 0.5, 0.5], 1, (1, 2))],
)
def test_stops_keeps_the_first_strict_maximum(curve, patience, expected):
    from benchmarks.quality_patience import stops

    assert stops(curve, patience) == expected


def test_stops_predicts_lightgbm_fit_by_fit_and_an_unchanged_kept_round_keeps_the_model():
    from benchmarks.quality_patience import _Recorder, stops
    from ltrfeat.core.dataset import FeatureMap, RankingSet
    from ltrfeat.rankers.lambdamart import LambdaMART

    rng = np.random.default_rng(2)  # a world whose validation curve keeps improving after plateaus
    n_queries, docs = 80, 10
    latent = rng.normal(size=n_queries * docs)
    label = np.digitize(latent + rng.normal(scale=1.0, size=latent.size), [0.0, 1.0]).astype(float)
    X = np.column_stack([latent + rng.normal(scale=0.5, size=latent.size), rng.normal(size=(latent.size, 3))])
    data = RankingSet(np.repeat([f"q{i:03d}" for i in range(n_queries)], docs), label, X, FeatureMap.dense(4))
    train, valid = data.subset_queries(data.queries()[:60]), data.subset_queries(data.queries()[60:])
    settings = {"n_estimators": 150, "learning_rate": 0.05, "num_leaves": 7, "n_jobs": 1}
    recorder = _Recorder()
    try:
        models = {p: LambdaMART(**settings, early_stopping_rounds=p).fit(train, valid) for p in (60, 50, 20, 8, 3)}
    finally:
        recorder.close()
    curve = recorder.fits[0]["curve"]
    kept = [fit["best"] for fit in recorder.fits]
    for p, fit in zip(models, recorder.fits):
        assert stops(curve, p) == (fit["best"], fit["run"]) == (models[p].best_iteration_, len(fit["curve"]))
    # 50 keeps 60's round (no better one within 60 rounds after it), so the same trees; shorter ones stop before
    # later improvements
    assert kept == [52, 52, 25, 3, 3]
    assert np.array_equal(models[50].predict(data), models[60].predict(data))
    assert not np.array_equal(models[20].predict(data), models[60].predict(data))


# -- replay_fold_tasks ------------------------------------------------------------------------------------
def _replays(capsys, tmp_path, *options: str) -> list[dict]:
    args = [a for o in options for a in ("--option", o)]
    ablate = ["--pairs", str(ROOT / "data" / "judged.tsv"), "--encoder", "dssm:softmax", "--quick"]
    ablate += ["--encoder-option", "epochs=1", "--cache", str(tmp_path / "cache"), "--report", str(tmp_path / "r")]
    capsys.readouterr()
    assert replay_fold_tasks.main(["--task", "3", *args, "--", *ablate]) == 0
    return [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.startswith("{")]


@pytest.mark.slow
def test_a_replayed_task_scores_bit_identically_and_an_option_changes_it(tmp_path, capsys):
    (first,) = _replays(capsys, tmp_path / "a")
    (again,) = _replays(capsys, tmp_path / "b")
    (other,) = _replays(capsys, tmp_path / "c", "epochs=2")
    assert (first["task"], first["encoder"], first["options"]) == (3, "dssm-softmax", {"threads": 1, "epochs": 1})
    assert first["scores"] == again["scores"] != other["scores"] and other["options"]["epochs"] == 2
    assert first["cpu_s"] > 0 and first["distill_cpu_s"] == 0 and first["keep_start"] is None


def test_options_are_key_equals_json_or_a_bare_word():
    assert replay_fold_tasks._option("distill_batch_size=1024") == ("distill_batch_size", 1024)
    assert replay_fold_tasks._option("distill_rows=positives") == ("distill_rows", "positives")
    with pytest.raises(Exception, match="KEY=JSON"):
        replay_fold_tasks._option("epochs")
