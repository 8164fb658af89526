"""Data builders shared by the tests (and the serving benchmark): small rankings, planted-signal folds,
learnable text pairs, a scorer world. Plain functions, not tests; fixtures over them live in conftest.py."""

from __future__ import annotations

import contextlib
import os
import zlib
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from ltrfeat.core.dataset import Feature, FeatureMap, RankingSet
from ltrfeat.features.extract import extract_ranking, lexical_extractors
from ltrfeat.core.letor import write_letor
from ltrfeat.features.neural import EncoderExtractor
from ltrfeat.experiments.folds import Fold
from ltrfeat.rankers.lambdamart import LambdaMART


def synthetic(n_queries=60, docs=20, n_features=8, seed=0, max_label=4, names=None):
    """Queries whose labels depend on the first three features, plus noise columns."""
    rng = np.random.default_rng(seed)
    n = n_queries * docs
    X = rng.normal(size=(n, n_features)).astype(np.float32)
    signal = X[:, 0] + 0.5 * X[:, 1] - 0.5 * X[:, 2] + rng.normal(scale=0.5, size=n)
    label = np.clip(np.round((signal + 1.5) * max_label / 4), 0, max_label)
    qid = np.repeat([f"q{seed}_{i}" for i in range(n_queries)], docs)
    fmap = (
        FeatureMap.dense(n_features)
        if names is None
        else FeatureMap(Feature(i + 1, name) for i, name in enumerate(names))
    )
    return RankingSet(qid, label, X, fmap, docid=np.array([f"d{i}" for i in range(n)], dtype=object))


def small(engine, **kw):
    kw = {"n_estimators": 40, "num_leaves": 7, "learning_rate": 0.1, "early_stopping_rounds": 10, "n_jobs": 1} | kw
    return LambdaMART(engine=engine, **kw)


NAMES = ["bm25_title", "tfidf_title", "len_title", "clsm_title_cos"]


FAST = {"n_estimators": 30, "num_leaves": 7, "learning_rate": 0.1, "early_stopping_rounds": 10, "n_jobs": 1}
# `ltrfeat ablate` options for a test whose rankers only need to run: few small trees, one seed, few resamples
ABLATE_QUICK_RANKERS = ["--n-estimators", "10", "--num-leaves", "7", "--resamples", "200", "--seeds", "0"]


def planted_folds(
    *, signal: bool = True, n_folds: int = 3, queries_per_fold: int = 50, docs: int = 15, seed: int = 0
) -> list[Fold]:
    """Folds whose labels depend on a lexical part ``a`` and a part ``b`` only the neural column sees.

    With ``signal=False`` the neural column is pure noise (the control). Fold k tests part k,
    validates on part k+1 and trains on the rest (the LETOR rotation).
    """
    rng = np.random.default_rng(seed)
    n_queries = n_folds * queries_per_fold
    n = n_queries * docs
    a, b = rng.normal(size=n), rng.normal(size=n)
    label = np.digitize(a + b + rng.normal(scale=0.5, size=n), [0.5, 1.5]).astype(float)
    neural = (b if signal else rng.normal(size=n)) + rng.normal(scale=0.3, size=n)
    X = np.column_stack(
        [a + rng.normal(scale=0.3, size=n), a + rng.normal(scale=0.6, size=n), rng.normal(size=n), neural]
    )
    fmap = FeatureMap(
        Feature(i + 1, name, "encoder:clsm" if name.startswith("clsm") else "lexical") for i, name in enumerate(NAMES)
    )
    data = RankingSet(
        np.repeat([f"q{i}" for i in range(n_queries)], docs),
        label,
        X,
        fmap,
        docid=np.array([f"d{i}" for i in range(n)], dtype=object),
    )
    part_of = np.arange(n) // docs // queries_per_fold
    folds = []
    for k in range(n_folds):
        v = (k + 1) % n_folds
        folds.append(
            Fold(
                f"Fold{k + 1}",
                data.take(~np.isin(part_of, [k, v])),
                data.take(part_of == v),
                data.take(part_of == k),
                origin=f"generated part {k + 1}",
            )
        )
    return folds


