"""The .ltrenc bundle: bit-identical round trip, clear errors for anything else, no pickle."""

from __future__ import annotations

import json
import pickle
import struct

import numpy as np
import pytest
import safetensors.torch
import torch

from ltrfeat.encoders import Encoder
from ltrfeat.encoders.bundle import BUNDLE_FORMAT, read_bundle, write_bundle
from ltrfeat.core.errors import ModelFileError
from builders import TEXTS, tiny_encoder as make


@pytest.mark.parametrize(
    "arch,kw",
    [
        ("dssm", {}),
        ("clsm", {}),
        ("clsm", {"shared": True, "context": 2}),
        ("dssm", {"n_buckets": 64}),
        ("dssm", {"min_count": 2}),
    ],
)
def test_round_trip_gives_bit_identical_embeddings(tmp_path, arch, kw):
    enc = make(arch, **kw)
    path = tmp_path / "m.ltrenc"
    enc.save(path)
    back = Encoder.load(path)
    for side in ("query", "doc"):
        assert np.array_equal(enc.encode(TEXTS, side=side), back.encode(TEXTS, side=side))
    assert back.training == enc.training and back.model.config == enc.model.config


def test_header_records_format_versions_and_vocabulary(tmp_path):
    path = tmp_path / "m.ltrenc"
    make("dssm").save(path)
    header, tensors = read_bundle(path, kind="encoder")
    assert header["format"] == BUNDLE_FORMAT and header["format_version"] == 1 and header["kind"] == "encoder"
    assert {"torch", "numpy", "safetensors", "ltrfeat"} <= set(header["library_versions"])
    assert "#dr" in header["hasher"]["vocabulary"]
    assert all(isinstance(t, torch.Tensor) for t in tensors.values())


def test_non_bundle_files_are_refused(tmp_path):
    cases = {
        "text.ltrenc": b"label qid:1 1:0.5\n",
        "empty.ltrenc": b"",
        "pickle.ltrenc": pickle.dumps({"weights": [1, 2, 3]}),
        "plain.safetensors": safetensors.torch.save({"w": torch.zeros(2)}),
    }
    for name, data in cases.items():
        (tmp_path / name).write_bytes(data)
        with pytest.raises(ModelFileError, match="not an .ltrenc encoder bundle") as err:
            Encoder.load(tmp_path / name)
        assert name in str(err.value) and "\n" not in str(err.value)
    with pytest.raises(ModelFileError, match="cannot read"):
        Encoder.load(tmp_path / "missing.ltrenc")


def test_corrupt_and_truncated_files_are_refused(tmp_path):
    path = tmp_path / "m.ltrenc"
    make("clsm").save(path)
    data = path.read_bytes()
    (tmp_path / "cut.ltrenc").write_bytes(data[: len(data) - 100])
    with pytest.raises(ModelFileError, match="corrupt"):
        Encoder.load(tmp_path / "cut.ltrenc")


def _rewrite_header(path, out, change):
    data = path.read_bytes()
    (n,) = struct.unpack("<Q", data[:8])
    outer = json.loads(data[8 : 8 + n])
    inner = json.loads(outer["__metadata__"][BUNDLE_FORMAT])
    change(inner)
    outer["__metadata__"][BUNDLE_FORMAT] = json.dumps(inner)
    raw = json.dumps(outer).encode()
    raw += b" " * (-len(raw) % 8)
    out.write_bytes(struct.pack("<Q", len(raw)) + raw + data[8 + n :])


def test_wrong_version_kind_or_config_is_refused(tmp_path):
    path = tmp_path / "m.ltrenc"
    make("dssm").save(path)
    _rewrite_header(path, tmp_path / "v9.ltrenc", lambda h: h.update(format_version=9))
    with pytest.raises(ModelFileError, match="format version 9"):
        Encoder.load(tmp_path / "v9.ltrenc")
    _rewrite_header(path, tmp_path / "ckpt.ltrenc", lambda h: h.update(kind="checkpoint"))
    with pytest.raises(ModelFileError, match="checkpoint"):
        Encoder.load(tmp_path / "ckpt.ltrenc")
    _rewrite_header(path, tmp_path / "big.ltrenc", lambda h: h["model"]["tower"].update(out=64))
    with pytest.raises(ModelFileError, match="does not match"):
        Encoder.load(tmp_path / "big.ltrenc")


def test_write_is_atomic(tmp_path):
    path = tmp_path / "m.ltrenc"
    with pytest.raises(TypeError):
        write_bundle(path, kind="encoder", header={"x": object()}, tensors={})
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    "found, wanted, hint",
    [
        ("checkpoint", "encoder", "not its checkpoint"),
        ("encoder", "checkpoint", "checkpoint file written during"),
        ("sbert-ft", "encoder", "--encoder sbert-ft=FILE"),
    ],
)
def test_a_bundle_of_another_kind_says_what_to_do(tmp_path, found, wanted, hint):
    path = tmp_path / "m.ltrenc"
    write_bundle(path, kind=found, header={}, tensors={"w": torch.zeros(1)})
    with pytest.raises(ModelFileError, match=f"holds a '{found}', not an '{wanted}'.*{hint}"):
        read_bundle(path, kind=wanted)
