"""Fine-tuning a sentence-transformers model (default: the packaged all-MiniLM-L6-v2) with the papers' losses.

Samples, negatives, soft labels, the validation split, NDCG@10 early stopping, checkpoints and the
loss objects are those every trainer shares (:mod:`ltrfeat.encoders.trainer`): R(Q, D)
is the cosine of the towers' L2-normalised sentence embeddings, scaled by ``gamma`` in the softmax and
generalized losses; the hinge loss works on the cosine with ``margin``.

CPU-sensible options: ``max_seq_length`` truncates texts (titles and queries fit in 32 tokens);
``freeze_layers`` freezes the embeddings and the lowest N transformer layers (no gradients are
computed through them: 4 of MiniLM's 6 layers about halves the step time); ``accumulate`` sums
gradients over several mini-batches before an optimizer step (in-batch negatives stay per
mini-batch). Random corpus negatives cost a forward pass each, so the defaults use in-batch
negatives only.

Reproducibility: the seed fixes sampling and dropout; with the same seed, data and thread count the
result is bit-identical, also when resumed from a checkpoint.
"""

from __future__ import annotations

import copy
import hashlib
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from ltrfeat.encoders.config import SbertConfig
from ltrfeat.encoders.sbert import packaged_model_path
from ltrfeat.encoders._sbert_finetuned import SbertFinetuned, load_model_dir
from ltrfeat.encoders.sbert_prefix import FrozenPrefix, precision_context
from ltrfeat.encoders.epochs import Loop
from ltrfeat.encoders.losses import make_loss
from ltrfeat.encoders.negatives import Sampler
from ltrfeat.encoders.trainer import Resumable, train_loop, trained_record, training_session
from ltrfeat.encoders.training_pairs import training_data, validate_pairs
from ltrfeat.encoders.two_tower import BatchLoss, validation_ndcg
from ltrfeat.encoders.validation import ndcg_per_query
from ltrfeat.core.errors import LtrfeatError, ModelFileError
from ltrfeat.core.logs import show_progress

_EVAL_CHUNK = 256  # texts per forward pass when no gradient is needed (bounds memory in validation)


class _Texts(list):
    """Texts indexed like the hashed token tables of training.py (``take(indices)``)."""

    def take(self, idx):
        return [self[i] for i in idx]


class _Tower(torch.nn.Module):
    """A SentenceTransformer as a training tower: ``prepare`` tokenizes, ``forward`` embeds (through the
    kept frozen layers when ``prefix`` is given)."""

    def __init__(self, model, prefix: FrozenPrefix | None = None, precision: str = "fp32"):
        super().__init__()
        self.st = model
        self.prefix = prefix
        self.precision = precision

    def prepare(self, _hasher, texts: list):
        return texts

    def _embed(self, texts: list) -> torch.Tensor:
        if self.prefix is not None:
            return self.prefix.forward(texts)
        with precision_context(self.precision):
            return self.st(self.st.preprocess(texts))["sentence_embedding"].float()

    def forward(self, texts: list) -> torch.Tensor:
        """Embeddings of ``texts``; without gradients (validation, scoring) in chunks of similar lengths (less
        padding; the same vectors to float rounding)."""
        if torch.is_grad_enabled() or len(texts) <= _EVAL_CHUNK:
            return self._embed(texts)
        order = np.argsort([len(t) for t in texts], kind="stable")
        parts = [
            self._embed([texts[i] for i in order[start : start + _EVAL_CHUNK]])
            for start in range(0, len(texts), _EVAL_CHUNK)
        ]
        out = torch.cat(parts)
        return out[torch.from_numpy(np.argsort(order, kind="stable"))]


class _Towers(torch.nn.Module):
    normalized = True  # R(Q, D) is the cosine (training.py's helpers read this)

    def __init__(self, towers: dict, prefixes: dict | None = None, precision: str = "fp32"):
        super().__init__()
        self.towers = torch.nn.ModuleDict({k: _Tower(v, (prefixes or {}).get(k), precision) for k, v in towers.items()})

    def tower(self, side: str) -> torch.nn.Module:
        return self.towers["shared"] if "shared" in self.towers else self.towers[side]


def _transformer(model, base):
    """The Hugging Face model inside a SentenceTransformer (its first module)."""
    first = model[0]
    hf = getattr(first, "auto_model", None) or getattr(first, "model", None)
    if hf is None:
        raise LtrfeatError(
            "the sbert model's first module is not a transformer",
            path=base,
            fix="give a sentence-transformers model directory whose first module is a Transformer",
        )
    return hf


def freeze_lower(model, n_layers: int, *, base=None) -> int:
    """Freeze the embeddings and the lowest ``n_layers`` layers (BERT-like models); returns the layer count."""
    hf = _transformer(model, base)
    embeddings, layers = getattr(hf, "embeddings", None), getattr(getattr(hf, "encoder", None), "layer", None)
    if embeddings is None or layers is None:
        raise LtrfeatError(
            "cannot find embeddings and encoder layers to freeze in this model",
            path=base,
            fix="use freeze_layers=0 (full fine-tuning) with this architecture",
            param="freeze_layers",
        )
    if n_layers > len(layers):
        raise ValueError(f"freeze_layers={n_layers} but the model has {len(layers)} layers")
    if n_layers >= 0:
        embeddings.requires_grad_(False)
        for layer in layers[:n_layers]:
            layer.requires_grad_(False)
    return len(layers)


