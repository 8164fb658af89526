"""docs/README.md lists every docs page, each once and linked (one line each), and the README links to it."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
INDEX = DOCS / "README.md"
ENTRY = re.compile(r"^- \[([\w.-]+\.md)\]\(\1\): \S", re.M)


def test_the_index_lists_every_page_once():
    listed = ENTRY.findall(INDEX.read_text(encoding="utf-8"))
    pages = sorted(p.name for p in DOCS.glob("*.md") if p != INDEX)
    assert sorted(listed) == pages


def test_the_readme_links_to_the_index():
    assert "](docs/README.md)" in (ROOT / "README.md").read_text(encoding="utf-8")


def test_the_new_encoder_table_names_every_field_of_encoder_kind():
    """docs/new-encoder.md's tables name each field of ``EncoderKind`` and each cross-fitting trait a kind may declare
    (a field added without a line fails)."""
    import dataclasses

    from ltrfeat.experiments.crossfit_traits import CrossFitTraits
    from ltrfeat.encoders.kind import EncoderKind

    text = (DOCS / "new-encoder.md").read_text(encoding="utf-8")
    table = "\n".join(line for line in text.splitlines() if line.startswith("| `"))
    named = {
        name.split("(")[0]
        for first in re.findall(r"^\| (.*?) \|", table, re.M)
        for name in re.findall(r"`([^`]+)`", first)
    }
    assert {f.name for f in dataclasses.fields(EncoderKind)} - named == set()
    assert {f.name for f in dataclasses.fields(CrossFitTraits)} - named == set()
