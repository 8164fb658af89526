"""Hostile inputs, round two (issue 34): one regression test per class of failure."""

from __future__ import annotations

import os
import threading

import pytest
from click.testing import CliRunner

from builders import synthetic
from ltrfeat.cli.main import cli
from ltrfeat.features.fileio import atomic_output
from ltrfeat.features.letor import write_letor


def _invoke(*args):
    return CliRunner().invoke(cli, [str(a) for a in args])


@pytest.fixture
def letor_file(tmp_path):
    path = tmp_path / "in.letor"
    write_letor(path, synthetic(n_queries=3, docs=4, n_features=3))
    return path


# -- 1. outputs that are not regular files ---------------------------------------------------------


def test_fifo_output_is_streamed_not_replaced_and_gets_no_sidecars(tmp_path, letor_file):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got = []
    reader = threading.Thread(target=lambda: got.append(open(fifo, "rb").read()), daemon=True)
    reader.start()
    res = _invoke("letor", "convert", letor_file, fifo, "--to", "svmlight")
    reader.join(10)
    assert res.exit_code == 0, res.output
    assert got and got[0].count(b"\n") == 12
    assert not fifo.is_file() and fifo.exists()  # still the FIFO
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.letor", "in.letor.features.json", "pipe"]
    assert "pipe is not a regular file" in res.stderr and "pipe.query" in res.stderr


def test_dash_and_fd_links_write_to_standard_output(tmp_path, letor_file):
    res = _invoke("letor", "convert", letor_file, "-")
    assert res.exit_code == 0, res.output
    assert res.stdout.count("qid:") == 12
    assert not (tmp_path / "-").exists() and not os.path.exists("-")
    r, w = os.pipe()
    link = f"/proc/self/fd/{w}"
    with atomic_output(link) as fh:
        fh.write("through the link\n")
    os.close(w)
    with os.fdopen(r) as fh:
        assert fh.read() == "through the link\n"
    from ltrfeat.features.fileio import is_stream

    assert is_stream("/dev/null") and is_stream("/dev/stdout") and is_stream("-")
    assert not is_stream(tmp_path / "new.letor") and not is_stream(letor_file)


def test_train_ranker_to_a_fifo_writes_no_meta_beside_it(tmp_path, letor_file):
    # a FIFO stands in for /dev/null here: a regression must not replace the machine's /dev/null
    fifo = tmp_path / "model"
    os.mkfifo(fifo)
    got = []
    reader = threading.Thread(target=lambda: got.append(open(fifo, "rb").read()), daemon=True)
    reader.start()
    res = _invoke("train-ranker", letor_file, "--out", fifo, "--n-estimators", "2", "--threads", "1")
    reader.join(10)
    assert res.exit_code == 0, res.output
    assert got and b"tree" in got[0]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.letor", "in.letor.features.json", "model"]
