"""The ``ltrfeat`` logger, the one progress-bar decision and the CLI's -v/-q."""

import io
import logging

import pytest
from click.testing import CliRunner

from ltrfeat.cli.main import cli
from ltrfeat.core import logs


@pytest.fixture(autouse=True)
def _restore_logger():
    level, handlers = logs.logger.level, list(logs.logger.handlers)
    yield
    logs.logger.setLevel(level)
    logs.logger.handlers[:] = handlers


class _Tty(io.StringIO):
    def isatty(self):
        return True


def test_show_progress_is_the_one_tty_decision(monkeypatch):
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.setattr("sys.stderr", _Tty())
    assert logs.show_progress() and logs.show_progress(None)
    assert not logs.show_progress(False)
    monkeypatch.setenv("CI", "true")
    assert not logs.show_progress()
    monkeypatch.delenv("CI")
    logs.logger.setLevel(logging.ERROR)  # ltrfeat -q
    assert not logs.show_progress()
    logs.logger.setLevel(logging.NOTSET)
    monkeypatch.setattr("sys.stderr", io.StringIO())  # not a terminal
    assert not logs.show_progress()


def test_library_logs_under_ltrfeat_without_handlers_of_its_own():
    assert logs.get_logger("extract").name == "ltrfeat.extract"
    # the library adds only a NullHandler; the CLI's own stderr handler may be there from an earlier CLI run
    assert all(
        isinstance(h, logging.NullHandler) or getattr(h, "_ltrfeat_cli", False)
        for h in logging.getLogger("ltrfeat").handlers
    )


def test_cli_verbosity_sets_the_level_and_survives_swapped_streams():
    runner = CliRunner()
    for args, level in (
        [["-q"], logging.ERROR],
        [[], logging.WARNING],
        [["-v"], logging.INFO],
        [["-vv"], logging.DEBUG],
    ):
        result = runner.invoke(cli, [*args, "features", "list"])
        assert result.exit_code == 0, result.output
        assert logs.logger.level == level
    assert sum(getattr(h, "_ltrfeat_cli", False) for h in logs.logger.handlers) == 1
    result = runner.invoke(cli, ["-v", "features", "list"])
    logs.get_logger("test").info("after the runner closed its stream")  # must not raise or print a logging error


def test_verbose_extract_logs_what_it_wrote(tmp_path):
    out = tmp_path / "t.letor"
    result = CliRunner().invoke(
        cli,
        [
            "-v",
            "extract",
            "data/test.letor",
            "--queries",
            "data/queries.tsv",
            "--docs",
            "data/docs.tsv",
            "--lexical",
            "bm25",
            "--out",
            str(out),
        ],
    )
    assert result.exit_code == 0, result.output
    assert "INFO: extract: 720 rows of data/test.letor, " in result.output
