"""A spec's ``+MOD`` values are a StrEnum (:class:`Pretraining`): typed inside the package, serialised as before."""

from __future__ import annotations

from builders import string_compares
from ltrfeat.encoders.pretraining import Pretraining
from ltrfeat.encoders.registry import encoder_kinds


def test_the_enum_names_every_built_in_mod():
    mods = {mod for kind in encoder_kinds().values() for mod in kind.mods}
    assert {p.value for p in Pretraining} == mods | {"rbm"}
    assert Pretraining("spans+teacher") is Pretraining.SPANS_TEACHER and f"{Pretraining.INIT}" == "init"


def test_no_module_compares_a_pretraining_with_a_string():
    found = string_compares("pretrain", {p.value for p in Pretraining})
    assert not found, f"compare with Pretraining members, not strings: {found}"
