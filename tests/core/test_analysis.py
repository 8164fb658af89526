import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ltrfeat.core.analysis import ENGLISH_STOPWORDS, Analyzer


def test_lowercase_and_punctuation_split_words():
    assert Analyzer().tokens("Simpson Strong-Tie 12-Gauge, 3/4 in. snake_case & Co.") == [
        "simpson",
        "strong",
        "tie",
        "12",
        "gauge",
        "3",
        "4",
        "in",
        "snake",
        "case",
        "co",
    ]


def test_case_kept_when_asked():
    assert Analyzer(lowercase=False).tokens("Big RED dog") == ["Big", "RED", "dog"]


def test_unicode_letters_are_word_characters():
    assert Analyzer().tokens("Café crème 30°") == ["café", "crème", "30"]


def test_english_stopwords_removed():
    assert Analyzer(stopwords="english").tokens("the cat in the hat is on a mat") == ["cat", "hat", "mat"]
    assert "the" in ENGLISH_STOPWORDS and len(ENGLISH_STOPWORDS) == 33


def test_custom_stopwords_compare_lowercased_when_case_is_kept():
    assert Analyzer(lowercase=False, stopwords=("THE",)).tokens("The cat") == ["cat"]


def test_stemming_with_pystemmer():
    assert Analyzer(stemmer="english").tokens("running microwaves cabinets") == ["run", "microwav", "cabinet"]


def test_bad_options_are_rejected():
    with pytest.raises(ValueError, match="unknown stemmer"):
        Analyzer(stemmer="klingon")
    with pytest.raises(ValueError, match="stopwords"):
        Analyzer(stopwords="french-ish")


def test_empty_inputs():
    a = Analyzer()
    assert a.analyze([]) == []
    assert a.analyze(["", "!!", "x"]) == [[], [], ["x"]]


def test_text_holding_the_internal_separator_falls_back_to_per_text():
    assert Analyzer().analyze(["a\x00b", "c"]) == [["a", "b"], ["c"]]


def test_json_round_trip():
    for a in [
        Analyzer(),
        Analyzer(lowercase=False, stopwords=("x", "y"), stemmer="porter"),
        Analyzer(stopwords="english"),
    ]:
        assert Analyzer.from_json(a.to_json()) == a


@settings(max_examples=300, deadline=None)
@given(st.lists(st.text(max_size=30) | st.text("Ab_c-'\x00\t7éÉİß® ", max_size=30), max_size=8), st.booleans())
def test_tokens_are_the_unicode_letter_digit_runs(texts, lowercase):
    # the reference: the regex the byte-level splitting replaces
    expected = [re.findall(r"[^\W_]+", t.lower() if lowercase else t) for t in texts]
    assert Analyzer(lowercase=lowercase).analyze(texts) == expected


def test_lone_surrogates_break_words():
    assert Analyzer().analyze(["ab\ud800cd", "x"]) == [["ab", "cd"], ["x"]]


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.text(max_size=30), max_size=8),
    st.sampled_from([Analyzer(), Analyzer(stopwords="english", stemmer="english"), Analyzer(lowercase=False)]),
)
def test_batch_analysis_equals_one_text_at_a_time(texts, analyzer):
    flat, offsets = analyzer.analyze_flat(texts)
    assert len(offsets) == len(texts) + 1 and offsets[0] == 0 and offsets[-1] == len(flat)
    assert analyzer.analyze(texts) == [analyzer.analyze([t])[0] for t in texts]
    for toks in analyzer.analyze(texts):
        assert all(t and "\x00" not in t and "_" not in t for t in toks)
