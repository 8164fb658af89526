"""The frozen lower layers of a fine-tuned sentence-transformer, run once per text and kept.

Fine-tuning MiniLM with its embeddings and lowest N layers frozen (``freeze_layers``) still ran those
layers forward for every text of every mini-batch, validation pass and cross-fitting training. Their
output does not change during training, so :class:`FrozenPrefix` computes it once per distinct text
(eval mode: no dropout in the frozen part), keeps it for the process, and each step runs only the
trainable top layers, the pooling and the normalisation. Across an ablation's cross-fitted trainings
the same base model and ``freeze_layers`` share one store, so a text's lower layers run once per run.

The top layers see exactly the hidden states a full forward pass in eval mode gives them (tested to
1e-5); the one difference from the uncached path is that the frozen layers apply no dropout while
training.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path

import numpy as np
import torch

_STORES: dict[tuple, dict[str, torch.Tensor]] = {}
_SIZES: dict[tuple, int] = {}
_LOCK = threading.Lock()
BUDGET_BYTES = 6 * 2**30  # beyond this, texts are run through the frozen layers without being kept
CHUNK = 256


def precision_context(precision: str):
    """The context a MiniLM forward pass runs in: ``"fp32"`` as is; ``"bf16"`` under CPU autocast, so the
    matrix products take bfloat16 inputs (accumulating in float32; layer norms and softmax stay float32), which
    pays off on a CPU with AVX512-BF16 or AMX (figures: benchmarks/results/docstring-timings.md)."""
    return torch.autocast("cpu", dtype=torch.bfloat16, enabled=precision == "bf16")


def clear() -> None:
    """Forget every kept hidden state (frees their memory)."""
    with _LOCK:
        _STORES.clear()
        _SIZES.clear()


def kept_bytes() -> int:
    with _LOCK:
        return sum(_SIZES.values())


def save(key: tuple, texts: list[str], directory) -> None:
    """Write the kept states of ``texts`` (all kept under ``key``) to ``directory``: the states end to end
    (``states.npy``, tokens x hidden, float32) and the key, texts and token counts (``index.json``), for
    :func:`load` in another process."""
    store = _STORES[key]
    write(key, {t: store[t] for t in texts if t in store}, directory)  # beyond BUDGET_BYTES a text is not kept


def write(key: tuple, kept: dict[str, torch.Tensor], directory) -> None:
    """:func:`save` of the states ``kept`` ({text: (tokens, hidden) float32}), kept here or not."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    texts, states = list(kept), list(kept.values())
    np.save(directory / "states.npy", torch.cat(states).numpy() if states else np.zeros((0, 0), np.float32))
    index = {"key": list(key), "texts": list(texts), "tokens": [len(s) for s in states]}
    (directory / "index.json").write_text(json.dumps(index), encoding="utf-8")


def load(directory) -> tuple:
    """Keep the states a :func:`save` wrote (memory-mapped: processes that load one file share its pages)
    under their key, which is returned."""
    directory = Path(directory)
    index = json.loads((directory / "index.json").read_text(encoding="utf-8"))
    key = tuple(index["key"])
    states = torch.from_numpy(np.load(directory / "states.npy", mmap_mode="c"))  # copy-on-write: never written
    ends = np.cumsum(index["tokens"])
    with _LOCK:
        store = _STORES.setdefault(key, {})
        _SIZES.setdefault(key, 0)
        for text, end, n in zip(index["texts"], ends, index["tokens"]):
            store[text] = states[end - n : end]
    return key


def missing(key: tuple, texts) -> list[str]:
    """The distinct ``texts`` whose states are not kept under ``key`` in this process."""
    with _LOCK:
        store = _STORES.get(key, {})
        return [t for t in dict.fromkeys(texts) if t not in store]


def keep(key: tuple, states: dict[str, torch.Tensor]) -> None:
    """Keep ``states`` ({text: (tokens, hidden) float32}) under ``key``, as long as they fit :data:`BUDGET_BYTES`."""
    with _LOCK:
        store = _STORES.setdefault(key, {})
        _SIZES.setdefault(key, 0)
        for text, state in states.items():
            size = state.numel() * state.element_size()
            if sum(_SIZES.values()) + size > BUDGET_BYTES:
                break
            store[text] = state
            _SIZES[key] += size


def embed(hf, features: dict) -> tuple[torch.Tensor, object]:
    """The embedding layer's output for tokenised ``features`` (a sentence-transformer's ``preprocess``) and the
    attention mask the layers of ``hf`` (a transformers BERT-like model) take."""
    from transformers.masking_utils import create_bidirectional_mask

    kwargs = {"input_ids": features["input_ids"]}
    if "token_type_ids" in features:
        kwargs["token_type_ids"] = features["token_type_ids"]
    hidden = hf.embeddings(**kwargs)
    mask = create_bidirectional_mask(config=hf.config, inputs_embeds=hidden, attention_mask=features["attention_mask"])
    return hidden, mask


def unpad(hidden: torch.Tensor, attention_mask: torch.Tensor) -> list[torch.Tensor]:
    """Each text's rows of a padded (texts, longest, hidden) batch, its real tokens only."""
    return [hidden[i, :n] for i, n in enumerate(attention_mask.sum(1).tolist())]


