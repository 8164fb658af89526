"""A command that owns a whole output directory builds the new one beside it and swaps it in when done: an
interrupted run leaves the previous directory as it was, and no temporary directory behind."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from builders import stop_process
from ltrfeat.core.fileio import mark_output_dir, replaced_dir

ROOT = Path(__file__).resolve().parents[2]


def _previous(out: Path, kind: str) -> None:
    (out / "report").mkdir(parents=True)
    (out / "report" / "report.html").write_text("<p>the previous run</p>")
    mark_output_dir(out, kind=kind)


def _siblings(out: Path) -> list[str]:
    return sorted(p.name for p in out.parent.iterdir() if p.name != out.name and out.name in p.name)


@pytest.mark.parametrize("sig, code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_an_interrupted_demo_leaves_the_previous_one_intact(tmp_path, sig, code):
    out = tmp_path / "demo-out"
    _previous(out, "demo")
    env = os.environ | {"PYTHONPATH": str(ROOT), "CI": "1"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "ltrfeat.cli.main", "demo", "--quick", "--out", str(out)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    deadline = time.monotonic() + 60
    while not any(name.endswith(".tmp") for name in _siblings(out)):  # the new demo is being built
        assert time.monotonic() < deadline and proc.poll() is None, proc.stderr.read() if proc.stderr else ""
        time.sleep(0.05)
    time.sleep(1)  # writing the world, training the first encoder
    err = stop_process(proc, sig, timeout=15)
    assert proc.returncode == code, err
    assert (out / "report" / "report.html").read_text() == "<p>the previous run</p>"
    assert sorted(p.name for p in out.iterdir()) == [".ltrfeat-output", "report"]
    assert _siblings(out) == []


def test_a_failed_build_keeps_the_previous_directory_and_a_finished_one_replaces_it(tmp_path):
    out = tmp_path / "feats"
    _previous(out, "features")
    with pytest.raises(RuntimeError), replaced_dir(out, kind="features") as tmp:
        (tmp / "features.letor").write_text("half")
        raise RuntimeError("stopped")
    assert (out / "report" / "report.html").exists() and not (out / "features.letor").exists()
    assert _siblings(out) == []
    with replaced_dir(out, kind="features") as tmp:
        (tmp / "features.letor").write_text("whole")
    assert (out / "features.letor").read_text() == "whole" and not (out / "report").exists()
    assert (out / ".ltrfeat-output").is_file() and _siblings(out) == []
