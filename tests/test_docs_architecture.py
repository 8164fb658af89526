"""The README's architecture section and docs/architecture.md agree with the package tree: a package or module
added, moved or removed without the docs fails here."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "ltrfeat"
NAMED_PACKAGE = re.compile(r"`(ltrfeat/(?:[\w]+/)*)`")


def packages() -> dict[str, set[str]]:
    """Every package of the tree (``ltrfeat/``, ``ltrfeat/core/``, ...) with its modules, ``__init__.py`` aside."""
    found = {}
    for init in PACKAGE.rglob("__init__.py"):
        folder = init.parent
        name = "/".join(("ltrfeat", *folder.relative_to(PACKAGE).parts)) + "/"
        found[name] = {p.name for p in folder.glob("*.py") if p.name != "__init__.py"}
    return found


def section(text: str, heading: str) -> str:
    start = text.index(f"\n## {heading}\n")
    end = text.find("\n## ", start + 1)
    return text[start : end if end > 0 else len(text)]


def test_readme_architecture_names_every_subpackage():
    named = set(NAMED_PACKAGE.findall(section((ROOT / "README.md").read_text(encoding="utf-8"), "Architecture")))
    tree = packages()
    top = {name for name in tree if name.count("/") == 2}
    assert top <= named, f"README.md's Architecture section does not name {sorted(top - named)}"
    assert named <= set(tree), f"README.md's Architecture section names {sorted(named - set(tree))}, not in ltrfeat/"


def test_architecture_page_names_every_module():
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    rows = {}
    for line in text.splitlines():
        if cells := re.match(r"^\|\s*`(ltrfeat/(?:[\w]+/)*)`\s*\|(.*)\|\s*$", line):
            rows[cells.group(1)] = set(re.findall(r"`(\w+\.py)`", cells.group(2))) - {"__init__.py"}
    tree = packages()
    assert set(rows) == set(tree), (
        f"docs/architecture.md's module table: rows missing for {sorted(set(tree) - set(rows))}, "
        f"rows for packages that do not exist: {sorted(set(rows) - set(tree))}"
    )
    for name, modules in tree.items():
        assert rows[name] == modules, (
            f"docs/architecture.md's row for {name}: not named {sorted(modules - rows[name])}, "
            f"named but absent {sorted(rows[name] - modules)}"
        )


def test_the_docs_name_only_test_and_benchmark_files_that_exist():
    """A test or benchmark file named in README.md or docs/*.md (``tests/x/test_y.py``, ``benchmarks/z.py``) exists:
    a renamed or removed one fails here, not in a reader's shell."""
    named = re.compile(r"`((?:tests|benchmarks)/[\w/.-]+\.py)")
    missing = [
        f"{page.relative_to(ROOT)}: {path}"
        for page in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
        for path in named.findall(page.read_text(encoding="utf-8"))
        if not (ROOT / path).is_file()
    ]
    assert missing == []
