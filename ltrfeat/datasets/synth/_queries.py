"""Query intents (a product type plus a few wanted attributes) and their noisy surface forms: short
title-like strings (:func:`realise`) or long natural-language needs (:func:`realise_need`)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ltrfeat.datasets.synth._lexicon import CATEGORIES, TYPES_BY_KEY, tokens
from ltrfeat.datasets.synth._surface import (
    colour_forms,
    feature_forms,
    inflect,
    material_forms,
    misspell,
    pick,
    size_forms,
)

_N_ATTRS_P = (0.3, 0.4, 0.22, 0.08)  # how many attributes a shopper specifies
_KIND_WEIGHT = {"brand": 0.35, "colour": 1.0, "material": 0.8, "size": 1.0, "feature": 0.8}
P_SYNONYM = 0.65  # the product is named by a synonym rather than the catalogue name
P_INFLECT = 0.25  # head noun switches number (plural <-> singular)
P_SHUFFLE = 0.25  # words in a non-canonical order
P_MISSPELL = 0.05  # per word of 4+ letters, at most two per query
QUERY_STYLES = ("short", "long")
# Long needs: the words a person writes around what they want; none is a catalogue attribute.
_OPENERS = (
    "i need",
    "i am looking for",
    "looking for",
    "can you recommend",
    "we want",
    "searching for",
    "i would like",
    "help me find",
    "what is",
)
_QUALITIES = ("sturdy", "reliable", "good", "decent", "affordable", "well made", "solid", "nice", "simple", "")
_CLOSERS = (
    "",
    "",
    "that will last for years",
    "at a reasonable price",
    "that does not take up much space",
    "that looks good",
    "that is easy to set up",
    "that gets good reviews",
    "please",
)
P_USE = 0.6  # the need names a use of the product's category ("for a home office")


def make_intent(rng: np.random.Generator, target: dict) -> dict[str, str]:
    """An intent modelled on a target product (a catalogue record): its type and 0–3 of its
    attribute values."""
    available = [k for k in _KIND_WEIGHT if isinstance(target[k], str)]
    n = min(len(available), int(rng.choice(len(_N_ATTRS_P), p=_N_ATTRS_P)))
    intent = {"type": target["type"]}
    if n:
        w = np.array([_KIND_WEIGHT[k] for k in available])
        for k in sorted(rng.choice(len(available), size=n, replace=False, p=w / w.sum())):
            intent[available[k]] = target[available[k]]
    return intent


def realise(rng: np.random.Generator, intent: dict[str, str]) -> str:
    """A lower-case query string for ``intent`` with shopper noise."""
    ptype = TYPES_BY_KEY[intent["type"]]
    name = pick(rng, ptype.names, p_first=1 - P_SYNONYM).split(" ")
    if rng.random() < P_INFLECT:
        name[-1] = inflect(name[-1])
    before: list[str] = []
    after: list[str] = []
    if "brand" in intent:
        before.append(intent["brand"].lower())
    if "size" in intent:
        before.append(pick(rng, size_forms(intent["size"]), p_first=0.3))
    if "colour" in intent:
        before.append(pick(rng, colour_forms(intent["colour"]), p_first=0.45))
    if "material" in intent:
        before.append(pick(rng, material_forms(intent["material"]), p_first=0.45))
    if "feature" in intent:
        feature = pick(rng, feature_forms(intent["feature"]), p_first=0.5)
        (after if feature.startswith(("with", "w/")) else before).append(feature)
    pieces = [*before, " ".join(name), *after]
    if rng.random() < P_SHUFFLE:
        pieces = [pieces[i] for i in rng.permutation(len(pieces))]
    return " ".join(_misspelled(rng, " ".join(pieces).lower().split()))


def _misspelled(rng: np.random.Generator, words: list[str]) -> list[str]:
    """``words`` with each word of 4+ letters misspelled with probability :data:`P_MISSPELL`, at most two."""
    typos = 0
    for i, w in enumerate(words):
        if typos < 2 and len(w) >= 4 and rng.random() < P_MISSPELL:
            words[i] = misspell(w, rng)
            typos += words[i] != w
    return words


def realise_need(rng: np.random.Generator, intent: dict[str, str]) -> str:
    """A lower-case natural-language need for ``intent`` (about 5 to 25 words), e.g. "i need a sturdy
    writing desk for small apartments that has drawers in espresso": an opener, a quality word, the
    product named by a synonym more often than not, often a use of its category (a description's
    "ideal for ..." phrase, the product's own or another), the wanted attributes in shopper forms
    as phrases, and a closing clause; typos as in :func:`realise`."""
    ptype = TYPES_BY_KEY[intent["type"]]
    name = pick(rng, ptype.names, p_first=1 - P_SYNONYM)
    adjectives, phrases = [pick(rng, _QUALITIES)], []
    if "feature" in intent:
        feature = pick(rng, feature_forms(intent["feature"]), p_first=0.5)
        if feature.startswith(("with", "w/")):
            phrases.append(pick(rng, (feature, "that comes " + feature, "that has " + feature.split(" ", 1)[-1])))
        else:
            adjectives.append(feature)
    if "material" in intent:
        material = pick(rng, material_forms(intent["material"]), p_first=0.45)
        phrases.append(pick(rng, (f"made of {material}", f"in {material}", f"with a {material} build")))
    if "colour" in intent:
        colour = pick(rng, colour_forms(intent["colour"]), p_first=0.45)
        phrases.append(pick(rng, (f"in {colour}", f"with a {colour} finish", f"in a {colour} colour")))
    if "size" in intent:
        size = pick(rng, size_forms(intent["size"]), p_first=0.3)
        phrases.append(pick(rng, (f"about {size}", f"around {size}", f"{size} in size")))
    if "brand" in intent:
        phrases.append(pick(rng, ("from ", "by ", "made by ")) + intent["brand"])
    if rng.random() < P_USE:
        phrases.insert(0, "for " + pick(rng, CATEGORIES[ptype.category].uses))
    if len(phrases) > 1:
        phrases = [phrases[i] for i in rng.permutation(len(phrases))]
    text = " ".join([pick(rng, _OPENERS), "a", *adjectives, name, *phrases, pick(rng, _CLOSERS)])
    return " ".join(_misspelled(rng, text.lower().split()))


def query_key(query: str) -> str:
    """Identity of a query string for de-duplication and leakage checks: its token sequence."""
    return " ".join(tokens(query))


def describe_intent(intent: dict[str, str]) -> str:
    """``type;kind=value;...`` — the latent intent as one string for the truth columns."""
    return ";".join([intent["type"], *(f"{k}={intent[k]}" for k in _KIND_WEIGHT if k in intent)])


def make_queries(
    rng: np.random.Generator,
    docs: pd.DataFrame,
    n: int,
    *,
    exclude=frozenset(),
    max_tries: int | None = None,
    style: str = "short",
) -> list[tuple[str, dict[str, str]]]:
    """``n`` (query, intent) pairs with distinct query keys, none of whose key is in ``exclude``;
    ``style`` ``"short"``: title-like strings (:func:`realise`), ``"long"``: needs (:func:`realise_need`).

    Targets are drawn uniformly from the catalogue, so popular product types (more
    products) are asked for more often.
    """
    seen = set(exclude)
    records = docs.to_dict("records")
    out: list[tuple[str, dict[str, str]]] = []
    max_tries = max_tries if max_tries is not None else 50 * n + 1000
    for _ in range(max_tries):
        if len(out) == n:
            break
        intent = make_intent(rng, records[int(rng.integers(len(records)))])
        query = (realise_need if style == "long" else realise)(rng, intent)
        key = query_key(query)
        if key and key not in seen:
            seen.add(key)
            out.append((query, intent))
    if len(out) < n:
        raise ValueError(
            f"could only make {len(out)} distinct queries of {n} requested; ask for fewer queries or more documents"
        )
    return out
