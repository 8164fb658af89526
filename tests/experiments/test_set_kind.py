"""Feature-set kinds are a StrEnum: typed inside the package, serialised as before."""

from __future__ import annotations

import ast
import dataclasses
import json
from pathlib import Path

import pytest

import ltrfeat
from builders import string_compares
from ltrfeat.core.errors import LtrfeatError
from ltrfeat.experiments.feature_sets import FeatureSet
from ltrfeat.experiments.set_kind import SetKind

OWNED_ELSEWHERE = {"experiments/crossfit.py"}  # its split is under way in another branch


def test_a_kind_given_as_its_value_becomes_the_enum_and_serialises_as_before():
    fs = FeatureSet("bm25_title", ["bm25_title"], "alone")
    assert fs.kind is SetKind.ALONE and FeatureSet("x", ["a"]).kind is SetKind.RANKER
    assert json.dumps(dataclasses.asdict(fs)) == (
        '{"name": "bm25_title", "columns": ["bm25_title"], "kind": "alone", "offered": true}'
    )
    assert f"{fs.kind}" == "alone" and fs.kind == "alone"


def test_an_unknown_kind_is_refused_in_one_line():
    with pytest.raises(LtrfeatError, match=r"feature set 'x' has kind 'lone'; use one of ranker, alone") as info:
        FeatureSet("x", ["a"], "lone")
    assert "\n" not in str(info.value)


def test_no_module_compares_a_set_kind_with_a_string():
    values = {k.value for k in SetKind}
    found = string_compares("kind", values, skip=OWNED_ELSEWHERE)
    root = Path(ltrfeat.__file__).parent
    for path in sorted(root.rglob("*.py")):  # and no FeatureSet(...) made with a kind's string
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "FeatureSet":
                given = [*node.args, *(k.value for k in node.keywords)]
                if any(isinstance(a, ast.Constant) and a.value in values for a in given):
                    found.append(f"{path.relative_to(root)}:{node.lineno}")
    assert not found, f"compare with SetKind members, not strings: {found}"
