"""The figures the README and docs/experiments.md quote from `make demo` are those of
``benchmarks/results/demo.json`` (written by ``benchmarks/demo_figures.py`` from a fresh demo), and, in the slow
tier, that file is what a fresh demo gives: a change that moves the demo's numbers fails here until the results file
is re-made and the prose follows it."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results" / "demo.json"


def _figures() -> dict:
    return json.loads(RESULTS.read_text(encoding="utf-8"))["figures"]


def _squash(text: str) -> str:
    return " ".join(text.split())


def _short(x: float) -> str:
    """``.9124``: how the prose writes a metric."""
    return f"{x:.4f}".removeprefix("0")


def _lifts(figures: dict, metric: str) -> dict:
    return {k.split("|")[0]: v for k, v in figures["lifts"].items() if k.endswith(f"|{metric}") and "+all" not in k}


def test_the_readme_quotes_the_demo():
    f = _figures()
    readme = _squash((ROOT / "README.md").read_text(encoding="utf-8"))
    lexical, recommended = f["means"]["lexical"], f["means"]["recommended"]
    at10 = _lifts(f, "ndcg@10")
    assert at10 and all(v["p_holm"] < 0.01 for v in at10.values())  # "every neural feature lifts NDCG@10"
    low, high = (100 * min(v["relative"] for v in at10.values()), 100 * max(v["relative"] for v in at10.values()))
    assert f"+{low:.1f} % to +{high:.1f} % over the lexical ranker's {_short(lexical['ndcg@10'])}" in readme
    at3 = {k: v for k, v in _lifts(f, "ndcg@3").items() if v["p_holm"] < 0.05}
    assert at3 and all(f"`{k}` also lifts NDCG@3 (+{100 * v['relative']:.1f} %" in readme for k, v in at3.items())
    assert all(v["p_holm"] >= 0.05 for v in _lifts(f, "ndcg@1").values())  # "at NDCG@1 nothing changes"
    assert f"first for ~{round(100 * lexical['ndcg@1'])} % of queries" in readme
    pick, kind = f["recommended"].split(" / ")
    assert f"`{pick} / {kind}` in {f['chosen_in_folds']} of {f['n_folds']} folds" in readme
    assert f"reaches NDCG@10 {_short(recommended['ndcg@10'])} against {_short(lexical['ndcg@10'])}" in readme


def test_the_experiments_page_shows_the_demo_output():
    page = (ROOT / "docs" / "experiments.md").read_text(encoding="utf-8")
    block = re.search(r"A real run.*?```text\n(.*?)```", page, re.S).group(1)
    printed = _squash("\n".join(_figures()["output"]))
    paragraphs, current = [], []
    for line in block.splitlines():
        if line.strip() in ("", "..."):
            paragraphs.append(current)
            current = []
        elif line.startswith(" ") and current:  # a wrapped continuation of the line above
            current.append(line)
        else:
            paragraphs.append(current)
            current = [line]
    paragraphs.append(current)
    quoted = [_squash("\n".join(p)) for p in paragraphs if p]
    assert len(quoted) > 10
    for text in quoted:
        assert text in printed, text


def test_the_readme_quotes_the_candidate_growth_benchmark():
    """The README's "offering more" figures: the default rule's recommendation and BM25 alone, NDCG@1, with
    everything offered (benchmarks/quality_candidate_growth.py)."""
    figures = json.loads((ROOT / "benchmarks" / "results" / "quality_candidate_growth.json").read_text())["figures"]
    worlds = ["sample/readme", "homedepot300/readme", "homedepot1000/readme", "homedepot/readme", "mq2008"]
    worlds += ["long0/readme", "long1/readme", "long2/readme"]
    rows = [figures[w]["criterion"]["tiered|ndcg@1"] for w in worlds]
    assert all(r["pass"] for r in rows)  # >= best single - 1 SE and >= BM25 alone
    readme = _squash((ROOT / "README.md").read_text(encoding="utf-8"))
    mine = " / ".join(_short(r["recommended"]) for r in rows)
    bm25 = " / ".join(_short(r["bm25_alone"]["mean"]) for r in rows)
    assert f"(NDCG@1 {mine} vs BM25 {bm25})" in readme


@pytest.mark.slow
def test_a_fresh_demo_gives_the_results_file(tmp_path):
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from demo_figures import figures_of, printed

    out = tmp_path / "demo-out"
    done = subprocess.run(
        [sys.executable, "-m", "ltrfeat.cli.main", "demo", "--out", str(out)],
        capture_output=True,
        text=True,
        env={**os.environ, "CI": "1"},
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    stored = _figures()
    fresh = figures_of(json.loads((out / "report" / "report.json").read_text()))
    assert {k: stored[k] for k in fresh} == json.loads(json.dumps(fresh))
    assert printed(done.stdout) == stored["output"]
