"""Click logs simulated under the position-based model, with their truth, for the propensity and debiasing tests."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pandas as pd


def pbm_log(
    *,
    n_queries: int = 300,
    n_docs: int = 12,
    shown: int = 10,
    sessions: int = 30,
    exponent: float = 1.0,
    noise: float = 0.4,
    seed: int = 0,
):
    """A positioned click log (query, docid, position, impressions, clicks; one row per shown position) of
    ``sessions`` sessions per query: the production ranker orders ``n_docs`` documents by attractiveness plus
    noise (reshuffled per session by ``noise``), users examine position r with r^-exponent and click an examined
    document with its attractiveness. Returns a ClickLog-like object with ``positioned``, ``totals``,
    ``has_positions``, ``source``, the ``impressions`` (session, query, docid, position, clicked) and the truth:
    ``attraction`` (per query, docid) and ``examination``."""
    rng = np.random.default_rng(seed)
    examination = np.arange(1, shown + 1, dtype=float) ** -exponent
    rows = []
    truth = []
    for q in range(n_queries):
        attraction = rng.beta(0.6, 1.8, n_docs)
        base = attraction + rng.normal(0, 0.3, n_docs)
        for d in range(n_docs):
            truth.append((f"q{q}", f"d{q}_{d}", attraction[d]))
        scores = base + rng.normal(0, noise, (sessions, n_docs))
        rank = np.argsort(np.argsort(-scores, axis=1), axis=1)
        seen = rank < shown
        p = np.where(seen, examination[np.minimum(rank, shown - 1)], 0.0) * attraction
        clicked = rng.random(p.shape) < p
        s, d = np.nonzero(seen)
        rows.append(
            pd.DataFrame(
                {
                    "session": [f"{q}-{i}" for i in s],
                    "query": f"q{q}",
                    "docid": [f"d{q}_{i}" for i in d],
                    "position": rank[s, d] + 1,
                    "clicked": clicked[s, d],
                }
            )
        )
    impressions = pd.concat(rows, ignore_index=True).astype({"clicked": "int64"})
    positioned = (
        impressions.groupby(["query", "docid", "position"], sort=True)
        .agg(impressions=("clicked", "size"), clicks=("clicked", "sum"))
        .reset_index()
        .astype({"position": "int64", "impressions": "int64", "clicks": "int64"})
    )
    totals = positioned.groupby(["query", "docid"], sort=True)[["impressions", "clicks"]].sum().reset_index()
    totals["doc"] = "text of " + totals["docid"]
    return SimpleNamespace(
        impressions=impressions,
        positioned=positioned,
        totals=totals,
        has_positions=True,
        source="simulated",
        examination=examination,
        attraction=pd.DataFrame(truth, columns=["query", "docid", "attraction"]),
    )


def write_log(tmp_path, log) -> tuple:
    """``log``'s impression-level file (``clicks.tsv``) and documents table (``docs.tsv``, docid and title)."""
    path, docs = tmp_path / "clicks.tsv", tmp_path / "docs.tsv"
    log.impressions.to_csv(path, sep="\t", index=False)
    log.totals[["docid", "doc"]].rename(columns={"doc": "title"}).to_csv(docs, sep="\t", index=False)
    return path, docs


def one_line_error(result, *fragments) -> None:
    """``result`` (a CliRunner result) is a one-line ``error: ...`` with exit code 2 holding every fragment."""
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.output
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
