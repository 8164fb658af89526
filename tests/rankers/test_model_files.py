"""Damaged ranker model files whose checksum was fixed up: refused in one line, never a native crash.

Issue 21 item 1: a truncated LightGBM model with ``model_sha256`` updated killed ``evaluate`` with
SIGSEGV (exit 139) and ``export-ranker`` / ``serve`` with an abort (134). The crash itself can only be
observed from a child process, so those reproductions run the CLI as a subprocess.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from ltrfeat.core.errors import ModelFileError
from ltrfeat.core.letor import write_letor
from ltrfeat.rankers.lambdamart import LambdaMART, meta_path
from ltrfeat.rankers.model_check import check_model
from builders import small, synthetic

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("models")
    write_letor(tmp / "test.letor", synthetic(seed=2, n_features=5))
    paths = {}
    for engine, name in (("lightgbm", "m.txt"), ("xgboost", "m.json")):
        small(engine, n_estimators=12, early_stopping_rounds=0).fit(synthetic(seed=0, n_features=5)).save(tmp / name)
        paths[engine] = tmp / name
    return tmp, paths


def damaged_copy(src: Path, dst: Path, data: bytes) -> Path:
    """``dst`` holding ``data``, with ``src``'s metadata and the SHA-256 fixed up to match."""
    dst.write_bytes(data)
    meta = json.loads(meta_path(src).read_text())
    meta["model_sha256"] = hashlib.sha256(data).hexdigest()
    meta_path(dst).write_text(json.dumps(meta))
    return dst


def run_cli(*args, cwd):
    env = os.environ | {"PYTHONPATH": f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}", "CI": "1"}
    return subprocess.run(
        [sys.executable, "-m", "ltrfeat.cli.main", *map(str, args)],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.parametrize("engine", ["lightgbm", "xgboost"])
def test_truncated_model_with_fixed_checksum_is_one_line_error_not_a_crash(models, engine):
    tmp, paths = models
    raw = paths[engine].read_bytes()
    bad = damaged_copy(paths[engine], tmp / f"cut-{paths[engine].name}", raw[: len(raw) // 2])
    res = run_cli("evaluate", bad, tmp / "test.letor", cwd=tmp)
    # before the fix: LightGBM exit -11 (SIGSEGV, shell 139), nothing on stderr but LightGBM's own lines
    assert res.returncode == 2, (res.returncode, res.stderr)
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: {bad}:") and "Traceback" not in res.stderr
    assert "re-run train-ranker" in lines[0] and res.stdout == ""


def test_export_ranker_on_a_truncated_lightgbm_model_does_not_abort(models):
    tmp, paths = models
    raw = paths["lightgbm"].read_bytes()
    bad = damaged_copy(paths["lightgbm"], tmp / "tail.txt", raw[: int(len(raw) * 0.99)])  # inside parameters:
    out = tmp / "exported.json"
    res = run_cli("export-ranker", bad, "--to", "es-ltr", "--out", out, cwd=tmp)
    assert res.returncode == 2, (res.returncode, res.stderr)  # before: -6 (abort, shell 134)
    assert len(res.stderr.strip().splitlines()) == 1 and "parameter" in res.stderr
    assert not out.exists()


@pytest.mark.parametrize(
    "engine,cases",
    [
        ("lightgbm", 200),
        ("xgboost", 100),
        pytest.param("lightgbm", 4000, marks=pytest.mark.slow),
        pytest.param("xgboost", 4000, marks=pytest.mark.slow),
    ],
)
def test_damaged_models_never_crash_the_process(models, engine, cases):
    """Truncations, bit flips, deleted/duplicated lines and digit edits, each loaded and used to predict in
    one child process: a native crash anywhere fails the test and names the damage on stderr."""
    tmp, paths = models
    script = Path(__file__).resolve().parents[1] / "robustness" / "model_fuzz.py"
    env = os.environ | {"PYTHONPATH": f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    res = subprocess.run(
        [sys.executable, str(script), str(paths[engine]), str(cases), "0"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert res.returncode == 0, f"crashed (exit {res.returncode}) on {res.stderr.strip().splitlines()[-1:]}"
    assert f"checked={cases - cases % 5}" in res.stdout and "refused=" in res.stdout


def test_structural_checks_name_the_problem(models):
    _, paths = models
    raw = paths["lightgbm"].read_text()
    names = json.loads(meta_path(paths["lightgbm"]).read_text())["engine_feature_names"]
    check_model("lightgbm", raw.encode(), feature_names=names, min_trees=12)
    cases = {
        "split_feature outside": re.sub(r"split_feature=\d+", "split_feature=9", raw, count=1),
        "reached twice": re.sub(r"left_child=-?\d+", "left_child=0", raw, count=1),
        "differ from the": raw.replace("feature_names=f1", "feature_names=g1", 1),
        "trees but its metadata uses 13": raw,
    }
    for expected, text in cases.items():
        with pytest.raises(ModelFileError, match=expected):
            check_model("lightgbm", text.encode(), feature_names=names, min_trees=13 if text is raw else 1)
    doc = json.loads(paths["xgboost"].read_text())
    doc["learner"]["gradient_booster"]["model"]["trees"][0]["left_children"][0] = 0
    with pytest.raises(ModelFileError, match="reached twice|points"):
        check_model("xgboost", json.dumps(doc).encode(), feature_names=None, min_trees=1)


def test_load_refuses_a_model_with_changed_parameters(models, tmp_path):
    _, paths = models
    raw = paths["lightgbm"].read_bytes().replace(b"[boost_from_average:", b"[boost_from_averagX:")
    bad = damaged_copy(paths["lightgbm"], tmp_path / "p.txt", raw)
    with pytest.raises(ModelFileError, match="unknown parameter 'boost_from_averagX'"):
        LambdaMART.load(bad)
