"""Converters from public relevance data sets to the project's tables and LETOR files.

:func:`convert` reads a source (``homedepot``, ``crowdflower``, ``cranfield``, ``trec``,
``msmarco``; see :data:`SOURCES`) into a :class:`Converted` (judged pairs, queries,
documents); :func:`write_converted` writes it into a directory atomically;
:func:`convert_to_dir` does both. Sources judged only through qrels get their candidates
from BM25 top-k retrieval over the corpus (:mod:`ltrfeat.features.retrieval`).
"""

from ltrfeat.datasets.converters._base import Converted, Options, SOURCES, convert, resolve_inputs
from ltrfeat.datasets.converters._output import check_out_dir, convert_to_dir, parse_split, write_converted
from ltrfeat.datasets.converters import _kaggle, _cranfield, trec  # noqa: F401,I001  (register the sources, in help order)

__all__ = [
    "Converted",
    "Options",
    "SOURCES",
    "check_out_dir",
    "convert",
    "convert_to_dir",
    "parse_split",
    "resolve_inputs",
    "write_converted",
]
