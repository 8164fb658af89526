"""Extraction on a 2-worker LocalCluster equals the local run byte for byte; failures leave no output."""

import contextlib
import os
import signal
import sys

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from sklearn.base import BaseEstimator

distributed = pytest.importorskip("distributed")
import cloudpickle  # noqa: E402  (a dependency of distributed)

from ltrfeat.cli.main import cli  # noqa: E402
from ltrfeat.core import dask_cluster  # noqa: E402
from ltrfeat.features import dask_extract as dist  # noqa: E402
from ltrfeat.core.dataset import FeatureMap, RankingSet  # noqa: E402
from ltrfeat.encoders.encoder import Encoder  # noqa: E402
from ltrfeat.encoders.model import TwoTowerModel, model_config  # noqa: E402
from ltrfeat.core.errors import LtrfeatError, TextTableError  # noqa: E402
from ltrfeat.features.extract import extract_file, extract_ranking, lexical_extractors  # noqa: E402
from ltrfeat.encoders.hashing import TrigramHasher  # noqa: E402
from ltrfeat.core.letor import read_letor, write_letor  # noqa: E402
from ltrfeat.features.neural import EncoderExtractor  # noqa: E402

cloudpickle.register_pickle_by_value(sys.modules[__name__])  # workers cannot import this test module
WORDS = [f"w{i}" for i in range(120)]
N_DOCS = 300
# queries of very different sizes: single documents, a 250-document query, many small ones
SIZES = [1, 250, 2, 1, 40, 3, 7, 1, 90, 5, 1, 1, 12, 60, 2, 30, 1, 8]


def make_world(tmp_path, sizes=SIZES, seed=0):
    rng = np.random.default_rng(seed)
    qids = [f"q{i}" for i in range(len(sizes))]
    qid = np.repeat(qids, sizes)
    docid = np.array([f"d{k}" for k in rng.integers(0, N_DOCS, len(qid))], dtype=object)
    X = rng.random((len(qid), 3)).astype(np.float32)
    data = RankingSet(
        qid,
        rng.integers(0, 3, len(qid)).astype(float),
        X,
        FeatureMap.from_ids([1, 2, 5]),
        docid=docid,
        comment=[f"docid = {d} inc = 1" for d in docid],
    )
    path = tmp_path / "in.letor"
    write_letor(path, data, write_feature_map=False)
    queries = pd.DataFrame({"qid": qids, "query": [" ".join(rng.choice(WORDS, 3)) for _ in qids]})
    docs = pd.DataFrame(
        {
            "docid": [f"d{k}" for k in range(N_DOCS)],
            "title": [" ".join(rng.choice(WORDS, 5)) for _ in range(N_DOCS)],
            "body": [" ".join(rng.choice(WORDS, 20)) for _ in range(N_DOCS)],
        }
    )
    return path, queries, docs


@pytest.fixture(scope="module")
def bundle(tmp_path_factory):
    import torch

    torch.manual_seed(0)
    hasher = TrigramHasher().fit(WORDS)
    path = tmp_path_factory.mktemp("enc") / "clsm.ltrenc"
    Encoder(hasher, TwoTowerModel(model_config("clsm", hasher.n_features_, conv=16, out=8))).save(path)
    return path


def both(tmp_path, dask_client, make_extractors, *, chunk=5, partition=3, world=None, **kwargs):
    """Local and distributed outputs (bytes of the file and of its sidecar)."""
    path, queries, docs = world or make_world(tmp_path)
    local, remote = tmp_path / "local.letor", tmp_path / "dask.letor"
    extract_file(path, local, queries=queries, docs=docs, extractors=make_extractors(), chunk_queries=chunk, **kwargs)
    rows = dist.extract_file_dask(
        path,
        remote,
        queries=queries,
        docs=docs,
        extractors=make_extractors(),
        client=dask_client,
        scheduling=dist.DaskScheduling(partition_queries=partition, timeout=60),
        **kwargs,
    )
    sidecar = lambda p: p.with_name(p.name + ".features.json").read_bytes()  # noqa: E731
    return (local.read_bytes(), sidecar(local)), (remote.read_bytes(), sidecar(remote)), rows


@pytest.mark.parametrize("partition", [1, 4, 1000])
def test_lexical_output_is_byte_identical(tmp_path, dask_client, partition):
    local, remote, rows = both(
        tmp_path, dask_client, lambda: lexical_extractors("all", fields=["title", "body"]), partition=partition
    )
    assert rows == sum(SIZES)
    assert remote == local


