"""MiniLM's zero-shot forward pass on ONNX Runtime: the same vectors as the torch pass, for less CPU.

An ablation runs the packaged all-MiniLM-L6-v2 (or another ``sbert=DIR``) over every distinct query and document
text: for the zero-shot ``sbert`` column, the ``+teacher`` vectors and, in the same pass, the frozen-layer states
of ``sbert-ft`` (:mod:`ltrfeat.encoders.sbert_shared`). With onnxruntime importable (the ``serve``
extra) those passes run the model's transformer, its mean pooling and the normalisation as one ONNX graph
(exported from the loaded torch model once per model and process, in memory -- nothing written), with graph
optimisations on, the thread count torch has, and batches of texts of similar token counts. The graph's extra
outputs are the hidden states after each layer, so the shared pass reads the frozen layers' states from the same
run. Vectors and states equal the torch pass's to float rounding (tests/encoders/test_sbert_onnx.py: 1e-5).

The engine is a process-wide choice, :data:`MINILM_ENGINES`: ``auto`` (the default) is ``onnx`` when onnxruntime is
importable and the model is a transformer followed by mean pooling (and optionally a normalisation), ``torch``
otherwise; ``torch`` forces the sentence-transformers pass (``ablate --encoder-option sbert.engine=torch``).
An ablation's fine-tuned MiniLM scores its folds' rows on the same engine
(:mod:`~ltrfeat.encoders.sbert_top_onnx`). Inference elsewhere -- ``extract``, ``serve``, fine-tuned models
outside an ablation -- stays on torch.
"""

from __future__ import annotations

import contextlib
import io
import threading
import warnings
import weakref

import numpy as np

from ltrfeat.core.errors import LtrfeatError
from ltrfeat.encoders.encoder import distinct

MINILM_ENGINES = ("auto", "onnx", "torch")
_CHOICE = ["auto"]
_RUNNERS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # SentenceTransformer -> {threads: runner}
_LOCK = threading.Lock()
_OPSET = 17


def available() -> bool:
    """Whether onnxruntime can be imported."""
    try:
        import onnxruntime  # noqa: F401
    except ImportError:
        return False
    return True


def check_engine(choice: str) -> str:
    """``choice`` if it is one of :data:`MINILM_ENGINES`, else a one-line error."""
    if choice not in MINILM_ENGINES:
        raise LtrfeatError(f"unknown MiniLM engine {choice!r}", fix=f"use one of {', '.join(MINILM_ENGINES)}")
    return choice


def chosen() -> str:
    """The process's engine choice (one of :data:`MINILM_ENGINES`)."""
    return _CHOICE[0]


@contextlib.contextmanager
def engine(choice: str):
    """MiniLM zero-shot passes inside the block use engine ``choice`` (see the module docstring)."""
    check_engine(choice)
    if choice == "onnx" and not available():
        raise LtrfeatError(
            "the onnx MiniLM engine needs onnxruntime, which is not installed",
            fix="pip install 'ltrfeat[serve]', or use sbert.engine=auto",
        )
    before = _CHOICE[0]
    _CHOICE[0] = choice
    try:
        yield
    finally:
        _CHOICE[0] = before


def supported(model) -> bool:
    """Whether the sentence-transformer ``model`` is a transformer, mean pooling and at most a normalisation."""
    modules = list(model)
    if len(modules) < 2 or not hasattr(modules[0], "auto_model") or type(modules[1]).__name__ != "Pooling":
        return False
    pooling = modules[1]
    mode = getattr(pooling, "pooling_mode", None)  # sentence-transformers 6; before: get_pooling_mode_str()
    if mode is None and hasattr(pooling, "get_pooling_mode_str"):
        mode = pooling.get_pooling_mode_str()
    return mode == "mean" and all(type(m).__name__ == "Normalize" for m in modules[2:])


def runner(model) -> OnnxMiniLM | None:
    """The ONNX runner of the sentence-transformer ``model`` at torch's current thread count when the engine
    resolves to ``onnx`` for it (made at the first call), else None (run it with torch)."""
    import torch

    choice = chosen()
    if choice == "torch" or (choice == "auto" and not available()) or not supported(model):
        return None
    threads = torch.get_num_threads()
    with _LOCK:
        made = _RUNNERS.setdefault(model, {})
        if threads not in made:
            made[threads] = OnnxMiniLM.export(model, threads=threads)
        return made[threads]


def vectors(encoder, texts: list[str], *, side: str) -> np.ndarray:
    """``encoder.encode(texts, side=side)``, but through ONNX Runtime when ``encoder`` is an
    :class:`~ltrfeat.encoders.sbert.SbertEncoder` whose model :func:`runner` runs."""
    from ltrfeat.encoders.sbert import SbertEncoder

    onnx = runner(encoder.model) if isinstance(encoder, SbertEncoder) else None
    return encoder.encode(texts, side=side) if onnx is None else onnx.encode(texts)


