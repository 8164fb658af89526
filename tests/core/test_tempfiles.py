"""Temporary outputs: named after their process, removed on SIGTERM/Ctrl-C, swept after kill -9."""

import logging
import os
import signal
import subprocess
import sys
import threading
import time

import pytest

from builders import stop_process
from ltrfeat.core import tempfiles
from ltrfeat.core.dataset import FeatureMap
from ltrfeat.core.fileio import atomic_output


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def _stale(directory, name, pid, host=None, kind="tmp"):
    path = directory / f".{name}.{pid}-{host or tempfiles._host_tag()}.abcd1234.{kind}"
    path.write_bytes(b"partial")
    return path


def test_temp_names_carry_pid_and_host_and_are_released(tmp_path):
    fd, path = tempfiles.new_file(tmp_path / "out.letor")
    os.close(fd)
    assert path.name.startswith(f".out.letor.{os.getpid()}-{tempfiles._host_tag()}.") and path.name.endswith(".tmp")
    assert path in tempfiles._LIVE
    tempfiles.release(path)
    assert path not in tempfiles._LIVE
    with atomic_output(tmp_path / "x.txt") as fh:
        fh.write("done")
    assert (tmp_path / "x.txt").read_text() == "done" and not tempfiles._LIVE


def test_sweep_removes_only_dead_processes_temps_of_this_host(tmp_path, caplog):
    dead = _dead_pid()
    stale_file = _stale(tmp_path, "out.letor", dead)
    stale_dir = tmp_path / f".out.letor.{dead}-{tempfiles._host_tag()}.zz9_x1yq.tmp"
    (stale_dir / "runs").mkdir(parents=True)
    kept = [
        _stale(tmp_path, "out.letor", os.getppid()),  # a live process's
        _stale(tmp_path, "out.letor", dead, host="0badc0de"),  # another host's: its pid means nothing here
        _stale(tmp_path, "other.letor", dead),
    ]  # another output's
    legacy = tmp_path / ".out.letor.k2j3h4g5.tmp"  # an older version's, without a pid
    legacy.write_bytes(b"?")
    with caplog.at_level(logging.WARNING, logger="ltrfeat"):
        with atomic_output(tmp_path / "out.letor") as fh:
            fh.write("new")
    assert not stale_file.exists() and not stale_dir.exists()
    assert all(p.exists() for p in kept) and legacy.exists()
    warnings = [r.getMessage() for r in caplog.records]
    assert len(warnings) == 1 and f"pid {dead}" in warnings[0] and "2 temporary files" in warnings[0]


def test_remove_live_removes_files_and_directories(tmp_path):
    fd, path = tempfiles.new_file(tmp_path / "a.txt")
    os.close(fd)
    directory = tempfiles.new_dir(tmp_path / "report")
    (directory / "report.md").write_text("half")
    assert tempfiles.remove_live() == 2
    assert not path.exists() and not directory.exists() and not tempfiles._LIVE


@pytest.mark.parametrize("call, made", [("open", "new_file"), ("mkdir", "new_dir")])
def test_a_stop_landing_while_the_temp_is_made_leaves_nothing(tmp_path, monkeypatch, call, made):
    real = getattr(os, call)

    def made_then_stopped(*args, **kwargs):
        done = real(*args, **kwargs)  # the file or directory exists ...
        if call == "open":
            os.close(done)
        raise KeyboardInterrupt  # ... and Ctrl-C lands before it is handed back

    monkeypatch.setattr(os, call, made_then_stopped)
    with pytest.raises(KeyboardInterrupt):
        getattr(tempfiles, made)(tmp_path / "out")
    monkeypatch.undo()
    assert tempfiles.remove_live() == 1 and list(tmp_path.iterdir()) == []


def test_an_interrupted_report_leaves_no_temporary_directory(tmp_path, monkeypatch):
    from ltrfeat.experiments import report
    from ltrfeat.experiments.summary_types import Summary

    def interrupted(*a, **k):
        raise KeyboardInterrupt

    monkeypatch.setattr(report, "report_json", interrupted)
    with pytest.raises(KeyboardInterrupt):
        report.write_report(None, Summary(None, {}, [], []), tmp_path / "rep")
    assert list(tmp_path.iterdir()) == [] and not tempfiles._LIVE


# -- a real process stopped while it writes ----------------------------------------------------
def _convert_from_fifo(tmp_path):
    """``ltrfeat letor convert FIFO out.letor`` fed by a thread that never closes the FIFO: the command
    is writing its output when the test stops it."""
    fifo = tmp_path / "in.letor"
    os.mkfifo(fifo)
    FeatureMap.dense(2).save(FeatureMap.sidecar_path(fifo))  # one pass over the input: no id scan
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "ltrfeat.cli.main",
            "letor",
            "convert",
            str(fifo),
            str(tmp_path / "out.letor"),
            "--chunk-queries",
            "1",
        ],
        stderr=subprocess.PIPE,
        text=True,
        # a test run started in the background (`nohup make test &`) ignores SIGINT, and so would the command
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )

    def feed():
        try:
            with open(fifo, "w") as fh:
                for q in range(100_000):  # more than one read block
                    fh.write("".join(f"{q % 3} qid:{q} 1:{i / 2} 2:{q} # d{i}\n" for i in range(5)))
                fh.flush()
                while proc.poll() is None:
                    time.sleep(0.05)
        except BrokenPipeError:
            pass

    threading.Thread(target=feed, daemon=True).start()
    deadline = time.monotonic() + 60
    while not any(p.name.endswith(".tmp") for p in tmp_path.iterdir()):
        assert time.monotonic() < deadline and proc.poll() is None, "the command never started writing"
        time.sleep(0.05)
    return proc


@pytest.mark.parametrize(
    "sig, code, says", [(signal.SIGTERM, 143, "stopped by SIGTERM"), (signal.SIGINT, 130, "interrupted")]
)
def test_a_stopped_command_removes_its_partial_output(tmp_path, sig, code, says):
    proc = _convert_from_fifo(tmp_path)
    err = stop_process(proc, sig)
    assert proc.returncode == code, err
    assert err.strip().startswith(f"error: {says};") and len(err.strip().splitlines()) == 1, err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.letor", "in.letor.features.json"]


def test_a_killed_commands_temp_is_swept_by_the_next_run(tmp_path):
    proc = _convert_from_fifo(tmp_path)
    proc.kill()
    proc.wait(timeout=60)
    stale = [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]
    assert len(stale) == 1 and f".{proc.pid}-" in stale[0].name
    source = tmp_path / "small.letor"
    source.write_text("1 qid:1 1:0.5 2:1\n0 qid:1 1:0.1 2:1\n")
    done = subprocess.run(
        [sys.executable, "-m", "ltrfeat.cli.main", "letor", "convert", str(source), str(tmp_path / "out.letor")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    lines = [line for line in done.stderr.splitlines() if "temporary file" in line]
    assert len(lines) == 1 and stale[0].name in lines[0] and f"pid {proc.pid}" in lines[0]
    assert not stale[0].exists() and (tmp_path / "out.letor").exists()