def frozen_key(model, n_frozen: int, *, base, max_seq_length: int, precision: str = "fp32") -> tuple:
    """Identifies the frozen part's output: SHA-256 of the frozen tensors, the layer count, the
    tokenizer's truncation and the precision (the same base loaded by every cross-fitted training gives the
    same key)."""
    hf = _transformer(model, base)
    h = hashlib.sha256()
    parts = [hf.embeddings, *hf.encoder.layer[:n_frozen]]
    for module in parts:
        for name, tensor in module.state_dict().items():
            h.update(name.encode())
            h.update(tensor.detach().contiguous().numpy().tobytes())
    return (h.hexdigest(), n_frozen, max_seq_length) + (() if precision == "fp32" else (precision,))


def _load_base(base):
    path = packaged_model_path() if base is None else Path(base)
    if not path.is_dir() or not (path / "modules.json").is_file():
        raise ModelFileError(
            "base model is not a sentence-transformers model directory (no modules.json)",
            path=path,
            fix="give a directory saved by SentenceTransformer.save(), or no base for the packaged all-MiniLM-L6-v2",
        )
    return load_model_dir(path)


def keep_frozen_states(texts: list[str], config: SbertConfig | None = None, *, base=None, **options) -> tuple | None:
    """Run ``texts`` through the frozen layers a :func:`train_sbert` with these settings keeps
    (:class:`~ltrfeat.encoders.sbert_prefix.FrozenPrefix`) and keep their states in this process;
    returns the store's key (None when the settings keep nothing: ``keep_frozen=False`` or nothing
    frozen). Computing a cross-fitting's texts in one pass up front gives every training of it the same
    states, whichever process it runs in (:func:`~ltrfeat.encoders.sbert_prefix.save`)."""
    cfg = SbertConfig.build(config, options)
    if not cfg.keep_frozen or cfg.freeze_layers < 0:
        return None
    model = _load_base(base)
    model.max_seq_length = cfg.max_seq_length
    freeze_lower(model, cfg.freeze_layers, base=base)
    key = frozen_key(model, cfg.freeze_layers, base=base, max_seq_length=cfg.max_seq_length, precision=cfg.precision)
    prefix = FrozenPrefix(
        model, cfg.freeze_layers, key=key, transformer=_transformer(model, base), precision=cfg.precision
    )
    prefix.states(list(dict.fromkeys(texts)))
    return key


