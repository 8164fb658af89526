"""Hostile inputs, round three (issue 48, items 7-12): outputs checked before any work, side files replaced
with their output, names shown as text in plots, write failures, option bounds, Ctrl-C at start-up."""

from __future__ import annotations

import json

import click

import pytest
from click.testing import CliRunner

from builders import planted_folds, write_folds
from ltrfeat.cli.main import cli

FAST = ["--n-estimators", "20", "--num-leaves", "7", "--early-stopping-rounds", "5", "--threads", "1"]
FAST += ["--seeds", "0", "--resamples", "200", "--no-select"]


def _invoke(*args):
    return CliRunner().invoke(cli, [str(a) for a in args])


@pytest.fixture(scope="module")
def folds_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("folds")
    write_folds(root, planted_folds(n_folds=3, queries_per_fold=20), ext=".letor", sidecars=True)
    return root


# -- 9. names are text in plots --------------------------------------------------------------------

MATH_NAMES = ["a$b$c", "$\\frac$", "x^_y$", "$$"]


@pytest.mark.parametrize("name", MATH_NAMES)
def test_names_with_dollars_are_plain_text_in_the_plots(folds_dir, tmp_path, name):
    out = tmp_path / "report"
    res = _invoke(
        "ablate", "--folds", folds_dir, "--base", "1-3", "--neural", "clsm=clsm_title_cos",
        "--base-name", name, "--report", out, *FAST,
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    assert "Traceback" not in res.output
    assert list(out.glob("*.png"))
    assert json.loads((out / "report.json").read_text())["config"]["baseline"] == name


@pytest.mark.parametrize("name", MATH_NAMES)
def test_feature_and_system_names_with_dollars_draw_as_text(name):
    from ltrfeat.experiments._plots import importance_figure, svg_text

    fig = importance_figure({"importance": {f"set {name}": {f"feature {name}": 0.7, "other": 0.3}}})
    svg = svg_text(fig)
    assert f"feature {name}" in svg.replace("&#36;", "$")


# -- 12. Ctrl-C while the command line starts ------------------------------------------------------

# The child imports the CLI with a hook on one module the CLI loads at start-up: the hook either raises
# KeyboardInterrupt itself or says "ready" and sleeps until the test sends a real SIGINT.
_STARTUP = """
import signal, sys, time
signal.signal(signal.SIGINT, signal.default_int_handler)  # a shell's background job starts with SIGINT ignored
class Hook:
    def find_spec(self, name, path=None, target=None):
        if name == {module!r}:
            if {real}:
                sys.stderr.write("ready\\n"); sys.stderr.flush(); time.sleep(60)
            raise KeyboardInterrupt
sys.meta_path.insert(0, Hook())
from ltrfeat.cli.main import main
sys.argv = ["ltrfeat", "letor", "info", "nothing.letor"]
main()
"""


@pytest.mark.parametrize(
    "module, real",
    [
        ("click", False),  # the first import of the entry module
        ("ltrfeat.cli.report_cmd", False),  # the command modules
        ("ltrfeat.cli.report_cmd", True),
        ("ltrfeat.core.limits", False),  # the group's callback: arguments parsed, no command run yet
    ],
)
def test_ctrl_c_while_starting_is_one_line_and_exit_130(tmp_path, module, real):
    import os
    import signal
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    env = os.environ | {"PYTHONPATH": str(root)}
    code = _STARTUP.format(module=module, real=real)
    child = subprocess.Popen(
        [sys.executable, "-c", code], cwd=tmp_path, env=env, stderr=subprocess.PIPE, text=True, start_new_session=True
    )
    if real:
        assert child.stderr.readline() == "ready\n"
        child.send_signal(signal.SIGINT)
    _, err = child.communicate(timeout=60)
    assert child.returncode == 130, err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert err.startswith("error: interrupted"), err


# -- 10. write failures ----------------------------------------------------------------------------


def _listing(root):
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


def test_file_size_limit_is_one_line_naming_the_output(tmp_path):
    import subprocess
    import sys
    from pathlib import Path

    from builders import synthetic
    from ltrfeat.core.letor import write_letor

    write_letor(tmp_path / "in.letor", synthetic(n_queries=40, docs=10, n_features=8))
    root = Path(__file__).resolve().parents[2]
    code = (
        "import resource, sys; resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096)); "
        "from ltrfeat.cli.main import main; sys.argv = ['ltrfeat', 'letor', 'convert', 'in.letor', 'out/x.svm', "
        "'--to', 'svmlight']; main()"
    )
    (tmp_path / "out").mkdir()
    res = subprocess.run(
        [sys.executable, "-B", "-c", code],  # -B: no .pyc cut short by the limit
        cwd=tmp_path,
        env={"PYTHONPATH": str(root)},
        capture_output=True,
        text=True,
    )
    assert res.returncode == 2, res.stderr
    assert res.stderr.startswith("error: out/x.svm: cannot write the output (File too large)"), res.stderr
    assert "Traceback" not in res.stderr and len(res.stderr.splitlines()) == 1
    assert list((tmp_path / "out").iterdir()) == []


@pytest.fixture
def disk_full(monkeypatch):
    """Every write through the atomic output helpers fails as on a full disk (an OSError naming no file)."""
    import contextlib
    import errno
    import io

    from ltrfeat.core import fileio

    class Full(io.StringIO):
        def write(self, data):
            raise OSError(errno.ENOSPC, "No space left on device")

    real = fileio._encoded

    @contextlib.contextmanager
    def encoded(raw, path, **kwargs):
        with real(raw, path, **kwargs):
            yield Full()

    monkeypatch.setattr(fileio, "_encoded", encoded)


def test_disk_full_is_one_line_naming_the_output(tmp_path, folds_dir, disk_full):
    train = folds_dir / "Fold1" / "train.letor"
    (tmp_path / "out").mkdir()
    for args, named in [
        (["train-ranker", train, "--out", tmp_path / "out/m.txt", "--n-estimators", "3"], "out/m.txt"),
        (
            ["ablate", "--folds", folds_dir, "--base", "1-3", "--neural", "c=4", "--report", tmp_path / "out/r", *FAST],
            "out/r/",
        ),
    ]:
        res = _invoke(*args)
        assert res.exit_code == 2, res.output
        errors = [line for line in res.output.splitlines() if line.startswith("error:")]
        assert len(errors) == 1 and named in errors[0] and "No space left on device" in errors[0], res.output
        assert "Traceback" not in res.output
        assert _listing(tmp_path / "out") == []


# -- 7. outputs checked before any work ------------------------------------------------------------


@pytest.fixture
def no_training(monkeypatch):
    """Fail the test if an ablation starts its work: every refusal must come first."""
    from ltrfeat.experiments import ablate

    def started(*args, **kwargs):
        raise AssertionError("the ablation started before its outputs were checked")

    monkeypatch.setattr(ablate, "load_letor_folds", started)
    monkeypatch.setattr(ablate, "pairs_folds", started)


def _report(path):
    """An earlier report directory (with the marker that lets --overwrite replace it)."""
    from ltrfeat.core.fileio import mark_output_dir

    path.mkdir(parents=True)
    mark_output_dir(path, kind="report")
    (path / "report.md").write_text("old\n")
    return path


@pytest.mark.parametrize(
    "inside, overwrite",
    [("--cache", True), ("--cache", False), ("--write-features", True), ("--pairs", True)],
)
def test_a_path_inside_a_replaced_report_is_refused_before_any_work(
    tmp_path, folds_dir, no_training, inside, overwrite
):
    report = _report(tmp_path / "r") if overwrite else tmp_path / "new"
    (report / "cache").mkdir(parents=True, exist_ok=True)
    (report / "cache" / "kept").write_text("work\n")  # a filled cache (or a new report's, with its cache)
    mode = (
        ["--pairs", report / "cache" / "kept"]
        if inside == "--pairs"
        else ["--folds", folds_dir, "--base", "1-3", "--neural", "c=4"]
    )
    extra = [] if inside == "--pairs" else [inside, report / "cache"]
    res = _invoke("ablate", *mode, *extra, "--report", report, *(["--overwrite"] if overwrite else []), *FAST)
    assert res.exit_code == 2, res.output
    assert res.output.count("\n") == 1 and inside in res.output and "--report" in res.output, res.output
    assert (report / "cache" / "kept").read_text() == "work\n"


def test_an_existing_report_without_overwrite_is_refused_before_any_work(tmp_path, folds_dir, no_training):
    report = _report(tmp_path / "r")
    res = _invoke("ablate", "--folds", folds_dir, "--base", "1-3", "--neural", "c=4", "--report", report, *FAST)
    assert res.exit_code == 2 and "--overwrite" in res.output, res.output
    assert (report / "report.md").read_text() == "old\n"


@pytest.mark.parametrize(
    "args, needle",
    [
        (["train-encoder", "{d}/judged.tsv", "--out", "{w}/e.ltrenc", "--checkpoint", "{w}/e.ltrenc"], "--checkpoint"),
        (["datasets", "convert", "cranfield", "{w}/in", "--out", "{w}/o", "--overwrite"], "is inside --out"),
        (["demo", "--out", "{w}/someone"], ".ltrfeat-output"),
        (["extract", "{w}/t.letor", "--queries", "q", "--docs", "d", "--out", "{w}/x", "--save-corpus-stats", "{w}/x"],
         "--save-corpus-stats"),
    ],
)  # fmt: skip
def test_every_command_checks_its_outputs_first(tmp_path, args, needle):
    from pathlib import Path

    data = Path(__file__).resolve().parents[2] / "data"
    (tmp_path / "o" / "in").mkdir(parents=True)
    from ltrfeat.core.fileio import mark_output_dir

    mark_output_dir(tmp_path / "o", kind="dataset")
    (tmp_path / "someone").mkdir()
    (tmp_path / "someone" / "thesis.tex").write_text("mine\n")
    args = [a.format(w=tmp_path, d=data) for a in args]
    if "{w}/in" in " ".join(args) or args[:2] == ["datasets", "convert"]:
        args[3] = str(tmp_path / "o" / "in")
    res = _invoke(*args)
    assert res.exit_code == 2 and needle in res.output and res.output.count("\n") == 1, res.output
    assert (tmp_path / "someone" / "thesis.tex").is_file() and (tmp_path / "o" / "in").is_dir()


# -- 8. an output and its side files are replaced together -----------------------------------------


@pytest.fixture
def weighted(tmp_path):
    """A LETOR file with a .weight side file, and the same rows without one."""
    import numpy as np

    from builders import synthetic
    from ltrfeat.core.letor import write_letor

    data = synthetic(n_queries=3, docs=4, n_features=3)
    write_letor(tmp_path / "plain.letor", data)
    data.weight = np.linspace(0.5, 1.5, len(data))
    write_letor(tmp_path / "weighted.letor", data)
    assert (tmp_path / "weighted.letor.weight").is_file()
    return tmp_path


def test_a_second_extract_leaves_no_side_file_of_the_first(weighted):
    from pathlib import Path

    data = Path(__file__).resolve().parents[2] / "data"
    out = weighted / "out.letor"
    for source in ("weighted.letor", "plain.letor"):
        res = _invoke(
            "extract", weighted / source, "--queries", data / "queries.tsv", "--docs", data / "docs.tsv",
            "--lexical", "bm25", "--missing", "zero", "--out", out,
        )  # fmt: skip
        assert res.exit_code == 0, res.output
        assert (weighted / "out.letor.weight").is_file() == (source == "weighted.letor")
    assert sorted(p.name for p in weighted.iterdir() if p.name.startswith("out")) == [
        "out.letor",
        "out.letor.features.json",
    ]


def test_convert_replaces_every_side_file_of_the_earlier_output(weighted):
    out = weighted / "out"
    assert _invoke("letor", "convert", weighted / "weighted.letor", out, "--to", "svmlight").exit_code == 0
    assert {p.name for p in weighted.glob("out.*")} == {"out.query", "out.weight", "out.features.json"}
    assert _invoke("letor", "convert", weighted / "plain.letor", out, "--to", "letor").exit_code == 0
    assert {p.name for p in weighted.glob("out.*")} == {"out.features.json"}


def test_a_failed_write_keeps_the_earlier_output_with_its_side_files(weighted, monkeypatch):
    from ltrfeat.core import letor
    from ltrfeat.core.errors import LetorWriteError

    out = weighted / "out"
    assert _invoke("letor", "convert", weighted / "weighted.letor", out, "--to", "svmlight").exit_code == 0
    before = {p.name: p.read_bytes() for p in weighted.glob("out*")}

    def fail(*args, **kwargs):
        raise LetorWriteError("refused", path="x")

    monkeypatch.setattr(letor.FeatureMap, "to_json", fail)
    assert _invoke("letor", "convert", weighted / "plain.letor", out, "--to", "letor").exit_code == 2
    assert {p.name: p.read_bytes() for p in weighted.iterdir() if p.name.startswith(("out", ".out"))} == before


def test_a_second_export_leaves_no_side_file_of_the_first(tmp_path, folds_dir):
    model = tmp_path / "m.txt"
    train = ["train-ranker", folds_dir / "Fold1" / "train.letor", "--out", model, "--n-estimators", "3"]
    assert _invoke(*train).exit_code == 0
    out = tmp_path / "x.json"
    assert _invoke("export-ranker", model, "--to", "es-ltr", "--out", out, "--allow-missing-features").exit_code == 0
    assert (tmp_path / "x.json.featureset.json").is_file() and (tmp_path / "x.json.index.json").is_file()
    res = _invoke("export-ranker", model, "--to", "xgboost-json", "--out", out)
    assert res.exit_code == 0, res.output
    assert sorted(p.name for p in tmp_path.glob("x.json*")) == ["x.json", "x.json.export.json"]


# -- 11. option bounds -----------------------------------------------------------------------------


def _numeric_options():
    """``(command path, option)`` of every INT/FLOAT option of every command (and the group's own)."""
    from ltrfeat.cli._bounds import numeric

    found = []

    def walk(command, path):
        for param in command.params:
            if numeric(param):
                found.append((path, param))
        for name, sub in getattr(command, "commands", {}).items():
            walk(sub, [*path, name])

    walk(cli, [])
    return found


def test_every_numeric_option_has_a_range_or_a_reason():
    from ltrfeat.cli._bounds import UNBOUNDED

    open_ended = [
        f"{' '.join(path)} --{p.name}"
        for path, p in _numeric_options()
        if p.name not in UNBOUNDED and (getattr(p.type, "min", None) is None or getattr(p.type, "max", None) is None)
    ]
    assert not open_ended, "give these a range in ltrfeat/cli/_bounds.py BOUNDS (or a reason in UNBOUNDED)"
    assert len(_numeric_options()) > 80


def _beyond(param):
    """Values outside ``param``'s range: -1 below a lower end >= 0 (and below the lower end), huge above."""
    t = param.type
    values = []
    if t.min is not None:
        values.append(t.min - 1 if not t.min_open else t.min)
        if t.min >= 0:
            values.append(-1)
    if t.max is not None:
        values += [t.max + 1 if not t.max_open else t.max, 10**30]
    return values


@pytest.mark.parametrize("path, param", _numeric_options(), ids=lambda x: x if isinstance(x, list) else x.name)
def test_every_numeric_option_refuses_values_beyond_its_range_while_parsing(path, param):
    from ltrfeat.cli._bounds import UNBOUNDED

    if param.name in UNBOUNDED and param.type.min is None:
        pytest.skip(UNBOUNDED[param.name])
    for value in _beyond(param):
        with pytest.raises(click.BadParameter):
            param.type.convert(value, param, None)
    if not getattr(param, "count", False) and param.opts[0].startswith("--"):
        # and through the command line: refused while parsing, before the command runs, naming the option
        res = _invoke(*path, f"{param.opts[0]}={_beyond(param)[-1]}")
        assert res.exit_code == 2 and param.opts[0] in res.output and res.output.count("\n") == 1, res.output


@pytest.mark.parametrize(
    "args, option",
    [
        (["ablate", "--folds", ".", "--report", "r", "--seeds=-1"], "--seeds"),
        (["ablate", "--pairs", "p.tsv", "--report", "r", "--split-seed", "-1"], "--split-seed"),
        (["compare-runs", "--qrels", "q", "a", "b", "--seed", "-1"], "--seed"),
        (["compare-runs", "--qrels", "q", "a", "b", "--resamples", "1000000000"], "--resamples"),
        (["train-ranker", "t.letor", "--out", "m.txt", "--threads", "100000"], "--threads"),
        (["extract", "--pairs", "p.tsv", "--out", "o", "--encoding", "rot13"], "--encoding"),
    ],
)
def test_out_of_range_options_are_one_line_errors_before_any_work(tmp_path, monkeypatch, args, option):
    monkeypatch.chdir(tmp_path)
    for name in ("q", "a", "b"):
        (tmp_path / name).write_text("")
    res = _invoke(*args)
    assert res.exit_code == 2 and option in res.output and res.output.count("\n") == 1, res.output
    assert "Traceback" not in res.output and sorted(p.name for p in tmp_path.iterdir()) == ["a", "b", "q"]


def test_a_utf8_table_read_as_utf16_names_the_file_and_the_encoding(tmp_path):
    pairs = tmp_path / "p.tsv"
    pairs.write_text("query\tdoc\tlabel\na b\tc d\t1\ne f\tg h\t0\n", encoding="utf-8")
    for encoding in ("utf-16", "utf-16-le", "utf-32"):
        res = _invoke("extract", "--pairs", pairs, "--lexical", "bm25", "--out", tmp_path / "x", "--encoding", encoding)
        assert res.exit_code == 2 and "p.tsv" in res.output and "--encoding utf-8" in res.output, res.output
        assert "no data rows" not in res.output


def test_the_settings_refuse_the_seeds_and_threads_the_options_do():
    from ltrfeat.core.errors import ParameterError
    from ltrfeat.experiments.ablate import AblateSettings
    from ltrfeat.experiments.crossfit import CrossFitConfig
    from ltrfeat.rankers.config import RankerConfig

    for make in (
        lambda: AblateSettings(report_dir="r", seeds=(0, -1)),
        lambda: CrossFitConfig(seed=-1),
        lambda: RankerConfig(seed=2**32),
        lambda: RankerConfig(n_jobs=100_000),
    ):
        with pytest.raises(ParameterError):
            make()
