"""docs/report.md runs as written: every ```bash and ```python block in order, from a scratch directory holding
a link to the committed ``data/``."""

from __future__ import annotations

import contextlib
import io
import json
import re
import shlex
from pathlib import Path

from click.testing import CliRunner

from ltrfeat.cli.main import cli

ROOT = Path(__file__).resolve().parents[1]


def test_docs_report_blocks_run_verbatim(tmp_path, monkeypatch):
    (tmp_path / "data").symlink_to(ROOT / "data")
    (tmp_path / "out").mkdir()
    monkeypatch.chdir(tmp_path)
    text = (ROOT / "docs" / "report.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```(bash|python)\n(.*?)```", text, flags=re.S)
    assert [lang for lang, _ in blocks].count("bash") >= 2
    printed = []
    for lang, block in blocks:
        if lang == "python":
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                exec(compile(block, "docs/report.md", "exec"), {"__name__": "docs"})
            printed.append(out.getvalue())
            continue
        for line in re.sub(r"\\\n\s*", " ", block).splitlines():
            args = shlex.split(line)
            assert args[0] == "ltrfeat", line
            res = CliRunner().invoke(cli, args[1:])
            assert res.exit_code == 0, (line, res.output)
            printed.append(res.output)
    assert (tmp_path / "out" / "abl" / "report.html").is_file()
    page = (tmp_path / "out" / "abl" / "report.html").read_text(encoding="utf-8")
    assert '"drill":{"sets"' in page  # report --html rebuilt the per-query view from runs/
    assert "reranked" in (tmp_path / "out" / "compare.html").read_text(encoding="utf-8")
    assert "| `reranked` | ndcg@10 |" in printed[-1]
    assert json.loads((tmp_path / "out" / "abl" / "report.json").read_text())["summary"]
