"""``ltrfeat ablate --pairs`` on a hand-made file sorted by label: tied scores cannot fake a result (issue 49)."""

from __future__ import annotations

import csv
import json
import random
import re

import pytest
from click.testing import CliRunner

from ltrfeat.cli.main import cli
from builders import TINY_ABLATE

PRODUCTS = [
    "red running shoes",
    "cordless power drill",
    "stainless steel kettle",
    "garden hose reel",
    "led desk lamp",
    "memory foam pillow",
    "wireless computer mouse",
    "cast iron skillet",
    "bamboo cutting board",
    "ceramic coffee mug",
    "folding camping chair",
    "glass shower door",
]
FAST = ["--encoder", "dssm:generalized", *TINY_ABLATE, "--encoder-option", "val_fraction=0"]


def _write(path, rows):
    with open(path, "w", newline="") as fh:
        out = csv.writer(fh, delimiter="\t")
        out.writerow(["qid", "query", "docid", "doc", "label"])
        out.writerows(rows)


def test_a_file_sorted_by_label_reports_what_its_shuffled_copy_reports(tmp_path):
    # Each query's six documents share one text, so every feature, encoder and ranker ties them: with ties broken
    # by input order the sorted file scored 1.0000 everywhere, whatever the model
    rows = [
        [f"q{q}", product, f"q{q}d{d}", f"{product.title()} by Acme, model {q}", label]
        for q, product in enumerate(PRODUCTS, 1)
        for d, label in enumerate([2, 1, 0, 0, 0, 0])
    ]
    _write(tmp_path / "sorted.tsv", rows)
    rng = random.Random(0)
    blocks = [rows[i : i + 6] for i in range(0, len(rows), 6)]
    for block in blocks:
        rng.shuffle(block)
    _write(tmp_path / "shuffled.tsv", [r for block in blocks for r in block])
    reports = {}
    for name in ("sorted", "shuffled"):
        result = CliRunner().invoke(
            cli, ["ablate", "--pairs", str(tmp_path / f"{name}.tsv"), *FAST, "--report", str(tmp_path / name)]
        )
        assert result.exit_code == 0, result.output
        reports[name] = json.loads((tmp_path / name / "report.json").read_text())
        reports[name]["html"] = (tmp_path / name / "report.html").read_text()
        reports[name]["md"] = (tmp_path / name / "report.md").read_text()
        reports[name]["printed"] = result.output
    means = {
        name: {(r["feature_set"], r["metric"]): r["mean"] for r in rep["results"]} for name, rep in reports.items()
    }
    assert means["sorted"].keys() == means["shuffled"].keys()
    for key, value in means["sorted"].items():
        assert value == pytest.approx(means["shuffled"][key], abs=1e-12), key
    assert max(means["sorted"].values()) < 1.0
    # NDCG@1: the mean gain (3 + 1) / 6 over the best gain 3
    assert means["sorted"][("recommended", "ndcg@1")] == pytest.approx(2 / 9, abs=1e-12)
    sorted_report = reports["sorted"]
    assert sorted_report["config"]["conventions"]["ties"] == "expected"
    assert "tied scores: expected value over every order of the tied documents" in sorted_report["md"]
    # the warning box says how far the ties move the figure: input order would have given 1.0000
    (tie_warning,) = [w for w in sorted_report["verdict"]["warnings"] if w.startswith("Ties: `recommended`")]
    assert "NDCG@1, 0.2222, is the mean over every order of its ties" in tie_warning
    assert "input order 1.0000 (+0.7778)" in tie_warning
    (printed,) = [line for line in sorted_report["printed"].splitlines() if line.startswith("warning: Ties: `rec")]
    assert printed == f"warning: {tie_warning}"  # no "(Holm-adjusted ...)": ties are not a test
    assert re.search(
        r"<div class=warning id=warnings>.*<li>Ties: \W*(<code>)?recommended.{0,300}input order 1\.0000",
        sorted_report["html"],
        re.S,
    )
