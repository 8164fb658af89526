"""NFKC in linear time: combining-mark bombs are normalised quickly wherever text is normalised (the trigram
hasher, the ONNX export's hashing, the leakage guard's query form), and every real text exactly as before."""

from __future__ import annotations

import time
import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ltrfeat.core.text import normalise_query
from ltrfeat.core.unicode_norm import MAX_NON_STARTERS, nfkc
from ltrfeat.encoders.hashing import TrigramHasher

# each quadratic in CPython's NFKC: ~1 s at 40,000 characters, ~100 s at 400,000
BOMBS = {
    "marks out of order": "a" + "\u0301\u0316" * 200_000,
    "marks out of order, other way": "b" + "\u0316\u0301" * 200_000,
    "class-0 sign of two marks": "a" + "\u0f73" * 400_000,
    "compatibility mark": "a" + "\u0344\u0316" * 200_000,
    "after an astral character": "\U0001f600 a" + "\U0001e944\u0316" * 200_000,
    "many runs": ("x" + "\u0301\u0316" * 100) * 2_000,
}


@pytest.mark.parametrize("normalise", [nfkc, normalise_query, TrigramHasher().words], ids=["nfkc", "query", "hasher"])
@pytest.mark.parametrize("bomb", list(BOMBS.values()), ids=list(BOMBS))
def test_combining_mark_bombs_are_normalised_in_linear_time(normalise, bomb):
    nfkc("\u00e9")  # the character tables are built once, on first use
    start = time.perf_counter()
    normalise(bomb)
    assert time.perf_counter() - start < 2.0


def test_the_export_hashing_is_linear_too():
    from ltrfeat.export.onnx import _Hashing

    hashing = _Hashing({"vocabulary": None, "n_buckets": 10, "max_word_len": 32})
    start = time.perf_counter()
    assert hashing.words(BOMBS["marks out of order"]) == ["\u00e1"]
    assert time.perf_counter() - start < 2.0


REAL = [
    "Café crème brûlée, naïve façade",
    "Ｃafé ﬁne ½ ² ㎏",
    "Tiếng Việt có dấu: người, được, những",
    "देवनागरी हिन्दी",
    "עִבְרִית מְנֻקֶּדֶת",
    "ﾃｽﾄ ｶﾞｷﾞ",
    "a\u0316\u0301 e\u0301\u0316 " + "o" + "\u0301" * MAX_NON_STARTERS,
    "emoji \U0001f600 and ꙮ",
]


@pytest.mark.parametrize("text", REAL)
def test_real_text_is_normalised_exactly_as_before(text):
    assert nfkc(text) == unicodedata.normalize("NFKC", text)
    assert nfkc(unicodedata.normalize("NFD", text)) == unicodedata.normalize("NFKC", text)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=80))
def test_any_text_without_a_long_run_of_marks_is_unchanged(text):
    assert nfkc(text) == unicodedata.normalize("NFKC", text)


def test_a_long_run_of_marks_keeps_its_first_marks_and_its_words():
    bomb = "a" + "\u0301\u0316" * 5_000
    assert nfkc(bomb)[0] == unicodedata.normalize("NFKC", bomb)[0] == "\u00e1"
    assert TrigramHasher().words(bomb + " next") == ["\u00e1", "next"]
    # 40 marks: 30, a COMBINING GRAPHEME JOINER, 10; the first composes with the letter
    assert (
        normalise_query("  Ａ" + "\u0301" * 40 + "  B ") == "\u00e1" + "\u0301" * 29 + "\u034f" + "\u0301" * 10 + " b"
    )
