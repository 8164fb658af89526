"""The plan every ablation starts with (``ablate --plan``), its cost estimate and ``--budget``."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from ltrfeat.cli.main import cli
from ltrfeat.core.errors import ParameterError
from ltrfeat.experiments import cost_plan
from ltrfeat.experiments.ablate import AblateSettings, PairsSource, pairs_work
from ltrfeat.experiments.ablation import fit_rows
from ltrfeat.experiments.cost_plan import EncoderWork, Machine, Work, estimate, parse_duration
from ltrfeat.rankers.selection import SelectionConfig
from builders import TINY_ABLATE, planted_folds, write_folds

DEMO = Path(__file__).resolve().parents[2] / "data" / "judged.tsv"
README = ["--pairs", DEMO, "--encoder", "dssm:generalized", "--encoder", "clsm:softmax"]
REFERENCE = Machine(cores=2, load=0.0, speed=1.0, share=1.0)


def run(*args):
    return CliRunner().invoke(cli, [str(a) for a in args])


@pytest.fixture
def reference_machine(monkeypatch):
    """The plan priced for the reference machine, whatever this one is doing (estimates are then exact)."""
    monkeypatch.setattr(cost_plan, "calibrate", lambda cores=None: REFERENCE)


@pytest.mark.parametrize(
    "text, seconds",
    [("900", 900), ("90s", 90), ("15m", 900), ("2.5m", 150), ("1h30m", 5400), ("1h 30m 10s", 5410), ("15:00", 900),
     ("1:30:00", 5400), (" 20M ", 1200)],
)  # fmt: skip
def test_durations(text, seconds):
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "abc", "10x", "m", "1m30", "15:70", "-5m", "0", "0s", "1e400"])
def test_bad_durations_name_the_option_and_the_fix(text):
    with pytest.raises(ParameterError, match=r"^--budget .*; give e\.g\. 900s, 15m") as info:
        parse_duration(text)
    assert "\n" not in str(info.value)


def _reference(pairs, queries, *, epochs, sets, seeds, rounds, resamples, encoders, texts=0) -> Work:
    """A reference run's work: 3 folds, each CLSM/DSSM trained on 3 x pairs pair-epochs, a continued MiniLM
    fine-tuning on 2 x pairs, default model selection."""
    works = []
    for name, rates in encoders:
        pair_epochs = 2 * pairs if rates == "sbert-ft" else 3 * pairs * epochs
        works.append(EncoderWork(name, rates, trainings=6 if rates else 0, pair_epochs=pair_epochs, tasks=6))
    return Work(
        pairs=pairs,
        queries=queries,
        folds=3,
        encoders=works,
        minilm_texts=texts,
        minilm_cached=0,
        ranker_sets=sets,
        other_sets=len(encoders) + 1,
        seeds=seeds,
        n_estimators=rounds,
        inner_folds=3,
        candidates=4,
        seeded_candidates=3,
        resamples=resamples,
        encoder_workers=2,
        cache=None,
    )


FIVE = [("clsm-softmax", "clsm"), ("dssm-generalized", "dssm"), ("sbert", None), ("sbert-ft", "sbert-ft"),
        ("clsm-teacher", "teacher")]  # fmt: skip


@pytest.mark.parametrize(
    "work, wall, cpu",
    [
        # the README's demo command, the 10k-pair bench and Home Depot, quiet runs of one commit
        # (docs/performance.md, "The plan refitted"; bench_plan_big.json)
        (
            _reference(3553, 240, epochs=2, sets=4, seeds=1, rounds=50, resamples=1000,
                       encoders=[("dssm", "dssm"), ("clsm", "clsm")]),
            19.1, 31.8,
        ),
        (_reference(10_184, 400, epochs=4, sets=8, seeds=3, rounds=500, resamples=10_000, encoders=FIVE, texts=2750),
         115.4, 211.0),
        (_reference(74_067, 11_795, epochs=4, sets=8, seeds=3, rounds=500, resamples=10_000, encoders=FIVE,
                    texts=65_284), 1241.4, 2401.4),
    ],
)  # fmt: skip
def test_the_model_prices_the_reference_runs_within_30_percent(work, wall, cpu):
    plan = estimate(work, REFERENCE)
    assert plan.wall == pytest.approx(wall, rel=0.3)
    assert plan.cpu == pytest.approx(cpu, rel=0.3)


def test_a_busy_or_slow_machine_stretches_the_estimate():
    work = _reference(3553, 240, epochs=2, sets=4, seeds=1, rounds=50, resamples=1000, encoders=[("d", "dssm")])
    quiet = estimate(work, REFERENCE)
    busy = estimate(work, dataclasses.replace(REFERENCE, share=0.5))  # 3 other jobs on the 2 cores
    slow = estimate(work, dataclasses.replace(REFERENCE, speed=0.5))
    assert slow.wall == pytest.approx(2 * quiet.wall) and slow.cpu == pytest.approx(2 * quiet.cpu)
    assert busy.cpu == pytest.approx(quiet.cpu)
    for calm, crowded in zip(quiet.stages, busy.stages):  # one process: half a core; two: 2 cores for 5 processes
        assert crowded.wall == pytest.approx(calm.wall * (2 if calm.procs == 1 else 2.5)), calm.name
    assert {s.procs for s in quiet.stages} == {1, 2}


def test_plan_counts_what_the_run_does_and_writes_nothing(tmp_path, reference_machine):
    planned = run("ablate", *README, "--quick", "--plan", "--report", tmp_path / "r", "--cache", tmp_path / "c")
    assert planned.exit_code == 0, planned.output
    assert not (tmp_path / "r").exists() and not (tmp_path / "c").exists()
    lines = planned.output.splitlines()
    assert lines[0].startswith("plan: 3 folds, 2 encoders, 21 ranker runs; this machine: 2 cores")
    assert any(
        re.match(r"  encoder dssm-generalized +~ +\d+ s wall .* 6 trainings, 21,318 pair-epochs", x) for x in lines
    )
    assert any(x.startswith("  rankers ") and "195 fits" in x and "50 rounds" in x for x in lines)
    assert lines[-2].startswith("estimate: ~") and lines[-1].startswith("dominant: rankers, ")
    assert "--cache DIR" not in lines[-1]  # the plan has one already


def test_plan_figures_are_those_of_the_ablation(tmp_path):
    """The counted runs, trainings and ranker rows are those the ablation then makes, and a cached rerun is
    planned with every training from the cache."""
    args = [DEMO, "--encoder", "dssm:generalized", *TINY_ABLATE, "--cache", tmp_path / "c", "--jobs", "1"]
    done = run("ablate", "--pairs", *args, "--report", tmp_path / "r")
    assert done.exit_code == 0, done.output
    planned = re.match(r"plan: 3 folds, 1 encoders, (\d+) ranker runs", done.output.splitlines()[0])
    made = re.search(r"3 folds x \d+ feature sets \(.*\) x 1 seeds: (\d+) runs", done.output)
    assert planned and made and planned.group(1) == made.group(1)
    estimate = json.loads((tmp_path / "r" / "timings.json").read_text())["estimate"]
    assert set(estimate["stages"]) >= {"start", "reading + lexical", "encoder dssm-generalized", "rankers", "tests"}
    again = run("ablate", "--pairs", *args, "--plan", "--report", tmp_path / "r2")
    assert again.exit_code == 0, again.output
    assert re.search(r"encoder dssm-generalized .* 6 trainings, 6 in the cache, 0 pair-epochs", again.output)
    assert "2 of the ranker sets in the cache, 0 fits" in again.output
    changed = run("ablate", "--pairs", *args, "--seeds", "1", "--plan", "--report", tmp_path / "r2")
    assert "6 in the cache" in changed.output and "ranker sets in the cache" not in changed.output
    report = json.loads((tmp_path / "r" / "report.json").read_text())
    assert report["stage_seconds"]["encoders"]["dssm-generalized"]["trainings"] == 6


def test_fit_rows_are_counted_as_the_ablation_counts_them():
    from ltrfeat.experiments.ablation import AblationConfig
    from ltrfeat.experiments.feature_sets import plan_feature_sets

    folds = planted_folds(n_folds=3, queries_per_fold=10, docs=5)
    sets = plan_feature_sets(folds[0].train.feature_map, base="1-3", neural={"clsm": "4"})
    for selection in (None, SelectionConfig.default("lightgbm", tune="none")):
        settings = AblateSettings("x", seeds=(0, 1), selection=selection)
        work = cost_plan.folds_work(folds, sets, settings)
        config = AblationConfig(seeds=(0, 1), selection=selection)
        assert work.fit_rows == fit_rows(folds, sets, config)


def test_letor_plan(tmp_path, reference_machine):
    write_folds(tmp_path / "folds", planted_folds(n_folds=3, queries_per_fold=10, docs=5), ext=".letor")
    done = run("ablate", "--folds", tmp_path / "folds", "--base", "1-3", "--neural", "clsm=4", "--quick", "--plan",
               "--report", tmp_path / "r")  # fmt: skip
    assert done.exit_code == 0, done.output
    assert done.output.startswith("plan: 3 folds, 0 encoders, 9 ranker runs")
    assert "reading + lexical" not in done.output and not (tmp_path / "r").exists()


def _demo_plan(tmp_path, *args):
    return run("ablate", *README, *args, "--plan", "--report", tmp_path / "r")


def test_budget_shrinks_what_was_left_at_its_default(tmp_path, reference_machine):
    source = PairsSource(DEMO, encoders=("dssm:generalized", "clsm:softmax"))
    selection = SelectionConfig.default("lightgbm", tune="none")  # ablate's default
    work = pairs_work(source, AblateSettings(tmp_path / "x", selection=selection))
    full = estimate(work, REFERENCE)
    steps = cost_plan.shrink_steps(
        work, seeds_given=False, rounds_given=False, resamples_given=False, epochs_given=False
    )
    assert [option for option, _, _ in steps] == [
        "--seeds 0", "--n-estimators 50", "--resamples 1000", "--encoder-option epochs=2"
    ]  # fmt: skip
    assert steps[-1][1] == {"encoder_options": {"epochs": 2, "sbert-ft.epochs": 1}}  # MiniLM keeps its 1 epoch
    cheapest = estimate(steps[-1][2], REFERENCE)
    assert cheapest.wall < full.wall
    fits = _demo_plan(tmp_path, "--budget", f"{full.wall + 1:.0f}s")
    assert fits.output.splitlines()[-1].endswith(": the plan fits as it is")
    between = (full.wall + cheapest.wall) / 2
    shrunk = _demo_plan(tmp_path, "--budget", f"{between:.0f}s")
    assert shrunk.exit_code == 0, shrunk.output
    last = shrunk.output.splitlines()[-1]
    assert last.startswith(f"budget {between:.0f} s: runs with --seeds 0") and "instead (~" in last
    explicit = _demo_plan(tmp_path, "--seeds", "0,1,2", "--budget", f"{between:.0f}s")
    assert "--seeds 0" not in explicit.output  # an explicit setting is never shrunk


@pytest.mark.parametrize("budget, message", [
    ("5s", r"error: --budget 5 s: the cheapest plan that answers the question \(--seeds 0 --n-estimators 50 "
           r"--resamples 1000 --encoder-option epochs=2\) needs ~\d+ s \(rankers ~\d+ s\); give --budget \d+ s or more"),
    ("ten minutes", r"error: Invalid value for '--budget': 'ten minutes' is not a duration; give e\.g\. 900s"),
    ("0", r"error: Invalid value for '--budget': '0' leaves no time to run"),
])  # fmt: skip
def test_budget_refusals_are_one_line_and_write_nothing(tmp_path, reference_machine, budget, message):
    done = run("ablate", *README, "--budget", budget, "--report", tmp_path / "r")
    assert done.exit_code == 2
    assert re.fullmatch(message + ".*", done.output.strip()), done.output
    assert len(done.output.strip().splitlines()) == 1 and not (tmp_path / "r").exists()


def test_a_budgeted_run_runs_the_smaller_plan(tmp_path, reference_machine):
    """The demo's pairs with seeds left at their default (3): a budget the 3 seeds miss runs 1 seed, said first."""
    small = ["--encoder-option", "epochs=1", "--encoder-option", 'sizes={"hidden": [32], "out": 16}',
             "--n-estimators", "20", "--resamples", "500", "--jobs", "1"]  # fmt: skip
    plan = run("ablate", "--pairs", DEMO, "--encoder", "dssm:generalized", *small, "--plan", "--report", tmp_path / "p")
    wall = float(re.search(r"estimate: ~([\d.]+) s", plan.output).group(1))
    done = run("ablate", "--pairs", DEMO, "--encoder", "dssm:generalized", *small, "--budget", f"{wall - 1:.0f}s",
               "--report", tmp_path / "r")  # fmt: skip
    assert done.exit_code == 0, done.output
    said = done.output.splitlines()
    budget = next(i for i, line in enumerate(said) if line.startswith("budget "))
    assert "runs with --seeds 0 instead" in said[budget] and said[budget + 1].startswith("cross-fitting")
    report = json.loads((tmp_path / "r" / "report.json").read_text())
    assert report["config"]["seeds"] == [0]


MARKER = "<!-- plan-of-the-readme-command: tests/experiments/test_cost_plan.py checks this block against the code -->"


@pytest.mark.parametrize("doc", ["README.md", "docs/performance.md"])
def test_the_docs_show_the_plan_of_the_readme_command(doc, tmp_path, reference_machine):
    planned = run("ablate", *README, "--quick", "--plan", "--report", tmp_path / "r")
    assert planned.exit_code == 0, planned.output
    text = (Path(__file__).resolve().parents[2] / doc).read_text(encoding="utf-8")
    block = text.split(MARKER, 1)[1].split("```text\n", 1)[1].split("```", 1)[0]
    assert block == planned.output


def test_a_dask_plan_says_what_it_prices(tmp_path, reference_machine):
    done = run("ablate", *README, "--quick", "--dask", "local:2", "--plan", "--report", tmp_path / "r")
    assert done.exit_code == 0, done.output
    assert "  --dask local:2: priced as if run on this machine's cores" in done.output
