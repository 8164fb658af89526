"""Hostile inputs, round two (issue 34): one regression test per class of failure."""

from __future__ import annotations

import os
import threading

import pytest
from click.testing import CliRunner

from builders import synthetic
from ltrfeat.cli.main import cli
from ltrfeat.core.fileio import atomic_output
from ltrfeat.core.letor import write_letor


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
    from ltrfeat.core.fileio import is_stream

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


# -- 2 and 8. serve: linear-time depth check, numbers it cannot read, non-finite scores -------------


class _Scorer:
    feature_names = ["f"]
    fields = ("title",)

    def __init__(self, value=0.0):
        self.value = value

    def score(self, query, candidates):
        import numpy as np

        return np.full(len(candidates), self.value)

    def query_params(self, query):
        return {"keywords": query}


def _client(scorer=None):
    pytest.importorskip("fastapi")
    from fastapi.testclient import TestClient

    from ltrfeat.serving.app import create_app

    return TestClient(create_app(scorer or _Scorer()), raise_server_exceptions=False, base_url="http://localhost")


@pytest.mark.parametrize(
    "body",
    [
        b'{"query": "' + b'\\"' * 256 * 1024,  # an unterminated string of escaped quotes (was quadratic)
        b'"' + b"\\\\" * 256 * 1024 + b'\\"' * 1024,
        b"[" * 400_000 + b'"' + b"\\" * 20_000,
    ],
    ids=["escaped-quotes", "backslash-runs", "brackets-then-backslashes"],
)
def test_json_depth_is_linear_time_on_hostile_bodies(body):
    import time

    from ltrfeat.serving.app import json_depth

    start = time.perf_counter()
    json_depth(body)
    assert time.perf_counter() - start < 1.0


def test_json_depth_counts_like_a_parser():
    from ltrfeat.serving.app import json_depth

    assert json_depth(b'[{"a": "]]]\\"[[["}, [1]]') == 2
    assert json_depth(b'["\\\\", [["x"]]]') == 3  # an escaped backslash does not escape the quote
    assert json_depth(b'"[[[' + b'\\"' * 10) == 0  # inside an unterminated string
    assert json_depth(b"") == 0


@pytest.mark.parametrize("path", ["/score", "/embed"])
def test_huge_json_integers_are_400_not_500(path):
    client = _client()
    body = b'{"query": "q", "n": ' + b"9" * 5000 + b"}"
    res = client.post(path, content=body, headers={"content-type": "application/json"})
    assert res.status_code == 400, res.text
    assert "number" in res.json()["detail"]


def test_non_finite_scores_are_one_line_500_not_a_traceback():
    client = _client(_Scorer(float("nan")))
    res = client.post("/score", json={"query": "q", "candidates": [{"docid": "d", "title": "t"}]})
    assert res.status_code == 500
    assert "non-finite score" in res.json()["detail"]


def test_ranker_with_nan_leaves_is_refused_at_load(tmp_path, letor_file):
    import hashlib
    import json

    import lightgbm as lgb

    model = tmp_path / "m.txt"
    res = _invoke("train-ranker", letor_file, "--out", model, "--n-estimators", "3", "--threads", "1")
    assert res.exit_code == 0, res.output
    booster = lgb.Booster(model_file=str(model))  # every leaf NaN, written by LightGBM itself
    for tree in booster.dump_model()["tree_info"]:
        for leaf in range(tree["num_leaves"]):
            booster.set_leaf_output(tree["tree_index"], leaf, float("nan"))
    raw = booster.model_to_string().encode()
    model.write_bytes(raw)
    meta = json.loads((tmp_path / "m.txt.meta.json").read_text())
    meta["model_sha256"] = hashlib.sha256(raw).hexdigest()
    (tmp_path / "m.txt.meta.json").write_text(json.dumps(meta))
    res = _invoke("evaluate", model, letor_file)
    assert res.exit_code == 2 and "leaf_value holds NaN" in res.stderr, res.output


# -- 8. --config files: depth, huge integers, alias bombs -------------------------------------------

LAUGHS = "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join(['*' + chr(97 + i)] * 10)}]\n" for i in range(8)
)


