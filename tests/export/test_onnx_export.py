"""ONNX encoder export: onnxruntime embeddings equal torch's to 1e-5; damaged exports are refused."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("onnxruntime")
pytest.importorskip("onnx")

from ltrfeat.features.encoders import Encoder, TwoTowerModel, model_config  # noqa: E402
from ltrfeat.export.onnx import SIDECAR, OnnxEncoder, export_onnx, prepare  # noqa: E402
from ltrfeat.core.errors import LtrfeatError, ModelFileError  # noqa: E402
from ltrfeat.features.hashing import TrigramHasher  # noqa: E402

TRAIN = [
    "cheap flights to london",
    "london hotels near the river",
    "the quick brown fox jumps",
    "Rivière café: naïve crème brûlée",
    "how to fix a flat bicycle tyre",
]
TEXTS = [
    "cheap london hotels",
    "",
    "unseen zzqx words entirely",
    "Don't STOP–believing, 42 times!",
    "a " * 40 + "very long text",
    "fox",
    "ﬁne ligatures and full-width ＡＢＣ",
    "london london london",
]
SIZES = {"dssm": {"hidden": [24, 24], "out": 16}, "clsm": {"conv": 24, "out": 16}}


def _encoder(arch, *, shared=False, buckets=None, context=1, seed=0):
    import torch

    torch.manual_seed(seed)
    hasher = TrigramHasher(n_buckets=buckets).fit(TRAIN)
    sizes = dict(SIZES[arch], **({"context": context} if arch == "clsm" else {}))
    model = TwoTowerModel(model_config(arch, hasher.n_features_, shared=shared, **sizes))
    with torch.no_grad():  # non-zero everywhere, so every input id matters
        for p in model.parameters():
            p.normal_(0, 0.3)
    return Encoder(hasher, model.eval())


@pytest.fixture(scope="module")
def exports(tmp_path_factory):
    root = tmp_path_factory.mktemp("onnx")
    out = {}
    for key, kwargs in {
        "dssm": {},
        "clsm": {},
        "clsm-shared-buckets": {"shared": True, "buckets": 500},
        "clsm-d2": {"context": 2},
        "dssm-buckets": {"buckets": 300},
    }.items():
        arch = key.split("-")[0]
        enc = _encoder(arch, **kwargs)
        export_onnx(enc, root / key)
        out[key] = (enc, OnnxEncoder.load(root / key, threads=1), root / key)
    return out


@pytest.mark.parametrize("key", ["dssm", "clsm", "clsm-shared-buckets", "clsm-d2", "dssm-buckets"])
@pytest.mark.parametrize("side", ["query", "doc"])
def test_onnxruntime_equals_torch(exports, key, side):
    enc, onnx_enc, _ = exports[key]
    np.testing.assert_allclose(onnx_enc.encode(TEXTS, side=side), enc.encode(TEXTS, side=side), atol=1e-5, rtol=0)
    # other batch shapes through the same graph (dynamic axes)
    np.testing.assert_allclose(
        onnx_enc.encode(TEXTS, side=side, batch_size=3), enc.encode(TEXTS, side=side), atol=1e-5, rtol=0
    )


@settings(max_examples=25, deadline=None)
@given(
    st.lists(
        st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=30), min_size=1, max_size=6
    )
)
def test_prepare_matches_torch_on_any_text(exports, texts):
    for key in ("dssm", "clsm"):
        enc, onnx_enc, _ = exports[key]
        np.testing.assert_allclose(onnx_enc.encode(texts, side="doc"), enc.encode(texts, side="doc"), atol=1e-5, rtol=0)


def test_prepare_layout(exports):
    sidecar = json.loads((exports["clsm"][2] / SIDECAR).read_text())
    inputs = prepare(sidecar, ["fox fox", ""])
    assert list(inputs) == ["word_trigrams", "windows", "mask"]
    assert inputs["windows"].shape == (2, 2, 3)
    # fox fox -> [<s> fox fox <s>]; the empty text has one window around the empty word (row 0)
    assert inputs["windows"][0].tolist() == [[1, 2, 2], [2, 2, 1]]
    assert inputs["windows"][1, 0].tolist() == [1, 0, 1]
    assert inputs["mask"].tolist() == [[1, 1], [1, 0]]
    assert (inputs["word_trigrams"][0] == sidecar["pad_id"]).all()
    assert sidecar["hashing"]["vocabulary"] and sidecar["rules"]["unicode"] == "NFKC"
    with pytest.raises(LtrfeatError, match="not a string"):
        prepare(sidecar, ["ok", None])


def test_tampered_or_truncated_onnx_refused(exports, tmp_path):
    enc = exports["dssm"][0]
    out = tmp_path / "e"
    export_onnx(enc, out)
    raw = (out / "doc.onnx").read_bytes()
    (out / "doc.onnx").write_bytes(raw[:-100])
    with pytest.raises(ModelFileError, match="changed or truncated"):
        OnnxEncoder.load(out)
    (out / "doc.onnx").write_bytes(raw[:50] + bytes([raw[50] ^ 1]) + raw[51:])
    with pytest.raises(ModelFileError, match="changed or truncated"):
        OnnxEncoder.load(out)
    (out / SIDECAR).write_text("{not json")
    with pytest.raises(ModelFileError, match="not valid JSON"):
        OnnxEncoder.load(out)
    (out / SIDECAR).unlink()
    with pytest.raises(ModelFileError, match="cannot read"):
        OnnxEncoder.load(out)


def test_export_replaces_an_old_export_but_not_other_files(exports, tmp_path):
    enc = exports["clsm"][0]
    out = tmp_path / "e"
    export_onnx(enc, out)
    export_onnx(enc, out)  # overwriting an earlier export is fine
    assert sorted(p.name for p in out.iterdir()) == ["doc.onnx", "encoder.json", "query.onnx"]
    other = tmp_path / "notes.txt"
    other.write_text("keep me")
    with pytest.raises(LtrfeatError, match="not an ONNX encoder export"):
        export_onnx(enc, other)
    assert other.read_text() == "keep me"
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no leftover temp directory


def test_cli_export_encoder(exports, tmp_path):
    from click.testing import CliRunner

    from ltrfeat.cli.main import cli

    enc = exports["clsm"][0]
    enc.save(tmp_path / "m.ltrenc")
    result = CliRunner().invoke(
        cli, ["export-encoder", str(tmp_path / "m.ltrenc"), "--to", "onnx", "--out", str(tmp_path / "out")]
    )
    assert result.exit_code == 0, result.output
    np.testing.assert_allclose(
        OnnxEncoder.load(tmp_path / "out").encode(TEXTS, side="query"),
        enc.encode(TEXTS, side="query"),
        atol=1e-5,
        rtol=0,
    )
    result = CliRunner().invoke(cli, ["export-encoder", str(tmp_path / "nope.ltrenc"), "--out", str(tmp_path / "o2")])
    assert result.exit_code == 2 and "error:" in result.output
    assert not (tmp_path / "o2").exists()
