"""The ``python`` blocks of docs/ pages run as written, one page at a time in a scratch directory."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

DOCS = Path(__file__).resolve().parents[1] / "docs"


def python_blocks(page: str) -> list[str]:
    text = (DOCS / page).read_text(encoding="utf-8")
    return re.findall(r"```python\n(.*?)```", text, flags=re.S)


def run_page(page: str) -> str:
    """Every python block of ``page`` in one namespace, as a reader pastes them one after the other; the output."""
    out, namespace = io.StringIO(), {"__name__": "docs"}
    with contextlib.redirect_stdout(out):
        for block in python_blocks(page):
            exec(compile(block, str(DOCS / page), "exec"), namespace)
    return out.getvalue()


def test_api_page_composes_text_folds_with_run_ablation(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert len(python_blocks("api.md")) == 2
    lines = run_page("api.md").splitlines()
    assert lines[0] == ("query fold 1 of 3 of world/judged.tsv, encoder columns cross-fitted (see Cross-fitting)")
    assert any(line.startswith("lexical+dssm-generalized vs lexical, ndcg@10: ") for line in lines)
    report, recommended = lines[-1].split(" ", 1)
    assert report == "report/report.md" and (tmp_path / report).exists() and recommended