@pytest.mark.parametrize(
    "name, text, needle",
    [
        ("deep.json", '{"a": ' + "[" * 100_000 + "]" * 100_000 + "}", "levels deep"),
        ("deep.toml", "a = " + "[" * 100_000 + "]" * 100_000, "levels deep"),
        ("deep-block.yaml", "a:\n" + "- " * 100_000 + "x", "levels deep"),
        ("deep.yaml", "a: " + "[" * 100_000 + "]" * 100_000, "nest"),
        ("int.json", '{"epochs": ' + "9" * 5000 + "}", "cannot be read"),
        ("int.toml", "epochs = " + "9" * 5000, "cannot be read"),
        ("int.yaml", "epochs: " + "9" * 5000, "cannot be read"),
        ("laughs.yaml", LAUGHS, "YAML aliases"),
        ("loop.yaml", "a: &a [*a]\n", "refers to a node"),
    ],
)
def test_config_files_are_bounded(tmp_path, letor_file, name, text, needle):
    import time

    from ltrfeat.core.config_files import read_config
    from ltrfeat.core.errors import LtrfeatError

    path = tmp_path / name
    path.write_text(text)
    start = time.perf_counter()
    with pytest.raises(LtrfeatError, match=needle):
        read_config(path)
    assert time.perf_counter() - start < 5
    res = _invoke("letor", "info", letor_file, "--config", path)
    assert res.exit_code == 2 and res.stderr.count("\n") == 1 and name in res.stderr, res.output


def test_yaml_aliases_within_bounds_still_work(tmp_path):
    from ltrfeat.core.config_files import read_config

    path = tmp_path / "ok.yaml"
    path.write_text("base: &b {epochs: 2}\nother: *b\n")
    assert read_config(path) == {"base": {"epochs": 2}, "other": {"epochs": 2}}


# -- 5. LETOR reading: endless lines, gzip bombs --------------------------------------------------


@pytest.fixture(scope="module")
def endless_gz(tmp_path_factory):
    """1 GiB of one line without a newline, as 1,024 gzip members of 1 MiB each (about 1 MB on disk)."""
    import gzip

    path = tmp_path_factory.mktemp("bomb") / "endless.letor.gz"
    member = gzip.compress(b"1" * 2**20, compresslevel=9)
    path.write_bytes(member * 1024)
    return path


@pytest.mark.parametrize(
    "extra, needle",
    [
        ([], "expands more than 200-fold"),
        (["--max-gzip-ratio", "5000"], ":1: line is longer than 67108864 bytes"),
        (["--max-gzip-ratio", "5000", "--max-line-bytes", "1000"], ":1: line is longer than 1000 bytes"),
    ],
)
def test_endless_gzip_line_is_a_quick_one_line_error(endless_gz, extra, needle):
    import time

    start = time.perf_counter()
    res = _invoke(*extra, "letor", "validate", endless_gz)
    assert time.perf_counter() - start < 30
    assert res.exit_code == 2, res.output
    assert res.stderr.count("\n") == 1 and needle in res.stderr, res.stderr


def test_long_lines_across_blocks_read_in_linear_time(tmp_path, monkeypatch):
    import ltrfeat.core._letor_stream as _letor_stream
    import ltrfeat.core.letor as letor

    monkeypatch.setattr(_letor_stream, "_BLOCK_BYTES", 64)
    path = tmp_path / "wide.letor"
    row = " ".join(f"{i}:0.5" for i in range(1, 2001))
    path.write_text(f"1 qid:1 {row} #d1\n0 qid:1 {row} #d2\n0 qid:2 {row}")  # the last line has no newline
    data = letor.read_letor(path)
    assert data.X.shape == (3, 2000)
    res = _invoke("--max-line-bytes", "1000", "letor", "validate", path)
    assert res.exit_code == 2 and "wide.letor:1: line is longer than 1000 bytes" in res.stderr, res.output


# -- 9. sparse files with huge id spaces ------------------------------------------------------------


