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


# --encoding of a click log (the clicks commands) and of a download whose encoding depends on the source (datasets
# convert: latin-1 for homedepot) are other options with the same name
OWN_DEFINITIONS = {"clicks_cmd.py": {"--encoding"}, "datasets_cmd.py": {"--encoding", "--label-map"}}


def test_the_pairs_reading_options_are_defined_once():
    """``--columns``, ``--encoding`` and ``--label-map`` of a pairs or text table come from ``ltrfeat.cli._options``
    (its default is read_judged_pairs'), every command's help words its own."""
    import ast

    import ltrfeat.cli

    shared = {"--columns", "--encoding", "--label-map"}
    found = []
    for path in sorted(Path(ltrfeat.cli.__file__).parent.glob("*.py")):
        if path.name == "_options.py":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "option" and node.args:
                name = getattr(node.args[0], "value", None)
                if name in shared - OWN_DEFINITIONS.get(path.name, set()):
                    found.append(f"{path.name}:{node.lineno}: {name}")
    assert found == []
