"""What a received ONNX model may hold, checked before onnxruntime sees it.

An export directory may come from someone else, and its ``encoder.json`` (with the files' SHA-256) was written by
the same sender, so the hashes prove nothing. onnxruntime resolves a tensor's *external data* (its bytes kept in
another file) relative to the process's working directory for a model given as bytes, and some operator domains
(``com.microsoft``'s ``EPContext``) name files too. :func:`checked_model` parses the model with ``onnx``, walks
every message in it (graphs, subgraphs of ``If``/``Loop``/``Scan``, node attributes, sparse tensors, training
graphs) and refuses any tensor with external data, any node outside the standard ``ai.onnx`` domain and any
model-local function (ltrfeat's exports have none of these), then hands onnxruntime the re-serialised model --
exactly what was checked, fields this ``onnx`` does not know dropped.
"""

from __future__ import annotations

from ltrfeat.core.errors import ModelFileError

STANDARD_DOMAINS = frozenset({"", "ai.onnx"})


def _problem(message, onnx) -> str | None:
    """Why one protobuf ``message`` of a model could reach outside the model's bytes, or None."""
    if isinstance(message, onnx.TensorProto) and (
        message.data_location == onnx.TensorProto.EXTERNAL or len(message.external_data)
    ):
        return f"tensor {message.name[:80]!r} keeps its data in an external file"
    if isinstance(message, onnx.NodeProto) and message.domain not in STANDARD_DOMAINS:
        return f"node {message.name[:80]!r} uses operator {message.domain[:80]}.{message.op_type[:80]} (not ai.onnx)"
    return None


def checked_model(raw: bytes, *, path, fix: str) -> bytes:
    """The ONNX model ``raw`` (read from ``path``) re-serialised after the checks of the module docstring; a
    one-line :class:`ModelFileError` naming ``path`` when one fails or ``raw`` is not an ONNX model."""
    import onnx
    from google.protobuf.message import DecodeError, Message

    model = onnx.ModelProto()
    try:
        model.ParseFromString(raw)
    except (DecodeError, RecursionError, ValueError):
        raise ModelFileError("not a valid ONNX model", path=path, fix=fix) from None
    model.DiscardUnknownFields()
    stack: list = [model]
    while stack:
        message = stack.pop()
        problem = _problem(message, onnx)
        if problem:
            raise ModelFileError(f"ONNX {problem}; ltrfeat loads only self-contained models", path=path, fix=fix)
        for field, value in message.ListFields():
            if field.message_type is not None:
                stack.extend([value] if isinstance(value, Message) else value)
    if len(model.functions):
        raise ModelFileError("ONNX model declares local functions; ltrfeat's exports have none", path=path, fix=fix)
    return model.SerializeToString()
