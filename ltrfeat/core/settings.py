"""One settings policy: the base of every config class and its declarative constraints.

A config is a frozen dataclass deriving from :class:`Settings`. Its ``_parameter_constraints`` table (as in
scikit-learn) lists, per field, the values it accepts: an :class:`Interval`, :class:`OneOf`, a type, or
None (the value None). Every field in the table is checked when the config is made; checks that involve
several fields go in ``_check``. Every refusal is a :class:`~ltrfeat.core.errors.ParameterError` (both an
:class:`~ltrfeat.core.errors.LtrfeatError` and a ``ValueError``) naming the setting.

The base gives every config the same surface: :meth:`~Settings.names`, :meth:`~Settings.from_dict` /
:meth:`~Settings.to_dict` (plain JSON values; unknown keys refused with the known ones),
:meth:`~Settings.from_file` (a TOML/YAML/JSON file or one of its tables), :meth:`~Settings.build` and
:meth:`~Settings.replace`.
"""

from __future__ import annotations

import dataclasses
import math
import numbers
from typing import Any, ClassVar, TypeVar

from ltrfeat.core.errors import LtrfeatError, ParameterError

__all__ = ["MAX_THREADS", "SEED", "Interval", "OneOf", "Settings", "check_value", "describe_constraint"]

S = TypeVar("S", bound="Settings")


class Interval:
    """Numbers of ``kind`` (``numbers.Integral`` or ``numbers.Real``) between ``left`` and ``right``
    (None: unbounded); ``closed`` is ``"left"``, ``"right"``, ``"both"`` or ``"neither"``. Booleans, NaN
    and infinities are refused."""

    def __init__(self, kind, left=None, right=None, *, closed: str = "both"):
        self.kind, self.left, self.right, self.closed = kind, left, right, closed

    def accepts(self, value) -> bool:
        if isinstance(value, bool) or not isinstance(value, self.kind) or not math.isfinite(value):
            return False
        if self.left is not None and not (value >= self.left if self.closed in ("left", "both") else value > self.left):
            return False
        return self.right is None or (value <= self.right if self.closed in ("right", "both") else value < self.right)

    def __str__(self) -> str:
        what = "an integer" if self.kind is numbers.Integral else "a number"
        low = ">=" if self.closed in ("left", "both") else ">"
        high = "<=" if self.closed in ("right", "both") else "<"
        if self.right is None:
            return what if self.left is None else f"{what} {low} {self.left}"
        if self.left is None:
            return f"{what} {high} {self.right}"
        brackets = ("[" if low == ">=" else "(") + "{}, {}" + ("]" if high == "<=" else ")")
        return f"{what} in {brackets.format(self.left, self.right)}"


MAX_THREADS = 1024  # threads, worker processes: beyond it an engine hangs or crashes instead of refusing


class OneOf:
    """One of the given values (compared by equality, of the values' own type)."""

    def __init__(self, *values):
        self.values = values

    def accepts(self, value) -> bool:
        return any(type(value) is type(v) and value == v for v in self.values)

    def __str__(self) -> str:
        return "one of " + ", ".join(map(str, self.values))


SEED = Interval(numbers.Integral, 0, 2**32 - 1)  # every seed: numpy, LightGBM, XGBoost and torch take [0, 2**32)

_TYPE_WORDS = {
    bool: "True or False",
    dict: "a mapping",
    str: "a string",
    tuple: "a tuple",
    list: "a list",
    numbers.Integral: "an integer",
    numbers.Real: "a number",
}


def describe_constraint(constraint) -> str:
    """A constraint in words (for error messages and ``--help``)."""
    if constraint is None:
        return "None"
    if isinstance(constraint, type):
        name = constraint.__name__
        return _TYPE_WORDS.get(constraint, f"{'an' if name[0] in 'AEIOUaeiou' else 'a'} {name}")
    return str(constraint)


def _accepts(constraint, value) -> bool:
    if constraint is None:
        return value is None
    if isinstance(constraint, type):
        return isinstance(value, constraint) and (constraint is bool or not isinstance(value, bool))
    return constraint.accepts(value)


def check_value(name: str, value, constraints, *, fix: str | None = None) -> None:
    """Raise a :class:`ParameterError` unless ``value`` meets one of ``constraints``."""
    if not any(_accepts(c, value) for c in constraints):
        wanted = " or ".join(describe_constraint(c) for c in constraints)
        raise ParameterError(f"{name} must be {wanted}, got {value!r}", fix=fix, param=name)