@pytest.fixture
def wide_sparse(tmp_path):
    """150 rows using 150,000 distinct feature ids between them (a dense matrix: 85 MiB per 150 rows)."""
    path = tmp_path / "wide.letor"
    lines = []
    for r in range(150):
        feats = " ".join(f"{r * 1000 + j + 1}:1" for j in range(1000))
        lines.append(f"{r % 2} qid:{r // 10} {feats}\n")
    path.write_text("".join(lines))
    return path


@pytest.mark.parametrize(
    "argv",
    [
        ["train-ranker", "{f}", "--out", "{d}/m.txt", "--n-estimators", "2"],
        ["letor", "convert", "{f}", "{d}/out.svm", "--to", "svmlight"],
    ],
    ids=["train-ranker", "convert"],
)
def test_huge_id_spaces_are_refused_with_the_count(wide_sparse, argv):
    res = _invoke(*[a.format(f=wide_sparse, d=wide_sparse.parent) for a in argv])
    assert res.exit_code == 2, res.output
    assert res.stderr.count("\n") == 1 and "150000 distinct feature ids" in res.stderr, res.stderr
    assert "--max-features" in res.stderr
    assert sorted(p.name for p in wide_sparse.parent.iterdir()) == ["wide.letor"]
    res = _invoke("letor", "info", wide_sparse)  # statistics need no matrix
    assert res.exit_code == 0, res.output


# -- 6. --overwrite replaces only directories this tool wrote ----------------------------------------


@pytest.fixture(scope="module")
def ablation_report(tmp_path_factory):
    """A small finished ablation: (ablate argv without --report, its report directory)."""
    from builders import planted_folds, write_folds

    root = tmp_path_factory.mktemp("ablation")
    write_folds(root / "folds", planted_folds(n_folds=3, queries_per_fold=8, docs=5))
    ablate = ["ablate", "--folds", root / "folds", "--base", "1-3", "--neural", "clsm=4", "--quick"]
    ablate += ["--n-estimators", "3", "--seeds", "0"]
    res = _invoke(*ablate, "--report", root / "report")
    assert res.exit_code == 0, res.output
    return ablate, root / "report"


def test_overwrite_never_deletes_a_directory_ltrfeat_did_not_write(tmp_path, ablation_report):
    ablate, report = ablation_report
    thesis = tmp_path / "thesis"
    (thesis / "sub").mkdir(parents=True)
    (thesis / "thesis.tex").write_text("\\documentclass{article}")
    (thesis / "sub" / "data.csv").write_text("a,b\n")
    res = _invoke(*ablate, "--report", thesis, "--overwrite")
    assert res.exit_code == 2 and "no .ltrfeat-output marker" in res.stderr, res.output
    assert (thesis / "thesis.tex").exists() and (thesis / "sub" / "data.csv").exists()
    assert (report / ".ltrfeat-output").is_file()
    res = _invoke(*ablate, "--report", report, "--overwrite")  # its own report: replaced
    assert res.exit_code == 0, res.output


# -- 10. degenerate or partial data -----------------------------------------------------------------


@pytest.mark.parametrize(
    "lines, reason",
    [
        ("".join(f"1 qid:{q} 1:{d / 10} 2:0.5\n" for q in range(5) for d in range(4)), "every label is 1"),
        ("".join(f"{q % 3} qid:{q} 1:{q / 10} 2:0.5\n" for q in range(20)), "has one document"),
        ("".join(f"{q % 2} qid:{q} 1:{d / 10} 2:0.5\n" for q in range(6) for d in range(3)), "the same label"),
    ],
    ids=["constant-labels", "one-doc-per-query", "no-variance-within-queries"],
)
def test_degenerate_training_data_is_an_error_with_the_reason(tmp_path, lines, reason):
    path = tmp_path / "flat.letor"
    path.write_text(lines)
    res = _invoke("train-ranker", path, "--out", tmp_path / "m.txt", "--n-estimators", "5", "--threads", "1")
    assert res.exit_code == 2, res.output
    assert res.stderr.count("\n") == 1 and "flat.letor" in res.stderr and reason in res.stderr, res.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["flat.letor"]