def write_folds(root, folds, *, ext=".txt", sparse=False, sidecars=False):
    """Write folds as ROOT/<name>/{train,vali,test}<ext> (vali always .txt)."""
    for fold in folds:
        d = root / fold.name
        parts = {f"train{ext}": fold.train, f"test{ext}": fold.test, "vali.txt": fold.valid}
        for name, data in parts.items():
            if data is not None:
                write_letor(d / name, data, sparse=sparse, write_feature_map=sidecars)


def make_pairs(n_topics=6, n_queries=72, seed=0) -> pd.DataFrame:
    """Topics whose queries and documents use different made-up words: only learning can match them."""
    rng = np.random.default_rng(seed)

    def word():
        return "".join(rng.choice(list("abcdefghijklmnopqrstuvwxyz"), size=int(rng.integers(4, 8))))

    q_vocab = [[word() for _ in range(4)] for _ in range(n_topics)]
    d_vocab = [[word() for _ in range(6)] for _ in range(n_topics)]
    docs = [(t, " ".join(rng.choice(d_vocab[t], 3)) + f" sku{t}x{k}") for t in range(n_topics) for k in range(12)]
    rows = []
    for i in range(n_queries):
        topic = i % n_topics
        query = " ".join(rng.choice(q_vocab[topic], 2))
        same = [j for j, (t, _) in enumerate(docs) if t == topic]
        other = [j for j, (t, _) in enumerate(docs) if t != topic]
        for j, label in [(j, 2) for j in rng.choice(same, 3, replace=False)] + [
            (j, 0) for j in rng.choice(other, 5, replace=False)
        ]:
            rows.append((f"q{i}", query, docs[j][1], label))
    return pd.DataFrame(rows, columns=["qid", "query", "doc", "label"])


def write_judged_pairs(path, n_queries=12) -> Path:
    """A judged-pairs table at ``path`` (tsv): ``n_queries`` queries of 4 documents each, random grades 0-2."""
    rng = np.random.default_rng(0)
    rows = [
        {
            "qid": f"q{q}",
            "query": f"query {q} red",
            "docid": f"d{q}-{d}",
            "doc": f"doc {q} {d} red",
            "label": int(rng.integers(0, 3)),
        }
        for q in range(n_queries)
        for d in range(4)
    ]
    pd.DataFrame(rows).to_csv(path, sep="\t", index=False)
    return Path(path)


WORDS = (
    "cheap flights london hotel river bike tyre repair fox quick brown garden chair table lamp red blue "
    "shoes running trail coffee beans grinder"
).split()


def build_world(root, *, n_queries=30, per_query=10, seed=0, encoder=True):
    """Docs, queries, corpus stats, a CLSM encoder and a ranker trained on extracted columns.

    Returns a dict of paths and tables; shared by the serving tests and the benchmark."""
    import torch

    from ltrfeat.encoders import Encoder, TwoTowerModel, model_config
    from ltrfeat.encoders.hashing import TrigramHasher

    rng = np.random.default_rng(seed)
    n_docs = n_queries * per_query
    docs = pd.DataFrame(
        {
            "docid": [f"d{i}" for i in range(n_docs)],
            "title": [" ".join(rng.choice(WORDS, size=rng.integers(2, 7))) for _ in range(n_docs)],
            "body": [" ".join(rng.choice(WORDS, size=rng.integers(5, 20))) for _ in range(n_docs)],
        }
    )
    queries = pd.DataFrame(
        {
            "qid": [f"q{i}" for i in range(n_queries)],
            "query": [" ".join(rng.choice(WORDS, size=rng.integers(1, 4))) for _ in range(n_queries)],
        }
    )
    qid = np.repeat(queries.qid.to_numpy(dtype=object), per_query)
    docid = rng.permutation(docs.docid.to_numpy(dtype=object))[: len(qid)]
    qtext = dict(zip(queries.qid, queries["query"]))
    ttext = dict(zip(docs.docid, docs.title))
    label = np.array([len(set(qtext[q].split()) & set(ttext[d].split())) for q, d in zip(qid, docid)], dtype=float)
    base = RankingSet(
        qid=qid,
        label=np.minimum(label, 3),
        X=np.zeros((len(qid), 0), np.float32),
        feature_map=FeatureMap(),
        docid=docid,
    )
    extractors = lexical_extractors(["bm25", "tf", "coverage", "query_len"], fields=["title", "body"])
    paths = {"corpus": root / "corpus.npz", "ranker": root / "ranker.txt", "encoder": root / "clsm.ltrenc"}
    if encoder:
        torch.manual_seed(seed)
        hasher = TrigramHasher().fit(list(docs.title) + list(queries["query"]))
        model = TwoTowerModel(model_config("clsm", hasher.n_features_, conv=32, out=16))
        with torch.no_grad():
            for p in model.parameters():
                p.normal_(0, 0.3)
        Encoder(hasher, model.eval()).save(paths["encoder"])
        extractors.append(EncoderExtractor(name="clsm", path=str(paths["encoder"]), field="title"))
    data = extract_ranking(base, extractors, queries=queries, docs=docs)
    extractors[0].corpus_.save(paths["corpus"])
    ranker = LambdaMART(n_estimators=30, num_leaves=8, early_stopping_rounds=None, n_jobs=1).fit(data)
    ranker.save(paths["ranker"])
    return {"docs": docs, "queries": queries, "data": data, "model": ranker, **paths}