def buckets(model, texts: list[str], size: int) -> list[list[str]]:
    """``texts`` in batches of ``size`` texts of similar token counts (longest first)."""
    if not texts:
        return []
    counts = [len(ids) for ids in model.tokenizer(texts, truncation=True, max_length=model.max_seq_length)["input_ids"]]
    order = np.argsort(-np.asarray(counts), kind="stable")
    return [[texts[i] for i in order[start : start + size]] for start in range(0, len(texts), size)]


class OnnxMiniLM:
    """A sentence-transformer's transformer + mean pooling + L2 normalisation as an onnxruntime session.

    Parameters
    ----------
    model : the sentence-transformer it was exported from (it tokenises).
    session : the ``onnxruntime.InferenceSession``; outputs ``embedding`` (texts, dim) and ``hidden_K`` (texts,
        tokens, width), the states after the embeddings (K = 0) and after each layer K.
    """

    def __init__(self, model, session):
        self.model = model
        self.session = session
        self.inputs = [i.name for i in session.get_inputs()]
        self.dim = int(model[0].auto_model.config.hidden_size)

    @classmethod
    def export(cls, model, *, threads: int, spin: bool = False) -> OnnxMiniLM:
        """Export ``model`` (:func:`supported`) in memory and open it with graph optimisations and ``threads``
        intra-op threads. ``spin``: idle worker threads busy-wait for the next operator (ONNX Runtime's default);
        off, they sleep and leave the core to other processes."""
        import onnxruntime as ort
        import torch
        import torch.nn.functional as F

        hf = model[0].auto_model
        names = list(model.preprocess(["a tiny example", "another somewhat longer example"]))
        names = [n for n in ("input_ids", "attention_mask", "token_type_ids") if n in names]
        layers = hf.config.num_hidden_layers
        outputs = ["embedding", *(f"hidden_{k}" for k in range(layers + 1))]

        class Graph(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.hf = hf

            def forward(self, *inputs):
                out = self.hf(**dict(zip(names, inputs)), output_hidden_states=True)
                mask = inputs[names.index("attention_mask")].unsqueeze(-1).to(out.last_hidden_state.dtype)
                mean = (out.last_hidden_state * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
                return (F.normalize(mean, dim=1), *out.hidden_states)

        sample = model.preprocess(["a tiny example", "another somewhat longer example"])  # padded: the mask is traced
        axes = {n: {0: "texts", 1: "tokens"} for n in [*names, *outputs[1:]]} | {"embedding": {0: "texts"}}
        graph = io.BytesIO()
        was_training = hf.training
        hf.eval()
        try:
            with torch.no_grad(), warnings.catch_warnings():
                warnings.simplefilter("ignore")  # the TorchScript exporter's deprecation and tracer warnings
                torch.onnx.export(
                    Graph(),
                    tuple(sample[n] for n in names),
                    graph,  # type: ignore[arg-type]  # torch writes to a file object as to a path
                    input_names=names,
                    output_names=outputs,
                    dynamic_axes=axes,
                    opset_version=_OPSET,
                    dynamo=False,
                )
        finally:
            hf.train(was_training)
        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        for pool in ("intra_op", "inter_op"):
            options.add_session_config_entry(f"session.{pool}.allow_spinning", "1" if spin else "0")
        session = ort.InferenceSession(graph.getvalue(), options, providers=["CPUExecutionProvider"])
        return cls(model, session)

    def run(self, texts: list[str], *, layer: int | None = None) -> tuple[np.ndarray, list[np.ndarray] | None]:
        """One batch: the normalised vectors of ``texts`` (texts, dim) float32 and, with a ``layer``, each text's
        states after that many layers (its real tokens only, (tokens, width) float32), tokenised as the model
        tokenises (its ``max_seq_length``)."""
        features = self.model.preprocess(texts)
        feed = {n: features[n].numpy().astype(np.int64) for n in self.inputs}
        wanted = ["embedding"] if layer is None else ["embedding", f"hidden_{layer}"]
        got = self.session.run(wanted, feed)
        if layer is None:
            return got[0], None
        lengths = feed["attention_mask"].sum(1)
        return got[0], [got[1][i, :n] for i, n in enumerate(lengths)]

    def encode(self, texts: list[str], *, batch_size: int = 64) -> np.ndarray:
        """Normalised float32 vectors (n, dim) of ``texts``, each distinct text once, in batches of similar
        token counts."""
        uniq, inverse = distinct(texts)
        if not uniq:
            return np.zeros((0, self.dim), dtype=np.float32)
        vectors: dict[str, np.ndarray] = {}
        for batch in buckets(self.model, uniq, batch_size):
            vectors.update(zip(batch, self.run(batch)[0]))
        return np.stack([vectors[t] for t in uniq])[inverse]
