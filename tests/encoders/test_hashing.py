"""Letter-trigram hashing: normalisation, vocabulary, unknowns, buckets and vectorised batches."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ltrfeat.encoders.hashing import BOUNDARY_ID, UNKNOWN_ID, TrigramHasher

TEXTS = ["the boy is here", "Sci-Fi 2014 movies", "a boy and a toy", "boy"]


def fitted(**kw):
    return TrigramHasher(**kw).fit(TEXTS)


def test_trigrams_of_a_word():
    assert TrigramHasher.trigrams("boy") == ["#bo", "boy", "oy#"]
    assert TrigramHasher.trigrams("a") == ["#a#"]


def test_words_lowercase_punctuation_removed_numbers_kept():
    h = TrigramHasher()
    assert h.words("Don't STOP: Sci-Fi 2014 Movies!") == ["dont", "stop", "sci", "fi", "2014", "movies"]
    assert h.words("  ... ") == []
    assert h.words("Ｃafé_bar") == ["café", "bar"]  # NFKC folds the full-width letter


def test_long_words_are_cut():
    assert TrigramHasher(max_word_len=4).words("abcdefgh xy") == ["abcd", "xy"]


def test_vocabulary_ids_and_unknown_trigrams():
    h = fitted()
    ids = h.word_trigrams("boy")
    assert ids == [h.vocabulary_[t] for t in ("#bo", "boy", "oy#")]
    assert min(h.vocabulary_.values()) == 2 and h.n_features_ == 2 + len(h.vocabulary_)
    assert h.word_trigrams("qqq") == [UNKNOWN_ID] * 3
    # the most frequent trigrams get the smallest ids ("boy" occurs three times)
    assert h.vocabulary_["#bo"] < h.vocabulary_["#sc"]


def test_min_count_sends_rare_trigrams_to_unknown():
    h = TrigramHasher(min_count=3).fit(TEXTS)
    assert set(h.vocabulary_) == {"#bo", "boy", "oy#"}
    assert h.word_trigrams("toy") == [UNKNOWN_ID, UNKNOWN_ID, h.vocabulary_["oy#"]]
    with pytest.raises(ValueError, match="min_count"):
        TrigramHasher(min_count=99).fit(TEXTS)


def test_buckets_are_stable_and_in_range():
    a, b = TrigramHasher(n_buckets=50).fit(), TrigramHasher(n_buckets=50).fit(["anything"])
    assert a.word_trigrams("keyboard") == b.word_trigrams("keyboard")
    assert all(2 <= i < 52 for i in a.word_trigrams("keyboard"))
    assert a.n_features_ == 52


def test_unfitted_hasher_refuses():
    with pytest.raises(RuntimeError, match="fit"):
        TrigramHasher().word_trigrams("boy")


def test_json_round_trip_keeps_ids():
    h = fitted(min_count=2)
    g = TrigramHasher.from_json(h.to_json())
    assert g.vocabulary_ == h.vocabulary_ and g.n_features_ == h.n_features_
    for word in ("boy", "toy", "movies"):
        assert g.word_trigrams(word) == h.word_trigrams(word)


def test_tokenize_and_take():
    h = fitted()
    tok = h.tokenize(["a b", "", "c d e"])
    assert tok.lengths.tolist() == [2, 0, 3]
    sub = tok.take([2, 0])
    assert sub.lengths.tolist() == [3, 2]
    assert sub.words.tolist() == tok.words[[2, 3, 4, 0, 1]].tolist()


any_texts = st.lists(
    st.text(st.characters(blacklist_categories=("Cs",)), max_size=30)
    | st.text(alphabet="Ab_c-'`\u2019\x00\t\n7éÉﬁＣ®İß ", max_size=30),
    min_size=0,
    max_size=6,
)


@settings(max_examples=300, deadline=None)
@given(texts=any_texts, cut=st.integers(1, 8))
def test_tokenize_equals_words_of_each_text(texts, cut):
    h = TrigramHasher(n_buckets=31, max_word_len=cut).fit()
    tok = h.tokenize(texts)
    assert len(tok) == len(texts)
    words = {row: word for word, row in h._word_index.items()}
    for i, text in enumerate(texts):
        got = [words[r].decode() for r in tok.words[tok.offsets[i] : tok.offsets[i + 1]]]
        assert got == h.words(text)


def test_tokenize_keeps_lone_surrogates_out_of_words():
    h = TrigramHasher(n_buckets=31).fit()
    tok = h.tokenize(["ab\ud800cd", "x\x00y"])
    assert tok.lengths.tolist() == [2, 2]


def naive_bags(h, texts):
    return [[i for w in h.words(t) for i in h.word_trigrams(w)] for t in texts]


def naive_windows(h, text, d):
    words = [tuple(h.word_trigrams(w)) for w in h.words(text)] or [()]
    padded = [("<s>",)] * d + words + [("<s>",)] * d
    return [padded[t : t + 2 * d + 1] for t in range(len(words))]


text_lists = st.lists(st.text(alphabet="ab c-'7é", max_size=12), min_size=1, max_size=6)


@settings(max_examples=60, deadline=None)
@given(texts=text_lists)
def test_bag_batch_matches_per_text_hashing(texts):
    h = TrigramHasher(min_count=1).fit(["abc ab ba 77 é"])
    batch = h.bag_batch(texts)
    ends = list(batch.offsets[1:]) + [len(batch.ids)]
    got = [batch.ids[s:e].tolist() for s, e in zip(batch.offsets, ends)]
    assert got == naive_bags(h, texts)


@settings(max_examples=60, deadline=None)
@given(texts=text_lists, d=st.integers(0, 2))
def test_sequence_batch_matches_per_text_windows(texts, d):
    h = TrigramHasher(n_buckets=97).fit()
    batch = h.sequence_batch(texts, context=d)
    bounds = list(batch.word_offsets) + [len(batch.word_ids)]
    table = [tuple(batch.word_ids[bounds[r] : bounds[r + 1]].tolist()) for r in range(len(batch.word_offsets))]
    table[1] = ("<s>",)
    assert batch.word_ids[0] == BOUNDARY_ID and table[0] == ()
    assert batch.windows.shape == (batch.lengths.sum(), 2 * d + 1)
    start = 0
    for text, n in zip(texts, batch.lengths):
        got = [tuple(table[r] for r in row) for row in batch.windows[start : start + n]]
        assert got == [tuple(w) for w in naive_windows(h, text, d)]
        start += n


def test_batches_reuse_the_word_cache():
    h = fitted()
    h.bag_batch(["boy toy"] * 3)
    assert h.cached_words == 2
    assert np.array_equal(h.bag_batch(["boy"]).ids, np.array(h.word_trigrams("boy")))


def _random_texts(seed: int, n: int) -> list[str]:
    rng = np.random.default_rng(seed)
    letters = np.array(list("abcdefghijklmnopqrstuvwxyz"))
    return [
        " ".join("".join(rng.choice(letters, size=rng.integers(1, 9))) for _ in range(rng.integers(0, 12)))
        for _ in range(n)
    ]


def _windows(batch) -> list:
    """Each CLSM window as the trigram ids of its words (the batch's word-table order aside)."""
    ends = np.append(batch.word_offsets[1:], len(batch.word_ids))
    words = [tuple(batch.word_ids[a:b]) for a, b in zip(batch.word_offsets, ends)]
    return [[words[r] for r in window] for window in batch.windows]


def test_a_bounded_word_table_stays_bounded_and_gives_the_same_ids():
    """serve bounds the table (it grew with every unseen word, forever): same batches, table at its bound."""
    free, bounded = fitted(), fitted(cache_words=200)
    for call in range(60):
        texts = _random_texts(call, 20)
        a, b = free.bag_batch(texts), bounded.bag_batch(texts)
        assert np.array_equal(a.ids, b.ids) and np.array_equal(a.offsets, b.offsets)
        sa, sb = free.sequence_batch(texts, context=1), bounded.sequence_batch(texts, context=1)
        assert _windows(sa) == _windows(sb) and np.array_equal(sa.lengths, sb.lengths)
        assert bounded.word_trigrams("boy") == free.word_trigrams("boy")
        assert bounded.cached_words <= 200
    assert free.cached_words > 2_000


def test_tokens_of_a_replaced_word_table_are_refused():
    h = fitted(cache_words=5)
    tokens = h.tokenize(["boy toy"])
    assert np.array_equal(h.bag_batch(tokens).ids, h.bag_batch(["boy toy"]).ids)
    h.tokenize(["one two three four five six"])  # beyond the bound: a new table
    with pytest.raises(RuntimeError, match="tokenize the texts again"):
        h.bag_batch(tokens)


def test_the_word_table_is_not_copied_on_every_growth():
    """Each new word copied the whole table (quadratic time in the words seen); now it doubles when full."""
    h = fitted()
    copies, buffer = 0, None
    for i in range(20_000):
        h.tokenize([f"w{i}x"])
        copies += h._flat is not buffer
        buffer = h._flat
    assert h.cached_words == 20_000 and copies < 20
