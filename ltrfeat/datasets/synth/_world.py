"""A whole synthetic search world: catalogue, judged queries split into train/vali/test, and a
click log; :func:`generate_world` builds it in memory, :func:`write_world` writes its files."""

from __future__ import annotations

import dataclasses
import hashlib
import json
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.stats import spearmanr

from ltrfeat.core.fileio import atomic_output
from ltrfeat.core.letor import write_letor
from ltrfeat.core.splits import SPLITS
from ltrfeat.core.text import pairs_to_ranking, write_table
from ltrfeat.datasets.synth._catalogue import make_catalogue
from ltrfeat.datasets.synth._clicks import (
    IMPRESSION_COLUMNS,
    STRAY_CLICK,
    ClickModel,
    examination_curve,
    simulate_clicks,
)
from ltrfeat.datasets.synth._judging import (
    CandidateIndex,
    bm25_candidates,
    lexical_grades,
    overlap,
    rater_noise,
    semantic_grades,
)
from ltrfeat.datasets.synth._lexicon import AMBIGUOUS_WORDS, content_tokens, tokens
from ltrfeat.datasets.synth._queries import QUERY_STYLES, describe_intent, make_queries, query_key

GENERATOR_VERSION = "1"
WORLD_FORMAT = "ltrfeat.synth-world/1"
PRESETS = {
    "default": {"n_queries": 1000, "n_docs": 3000, "n_click_queries": 3000},
    "quick": {"n_queries": 240, "n_docs": 800, "n_click_queries": 800},
}
# Public columns of each table; the in-memory frames also carry the latent truth.
PUBLIC_COLUMNS = {
    "docs": ["docid", "title", "description", "brand", "category"],
    "queries": ["qid", "query"],
    "judged": ["qid", "query", "docid", "doc", "label"],
    "clicks": ["query", "docid", "doc", "clicks", "impressions"],
    "impressions": IMPRESSION_COLUMNS,
}
TABLE_FILES = {"impressions": "clicks_impressions.tsv"}  # file name of a table when not ``<name>.tsv``
SHOWN = 10  # results shown per session
_STREAMS = {"docs": 1, "judged_queries": 2, "candidates": 3, "labels": 4, "click_queries": 5, "clicks": 6, "splits": 7}


@dataclasses.dataclass
class World:
    """The generated tables (public columns plus latent truth) and the options that made them.

    docs: ``docid, title, description, brand, category`` + truth ``type, colour, material, size, feature``.
    queries: ``qid, query`` + ``split`` and truth ``type, intent``.
    judged: ``qid, query, docid, doc, label`` + ``split``; rows of a query contiguous, candidates in random order;
    ``doc`` is the title (``query_style="short"``) or the description (``"long"``).
    clicks: ``query, docid, doc, clicks, impressions`` + truth ``grade`` (noise-free relevance).
    impressions: ``session, query, docid, position, clicked`` + truth ``grade``: every shown result of every
    session of the click log (``clicks`` aggregates it over sessions and positions).
    """

    docs: pd.DataFrame
    queries: pd.DataFrame
    judged: pd.DataFrame
    clicks: pd.DataFrame
    impressions: pd.DataFrame
    options: dict

    def split(self, name: str) -> pd.DataFrame:
        """The judged pairs of one split (``train``, ``vali`` or ``test``), public columns."""
        if name not in SPLITS:
            raise ValueError(f"split must be one of {SPLITS}, got {name!r}")
        return self.judged.loc[self.judged["split"] == name, PUBLIC_COLUMNS["judged"]].reset_index(drop=True)


def _rng(seed: int, stream: str) -> np.random.Generator:
    return np.random.default_rng([seed, _STREAMS[stream]])


