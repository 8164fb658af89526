"""Feature extractors: lexical (BM25 and the LETOR family), neural encoders (CLSM, DSSM, DeepMatch, MiniLM) and
the extraction pipeline that turns (query, document) pairs into feature columns."""

__all__ = [  # the public modules
    "analysis",
    "corpus",
    "dask_extract",
    "encoders",
    "explain",
    "extract",
    "extractor_options",
    "hashing",
    "leakage",
    "lexical",
    "neural",
    "pins",
    "retrieval",
    "sklearn_tags",
]
