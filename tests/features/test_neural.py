import numpy as np
import pandas as pd
import pytest
import torch
from click.testing import CliRunner

from ltrfeat.cli.main import cli
from ltrfeat.core.dataset import FeatureMap, RankingSet
from ltrfeat.encoders.encoder import Encoder
from ltrfeat.encoders.model import TwoTowerModel, model_config
from ltrfeat.core.errors import LtrfeatError, ModelFileError
from ltrfeat.features.extract import available_extractors, extract_file, extract_pairs
from ltrfeat.encoders.hashing import TrigramHasher
from ltrfeat.core.letor import read_letor, write_letor
from ltrfeat.encoders.spec import parse_encoder_spec
from ltrfeat.features.neural import EncoderExtractor, encoder_extractors

QUERIES = pd.DataFrame({"qid": ["1", "2", "3"], "query": ["red cat", "blue dog", "green mat"]})
DOCS = pd.DataFrame(
    {
        "docid": ["a", "b", "c", "d"],
        "title": ["red cat", "blue dog house", "a green mat", "cat and dog"],
        "body": ["the red cat sat", "", "green mats for cats", "dogs"],
    }
)
ROWS = [("1", "a", 2), ("1", "b", 0), ("1", "d", 1), ("2", "b", 2), ("2", "d", 1), ("3", "c", 1), ("3", "a", 0)]
SIZES = {"clsm": {"conv": 16, "out": 8}, "dssm": {"hidden": [16], "out": 8}}


def tiny_encoder(arch: str, seed: int = 0) -> Encoder:
    torch.manual_seed(seed)
    hasher = TrigramHasher().fit(list(QUERIES["query"]) + list(DOCS["title"]) + list(DOCS["body"]))
    return Encoder(hasher, TwoTowerModel(model_config(arch, hasher.n_features_, **SIZES[arch])))


@pytest.fixture(scope="module")
def bundles(tmp_path_factory):
    root = tmp_path_factory.mktemp("bundles")
    paths = {}
    for arch in SIZES:
        paths[arch] = root / f"{arch}.ltrenc"
        tiny_encoder(arch).save(paths[arch])
    return paths


def letor_file(tmp_path, rows=ROWS, name="in.letor"):
    qid, docid, label = zip(*rows)
    X = np.array(label, dtype=np.float32)[:, None]
    data = RankingSet(qid, label, X, FeatureMap.from_ids([1]), docid=docid, comment=[f"docid = {d}" for d in docid])
    write_letor(tmp_path / name, data, write_feature_map=False)
    return tmp_path / name


def expected(path, rows=ROWS, field="title"):
    enc = Encoder.load(path)
    q = dict(zip(QUERIES["qid"], QUERIES["query"]))
    d = dict(zip(DOCS["docid"], DOCS[field]))
    return enc.similarity([q[r[0]] for r in rows], [d[r[1]] for r in rows])


def test_transform_is_the_encoders_cosine_per_field(bundles):
    ex = EncoderExtractor(name="clsm", path=bundles["clsm"], field=("title", "body")).fit(DOCS)
    assert ex.feature_names() == ["clsm_title_cos", "clsm_body_cos"] and ex.fields == ("title", "body")
    pairs = pd.DataFrame(
        {"query": ["red cat", "blue dog"], "title": ["red cat", "cat and dog"], "body": ["the red cat sat", "dogs"]}
    )
    got = ex.transform(pairs)
    assert got.dtype == np.float32 and got.shape == (2, 2)
    enc = Encoder.load(bundles["clsm"])
    np.testing.assert_allclose(got[:, 0], enc.similarity(pairs["query"], pairs["title"]), atol=1e-6)
    np.testing.assert_allclose(got[:, 1], enc.similarity(pairs["query"], pairs["body"]), atol=1e-6)
    assert ex.transform(pairs.iloc[:0]).shape == (0, 2)