def generate_world(
    *,
    seed: int = 0,
    n_queries: int = 1000,
    n_docs: int = 3000,
    n_click_queries: int = 3000,
    candidates: tuple[int, int] = (10, 20),
    semantic: bool = True,
    label_noise: float = 0.12,
    split_fractions: tuple[float, float, float] = (0.6, 0.2, 0.2),
    query_style: str = "short",
    users: ClickModel | None = None,
    **user_settings,
) -> World:
    """Generate a product-search world, deterministically from ``seed``.

    Parameters
    ----------
    seed : every random choice derives from it (one independent stream per stage).
    n_queries : judged queries (distinct query strings), split into train/vali/test.
    n_docs : products in the catalogue.
    n_click_queries : distinct query strings in the click log; none equals a judged query
        (compared as token sequences), so encoders trained on clicks never saw a judged query.
    candidates : (min, max) candidates per judged query.
    semantic : ``True``: grades come from the latent intent (type and attribute matches).
        ``False`` (control world): grades are ``round(3 × query–title token overlap)``, so
        lexical features explain them and a semantic feature can add nothing. Everything
        else (catalogue, queries, candidates) is identical for the same seed.
    label_noise : probability that a rater moves a judged grade one step.
    split_fractions : shares of judged queries in train, vali, test.
    query_style : ``"short"``: title-like queries judged against titles, candidates mixed from the
        intent's type, title-word distractors, its category and random products. ``"long"``: natural-
        language needs of about 5 to 25 words (synonyms, shopper forms, a use, filler words) judged
        against the descriptions (the judged and click tables' ``doc`` column), candidates the BM25
        top-k of the descriptions with one fully matching product swapped in where none made it
        (``bm25_candidates``); semantic world only. Same catalogue for the same seed.
    users, user_settings : the click log's :class:`ClickModel` (default: all defaults), single settings replaced
        by keyword (``median_sessions``, ``examination_exponent``, ``title_attraction``), e.g.
        ``generate_world(examination_exponent=1.5)``.
    """
    recipe = _Recipe(
        seed=seed,
        n_queries=n_queries,
        n_docs=n_docs,
        n_click_queries=n_click_queries,
        candidates=candidates,
        semantic=semantic,
        label_noise=label_noise,
        split_fractions=split_fractions,
        query_style=query_style,
        users=ClickModel.build(users, user_settings),
    )
    docs = make_catalogue(_rng(seed, "docs"), n_docs)
    index = CandidateIndex(docs)
    judged_queries = make_queries(_rng(seed, "judged_queries"), docs, n_queries, style=query_style)
    queries = _queries_table(recipe, judged_queries)
    judged = _judged_table(recipe, index, judged_queries, queries)
    judged_keys = frozenset(query_key(q) for q, _ in judged_queries)
    click_queries = make_queries(
        _rng(seed, "click_queries"), docs, n_click_queries, exclude=judged_keys, style=query_style
    )
    clicks, impressions = simulate_clicks(
        _rng(seed, "clicks"),
        index,
        click_queries,
        recipe.grader(index),
        shown=SHOWN,
        doc_field=recipe.doc_field,
        users=recipe.users,
    )
    return World(
        docs=docs, queries=queries, judged=judged, clicks=clicks, impressions=impressions, options=recipe.options()
    )


@dataclasses.dataclass(frozen=True)
class _Recipe:
    """The settings of :func:`generate_world`, checked: what every generation step reads."""

    seed: int
    n_queries: int
    n_docs: int
    n_click_queries: int
    candidates: tuple[int, int]
    semantic: bool
    label_noise: float
    split_fractions: tuple[float, float, float]
    query_style: str
    users: ClickModel

    def __post_init__(self):
        lo, hi = self.candidates
        if not 1 <= lo <= hi:
            raise ValueError(f"candidates must be (min, max) with 1 <= min <= max, got {self.candidates}")
        if self.n_queries < len(SPLITS) or self.n_docs < 1 or self.n_click_queries < 0:
            raise ValueError(
                f"need n_queries >= 3, n_docs >= 1, n_click_queries >= 0 "
                f"(got {self.n_queries}, {self.n_docs}, {self.n_click_queries})"
            )
        fractions = self.split_fractions
        if not (len(fractions) == 3 and min(fractions) > 0 and abs(sum(fractions) - 1) < 1e-9):
            raise ValueError(f"split_fractions must be three positive shares summing to 1, got {fractions}")
        if not 0 <= self.label_noise <= 1:
            raise ValueError(f"label_noise must be in [0, 1], got {self.label_noise}")
        if self.query_style not in QUERY_STYLES:
            raise ValueError(f"query_style must be one of {QUERY_STYLES}, got {self.query_style!r}")
        if self.long and not self.semantic:
            raise ValueError("long queries come in the semantic world only (the control world grades title overlap)")

    @property
    def long(self) -> bool:
        return self.query_style == "long"

    @property
    def doc_field(self) -> str:
        """The catalogue field judged and clicked: titles for short queries, descriptions for long ones."""
        return "description" if self.long else "title"

    def grader(self, index: CandidateIndex):
        """``grade(rows, query, intent)``: the hidden grades of candidate rows (latent intent, or title overlap in
        the control world)."""

        def grade(rows, query, intent):
            return semantic_grades(index, rows, intent) if self.semantic else lexical_grades(index, rows, query)

        return grade

    def options(self) -> dict:
        """The options world.json records (the short world's as before: no ``query_style``; click-model settings
        only where they differ from the defaults)."""
        options = {
            "seed": self.seed,
            "n_queries": self.n_queries,
            "n_docs": self.n_docs,
            "n_click_queries": self.n_click_queries,
            "candidates": list(self.candidates),
            "semantic": self.semantic,
            "label_noise": self.label_noise,
            "split_fractions": list(self.split_fractions),
            "median_sessions": self.users.median_sessions,
        } | ({"query_style": self.query_style} if self.long else {})
        defaults = ClickModel()
        return options | {
            k: v for k, v in self.users.to_dict().items() if k != "median_sessions" and v != getattr(defaults, k)
        }


