"""The modules that left ``ltrfeat.features`` (the encoders' own layer, issue 50) keep their old names for plug-ins
written before: each import warns and gives the new module itself, never a second copy."""

from __future__ import annotations

import subprocess
import sys

import pytest

from ltrfeat.features._moved import MOVED, new_name

OLD_IMPORTS = {
    "from ltrfeat.features.encoders.registry import EncoderKind, register_encoder": "ltrfeat.encoders.registry",
    "from ltrfeat.features.encoders import registry": "ltrfeat.encoders.registry",
    "import ltrfeat.features.encoders.losses.base": "ltrfeat.encoders.losses.base",
    "from ltrfeat.features.hashing import TrigramHasher": "ltrfeat.encoders.hashing",
    "from ltrfeat.features.leakage import LeakageGuard": "ltrfeat.encoders.leakage",
    "from ltrfeat.features.analysis import Analyzer": "ltrfeat.core.analysis",
}


@pytest.mark.parametrize("statement", OLD_IMPORTS)
def test_an_old_name_warns_and_gives_the_new_module(statement):
    """In a fresh interpreter (an imported module is not imported again): the warning names the new path, the old
    name is the same module object, so a kind registered through it is in the one registry."""
    old = statement.split()[1]
    code = (
        "import importlib, sys, warnings\n"
        "with warnings.catch_warnings(record=True) as caught:\n"
        "    warnings.simplefilter('always')\n"
        f"    {statement}\n"
        f"new = importlib.import_module({OLD_IMPORTS[statement]!r})\n"
        f"assert sys.modules[{old!r}] is importlib.import_module({new_name(old)!r})\n"
        "if 'register_encoder' in dir():\n"
        "    assert register_encoder is new.register_encoder and EncoderKind is new.EncoderKind\n"
        "print([(w.category.__name__, str(w.message), w.filename) for w in caught])\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    warned = eval(out.stdout)
    assert warned and all(category == "DeprecationWarning" for category, _, _ in warned), warned
    assert f"{old} moved to {new_name(old)}: import that instead" in [message for _, message, _ in warned]
    assert all(filename == "<string>" for _, _, filename in warned), "the warning points at the importing line"


def test_every_moved_name_maps_into_its_new_home():
    assert new_name("ltrfeat.features.encoders.losses.base") == "ltrfeat.encoders.losses.base"
    assert new_name("ltrfeat.features.encoders_extra") is None and new_name("ltrfeat.features.lexical") is None
    for old, new in MOVED.items():
        assert new_name(old) == new
        __import__(new)  # each new home exists


def test_the_current_names_do_not_warn():
    code = (
        "import warnings; warnings.simplefilter('error')\n"
        "import ltrfeat.features.neural, ltrfeat.encoders.registry, ltrfeat.encoders.hashing, ltrfeat.core.analysis\n"
    )
    out = subprocess.run([sys.executable, "-W", "error", "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
