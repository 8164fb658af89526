"""One MiniLM pass for an ablation's zero-shot vectors and its fine-tunings' frozen lower layers.

An ablation with both ``sbert`` (the zero-shot column, vectors cached by :mod:`ltrfeat.encoders.distill`)
and ``sbert-ft`` fine-tuned from frozen lower layers (states kept by :mod:`ltrfeat.encoders.sbert_prefix`)
ran each text through the same model twice: whole, for its vector, and through the embeddings and the lowest
``freeze_layers`` layers, for the states the fine-tunings start from. :func:`shared_pass` runs it once: for a text
both need whose tokens fit the fine-tuning's ``max_seq_length`` (so both tokenisations are the same), the states
after the frozen layers are kept and the same forward pass goes on through the upper layers and the pooling to the
zero-shot vector. A longer text gets its truncated lower pass apart; a text only one of them needs gets only that
pass. Batches hold texts of similar token counts. The pass runs on the process's MiniLM engine
(:mod:`ltrfeat.encoders.sbert_onnx`: ONNX Runtime, whose graph outputs the states after every layer,
or torch); the truncated lower passes run in torch. Vectors and states equal the two separate passes' to float
rounding (tests/encoders/test_sbert_shared.py: 1e-5).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from tqdm import tqdm

from ltrfeat.core.stages import teacher_clock
from ltrfeat.encoders import distill, sbert_onnx, sbert_prefix
from ltrfeat.encoders.config import SbertConfig
from ltrfeat.encoders.sbert import packaged_model_path


def shares(teacher: str, *, base=None, **settings) -> bool:
    """Whether :func:`shared_pass` can make teacher ``teacher``'s vectors (``sbert[=DIR]``) in the pass that keeps
    the frozen states of a fine-tuning of ``base`` with these :class:`SbertConfig` settings: the same model
    directory, states kept, fp32 (a bf16 fine-tuning's states come from a different computation)."""
    cfg = SbertConfig.build(None, settings)
    if not cfg.keep_frozen or cfg.freeze_layers < 0 or cfg.precision != "fp32":
        return False
    key = distill.teacher_key(teacher)
    model_dir = packaged_model_path() if key == "sbert" else Path(key.split("=", 1)[1])
    return model_dir.resolve() == (packaged_model_path() if base is None else Path(base)).resolve()


def shared_pass(
    teacher: str,
    wanted: dict[str, list[str]],
    frozen: list[str],
    *,
    base=None,
    batch_size: int = 64,
    progress: bool = False,
    **settings,
) -> tuple:
    """Teacher ``teacher``'s vectors of the ``wanted`` texts ({side: texts}; only those not cached yet, each
    distinct text once for both sides) into the teacher-vector cache, and the frozen-layer states of the
    ``frozen`` texts (those not kept yet) into the store :func:`~ltrfeat.encoders.sbert_training.
    keep_frozen_states` with the same ``base`` and settings fills; :func:`shares` must hold. Returns
    ``(store key, texts run through the whole model, texts through the frozen layers only)``; ``progress``
    draws a bar over the texts."""
    teacher_key = distill.teacher_key(teacher)
    missing = {side: distill.missing_vectors(teacher_key, side, texts) for side, texts in wanted.items()}
    whole = list(dict.fromkeys(t for texts in missing.values() for t in texts))
    cfg = SbertConfig.build(None, settings)
    key = states_key(teacher, cfg, base=base)
    vectors, states, lower_only = compute(
        teacher, whole, sbert_prefix.missing(key, frozen), cfg, base=base, batch_size=batch_size, progress=progress
    )
    sbert_prefix.keep(key, states)
    for side, texts in missing.items():
        if texts:
            distill.add_vectors(teacher_key, side, texts, np.stack([vectors[t] for t in texts]))
    return key, len(whole), lower_only


def states_key(teacher: str, cfg: SbertConfig, *, base=None) -> tuple:
    """The store key of the frozen states :func:`compute` makes (that of :func:`~ltrfeat.encoders.
    sbert_training.frozen_key` for the fine-tuning's own copy of the model)."""
    from ltrfeat.encoders.sbert_training import frozen_key

    model = distill.load_teacher(teacher).model
    return frozen_key(model, cfg.freeze_layers, base=base, max_seq_length=cfg.max_seq_length)


def compute(
    teacher: str,
    whole: list[str],
    frozen: list[str],
    cfg: SbertConfig,
    *,
    base=None,
    batch_size: int = 64,
    progress: bool = False,
) -> tuple[dict[str, np.ndarray], dict[str, torch.Tensor], int]:
    """The vectors of the distinct texts ``whole`` and the frozen-layer states of the distinct texts ``frozen``,
    neither read from nor put in a cache: ``({text: vector}, {text: states}, texts run through the frozen layers
    only)``; ``progress`` draws a bar over the texts."""
    from ltrfeat.encoders.sbert_training import _transformer

    model = distill.load_teacher(teacher).model
    hf = _transformer(model, base)
    onnx = sbert_onnx.runner(model)
    need_states = set(frozen)
    vectors: dict[str, np.ndarray] = {}
    states: dict[str, torch.Tensor] = {}
    was_training = hf.training
    hf.eval()
    bar = tqdm(
        total=len(whole),
        desc="MiniLM texts",
        disable=not progress or not whole,
        file=sys.stderr,
        leave=False,
        unit="text",
    )
    try:
        with bar, teacher_clock(len(whole)), torch.inference_mode():
            for batch in sbert_onnx.buckets(model, whole, batch_size):
                if onnx is not None:
                    batch_vectors, lower = onnx.run(batch, layer=cfg.freeze_layers)
                    batch_states = [torch.from_numpy(s) for s in lower or ()]
                else:
                    batch_vectors, batch_states = _torch_pass(model, hf, batch, cfg.freeze_layers)
                vectors.update(zip(batch, batch_vectors))
                for text, state in zip(batch, batch_states):
                    if text in need_states and len(state) <= cfg.max_seq_length:  # not truncated by either
                        states[text] = state.clone()
                bar.update(len(batch))
        rest = sorted((t for t in frozen if t not in states), key=len)  # similar lengths side by side
        full_length = model.max_seq_length
        model.max_seq_length = cfg.max_seq_length  # the fine-tuning's truncation
        try:
            for start in range(0, len(rest), sbert_prefix.CHUNK):
                part = rest[start : start + sbert_prefix.CHUNK]
                states.update(zip(part, (s.clone() for s in sbert_prefix.lower(model, hf, cfg.freeze_layers, part))))
        finally:
            model.max_seq_length = full_length
    finally:
        hf.train(was_training)
    return vectors, states, len(rest)


def _torch_pass(model, hf, batch: list[str], freeze_layers: int) -> tuple[np.ndarray, list[torch.Tensor]]:
    """One batch through the sentence-transformer ``model`` (``hf`` its transformer) in torch: the normalised
    vectors and each text's states after ``freeze_layers`` layers."""
    features = model.preprocess(batch)
    hidden, mask = sbert_prefix.embed(hf, features)
    for depth, layer in enumerate(hf.encoder.layer):
        if depth == freeze_layers:
            lower = hidden
        hidden = layer(hidden, mask)
    if freeze_layers == len(hf.encoder.layer):
        lower = hidden
    out = {"token_embeddings": hidden, "attention_mask": features["attention_mask"]}
    for module in list(model)[1:]:
        out = module(out)
    return F.normalize(out["sentence_embedding"], dim=1).numpy(), sbert_prefix.unpad(lower, features["attention_mask"])
