"""The lexical settings' defaults (BM25 k1 and b, mu, ...) have one source, ``ltrfeat.features.lexical.LEXICAL_DEFAULTS``:
no other module writes one as a literal (a parameter's default, a dataclass field, ``.get(name, value)``, a CLI
option's ``default=``)."""

from __future__ import annotations

import ast
from pathlib import Path

import ltrfeat
from ltrfeat.features.lexical import LEXICAL_DEFAULTS

ROOT = Path(ltrfeat.__file__).parent
NUMERIC = {name for name, value in LEXICAL_DEFAULTS.items() if isinstance(value, float)}


def _literal(node) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool)


def _literal_defaults(tree):
    """``(line, setting)`` of each literal default of a lexical setting in ``tree``."""
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            args = node.args
            positional = args.posonlyargs + args.args
            pairs = list(zip(positional[len(positional) - len(args.defaults) :], args.defaults))
            pairs += [(a, d) for a, d in zip(args.kwonlyargs, args.kw_defaults) if d is not None]
            yield from ((d.lineno, a.arg) for a, d in pairs if a.arg in NUMERIC and _literal(d))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            if node.target.id in NUMERIC and node.value is not None and _literal(node.value):
                yield node.lineno, node.target.id
        elif isinstance(node, ast.Call):
            args = node.args
            if isinstance(node.func, ast.Attribute) and node.func.attr == "get" and len(args) == 2:
                if isinstance(args[0], ast.Constant) and args[0].value in NUMERIC and _literal(args[1]):
                    yield node.lineno, args[0].value
            names = [a.value for a in args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
            setting = next((n.lstrip("-").replace("-", "_") for n in names if n.startswith("--")), None)
            if setting in NUMERIC:
                yield from (
                    (k.value.lineno, setting) for k in node.keywords if k.arg == "default" and _literal(k.value)
                )


def test_no_module_but_lexical_writes_a_lexical_default():
    found = [
        f"{path.relative_to(ROOT)}:{line}: {setting}"
        for path in sorted(ROOT.rglob("*.py"))
        if path != ROOT / "features" / "lexical.py"
        for line, setting in _literal_defaults(ast.parse(path.read_text()))
    ]
    assert found == []


def test_the_check_finds_each_way_of_writing_one():
    source = (
        "def f(*, k1=1.2): ...\n"
        "class O:\n    b: float = 0.75\n"
        "x = settings.get('mu', 2000.0)\n"
        "o = click.option('--jm-lambda', type=float, default=0.1)\n"
    )
    assert sorted(_literal_defaults(ast.parse(source))) == [(1, "k1"), (3, "b"), (4, "mu"), (5, "jm_lambda")]
