"""ES/OpenSearch LTR export with every feature: template shapes, index body, bulk vectors, /embed, feature
logging, and parity of a local re-implementation of the engine's scoring with ltrfeat's own features on
the committed demo data (no cluster here)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from ltrfeat.features.extract import extract_ranking, lexical_extractors
from ltrfeat.core.letor import read_letor
from ltrfeat.features.neural import EncoderExtractor
from ltrfeat.features.lexical import lucene_length
from ltrfeat.core.text import read_docs, read_queries
from ltrfeat.export import plugin_features as pf

FIELDS = ["title", "description"]


def _random_encoder(path, texts, *, seed=0):
    """A small CLSM with random weights: parity does not need a trained encoder, only its vectors."""
    import torch

    from ltrfeat.encoders import Encoder, TwoTowerModel, model_config
    from ltrfeat.encoders.hashing import TrigramHasher

    torch.manual_seed(seed)
    hasher = TrigramHasher().fit(texts)
    model = TwoTowerModel(model_config("clsm", hasher.n_features_, conv=32, out=16))
    with torch.no_grad():
        for p in model.parameters():
            p.normal_(0, 0.3)
    Encoder(hasher, model.eval()).save(path)
    return path


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    """Every lexical feature and a CLSM cosine on two fields for the demo test split (first 24 queries)."""
    root = tmp_path_factory.mktemp("plugin")
    queries, docs = read_queries("data/queries.tsv"), read_docs("data/docs.tsv", fields=FIELDS)
    data = read_letor("data/test.letor")
    data = data.subset_queries(list(dict.fromkeys(data.qid))[:24])
    enc_path = _random_encoder(root / "clsm.ltrenc", list(docs.title) + list(queries["query"]))
    lexical = lexical_extractors(["all"], fields=FIELDS)
    neural = EncoderExtractor(name="clsm", path=str(enc_path), field=tuple(FIELDS))
    out = extract_ranking(data, [*lexical, neural], queries=queries, docs=docs)
    return {
        "root": root,
        "queries": queries,
        "docs": docs,
        "data": out,
        "lexical": lexical[0],
        "neural": neural,
        "encoder": enc_path,
    }


def _engine_features(demo, target, *, vectors=None):
    names = demo["data"].feature_map.names
    plan = pf.plugin_featureset(names, target=target, dims={"clsm": 16})
    index = pf.index_body(plan["fields"], target=target, vectors=plan["vectors"])
    enc = demo["neural"].encoder_
    if vectors is None:
        vectors = {
            pf.vector_field("clsm", f): dict(zip(demo["docs"].docid, enc.encode(list(demo["docs"][f]), side="doc")))
            for f in FIELDS
        }
    sim = pf.EngineSimulator(demo["docs"], index, vectors=vectors)
    qtext = dict(zip(demo["queries"].qid, demo["queries"]["query"]))
    data, rows = demo["data"], []
    for qid in dict.fromkeys(data.qid):
        rows_q = data.qid == qid
        params = pf.query_params(
            qtext[qid], names, lexical=demo["lexical"], vectors={"clsm": enc.encode([qtext[qid]], side="query")[0]}
        )
        json.dumps(params)  # what /embed sends must be plain JSON
        rows.append(
            pf.normalize(sim.features(plan["features"], params, data.docid[rows_q]), names, plan["normalizers"])
        )
    return plan, np.vstack(rows)


@pytest.mark.parametrize("target", ["es-ltr", "opensearch-ltr"])
def test_engine_reproduces_every_templated_feature_on_the_demo_data(demo, target):
    plan, engine = _engine_features(demo, target)
    names, ours = demo["data"].feature_map.names, demo["data"].X
    assert set(plan["not_reproduced"]) == {n for n in names if n.split("_")[0] in ("tfidf", "norm", "lm", "trigram")}
    for j, name in enumerate(names):
        if name in plan["not_reproduced"]:
            assert np.isnan(engine[:, j]).all()
        elif name.startswith("clsm_"):
            # the engine scores 1 + cosine in float32; the normalizer takes the 1 off: float32 rounding at 1
            assert np.abs(engine[:, j] - ours[:, j]).max() <= 2.5e-7, name
        else:
            np.testing.assert_allclose(engine[:, j], ours[:, j], rtol=2e-6, atol=1e-6, err_msg=name)


def test_template_shapes_follow_the_plugin_docs(demo):
    names = demo["data"].feature_map.names
    es = {e["name"]: e for e in pf.plugin_featureset(names, target="es-ltr", dims={"clsm": 16})["features"]}
    os_ = {e["name"]: e for e in pf.plugin_featureset(names, target="opensearch-ltr", dims={"clsm": 16})["features"]}
    for entries in (es, os_):
        for e in entries.values():
            assert set(e) == {"name", "params", "template_language", "template"}
            assert e["template_language"] == "mustache" and isinstance(e["params"], list)
    assert es["bm25_title"]["template"] == {"match": {"title": "{{keywords}}"}}
    assert es["tf_max_description"]["template"] == {
        "match_explorer": {"type": "max_raw_tf", "query": {"match": {"description": "{{keywords}}"}}}
    }
    # a vector cannot be a quoted mustache value: the template is a string with an inline toJson section
    vec = [0.5, -0.25]
    es_q = pf._render(es["clsm_title_cos"]["template"], {"clsm_query_vector": vec})
    assert es["clsm_title_cos"]["params"] == ["clsm_query_vector"]
    # documents without a vector are guarded (the vector functions throw on them) and score as cosine 0
    assert es_q["script_score"]["script"] == {
        "source": "doc['clsm_title_vector'].size() == 0 ? params.missing : "
        "cosineSimilarity(params.query_vector, 'clsm_title_vector') + params.offset",
        "params": {"offset": 1.0, "missing": 1.0, "query_vector": vec},
    }
    os_q = pf._render(os_["clsm_title_cos"]["template"], {"clsm_query_vector": vec})
    assert (
        os_q["script_score"]["script"]["source"] == "doc[params.field].size() == 0 ? params.missing : "
        "params.offset + cosineSimilarity(params.query_value, doc[params.field])"
    )
    assert os_q["script_score"]["script"]["params"] == {
        "field": "clsm_title_vector",
        "offset": 1.0,
        "missing": 1.0,
        "query_value": vec,
    }
    assert pf._render(es["query_len"]["template"], {"query_len": 3.0}) == {
        "constant_score": {"filter": {"match_all": {}}, "boost": 3.0}
    }
    # dot scores: Elasticsearch's dotProduct plus the width; OpenSearch has none
    dot = pf.plugin_featureset(["dssm_title_dot"], target="es-ltr", dims={"dssm": 8})
    assert (
        "dotProduct" in dot["features"][0]["template"] and dot["normalizers"]["dssm_title_dot"]["standard"]["mean"] == 8
    )
    assert "dssm_title_dot" in pf.plugin_featureset(["dssm_title_dot"], target="opensearch-ltr")["not_reproduced"]
    filled = pf.plugin_featureset(["lm_jm_title", "mystery"], fill_zero=True)
    assert [e["template"] for e in filled["features"]] == [{"match_none": {}}, {"match_none": {}}]


def test_tf_and_coverage_templates_count_repeated_and_missing_query_terms_as_ltrfeat():
    """Repeated query terms (Lucene merges them into one clause boosted by the repeats) and documents missing
    a query term (the plugin's match_explorer statistics cover only the terms a document holds)."""
    import pandas as pd

    from ltrfeat.features.lexical import LexicalExtractor

    docs = pd.DataFrame(
        {"docid": ["a", "b", "c", "d"], "title": ["red hose red", "red garden hose", "blue pipe", "hose hose"]}
    )
    queries = ["red red hose", "hose hose hose", "red pipe", "garden hose red red red", "nothing here"]
    pairs = pd.DataFrame([(q, *d) for q in queries for d in docs.itertuples(index=False)], columns=["query", *docs])
    lexical = LexicalExtractor(features=("tf", "coverage"), fields=("title",)).fit(docs)
    names = lexical.feature_names()
    ours = lexical.transform(pairs)
    plan = pf.plugin_featureset(names)
    engine = pf.EngineSimulator(docs, pf.index_body(["title"]))
    theirs = np.vstack(
        [engine.features(plan["features"], pf.query_params(q, names, lexical=lexical), docs["docid"]) for q in queries]
    )
    np.testing.assert_allclose(theirs, ours, rtol=1e-6, atol=1e-6)
    # the plugin's own min/mean over the matched terms (no filter, no token count) would differ here
    explorer = {"match_explorer": {"type": "min_raw_tf", "query": {"match": {"title": "red pipe"}}}}
    assert engine._score(explorer, "a") == 2.0 and ours[queries.index("red pipe") * 4, names.index("tf_min_title")] == 0


def test_index_body_mappings():
    es = pf.index_body(["title"], target="es-ltr", vectors={"clsm_title_vector": ("clsm", 16)}, k1=0.9, b=0.4)
    props = es["mappings"]["properties"]
    assert props["clsm_title_vector"] == {"type": "dense_vector", "dims": 16, "index": False}
    assert props["title"]["similarity"] == "ltrfeat_bm25"
    assert es["settings"]["similarity"]["ltrfeat_bm25"] == {"type": "BM25", "k1": 0.9, "b": 0.4}
    assert set(props["title"]["fields"]) == {"length", "terms", "tf", "bigrams"}
    assert props["title"]["fields"]["tf"]["similarity"] == "ltrfeat_tf"
    assert es["settings"]["similarity"]["ltrfeat_tf"] == {
        "type": "scripted",
        "script": {"source": "return query.boost * doc.freq;"},
    }
    os_ = pf.index_body(["title"], target="opensearch-ltr", vectors={"clsm_title_vector": ("clsm", 16)})
    assert os_["mappings"]["properties"]["clsm_title_vector"] == {"type": "knn_vector", "dimension": 16}
    from ltrfeat.core.analysis import Analyzer

    stemmed = pf.index_body(["title"], analyzer=Analyzer(stopwords="english", stemmer="english"))
    assert stemmed["settings"]["analysis"]["analyzer"]["ltrfeat"]["filter"] == [
        "lowercase",
        "ltrfeat_stop",
        "ltrfeat_stem",
    ]


def test_lucene_length_norm():
    assert [lucene_length(n) for n in (0, 23, 24, 39, 40, 41, 42, 100)] == [0, 23, 24, 39, 40, 40, 42, 96]


def test_export_embed_and_logging_round_trip(demo, tmp_path):
    """export-ranker writes the featureset, index body and normalizers; embed writes the vectors the engine
    indexes; a logging response parsed back equals the features ltrfeat computed."""
    from click.testing import CliRunner

    from ltrfeat.cli.main import cli
    from ltrfeat.export.ltr_plugin import featureset_path, index_path, load_export
    from ltrfeat.rankers.lambdamart import LambdaMART

    data = demo["data"]
    model = LambdaMART(n_estimators=10, num_leaves=8, early_stopping_rounds=None, n_jobs=1).fit(data)
    model.save(tmp_path / "r.txt")
    runner = CliRunner()
    args = [
        "export-ranker",
        str(tmp_path / "r.txt"),
        "--to",
        "es-ltr",
        "--out",
        str(tmp_path / "m.json"),
        "--featureset",
        "demo",
        "--encoder",
        f"clsm={demo['encoder']}",
        "--fill-zero",
    ]
    # 12 of the 41 features (tfidf, norm_tf, the LM scores, trigram_cos) have no engine query: refused, with
    # their share of the model's gain, unless the user accepts it
    result = runner.invoke(cli, args)
    shares = model.feature_importance_
    missing = [n for n in shares if n.split("_")[0] in ("tfidf", "norm", "lm", "trigram")]
    share = 100 * sum(shares[n] for n in missing) / sum(shares.values())
    assert result.exit_code == 2 and not (tmp_path / "m.json").exists()
    assert f"cannot compute 12 of the model's 41 features, carrying {share:.1f}% of its gain" in result.output
    assert "--allow-missing-features" in result.output
    result = runner.invoke(cli, [*args, "--allow-missing-features"])
    assert result.exit_code == 0, result.output
    assert "warning: the engine cannot compute lm_jm_title" in result.output
    fs = json.loads(featureset_path(tmp_path / "m.json").read_text())["featureset"]["features"]
    index = json.loads(index_path(tmp_path / "m.json").read_text())
    assert index["mappings"]["properties"]["clsm_description_vector"]["dims"] == 16
    result = runner.invoke(
        cli,
        [
            "embed",
            "--docs",
            "data/docs.tsv",
            "--encoder",
            f"clsm={demo['encoder']}",
            "--fields",
            "title,description",
            "--index",
            "products",
            "--out",
            str(tmp_path / "b.ndjson"),
        ],
    )
    assert result.exit_code == 0, result.output
    lines = (tmp_path / "b.ndjson").read_text().splitlines()
    vectors = {}
    for action, source in zip(lines[::2], lines[1::2]):
        docid = json.loads(action)["index"]["_id"]
        for key, value in json.loads(source).items():
            if key.endswith("_vector"):
                vectors.setdefault(key, {})[docid] = value
    _, engine = _engine_features(demo, "es-ltr", vectors=vectors)
    names = data.feature_map.names
    # a logging response as the plugin returns it, from the simulated engine's raw (un-normalised) values
    sim = pf.EngineSimulator(demo["docs"], index, vectors=vectors)
    qtext = dict(zip(demo["queries"].qid, demo["queries"]["query"]))
    qid = data.qid[0]
    rows = data.qid == qid
    params = pf.query_params(
        qtext[qid],
        names,
        lexical=demo["lexical"],
        vectors={"clsm": demo["neural"].encoder_.encode([qtext[qid]], side="query")[0]},
    )
    body = pf.sltr_log_query("demo", params, data.docid[rows])
    assert body["query"]["bool"]["filter"][1]["sltr"]["featureset"] == "demo"
    assert body["ext"]["ltr_log"]["log_specs"]["named_query"] == "logged_featureset"
    raw = sim.features(fs, params, data.docid[rows])
    response = {
        "hits": {
            "hits": [
                {
                    "_id": d,
                    "fields": {"_ltrlog": [{"ltrfeat": [{"name": n, "value": float(v)} for n, v in zip(names, r)]}]},
                }
                for d, r in zip(data.docid[rows], raw)
            ]
        }
    }
    docids, logged = pf.parse_ltr_log(response, names)
    assert docids == list(data.docid[rows])
    exported = load_export(tmp_path / "m.json")
    ours = model.predict(data.take(np.flatnonzero(rows)))
    reproduced = [j for j, n in enumerate(names) if n not in pf.plugin_featureset(names)["not_reproduced"]]
    np.testing.assert_allclose(
        pf.normalize(logged, names, exported.normalizers)[:, reproduced],
        data.X[rows][:, reproduced],
        rtol=2e-6,
        atol=2.5e-7,
    )
    assert np.isfinite(exported.predict(logged)).all() and len(ours) == len(logged)


def test_embed_endpoint_answers_the_template_params(demo, tmp_path):
    pytest.importorskip("fastapi")
    from fastapi.testclient import TestClient

    from ltrfeat.rankers.lambdamart import LambdaMART
    from ltrfeat.serving.app import create_app
    from ltrfeat.serving.scorer import Scorer

    model = LambdaMART(n_estimators=5, num_leaves=8, early_stopping_rounds=None, n_jobs=1).fit(demo["data"])
    demo["lexical"].corpus_.save(tmp_path / "corpus.npz")
    scorer = Scorer.load(model, encoders={"clsm": str(demo["encoder"])}, corpus_stats=tmp_path / "corpus.npz")
    client = TestClient(create_app(scorer), base_url="http://localhost")
    answer = client.post("/embed", json={"query": "office chair with arms"})
    assert answer.status_code == 200
    params = answer.json()["params"]
    assert params["keywords"] == "office chair with arms" and len(params["clsm_query_vector"]) == 16
    assert params["query_len"] == 4.0 and params["distinct_terms"] == 4 and "idf_sum_title" in params
    np.testing.assert_allclose(
        params["clsm_query_vector"],
        demo["neural"].encoder_.encode(["office chair with arms"], side="query")[0],
        atol=1e-7,
    )
    assert client.post("/embed", json={"query": 3}).status_code == 422


@pytest.mark.parametrize("target", ["es-ltr", "opensearch-ltr"])
def test_exported_linear_model_scores_as_ltrfeat_in_the_engine(demo, target, tmp_path):
    """A linear ranker over every feature the engine computes (lexical and the CLSM cosine), exported as
    model/linear with its standard normalizers: the simulated engine's features, normalised and weighted in
    float32 as the plugins do, give ltrfeat's own scores."""
    from ltrfeat.export.ltr_plugin import PluginScoring, export_ranker, featureset_path, index_path, load_export
    from ltrfeat.rankers.linear import LinearRanker

    data, names = demo["data"], demo["data"].feature_map.names
    kept = [n for n in names if n not in pf.plugin_featureset(names, target=target)["not_reproduced"]]
    model = LinearRanker(features=kept).fit(data)
    out = tmp_path / "linear.json"
    manifest = export_ranker(model, out, to=target, scoring=PluginScoring(dims={"clsm": 16}))
    inner = json.loads(out.read_text())["model"]["model"]
    assert inner["type"] == "model/linear" and set(inner["definition"]) == set(kept) == set(
        inner["feature_normalizers"]
    )
    # the neural feature's engine offset (1) is folded into its standard normalizer's mean
    j = model.feature_map_.names.index("clsm_title_cos")
    assert inner["feature_normalizers"]["clsm_title_cos"]["standard"]["mean"] == pytest.approx(1 + model.mean_[j])
    assert manifest["not_reproduced"] == {}
    fs = json.loads(featureset_path(out).read_text())["featureset"]["features"]
    enc = demo["neural"].encoder_
    vectors = {
        pf.vector_field("clsm", f): dict(zip(demo["docs"].docid, enc.encode(list(demo["docs"][f]), side="doc")))
        for f in FIELDS
    }
    sim = pf.EngineSimulator(demo["docs"], json.loads(index_path(out).read_text()), vectors=vectors)
    exported, ours = load_export(out), model.predict(data)
    qtext = dict(zip(demo["queries"].qid, demo["queries"]["query"]))
    worst = 0.0
    for qid in dict.fromkeys(data.qid):
        rows = data.qid == qid
        params = pf.query_params(
            qtext[qid], kept, lexical=demo["lexical"], vectors={"clsm": enc.encode([qtext[qid]], side="query")[0]}
        )
        engine = exported.predict(sim.features(fs, params, data.docid[rows]))
        worst = max(worst, float((np.abs(engine - ours[rows]) / np.maximum(1.0, np.abs(ours[rows]))).max()))
    # the plugins normalise, weigh and sum in float32 (a float32 ulp of these scores is about 1e-7 of them)
    assert worst <= 1e-6, worst


def test_lexical_scoring_finds_the_lexical_columns_and_their_settings():
    """What export-ranker's templates recompute: the lexical columns only, with the recorded (here: default)
    settings and a note that they were assumed."""
    from ltrfeat.core.dataset import Feature, FeatureMap
    from ltrfeat.features.lexical import LEXICAL_DEFAULTS

    fmap = FeatureMap([Feature(1, "bm25_title"), Feature(2, "coverage_title"), Feature(3, "clsm_title_cos")])
    columns, settings, note = pf.lexical_scoring(fmap, dims={"clsm": 64}, corpus=None, given={"k1": None})
    assert columns == {"bm25_title": "bm25", "coverage_title": "coverage"}
    assert settings["k1"] == LEXICAL_DEFAULTS["k1"] and "trained before ltrfeat kept them" in note


@pytest.mark.parametrize(
    "columns, norms, target, warned",
    [
        ({"bm25_title": "bm25"}, "exact", "es-ltr", True),
        ({"bm25_title": "bm25"}, "exact", "opensearch-ltr", True),
        ({"bm25_title": "bm25"}, "lucene", "es-ltr", False),
        ({"bm25_title": "bm25"}, "exact", "xgboost-json", False),
        ({"coverage_title": "coverage"}, "exact", "es-ltr", False),
    ],
)
def test_norms_warning_only_where_the_engine_computes_bm25_otherwise(columns, norms, target, warned):
    said = pf.norms_warning(columns, {"bm25_norms": norms}, target)
    assert (said is not None) == warned
    assert said is None or said.startswith("bm25_title were extracted with exact field lengths")
