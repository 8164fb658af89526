"""Why an encoder scores a (query, document) pair as it does.

CLSM (Shen et al. 2014, Table 3 / Figure 4): max pooling keeps, for every one of the K convolutional
neurons, the activation of a single word-n-gram window. For each side we report the ``top`` neurons
with the largest pooled activation, the window (and its centre word) that won each, and the neurons
that are in both sides' ``shared_top`` lists -- where query and document meet in the semantic layer's input.

DSSM has no positions; its explanation is an occlusion test per letter trigram: the score drop when
every occurrence of that trigram is removed from the text (one batched forward pass per side).

The score explained is the encoder's own (:attr:`Encoder.score`): the cosine, or the raw dot product of
an encoder trained with ``score="dot"`` (DSE).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

import numpy as np
import torch
import torch.nn.functional as F

from ltrfeat.encoders.encoder import Encoder
from ltrfeat.encoders.hashing import BagBatch

EMPTY = "(empty)"


@dataclass
class Neuron:
    """One max-pooling neuron: its index, pooled activation and the window that won it."""

    neuron: int
    activation: float
    word: str  # centre word of the winning window
    window: str  # the whole window, with <s> at the text's ends


@dataclass
class TrigramEffect:
    trigram: str
    count: int
    drop: float  # score(full) - score(without this trigram)


@dataclass
class Explanation:
    """An explanation of one pair; ``kind`` is the encoder architecture, ``score`` ``"cosine"`` or ``"dot"``
    (what ``similarity`` is)."""

    kind: str
    score: str
    similarity: float
    query_words: list[str]
    doc_words: list[str]
    query_top: list[Neuron] = field(default_factory=list)
    doc_top: list[Neuron] = field(default_factory=list)
    shared: list[tuple[Neuron, Neuron]] = field(default_factory=list)  # (query side, doc side), same neuron
    shared_top: int = 0
    query_trigrams: list[TrigramEffect] = field(default_factory=list)
    doc_trigrams: list[TrigramEffect] = field(default_factory=list)

    def to_dict(self) -> dict:
        return asdict(self)


def explain(encoder: Encoder, query: str, doc: str, *, top: int = 5, shared_top: int = 10) -> Explanation:
    """Explain ``encoder``'s score for one (query, doc) pair (see the module docstring)."""
    if top < 1 or shared_top < 1:
        raise ValueError("top and shared_top must be >= 1")
    kind = encoder.model.config["architecture"]
    similarity = float(encoder.similarity([query], [doc])[0])
    words = {"query": encoder.hasher.words(query), "doc": encoder.hasher.words(doc)}
    result = Explanation(
        kind=kind, score=encoder.score, similarity=similarity, query_words=words["query"], doc_words=words["doc"]
    )
    if kind == "clsm":
        pooled = {side: _pooled_winners(encoder, text, side) for side, text in (("query", query), ("doc", doc))}
        tops = {side: _neurons(encoder, words[side], *pooled[side], n=max(top, shared_top)) for side in pooled}
        result.query_top, result.doc_top = tops["query"][:top], tops["doc"][:top]
        doc_by_id = {n.neuron: n for n in tops["doc"][:shared_top]}
        result.shared = [(n, doc_by_id[n.neuron]) for n in tops["query"][:shared_top] if n.neuron in doc_by_id]
        result.shared_top = shared_top
    elif kind == "dssm":
        q_vec, d_vec = encoder.encode([query], side="query"), encoder.encode([doc], side="doc")
        result.query_trigrams = _occlusion(encoder, query, "query", d_vec[0], top)
        result.doc_trigrams = _occlusion(encoder, doc, "doc", q_vec[0], top)
    return result


# -- CLSM ----------------------------------------------------------------------------------
def _pooled_winners(encoder: Encoder, text: str, side: str) -> tuple[np.ndarray, np.ndarray]:
    """Pooled activation (K,) and the winning window position (K,) of every conv neuron."""
    tower = encoder.model.tower(side)
    with torch.inference_mode():
        h = tower.local_features(tower.prepare(encoder.hasher, [text]))  # (windows of the one text, K)
    values, positions = h.max(dim=0)
    return values.numpy(), positions.numpy()


