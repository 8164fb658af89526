"""``ltrfeat ablate`` on generated LETOR folds, its errors, and the MQ2008 run (slow)."""

from __future__ import annotations

import json
import shutil

import pytest
from click.testing import CliRunner

from ltrfeat.cli.main import cli
from builders import dataset_path, reproducible_report
from builders import planted_folds, write_folds

FAST = [
    "--n-estimators",
    "30",
    "--num-leaves",
    "7",
    "--learning-rate",
    "0.1",
    "--early-stopping-rounds",
    "10",
    "--threads",
    "1",
]


def run(*args):
    return CliRunner().invoke(cli, [str(a) for a in args])


def ablate_planted(folds_dir, report, *options, resamples=5000):
    """``ablate`` on the planted folds: base 1-3, the clsm column as neural group, seeds 0 and 1, fast trees."""
    return run(
        "ablate",
        "--folds",
        folds_dir,
        "--base",
        "1-3",
        "--neural",
        "clsm=clsm_title_cos",
        "--seeds",
        "0,1",
        "--resamples",
        resamples,
        *options,
        "--report",
        report,
        *FAST,
    )


@pytest.fixture(scope="module")
def folds_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("folds")
    write_folds(root, planted_folds(n_folds=3, queries_per_fold=30), ext=".letor", sidecars=True)
    return root


@pytest.fixture(scope="module")
def ablated(folds_dir, tmp_path_factory):
    out = tmp_path_factory.mktemp("out") / "report"
    return out, ablate_planted(folds_dir, out)


def test_ablate_prints_headline_and_writes_report(ablated):
    out, result = ablated
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("feature set"))
    assert lines[header].split()[2:] == ["ndcg@1", "ndcg@3", "ndcg@10"]
    lift = lines[header + 2]
    assert lift.startswith("lexical+clsm") and lift.count("(+") == 3 and lift.count("**") == 3
    assert "Holm-adjusted" in result.output and f"report: {out / 'report.md'}" in result.output
    assert "3 folds x 4 feature sets" in result.output  # CliRunner mixes stderr in
    assert "seeds changed nothing" not in result.output  # row subsampling is on by default
    data = json.loads((out / "report.json").read_text())
    assert data["config"]["seeds"] == [0, 1]
    assert data["config"]["ranker_params"]["n_estimators"] == 30
    assert "Fold1/train.letor" in data["config"]["folds"][0]["origin"]


def test_without_subsampling_seeds_are_reported_inert(folds_dir, tmp_path):
    result = ablate_planted(folds_dir, tmp_path / "r", "--param", "bagging_fraction=1.0", resamples=500)
    assert result.exit_code == 0, result.output
    assert "notice: the seeds changed nothing for lexical, lexical+clsm" in result.output
    config = json.loads((tmp_path / "r" / "report.json").read_text())["config"]
    assert config["ranker_params"]["params"]["bagging_fraction"] == 1.0


def test_ablate_report_is_reproducible(folds_dir, ablated, tmp_path):
    out, _ = ablated
    again = tmp_path / "again"
    result = ablate_planted(folds_dir, again)
    assert result.exit_code == 0, result.output
    assert reproducible_report(again / "report.json") == reproducible_report(out / "report.json")


def test_ablate_quick_and_options(folds_dir, tmp_path):
    out = tmp_path / "quick"
    result = run(
        "ablate",
        "--folds",
        folds_dir,
        "--base",
        "bm25_title,tfidf_title",
        "--neural",
        "c=4",
        "--alone",
        "len_title",
        "--engine",
        "xgboost",
        "--metrics",
        "ndcg@10,map",
        "--gain",
        "linear",
        "--no-relevant",
        "zero",
        "--base-name",
        "lex",
        "--quick",
        "--report",
        out,
        "--threads",
        "1",
        "--param",
        "subsample=0.7",
        "--seeds",
        "0,1",
    )
    assert result.exit_code == 0, result.output
    cfg = json.loads((out / "report.json").read_text())["config"]
    assert cfg["seeds"] == [0, 1] and cfg["ranker_params"]["n_estimators"] == 50
    assert cfg["engine_params"]["subsample"] == 0.7 and "seeds changed nothing" not in result.output
    assert cfg["statistics"]["bootstrap"]["n_resamples"] == 1000
    assert cfg["engine"] == "xgboost" and cfg["metrics"] == ["ndcg@10", "map"]
    assert cfg["conventions"]["gain"] == "linear" and cfg["conventions"]["no_relevant"] == "zero"
    assert [s["name"] for s in cfg["feature_sets"]] == ["lex", "lex+c", "clsm_title_cos", "len_title"]
    assert "ndcg@10" in result.output and "lex+c" in result.output


