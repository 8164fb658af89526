"""ONNX encoder export: onnxruntime embeddings equal torch's to 1e-5; damaged exports are refused."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("onnxruntime")
pytest.importorskip("onnx")

from ltrfeat.encoders import Encoder, TwoTowerModel, model_config  # noqa: E402
from ltrfeat.export.onnx import SIDECAR, OnnxEncoder, export_onnx, prepare  # noqa: E402
from ltrfeat.core.errors import LtrfeatError, ModelFileError  # noqa: E402
from ltrfeat.core.fileio import OUTPUT_MARKER, mark_output_dir  # noqa: E402
from ltrfeat.encoders.hashing import TrigramHasher  # noqa: E402

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
    assert sorted(p.name for p in out.iterdir()) == [OUTPUT_MARKER, "doc.onnx", "encoder.json", "query.onnx"]
    (out / OUTPUT_MARKER).unlink()  # an export written before the marker, holding only its own files
    export_onnx(enc, out)
    other = tmp_path / "notes.txt"
    other.write_text("keep me")
    with pytest.raises(LtrfeatError, match="exists and is not a directory"):
        export_onnx(enc, other)
    assert other.read_text() == "keep me"
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no leftover temp directory


def _someone_elses(root, case: str):
    """A directory the export must not replace (it would delete the files in it)."""
    root.mkdir()
    (root / "thesis.tex").write_text("keep me")
    if case == "sidecar name":  # a file merely called encoder.json used to be taken for an export
        (root / SIDECAR).write_text("{}")
    elif case == "export plus a file":  # an export of ours with someone's file put in it
        (root / SIDECAR).write_text(json.dumps({"files": {"query.onnx": "0", "doc.onnx": "0"}}))
    elif case == "another output's marker":  # an ablation report, say
        mark_output_dir(root, kind="report")
    return root


@pytest.mark.parametrize("case", ["plain", "sidecar name", "export plus a file", "another output's marker"])
def test_export_refuses_a_directory_that_is_not_its_own(exports, tmp_path, case):
    from click.testing import CliRunner

    from ltrfeat.cli.main import cli

    enc = exports["dssm"][0]
    out = _someone_elses(tmp_path / "mine", case)
    before = sorted(p.name for p in out.iterdir())
    with pytest.raises(LtrfeatError, match="not an ONNX encoder export ltrfeat wrote"):
        export_onnx(enc, out)
    enc.save(tmp_path / "m.ltrenc")
    result = CliRunner().invoke(cli, ["export-encoder", str(tmp_path / "m.ltrenc"), "--out", str(out)])
    assert result.exit_code == 2 and result.output.startswith("error: ") and result.output.count("\n") <= 2
    assert "not an ONNX encoder export ltrfeat wrote" in result.output and str(out) in result.output
    assert sorted(p.name for p in out.iterdir()) == before and (out / "thesis.tex").read_text() == "keep me"


def test_export_refuses_an_out_that_holds_its_own_model(exports, tmp_path):
    from click.testing import CliRunner

    from ltrfeat.cli.main import cli

    out = tmp_path / "e"
    export_onnx(exports["dssm"][0], out)
    exports["dssm"][0].save(out / "m.ltrenc")  # the bundle put in the export directory: replacing it would delete it
    result = CliRunner().invoke(cli, ["export-encoder", str(out / "m.ltrenc"), "--out", str(out)])
    assert result.exit_code == 2 and "is inside --out" in result.output and (out / "m.ltrenc").is_file()


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


def _external(name: str, size: int):
    """A float32 tensor ``name`` of ``size`` values whose bytes onnxruntime would read from ``.env``."""
    import onnx

    tensor = onnx.TensorProto(name=name, data_type=onnx.TensorProto.FLOAT, dims=[size])
    tensor.data_location = onnx.TensorProto.EXTERNAL
    for key, value in {"location": ".env", "offset": "0", "length": str(4 * size)}.items():
        tensor.external_data.add(key=key, value=value)
    return tensor


def _as_external_initializer(model):
    """The tower's bias (an initializer it uses) moved to external data in ``.env``."""
    bias = next(t for t in model.graph.initializer if t.name == "bias")
    bias.CopyFrom(_external("bias", bias.dims[0]))


