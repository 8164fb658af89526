"""``ablate --help`` (a SectionedCommand) shows defaults through placeholders filled from the options themselves:
no short text restates a default, so changing a default in its one definition changes the help."""

from __future__ import annotations

import re

import click
import pytest
from click.testing import CliRunner

from ltrfeat.cli._options import SectionedCommand, shown_default
from ltrfeat.cli.main import cli

SENTINEL = "zz-sentinel-default"


def _short_params():
    """(command name, option, its short text) of every option of a SectionedCommand that has a default."""
    found = []
    for name, command in cli.commands.items():
        if isinstance(command, SectionedCommand):
            for param in command.params:  # not get_params(ctx): a bare context would cache a --help without -h
                text = command.short.get(param.name, "")
                if param.default not in (None, ()) and isinstance(param.default, (str, int, float, tuple)):
                    found.append((name, param, text))
    assert found
    return found


def test_no_short_text_restates_its_default():
    restated = [
        f"{name} {param.name}: {text!r}"
        for name, param, text in _short_params()
        if any(shown_default(param.default) in part.split(":")[0] for part in re.findall(r"\[([^]]*)\]", text))
    ]
    assert not restated, "use {default} instead of the value:\n" + "\n".join(restated)


@pytest.mark.parametrize("name", sorted({name for name, _, _ in _short_params()}))
def test_changing_a_default_changes_the_short_help(name, monkeypatch):
    shown = [(param, text) for command, param, text in _short_params() if command == name and "{default}" in text]
    assert shown
    for param, _ in shown:
        monkeypatch.setattr(param, "default", SENTINEL)
    output = CliRunner().invoke(cli, [name, "--help"], terminal_width=200).output
    lines = [line.strip() for line in output.splitlines()]
    for param, _ in shown:
        at = next(i for i, line in enumerate(lines) if line.startswith(param.get_help_record(click.Context(cli))[0]))
        entry = " ".join(lines[at : at + 2])  # a long option name puts its text on the next line
        assert SENTINEL in entry, entry


def test_an_optional_value_comes_from_its_definition():
    from ltrfeat.core.tracking import DEFAULT_URI

    output = CliRunner().invoke(cli, ["ablate", "--help"], terminal_width=200).output
    assert f"Record the run in MLflow [{DEFAULT_URI}]." in output