def with_ranker_b(world: dict) -> dict:
    """``world`` plus ``ranker_b``: a second, smaller ranker on the same features (interleaving's B)."""
    b = Path(world["ranker"]).with_name("ranker_b.txt")
    LambdaMART(n_estimators=3, num_leaves=3, early_stopping_rounds=None, n_jobs=1, seed=7).fit(world["data"]).save(b)
    return {**world, "ranker_b": b}


def candidates_of(world, qid):
    data, docs = world["data"], world["docs"].set_index("docid")
    rows = np.flatnonzero(data.qid == qid)
    return rows, [{"docid": d, "title": docs.loc[d, "title"], "body": docs.loc[d, "body"]} for d in data.docid[rows]]


def assert_scores_equal_offline(scorer, world, qids, *, features_tol: float, scores_tol: float):
    """The scorer's features and scores of each query's candidates equal the offline extraction and ranker."""
    offline = world["model"].predict(world["data"])
    qtext = dict(zip(world["queries"].qid, world["queries"]["query"]))
    for qid in qids:
        rows, cands = candidates_of(world, qid)
        np.testing.assert_allclose(
            scorer.features(qtext[qid], cands), world["data"].X[rows], atol=features_tol, rtol=features_tol
        )
        np.testing.assert_allclose(scorer.score(qtext[qid], cands), offline[rows], atol=scores_tol)


TEXTS = ["cordless drill 18v", "red garden hose", "ceiling fan", "", "unseen zzz words"]


def tiny_encoder(arch, **kw):
    """A random-weight encoder with a trigram vocabulary fitted on :data:`TEXTS`."""
    import torch

    from ltrfeat.encoders import Encoder, TwoTowerModel, model_config
    from ltrfeat.encoders.hashing import TrigramHasher

    hasher = TrigramHasher(min_count=kw.pop("min_count", 1), n_buckets=kw.pop("n_buckets", None)).fit(TEXTS)
    torch.manual_seed(1)
    return Encoder(
        hasher, TwoTowerModel(model_config(arch, hasher.n_features_, **kw)), training={"validation": {"ndcg@10": 0.5}}
    )


def tiny_sbert_dir(folder: Path) -> Path:
    """A random-weight two-layer BERT sentence-transformers directory (MiniLM's tokenizer) under ``folder``."""
    import shutil

    import torch
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.base.modules.normalize import Normalize
    from sentence_transformers.base.modules.transformer import Transformer
    from sentence_transformers.sentence_transformer.modules.pooling import Pooling
    from transformers import BertConfig, BertModel

    from ltrfeat.encoders.sbert import packaged_model_path

    hf = folder / "hf"
    hf.mkdir()
    for name in ("tokenizer.json", "tokenizer_config.json", "vocab.txt", "special_tokens_map.json"):
        shutil.copy(packaged_model_path() / name, hf / name)
    torch.manual_seed(0)
    config = BertConfig(
        vocab_size=30522,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=64,
    )
    BertModel(config).save_pretrained(hf, safe_serialization=True)
    model = SentenceTransformer(
        modules=[Transformer(str(hf), max_seq_length=32), Pooling(32, "mean"), Normalize()], device="cpu"
    )
    model.save(str(folder / "st"), safe_serialization=True)
    return folder / "st"