def _in_constant(model):
    import onnx

    model.graph.node.insert(0, onnx.helper.make_node("Constant", [], ["leak"], value=_external("leak_value", 24)))


def _in_subgraph(model):
    import onnx

    branch = onnx.helper.make_graph([], "branch", [], [onnx.helper.make_tensor_value_info("leak", 1, [24])])
    branch.initializer.append(_external("leak", 24))
    cond = onnx.helper.make_tensor("cond", onnx.TensorProto.BOOL, [], [True])
    model.graph.initializer.append(cond)
    model.graph.node.append(onnx.helper.make_node("If", ["cond"], ["leaked"], then_branch=branch, else_branch=branch))


def _in_sparse_initializer(model):
    import onnx

    indices = onnx.helper.make_tensor("idx", onnx.TensorProto.INT64, [1], [0])
    model.graph.sparse_initializer.append(onnx.helper.make_sparse_tensor(_external("sparse", 1), indices, [24]))


def _in_function(model):
    import onnx

    body = onnx.helper.make_node("Constant", [], ["out"], value=_external("fn_value", 24))
    model.functions.append(onnx.helper.make_function("local.fn", "Leak", [], ["out"], [body], model.opset_import))


def _contrib_node(model):
    import onnx

    model.graph.node.append(
        onnx.helper.make_node("EPContext", [], ["ctx"], domain="com.microsoft", ep_cache_context="x")
    )


@pytest.mark.parametrize(
    "change, needle",
    [
        (_as_external_initializer, "tensor 'bias' keeps its data in an external file"),
        (_in_constant, "tensor 'leak_value' keeps its data"),
        (_in_subgraph, "tensor 'leak' keeps its data"),
        (_in_sparse_initializer, "tensor 'sparse' keeps its data"),
        (_in_function, "tensor 'fn_value' keeps its data"),
        (_contrib_node, "operator com.microsoft.EPContext"),
    ],
    ids=["initializer", "constant", "subgraph", "sparse", "function", "contrib-op"],
)
def test_an_export_reaching_outside_its_bytes_is_refused(exports, tmp_path, monkeypatch, change, needle):
    """onnxruntime resolves a model-from-bytes' external data in the working directory: a query.onnx whose weights
    are "external data" in .env returned that file's bytes as embeddings. The sidecar's hashes, written by the same
    sender, are updated as a sender would."""
    import hashlib
    import shutil

    import onnx

    out = shutil.copytree(exports["dssm"][2], tmp_path / "export")
    model = onnx.load_model_from_string((out / "query.onnx").read_bytes())
    change(model)
    raw = model.SerializeToString()
    (out / "query.onnx").write_bytes(raw)
    sidecar = json.loads((out / SIDECAR).read_text())
    sidecar["files"]["query.onnx"] = hashlib.sha256(raw).hexdigest()
    (out / SIDECAR).write_text(json.dumps(sidecar))
    monkeypatch.chdir(tmp_path)
    (tmp_path / ".env").write_bytes(b"SECRET_TOKEN=" + b"s3cr3t" * 20)
    with pytest.raises(ModelFileError, match=needle) as info:
        OnnxEncoder.load(out).encode(TEXTS, side="query")
    assert "\n" not in str(info.value) and str(out / "query.onnx") in str(info.value)


def test_an_export_file_linked_from_outside_its_directory_is_refused(exports, tmp_path):
    import shutil

    out = shutil.copytree(exports["dssm"][2], tmp_path / "export")
    (out / "doc.onnx").rename(tmp_path / "elsewhere.onnx")
    (out / "doc.onnx").symlink_to(tmp_path / "elsewhere.onnx")
    with pytest.raises(ModelFileError, match="doc.onnx: is a link to a file outside the export directory"):
        OnnxEncoder.load(out)
