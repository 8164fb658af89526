"""Feature extractors: lexical (BM25 and the LETOR family), the columns of the encoders (:mod:`ltrfeat.encoders`:
CLSM, DSSM, DeepMatch, MiniLM) and the extraction pipeline that turns (query, document) pairs into feature columns."""

from ltrfeat.features._moved import alias_moved_modules

__all__ = [  # the public modules
    "corpus",
    "dask_extract",
    "explain",
    "extract",
    "extractor_options",
    "lexical",
    "neural",
    "pins",
    "retrieval",
    "sklearn_tags",
]

alias_moved_modules()  # the old names of the modules that left this package, deprecated (see _moved)
