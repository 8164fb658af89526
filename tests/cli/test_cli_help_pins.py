"""The ``--help`` of the commands whose options come from shared definitions (``ltrfeat.cli._options``) and
defaults from one constant (``ltrfeat.features.lexical``) is pinned: moving a definition changes no word.

A deliberate change of a help text: ``LTRFEAT_WRITE_HELP=1 pytest tests/cli/test_cli_help_pins.py`` rewrites the
files in ``tests/cli/help/`` (review the diff)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from ltrfeat.cli.main import cli

PINNED = [
    ("ablate",),
    ("extract",),
    ("train-encoder",),
    ("datasets", "convert"),
    ("export-ranker",),
    ("rerank",),
    ("serve",),
]
HELP = Path(__file__).parent / "help"


@pytest.mark.parametrize("command", PINNED, ids="-".join)
def test_help_is_unchanged(command):
    result = CliRunner().invoke(cli, [*command, "--help"], terminal_width=100)
    assert result.exit_code == 0, result.output
    pinned = HELP / f"{'-'.join(command)}.txt"
    if os.environ.get("LTRFEAT_WRITE_HELP"):
        pinned.write_text(result.output)
    assert result.output == pinned.read_text()
