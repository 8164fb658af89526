"""The synthetic search world: determinism, file formats, leakage rules and realism claims."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import spearmanr

from ltrfeat.cli.main import cli
from ltrfeat.core.letor import read_letor
from ltrfeat.datasets.synth import PRESETS, SPLITS, generate_world, realism_stats, write_world
from ltrfeat.datasets.synth._judging import overlap
from ltrfeat.datasets.synth._lexicon import (
    AMBIGUOUS_WORDS,
    COLOURS,
    MATERIALS,
    PRODUCT_TYPES,
    UNITS,
    content_tokens,
    tokens,
)
from ltrfeat.datasets.synth._queries import make_queries, query_key
from ltrfeat.datasets.synth._surface import feature_forms, inflect, misspell, size_forms, title_case
from ltrfeat.core.text import read_docs, read_judged_pairs, read_queries

QUICK = PRESETS["quick"]
SMALL = {"n_queries": 60, "n_docs": 300, "n_click_queries": 60}


@pytest.fixture(scope="module")
def world():
    return generate_world(seed=0, **QUICK)


@pytest.fixture(scope="module")
def control():
    return generate_world(seed=0, semantic=False, **QUICK)


def _levenshtein(a: str, b: str) -> int:
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        cur = [i]
        for j, cb in enumerate(b, 1):
            cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (ca != cb)))
        prev = cur
    return prev[-1]


def _title_overlap(judged: pd.DataFrame) -> np.ndarray:
    return np.array(
        [overlap(set(content_tokens(q)), set(content_tokens(d))) for q, d in zip(judged["query"], judged["doc"])]
    )


# --- lexicon and surface forms -------------------------------------------------------------


def test_lexicon_refers_only_to_known_attributes():
    for t in PRODUCT_TYPES:
        assert t.names and all(c in COLOURS for c in t.colours) and all(m in MATERIALS for m in t.materials)
        assert all(s.split(" ", 1)[1] in UNITS for s in t.sizes)
    assert len({t.key for t in PRODUCT_TYPES}) == len(PRODUCT_TYPES)
    # the CLSM paper's examples and other cross-category senses are present
    assert {"office", "body", "mouse", "filter", "fan", "sink", "bulb"} <= set(AMBIGUOUS_WORDS)


@pytest.mark.parametrize(
    "word, other",
    [
        ("chair", "chairs"),
        ("battery", "batteries"),
        ("mouse", "mice"),
        ("bookshelf", "bookshelves"),
        ("brush", "brushes"),
        ("pads", "pad"),
    ],
)
def test_inflect_switches_number(word, other):
    assert inflect(word) == other


def test_inflect_leaves_mass_nouns_and_numbers():
    assert inflect("software") == "software" and inflect("365") == "365"


@given(st.text(alphabet="abcdefghijklmnopqrstuvwxyz", min_size=1, max_size=15), st.integers(0, 2**32 - 1))
@settings(max_examples=300, deadline=None)
def test_misspell_is_one_typo_keeping_the_first_letter(word, seed):
    typo = misspell(word, np.random.default_rng(seed))
    if len(word) < 4:
        assert typo == word
    else:
        assert typo[0] == word[0] and 1 <= _levenshtein(word, typo) <= 2


def test_unit_feature_and_title_forms():
    forms = size_forms("3/4 in.")
    assert forms[0] == "3/4 in." and "3/4 inch" in forms and "3/4in" in forms
    assert size_forms("60 Watt")[0] == "60-Watt" and "60w" in size_forms("60 Watt")
    assert {"w/ armrests", "armrests"} <= set(feature_forms("with armrests"))
    assert "hd" in feature_forms("heavy duty")
    assert title_case("norvik 24 in. white usb hub with cover") == "Norvik 24 in. White USB Hub with Cover"


# --- determinism and structure ----------------------------------------------------------------


def test_same_seed_same_world_and_other_seed_differs(world):
    again = generate_world(seed=0, **QUICK)
    for name in ("docs", "queries", "judged", "clicks"):
        pd.testing.assert_frame_equal(getattr(world, name), getattr(again, name))
    other = generate_world(seed=1, **QUICK)
    assert not world.judged["query"].equals(other.judged["query"])


def test_tables_are_consistent(world):
    docs, queries, judged, clicks = world.docs, world.queries, world.judged, world.clicks
    assert len(docs) == QUICK["n_docs"] and docs["docid"].is_unique
    assert len(queries) == QUICK["n_queries"] and queries["qid"].is_unique
    assert judged["docid"].isin(docs["docid"]).all() and clicks["docid"].isin(docs["docid"]).all()
    assert set(judged["label"].unique()) <= {0, 1, 2, 3}
    assert not judged.duplicated(["qid", "docid"]).any()
    sizes = judged.groupby("qid").size()
    assert sizes.between(10, 20).all()
    title = dict(zip(docs["docid"], docs["title"]))
    assert (judged["doc"] == judged["docid"].map(title)).all()
    # nearly every query has a relevant candidate
    assert (judged.groupby("qid")["label"].max() >= 2).mean() >= 0.95
    assert ((clicks["clicks"] <= clicks["impressions"]) & (clicks["impressions"] >= 1)).all()


def test_judged_splits_are_disjoint_and_click_log_never_holds_a_judged_query(world):
    keys = {s: set(world.queries.loc[world.queries["split"] == s, "query"].map(query_key)) for s in SPLITS}
    assert all(keys[a].isdisjoint(keys[b]) for a in SPLITS for b in SPLITS if a < b)
    assert [len(world.split(s)["qid"].unique()) for s in SPLITS] == [144, 48, 48]
    click_keys = set(world.clicks["query"].map(query_key))
    assert click_keys.isdisjoint(set().union(*keys.values()))
    # ... while sharing intents (product types) with them
    assert set(world.queries["type"]) <= set(world.docs.set_index("docid").loc[world.clicks["docid"], "type"])


def test_candidate_order_does_not_reveal_labels(world):
    first = world.judged.groupby("qid")["label"].first()
    best = world.judged.groupby("qid")["label"].max()
    assert (first == best).mean() < 0.7


def _candidates_over_whole_catalogue(index, rng, query, intent, k):
    """The candidate draw written over whole-catalogue arrays (O(catalogue) per query): the reference
    that CandidateIndex.candidates must reproduce draw for draw."""
    used = np.zeros(index.n, dtype=bool)
    chosen = []

    def take(pool, count, weights=None):
        free = ~used[pool]
        pool = pool[free]
        count = min(count, len(pool), k - int(used.sum()))
        if count <= 0:
            return
        p = None if weights is None else weights[free] / weights[free].sum()
        picked = rng.choice(pool, size=count, replace=False, p=p)
        used[picked] = True
        chosen.append(picked)

    same = np.flatnonzero(index.type == intent["type"])
    matches = sum((index.attrs[kind] == value).astype(int) for kind, value in intent.items() if kind in index.attrs)
    take(same, round(k * rng.uniform(0.3, 0.45)), 1.0 + 3.0 * np.asarray(matches + np.zeros(index.n))[same])
    shared = np.zeros(index.n)
    for tok in set(content_tokens(query)):
        shared[[i for i, toks in enumerate(index.title_tokens) if tok in toks]] += 1
    shared[same] = 0
    lexical = np.flatnonzero(shared)
    take(lexical, round(k * rng.uniform(0.35, 0.5)), shared[lexical] ** 3)
    category = np.flatnonzero(index.category == index.category[same[0]])
    take(category[index.type[category] != intent["type"]], round(k * rng.uniform(0.05, 0.1)))
    take(np.arange(index.n), k - int(used.sum()))
    rows = np.concatenate(chosen)
    return rows[rng.permutation(len(rows))]


@pytest.mark.parametrize("n_docs", [1, 25, 400])
def test_candidates_draw_as_over_the_whole_catalogue(n_docs):
    from ltrfeat.datasets.synth._catalogue import make_catalogue
    from ltrfeat.datasets.synth._judging import CandidateIndex

    docs = make_catalogue(np.random.default_rng(n_docs), n_docs)
    index = CandidateIndex(docs)
    queries = make_queries(np.random.default_rng(1), docs, min(40, n_docs), max_tries=5000)
    fast, reference = np.random.default_rng(2), np.random.default_rng(2)
    for (query, intent), k in zip(queries, [1, 5, 12, 30, 500] * 8):
        rows = index.candidates(fast, query, intent, k)
        np.testing.assert_array_equal(
            rows, _candidates_over_whole_catalogue(index, reference, query, intent, min(k, n_docs))
        )
        assert len(set(rows.tolist())) == len(rows) == min(k, n_docs)


def test_bad_options_raise():
    with pytest.raises(ValueError, match="candidates"):
        generate_world(candidates=(5, 3), **SMALL)
    with pytest.raises(ValueError, match="split_fractions"):
        generate_world(split_fractions=(0.5, 0.5, 0.5), **SMALL)
    docs = generate_world(seed=0, **SMALL).docs
    with pytest.raises(ValueError, match="distinct queries"):
        make_queries(np.random.default_rng(0), docs, 50, max_tries=10)


# --- realism claims ---------------------------------------------------------------------------


def test_vocabulary_mismatch_relevant_pairs_often_share_no_title_word(world):
    ov, label = _title_overlap(world.judged), world.judged["label"].to_numpy()
    assert np.mean(ov[label >= 2] == 0) >= 0.15


def test_lexical_distractors_high_overlap_is_often_not_relevant(world):
    ov, label = _title_overlap(world.judged), world.judged["label"].to_numpy()
    assert np.mean(label[ov >= 0.5] <= 1) >= 0.2
    assert np.mean(ov[label == 0] > 0) >= 0.3
    # overlap is informative but far from decisive
    assert 0.2 <= spearmanr(label, ov).statistic <= 0.7


def test_ambiguous_words_have_both_senses_among_candidates(world):
    judged = world.judged.merge(world.docs[["docid", "category"]], on="docid")
    judged = judged.merge(world.queries[["qid", "type"]], on="qid")
    categories = {t.key: t.category for t in PRODUCT_TYPES}
    found = 0
    for word in ("office", "body", "mouse", "filter", "fan"):
        has_word = judged["query"].map(lambda q, w=word: w in tokens(q))
        other_sense = (
            has_word
            & judged["doc"].str.lower().str.contains(word)
            & (judged["category"] != judged["type"].map(categories))
        )
        if other_sense.any():
            found += 1
            assert judged.loc[other_sense, "label"].mean() < 0.7
    assert found >= 3
    assert realism_stats(world)["ambiguous_query_share"] >= 0.2


def test_clicks_follow_relevance_imperfectly(world):
    rho = spearmanr(world.clicks["clicks"], world.clicks["grade"]).statistic
    assert 0.3 <= rho <= 0.9
    # position bias and snippet lures: some irrelevant results are clicked, some perfect ones never
    c = world.clicks
    assert (c.loc[c["grade"] == 0, "clicks"] > 0).any() and (c.loc[c["grade"] == 3, "clicks"] == 0).any()


def test_control_world_labels_are_explained_by_overlap(world, control):
    pd.testing.assert_frame_equal(world.docs, control.docs)
    pd.testing.assert_frame_equal(world.queries, control.queries)
    pd.testing.assert_frame_equal(world.judged.drop(columns="label"), control.judged.drop(columns="label"))
    rho_control = spearmanr(control.judged["label"], _title_overlap(control.judged)).statistic
    rho_semantic = spearmanr(world.judged["label"], _title_overlap(world.judged)).statistic
    assert rho_control >= 0.85 and rho_control - rho_semantic >= 0.3


# --- files ------------------------------------------------------------------------------------


def _read_all(directory: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(directory.iterdir())}


def test_write_world_files_read_back(tmp_path):
    world = generate_world(seed=3, **SMALL)
    written = write_world(world, tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(written)
    docs = read_docs(tmp_path / "docs.tsv")
    assert list(docs["docid"]) == list(world.docs["docid"]) and list(docs["title"]) == list(world.docs["title"])
    assert len(read_queries(tmp_path / "queries.tsv")) == SMALL["n_queries"]
    judged = read_judged_pairs(tmp_path / "judged.tsv")
    assert judged["label"].tolist() == world.judged["label"].astype(float).tolist()
    for split in SPLITS:
        ranking = read_letor(tmp_path / f"{split}.letor")
        expected = world.split(split)
        assert ranking.n_features == 0 and ranking.is_contiguous()
        assert ranking.docid.tolist() == expected["docid"].tolist()
        assert ranking.label.tolist() == expected["label"].astype(float).tolist()
        assert ranking.qid.tolist() == expected["qid"].tolist()
    meta = json.loads((tmp_path / "world.json").read_text())
    assert meta["options"]["seed"] == 3 and meta["counts"]["docs"] == SMALL["n_docs"]
    assert set(meta["sha256"]) == set(written) - {"world.json"}
    clicks = pd.read_csv(tmp_path / "clicks.tsv", sep="\t")
    assert list(clicks.columns) == ["query", "docid", "doc", "clicks", "impressions"]


def test_cli_is_byte_identical_across_processes_and_seeds_differ(tmp_path):
    args = ["datasets", "synth", "--seed", "5", "--queries", "60", "--docs", "300", "--click-queries", "60"]
    result = CliRunner().invoke(cli, [*args, "--out", str(tmp_path / "a")])
    assert result.exit_code == 0, result.output
    assert "wrote" in result.output and "realism:" in result.output
    env = {**os.environ, "PYTHONHASHSEED": "123"}
    subprocess.run(
        [sys.executable, "-m", "ltrfeat.cli.main", *args, "--out", str(tmp_path / "b")],
        check=True,
        env=env,
        cwd=Path(__file__).resolve().parents[2],
        capture_output=True,
    )
    assert _read_all(tmp_path / "a") == _read_all(tmp_path / "b")
    result = CliRunner().invoke(cli, [*args[:3], "6", *args[4:], "--out", str(tmp_path / "c")])
    assert result.exit_code == 0
    assert (tmp_path / "a" / "judged.tsv").read_bytes() != (tmp_path / "c" / "judged.tsv").read_bytes()


def test_cli_control_flag_and_help(tmp_path):
    result = CliRunner().invoke(
        cli,
        [
            "datasets",
            "synth",
            "--out",
            str(tmp_path),
            "--control",
            "--queries",
            "30",
            "--docs",
            "200",
            "--click-queries",
            "20",
        ],
    )
    assert result.exit_code == 0, result.output
    assert json.loads((tmp_path / "world.json").read_text())["options"]["semantic"] is False
    assert "control world" in result.output
    help_text = CliRunner().invoke(cli, ["datasets", "synth", "--help"]).output
    assert "ltrfeat datasets synth --out world --seed 1 --quick" in help_text


@pytest.mark.parametrize(
    "args, message",
    [
        (["--candidates", "9"], "MIN-MAX"),
        (["--candidates", "20-10"], "MIN <= MAX"),
        (["--queries", "2"], "--queries"),
        (["--examination-exponent", "-1"], "--examination-exponent"),
        (["--examination-exponent", "nan"], "examination_exponent must be a number in [0, 5]"),
        (["--title-attraction", "2"], "--title-attraction"),
    ],
)
def test_cli_rejects_bad_options_without_writing(tmp_path, args, message):
    out = tmp_path / "out"
    result = CliRunner().invoke(cli, ["datasets", "synth", "--out", str(out), *args])
    assert result.exit_code == 2 and message in result.output
    assert not out.exists()