# `ltrfeat ablate` options for a cross-fitted ablation that runs in seconds (3 folds, one seed, 1-epoch encoders)
TINY_ABLATE = [
    "--k-folds", "3", "--encoder-option", "epochs=1", "--encoder-option", 'sizes={"hidden": [32], "out": 16}',
    "--n-estimators", "20", "--num-leaves", "7", "--resamples", "500", "--seeds", "0",
]  # fmt: skip

# DeepMatch settings small enough for a unit test
TINY = dict(
    topics=(6, 3),
    patch_words=4,
    min_links=2,
    max_links=4,
    units=(2, 2),
    latent=3,
    committee=6,
    lda_iter=5,
    min_df=1,
    epochs=3,
    batch_size=16,
    lr=2e-2,
    val_fraction=0.25,
    patience=3,
    threads=1,
    progress=False,
)


SHARED = Path(__file__).resolve().parents[1].parent / "shared"
DATASETS = SHARED / "datasets"


def dataset_path(*parts) -> Path:
    """Path under ``../shared/datasets``; skips the test when it is absent."""
    path = DATASETS.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"{path} is absent (real data sets live in ../shared/datasets)")
    return path


class WordTeacher:
    """A symmetric fake teacher: the normalised sum of fixed random word vectors (learnable from trigrams)."""

    def __init__(self, dim=16):
        self.dim, self.calls, self.texts = dim, 0, 0

    def word(self, w):
        return np.random.default_rng(zlib.crc32(w.encode("utf-8", "surrogatepass"))).standard_normal(self.dim)

    def encode(self, texts, *, side="query"):
        self.calls, self.texts = self.calls + 1, self.texts + len(texts)
        v = np.array([sum((self.word(w) for w in t.split()), np.zeros(self.dim)) for t in texts])
        return (v / np.maximum(np.linalg.norm(v, axis=1, keepdims=True), 1e-9)).astype(np.float32)


class Interrupted(Exception):
    """A simulated kill right after a training checkpoint was written."""


def train_until_interrupted(monkeypatch, train, *, epoch: int = 1) -> None:
    """Run ``train()`` (which writes checkpoints) and stop it right after epoch ``epoch``'s checkpoint."""
    from ltrfeat.encoders import epochs

    write = epochs.write_checkpoint

    def write_then_stop(path, **kw):
        write(path, **kw)
        if kw["header"]["epoch"] == epoch:
            raise Interrupted

    monkeypatch.setattr(epochs, "write_checkpoint", write_then_stop)
    with pytest.raises(Interrupted):
        train()
    monkeypatch.setattr(epochs, "write_checkpoint", write)


def reproducible_report(path) -> dict:
    """report.json without ``stage_seconds`` (wall-clock times: the one part that differs between runs)."""
    import json

    data = json.loads(Path(path).read_text())
    data.pop("stage_seconds", None)
    return data


def assert_same_columns(a: dict, b: dict) -> None:
    """Two cross-fittings' ``{fold: {column: scores}}`` are equal, bit for bit, in the same order."""
    assert list(a) == list(b)
    for fold in a:
        assert list(a[fold]) == list(b[fold])
        for name in a[fold]:
            np.testing.assert_array_equal(a[fold][name], b[fold][name], err_msg=f"{fold} {name}")


def extract_with_encoder(pairs_path, encoder: str, out):
    """``ltrfeat extract --pairs PAIRS --lexical bm25 --encoder ENCODER --out OUT``: click's result."""
    from click.testing import CliRunner

    from ltrfeat.cli.main import cli

    args = ["extract", "--pairs", pairs_path, "--lexical", "bm25", "--encoder", encoder, "--out", out, "--no-progress"]
    return CliRunner().invoke(cli, [str(a) for a in args])


CHROMIUM = "/usr/bin/chromium"
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@contextlib.contextmanager
def chromium():
    """Debian's headless Chromium driven by playwright (a skip without them; a failure on CI, which has both)."""
    if not Path(CHROMIUM).exists():
        if os.environ.get("CI"):
            pytest.fail("CI must run the browser test: .ci/run installs chromium (make chromium)")
        pytest.skip("Debian's chromium is not installed (make chromium; CI installs it)")
    try:
        from playwright import sync_api
    except ImportError:
        if os.environ.get("CI"):
            pytest.fail("CI must run the browser test: playwright is a dev dependency")
        pytest.skip("playwright is not installed (pip install -e '.[dev]')")
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS)
        try:
            yield browser
        finally:
            browser.close()


