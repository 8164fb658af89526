"""BM25 and the full lexical feature set on all 74k judged (query, title) pairs of Home Depot.

Compares, in one run, our vectorised :class:`LexicalExtractor` with rank_bm25
(``BM25Okapi.get_batch_scores`` per query) and bm25s (``method="lucene"``, ``get_scores`` per
query, judged documents picked out). The references receive our analyzer's tokens and an
index built beforehand, so their figures are pure scoring time; ours are given twice: scoring
from analysed tokens (the same work) and end-to-end from raw text (analysis included).
Also checks that our BM25 equals bm25s's on every pair.

Run: python benchmarks/bench_lexical.py
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._common import home_depot_pairs, timed, write_results  # noqa: E402
from ltrfeat.core.analysis import Analyzer  # noqa: E402
from ltrfeat.features.lexical import LexicalExtractor  # noqa: E402

K1, B = 1.2, 0.75


def load():
    pairs, docs = home_depot_pairs()
    docs = docs.reset_index(drop=True).rename(columns={"doc": "title"})
    title = docs.set_index("docid")["title"]
    table = pd.DataFrame(
        {
            "qid": pairs["qid"].to_numpy(),
            "query": pairs["query"].to_numpy(),
            "docid": pairs["docid"].to_numpy(),
            "title": title.loc[pairs["docid"]].to_numpy(),
        }
    )
    return table, docs


def main():
    pairs, docs = load()
    n = len(pairs)
    an = Analyzer()
    doc_tokens = an.analyze(docs["title"])
    position = pd.Index(docs["docid"]).get_indexer(pairs["docid"])
    groups = list(pairs.groupby("qid", sort=False).indices.values())
    query_tokens = {g[0]: an.tokens(pairs["query"].iat[g[0]]) for g in groups}
    print(f"Home Depot: {n} judged pairs, {len(groups)} queries, {len(docs)} products")

    fit_s, ours = timed(lambda: LexicalExtractor(features=["bm25"], fields=["title"], k1=K1, b=B).fit(docs), repeat=1)
    encoded = ours.encode(pairs)
    score_s, ours_scores = timed(lambda: ours.score(encoded)[:, 0])
    e2e_s, _ = timed(lambda: ours.transform(pairs))

    from rank_bm25 import BM25Okapi

    rb = BM25Okapi(doc_tokens, k1=K1, b=B)

    def rank_bm25_scores():
        out = np.zeros(n)
        for g in groups:
            out[g] = rb.get_batch_scores(query_tokens[g[0]], position[g].tolist())
        return out

    rb_s, _ = timed(rank_bm25_scores, repeat=1)

    import bm25s

    retriever = bm25s.BM25(method="lucene", k1=K1, b=B)
    retriever.index(doc_tokens, show_progress=False)

    def bm25s_scores():
        out = np.zeros(n)
        for g in groups:
            ids = retriever.get_tokens_ids(query_tokens[g[0]])
            if ids:
                out[g] = retriever.get_scores_from_ids(ids)[position[g]]
        return out

    bs_s, bs_scores = timed(bm25s_scores, repeat=1)
    max_diff = float(np.abs(ours_scores - bs_scores).max())

    start = time.perf_counter()
    full = LexicalExtractor(features="all", fields=["title"]).fit(docs)
    full_fit_s = time.perf_counter() - start
    full_s, X = timed(lambda: full.transform(pairs), repeat=1)

    rate = lambda s: n / s  # noqa: E731
    figures = {
        "pairs": n,
        "queries": len(groups),
        "documents": len(docs),
        "ours_fit_s": fit_s,
        "ours_score_s": score_s,
        "ours_end_to_end_s": e2e_s,
        "rank_bm25_score_s": rb_s,
        "bm25s_score_s": bs_s,
        "ours_score_pairs_per_s": rate(score_s),
        "ours_end_to_end_pairs_per_s": rate(e2e_s),
        "rank_bm25_pairs_per_s": rate(rb_s),
        "bm25s_pairs_per_s": rate(bs_s),
        "score_vs_rank_bm25": rb_s / score_s,
        "score_vs_bm25s": bs_s / score_s,
        "end_to_end_vs_rank_bm25": rb_s / e2e_s,
        "end_to_end_vs_bm25s": bs_s / e2e_s,
        "max_abs_diff_vs_bm25s": max_diff,
        "full_set_columns": X.shape[1],
        "full_set_fit_s": full_fit_s,
        "full_set_transform_s": full_s,
        "full_set_total_s": full_fit_s + full_s,
    }
    print(f"BM25 scoring, {n} pairs (pairs/s; ratio = their time / ours):")
    print(f"  ours, from analysed tokens   {rate(score_s):>12,.0f}/s   {score_s:7.3f} s")
    print(f"  ours, end-to-end from text   {rate(e2e_s):>12,.0f}/s   {e2e_s:7.3f} s")
    print(
        f"  rank_bm25 get_batch_scores   {rate(rb_s):>12,.0f}/s   {rb_s:7.3f} s   "
        f"ours x{rb_s / score_s:,.0f} (tokens), x{rb_s / e2e_s:,.1f} (end-to-end)   target >= 50"
    )
    print(
        f"  bm25s lucene get_scores      {rate(bs_s):>12,.0f}/s   {bs_s:7.3f} s   "
        f"ours x{bs_s / score_s:,.1f} (tokens), x{bs_s / e2e_s:,.1f} (end-to-end)   target >= 1"
    )
    print(f"  max |ours - bm25s| over all pairs: {max_diff:.2e}")
    print(
        f"Full lexical set ({X.shape[1]} columns): fit {full_fit_s:.2f} s + transform {full_s:.2f} s "
        f"= {full_fit_s + full_s:.2f} s   target < 10 s"
    )
    print(f"results: {write_results('bench_lexical', figures)}")


if __name__ == "__main__":
    main()