def test_each_distinct_text_is_encoded_once_across_chunks(tmp_path, bundles, monkeypatch):
    ex = EncoderExtractor(name="dssm", path=bundles["dssm"]).fit(DOCS)
    calls = []
    original = ex.encoder_.encode

    def counting(texts, *, side, batch_size):
        calls.append((side, list(texts)))
        return original(texts, side=side, batch_size=batch_size)

    monkeypatch.setattr(ex.encoder_, "encode", counting)
    out = tmp_path / "out.letor"
    extract_file(
        letor_file(tmp_path), out, queries=QUERIES, docs=DOCS, extractors=[ex], chunk_queries=1, progress=False
    )
    # one batched call per side and chunk at most; chunk 2's documents were all cached already
    assert [side for side, _ in calls] == ["query", "doc", "query", "query", "doc"]
    docs_sent = [t for side, texts in calls if side == "doc" for t in texts]
    queries_sent = [t for side, texts in calls if side == "query" for t in texts]
    assert sorted(docs_sent) == sorted({DOCS.set_index("docid").title[r[1]] for r in ROWS})  # 4 distinct, once
    assert sorted(queries_sent) == sorted(QUERIES["query"])
    assert ex.texts_encoded == {"query": 3, "doc": 4}
    data = read_letor(out)
    assert data.feature_map.names == ["f1", "dssm_title_cos"]
    np.testing.assert_allclose(data.X[:, 1], expected(bundles["dssm"]), atol=1e-6)


def test_a_tiny_cache_evicts_but_gives_the_same_values(bundles):
    pairs = pd.DataFrame(
        {
            "query": ["red cat", "blue dog", "red cat", "green mat"] * 2,
            "title": ["red cat", "blue dog house", "a green mat", "cat and dog"] * 2,
        }
    )
    big = EncoderExtractor(name="clsm", path=bundles["clsm"]).fit()
    small = EncoderExtractor(name="clsm", path=bundles["clsm"], cache_size=1).fit()
    np.testing.assert_array_equal(small.transform(pairs), big.transform(pairs))
    assert len(small._caches["doc"].vectors) == 1
    small.transform(pairs.iloc[:1])
    assert small.texts_encoded["doc"] == 5  # 4 distinct, then "red cat" again after eviction


def test_the_cache_is_bounded_in_bytes_too(bundles):
    """serve's cache held 100,000 texts of any length: a few long documents took gigabytes."""
    long_texts = [" ".join(f"w{i}x{j}" for j in range(5_000)) for i in range(6)]  # ~40 KB each
    pairs = pd.DataFrame({"query": ["red cat"] * 6, "title": long_texts})
    free = EncoderExtractor(name="clsm", path=bundles["clsm"]).fit()
    bounded = EncoderExtractor(name="clsm", path=bundles["clsm"], cache_bytes=100_000).fit()
    for start in range(6):
        # a text encoded again in another batch may differ in the last bit of float32, as without the bound
        np.testing.assert_allclose(bounded.transform(pairs.iloc[start:]), free.transform(pairs.iloc[start:]), atol=1e-6)
        assert 0 < bounded._caches["doc"].nbytes <= 100_000
    assert len(bounded._caches["doc"].vectors) == 2 and free._caches["doc"].nbytes > 200_000


def test_bundle_of_the_other_architecture_is_refused(bundles):
    with pytest.raises(ModelFileError, match="holds a dssm encoder, not clsm") as info:
        EncoderExtractor(name="clsm", path=bundles["dssm"]).fit(DOCS)
    assert "dssm=" in str(info.value) and "\n" not in str(info.value)


def test_unknown_field_and_unfitted_use_are_errors(bundles):
    with pytest.raises(LtrfeatError, match="no field.*abstract"):
        EncoderExtractor(name="clsm", path=bundles["clsm"], field="abstract").fit(DOCS)
    with pytest.raises(RuntimeError, match="not fitted"):
        EncoderExtractor(name="clsm", path=bundles["clsm"]).transform(pd.DataFrame({"query": [], "title": []}))


@pytest.mark.parametrize(
    "spec, parsed",
    [
        ("clsm=m.ltrenc", ("clsm", "m.ltrenc")),
        ("sbert", ("sbert", None)),
        (" dssm-gen = x/y.ltrenc", ("dssm-gen", "x/y.ltrenc")),
        ("sbert=/models/minilm", ("sbert", "/models/minilm")),
    ],
)
def test_parse_encoder_spec(spec, parsed):
    assert parse_encoder_spec(spec) == parsed


@pytest.mark.parametrize(
    "spec, message",
    [
        ("bert=x", "unknown encoder"),
        ("clsm", "needs a model file"),
        ("clsm=", "empty path"),
        ("clsm gen=x", "unknown encoder"),
    ],
)
def test_parse_encoder_spec_rejects(spec, message):
    with pytest.raises(LtrfeatError, match=message):
        parse_encoder_spec(spec)


