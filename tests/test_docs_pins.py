"""docs/feature-pins.md and docs/export-parity.md: every bash block runs as written, from a scratch
directory holding a link to the committed ``data/`` (Home Depot blocks where that data set is beside
the repository, as ``../shared/datasets/home_depot``)."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest
from click.testing import CliRunner

from ltrfeat.cli.main import cli

ROOT = Path(__file__).resolve().parents[1]
HOME_DEPOT = ROOT.parent / "shared" / "datasets" / "home_depot"


def bash_blocks(page: str) -> list[str]:
    return re.findall(r"```bash\n(.*?)```", (ROOT / "docs" / page).read_text(encoding="utf-8"), flags=re.S)


def run_block(block: str) -> list:
    results = []
    for line in re.sub(r"\\\n\s*", " ", block).splitlines():
        if line.startswith("ltrfeat "):
            result = CliRunner().invoke(cli, shlex.split(line)[1:])
            assert result.exit_code == 0, f"{line}\n{result.output}"
            results.append(result)
    return results


@pytest.fixture
def scratch(tmp_path, monkeypatch):
    (tmp_path / "data").symlink_to(ROOT / "data")
    (tmp_path / "out").mkdir()
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.mark.slow
def test_feature_pins_page(scratch):
    pins, leakage = bash_blocks("feature-pins.md")
    run_block(pins)
    assert json.loads(Path("out/test.k1.letor.features.json").read_text())["pipeline"][0]["k1"] == 0.5
    refused = CliRunner().invoke(
        cli, ["serve", "--ranker", "out/ranker.k1.txt", "--corpus-stats", "out/k1.npz", "--k1", "1.2"]
    )
    assert refused.exit_code == 2 and "k1 1.2 (--k1) differs from the k1 0.5" in refused.output
    *_, extracted = run_block(leakage)
    assert "warning: encoder clsm was trained on 48 of the 48 queries scored" in extracted.output


def test_export_parity_page_sample(scratch):
    sample = next(b for b in bash_blocks("export-parity.md") if "data/judged.tsv" in b)
    *_, exported = run_block(sample)
    report = json.loads(Path("out/judged.json.parity.json").read_text())
    assert report["features"]["bm25_doc"]["differ"] == 0.0 and "bm25_doc" in exported.output


@pytest.mark.slow
def test_export_parity_page_home_depot(tmp_path, monkeypatch):
    if not HOME_DEPOT.exists():
        pytest.skip("the Home Depot data set is not beside the repository")
    (tmp_path / "shared" / "datasets").mkdir(parents=True)
    (tmp_path / "shared" / "datasets" / "home_depot").symlink_to(HOME_DEPOT)
    (tmp_path / "repo" / "out").mkdir(parents=True)
    monkeypatch.chdir(tmp_path / "repo")  # the page's commands run from the repository, beside shared/
    run_block(next(b for b in bash_blocks("export-parity.md") if "home_depot" in b))
    report = json.loads(Path("out/hd.json.parity.json").read_text())
    assert report["rows"] == 74067 and report["features"]["bm25_doc"]["differ"] == 0.0
    assert {name: f["differ"] for name, f in report["features"].items() if f["differ"]} == {}  # tf and coverage too