def test_value_beyond_float32_is_a_one_line_error_with_file_and_line(tmp_path, letor_file):
    import re

    lines = letor_file.read_text().splitlines()
    lines[4] = re.sub(r" 2:\S+", " 2:1e39", lines[4])
    bad = tmp_path / "big.letor"
    bad.write_text("\n".join(lines) + "\n")
    res = _invoke("train-ranker", bad, "--out", tmp_path / "m.txt", "--n-estimators", "2")
    assert res.exit_code == 2, res.output
    assert res.stderr.count("\n") == 1 and "big.letor:5:" in res.stderr and "float32" in res.stderr, res.stderr


def test_compare_on_a_truncated_table_names_the_count_mismatch(tmp_path, ablation_report):
    import shutil

    _, report = ablation_report
    cut = tmp_path / "cut"
    shutil.copytree(report, cut)
    table = (cut / "per_query.tsv").read_text().splitlines(keepends=True)
    (cut / "per_query.tsv").write_text("".join(table[: len(table) // 2]))
    pair = "lexical:lexical+clsm"
    res = _invoke("compare", report, pair)
    assert res.exit_code == 0, res.output
    res = _invoke("compare", cut, pair)
    assert res.exit_code == 2, res.output
    assert "report.json records" in res.stderr and "per_query.tsv" in res.stderr, res.stderr


# -- 3. cache entries are checked against their content hash --------------------------------------


def test_damaged_run_cache_entries_are_recomputed_with_a_notice(tmp_path, caplog):
    from builders import planted_folds
    from ltrfeat.experiments.feature_sets import plan_feature_sets
    from ltrfeat.experiments.ablation import run_ablation
    from ltrfeat.experiments._run_cache import RunStore

    folds = planted_folds(n_folds=3, queries_per_fold=8, docs=5)
    names = folds[0].train.feature_map.names
    sets = plan_feature_sets(folds[0].train.feature_map, base=",".join(names[:3]), neural={"n": names[3]})
    kw = {"seeds": [0], "ranker_params": {"n_estimators": 5}, "progress": False}
    first = run_ablation(folds, sets, **kw, cache=RunStore(tmp_path))
    entry = sorted(tmp_path.glob("*.json"))[0]
    raw = entry.read_bytes()
    # still valid JSON, still the same key: one base64 character of a stored array changed
    at = raw.index(b'"__nd__"') + raw[raw.index(b'"__nd__"') :].index(b'", "') - 3
    entry.write_bytes(raw[:at] + (b"A" if raw[at : at + 1] != b"A" else b"B") + raw[at + 1 :])
    store = RunStore(tmp_path)
    with caplog.at_level("WARNING", logger="ltrfeat"):
        second = run_ablation(folds, sets, **kw, cache=store)
    assert store.misses == 1
    assert any("damaged" in r.getMessage() and entry.name in r.getMessage() for r in caplog.records)
    import pandas as pd

    pd.testing.assert_frame_equal(first.per_query, second.per_query)


def test_damaged_scores_and_encoders_in_the_crossfit_cache_are_recomputed(tmp_path, caplog):
    import numpy as np

    from builders import make_pairs
    from ltrfeat.encoders.spec import EncoderSpec
    from ltrfeat.experiments.crossfit import crossfit_columns
    from ltrfeat.experiments.fold_plans import plan_folds

    pairs = make_pairs(n_topics=3, n_queries=18)
    plans = plan_folds(pairs["qid"].unique(), k=3, seed=0)
    options = {"sizes": {"hidden": [8], "out": 4}, "epochs": 1, "batch_size": 16, "threads": 1, "val_fraction": 0}
    spec = [EncoderSpec("dssm", "softmax")]
    run = lambda: crossfit_columns(pairs, plans, spec, options=options, cache=tmp_path, progress=False)  # noqa: E731
    first = run()
    column = next(iter(first[next(iter(first))]))
    for path in (tmp_path / "scores").iterdir():  # one flipped exponent bit in every score file
        raw = bytearray(path.read_bytes())
        raw[-2] ^= 0x40
        path.write_bytes(bytes(raw))
    encoder = next((tmp_path / "encoders").iterdir())
    raw = bytearray(encoder.read_bytes())
    raw[-5] ^= 0x01
    encoder.write_bytes(bytes(raw))
    with caplog.at_level("WARNING", logger="ltrfeat"):
        second = run()
    messages = " ".join(r.getMessage() for r in caplog.records)
    assert "cached encoder scores" in messages and "cached encoder" in messages and "training it again" in messages
    for fold in first:
        np.testing.assert_array_equal(first[fold][column], second[fold][column])


# -- 4. encoder bundles: declared sizes checked before anything is built ------------------------------


def _bundle_declaring(tmp_path, hidden):
    """A real (tiny) bundle whose header claims other hidden sizes; its tensors and checksums are untouched."""
    import json

    import safetensors.torch

    from builders import tiny_encoder

    good = tmp_path / "good.ltrenc"
    tiny_encoder("dssm").save(good)
    raw = good.read_bytes()
    n = int.from_bytes(raw[:8], "little")
    header = json.loads(json.loads(raw[8 : 8 + n])["__metadata__"]["ltrenc"])
    header["model"]["tower"]["hidden"] = hidden
    bomb = tmp_path / "bomb.ltrenc"
    bomb.write_bytes(safetensors.torch.save(safetensors.torch.load(raw), metadata={"ltrenc": json.dumps(header)}))
    return bomb


@pytest.mark.parametrize(
    "hidden, extra, needle",
    [
        ([12000, 12000], [], "more than the limit of 250,000,000"),
        ([2000, 2000], ["--max-model-params", "1000000"], "more than the limit of 1,000,000"),
        ([301, 300], [], "where the config declares"),
    ],
    ids=["default-limit", "option", "shape-mismatch"],
)
def test_encoder_bundle_sizes_are_checked_before_allocating(tmp_path, hidden, extra, needle):
    import resource

    bomb = _bundle_declaring(tmp_path, hidden)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    res = _invoke(*extra, "explain", bomb, "red hose", "garden hose")
    assert res.exit_code == 2, res.output
    assert res.stderr.count("\n") == 1 and "bomb.ltrenc" in res.stderr and needle in res.stderr, res.stderr
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 200_000  # KiB: nothing large was built


# -- 7. worker processes die with their parent -----------------------------------------------------


def _stat(pid) -> list[str]:
    """State, parent pid, ... of a process ([] when it is gone)."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()
    except OSError:
        return []


def _children(pid: int) -> set[int]:
    return {int(e) for e in os.listdir("/proc") if e.isdigit() and (f := _stat(e)) and int(f[1]) == pid and f[0] != "Z"}


def _running(pid: int) -> bool:
    fields = _stat(pid)
    return bool(fields) and fields[0] != "Z"


@pytest.mark.skipif(not os.path.isdir("/proc"), reason="lists processes through /proc")
def test_ablate_workers_die_when_the_command_is_killed(tmp_path):
    import signal
    import subprocess
    import sys
    import time
    from pathlib import Path

    from builders import planted_folds, write_folds

    write_folds(tmp_path / "folds", planted_folds(n_folds=3, queries_per_fold=300, docs=20))
    root = Path(__file__).resolve().parents[2]
    env = os.environ | {"PYTHONPATH": f"{root}{os.pathsep}{os.environ.get('PYTHONPATH', '')}", "CI": "1"}
    argv = [sys.executable, "-m", "ltrfeat.cli.main", "ablate", "--folds", str(tmp_path / "folds")]
    argv += ["--base", "1-3", "--neural", "clsm=4", "--seeds", "0,1,2", "--n-estimators", "400", "--jobs", "2"]
    parent = subprocess.Popen([*argv, "--report", str(tmp_path / "r")], env=env, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        while len(workers := _children(parent.pid)) < 3 and time.monotonic() < deadline:  # 2 + resource tracker
            assert parent.poll() is None, "the ablation ended before its workers could be seen"
            time.sleep(0.2)
        assert len(workers) >= 3, workers
        time.sleep(1.0)  # the workers run their initializer
        parent.send_signal(signal.SIGKILL)
        parent.wait(10)
        deadline = time.monotonic() + 30
        while (alive := {p for p in workers if _running(p)}) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not alive, f"orphaned workers {alive}"
    finally:
        for pid in _children(parent.pid) | {parent.pid} | locals().get("workers", set()):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