def train_sbert(
    pairs: pd.DataFrame,
    config: SbertConfig | None = None,
    *,
    base=None,
    init: SbertFinetuned | None = None,
    threads: int | None = None,
    checkpoint=None,
    resume=None,
    progress: bool | None = None,
    start_scores=None,
    **options,
) -> tuple[SbertFinetuned, list[dict]]:
    """Fine-tune a local sentence-transformers model; returns the encoder (best validation epoch) and the history.

    Parameters
    ----------
    pairs : DataFrame with columns ``query``, ``doc``, ``label`` and optionally ``qid``.
    config : an :class:`~ltrfeat.encoders.config.SbertConfig` (default: its defaults).
    **options : settings of the config to replace, e.g. ``epochs=5``, checked like the config itself (each one
        described in :class:`~ltrfeat.encoders.config.SbertConfig`).
    base : the model directory to start from (None: the packaged all-MiniLM-L6-v2).
    init : a fine-tuned encoder of ``base`` to continue from (its towers' weights; epoch 0 of the history
        is then its validation score, and the rule above may keep it).
    threads : torch threads (default: the CPU count).
    checkpoint : path rewritten after every epoch (a resumable checkpoint).
    resume : a checkpoint to continue from; the result equals an uninterrupted run.
    progress : show a progress bar (default: when stderr is a terminal and ``CI`` is unset).
    start_scores : the scores of every row of ``pairs`` by the zero-shot ``base`` model (an ablation's ``sbert``
        column, say), or None. When the training starts from that model unchanged (no ``init``, or one that kept it:
        :func:`is_zero_shot`) in fp32, epoch 0's validation reads them instead of running the model: the start is
        scored as a kept start scores (at the base model's own text length).
    """
    cfg = SbertConfig.build(config, options)
    loss = make_loss(cfg.loss, gamma=cfg.gamma, margin=cfg.margin)
    seed, freeze_layers, max_seq_length = cfg.seed, cfg.freeze_layers, cfg.max_seq_length
    if progress is None:
        progress = show_progress()
    pairs = validate_pairs(pairs)
    params = {"model": "sbert", "base": None if base is None else str(base), **cfg.to_dict()}
    if init is not None:
        params["init"] = init.training.get("data_sha256")
    data_sha, data, rows = training_data(pairs, cfg, loss)

    with training_session(threads, seed) as rng:
        towers, start_length = _start_towers(cfg, base, init)
        n_layers = 0
        for model in towers.values():
            n_layers = freeze_lower(model, freeze_layers, base=base)
        prefixes = _prefixes(towers, cfg, base) if cfg.keep_frozen and freeze_layers >= 0 else None
        net = _Towers(towers, prefixes, cfg.precision)
        trainable = [p for p in net.parameters() if p.requires_grad]
        if not trainable:
            raise ValueError(f"freeze_layers={freeze_layers} freezes all {n_layers} layers: nothing to train")
        opt = torch.optim.AdamW(trainable, lr=cfg.lr, weight_decay=cfg.weight_decay, fused=True)
        q_texts, d_texts = _Texts(data.queries), _Texts(data.docs)
        step = BatchLoss(
            net,
            None,
            q_texts,
            d_texts,
            data,
            Sampler(data, rows),
            rng,
            idx_of=rows,
            loss=loss,
            negatives=cfg.negatives,
            hard=cfg.hard_negatives,
            in_batch=cfg.in_batch,
        )
        validate = lambda: validation_ndcg(net, None, q_texts, d_texts, data, per_query=True)  # noqa: E731
        resumable = Resumable(params, data_sha, {"params": params, "data_sha256": data_sha}, checkpoint, resume)
        run, _ = train_loop(
            Loop(net, opt, rng, rows, step=step, validate=validate),
            cfg,
            resumable,
            progress=progress,
            keep_start=cfg.keep_start_margin if cfg.val_fraction > 0 else None,
            start_validate=_start_validation(start_scores, data, cfg, init),
        )
    record = trained_record(
        pairs,
        data,
        rows,
        run,
        resumable,
        sizes={"n_layers": n_layers},
        validation={"zero_shot_ndcg@10": run.history[0]["val_ndcg@10"]},
    )
    if run.kept is not None and run.kept["kept"] and cfg.precision == "fp32" and (init is None or is_zero_shot(init)):
        record["zero_shot"] = True  # the base model itself: it scores as the zero-shot ``sbert`` column does
    if run.kept is not None and run.kept["kept"] and start_length != max_seq_length:
        # the start itself, scored as the start scores: the zero-shot model's (or init's) own text length, and
        # without the frozen states kept for the training's shorter texts
        max_seq_length, prefixes = start_length, None
    return SbertFinetuned(towers, max_seq_length=max_seq_length, training=record, prefixes=prefixes), run.history


def _start_towers(cfg: SbertConfig, base, init) -> tuple[dict, int]:
    """The towers to fine-tune (``shared``, or ``query`` and ``doc``): the base model truncating at the config's
    ``max_seq_length``, with ``init``'s weights when given; and the text length the start scores at."""
    first = _load_base(base)
    start_length = first.max_seq_length if init is None else init.max_seq_length
    first.max_seq_length = cfg.max_seq_length
    towers = {"shared": first} if cfg.shared else {"query": first, "doc": copy.deepcopy(first)}
    if init is not None:
        if set(init.towers) != set(towers):
            raise ValueError(
                f"init has towers {sorted(init.towers)}, this training {sorted(towers)}: set shared= as in init"
            )
        for side, model in towers.items():
            model.load_state_dict(init.towers[side].state_dict())
    return towers, start_length


def _prefixes(towers: dict, cfg: SbertConfig, base) -> dict:
    """Each tower's frozen layers, run once per distinct text (``keep_frozen``)."""
    first = next(iter(towers.values()))
    layers, length = cfg.freeze_layers, cfg.max_seq_length
    key = frozen_key(first, layers, base=base, max_seq_length=length, precision=cfg.precision)
    return {
        side: FrozenPrefix(model, layers, key=key, transformer=_transformer(model, base), precision=cfg.precision)
        for side, model in towers.items()
    }


def _start_validation(start_scores, data, cfg: SbertConfig, init):
    """Epoch 0's ``validate`` from the zero-shot model's ``start_scores`` of the training rows (see
    :func:`train_sbert`), or None when they do not score this training's start."""
    if start_scores is None or cfg.precision != "fp32" or not (init is None or is_zero_shot(init)):
        return None
    scores = np.asarray(start_scores, dtype=np.float64)
    if scores.shape != (len(data.y),):
        raise ValueError(f"start_scores has {scores.shape} values for {len(data.y)} pairs")
    val = np.flatnonzero(~data.train)
    return lambda: ndcg_per_query(scores[val], data.rel[val], data.q_idx[val], k=10)


def is_zero_shot(encoder) -> bool:
    """Whether ``encoder`` is a fine-tuning that kept its base model unchanged (the training record's
    ``zero_shot``: kept start, no ``init`` other than such a model, fp32): its vectors are the zero-shot model's at
    its own text length, so its scores equal those of ``sbert`` on the same base (to float rounding)."""
    return bool((getattr(encoder, "training", None) or {}).get("zero_shot"))
