"""The README's scikit-learn pipeline and TREC re-ranking story run as written (blocks marked
``# README example:``), from a scratch directory holding a link to the committed ``data/``."""

from __future__ import annotations

import contextlib
import io
import json
import re
import shlex
from pathlib import Path

import pytest
from click.testing import CliRunner

from ltrfeat.cli.main import cli

ROOT = Path(__file__).resolve().parents[1]
pytest.importorskip("ir_measures")


def blocks(language: str) -> list[str]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    found = re.findall(rf"```{language}\n(# README example:.*?)```", text, flags=re.S)
    assert found, f"no README example in {language}"
    return found


def commands(block: str) -> list[list[str]]:
    joined = re.sub(r"\\\n\s*", " ", block)
    return [shlex.split(line)[1:] for line in joined.splitlines() if line.startswith("ltrfeat ")]


def run_python(block: str) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(block, "README.md", "exec"), {"__name__": "readme"})
    return out.getvalue()


def test_readme_sklearn_pipeline(scratch):
    block = next(b for b in blocks("python") if "Pipeline" in b)
    ndcg = float(run_python(block).strip())
    assert 0.5 < ndcg <= 1.0


def test_readme_trec_rerank_and_evaluate(scratch):
    run_python(next(b for b in blocks("python") if "write_trec_run" in b))
    results = []
    for args in commands(next(b for b in blocks("bash") if "ltrfeat rerank" in b)):
        if args[0] == "evaluate":
            args = [*args, "--json"]
        res = CliRunner().invoke(cli, args)
        assert res.exit_code == 0, (args, res.output)
        if args[0] == "evaluate":
            results.append(json.loads(res.output)["metrics"])
    bm25, reranked = results
    assert reranked["ndcg@10"] > bm25["ndcg@10"]
    assert (scratch / "out" / "reranked.run").read_text().split("\n")[0].endswith(" lambdamart")