def _neurons(encoder: Encoder, words: list[str], values, positions, *, n: int) -> list[Neuron]:
    context = int(encoder.model.config["tower"]["context"])
    padded = ["<s>"] * context + (words or [EMPTY]) + ["<s>"] * context
    order = np.argsort(-values, kind="stable")[:n]
    return [
        Neuron(
            neuron=int(k),
            activation=float(values[k]),
            word=padded[context + int(positions[k])],
            window=" ".join(padded[int(positions[k]) : int(positions[k]) + 2 * context + 1]),
        )
        for k in order
    ]


def max_pool_words(encoder: Encoder, texts, *, side: str, top: int = 8) -> list[list[tuple[int, str]]]:
    """For each text, its ``top`` CLSM max-pooling neurons by pooled activation as ``(neuron, winning word)``
    pairs (the word at the centre of the window that won the neuron; CLSM paper, Table 3). Neurons that a
    query and a document share among their top lists are where the two meet."""
    if encoder.model.config["architecture"] != "clsm":
        raise ValueError("max-pool words exist for CLSM encoders only")
    out = []
    for text in texts:
        values, positions = _pooled_winners(encoder, text, side)
        out.append(
            [(n.neuron, n.word) for n in _neurons(encoder, encoder.hasher.words(text), values, positions, n=top)]
        )
    return out


# -- DSSM ----------------------------------------------------------------------------------
def _occlusion(encoder: Encoder, text: str, side: str, other: np.ndarray, top: int) -> list[TrigramEffect]:
    """The ``top`` trigrams of ``text`` whose removal lowers the score with ``other`` most."""
    hasher = encoder.hasher
    strings, ids = [], []
    for word in hasher.words(text):
        strings += hasher.trigrams(word)
        ids += hasher.word_trigrams(word)
    if not ids:
        return []
    ids = np.asarray(ids, dtype=np.int64)
    distinct, first = np.unique(ids, return_index=True)
    # row 0: the full text; row 1 + i: the text without every occurrence of distinct[i]
    keep = [np.ones(len(ids), dtype=bool)] + [ids != t for t in distinct]
    parts = [ids[mask] for mask in keep]
    offsets = np.concatenate([[0], np.cumsum([len(p) for p in parts])[:-1]]).astype(np.int64)
    tower = encoder.model.tower(side)
    with torch.inference_mode():
        vectors = tower(BagBatch(ids=np.concatenate(parts), offsets=offsets))
        if encoder.model.normalized:
            vectors = F.normalize(vectors, dim=1)
    scores = vectors.numpy() @ other
    drops = scores[0] - scores[1:]
    names = [strings[i] if t != 0 else "(unknown trigrams)" for t, i in zip(distinct, first)]
    counts = [int((ids == t).sum()) for t in distinct]
    order = np.argsort(-drops, kind="stable")[:top]
    return [TrigramEffect(trigram=names[i], count=counts[i], drop=float(drops[i])) for i in order]


# -- text ----------------------------------------------------------------------------------
def format_explanation(ex: Explanation, *, query: str, doc: str) -> str:
    """A plain-text report of :func:`explain`'s result."""
    lines = [f"{ex.kind} {ex.score}({query!r}, {doc!r}) = {ex.similarity:.4f}"]
    if ex.kind == "clsm":
        for side, top in (("query", ex.query_top), ("document", ex.doc_top)):
            lines += ["", f"{side}: top {len(top)} max-pooling neurons", "  neuron  activation  word (window)"]
            lines += [f"  {n.neuron:>6}  {n.activation:>10.4f}  {n.word} ({n.window})" for n in top]
        lines += ["", f"neurons in both sides' top {ex.shared_top}: {len(ex.shared)}"]
        lines += [
            f"  {q.neuron:>6}  query {q.word!r} ({q.activation:.4f})  document {d.word!r} ({d.activation:.4f})"
            for q, d in ex.shared
        ]
    elif ex.kind == "dssm":
        for side, effects in (("query", ex.query_trigrams), ("document", ex.doc_trigrams)):
            lines += [
                "",
                f"{side}: letter trigrams whose removal lowers the {ex.score} most",
                f"  trigram  count  {ex.score + ' drop':>11}",
            ]
            lines += [f"  {e.trigram:<7}  {e.count:>5}  {e.drop:>+11.4f}" for e in effects]
    return "\n".join(lines)
