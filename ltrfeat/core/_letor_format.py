"""The LETOR format's conventions shared by its reader and writer: the format and NaN-policy names, comments
(:func:`parse_comment`) and the paths of the side files beside a data file."""

from __future__ import annotations

import re
from pathlib import Path

LETOR_FORMATS = ("letor", "svmlight")
NAN_POLICIES = ("error", "keep", "zero")

_UTF8_FIX = "re-encode the file as UTF-8 (e.g. iconv -f latin1 -t utf-8)"
_PAIR_RE = re.compile(r"\s*([^\s=]+)\s*=\s*(\S+)")
_DOCID_RE = re.compile(r"docid\s*=\s*(\S+)")


def parse_comment(comment: str | None) -> dict:
    """Key/value pairs of a LETOR comment, or its bare leading docid.

    ``"docid = GX0 inc = 1 prob = 0.2"`` → ``{"docid": "GX0", "inc": "1", "prob": "0.2"}``
    (pairs are read from the start and reading stops at the first token that is not
    ``key = value``); ``"7555 rambo"`` (Elasticsearch LTR logs) → ``{"docid": "7555"}``;
    empty or ``None`` → ``{}``.
    """
    if not comment:
        return {}
    pairs = {}
    pos = 0
    while m := _PAIR_RE.match(comment, pos):
        pairs[m.group(1)] = m.group(2)
        pos = m.end()
    if pairs:
        return pairs
    tokens = comment.split(None, 1)
    return {"docid": tokens[0]} if tokens else {}


def _docid_of(comment: str | None) -> str | None:
    if comment is None:
        return None
    if comment.startswith("docid"):  # the LETOR 4.0 layout, without building a dict
        m = _DOCID_RE.match(comment)
        if m:
            return m.group(1)
    return parse_comment(comment).get("docid")


# --------------------------------------------------------------------------- sidecar files


def group_path_of(path) -> Path:
    """``<file>.query``: LightGBM's group-size file beside an svmlight file."""
    return Path(f"{path}.query")


def weight_path_of(path) -> Path:
    """``<file>.weight``: one weight per row beside a data file."""
    return Path(f"{path}.weight")


def position_path_of(path) -> Path:
    """``<file>.position``: one 1-based display position per row beside a data file (click data)."""
    return Path(f"{path}.position")
