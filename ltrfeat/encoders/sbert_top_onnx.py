"""A fine-tuned MiniLM's trained top layers on ONNX Runtime, over the frozen layers' kept states.

An ablation's MiniLM fine-tuning (``sbert-ft``) keeps the states of its frozen lower layers for every text
(:class:`~ltrfeat.encoders.sbert_prefix.FrozenPrefix`), so scoring a fold's rows runs only the trained top
layers, the mean pooling and the normalisation. :class:`OnnxTop` exports exactly that part of one trained encoder
(in memory, TorchScript exporter, opset 17, dynamic text and token axes) and runs it on ONNX Runtime in batches of
texts of similar token counts; the states come from the same store. The vectors equal the torch pass's
(:meth:`FrozenPrefix.forward <ltrfeat.encoders.sbert_prefix.FrozenPrefix.forward>`) to float rounding.
"""

from __future__ import annotations

import io
import warnings
import weakref

import numpy as np

_OPSET = 17


class OnnxTop:
    """The top layers of a :class:`~ltrfeat.encoders.sbert_prefix.FrozenPrefix`'s model, its mean pooling
    and normalisation as an onnxruntime session; inputs ``states`` (texts, tokens, width) float32 and ``mask``
    (texts, tokens) int64, output ``embedding`` (texts, dim)."""

    def __init__(self, prefix, session):
        self.prefix, self.session = prefix, session

    @classmethod
    def export(cls, prefix, *, threads: int) -> OnnxTop:
        """Export ``prefix``'s top layers (:func:`supported`) and open them with graph optimisations, ``threads``
        intra-op threads and sleeping idle threads."""
        import onnxruntime as ort
        import torch
        import torch.nn.functional as F

        layers = list(prefix.layers[prefix.n_frozen :])

        class Top(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.layers = torch.nn.ModuleList(layers)

            def forward(self, states, mask):
                hidden = states
                keys = (1.0 - mask[:, None, None, :].to(hidden.dtype)) * torch.finfo(hidden.dtype).min
                for layer in self.layers:
                    hidden = _padded_layer(layer, hidden, keys)
                weights = mask.unsqueeze(-1).to(hidden.dtype)
                mean = (hidden * weights).sum(1) / weights.sum(1).clamp(min=1e-9)
                return F.normalize(mean, dim=1)

        width = int(prefix.hf.config.hidden_size)
        sample = (torch.zeros(2, 3, width), torch.tensor([[1, 1, 1], [1, 1, 0]]))
        graph = io.BytesIO()
        top = Top().eval()
        with torch.no_grad(), warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the TorchScript exporter's deprecation and tracer warnings
            torch.onnx.export(
                top,
                sample,
                graph,  # type: ignore[arg-type]  # torch writes to a file object as to a path
                input_names=["states", "mask"],
                output_names=["embedding"],
                dynamic_axes={"states": {0: "texts", 1: "tokens"}, "mask": {0: "texts", 1: "tokens"}},
                opset_version=_OPSET,
                dynamo=False,
            )
        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        for pool in ("intra_op", "inter_op"):
            options.add_session_config_entry(f"session.{pool}.allow_spinning", "0")
        return cls(prefix, ort.InferenceSession(graph.getvalue(), options, providers=["CPUExecutionProvider"]))

    def encode(self, texts: list[str], *, batch_size: int = 64) -> np.ndarray:
        """Normalised float32 vectors (n, dim) of distinct ``texts``, in batches of similar token counts."""
        states = [s.numpy() for s in self.prefix.states(texts)]
        order = np.argsort([len(s) for s in states], kind="stable")
        out: np.ndarray | None = None
        for start in range(0, len(texts), batch_size):
            rows = order[start : start + batch_size]
            longest = max(len(states[i]) for i in rows)
            padded = np.zeros((len(rows), longest, states[rows[0]].shape[1]), dtype=np.float32)
            mask = np.zeros((len(rows), longest), dtype=np.int64)
            for j, i in enumerate(rows):
                padded[j, : len(states[i])] = states[i]
                mask[j, : len(states[i])] = 1
            (vectors,) = self.session.run(["embedding"], {"states": padded, "mask": mask})
            if out is None:
                out = np.empty((len(texts), vectors.shape[1]), dtype=np.float32)
            out[rows] = vectors
        return np.zeros((0, 0), dtype=np.float32) if out is None else out


def _padded_layer(layer, hidden, keys):
    """One BERT layer (a transformers ``BertLayer``) in eval mode on a padded (texts, tokens, width) batch with the
    additive key mask ``keys`` (texts, 1, 1, tokens): the arithmetic of the layer's own forward, in operators the
    TorchScript exporter writes as plain ONNX."""
    import torch

    attention, heads = layer.attention, layer.attention.self
    n_texts, tokens = hidden.shape[0], hidden.shape[1]
    n_heads, size = heads.num_attention_heads, heads.attention_head_size

    def split(t):
        return t.view(n_texts, tokens, n_heads, size).transpose(1, 2)

    scores = split(heads.query(hidden)) @ split(heads.key(hidden)).transpose(-1, -2) * heads.scaling + keys
    context = (torch.softmax(scores, dim=-1) @ split(heads.value(hidden))).transpose(1, 2)
    context = context.reshape(n_texts, tokens, n_heads * size)
    out = attention.output
    hidden = out.LayerNorm(out.dense(context) + hidden)
    out = layer.output
    return out.LayerNorm(out.dense(layer.intermediate(hidden)) + hidden)


def top_supported(prefix) -> bool:
    """Whether ``prefix``'s model ends in mean pooling and a normalisation and runs in fp32 (what :class:`OnnxTop`
    exports)."""
    from ltrfeat.encoders import sbert_onnx

    modules = list(prefix.model)
    return (
        prefix.precision == "fp32"
        and sbert_onnx.supported(prefix.model)
        and len(modules) == 3
        and type(modules[2]).__name__ == "Normalize"
    )


_RUNNERS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # FrozenPrefix -> OnnxTop


def onnx_top(prefix) -> "OnnxTop | None":
    """The ONNX Runtime runner of ``prefix``'s model's top layers over its kept states when the process's MiniLM
    engine (:mod:`~ltrfeat.encoders.sbert_onnx`) is ``onnx``, or ``auto`` with onnxruntime installed, and
    the model is :func:`top_supported` (exported at the first call, at torch's thread count), else None: torch runs
    them. Call it once the layers are trained: the export holds the weights they have then."""
    import torch

    from ltrfeat.encoders import sbert_onnx

    if sbert_onnx.chosen() == "torch" or not sbert_onnx.available() or not top_supported(prefix):
        return None
    runner = _RUNNERS.get(prefix)
    if runner is None:
        runner = _RUNNERS[prefix] = OnnxTop.export(prefix, threads=torch.get_num_threads())
    return runner
