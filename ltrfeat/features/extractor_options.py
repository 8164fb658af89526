"""The extractors an extraction's options ask for (``ltrfeat extract``; Python callers alike), with the lexical
settings completed from saved corpus statistics by the rule scoring uses (:func:`ltrfeat.features.pins.with_corpus_record`)."""

from __future__ import annotations

from ltrfeat.core.errors import LtrfeatError
from ltrfeat.features import extract as ex
from ltrfeat.features import neural
from ltrfeat.core.analysis import Analyzer
from ltrfeat.features.corpus import CorpusStats
from ltrfeat.features.lexical import LexicalExtractor
from ltrfeat.features.pins import with_corpus_record


def build_extractors(
    *,
    lexical: str | None,
    fields: list[str],
    stem: str | None,
    stopwords: str | None,
    corpus_path: str | None,
    lexical_params: dict,
    encoders=(),
) -> list:
    """Every extractor the options ask for, in output column order (one place to add kinds).

    Lexical settings not given (None) come from the ``corpus_path`` file's record when it has one (a given one that
    contradicts it is an error), else the defaults; so does the analyzer when neither ``stem`` nor ``stopwords`` is
    given."""
    corpus = CorpusStats.load(corpus_path) if corpus_path else None
    analyzer = (
        None
        if corpus is not None and stem is None and stopwords is None
        else Analyzer(stemmer=stem, stopwords=stopwords)
    )
    extractors: list = ex.lexical_extractors(
        lexical or "", fields=fields, analyzer=analyzer, corpus=corpus, **with_corpus_record(lexical_params, corpus)
    )
    extractors += neural.encoder_extractors(encoders, fields=fields)
    if not extractors:
        raise LtrfeatError(
            "no extractor chosen", fix="pass --lexical NAMES and/or --encoder KIND=MODEL (see `ltrfeat features list`)"
        )
    return extractors


def name_corpus_file(extractors, path, docs, queries) -> None:
    """Fit the lexical extractors' corpus statistics now, so the output's pipeline record names ``path``, where
    :func:`ltrfeat.features.extract.save_corpus_stats` saves them after the extraction (nothing without a path)."""
    if path:
        for extractor in ex.fit_extractors([e for e in extractors if isinstance(e, LexicalExtractor)], docs, queries):
            extractor.corpus_.source = str(path)