def test_lexical_and_clsm_output_is_byte_identical(tmp_path, dask_client, bundle):
    def make():
        return lexical_extractors("bm25,coverage", fields=["title"]) + [
            EncoderExtractor(name="clsm", path=str(bundle), field=("title", "body"))
        ]

    local, remote, _ = both(tmp_path, dask_client, make, partition=2)
    assert remote[1] == local[1] and b"clsm_body_cos" in remote[1]
    # PyTorch's CPU kernels round differently for different batch shapes (the same happens locally
    # with another --chunk-queries), so the cosines agree to float32 rounding; all else is identical
    a, b = read_letor(tmp_path / "local.letor"), read_letor(tmp_path / "dask.letor")
    neural = [j for j, name in enumerate(a.feature_map.names) if name.startswith("clsm")]
    exact = [j for j in range(a.n_features) if j not in neural]
    np.testing.assert_array_equal(b.X[:, exact], a.X[:, exact])
    np.testing.assert_allclose(b.X[:, neural], a.X[:, neural], rtol=0, atol=1e-6)
    assert (b.qid == a.qid).all() and (b.label == a.label).all() and (b.comment == a.comment).all()


def test_output_of_rows_without_text_matches_the_local_policy(tmp_path, dask_client):
    path, queries, docs = make_world(tmp_path)
    world = (path, queries.iloc[1:], docs.iloc[:-40])  # q0 and some documents have no text
    local, remote, _ = both(
        tmp_path, dask_client, lambda: lexical_extractors("bm25", fields=["title"]), world=world, missing="nan"
    )
    assert remote == local
    out = tmp_path / "fail.letor"
    with pytest.raises(TextTableError) as local_error:
        extract_file(
            path,
            out,
            queries=world[1],
            docs=world[2],
            chunk_queries=2,
            extractors=lexical_extractors("bm25", fields=["title"]),
        )
    with pytest.raises(TextTableError) as remote_error:
        dist.extract_file_dask(
            path,
            out,
            queries=world[1],
            docs=world[2],
            client=dask_client,
            scheduling=dist.DaskScheduling(partition_queries=2),
            extractors=lexical_extractors("bm25", fields=["title"]),
        )
    assert str(remote_error.value) == str(local_error.value)
    assert not out.exists() and not list(tmp_path.glob(".fail.letor*"))


def test_extract_ranking_dask_equals_extract_ranking(tmp_path, dask_client):
    path, queries, docs = make_world(tmp_path)
    data = read_letor(path)
    local = extract_ranking(data, lexical_extractors("all", fields=["title"]), queries=queries, docs=docs)
    remote = dist.extract_ranking_dask(
        data,
        lexical_extractors("all", fields=["title"]),
        queries=queries,
        docs=docs,
        client=dask_client,
        scheduling=dist.DaskScheduling(partition_queries=4, timeout=60),
    )
    assert remote.feature_map == local.feature_map
    np.testing.assert_array_equal(remote.X, local.X)
    np.testing.assert_array_equal(remote.qid, local.qid)


class KillWorker(BaseEstimator):
    """Test extractor: kills the worker process running it while ``marker`` is absent
    (``once``: creates the marker first, so only the first attempt dies)."""

    def __init__(self, *, marker="", once=True):
        self.marker = marker
        self.once = once

    def fit(self, docs, queries=None):
        self.fitted_ = True
        return self

    def feature_names(self):
        return ["survivor"]

    def transform(self, pairs):
        if not os.path.exists(self.marker) and os.getpid() != self.fitted_pid_:
            if self.once:
                open(self.marker, "w").close()
            os.kill(os.getpid(), signal.SIGKILL)
        return np.full((len(pairs), 1), 7.0, dtype=np.float32)


def killers(marker, once):
    ex = KillWorker(marker=str(marker), once=once).fit(None)
    ex.fitted_pid_ = os.getpid()  # never kill the test process itself (the local reference run)
    return [ex]


def test_a_worker_killed_mid_run_is_survived_through_rescheduling(tmp_path, dask_client):
    marker = tmp_path / "killed-once"
    local, remote, _ = both(tmp_path, dask_client, lambda: killers(marker, once=True), partition=2)
    assert marker.exists()  # a worker really died
    assert remote == local