def lower(model, hf, n_frozen: int, texts: list[str], *, precision: str = "fp32") -> list[torch.Tensor]:
    """The states of ``texts`` after the embeddings and the lowest ``n_frozen`` layers of ``hf`` (the transformers
    model inside the sentence-transformer ``model``, which tokenises), in eval mode, one batch."""
    features = model.preprocess(texts)
    was_training = hf.training
    hf.eval()
    try:
        with torch.no_grad(), precision_context(precision):
            hidden, mask = embed(hf, features)
            for layer in hf.encoder.layer[:n_frozen]:
                hidden = layer(hidden, mask)
    finally:
        hf.train(was_training)
    return unpad(hidden.float(), features["attention_mask"])


class FrozenPrefix:
    """Embeddings + the lowest ``n_frozen`` layers of ``model`` (a BERT-like SentenceTransformer whose
    first module is a Transformer, then pooling/normalisation modules), cached per text under ``key``
    (which must identify the frozen weights, the tokenizer settings and ``n_frozen``)."""

    def __init__(self, model, n_frozen: int, *, key: tuple, transformer, precision: str = "fp32"):
        self.model, self.n_frozen, self.key, self.precision = model, n_frozen, key, precision
        self.hf = transformer
        self.layers = transformer.encoder.layer
        with _LOCK:
            _STORES.setdefault(key, {})
            _SIZES.setdefault(key, 0)

    def states(self, texts: list[str]) -> list[torch.Tensor]:
        """Hidden states (tokens, hidden) after the frozen layers, one tensor per text."""
        store = _STORES[self.key]
        missing = [t for t in dict.fromkeys(texts) if t not in store]
        if len(missing) > CHUNK:  # chunks of similar lengths: little padding in the frozen layers
            missing.sort(key=len)
        fresh: dict[str, torch.Tensor] = {}
        for start in range(0, len(missing), CHUNK):
            part = missing[start : start + CHUNK]
            fresh.update(zip(part, lower(self.model, self.hf, self.n_frozen, part, precision=self.precision)))
        keep(self.key, fresh)
        return [store[t] if t in store else fresh[t] for t in texts]

    def forward(self, texts: list[str]) -> torch.Tensor:
        """Sentence embeddings of ``texts``: kept lower states -> trainable top layers -> pooling modules.

        The top layers' dense parts (projections, feed-forward, layer norms) run on the texts' real tokens
        packed end to end, and only the attention itself on a padded (texts x longest) grid: a batch of
        short queries or product titles spends most of a padded layer on padding (see :func:`packed_layer`).
        """
        states = self.states(texts)
        lengths = torch.tensor([len(s) for s in states])
        width = int(lengths.max())
        attention_mask = (torch.arange(width)[None, :] < lengths[:, None]).long()
        index = torch.nonzero(attention_mask.flatten(), as_tuple=True)[0]  # each real token's padded position
        hidden = torch.cat(states)
        keys = attention_mask.bool()[:, None, None, :]
        with precision_context(self.precision):
            for layer in self.layers[self.n_frozen :]:
                hidden = packed_layer(layer, hidden, index=index, keys=keys)
        hidden = hidden.float()
        padded = hidden.new_zeros(len(states) * width, hidden.shape[1]).index_copy(0, index, hidden)
        features = {"token_embeddings": padded.view(len(states), width, -1), "attention_mask": attention_mask}
        for module in list(self.model)[1:]:
            features = module(features)
        return features["sentence_embedding"]


def packed_layer(layer, hidden: torch.Tensor, *, index: torch.Tensor, keys: torch.Tensor) -> torch.Tensor:
    """One BERT layer (a transformers ``BertLayer``) over packed tokens: ``hidden`` is (tokens, width) of
    every text end to end, ``index`` each token's position in the (texts x longest) grid, ``keys`` the grid's
    real-token mask (texts, 1, 1, longest). The same computation as the layer's own forward on the padded
    grid (tested to 1e-5), dropout included when training, without the padding's share of the work."""
    attention, heads = layer.attention, layer.attention.self
    n_texts, width = keys.shape[0], keys.shape[-1]
    n_heads, size = heads.num_attention_heads, heads.attention_head_size

    def grid(t: torch.Tensor) -> torch.Tensor:
        full = t.new_zeros(n_texts * width, t.shape[1]).index_copy(0, index, t)
        return full.view(n_texts, width, n_heads, size).transpose(1, 2)

    context = torch.nn.functional.scaled_dot_product_attention(
        grid(heads.query(hidden)),
        grid(heads.key(hidden)),
        grid(heads.value(hidden)),
        attn_mask=keys,
        dropout_p=heads.dropout.p if heads.training else 0.0,
        scale=heads.scaling,
    )
    context = context.transpose(1, 2).reshape(n_texts * width, n_heads * size).index_select(0, index)
    out = attention.output
    hidden = out.LayerNorm(out.dropout(out.dense(context)) + hidden)
    out = layer.output
    return out.LayerNorm(out.dropout(out.dense(layer.intermediate(hidden))) + hidden)
