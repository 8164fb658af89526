"""Errors that carry the file, line and a fix, so the CLI can print them on one line."""

from __future__ import annotations

import contextlib
import re


class LtrfeatError(Exception):
    """Base error: ``str(err)`` is ``FILE:LINE: problem; fix`` on one line.

    Parameters
    ----------
    problem : what is wrong.
    path : the file concerned, if any.
    line : 1-based line number (or row number for tables), if known.
    fix : what the user should do about it (in the Python API's words).
    param, role : the Python parameter the fix is about (and, for a mapping, which key), so that a command can
        say it with its own option (:func:`cli_fixes`).
    """

    def __init__(
        self,
        problem: str,
        *,
        path=None,
        line: int | None = None,
        fix: str | None = None,
        param: str | None = None,
        role: str | None = None,
    ):
        self.problem = problem
        self.path = None if path is None else str(path)
        self.line = line
        self.fix = fix
        self.param, self.role = param, role
        self.worded = False  # the fix already speaks a command's words (cli_fixes, reword_setting)
        super().__init__(self._format())

    def _format(self) -> str:
        where = ""
        if self.path is not None:
            where = self.path if self.line is None else f"{self.path}:{self.line}"
            where += ": "
        text = f"{where}{self.problem}"
        if self.fix:
            text += f"; {self.fix}"
        return " ".join(text.split("\n"))


class LetorFormatError(LtrfeatError):
    """A LETOR / svmlight file (or its group, weight or feature-map sidecar) is malformed."""


class TextTableError(LtrfeatError):
    """A query, document or judged-pairs table is malformed or incomplete."""


class ModelFileError(LtrfeatError):
    """A model or bundle file is corrupt, of the wrong kind, or does not match the data."""


class ParameterError(LtrfeatError, ValueError):
    """A setting, option or parameter value that is refused (also a ``ValueError`` for library callers); every
    config check raises it (:mod:`ltrfeat.core.settings`)."""


class LetorWriteError(LetorFormatError, ValueError):
    """Data that a LETOR / svmlight file cannot carry (also a ``ValueError`` for library callers)."""


class LtrfeatWarning(UserWarning):
    """A one-line note about a run that goes on (an assumed setting, possible leakage); the CLI prints
    it as ``warning: ...`` on stderr."""


def line_list(lines, limit: int = 5) -> str:
    """``"3, 7, 9"`` for error messages: the first ``limit`` line numbers, then ``", ..."``."""
    shown = ", ".join(str(int(x)) for x in lines[:limit])
    return shown + (", ..." if len(lines) > limit else "")


@contextlib.contextmanager
def cli_fixes(fixes: dict[str, str]):
    """Re-word the fix of a library error about Python parameter ``param`` as the command's option:
    ``fixes[param]`` (``{role}`` is filled in), e.g. ``{"columns": "map it with --columns {role}=<column>"}``."""
    try:
        yield
    except LtrfeatError as exc:
        if exc.param not in fixes:
            raise
        exc.fix = fixes[exc.param].format(role=exc.role)
        exc.worded = True
        exc.args = (exc._format(),)
        raise


def reword_setting(exc: LtrfeatError, spell) -> None:
    """Re-word ``KEY=VALUE`` in ``exc``'s fix, ``KEY`` being its ``param``, as ``spell(key, value)`` (once)."""
    if exc.param is None or not exc.fix or exc.worded:
        return
    key = exc.param
    pattern = rf"(?<![\w.-]){re.escape(key)}=(?:'([^']*)'|([^\s,;)]+))"
    fix = re.sub(pattern, lambda m: spell(key, m[1] if m[1] is not None else m[2]), exc.fix)
    if fix != exc.fix:
        exc.fix, exc.worded = fix, True
        exc.args = (exc._format(),)


@contextlib.contextmanager
def cli_settings(spell, names):
    """Re-word ``KEY=VALUE`` in the fix of a library error about setting ``KEY`` (its ``param``, one of ``names``)
    as the command line spells it: ``spell(key, value)``, e.g. ``val_fraction=0`` as ``--encoder-option
    val_fraction=0`` in ``ablate`` (the CLI re-words a command's own options itself, see ``ltrfeat.cli.main``)."""
    try:
        yield
    except LtrfeatError as exc:
        if exc.param in names:
            reword_setting(exc, spell)
        raise
