"""docs/ pages run as written: the ``python`` blocks of api.md (one page at a time in a scratch directory), and every
```bash and ```python block of shipping.md and new-ranker.md in page order, from a scratch directory that links the
committed ``data/`` (bash blocks in bash with this checkout's ``ltrfeat`` first on the PATH)."""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from ltrfeat.rankers import registry

DOCS = Path(__file__).resolve().parents[1] / "docs"
ROOT = DOCS.parent


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


def blocks(page: Path) -> list[tuple[str, str]]:
    """``(language, code)`` of the page's bash and python blocks, in order."""
    return re.findall(r"```(bash|python)\n(.*?)```", page.read_text(encoding="utf-8"), flags=re.S)


def run_bash(code: str, cwd: Path) -> str:
    env = os.environ | {
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        "PYTHONPATH": str(ROOT),
    }
    proc = subprocess.Popen(
        ["bash", "-euo", "pipefail", "-c", code],
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,  # a background server the block starts goes down with it
    )
    try:
        out, _ = proc.communicate(timeout=900)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
    assert proc.returncode == 0, out.decode(errors="replace")[-3000:]
    return out.decode(errors="replace")


@pytest.fixture
def scratch(tmp_path, monkeypatch):
    (tmp_path / "data").symlink_to(ROOT / "data")
    (tmp_path / "out").mkdir()
    monkeypatch.chdir(tmp_path)
    kinds = registry.names()
    yield tmp_path
    for name in set(registry.names()) - set(kinds):  # kinds a page registers
        registry.unregister(name)


@pytest.mark.parametrize("name", ["shipping.md", "new-ranker.md"])
def test_page_runs_as_written(name, scratch):
    page = DOCS / name
    namespace: dict = {"__name__": "docs"}
    outputs = []
    for language, code in blocks(page):
        if language == "bash":
            outputs.append(run_bash(code, scratch))
        else:
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                exec(compile(code, str(page), "exec"), namespace)
            outputs.append(out.getvalue())
    if page.name == "shipping.md":
        meta = json.loads((scratch / "out" / "ranker-ship.txt.meta.json").read_text())
        assert meta["kind"] in registry.deployable("es-ltr") and f"saved the {meta['kind']} ranker" in outputs[0]
        (answer,) = [json.loads(line) for line in outputs[1].splitlines() if line.startswith('{"')]
        assert sorted(answer["order"]) == ["D00556", "D00616"] and len(answer["scores"]) == 2
        manifest = json.loads((scratch / "out" / "os-model.json.export.json").read_text())
        assert "POST _ltr/_featureset/products/_createmodel" in manifest["upload"][3]
    if page.name == "new-ranker.md":
        assert outputs[1].startswith("chosen: ") and "FeatureSum" in outputs[1]
