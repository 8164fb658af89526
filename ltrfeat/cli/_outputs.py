"""Every command's outputs, checked before any work (the pre-flight check).

``OUTPUTS`` names, per command, the path options it writes and how: ``file`` (a file replaced atomically),
``dir`` (a directory replaced as a whole: an existing non-empty one only with ``--overwrite``, or -- for a
command without that option -- only when it carries the marker of an ltrfeat output) and ``keep`` (a
directory written into and kept: caches, feature directories). Every other path option is an input.

Before a command's own code runs, :func:`check_outputs` refuses, with one line naming the options: an
output that cannot be written; a ``dir`` output that exists and may not be replaced; a path another option
names (input or output) inside a ``dir`` output, which replacing the directory would delete (``ablate
--cache DIR/cache --report DIR``); and two outputs in one path. Outputs that are not regular files (``-``,
``/dev/null``, a FIFO) are written straight to and take no part.
"""

from __future__ import annotations

import functools
import os
from pathlib import Path

import click

from ltrfeat.core.errors import LtrfeatError
from ltrfeat.core.fileio import check_output_dir, check_writable, is_stream

OUTPUTS: dict[str, dict[str, str]] = {
    "letor convert": {"target": "file"},
    "extract": {"out_path": "file", "save_corpus_path": "file", "texts_dir": "keep"},
    "train-ranker": {"out": "file"},
    "evaluate": {"per_query": "file"},
    "rank": {"out": "file"},
    "rerank": {"out": "file"},
    "datasets synth": {"out_dir": "keep"},
    "datasets convert": {"out_dir": "dir"},
    "clicks aggregate": {"out": "file"},
    "clicks propensity": {"plot": "file"},
    "ablate": {"report_dir": "dir", "write_features": "keep", "cache_dir": "keep"},
    "compare-runs": {"html_path": "file"},
    "export-ranker": {"out_path": "file"},
    "export-encoder": {"out_dir": "keep"},
    "embed": {"out_path": "file"},
    "train-encoder": {"out": "file", "checkpoint": "file", "cache": "keep"},
    "demo": {"out_dir": "dir"},
}


def _named_paths(ctx: click.Context) -> dict[str, str]:
    """``{option: path}`` of every path option given (``--cache``, ``TARGET``), streams left out."""
    named = {}
    for param in ctx.command.params:
        value = ctx.params.get(param.name or "")
        if not isinstance(param.type, click.Path) or value is None or param.name == "config":
            continue
        for i, item in enumerate(value if isinstance(value, (tuple, list)) else [value]):
            if not is_stream(item):
                label = param.opts[0] if param.opts[0].startswith("-") else param.human_readable_name
                named[f"{label}{f' #{i + 1}' if i else ''}"] = str(item)
    return named


def _option(ctx: click.Context, name: str) -> str:
    param = next(p for p in ctx.command.params if p.name == name)
    return param.opts[0] if param.opts[0].startswith("-") else param.human_readable_name


def _inside(path: str, directory: str) -> bool:
    path, directory = os.path.realpath(path), os.path.realpath(directory)
    return path == directory or path.startswith(directory.rstrip(os.sep) + os.sep)


def check_outputs(ctx: click.Context) -> None:
    """The pre-flight check of the command in ``ctx`` (see the module docstring)."""
    kinds = OUTPUTS.get(" ".join(ctx.command_path.split()[1:]), {})
    named = _named_paths(ctx)
    outputs = {_option(ctx, n): (kind, str(ctx.params[n])) for n, kind in kinds.items() if _option(ctx, n) in named}
    for option, (kind, value) in outputs.items():
        for other, path in named.items():
            if other == option:
                continue
            if kind == "dir" and _inside(path, value):
                raise LtrfeatError(
                    f"{other} {path} is inside {option} {value}, which this command replaces as a whole",
                    fix=f"choose a {other} path outside the {option} directory",
                )
            if other in outputs and os.path.realpath(path) == os.path.realpath(value):
                raise LtrfeatError(f"{option} and {other} are the same path ({value})", fix=f"choose another {option}")
    for option, (kind, value) in outputs.items():
        if kind == "file":
            check_writable(value)
        elif kind == "dir":
            check_output_dir(value, overwrite=ctx.params.get("overwrite", True), option=option)
        elif Path(value).exists() and not Path(value).is_dir():
            raise LtrfeatError("exists and is not a directory", path=value, fix=f"choose another {option} path")


def add_output_checks(group: click.Group) -> None:
    """Run :func:`check_outputs` before every command under ``group`` that writes outputs."""
    for command in group.commands.values():
        if isinstance(command, click.Group):
            add_output_checks(command)
        elif command.callback is not None:
            command.callback = _checked(command.callback)


def _checked(callback):
    @functools.wraps(callback)
    def run(*args, **kwargs):
        check_outputs(click.get_current_context())
        return callback(*args, **kwargs)

    return run