@pytest.mark.parametrize(
    "args, message",
    [
        (["--neural", "clsm"], "--neural 'clsm' is not NAME=SPEC"),
        (["--neural", "a=4", "--neural", "a=3"], "group 'a' is given twice"),
        (["--neural", "clsm=1"], "is also a base feature"),
        (["--neural", "clsm=dssm_cos"], "no feature named 'dssm_cos'"),
        (["--neural", "clsm=4", "--seeds", "0,x"], "'--seeds': '0,x' is not a comma-separated list"),
    ],
)
def test_ablate_bad_options_give_one_line_errors(folds_dir, tmp_path, args, message):
    out = tmp_path / "report"
    result = run("ablate", "--folds", folds_dir, "--base", "1-3", *args, "--report", out, "--quick")
    assert result.exit_code == 2, result.output
    error = [line for line in result.output.splitlines() if line.startswith("error:")]
    assert len(error) == 1 and message in error[0], result.output
    assert not out.exists()


def test_ablate_bad_folds_and_existing_report(folds_dir, tmp_path):
    result = run(
        "ablate", "--folds", tmp_path / "missing", "--base", "1-3", "--neural", "c=4", "--report", tmp_path / "r"
    )
    assert result.exit_code == 2 and "not a directory" in result.output and not (tmp_path / "r").exists()

    broken = tmp_path / "broken"
    shutil.copytree(folds_dir, broken)
    (broken / "Fold2" / "test.letor").write_text("1 qid:q1 1:0.5\nnot a line\n")
    result = run("ablate", "--folds", broken, "--base", "1-3", "--neural", "c=4", "--report", tmp_path / "r")
    assert result.exit_code == 2 and "test.letor:2:" in result.output, result.output
    assert not (tmp_path / "r").exists()

    existing = tmp_path / "existing"
    existing.mkdir()
    (existing / "keep.txt").write_text("x")
    result = run("ablate", "--folds", folds_dir, "--base", "1-3", "--neural", "c=4", "--report", existing)
    assert result.exit_code == 2 and "--overwrite" in result.output


def test_ablate_help_has_examples():
    result = run("ablate", "--help")
    assert result.exit_code == 0
    assert "ltrfeat ablate --folds MQ2008 --base 1-40 --neural g=41-46 --quick --report smoke/" in result.output


@pytest.mark.slow
def test_ablate_mq2008_rotation(tmp_path):
    """MQ2008 5-fold rotation from S1..S5 (Fold1: train S1-S3, vali S4, test S5), base 1-40, 41-46 as a group."""
    raw = dataset_path("letor4_mq2008", "raw")
    parts = [(raw / f"S{i}.txt").read_bytes() for i in range(1, 6)]
    for k in range(5):
        d = tmp_path / "MQ2008" / f"Fold{k + 1}"
        d.mkdir(parents=True)
        (d / "train.txt").write_bytes(b"".join(parts[(k + j) % 5] for j in range(3)))
        (d / "vali.txt").write_bytes(parts[(k + 3) % 5])
        (d / "test.txt").write_bytes(parts[(k + 4) % 5])
    out = tmp_path / "report"
    result = run(
        "ablate",
        "--folds",
        tmp_path / "MQ2008",
        "--base",
        "1-40",
        "--neural",
        "g=41-46",
        "--alone",
        "25",
        "--seeds",
        "0",
        "--n-estimators",
        "60",
        "--write-runs",
        "--report",
        out,
    )
    assert result.exit_code == 0, result.output
    data = json.loads((out / "report.json").read_text())
    means = {(r["feature_set"], r["metric"]): r for r in data["results"]}
    # 784 queries, 220 without a relevant document are excluded; scoring those 0 instead gives the
    # usual MQ2008 LambdaMART NDCG@10 of about 0.5
    ndcg10 = means[("lexical", "ndcg@10")]
    assert ndcg10["n_queries"] == 564
    assert 0.45 < ndcg10["mean"] * 564 / 784 < 0.56
    assert {r["feature_set"] for r in data["results"]} >= {"lexical", "lexical+g", "f41", "f46", "f25"}
    assert len([c for c in data["comparisons"] if c["baseline"] == "lexical"]) == 11
    # model selection on a shipped set: the recommendation is never significantly below the best single feature
    assert not [
        c
        for c in data["comparisons"]
        if (c["baseline"], c["variant"]) == ("best-single", "recommended") and c["delta"] < 0 and c["p_holm"] < 0.05
    ]
    assert [f["test"]["queries"] for f in data["config"]["folds"]] == [156, 157, 157, 157, 157]
    assert "Fold1" in (out / "report.md").read_text()
    # the test-fold scores as a TREC run: trec-style evaluation scores the 220 judged-irrelevant queries 0,
    # so it gives the report's mean over 564 queries x 564/784 (up to the tie-break: 72 queries hold ties)
    assert data["runs"]["docids"] == "the data's docids"
    result = run(
        "evaluate",
        "--qrels",
        out / "runs" / "qrels.txt",
        "--run",
        out / "runs" / "recommended.run",
        "--metrics",
        "ndcg@10",
        "--gain",
        "exp2",
        "--json",
    )
    assert result.exit_code == 0, result.output
    trec = json.loads(result.output)
    assert trec["n_queries"] == 784
    assert trec["metrics"]["ndcg@10"] == pytest.approx(means[("recommended", "ndcg@10")]["mean"] * 564 / 784, abs=3e-3)


