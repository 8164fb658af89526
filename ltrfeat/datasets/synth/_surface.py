"""Surface realisation: turning latent attributes into the words sellers and shoppers type,
with the noise real queries carry (variants, abbreviations, inflections, misspellings)."""

from __future__ import annotations

import numpy as np

from ltrfeat.datasets.synth._lexicon import ABBREVIATIONS, COLOURS, MATERIALS, UNITS

_IRREGULAR = {
    "mouse": "mice",
    "shelf": "shelves",
    "knife": "knives",
    "mice": "mouse",
    "shelves": "shelf",
    "knives": "knife",
}
_MASS_NOUNS = frozenset(
    {
        "software",
        "paint",
        "wash",
        "gel",
        "filler",
        "putty",
        "tape",
        "stain",
        "security",
        "protection",
        "sandpaper",
        "paper",
        "primer",
        "undercoat",
        "storage",
        "lighting",
        "prep",
        "365",
        "vanity",
        "antivirus",
    }
)
_KEYBOARD = ["qwertyuiop", "asdfghjkl", "zxcvbnm"]
_NEIGHBOURS = {}
for _r, _row in enumerate(_KEYBOARD):
    for _c, _ch in enumerate(_row):
        _near = [_row[j] for j in (_c - 1, _c + 1) if 0 <= j < len(_row)]
        for _dr in (-1, 1):
            if 0 <= _r + _dr < len(_KEYBOARD):
                _other = _KEYBOARD[_r + _dr]
                _near += [_other[j] for j in (_c, _c + _dr) if 0 <= j < len(_other)]
        _NEIGHBOURS[_ch] = "".join(sorted(set(_near)))


def pick(rng: np.random.Generator, options, p_first: float | None = None):
    """One of ``options``; the first (canonical) with probability ``p_first`` when given."""
    options = tuple(options)
    if len(options) == 1:
        return options[0]
    if p_first is not None:
        if rng.random() < p_first:
            return options[0]
        return options[1 + int(rng.integers(len(options) - 1))]
    return options[int(rng.integers(len(options)))]


def size_forms(size: str) -> tuple[str, ...]:
    """All spellings of a ``"<number> <unit>"`` size, catalogue form first."""
    number, unit = size.split(" ", 1)
    return tuple(f.format(n=number) for f in UNITS[unit])


def colour_forms(key: str) -> tuple[str, ...]:
    return COLOURS[key]


def material_forms(key: str) -> tuple[str, ...]:
    return MATERIALS[key]


def feature_forms(feature: str) -> tuple[str, ...]:
    """A feature phrase and its shopper abbreviations (``with`` → ``w/``, ``heavy duty`` → ``hd``...)."""
    forms = [feature]
    for long, shorts in ABBREVIATIONS.items():
        if long in feature:
            forms += [feature.replace(long, s).strip() for s in shorts]
    forms += [f.replace("-", " ") for f in forms if "-" in f]
    seen: dict[str, None] = {}
    for f in forms:
        if f:
            seen.setdefault(f, None)
    return tuple(seen)


def inflect(word: str) -> str:
    """Singular ↔ plural of an English noun (rules plus a few irregulars); mass nouns unchanged."""
    for singular_or_plural, other in _IRREGULAR.items():  # also compounds: bookshelf -> bookshelves
        if word.endswith(singular_or_plural):
            return word[: len(word) - len(singular_or_plural)] + other
    if word in _MASS_NOUNS or not word.isalpha() or len(word) < 3:
        return word
    if word.endswith("ies"):
        return word[:-3] + "y"
    if word.endswith(("ches", "shes", "xes", "sses")):
        return word[:-2]
    if word.endswith("s") and not word.endswith("ss"):
        return word[:-1]
    if word.endswith("y") and word[-2] not in "aeiou":
        return word[:-1] + "ies"
    if word.endswith(("s", "x", "ch", "sh")):
        return word + "es"
    return word + "s"


def misspell(word: str, rng: np.random.Generator) -> str:
    """One typing error: drop, double, swap adjacent, or hit a neighbouring key (never the first letter)."""
    if len(word) < 4 or not word.isalpha():
        return word
    i = 1 + int(rng.integers(len(word) - 1))
    op = int(rng.integers(4))
    if op == 0:
        return word[:i] + word[i + 1 :]
    if op == 1:
        return word[:i] + word[i] + word[i:]
    if op == 2 and i < len(word) - 1 and word[i] != word[i + 1]:
        return word[:i] + word[i + 1] + word[i] + word[i + 2 :]
    near = _NEIGHBOURS.get(word[i], "")
    if not near:
        return word[:i] + word[i + 1 :]
    return word[:i] + near[int(rng.integers(len(near)))] + word[i + 1 :]


_LOWER_IN_TITLES = frozenset(
    {"with", "and", "for", "in.", "ft.", "yd.", "gal.", "qt.", "oz.", "lb.", "cu.", "mm", "in", "of", "w/", "x"}
)


_UPPER_IN_TITLES = frozenset({"usb", "sae", "aa", "agm", "lp", "tv", "pc", "cpu", "led", "4k", "cr-v"})


def title_case(text: str) -> str:
    """Catalogue casing: capitalised words, lower-case units and function words, upper-case acronyms."""
    words = text.split(" ")
    out = []
    for k, w in enumerate(words):
        if w in _UPPER_IN_TITLES:
            out.append(w.upper())
        elif w in _LOWER_IN_TITLES and k > 0:
            out.append(w)
        elif w[:1].isalpha():
            out.append("-".join(p[:1].upper() + p[1:] for p in w.split("-")))
        else:
            out.append(w)
    return " ".join(out)
