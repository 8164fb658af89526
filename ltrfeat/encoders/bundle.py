"""The ``.ltrenc`` file: one safetensors file whose metadata carries a JSON header.

Layout: a standard safetensors file (8-byte little-endian header length, JSON header, raw
tensor bytes). Its ``__metadata__`` holds one key, ``"ltrenc"``, whose value is a JSON
object with ``format`` (= ``"ltrenc"``), ``format_version``, ``kind`` (``"encoder"`` or
``"checkpoint"``), ``library_versions`` and the payload (model config, hashing vocabulary,
training record). Reading parses the header with ``json`` and the tensors with
``safetensors.torch.load`` -- nothing is ever unpickled.
"""

from __future__ import annotations

import hashlib
import json
import math
import struct
from pathlib import Path

import safetensors
import safetensors.torch
import torch

from ltrfeat.core import limits
from ltrfeat.core.errors import ModelFileError
from ltrfeat.core.fileio import atomic_output
from ltrfeat.core.versions import library_versions

BUNDLE_FORMAT = "ltrenc"
FORMAT_VERSION = 1
_MAX_HEADER = 100 * 2**20


def _tensor_sha256(t: torch.Tensor) -> str:
    """SHA-256 of a tensor's bytes as safetensors stores them (contiguous, little-endian)."""
    return hashlib.sha256(t.detach().cpu().contiguous().flatten().view(torch.uint8).numpy().tobytes()).hexdigest()


def write_bundle(path, *, kind: str, header: dict, tensors: dict[str, torch.Tensor]) -> None:
    """Write ``tensors`` and the JSON ``header`` to ``path`` atomically.

    The header records the SHA-256 of every tensor (``tensor_sha256``), checked by
    :func:`read_bundle`: a flipped byte in the weights is refused instead of loaded."""
    tensors = {k: v.detach().contiguous() for k, v in tensors.items()}
    full = {
        "format": BUNDLE_FORMAT,
        "format_version": FORMAT_VERSION,
        "kind": kind,
        "library_versions": library_versions("torch", "numpy", "safetensors"),
        **header,
        "tensor_sha256": {k: _tensor_sha256(v) for k, v in sorted(tensors.items())},
    }
    data = safetensors.torch.save(tensors, metadata={BUNDLE_FORMAT: json.dumps(full, sort_keys=True)})
    with atomic_output(path, binary=True) as fh:
        fh.write(data)


