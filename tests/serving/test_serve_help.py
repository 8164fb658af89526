"""``serve --help``'s example request is one a ranker on title and description answers."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("httpx")

from click.testing import CliRunner  # noqa: E402
from fastapi.testclient import TestClient  # noqa: E402

from ltrfeat.cli.main import cli  # noqa: E402
from ltrfeat.serving.app import create_app  # noqa: E402
from ltrfeat.serving.scorer import Scorer  # noqa: E402

DATA = Path(__file__).resolve().parents[2] / "data"


def _example_body() -> dict:
    text = CliRunner().invoke(cli, ["serve", "--help"], terminal_width=200).output
    start = text.index("-d '", text.index("/score")) + len("-d '")
    return json.loads(re.sub(r"\s*\n\s*", " ", text[start : text.index("'", start)]))


def test_the_help_example_request_is_answered_by_a_title_and_description_ranker(tmp_path):
    run = CliRunner().invoke
    extracted = run(
        cli,
        ["extract", str(DATA / "vali.letor"), "--queries", str(DATA / "queries.tsv"), "--docs", str(DATA / "docs.tsv"),
         "--fields", "title,description", "--lexical", "bm25", "--save-corpus-stats", str(tmp_path / "c.npz"),
         "--out", str(tmp_path / "v.letor")],
    )  # fmt: skip
    assert extracted.exit_code == 0, extracted.output
    trained = run(
        cli,
        ["train-ranker", str(tmp_path / "v.letor"), "--features", "bm25_*", "--n-estimators", "5",
         "--out", str(tmp_path / "r.txt")],
    )  # fmt: skip
    assert trained.exit_code == 0, trained.output
    scorer = Scorer.load(tmp_path / "r.txt", corpus_stats=tmp_path / "c.npz")
    assert sorted(scorer.fields) == ["description", "title"]
    with TestClient(create_app(scorer), base_url="http://localhost") as client:
        answer = client.post("/score", json=_example_body())
    assert answer.status_code == 200, answer.text
    assert answer.json()["order"] == ["d1"]