def selection_ablation(out: Path, *, n_resamples: int = 1000):
    """A small ablation with model selection written as a report to ``out``: ``(out, result, folds)``."""
    from ltrfeat.experiments.feature_sets import plan_feature_sets
    from ltrfeat.experiments.ablation import run_ablation
    from ltrfeat.experiments.summary import summarise
    from ltrfeat.experiments.report import write_report
    from ltrfeat.rankers.selection import SelectionConfig

    folds = planted_folds(n_folds=3, queries_per_fold=30)
    sets = plan_feature_sets(folds[0].train.feature_map, base="1-3", neural={"clsm": "clsm_title_cos"})
    result = run_ablation(
        folds, sets, seeds=(0,), ranker_params=FAST, progress=False, selection=SelectionConfig.default("lightgbm")
    )
    write_report(result, summarise(result, n_resamples=n_resamples), out, runs_of=folds)
    return out, result, folds


def stop_process(proc, sig, *, timeout: float = 10) -> str:
    """Send ``sig`` to ``proc`` until it ends (a signal landing in a ``__del__`` or weakref callback is swallowed by
    Python: up to six times, then the test fails) and return its stderr."""
    import subprocess

    for _ in range(6):
        proc.send_signal(sig)
        try:
            return proc.communicate(timeout=timeout)[1]
        except subprocess.TimeoutExpired:
            continue
    proc.kill()
    pytest.fail(f"the command ignored {sig!r} six times")


def write_ubi_fixture(directory: Path, *, seed: int = 0, n_click_queries: int = 40) -> dict:
    """A small synthetic world's click log as OpenSearch UBI records (the public schema: query records listing
    the results shown, ``click`` events with their ordinal) in ``directory``: ``{"queries": path, "events": path,
    "impressions": path of the same log as an impression-level TSV, "world": World}``."""
    from ltrfeat.clicks.ubi import write_ubi
    from ltrfeat.core.text import write_table
    from ltrfeat.datasets.synth import generate_world

    world = generate_world(seed=seed, n_queries=30, n_docs=200, n_click_queries=n_click_queries)
    directory.mkdir(parents=True, exist_ok=True)
    paths = {name: directory / f"{name}.jsonl" for name in ("queries", "events")}
    write_ubi(world.impressions, paths["queries"], paths["events"])
    paths["impressions"] = directory / "clicks_impressions.tsv"
    write_table(world.impressions[["session", "query", "docid", "position", "clicked"]], paths["impressions"])
    return {**paths, "world": world}


def string_compares(field: str, values, *, skip=frozenset()) -> list[str]:
    """``module:line`` of every comparison in the package of a ``.field`` attribute or ``["field"]`` item with a string
    literal among ``values`` (or a tuple, list or set holding one); modules (paths under ``ltrfeat/``) in ``skip``
    are left out. For the typed values (StrEnums) that replaced those strings."""
    import ast

    import ltrfeat

    def operand(node) -> bool:
        if isinstance(node, ast.Attribute):
            return node.attr == field
        return isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant) and node.slice.value == field

    def literal(node) -> bool:
        items = node.elts if isinstance(node, (ast.Tuple, ast.List, ast.Set)) else [node]
        return any(isinstance(i, ast.Constant) and i.value in values for i in items)

    root = Path(ltrfeat.__file__).parent
    found = []
    for path in sorted(root.rglob("*.py")):
        name = path.relative_to(root).as_posix()
        if name in skip:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Compare) and any(map(operand, [node.left, *node.comparators])):
                if any(map(literal, [node.left, *node.comparators])):
                    found.append(f"{name}:{node.lineno}")
    return found


class StubTrainer:
    """A :class:`~ltrfeat.experiments._fold_trainer.FoldTrainer` double: ``make(spec, table)`` stands for every
    training, in this process, with nothing prepared (no MiniLM pass, no workers) and nothing loaded from a cache."""

    def __init__(self, make):
        self.make = make

    def train(self, spec, table, **how):
        return self.make(spec, table), False

    def prepare(self, run, todo, zero_shot):
        return None

    def train_elsewhere(self, run, todo, prepared):
        return todo
