"""The product catalogue: documents with latent attributes and their title/description/brand text."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ltrfeat.datasets.synth._lexicon import CATEGORIES, PRODUCT_TYPES, ProductType
from ltrfeat.datasets.synth._surface import colour_forms, material_forms, pick, size_forms, title_case

ATTRIBUTE_KINDS = ("brand", "colour", "material", "size", "feature")

_FILLERS = (
    "Easy to install with the included hardware.",
    "Backed by a limited lifetime warranty.",
    "Built to last with a durable construction.",
    "A customer favourite for its value.",
    "Simple assembly in minutes.",
    "Designed for years of reliable performance.",
    "Tested for quality and safety.",
    "Free shipping on orders over $45.",
    "",
)


def type_weights(rng: np.random.Generator, n: int, exponent: float = 0.7) -> np.ndarray:
    """Zipf-like popularity over ``n`` types in a random order (normalised)."""
    w = 1.0 / np.arange(1, n + 1) ** exponent
    w = w[rng.permutation(n)]
    return w / w.sum()


def sample_types(rng: np.random.Generator, n_docs: int) -> np.ndarray:
    """Type index of every document: a minimum per type, the rest by popularity."""
    n_types = len(PRODUCT_TYPES)
    floor = min(6, n_docs // n_types)
    base = np.repeat(np.arange(n_types), floor)
    extra = rng.choice(n_types, size=n_docs - len(base), p=type_weights(rng, n_types))
    return rng.permutation(np.concatenate([base, extra]))


def make_attributes(rng: np.random.Generator, ptype: ProductType) -> dict[str, str | None]:
    """Latent attributes of one product (``None`` where the product has none)."""
    cat = CATEGORIES[ptype.category]
    return {
        "brand": pick(rng, cat.brands),
        "colour": pick(rng, ptype.colours) if ptype.colours else None,
        "material": pick(rng, ptype.materials) if ptype.materials else None,
        "size": pick(rng, ptype.sizes) if ptype.sizes else None,
        "feature": pick(rng, ptype.features) if ptype.features and rng.random() < 0.75 else None,
    }


def render_title(rng: np.random.Generator, ptype: ProductType, attrs: dict) -> str:
    """``Brand [size] [colour] [material] [feature] Name [with feature]``; sellers omit some attributes."""
    parts = [attrs["brand"]]
    if attrs["size"]:
        parts.append(size_forms(attrs["size"])[0])
    if attrs["colour"] and rng.random() < 0.7:
        parts.append(colour_forms(attrs["colour"])[0])
    if attrs["material"] and rng.random() < 0.7:
        parts.append(material_forms(attrs["material"])[0])
    feature = attrs["feature"]
    trailing = feature is not None and feature.startswith("with ")
    if feature and not trailing:
        parts.append(feature)
    parts.append(pick(rng, ptype.names, p_first=0.5))
    if trailing:
        parts.append(feature)
    return title_case(" ".join(parts))


def render_description(rng: np.random.Generator, ptype: ProductType, attrs: dict) -> str:
    """A few catalogue sentences; names the product (often by a synonym) and every attribute."""
    name = pick(rng, ptype.names)
    sentences = [f"This {name} from {attrs['brand']} is ideal for {pick(rng, CATEGORIES[ptype.category].uses)}."]
    finish = [colour_forms(attrs["colour"])[0] + " finish"] if attrs["colour"] else []
    finish += [material_forms(attrs["material"])[0] + " construction"] if attrs["material"] else []
    if finish:
        sentences.append(f"It has a {' and '.join(finish)}.")
    if attrs["size"]:
        size = size_forms(attrs["size"])[0]
        sentences.append(f"Size: {size}" + ("" if size.endswith(".") else "."))
    if attrs["feature"]:
        feature = attrs["feature"]
        sentences.append(f"Comes {feature}." if feature.startswith("with ") else f"Features: {feature}.")
    sentences.append(pick(rng, _FILLERS))
    return " ".join(s for s in sentences if s)


def make_catalogue(rng: np.random.Generator, n_docs: int) -> pd.DataFrame:
    """``n_docs`` documents: public text columns plus the latent ``type`` and attribute columns."""
    rows = []
    for k, t in enumerate(sample_types(rng, n_docs)):
        ptype = PRODUCT_TYPES[int(t)]
        attrs = make_attributes(rng, ptype)
        rows.append(
            {
                "docid": f"D{k + 1:05d}",
                "title": render_title(rng, ptype, attrs),
                "description": render_description(rng, ptype, attrs),
                "brand": attrs["brand"],
                "category": ptype.category,
                "type": ptype.key,
                **{kind: attrs[kind] for kind in ATTRIBUTE_KINDS if kind != "brand"},
            }
        )
    return pd.DataFrame(rows)
