"""benchmarks/quality_small_data.py's data files: written and read by its ablations in one encoding (no real run)."""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks import quality_small_data  # noqa: E402
from benchmarks._common import HOME_DEPOT_COLUMNS  # noqa: E402
from ltrfeat.core.text import read_docs, read_judged_pairs  # noqa: E402


def test_non_ascii_titles_reach_the_ablation_unchanged(tmp_path, monkeypatch):
    titles = ["Café table ½ in.", "Plain shelf", "Señor drill 3°", "Bracket"]
    raw = pd.DataFrame(
        {
            "id": [str(i) for i in range(4)],
            "product_uid": ["1", "2", "3", "4"],
            "product_title": titles,
            "search_term": ["table", "table", "drill", "drill"],
            "relevance": ["3", "1", "2.33", "1"],
        }
    )
    raw.to_csv(tmp_path / "train.csv", index=False, encoding="latin-1")  # as Home Depot ships it
    collection, judged = quality_small_data._data(tmp_path, 2, 0, 0, raw_path=tmp_path / "train.csv")
    calls = []
    monkeypatch.setattr(quality_small_data, "_ltrfeat", lambda *args: calls.append(args) or 0.0)
    quality_small_data._ablate(judged, collection, tmp_path / "report", {}, [], None)
    args = list(map(str, calls[0]))
    encoding = args[args.index("--encoding") + 1]
    pairs = read_judged_pairs(judged, columns=HOME_DEPOT_COLUMNS, encoding=encoding, label_map="linear:1:3:7")
    docs = read_docs(collection, fields=["title"], encoding=encoding)
    assert sorted(pairs["doc"]) == sorted(titles)
    assert sorted(docs["title"]) == sorted(titles)
