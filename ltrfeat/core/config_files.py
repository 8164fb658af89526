"""Settings files: TOML (``.toml``), YAML (``.yaml``/``.yml``, needs PyYAML) or JSON (``.json``).

:func:`read_config` returns the file's top-level table as a dict; a parse error is a one-line
:class:`~ltrfeat.core.errors.LtrfeatError` naming the file and line. What the keys mean is up to
the reader: the CLI's ``--config`` maps them to a command's options, the encoder configs
(:mod:`ltrfeat.features.encoders.config`) to their settings.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from ltrfeat.core.errors import LtrfeatError

FORMATS = {".toml": "TOML", ".yaml": "YAML", ".yml": "YAML", ".json": "JSON"}


def read_config(path) -> dict:
    """The settings in ``path`` as a dict (the format follows the extension)."""
    path = Path(path)
    kind = FORMATS.get(path.suffix.lower())
    if kind is None:
        raise LtrfeatError(
            "unknown settings file type",
            path=path,
            fix=f"name it with one of {', '.join(FORMATS)} (TOML, YAML or JSON)",
        )
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise LtrfeatError(f"not UTF-8 text (byte {exc.start})", path=path, fix="save the file as UTF-8") from None
    except OSError as exc:
        raise LtrfeatError(f"cannot read: {exc.strerror}", path=path, fix="check the path") from None
    if kind == "TOML":
        values = _toml(text, path)
    elif kind == "YAML":
        values = _yaml(text, path)
    else:
        try:
            values = json.loads(text)
        except json.JSONDecodeError as exc:
            raise LtrfeatError(f"bad JSON: {exc.msg}", path=path, line=exc.lineno, fix="fix the JSON syntax") from None
    if values is None:
        values = {}
    if not isinstance(values, dict):
        raise LtrfeatError(
            f"the {kind} file holds a {type(values).__name__}, not a table of settings",
            path=path,
            fix="write KEY = VALUE settings at the top level (or in a table per command)",
        )
    return values


def _toml(text: str, path: Path) -> dict:
    import tomllib

    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        message = str(exc)
        where = re.search(r"\(at line (\d+), column \d+\)", message)
        line = int(where.group(1)) if where else None
        raise LtrfeatError(
            f"bad TOML: {re.sub(r' ?[(]at .*[)]', '', message)}",
            path=path,
            line=line,
            fix='fix the TOML syntax (strings need quotes: key = "value")',
        ) from None


def _yaml(text: str, path: Path) -> dict:
    try:
        import yaml
    except ImportError:
        raise LtrfeatError(
            "reading YAML needs PyYAML", path=path, fix="pip install pyyaml, or write the settings as TOML"
        ) from None
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise LtrfeatError(
            f"bad YAML: {problem}", path=path, line=None if mark is None else mark.line + 1, fix="fix the YAML syntax"
        ) from None