def test_compare_repeats_the_report_statistics_for_any_pair(ablated):
    out, _ = ablated
    report = json.loads((out / "report.json").read_text())
    expected = next(c for c in report["comparisons"] if c["metric"] == "ndcg@1")
    result = run(
        "compare",
        out,
        "lexical:lexical+clsm",
        "lexical+clsm:lexical",
        "--metrics",
        "ndcg@1",
        "--resamples",
        "5000",
        "--json",
    )
    assert result.exit_code == 0, result.output
    forward, backward = json.loads(result.output)
    for key in (
        "base_mean",
        "variant_mean",
        "delta",
        "ci95_delta",
        "p_ttest",
        "p_randomization",
        "wins",
        "ties",
        "losses",
        "n_queries",
    ):
        assert forward[key] == pytest.approx(expected[key]), key
    assert backward["delta"] == pytest.approx(-forward["delta"])
    assert (backward["wins"], backward["losses"]) == (forward["losses"], forward["wins"])
    assert forward["p_holm"] >= forward["p_randomization"]  # adjusted over the 2 comparisons asked for
    table = run("compare", out, "lexical:lexical+clsm", "--resamples", "500")
    assert table.exit_code == 0 and table.output.count("lexical+clsm") == 3  # ndcg@1,3,10
    assert "Holm-adjusted over 3 comparisons" in table.output


@pytest.mark.parametrize(
    "args, message",
    [
        (["lexical"], "is not BASELINE:VARIANT"),
        (["lexical:lexical"], "is not BASELINE:VARIANT"),
        (["lexical:nope"], "'nope' is not in this ablation; use one of"),
        (["lexical:lexical+clsm", "--metrics", "err@5"], "'err@5' was not computed"),
    ],
)
def test_compare_errors(ablated, args, message):
    out, _ = ablated
    result = run("compare", out, *args)
    assert result.exit_code == 2 and message in result.output, result.output


def test_compare_refuses_a_broken_per_query_table(ablated, tmp_path):
    out, _ = ablated
    result = run("compare", tmp_path, "lexical:lexical+clsm")
    assert result.exit_code == 2 and "per_query.tsv: no per-query table here" in result.output
    lines = (out / "per_query.tsv").read_text().splitlines()
    header = lines[0].split("\t")
    row = lines[3].split("\t")
    row[header.index("ndcg@1")] = "high"
    (tmp_path / "per_query.tsv").write_text("\n".join(lines[:3] + ["\t".join(row)] + lines[4:]) + "\n")
    result = run("compare", tmp_path, "lexical:lexical+clsm")
    assert result.exit_code == 2 and "per_query.tsv:4: ndcg@1 is 'high', not a number" in result.output
    (tmp_path / "per_query.tsv").write_text("a\tb\n1\t2\n")
    result = run("compare", tmp_path, "lexical:lexical+clsm")
    assert result.exit_code == 2 and "missing columns feature_set" in result.output


def test_the_settings_file_is_recorded_in_the_report(folds_dir, tmp_path):
    cfg = tmp_path / "ablate.toml"
    cfg.write_text('[ablate]\nseeds = "0"\nresamples = 500\nn-estimators = 20\n')
    out = tmp_path / "report"
    res = run(
        "ablate", "--config", cfg, "--folds", folds_dir, "--base", "1-3", "--neural", "clsm=clsm_title_cos",
        "--seeds", "1", "--report", out,
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    report = json.loads((out / "report.json").read_text())
    assert report["config"]["seeds"] == [1]  # the command line wins over the file
    assert report["config"]["config_file"] == {
        "path": str(cfg),
        "options": {"seeds": "0", "resamples": 500, "n-estimators": 20},
    }
    assert (
        f'**Settings file**: `{cfg}` supplied --seeds "0", --resamples 500, --n-estimators 20'
        in (out / "report.md").read_text()
    )
