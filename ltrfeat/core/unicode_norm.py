"""NFKC in linear time: Unicode's Stream-Safe Text Format before :func:`unicodedata.normalize`.

CPython's NFKC is quadratic in the length of a run of combining marks (non-starters) it has to
reorder and compose: ``'a' + 40,000 x '\\u0301\\u0316'`` takes ~1.3 s, ten times as many ~130 s,
and the call holds the GIL throughout, so every other thread of the process waits. UAX #15's
Stream-Safe Text Format bounds such runs: after 30 consecutive non-starters a COMBINING GRAPHEME
JOINER (U+034F, a starter with no effect on any word here: it is not a letter or digit) is inserted.
Text without such a run -- all real text -- is normalised exactly as before; a longer run keeps every
character, but marks beyond the 30th no longer reorder or compose with the base letter.
"""

from __future__ import annotations

import functools
import re
import unicodedata

MAX_NON_STARTERS = 30  # UAX #15, Stream-Safe Text Format
_CGJ = "\u034f"
# every character whose decomposition starts with a non-starter lies in the first two planes (Unicode 15:
# the last is U+1E94A) or among the tags and variation selectors of plane 14
_SCANNED = (range(0x20000), range(0xE0000, 0xE1000))


@functools.cache
def _long_runs(astral: bool) -> re.Pattern:
    """Runs of more than :data:`MAX_NON_STARTERS` characters whose NFKD decomposition starts with a non-starter
    (the combining marks themselves, and e.g. U+0F73 whose class is 0 but whose decomposition is two marks);
    ``astral``: also those beyond U+FFFF (a character class of the BMP alone is matched ten times faster)."""
    combining, decomposition = unicodedata.combining, unicodedata.decomposition
    ranges: list[list[int]] = []
    for block in _SCANNED if astral else (range(0x10000),):
        for code in block:
            ch = chr(code)
            if combining(ch) or (decomposition(ch) and combining(unicodedata.normalize("NFKD", ch)[0])):
                if ranges and ranges[-1][1] == code - 1:
                    ranges[-1][1] = code
                else:
                    ranges.append([code, code])
    members = "".join(re.escape(chr(lo)) + ("" if lo == hi else "-" + re.escape(chr(hi))) for lo, hi in ranges)
    return re.compile(f"[{members}]{{{MAX_NON_STARTERS + 1},}}")


_ASTRAL = re.compile("[\U00010000-\U0010ffff]")


def _split_run(match: re.Match) -> str:
    run = match.group()
    return _CGJ.join(run[i : i + MAX_NON_STARTERS] for i in range(0, len(run), MAX_NON_STARTERS))


def stream_safe(text: str) -> str:
    """``text`` with a U+034F after every 30 consecutive non-starters (unchanged when it has no longer run)."""
    if text.isascii():
        return text
    return _long_runs(_ASTRAL.search(text) is not None).sub(_split_run, text)


def nfkc(text: str) -> str:
    """``unicodedata.normalize("NFKC", text)`` in time linear in ``len(text)`` (see the module docstring)."""
    if text.isascii():
        return text
    return unicodedata.normalize("NFKC", stream_safe(text))