def test_a_partition_that_always_kills_its_worker_fails_cleanly(tmp_path, dask_client):
    path, queries, docs = make_world(tmp_path)
    out = tmp_path / "out.letor"
    scheduler = dask_client.cluster.scheduler
    allowed, scheduler.allowed_failures = scheduler.allowed_failures, 0
    try:
        with pytest.raises(LtrfeatError, match="failed on the Dask cluster: KilledWorker.*no output was written"):
            dist.extract_file_dask(
                path,
                out,
                queries=queries,
                docs=docs,
                extractors=killers(tmp_path / "never", False),
                client=dask_client,
                scheduling=dist.DaskScheduling(partition_queries=100, retries=0, timeout=60),
            )
    finally:
        scheduler.allowed_failures = allowed
    assert not out.exists() and not FeatureMap.sidecar_path(out).exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".out.letor")]


@pytest.mark.parametrize(
    "bad, match",
    [
        ({"partition_queries": 0}, "partition_queries must be an integer >= 1"),
        ({"in_flight": 0}, "in_flight must be an integer >= 1"),
        ({"retries": -1}, "retries must be an integer >= 0"),
        ({"retries": 1.5}, "retries must be an integer"),
        ({"timeout": 0}, "timeout must be a number > 0 or None, got 0; seconds, or None: no limit"),
    ],
)
def test_scheduling_refuses_bad_settings(bad, match):
    with pytest.raises(ValueError, match=match):
        dist.DaskScheduling(**bad)
    assert dist.DaskScheduling(in_flight=None, timeout=None) == dist.DaskScheduling()


def test_pack_ships_encoders_as_bundle_bytes(tmp_path, bundle):
    ex = EncoderExtractor(name="clsm", path=str(bundle), field="title").fit()
    lexical = lexical_extractors("bm25", fields=["title"])[0].fit(pd.DataFrame({"docid": ["a"], "title": ["x y"]}))
    payload = dist.pack_extractors([lexical, ex])
    assert bundle.read_bytes() in payload  # the bundle travels as its own bytes, not as a pickled torch module
    restored = dist.unpack_extractors(payload, tmp_path)
    assert restored[1].feature_names() == ex.feature_names() and restored[1].path != str(bundle)
    pairs = pd.DataFrame({"query": ["w1 w2"], "title": ["w2 w3"]})
    np.testing.assert_array_equal(restored[1].transform(pairs), ex.transform(pairs))
    np.testing.assert_array_equal(
        restored[0].transform(pairs.assign(qid="1", docid="a")), lexical.transform(pairs.assign(qid="1", docid="a"))
    )


def test_dask_client_rejects_bad_specs_and_starts_a_local_cluster():
    with pytest.raises(LtrfeatError, match="worker count"), dask_cluster.dask_client("local:zero"):
        pass
    with (
        pytest.raises(LtrfeatError, match="cannot connect"),
        dask_cluster.dask_client("tcp://127.0.0.1:1", timeout="2s"),
    ):
        pass
    with dask_cluster.dask_client("local:1") as c:
        assert len(c.scheduler_info()["workers"]) == 1


def test_cli_extract_with_dask_matches_the_local_cli(tmp_path, dask_client, monkeypatch):
    path, queries, docs = make_world(tmp_path)
    queries.to_csv(tmp_path / "q.tsv", sep="\t", index=False)
    docs.to_csv(tmp_path / "d.tsv", sep="\t", index=False)
    monkeypatch.setattr(dask_cluster, "dask_client", lambda spec: contextlib.nullcontext(dask_client))
    common = [
        "extract",
        str(path),
        "--queries",
        str(tmp_path / "q.tsv"),
        "--docs",
        str(tmp_path / "d.tsv"),
        "--lexical",
        "all",
        "--chunk-queries",
        "3",
    ]
    runner = CliRunner()
    local = runner.invoke(cli, common + ["--out", str(tmp_path / "a.letor")])
    remote = runner.invoke(cli, common + ["--out", str(tmp_path / "b.letor"), "--dask", "local:2"])
    assert local.exit_code == 0, local.output
    assert remote.exit_code == 0, remote.output
    assert (tmp_path / "a.letor").read_bytes() == (tmp_path / "b.letor").read_bytes()
    assert "--dask local:2" in runner.invoke(cli, ["extract", "--help"]).output
