"""Other packages' encoder and ranker kinds, found through the ``ltrfeat.encoders`` / ``ltrfeat.rankers``
entry-point groups (docs/new-encoder.md, docs/new-ranker.md)."""

from __future__ import annotations

import importlib.metadata
import sys

import pytest

from ltrfeat.core.errors import LtrfeatError
from ltrfeat.encoders import registry as encoders
from ltrfeat.rankers import registry as rankers
from ltrfeat.rankers.selection import SelectionConfig

PLUGIN = """
from ltrfeat.encoders.kind import EncoderKind
from ltrfeat.rankers.registry import RankerKind

ENCODER = EncoderKind(name="plug-enc", summary="an encoder from another package", load=lambda path=None: None)
RANKER = RankerKind("plug-rank", "ltrfeat.rankers.kinds:LINEAR", 99, summary="a ranker from another package")
NOT_A_KIND = "ignored"
"""


@pytest.fixture
def plugin(tmp_path, monkeypatch):
    """A package module declaring one kind of each in the two groups (plus an entry that is not a kind)."""
    (tmp_path / "ltrfeat_plugin.py").write_text(PLUGIN)
    monkeypatch.syspath_prepend(str(tmp_path))
    points = [
        importlib.metadata.EntryPoint("plug-enc", "ltrfeat_plugin:ENCODER", encoders.ENCODER_ENTRY_POINTS),
        importlib.metadata.EntryPoint("plug-rank", "ltrfeat_plugin:RANKER", rankers.RANKER_ENTRY_POINTS),
        importlib.metadata.EntryPoint("junk", "ltrfeat_plugin:NOT_A_KIND", rankers.RANKER_ENTRY_POINTS),
    ]
    monkeypatch.setattr(importlib.metadata, "entry_points", lambda group: [p for p in points if p.group == group])
    monkeypatch.setitem(encoders._LOADED, "entry_points", False)
    monkeypatch.setitem(rankers._LOADED, "entry_points", False)
    yield
    encoders.unregister_encoder("plug-enc")
    rankers.unregister("plug-rank")
    sys.modules.pop("ltrfeat_plugin", None)


def test_an_encoder_kind_is_found_through_its_entry_point(plugin):
    assert "ltrfeat_plugin" not in sys.modules  # nothing loaded before the first lookup
    assert encoders.encoder_kind("plug-enc").summary == "an encoder from another package"
    assert list(encoders.encoder_kinds())[-1] == "plug-enc"  # after the built-in kinds
    with pytest.raises(LtrfeatError, match="unknown encoder kind 'nope'; use one of clsm, .*plug-enc"):
        encoders.encoder_kind("nope")


def test_a_ranker_kind_is_found_through_its_entry_point(plugin):
    assert "ltrfeat_plugin" not in sys.modules
    assert rankers.get("plug-rank").simplicity == 99
    assert rankers.names()[-1] == "plug-rank" and "junk" not in rankers.names()
    assert SelectionConfig(candidates=("plug-rank", "linear")).candidates == ("plug-rank", "linear")


def test_listing_the_ranker_kinds_loads_the_entry_points(plugin):
    assert "plug-rank" in rankers.names() and rankers.simplicity_order()[-1] == "plug-rank"
    with pytest.raises(LtrfeatError, match="unknown ranker kind 'nope'; choose from .*plug-rank"):
        rankers.get("nope")
