"""Speed of BM25 top-k candidate generation: 100,000 documents x 1,000 queries, k = 100.

Synthetic corpus (seeded): a Zipfian vocabulary of 50,000 words, documents of 20-80 tokens,
queries of 2-5 tokens. Baseline (same process, same tokens): ``bm25s`` (method "lucene",
the same scoring) indexing the pre-tokenised corpus and retrieving the top k (one thread,
like ours). Our
``BM25Retriever`` analyses the raw texts itself, so its figures include tokenisation;
the bm25s ones do not. Also reports how many of bm25s's top-k documents ours returns
(equal up to float ties). Prints seconds and ratios; writes results/retrieval.json.
"""

from __future__ import annotations

import argparse

from _common import timed, write_results

import numpy as np
import pandas as pd

from ltrfeat.core.analysis import Analyzer
from ltrfeat.features.retrieval import BM25Retriever


def corpus(n_docs: int, n_queries: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    vocab = np.array([f"w{i}" for i in range(50_000)], dtype=object)
    p = 1 / np.arange(1, len(vocab) + 1)
    p /= p.sum()
    lengths = rng.integers(20, 81, n_docs)
    tokens = vocab[rng.choice(len(vocab), size=int(lengths.sum()), p=p)]
    bounds = np.concatenate([[0], np.cumsum(lengths)])
    docs = pd.DataFrame(
        {
            "docid": [f"d{i}" for i in range(n_docs)],
            "title": [" ".join(tokens[a:b]) for a, b in zip(bounds[:-1], bounds[1:])],
        }
    )
    queries = pd.DataFrame(
        {
            "qid": [str(i) for i in range(n_queries)],
            "query": [" ".join(vocab[rng.choice(len(vocab), size=rng.integers(2, 6), p=p)]) for _ in range(n_queries)],
        }
    )
    return docs, queries


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=1_000)
    parser.add_argument("--k", type=int, default=100)
    args = parser.parse_args()
    docs, queries = corpus(args.docs, args.queries)
    print(f"{args.docs} docs, {args.queries} queries, k={args.k}")

    fit_s, retriever = timed(lambda: BM25Retriever().fit(docs), repeat=1)
    search_s, ours = timed(lambda: retriever.retrieve(queries, k=args.k), repeat=2)

    import bm25s

    analyzer = Analyzer()
    doc_tokens = analyzer.analyze(docs["title"])
    query_tokens = analyzer.analyze(queries["query"])

    def bm25s_index():
        model = bm25s.BM25(method="lucene", k1=1.2, b=0.75)
        model.index(doc_tokens, show_progress=False)
        return model

    base_fit_s, model = timed(bm25s_index, repeat=1)
    base_search_s, (top, scores) = timed(
        lambda: model.retrieve(query_tokens, k=args.k, show_progress=False, n_threads=1), repeat=2
    )

    # share of bm25s's matching (score > 0) top-k documents that ours returns too
    found = ours.groupby("qid", sort=False)["docid"].apply(set)
    overlap = np.mean(
        [
            len(found.get(qid, set()) & {f"d{i}" for i in t[s > 0]}) / max(int((s > 0).sum()), 1)
            for qid, t, s in zip(queries["qid"], top, scores)
        ]
    )
    figures = {
        "docs": args.docs,
        "queries": args.queries,
        "k": args.k,
        "fit_s": fit_s,
        "retrieve_s": search_s,
        "queries_per_s": args.queries / search_s,
        "bm25s_index_s": base_fit_s,
        "bm25s_search_s": base_search_s,
        "fit_ratio_vs_bm25s": fit_s / base_fit_s,
        "retrieve_ratio_vs_bm25s": search_s / base_search_s,
        "total_ratio_vs_bm25s": (fit_s + search_s) / (base_fit_s + base_search_s),
        "top_k_overlap_with_bm25s": float(overlap),
    }
    for key, value in figures.items():
        print(f"{key:28s} {value:.4g}")
    print(f"wrote {write_results('retrieval', figures)}")


if __name__ == "__main__":
    main()
