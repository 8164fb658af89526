"""Split many texts into words at once: maximal runs of letters and digits, one byte string for all.

Both tokenisers of the project (the lexical :class:`~ltrfeat.core.analysis.Analyzer` and the trigram
:class:`~ltrfeat.encoders.hashing.TrigramHasher`) cut words at every character that is not a letter or a
digit. For ASCII text -- nearly all product and web search text -- that is one ``bytes.translate`` (a
256-byte table) and one ``split`` over the joined texts, instead of ``re.findall`` with a Unicode class
(figures: benchmarks/results/docstring-timings.md). A non-ASCII text is first reduced to its words (the caller's exact Unicode rule) joined by
spaces, so both paths give the same words.
"""

from __future__ import annotations

from collections.abc import Callable

SEPARATOR = b"\x00"  # a token of its own between texts: never part of a word
# bytes kept: ASCII letters and digits, NUL (the separator) and >= 0x80 (only in words already cut by
# the caller's rule); every other ASCII byte, "_" included, breaks words
_BREAKS = bytes(i if i >= 0x80 or i == 0 or chr(i).isalnum() else 0x20 for i in range(256))


def joined_words(
    texts: list[str], *, words_of: Callable[[str], list[str]], lowercase: bool, delete: bytes = b""
) -> bytes:
    """UTF-8 words of every text, separated by spaces, with ``SEPARATOR`` between texts.

    ``words_of`` gives the words of a non-ASCII text (already lowercased if ``lowercase``); ASCII bytes
    in ``delete`` (e.g. apostrophes) are removed without breaking the word. ``.split()`` on the result
    gives each text's words with a ``SEPARATOR`` token between consecutive texts.
    """
    texts = [t if t.isascii() else " ".join(words_of(t)) for t in texts]
    joined = " \x00 ".join(texts).encode("utf-8")
    if joined.count(SEPARATOR) >= len(texts) > 0:  # a text holds NUL itself: a word break there
        joined = " \x00 ".join(t.replace("\x00", " ") for t in texts).encode("utf-8")
    if lowercase:
        joined = joined.lower()  # ASCII only: non-ASCII texts come lowercased from words_of
    return joined.translate(_BREAKS, delete)