def _queries_table(recipe: _Recipe, judged_queries: list) -> pd.DataFrame:
    """The judged queries with their seeded split (``train``, ``vali``, ``test``) and latent intent."""
    n_queries = recipe.n_queries
    split_rng = _rng(recipe.seed, "splits")
    bounds = np.round(np.cumsum(recipe.split_fractions)[:-1] * n_queries).astype(int)
    split_of = np.empty(n_queries, dtype=object)
    for name, part in zip(SPLITS, np.split(split_rng.permutation(n_queries), bounds)):
        split_of[part] = name
    return pd.DataFrame(
        {
            "qid": [str(i + 1) for i in range(n_queries)],
            "query": [q for q, _ in judged_queries],
            "split": split_of,
            "type": [intent["type"] for _, intent in judged_queries],
            "intent": [describe_intent(intent) for _, intent in judged_queries],
        }
    )


def _judged_table(recipe: _Recipe, index: CandidateIndex, judged_queries: list, queries: pd.DataFrame) -> pd.DataFrame:
    """Every judged query's candidates with their rater-noised grades, rows of a query contiguous."""
    lo, hi = recipe.candidates
    n_queries = recipe.n_queries
    grade = recipe.grader(index)
    cand_rng, label_rng = _rng(recipe.seed, "candidates"), _rng(recipe.seed, "labels")
    if recipe.long:
        wanted = [int(k) for k in cand_rng.integers(lo, hi + 1, size=n_queries)]
        rows_of = bm25_candidates(cand_rng, index, judged_queries, wanted)
    else:
        rows_of = [
            index.candidates(cand_rng, query, intent, int(cand_rng.integers(lo, hi + 1)))
            for query, intent in judged_queries
        ]
    labels_of = [
        rater_noise(label_rng, grade(rows, query, intent), recipe.label_noise)
        for rows, (query, intent) in zip(rows_of, judged_queries)
    ]
    sizes = [len(rows) for rows in rows_of]
    rows = np.concatenate(rows_of)
    docs = index.docs
    return pd.DataFrame(
        {
            "qid": np.repeat(queries["qid"].to_numpy(dtype=object), sizes),
            "query": np.repeat(queries["query"].to_numpy(dtype=object), sizes),
            "docid": docs["docid"].to_numpy()[rows],
            "doc": docs[recipe.doc_field].to_numpy()[rows],
            "label": np.concatenate(labels_of),
            "split": np.repeat(queries["split"].to_numpy(dtype=object), sizes),
        }
    )


def click_model(world: World) -> dict:
    """The click model that generated the world's log (stored in world.json under ``click_model``): the true
    examination curve P(examined | position) for positions 1..10, the stray-click rate and the title attraction."""
    defaults = ClickModel()
    exponent = world.options.get("examination_exponent", defaults.examination_exponent)
    return {
        "model": "position-based",
        "examination": f"position ** -{exponent}",
        "examination_exponent": exponent,
        "examination_curve": [round(float(p), 6) for p in examination_curve(exponent, SHOWN)],
        "stray_click": STRAY_CLICK,
        "title_attraction": world.options.get("title_attraction", defaults.title_attraction),
    }


