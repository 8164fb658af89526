"""docs/new-encoder.md runs as written: a toy kind registered by one module goes through train-encoder, the
cross-fitted ablate, extract, the scorer behind ``serve --encoder`` and export-encoder's refusal."""

from __future__ import annotations

import importlib
import json
import re
import shlex
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from ltrfeat.cli.main import cli
from ltrfeat.core.errors import LtrfeatError
from ltrfeat.experiments.crossfit_traits import CrossFitTraits, traits
from ltrfeat.encoders.registry import EncoderKind, encoder_kind, encoder_kinds, unregister_encoder

ROOT = Path(__file__).resolve().parents[2]
PAGE = (ROOT / "docs" / "new-encoder.md").read_text(encoding="utf-8")


def blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", PAGE, flags=re.S)


@pytest.fixture(scope="module")
def trigrams(tmp_path_factory):
    """The page's module, written out and imported (its last statement registers the kind)."""
    module_dir = tmp_path_factory.mktemp("plugin")
    module = next(b for b in blocks("python") if b.startswith("# trigram_average.py"))
    (module_dir / "trigram_average.py").write_text(module, encoding="utf-8")
    sys.path.insert(0, str(module_dir))
    try:
        yield importlib.import_module("trigram_average")
    finally:
        sys.path.remove(str(module_dir))
        sys.modules.pop("trigram_average", None)
        unregister_encoder("trigrams")


def commands() -> list[list[str]]:
    block = next(b for b in blocks("bash") if "ltrfeat ablate" in b)
    return [shlex.split(line)[1:] for line in block.splitlines() if line.startswith("ltrfeat ")]


def test_the_module_is_one_registration(trigrams):
    kind = encoder_kind("trigrams")
    assert isinstance(kind, EncoderKind) and kind is trigrams.KIND and kind.trainable and not traits(kind).pooled
    assert traits(kind) == CrossFitTraits() and "ltrfeat.experiments" not in Path(trigrams.__file__).read_text()
    assert kind.grammar == "trigrams" and kind.column_suffix(None) == "cos"
    assert list(encoder_kinds())[:5] == ["clsm", "dssm", "deepmatch", "sbert", "sbert-ft"]
    with pytest.raises(ValueError, match="registered already"):
        trigrams.register_encoder(EncoderKind(name="trigrams", summary="again", load=trigrams.TrigramAverage.load))


def test_the_page_commands_ablate_train_and_extract(trigrams, scratch):
    ablate, train, extract = commands()
    res = CliRunner().invoke(cli, ablate)
    assert res.exit_code == 0, res.output
    report = json.loads((scratch / "out/trigrams/report.json").read_text())
    assert report["config"]["cross_fitting"]["trainings_per_encoder"] == 6
    assert {"lexical+trigrams", "trigrams_doc_cos"} <= {r["feature_set"] for r in report["results"]}
    assert report["stage_seconds"]["encoders"]["trigrams"]["trainings"] == 6

    res = CliRunner().invoke(cli, train)
    assert res.exit_code == 0, res.output
    assert res.stdout.strip().splitlines()[-1] == "wrote out/trigrams.ltrenc"  # text, as the page shows
    res = CliRunner().invoke(cli, [*train, "--json"])
    assert res.exit_code == 0, res.output
    summary = json.loads(res.stdout.strip().splitlines()[-1])
    assert summary["best_epoch"] == 0 and 0 < summary["val_ndcg@10"] <= 1
    encoder = trigrams.TrigramAverage.load(scratch / "out/trigrams.ltrenc")
    assert encoder.training["params"]["dim"] == 256

    res = CliRunner().invoke(cli, extract)
    assert res.exit_code == 0, res.output
    from ltrfeat.core.letor import read_letor

    data = read_letor(scratch / "out/judged.letor")
    assert data.feature_map.names[-1] == "trigrams_doc_cos"
    pairs = pd.read_csv(scratch / "data/judged.tsv", sep="\t")
    expected = encoder.similarity(pairs["query"].tolist(), pairs["doc"].tolist())
    np.testing.assert_allclose(np.sort(data.X[:, -1]), np.sort(expected), atol=1e-6)


def test_the_scorer_behind_serve_computes_the_trigram_column(trigrams, tmp_path):
    from builders import build_world, candidates_of
    from ltrfeat.features.neural import EncoderExtractor
    from ltrfeat.rankers.lambdamart import LambdaMART
    from ltrfeat.serving.scorer import Scorer

    world = build_world(tmp_path, encoder=False)
    pairs = pd.DataFrame({"query": world["queries"].set_index("qid").loc[world["data"].qid, "query"].to_numpy()})
    pairs["title"] = world["docs"].set_index("docid").loc[world["data"].docid, "title"].to_numpy()
    table = pairs.rename(columns={"title": "doc"}).assign(label=world["data"].label, qid=world["data"].qid)
    encoder, _ = trigrams.train_trigrams(table, dim=64)
    encoder.save(tmp_path / "trigrams.ltrenc")
    column = EncoderExtractor(name="trigrams", path=tmp_path / "trigrams.ltrenc", field="title").fit().transform(pairs)
    data = world["data"].with_columns(["trigrams_title_cos"], column, source="neural")
    LambdaMART(n_estimators=20, num_leaves=7, early_stopping_rounds=None, n_jobs=1).fit(data).save(tmp_path / "r.txt")
    scorer = Scorer.load(
        tmp_path / "r.txt", encoders={"trigrams": tmp_path / "trigrams.ltrenc"}, corpus_stats=world["corpus"]
    )
    qtext = dict(zip(world["queries"].qid, world["queries"]["query"]))
    for qid in list(qtext)[:3]:
        rows, cands = candidates_of({**world, "data": data}, qid)
        np.testing.assert_allclose(scorer.features(qtext[qid], cands), data.X[rows], atol=1e-5)


def test_export_encoder_refuses_the_kind_in_one_line(trigrams, tmp_path):
    encoder, _ = trigrams.train_trigrams(
        pd.DataFrame({"query": ["a b", "c d"] * 5, "doc": ["a b c", "x y"] * 5, "label": [1, 0] * 5}), val_fraction=0
    )
    encoder.save(tmp_path / "t.ltrenc")
    res = CliRunner().invoke(cli, ["export-encoder", str(tmp_path / "t.ltrenc"), "--out", str(tmp_path / "onnx")])
    assert res.exit_code == 2 and "a trigrams encoder cannot be exported to onnx" in res.output
    assert "takes clsm, dssm bundles" in res.output and not (tmp_path / "onnx").exists()
    with pytest.raises(LtrfeatError, match="holds a trigrams encoder, not clsm"):
        from ltrfeat.features.neural import load_encoder

        load_encoder("clsm", tmp_path / "t.ltrenc")


def test_the_cross_fitting_refuses_a_trait_it_does_not_read():
    kind = EncoderKind(
        name="typo", summary="a kind with a misspelt trait", load=lambda path: None, crossfit={"poled": 1}
    )
    with pytest.raises(LtrfeatError, match="crossfit names 'poled', which the cross-fitting does not read"):
        traits(kind)
    assert (
        traits(encoder_kind("sbert-ft")).training_cost(10, None) == 60.0
        and traits(encoder_kind("sbert")).teacher_scorer
    )
