"""The modules that left ``ltrfeat.features``, still importable by their old names with a DeprecationWarning.

An encoder plug-in (an entry point of the ``ltrfeat.encoders`` group) written before the encoders got their own layer
imports ``ltrfeat.features.encoders.registry``; that name now resolves to the module object of
``ltrfeat.encoders.registry`` itself -- not a second copy, so there is still one registry and one ``EncoderKind``.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import warnings

MOVED = {  # old module path -> new one (their submodules follow)
    "ltrfeat.features.encoders": "ltrfeat.encoders",
    "ltrfeat.features.hashing": "ltrfeat.encoders.hashing",
    "ltrfeat.features.leakage": "ltrfeat.encoders.leakage",
    "ltrfeat.features.analysis": "ltrfeat.core.analysis",
}


def new_name(name: str) -> str | None:
    """Where the module ``name`` lives now (None: it did not move)."""
    for old, new in MOVED.items():
        if name == old or name.startswith(old + "."):
            return new + name[len(old) :]
    return None


class _Alias(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Imports an old name as the module of its new one (first on ``sys.meta_path``: the path finder would load a
    second copy from the new package's ``__path__``)."""

    def find_spec(self, fullname, path=None, target=None):
        new = new_name(fullname)
        if new is None:
            return None
        module = importlib.import_module(new)
        return importlib.machinery.ModuleSpec(fullname, self, is_package=hasattr(module, "__path__"))

    def create_module(self, spec):
        new = new_name(spec.name)
        warnings.warn(f"{spec.name} moved to {new}: import that instead", DeprecationWarning, stacklevel=2)
        return sys.modules[new]

    def exec_module(self, module) -> None:
        """The module ran when imported by its new name."""


def alias_moved_modules() -> None:
    """Make the old names importable (once per process)."""
    if not any(isinstance(finder, _Alias) for finder in sys.meta_path):
        sys.meta_path.insert(0, _Alias())
