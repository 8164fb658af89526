import json

import numpy as np
import pytest
import torch
from click.testing import CliRunner

from ltrfeat.cli.main import cli
from ltrfeat.encoders.encoder import Encoder
from ltrfeat.encoders.model import TwoTowerModel, model_config
from ltrfeat.features.explain import EMPTY, explain, format_explanation
from ltrfeat.encoders.hashing import BagBatch, TrigramHasher

TEXTS = ["cordless drill", "dewalt cordless drill kit with battery", "blue wall paint", "garden hose"]


def tiny_encoder(arch: str) -> Encoder:
    torch.manual_seed(0)
    hasher = TrigramHasher().fit(TEXTS)
    sizes = {"clsm": {"conv": 24, "out": 8}, "dssm": {"hidden": [16], "out": 8}}[arch]
    return Encoder(hasher, TwoTowerModel(model_config(arch, hasher.n_features_, **sizes)))


def brute_force_winners(encoder, text, side):
    """Pooled activation and winning window of every neuron, one window at a time."""
    tower = encoder.model.tower(side)
    words = encoder.hasher.words(text) or [""]
    with torch.inference_mode():
        h = tower.local_features(tower.prepare(encoder.hasher, [text])).numpy()
    assert h.shape == (len(words), tower.conv)
    return h.max(axis=0), h.argmax(axis=0), words


def test_clsm_neurons_are_the_largest_pooled_activations_with_their_winning_words():
    enc = tiny_encoder("clsm")
    query, doc = "cordless drill", "dewalt cordless drill kit with battery"
    ex = explain(enc, query, doc, top=5, shared_top=10)
    assert ex.kind == "clsm" and ex.score == "cosine"
    assert ex.similarity == pytest.approx(float(enc.similarity([query], [doc])[0]), abs=1e-6)
    values, winners, words = brute_force_winners(enc, doc, "doc")
    top = np.argsort(-values)[:5]
    assert [n.neuron for n in ex.doc_top] == top.tolist()
    assert [n.word for n in ex.doc_top] == [words[w] for w in winners[top]]
    np.testing.assert_allclose([n.activation for n in ex.doc_top], values[top], atol=1e-6)
    first = ex.doc_top[0]
    padded = ["<s>", *words, "<s>"]
    assert first.window == " ".join(padded[winners[top[0]] : winners[top[0]] + 3])
    # shared: exactly the neurons in both sides' top 10
    q_values, _, _ = brute_force_winners(enc, query, "query")
    both = set(np.argsort(-q_values)[:10]) & set(np.argsort(-values)[:10])
    assert {q.neuron for q, d in ex.shared} == both and all(q.neuron == d.neuron for q, d in ex.shared)


def test_an_empty_text_has_one_empty_window():
    ex = explain(tiny_encoder("clsm"), "", "garden hose", top=3)
    assert len(ex.query_top) == 3 and {n.word for n in ex.query_top} == {EMPTY}
    assert ex.query_top[0].window == f"<s> {EMPTY} <s>"


def test_dssm_trigram_effects_are_occlusion_drops():
    enc = tiny_encoder("dssm")
    query, doc = "cordless drill", "blue wall paint"
    ex = explain(enc, query, doc, top=3)
    assert ex.kind == "dssm" and not ex.query_top and len(ex.query_trigrams) == 3
    full = float(enc.similarity([query], [doc])[0])
    effect = ex.query_trigrams[0]
    # removing every occurrence of the trigram from the text's bag by hand gives the same drop
    ids = [t for w in enc.hasher.words(query) for t in enc.hasher.word_trigrams(w)]
    gone = enc.hasher.vocabulary_[effect.trigram]
    with torch.inference_mode():
        v = enc.model.tower("query")(BagBatch(ids=np.array([t for t in ids if t != gone]), offsets=np.array([0])))
    d = enc.encode([doc], side="doc")[0]
    cos = float(torch.nn.functional.normalize(v, dim=1).numpy()[0] @ d)
    assert effect.drop == pytest.approx(full - cos, abs=1e-5)
    assert effect.count == ids.count(gone)
    drops = [e.drop for e in ex.query_trigrams]
    assert drops == sorted(drops, reverse=True)


def test_format_mentions_cosine_words_and_shared_neurons():
    enc = tiny_encoder("clsm")
    ex = explain(enc, "cordless drill", "cordless drill")
    text = format_explanation(ex, query="cordless drill", doc="cordless drill")
    assert text.startswith("clsm cosine('cordless drill', 'cordless drill') = ")
    assert "query: top 5 max-pooling neurons" in text and "neurons in both sides' top 10" in text


@pytest.fixture()
def bundles(tmp_path):
    paths = {}
    for arch in ("clsm", "dssm"):
        paths[arch] = tmp_path / f"{arch}.ltrenc"
        tiny_encoder(arch).save(paths[arch])
    return paths


def test_cli_explain_prints_text_and_json(bundles):
    runner = CliRunner()
    res = runner.invoke(cli, ["explain", str(bundles["clsm"]), "cordless drill", "dewalt cordless drill kit"])
    assert res.exit_code == 0, res.output
    assert "clsm cosine" in res.output and "document: top 5" in res.output
    res = runner.invoke(cli, ["explain", str(bundles["dssm"]), "garden hose", "hose", "--json", "--top", "2"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.output)
    assert data["kind"] == "dssm" and len(data["query_trigrams"]) == 2
    assert data["score"] == "cosine" and -1 <= data["similarity"] <= 1


def test_cli_explain_bad_model_is_one_line(tmp_path):
    bad = tmp_path / "bad.ltrenc"
    bad.write_text("hello")
    res = CliRunner().invoke(cli, ["explain", str(bad), "q", "d"])
    assert res.exit_code == 2
    assert res.output.count("\n") == 1 and res.output.startswith("error: ") and "bad.ltrenc" in res.output


def test_explain_help_has_an_example():
    res = CliRunner().invoke(cli, ["explain", "--help"])
    assert res.exit_code == 0 and 'ltrfeat explain clsm.ltrenc "cordless drill"' in res.output
