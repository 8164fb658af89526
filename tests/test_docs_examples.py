"""Every ```bash and ```python block of README.md and docs/*.md runs verbatim.

Each file's blocks run in order in a scratch directory holding a link to the committed ``data/``, an empty
``out/`` and, beside it, a link to ``../shared`` (the real data sets, when present). ``ltrfeat`` lines run
in-process through the click application; other shell lines run in bash with this checkout's ``ltrfeat`` on
the PATH; Python blocks share one namespace per file. ``make`` and ``pip install`` lines are not run.

A directive on the line before a fence changes that: ``<!-- doctest: slow -->`` runs the block only under
``-m slow`` (and skips the file politely when it reads ``../shared/datasets`` that is absent);
``<!-- doctest: skip REASON -->`` never runs it. Fences in other languages (``text``, ...) are not run.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import shlex
import signal
import subprocess
import sys
import types
import traceback
from dataclasses import dataclass
from pathlib import Path

import pytest
from click.testing import CliRunner

from ltrfeat.cli.main import cli
from ltrfeat.encoders.losses import loss_names, unregister_loss
from ltrfeat.encoders.registry import encoder_kinds, unregister_encoder
from ltrfeat.rankers import registry

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
DOC_FILES = ["README.md", *sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "docs").glob("*.md"))]
RUN_LANGUAGES = ("bash", "python")
MAX_SKIPS = 12  # skipped blocks over every file: a skip is an example nobody checks

FENCE = re.compile(r"^```(\S*)\s*$")
DIRECTIVE = re.compile(r"^<!--\s*doctest:\s*(\S+)\s*(.*?)\s*-->\s*$")
HEREDOC = re.compile(r"<<-?\s*['\"]?(\w+)['\"]?")
NOT_RUN = ("make ", "pip install ")
SHELL_SYNTAX = {"&&", "||", "|", ";", "&", ">", ">>", "<", "2>", "2>&1"}


@dataclass(frozen=True)
class Block:
    path: str
    line: int  # 1-based line of the opening fence
    language: str
    code: str
    mode: str  # "run", "slow" or "skip"
    reason: str

    @property
    def where(self) -> str:
        return f"{self.path}:{self.line}"


def parse(path: str) -> list[Block]:
    """The fenced blocks of one file, with the directive on the line before each."""
    lines = (ROOT / path).read_text(encoding="utf-8").splitlines()
    blocks, i = [], 0
    while i < len(lines):
        fence = FENCE.match(lines[i])
        if not fence:
            directive = DIRECTIVE.match(lines[i])
            assert not directive or (i + 1 < len(lines) and FENCE.match(lines[i + 1])), (
                f"{path}:{i + 1}: a doctest directive must be on the line right before a fence"
            )
            i += 1
            continue
        start = i
        i += 1
        while i < len(lines) and lines[i].rstrip() != "```":
            i += 1
        assert i < len(lines), f"{path}:{start + 1}: fence never closed"
        mode, reason = "run", ""
        directive = DIRECTIVE.match(lines[start - 1]) if start else None
        if directive:
            mode, reason = directive.groups()
            assert mode in ("slow", "skip"), f"{path}:{start}: unknown doctest directive {mode!r} (slow, skip)"
        code = "\n".join(lines[start + 1 : i]) + "\n"
        blocks.append(Block(path, start + 1, fence.group(1), code, mode, reason))
        i += 1
    return blocks


def shell_commands(code: str) -> list[str]:
    """Commands of a shell block: continuation lines joined, a here-document kept with its command."""
    lines, commands, i = code.splitlines(), [], 0
    while i < len(lines):
        command = lines[i]
        while command.endswith("\\") and i + 1 < len(lines):
            i += 1
            command = command[:-1] + " " + lines[i].strip()
        heredoc = HEREDOC.search(command)
        if heredoc and not command.lstrip().startswith("#"):
            end = i + 1
            while end < len(lines) and lines[end].strip() != heredoc.group(1):
                end += 1
            command = "\n".join([command, *lines[i + 1 : end + 1]])
            i = end
        commands.append(command.strip())
        i += 1
    return [c for c in commands if c and not c.startswith("#") and not c.startswith(NOT_RUN)]


def in_process(command: str) -> tuple[dict[str, str], list[str]] | None:
    """``(environment, arguments)`` for a plain ``ltrfeat`` command line, else None (it needs a shell)."""
    if "\n" in command or "$" in command or "`" in command:
        return None
    words = shlex.split(command, comments=True)
    env = {}
    while words and re.fullmatch(r"[A-Z_][A-Z0-9_]*=.*", words[0]):
        name, value = words.pop(0).split("=", 1)
        env[name] = value
    if not words or words[0] != "ltrfeat" or SHELL_SYNTAX & set(words):
        return None
    return env, words[1:]


def run_shell(command: str, block: Block) -> str:
    """One command: in-process when it is a plain ``ltrfeat`` line, else in bash (a whole block, when it needs one
    shell: a server started in the background goes down with the block's process group)."""
    if parsed := in_process(command):
        env, args = parsed
        result = CliRunner().invoke(cli, args, env=env)
        if result.exit_code != 0:
            trace = "".join(traceback.format_exception(*result.exc_info)) if result.exc_info else ""
            pytest.fail(f"{block.where}: `{command}` exited {result.exit_code}:\n{result.output}{trace}")
        return result.output
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    proc = subprocess.Popen(
        ["bash", "-euo", "pipefail", "-c", command],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    try:
        out, _ = proc.communicate(timeout=900)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
    assert proc.returncode == 0, f"{block.where}: `{command}` exited {proc.returncode}:\n{out[-3000:]}"
    return out


def run_python(block: Block, namespace: dict) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(block.code, block.where, "exec"), namespace)
    return out.getvalue()


def run_file(path: str, modes: tuple[str, ...]) -> list[tuple[Block, str]]:
    """Run a file's blocks of the given modes in order; returns each block with what it printed."""
    module = types.ModuleType("docs_example")  # dataclasses in a block look their module up in sys.modules
    namespace = module.__dict__
    outputs = []
    sys.modules[module.__name__] = module
    for block in parse(path):
        if block.language not in RUN_LANGUAGES or block.mode not in modes:
            continue
        if block.language == "python":
            outputs.append((block, run_python(block, namespace)))
        else:
            commands = shell_commands(block.code)
            if not all(in_process(c) for c in commands):
                commands = ["\n".join(line for line in block.code.splitlines() if not line.startswith(NOT_RUN))]
            outputs.append((block, "".join(run_shell(c, block) for c in commands)))
    del sys.modules[module.__name__]
    return outputs


@pytest.fixture
def scratch(tmp_path, monkeypatch):
    work = tmp_path / "work"
    work.mkdir()
    (work / "data").symlink_to(ROOT / "data")
    (work / "out").mkdir()
    if SHARED.is_dir():
        (tmp_path / "shared").symlink_to(SHARED)
    monkeypatch.chdir(work)
    kinds, encoders, losses = registry.names(), set(encoder_kinds()), set(loss_names())
    torch = sys.modules.get("torch")
    threads = torch.get_num_threads() if torch else None
    yield work
    if threads:  # a command's --threads must not leak into the tests that follow
        torch.set_num_threads(threads)
    for name in set(registry.names()) - set(kinds):  # kinds a page registers
        registry.unregister(name)
    for name in set(encoder_kinds()) - encoders:
        unregister_encoder(name)
    for name in set(loss_names()) - losses:  # losses a page registers
        unregister_loss(name)


def evaluate_json(*args: str) -> dict:
    result = CliRunner().invoke(cli, ["evaluate", *args, "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.output)["metrics"]


def check_rankers(work: Path, outputs: list[tuple[Block, str]]) -> None:
    """The scikit-learn pipeline scores sensibly; re-ranking BM25's run lifts NDCG@10 over it."""
    pipeline = next(out for block, out in outputs if "Pipeline(" in block.code)
    assert 0.5 < float(pipeline.strip().splitlines()[-1]) <= 1.0
    metrics = "ndcg@10,recall@20,map,mrr"
    bm25 = evaluate_json("--qrels", "out/qrels.txt", "--run", "out/bm25.run", "--metrics", metrics)
    reranked = evaluate_json("--qrels", "out/qrels.txt", "--run", "out/reranked.run", "--metrics", metrics)
    assert reranked["ndcg@10"] > bm25["ndcg@10"]
    assert (work / "out" / "reranked.run").read_text().split("\n")[0].endswith(" lambdamart")


def check_api(work: Path, outputs: list[tuple[Block, str]]) -> None:
    """text_folds composes with run_ablation: fold descriptions, a comparison line, the report and its verdict."""
    lines = "".join(out for block, out in outputs if block.language == "python").splitlines()
    assert lines[0] == "query fold 1 of 3 of world/judged.tsv, encoder columns cross-fitted (see Cross-fitting)"
    assert any(line.startswith("lexical+dssm-generalized vs lexical, ndcg@10: ") for line in lines)
    report, recommended = lines[-1].split(" ", 1)
    assert report == "report/report.md" and (work / report).exists() and recommended


def check_shipping(work: Path, outputs: list[tuple[Block, str]]) -> None:
    """The shipped ranker is deployable, the service answers, the OpenSearch upload steps are in the manifest."""
    printed = [out for _, out in outputs]
    meta = json.loads((work / "out" / "ranker-ship.txt.meta.json").read_text())
    assert meta["kind"] in registry.deployable("es-ltr") and f"saved the {meta['kind']} ranker" in printed[0]
    (answer,) = [json.loads(line) for line in printed[1].splitlines() if line.startswith('{"')]
    assert sorted(answer["order"]) == ["D00556", "D00616"] and len(answer["scores"]) == 2
    manifest = json.loads((work / "out" / "os-model.json.export.json").read_text())
    assert "POST _ltr/_featureset/products/_createmodel" in manifest["upload"][3]


def check_new_ranker(work: Path, outputs: list[tuple[Block, str]]) -> None:
    """The registered toy kind is chosen by model selection."""
    printed = [out for _, out in outputs]
    assert printed[1].startswith("chosen: ") and "FeatureSum" in printed[1]


CHECKS = {
    "docs/rankers.md": check_rankers,
    "docs/api.md": check_api,
    "docs/shipping.md": check_shipping,
    "docs/new-ranker.md": check_new_ranker,
}


@pytest.mark.parametrize("path", DOC_FILES)
def test_docs_blocks_run(path, scratch):
    outputs = run_file(path, ("run",))
    if path in CHECKS:
        CHECKS[path](scratch, outputs)


@pytest.mark.slow
@pytest.mark.parametrize("path", DOC_FILES)
def test_docs_blocks_run_with_slow_ones(path, scratch):
    slow = [b for b in parse(path) if b.mode == "slow" and b.language in RUN_LANGUAGES]
    if not slow:
        pytest.skip(f"{path} has no slow block")
    if any("../shared/datasets" in b.code for b in slow) and not (SHARED / "datasets").is_dir():
        pytest.skip(f"{path} reads ../shared/datasets, which is not on this machine")
    run_file(path, ("run", "slow"))


def test_skips_have_reasons_and_stay_few():
    skips = [b for path in DOC_FILES for b in parse(path) if b.mode == "skip"]
    assert all(b.reason for b in skips), [b.where for b in skips if not b.reason]
    assert len(skips) <= MAX_SKIPS, [f"{b.where}: {b.reason}" for b in skips]


def test_parser_reads_directives_heredocs_and_continuations(tmp_path, monkeypatch):
    page = tmp_path / "page.md"
    page.write_text(
        "<!-- doctest: skip needs a cluster -->\n```bash\nltrfeat serve\n```\n"
        "<!-- doctest: slow -->\n```python\nx = 1\n```\n```text\nnot run\n```\n```bash\n"
        "ltrfeat letor info a \\\n    --json   # note\ncat > s.toml <<'TOML'\n[a]\nb = 1\nTOML\nmake demo\n```\n",
        encoding="utf-8",
    )
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    skip, slow, text, bash = parse("page.md")
    assert (skip.mode, skip.reason, slow.mode, text.language) == ("skip", "needs a cluster", "slow", "text")
    first, heredoc = shell_commands(bash.code)
    assert in_process(first) == ({}, ["letor", "info", "a", "--json"])
    assert heredoc.endswith("TOML") and in_process(heredoc) is None
    assert in_process("LTRFEAT_X=1 ltrfeat serve --port 1") == ({"LTRFEAT_X": "1"}, ["serve", "--port", "1"])
    assert in_process("ltrfeat letor validate a && echo ok") is None