def read_bundle(path, *, kind: str) -> tuple[dict, dict[str, torch.Tensor]]:
    """Header and tensors of an ``.ltrenc`` file of the given ``kind``; clear errors otherwise."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ModelFileError(
            f"cannot read encoder file: {exc.strerror}", path=path, fix="check the path given"
        ) from None
    not_bundle = dict(path=path, fix="give a file written by `ltrfeat train-encoder` (.ltrenc)")
    if len(data) < 8:
        raise ModelFileError("not an .ltrenc encoder bundle (file too short)", **not_bundle)
    (n,) = struct.unpack("<Q", data[:8])
    if n > min(len(data) - 8, _MAX_HEADER):
        raise ModelFileError("not an .ltrenc encoder bundle (no safetensors header)", **not_bundle)
    try:
        st_header = json.loads(data[8 : 8 + n].decode("utf-8"))
        meta = st_header.get("__metadata__") or {}
        header = json.loads(meta[BUNDLE_FORMAT])
    except (UnicodeDecodeError, ValueError, KeyError, AttributeError, TypeError):
        raise ModelFileError("not an .ltrenc encoder bundle (no ltrenc header)", **not_bundle) from None
    if header.get("format") != BUNDLE_FORMAT or header.get("format_version") != FORMAT_VERSION:
        raise ModelFileError(
            f"unsupported .ltrenc format version {header.get('format_version')!r} (this ltrfeat reads "
            f"version {FORMAT_VERSION})",
            path=path,
            fix="retrain the encoder with this ltrfeat version",
        )
    found = header.get("kind")
    if found != kind:
        if kind == "checkpoint":
            fix = "give the checkpoint file written during training"
        elif found == "checkpoint":
            fix = "give the --out file of train-encoder, not its checkpoint"
        else:
            fix = (
                f"a {found!r} bundle is not a CLSM/DSSM/DeepMatch bundle: load it by its own name "
                f"(e.g. --encoder {found}=FILE); export-encoder takes CLSM/DSSM bundles only"
            )
        raise ModelFileError(f"this .ltrenc file holds a {found!r}, not an {kind!r}", path=path, fix=fix)
    try:
        tensors = safetensors.torch.load(data)
    except Exception as exc:  # safetensors raises its own SafetensorError for any corruption
        raise ModelFileError(
            f"corrupt .ltrenc file: {exc}", path=path, fix="the file is damaged or truncated; copy or retrain it"
        ) from None
    _verify_tensors(header, st_header, data[8 + n :], tensors, path)
    return header, tensors


def _verify_tensors(header: dict, st_header: dict, payload: bytes, tensors: dict, path) -> None:
    """Compare each tensor's bytes with the SHA-256 recorded at write time (bundles written before
    the checksums existed have none and load as before)."""
    expected = header.get("tensor_sha256")
    if expected is None:
        return
    fix = "the weights are damaged or were edited; copy the file again or retrain the encoder"
    if not isinstance(expected, dict) or set(expected) != set(tensors):
        raise ModelFileError("the tensors differ from the ones the bundle lists", path=path, fix=fix)
    for name in sorted(expected):
        start, end = st_header[name]["data_offsets"]
        if hashlib.sha256(payload[start:end]).hexdigest() != expected[name]:
            raise ModelFileError(
                f"tensor {name!r} does not match its SHA-256 (a changed byte in the weights)", path=path, fix=fix
            )


def check_declared(factory, config, tensors: dict, *, path=None, what: str = "encoder") -> int:
    """The number of parameters ``factory(config)`` -- a torch module -- would have, checked before it is built.

    The module is built on the ``meta`` device (shapes, no memory): more parameters than
    ``max_model_params`` (:mod:`ltrfeat.core.limits`), or a parameter whose shape differs from the
    bundle's tensor of that name, is a :class:`ModelFileError` before anything is allocated (a few-MB
    file declaring hidden sizes of 25,000 would otherwise take gigabytes before failing)."""
    fix = "the file is damaged or from an incompatible ltrfeat; retrain it"
    try:
        with torch.device("meta"):
            shapes = {name: tuple(t.shape) for name, t in factory(config).state_dict().items()}
    except (KeyError, TypeError, ValueError, RuntimeError, IndexError, NotImplementedError, AttributeError) as exc:
        problem = " ".join(str(exc).split())[:300]
        raise ModelFileError(f"{what} bundle holds an unusable model config: {problem}", path=path, fix=fix) from None
    n_params = sum(math.prod(shape) for shape in shapes.values())
    check_param_count(n_params, path=path, what=what)
    for name, shape in shapes.items():
        held = tensors.get(name)
        if held is not None and tuple(held.shape) != shape:
            raise ModelFileError(
                f"{what} bundle does not match its model config: tensor {name!r} has shape {list(held.shape)} "
                f"where the config declares {list(shape)}",
                path=path,
                fix=fix,
            )
    return n_params


def check_param_count(n_params: int, *, path=None, what: str = "encoder") -> None:
    """A :class:`ModelFileError` when a model config declares more than ``max_model_params`` parameters."""
    bound = limits.current().max_model_params
    if n_params > bound:
        raise ModelFileError(
            f"the {what}'s model config declares {n_params:,} parameters, more than the limit of {bound:,}",
            path=path,
            fix="check where the file comes from; if it is genuine, raise ltrfeat --max-model-params",
        )


def build_checked(factory, config: dict, tensors: dict, *, path=None, what: str = "encoder"):
    """``factory(config)`` -- a torch module -- built only after :func:`check_declared` passed."""
    check_declared(factory, config, tensors, path=path, what=what)
    return factory(config)
