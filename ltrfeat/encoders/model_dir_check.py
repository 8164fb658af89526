"""What a sentence-transformers model directory may declare, checked before transformers reads any of it.

A model directory (``sbert=DIR``, a fine-tuning's base) or the one an ``sbert-ft`` bundle rebuilds may come from
someone else. transformers imports Python code a config names (``auto_map``) and, when not told
``trust_remote_code=False``, asks on stdin whether to; sentence-transformers imports the module classes
``modules.json`` names. :func:`check_model_dir` refuses, naming the file, every declaration that could make a
load import code: an ``auto_map``, a true ``trust_remote_code`` or an ``activation_function`` outside ``torch.nn``
in any JSON file, a transformer ``model_type`` or a ``tokenizer_class`` outside the built-in BERT-family
encoders, a module class outside the four this tool writes, and Python or native code files. The loaders also
pass ``trust_remote_code=False``.
"""

from __future__ import annotations

import json
from pathlib import Path

from ltrfeat.core.errors import ModelFileError

# Transformer architectures built into transformers that sentence-transformers encoders use (MiniLM is bert).
MODEL_TYPES = frozenset({"bert", "distilbert", "mpnet", "roberta", "xlm-roberta"})
TOKENIZER_CLASSES = frozenset(
    f"{name}{fast}"
    for name in ("BertTokenizer", "DistilBertTokenizer", "MPNetTokenizer", "RobertaTokenizer", "XLMRobertaTokenizer")
    for fast in ("", "Fast")
)
# Module classes of modules.json (the class name; the package prefix moved between sentence-transformers versions).
MODULE_CLASSES = frozenset({"Transformer", "Pooling", "Normalize", "Dense"})
MODEL_DIR_FIX = (
    "use a sentence-transformers model of a built-in BERT-family architecture (ltrfeat never runs a model's own code)"
)
CODE_SUFFIXES = frozenset({".py", ".pyc", ".pyo", ".pyd", ".so", ".dll", ".dylib"})


def _imports(key: str, value) -> bool:
    """Whether a JSON ``key: value`` names code to import (a Dense module's activation may be a torch.nn class)."""
    if key == "activation_function":
        return not (isinstance(value, str) and value.startswith("torch.nn."))
    return key == "auto_map" or (key == "trust_remote_code" and value is not False)


def _declared_keys(data) -> set:
    """The keys naming code to import at any depth of parsed JSON ``data`` (iterative: any nesting depth)."""
    found: set[str] = set()
    stack = [data]
    while stack:
        value = stack.pop()
        if isinstance(value, dict):
            found.update(k for k, v in value.items() if _imports(k, v))
            stack.extend(value.values())
        elif isinstance(value, list):
            stack.extend(value)
    return found


def _problem(name: str, data) -> str | None:
    """Why a model directory's JSON file called ``name`` (parsed: ``data``) could make a load run code, or None."""
    keys = _declared_keys(data)
    if keys:
        return f"declares {' and '.join(sorted(keys))} (code to import)"
    if name == "modules.json":
        types = [m.get("type") if isinstance(m, dict) else None for m in data] if isinstance(data, list) else [None]
        bad = [t for t in types if not (isinstance(t, str) and _known_module(t))]
        return (
            f"names module class(es) {', '.join(repr(str(t)[:80]) for t in bad)}, not sentence-transformers'"
            if bad
            else None
        )
    if not isinstance(data, dict):
        return None
    if name == "config.json" and "model_type" in data and not _named(data["model_type"], MODEL_TYPES):
        return f"declares model_type {str(data['model_type'])[:60]!r}, not one of {', '.join(sorted(MODEL_TYPES))}"
    if name == "tokenizer_config.json" and not _named(
        data.get("tokenizer_class") or "BertTokenizer", TOKENIZER_CLASSES
    ):
        return f"declares tokenizer_class {str(data['tokenizer_class'])[:60]!r}, not a built-in BERT-family tokenizer"
    return None


def _named(value, allowed: frozenset) -> bool:
    return isinstance(value, str) and value in allowed


def _known_module(type_name: str) -> bool:
    package, _, name = type_name.rpartition(".")
    return package.split(".")[0] == "sentence_transformers" and name in MODULE_CLASSES


def check_model_dir(folder, *, fix: str, bundle=None) -> None:
    """Refuse a model directory ``folder`` that declares code to run (see the module docstring) with a one-line
    :class:`ModelFileError` naming the file; ``fix`` is the error's advice. ``bundle``: the ``.ltrenc`` file the
    folder was rebuilt from, named (with the file inside it) instead of the temporary folder."""
    folder = Path(folder)
    files = sorted(folder.rglob("*"))
    for file in [f for f in files if f.suffix.lower() == ".json" and f.is_file()]:
        try:
            problem = _problem(file.name, json.loads(file.read_text(encoding="utf-8")))
        except (OSError, UnicodeDecodeError, ValueError, RecursionError):
            problem = "is not valid UTF-8 JSON"
        if problem:
            raise _refused(folder, file, problem, bundle=bundle, fix=fix)
    for file in [f for f in files if f.suffix.lower() in CODE_SUFFIXES]:
        problem = "is a code file (a model directory holds only configs, vocabularies and weights)"
        raise _refused(folder, file, problem, bundle=bundle, fix=fix)


def _refused(folder: Path, file: Path, problem: str, *, bundle, fix: str) -> ModelFileError:
    if bundle is None:
        return ModelFileError(problem, path=file, fix=fix)
    return ModelFileError(f"bundle file {file.relative_to(folder).as_posix()} {problem}", path=bundle, fix=fix)
