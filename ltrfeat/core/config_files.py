"""Settings files: TOML (``.toml``), YAML (``.yaml``/``.yml``, needs PyYAML) or JSON (``.json``).

:func:`read_config` returns the file's top-level table as a dict; a parse error is a one-line
:class:`~ltrfeat.core.errors.LtrfeatError` naming the file and line. What the keys mean is up to
the reader: the CLI's ``--config`` maps them to a command's options, the encoder configs
(:mod:`ltrfeat.encoders.config`) to their settings.

Files are untrusted input, so reading is bounded: at most :data:`MAX_BYTES` bytes, :data:`MAX_DEPTH`
levels of nesting (checked before parsing for JSON, as a recursion limit otherwise), :data:`MAX_NODES`
values once YAML aliases are expanded (a "billion laughs" file is refused before it is built), and
integers Python can convert; each breach is a one-line error.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np

from ltrfeat.core.errors import LtrfeatError

MAX_BYTES = 16 * 2**20
MAX_DEPTH = 64
MAX_NODES = 1_000_000
_OPEN, _CLOSE = np.zeros(256, np.int8), np.zeros(256, np.int8)
_OPEN[[ord("["), ord("{")]] = 1
_CLOSE[[ord("]"), ord("}")]] = 1
_SYNTAX = (_OPEN != 0) | (_CLOSE != 0)
_SYNTAX[[ord('"'), ord("\\")]] = True


def json_depth(body: bytes) -> int:
    """Deepest nesting of ``[``/``{`` in a JSON text (brackets inside strings do not count).

    Linear time whatever the text holds: a quote is escaped when an odd run of backslashes precedes
    it, a byte lies inside a string when an odd number of unescaped quotes precede it, all found with
    array operations (an unterminated string simply runs to the end) over the positions of the bytes
    that matter (quotes, backslashes, brackets): few in a body of text, so 1 MB takes ~2 ms, not ~60."""
    raw = np.frombuffer(body, dtype=np.uint8)
    pos = np.flatnonzero(_SYNTAX[raw])
    if not len(pos):
        return 0
    val = raw[pos]
    index = np.arange(len(pos), dtype=np.int64)
    backslash = val == ord("\\")
    after_backslash = np.zeros(len(pos), dtype=bool)  # the byte just before this one is a backslash
    after_backslash[1:] = backslash[:-1] & (pos[1:] == pos[:-1] + 1)
    # each backslash's place in its run (runs of adjacent backslashes), then the run ending just before each byte
    start = np.maximum.accumulate(np.where(backslash & ~after_backslash, index, -1))
    run = np.where(backslash, index - start + 1, 0)
    run_before = np.zeros(len(pos), dtype=np.int64)
    run_before[1:] = np.where(after_backslash[1:], run[:-1], 0)
    quote = (val == ord('"')) & (run_before % 2 == 0)
    in_string = (np.cumsum(quote) - quote) % 2 == 1  # opening quotes count as outside, closing as inside
    step = np.where(in_string | quote, 0, _OPEN[val] - _CLOSE[val])
    return int(np.cumsum(step, dtype=np.int64).max(initial=0))


SETTINGS_FORMATS = {".toml": "TOML", ".yaml": "YAML", ".yml": "YAML", ".json": "JSON"}


def read_config(path) -> dict:
    """The settings in ``path`` as a dict (the format follows the extension)."""
    path = Path(path)
    kind = SETTINGS_FORMATS.get(path.suffix.lower())
    if kind is None:
        raise LtrfeatError(
            "unknown settings file type",
            path=path,
            fix=f"name it with one of {', '.join(SETTINGS_FORMATS)} (TOML, YAML or JSON)",
        )
    try:
        if path.stat().st_size > MAX_BYTES:
            raise LtrfeatError(
                f"settings file of {path.stat().st_size} bytes (the limit is {MAX_BYTES})",
                path=path,
                fix="a settings file holds a few options; check that this is the right file",
            )
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise LtrfeatError(f"not UTF-8 text (byte {exc.start})", path=path, fix="save the file as UTF-8") from None
    except OSError as exc:
        raise LtrfeatError(f"cannot read: {exc.strerror}", path=path, fix="check the path") from None
    try:
        if kind == "TOML":
            values = _toml(text, path)
        elif kind == "YAML":
            values = _yaml(text, path)
        else:
            values = _json(text, path)
    except RecursionError:
        raise LtrfeatError(
            f"settings nest deeper than this reader follows (the limit is {MAX_DEPTH} levels)",
            path=path,
            fix="flatten the settings",
        ) from None
    except ValueError as exc:  # an integer of more digits than int() converts
        raise LtrfeatError(
            f"a value cannot be read: {str(exc).split(';')[0]}", path=path, fix="write numbers of sensible size"
        ) from None
    if values is None:
        values = {}
    if not isinstance(values, dict):
        raise LtrfeatError(
            f"the {kind} file holds a {type(values).__name__}, not a table of settings",
            path=path,
            fix="write KEY = VALUE settings at the top level (or in a table per command)",
        )
    return values


def _too_deep(depth: int, path: Path) -> LtrfeatError:
    return LtrfeatError(
        f"settings nest {depth} levels deep (the limit is {MAX_DEPTH})", path=path, fix="flatten the settings"
    )


def _json(text: str, path: Path):
    depth = json_depth(text.encode("utf-8", "surrogatepass"))
    if depth > MAX_DEPTH:
        raise _too_deep(depth, path)
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise LtrfeatError(f"bad JSON: {exc.msg}", path=path, line=exc.lineno, fix="fix the JSON syntax") from None


def _toml(text: str, path: Path) -> dict:
    import tomllib

    depth = json_depth(text.encode("utf-8", "surrogatepass"))  # [ and { nesting (a bound: quotes are JSON's)
    if depth > MAX_DEPTH:
        raise _too_deep(depth, path)

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
    flow = json_depth(text.encode("utf-8", "surrogatepass"))  # [ and { nesting (a bound: quotes are JSON's)
    block = max((len(line) - len(line.lstrip(" -")) for line in text.splitlines()), default=0) // 2
    if max(flow, block) > MAX_DEPTH:
        raise _too_deep(max(flow, block), path)
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
        _check_yaml_graph(node, path)
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise LtrfeatError(
            f"bad YAML: {problem}", path=path, line=None if mark is None else mark.line + 1, fix="fix the YAML syntax"
        ) from None


def _check_yaml_graph(node, path: Path) -> None:
    """Refuse a composed YAML document deeper than :data:`MAX_DEPTH` or of more than :data:`MAX_NODES`
    values with its aliases expanded (each node's expanded size is counted once, so this is linear in
    the file even for an alias bomb)."""
    if node is None:
        return
    size: dict[int, int] = {}
    open_nodes: set[int] = set()  # entered, not yet sized: meeting one again is a cycle
    stack = [(node, 1, False)]
    while stack:
        current, depth, done = stack.pop()
        if depth > MAX_DEPTH:
            raise _too_deep(depth, path)
        children = _yaml_children(current)
        if done:
            size[id(current)] = 1 + sum(size[id(c)] for c in children)
            if size[id(current)] > MAX_NODES:
                raise LtrfeatError(
                    f"settings expand to more than {MAX_NODES} values (YAML aliases repeat nodes)",
                    path=path,
                    fix="write the settings out instead of nesting aliases",
                )
            continue
        if id(current) in size:
            continue
        if id(current) in open_nodes:
            raise LtrfeatError("a YAML alias refers to a node that contains it", path=path, fix="write it out")
        open_nodes.add(id(current))
        stack.append((current, depth, True))
        stack.extend((c, depth + 1, False) for c in children if id(c) not in size)


def _yaml_children(node) -> list:
    value = node.value
    if isinstance(value, list):
        return [x for pair in value for x in pair] if value and isinstance(value[0], tuple) else list(value)
    return []