def _plain(value):
    if isinstance(value, Settings):
        return value.to_dict()
    if isinstance(value, (tuple, list)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


class Settings:
    """Base of every config class (see the module docstring); subclasses are frozen dataclasses.

    ``label`` names the settings in messages (``"LambdaMART has no setting 'x'"``); ``_parameter_constraints``
    maps a field to the values it accepts; ``_fixes`` maps a field to the fix its error suggests;
    ``_nested`` maps a field to the config class its plain value is read with.
    """

    label: ClassVar[str] = "settings"
    _parameter_constraints: ClassVar[dict[str, list]] = {}
    _fixes: ClassVar[dict[str, str]] = {}
    _nested: ClassVar[dict[str, type[Settings]]] = {}
    __dataclass_fields__: ClassVar[dict[str, dataclasses.Field[Any]]]  # set by @dataclass on each subclass

    def __post_init__(self):
        for name, constraints in self._parameter_constraints.items():
            check_value(name, getattr(self, name), constraints, fix=self._fixes.get(name))
        self._check()

    def _check(self) -> None:
        """Checks that involve several settings (raise :class:`ParameterError`)."""

    def _set(self, name: str, value) -> None:
        """Normalise a field of the frozen config while it is made (e.g. a list into a tuple)."""
        object.__setattr__(self, name, value)

    @classmethod
    def names(cls) -> tuple[str, ...]:
        """The settings this config holds, in order."""
        return tuple(f.name for f in dataclasses.fields(cls))

    @classmethod
    def from_dict(cls: type[S], values: dict[str, Any], *, source=None) -> S:
        """A config from plain values (``to_dict``'s output, a settings file's table); unknown keys are an error
        naming ``source`` (a file) and the known settings."""
        return cls(**cls._read(values, source))

    @classmethod
    def _read(cls, values: dict[str, Any], source) -> dict[str, Any]:
        unknown = sorted(set(values) - set(cls.names()))
        if unknown:
            raise ParameterError(
                f"{cls.label} has no setting {unknown[0]!r}", path=source, fix=f"use one of {', '.join(cls.names())}"
            )
        tuples = {f.name for f in dataclasses.fields(cls) if str(f.type).startswith("tuple")}
        settings = {}
        for key, value in values.items():
            if key in cls._nested and isinstance(value, dict):
                value = cls._nested[key].from_dict(value, source=source)
            elif key in tuples and isinstance(value, list):
                value = tuple(value)
            settings[key] = value
        return settings

    @classmethod
    def from_file(cls: type[S], path, *, table: str | None = None) -> S:
        """A config from a TOML/YAML/JSON file's top level, or from its ``table`` (e.g. ``"encoder"``); dashes
        in keys read as underscores."""
        from ltrfeat.core.config_files import read_config

        values = read_config(path)
        if table is not None:
            inner = values.get(table)
            if not isinstance(inner, dict):
                raise ParameterError(f"no [{table}] table", path=path, fix=f"put the settings in a [{table}] table")
            values = inner
        try:
            return cls.from_dict({k.replace("-", "_"): v for k, v in values.items()}, source=path)
        except LtrfeatError as exc:
            raise ParameterError(exc.problem, path=path, fix=exc.fix or "fix the setting") from None
        except (TypeError, ValueError) as exc:
            raise ParameterError(str(exc), path=path, fix="fix the setting") from None

    @classmethod
    def build(cls: type[S], config: S | None = None, options: dict[str, Any] | None = None) -> S:
        """``config`` (default: all defaults) with ``options`` replacing some of its settings."""
        if config is not None and not isinstance(config, cls):
            raise TypeError(f"config must be a {cls.__name__}, got {type(config).__name__}")
        base = cls() if config is None else config
        if not options:
            return base
        return cls(**{**{n: getattr(base, n) for n in cls.names()}, **cls._read(options, None)})

    def replace(self: S, **changes) -> S:
        """A copy with ``changes`` (checked like a new config)."""
        return type(self).build(self, changes)

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON values (tuples as lists, mappings copied, nested configs as their ``to_dict``)."""
        return {name: _plain(getattr(self, name)) for name in self.names()}