def test_two_encoders_of_one_kind_need_distinct_names(bundles):
    with pytest.raises(LtrfeatError, match="given twice"):
        encoder_extractors([f"clsm={bundles['clsm']}", f"clsm={bundles['clsm']}"], fields=["title"])
    exs = encoder_extractors([f"clsm-a={bundles['clsm']}", f"clsm-b={bundles['clsm']}"], fields=["title"])
    assert [e.feature_names() for e in exs] == [["clsm-a_title_cos"], ["clsm-b_title_cos"]]


def test_registry_lists_the_neural_kinds():
    reg = available_extractors()
    for kind in ("clsm", "dssm", "sbert"):
        assert kind in reg and reg[kind][0]
    assert "sbert[=DIR]" in reg["sbert"][0] and "clsm=MODEL.ltrenc" in reg["clsm"][0]
    ex = reg["clsm"][1](fields=["title"], path="m.ltrenc")
    assert isinstance(ex, EncoderExtractor) and ex.feature_names() == ["clsm_title_cos"]


def test_extract_pairs_with_an_encoder(bundles):
    pairs = pd.DataFrame(
        {
            "qid": ["q1", "q1", "q2"],
            "query": ["red cat", "red cat", "dog"],
            "docid": ["a", "b", "c"],
            "doc": ["red cat", "blue dog", "dogs"],
            "label": [1.0, 0.0, 1.0],
        }
    )
    data = extract_pairs(pairs, [EncoderExtractor(name="dssm", path=bundles["dssm"], field="doc")])
    assert data.feature_map.names == ["dssm_doc_cos"]
    np.testing.assert_allclose(
        data.X[:, 0], Encoder.load(bundles["dssm"]).similarity(pairs["query"], pairs["doc"]), atol=1e-6
    )


# -- CLI ------------------------------------------------------------------------------------------------------
def run(*args):
    return CliRunner().invoke(cli, [str(a) for a in args])


def texts(tmp_path):
    QUERIES.to_csv(tmp_path / "queries.csv", index=False)
    DOCS.to_csv(tmp_path / "docs.csv", index=False)
    return tmp_path / "queries.csv", tmp_path / "docs.csv"


def extract_cli(tmp_path, out, *options):
    """``ltrfeat extract`` of the module's LETOR file and text tables (written into ``tmp_path``) into ``out``."""
    queries, docs = texts(tmp_path)
    return run(
        "extract", letor_file(tmp_path), "--queries", queries, "--docs", docs, *options, "--out", out, "--no-progress"
    )


def test_cli_extract_appends_lexical_then_encoder_columns(tmp_path, bundles):
    out = tmp_path / "out.letor"
    res = extract_cli(
        tmp_path,
        out,
        "--lexical",
        "bm25",
        "--encoder",
        f"clsm={bundles['clsm']}",
        "--encoder",
        f"dssm={bundles['dssm']}",
        "--field",
        "title",
        "--chunk-queries",
        "1",
    )
    assert res.exit_code == 0, res.output
    data = read_letor(out)
    assert data.feature_map.names == ["f1", "bm25_title", "clsm_title_cos", "dssm_title_cos"]
    np.testing.assert_allclose(data.X[:, 2], expected(bundles["clsm"]), atol=1e-6)
    np.testing.assert_allclose(data.X[:, 3], expected(bundles["dssm"]), atol=1e-6)


@pytest.mark.parametrize(
    "content, message", [(b"not a model at all, just text", "not an .ltrenc encoder bundle"), (b"", "file too short")]
)
def test_cli_extract_with_a_bad_model_file_fails_on_one_line_and_writes_nothing(tmp_path, content, message):
    model = tmp_path / "bad.ltrenc"
    model.write_bytes(content)
    out = tmp_path / "out.letor"
    res = extract_cli(tmp_path, out, "--encoder", f"clsm={model}", "--field", "title")
    assert res.exit_code == 2
    lines = res.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and message in lines[0] and "bad.ltrenc" in lines[0]
    assert not out.exists() and not [p for p in tmp_path.iterdir() if p.name.startswith("out")]


def test_cli_extract_rejects_a_truncated_bundle(tmp_path, bundles):
    model = tmp_path / "cut.ltrenc"
    model.write_bytes(bundles["clsm"].read_bytes()[:-100])
    res = extract_cli(tmp_path, tmp_path / "out.letor", "--encoder", f"clsm={model}")
    assert res.exit_code == 2 and "corrupt" in res.output and not (tmp_path / "out.letor").exists()


def test_cli_features_list_shows_the_encoder_kinds():
    res = run("features", "list")
    assert res.exit_code == 0
    assert "clsm=MODEL.ltrenc" in res.output and "dssm=MODEL.ltrenc" in res.output and "sbert[=DIR]" in res.output
