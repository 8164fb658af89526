"""Kaggle product-search judgement tables: Home Depot and CrowdFlower (one CSV each)."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd

from ltrfeat.core.duplicates import resolve_duplicates
from ltrfeat.core.errors import TextTableError
from ltrfeat.core.text import TextTableWarning, derive_id, pairs_to_ranking, read_judged_pairs
from ltrfeat.datasets.converters._base import (
    SOURCES,
    Converted,
    Options,
    add_doc_text,
    clean_text,
    label_histogram,
    register_source,
)


def _read(path, columns: dict, options: Options, *, required: list[str]) -> pd.DataFrame:
    """Judged pairs with cleaned text; the ``required`` text columns must be non-empty."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TextTableWarning)  # missing="keep" warns; empties are checked below
        df = read_judged_pairs(
            path,
            columns=columns,
            encoding=options.encoding,
            label_map=options.label_map,
            missing="keep",
            duplicates=options.duplicates,
        )
    for col in df.columns:
        if col not in ("qid", "docid", "label"):
            df[col] = [clean_text(v) for v in df[col].tolist()]
    for col in required:
        empty = df[col].isna().to_numpy()
        if empty.any():
            lines = df.index.to_numpy()[empty]
            raise TextTableError(
                f"{int(empty.sum())} rows have an empty {columns[col]!r} (lines {', '.join(map(str, lines[:5]))})",
                path=path,
                line=int(lines[0]),
                fix="fill in the text or remove those rows",
            )
    return df


def _finish(source: str, path, pairs: pd.DataFrame, fields: list[str], options: Options) -> Converted:
    """Group ``pairs`` by query and take each id's first text for the query and document tables."""
    read = pairs.attrs.get("duplicates") or {}
    # cleaning the text (crowdflower's ids are derived from it) can make more rows judge one pair
    pairs, figures = resolve_duplicates(pairs, policy=options.duplicates, path=path)
    pairs = pairs.copy()
    pairs.attrs["source"] = str(path)
    pairs.attrs["duplicates"] = {**figures, **{k: figures[k] + read.get(k, 0) for k in figures if k != "policy"}}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", TextTableWarning)
        _, queries, docs = pairs_to_ranking(pairs, fields=fields, conflicts="first")
    codes, _ = pd.factorize(pairs["qid"].to_numpy(dtype=object))
    grouped = pairs.iloc[np.argsort(codes, kind="stable")]
    labels = {
        "rule": SOURCES[source].label_rule,
        "label_map": options.label_map,
        "histogram": label_histogram(grouped["label"]),
    }
    return Converted(
        source=source,
        inputs={"pairs": path},
        pairs=grouped,
        queries=queries,
        docs=docs,
        fields=tuple(fields),
        labels=labels,
        duplicates=pairs.attrs.get("duplicates"),
        notes=[str(w.message) for w in caught if issubclass(w.category, TextTableWarning)],
    )


@register_source(
    name="homedepot",
    roles=("pairs",),
    file_names=(("train.csv",),),
    summary="Home Depot product search (Kaggle 2016): train.csv with id, product_uid, product_title, "
    "search_term, relevance (mean of about 3 ratings in [1, 3]); Latin-1",
    label_rule="mean rating in [1, 3] mapped by the label map; the default linear:1:3:7 is "
    "round-half-up of 3 (r - 1): 1 -> 0, 1.33 -> 1, 1.67 -> 2, ..., 3 -> 6",
    label_map="linear:1:3:7",
    encoding="latin-1",
)
def homedepot(paths, options: Options) -> Converted:
    path = paths["pairs"]
    # raw_label is read as an extra text column so the file's own value is kept verbatim
    columns = {
        "query": "search_term",
        "docid": "product_uid",
        "doc": "product_title",
        "label": "relevance",
        "raw_label": "relevance",
    }
    df = _read(path, columns, options, required=["query", "doc"])
    pairs = df[["qid", "query", "docid", "doc", "label", "raw_label"]]
    conv = _finish("homedepot", path, pairs, ["doc"], options)
    conv.docs = conv.docs.rename(columns={"doc": "title"})
    conv.fields = ("title",)
    return conv


@register_source(
    name="crowdflower",
    roles=("pairs",),
    file_names=(("train.csv",),),
    summary="CrowdFlower search results relevance (Kaggle 2015): train.csv with id, query, product_title, "
    "product_description, median_relevance (1-4), relevance_variance",
    label_rule="median_relevance 1..4 mapped by the label map; the default linear:1:4:4 gives 0..3",
    label_map="linear:1:4:4",
)
def crowdflower(paths, options: Options) -> Converted:
    path = paths["pairs"]
    columns = {
        "query": "query",
        "doc": "product_title",
        "body": "product_description",
        "label": "median_relevance",
        "raw_label": "median_relevance",
        "relevance_variance": "relevance_variance",
    }
    df = _read(path, columns, options, required=["query", "doc"])
    df = df.rename(columns={"doc": "title"})
    # The file has no product id: a document is its (title, description) text.
    df["docid"] = [
        derive_id("d", t, b if isinstance(b, str) else "") for t, b in zip(df["title"].tolist(), df["body"].tolist())
    ]
    df = add_doc_text(df, ["title", "body"])
    pairs = df[["qid", "query", "docid", "doc", "title", "body", "label", "raw_label", "relevance_variance"]]
    return _finish("crowdflower", path, pairs, ["title", "body"], options)
