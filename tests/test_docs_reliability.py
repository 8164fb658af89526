"""docs/reliability.md: every ```bash block runs as written (from a scratch directory holding a link to
the committed data/ and an out/ directory), and the limits it states are the defaults in the code."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "reliability.md"


def _blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", PAGE.read_text(encoding="utf-8"), flags=re.S)


@pytest.mark.parametrize("line", [line for b in _blocks("bash") for line in b.splitlines() if line.strip()])
def test_reliability_page_commands_run(tmp_path, line):
    (tmp_path / "data").symlink_to(ROOT / "data")
    (tmp_path / "out").mkdir()
    bin_dir = Path(sys.executable).parent
    env = os.environ | {
        "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
        "PYTHONPATH": f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}",
        "CI": "1",
    }
    res = subprocess.run(
        ["bash", "-o", "pipefail", "-c", line.replace("| head -n 2", "| head -n 2; true")],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert res.returncode == 0, (line, res.stderr)
    assert "Traceback" not in res.stderr


def test_reliability_page_states_the_defaults():
    from ltrfeat.core.config_files import MAX_BYTES, MAX_DEPTH, MAX_NODES
    from ltrfeat.core.limits import InputLimits
    from ltrfeat.serving.app import ServiceLimits

    text = PAGE.read_text(encoding="utf-8")
    limits, service = InputLimits(), ServiceLimits()
    assert f"| {limits.max_line_bytes // 2**20} MiB |" in text
    assert f"| {limits.max_gzip_ratio:g}, checked after 16 MiB" in text
    assert f"| {limits.max_features:,} |" in text and f"| {limits.max_model_params:,} |" in text
    assert f"at most {MAX_BYTES // 2**20} MB, {MAX_DEPTH} levels" in text and f"{MAX_NODES:,} values" in text
    assert f"| {service.max_bytes:,} bytes" in text and f"| {service.max_json_depth} levels" in text
    assert f"| {service.max_candidates} (413" in text and f"| {service.max_concurrent} (503" in text
    assert f"| {service.max_text_chars:,} (413" in text and f"| {service.min_body_rate:,.0f} bytes/s" in text
    assert f"| `--max-readers` | {service.max_readers} (503" in text


def test_reliability_page_states_the_option_bounds():
    from ltrfeat.cli._bounds import BOUNDS
    from ltrfeat.core.settings import MAX_THREADS, SEED

    text = " ".join(PAGE.read_text(encoding="utf-8").split())
    assert f"[{SEED.left}, {SEED.right:,}]" in text and f"at most {MAX_THREADS:,}" in text
    assert f"`--resamples` at most {BOUNDS['resamples'].right:,}" in text


def test_reliability_page_states_the_lane_bound_and_the_soak_figures():
    import json

    from ltrfeat.cli.main import cli
    from ltrfeat.serving.lane import LANE_CHARS, LANE_NICE

    serve = cli.commands["serve"]

    text = " ".join(PAGE.read_text(encoding="utf-8").split())
    assert next(p.default for p in serve.params if p.name == "lane_chars") == LANE_CHARS
    assert (
        f"| `--lane-chars` | {LANE_CHARS:,} characters (more: scored by the worker process at nice +{LANE_NICE};"
        in text
    )
    runs = json.loads((ROOT / "benchmarks" / "results" / "bench_serve_soak.json").read_text())["figures"]["runs"]
    for serve_as in ("worker", "one process"):
        mine = [r for r in runs if r["serve"] == serve_as]
        assert ", ".join(f"{r['ratio']:.2f}x" for r in mine) in text, serve_as
        assert ", ".join(f"{r['load_cpu_s_per_request'] * 1000:.1f}" for r in mine) in text, serve_as
    loads = [x for r in runs for x in (r["load_before"], r["load_after"])]
    assert f"load average {min(loads):.0f}-{max(loads):.0f}" in text