def realism_stats(world: World) -> dict:
    """Figures that check the world is realistic where it matters (also stored in world.json).

    - ``relevant_zero_title_overlap``: share of judged pairs with label >= 2 whose title shares
      no content token with the query (vocabulary mismatch).
    - ``high_overlap_nonrelevant``: among pairs whose title holds at least half the query's
      content tokens, the share with label <= 1 (lexical distractors).
    - ``irrelevant_sharing_a_word``: share of label-0 pairs whose title shares a content token
      with the query.
    - ``label_title_overlap_spearman``: rank correlation of label and query–title overlap.
    - ``ambiguous_query_share``: share of judged queries holding a word whose senses span categories.
    - ``click_grade_spearman``: rank correlation of click counts and the hidden grade.
    - ``label_counts``: judged labels 0..3.
    """
    j = world.judged
    ov = np.array([overlap(set(content_tokens(q)), set(content_tokens(d))) for q, d in zip(j["query"], j["doc"])])
    label = j["label"].to_numpy()
    ambiguous = set(AMBIGUOUS_WORDS)
    is_ambiguous = [
        any((w.rstrip("s") if len(w) > 3 else w) in ambiguous for w in tokens(q)) for q in world.queries["query"]
    ]
    c = world.clicks

    def share(mask: np.ndarray):
        return round(float(mask.mean()), 4) if mask.size else None

    def rho(a, b):
        value = spearmanr(a, b).statistic if len(a) > 1 else float("nan")
        return None if np.isnan(value) else round(float(value), 4)

    return {
        "relevant_zero_title_overlap": share(ov[label >= 2] == 0),
        "high_overlap_nonrelevant": share(label[ov >= 0.5] <= 1),
        "irrelevant_sharing_a_word": share(ov[label == 0] > 0),
        "label_title_overlap_spearman": rho(label, ov),
        "ambiguous_query_share": share(np.array(is_ambiguous)),
        "click_grade_spearman": rho(c["clicks"], c["grade"]),
        "label_counts": {str(g): int((label == g).sum()) for g in range(4)},
    }


def write_world(world: World, out_dir) -> dict[str, Path]:
    """Write the world's files into ``out_dir`` (created if needed); returns name → path.

    ``docs.tsv``, ``queries.tsv``, ``judged.tsv``, ``clicks.tsv``, ``clicks_impressions.tsv`` (one row per shown
    result), ``train/vali/test.letor`` (zero feature columns, ``#docid = ...`` comments, each with
    ``.features.json``) and ``world.json`` (options, counts, realism figures, the click model with its true
    examination curve, SHA-256 of every other file). Each
    file is written atomically; all content is computed before the first file is written.
    """
    out = Path(out_dir)
    written: dict[str, Path] = {}
    rankings = {name: pairs_to_ranking(world.split(name))[0] for name in SPLITS}
    stats = realism_stats(world)
    for name, columns in PUBLIC_COLUMNS.items():
        file_name = TABLE_FILES.get(name, f"{name}.tsv")
        written[file_name] = out / file_name
        write_table(getattr(world, name)[columns], written[file_name])
    for name, ranking in rankings.items():
        path = out / f"{name}.letor"
        write_letor(path, ranking)
        written[path.name] = path
        written[f"{path.name}.features.json"] = Path(f"{path}.features.json")
    meta = {
        "format": WORLD_FORMAT,
        "generator_version": GENERATOR_VERSION,
        "options": world.options,
        "counts": {
            "docs": len(world.docs),
            "judged_queries": {s: int((world.queries["split"] == s).sum()) for s in SPLITS},
            "judged_pairs": {s: len(rankings[s]) for s in SPLITS},
            "click_queries": int(world.clicks["query"].nunique()),
            "click_rows": len(world.clicks),
            "clicks": int(world.clicks["clicks"].sum()),
            "click_sessions": int(world.impressions["session"].nunique()),
            "impressions": len(world.impressions),
        },
        "click_log_overlaps_judged_queries": False,
        "click_model": click_model(world),
        "stats": stats,
        "sha256": {name: hashlib.sha256(path.read_bytes()).hexdigest() for name, path in sorted(written.items())},
    }
    written["world.json"] = out / "world.json"
    with atomic_output(written["world.json"]) as fh:
        json.dump(meta, fh, indent=1)
        fh.write("\n")
    return written
