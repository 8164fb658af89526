"""Kinds that other packages declare through entry points (``ltrfeat.encoders``, ``ltrfeat.rankers``)."""

from __future__ import annotations

from typing import Any

__all__ = ["load_entry_points"]


def load_entry_points(group: str, cls: type[Any], table: dict, loaded: dict) -> None:
    """Add every object of entry-point ``group`` that is a ``cls`` to ``table`` by its ``name`` (a name known
    already keeps its kind); once per process (``loaded["entry_points"]`` records it)."""
    if loaded["entry_points"]:
        return
    loaded["entry_points"] = True
    from importlib.metadata import entry_points

    for point in entry_points(group=group):
        kind = point.load()
        if isinstance(kind, cls):
            table.setdefault(kind.name, kind)
