import numpy as np
import pandas as pd
import pytest

from ltrfeat.experiments.crossfit import CrossFitConfig, crossfit_columns
from ltrfeat.encoders.spec import EncoderSpec
from ltrfeat.experiments.fold_plans import (
    LeakageError,
    build_folds,
    check_disjoint,
    n_trainings,
    plan_folds,
    scoring_jobs,
)
from ltrfeat.experiments.folds import Fold
from ltrfeat.core.text import normalise_query
from ltrfeat.core.dataset import FeatureMap, RankingSet
from ltrfeat.core.errors import LtrfeatError, ParameterError

from builders import StubTrainer


def _pairs(n_queries=40, per_query=5, seed=0):
    rng = np.random.default_rng(seed)
    rows = []
    for q in range(n_queries):
        for d in range(per_query):
            rows.append(
                {
                    "qid": f"q{q}",
                    "query": f"Query  {q}",
                    "docid": f"d{q}_{d}",
                    "doc": f"doc {q} {d}",
                    "label": float(rng.integers(0, 3)),
                }
            )
    return pd.DataFrame(rows)


def test_encoder_spec_parsing():
    assert EncoderSpec.parse("clsm:generalized") == EncoderSpec("clsm", "generalized")
    assert EncoderSpec.parse("dssm").loss == "softmax"
    assert EncoderSpec.parse("sbert=/models/x") == EncoderSpec("sbert", None, "/models/x")
    assert EncoderSpec.parse("clsm:hinge").name == "clsm-hinge" and not EncoderSpec.parse("sbert").trainable
    for bad in ("bert", "clsm:focal", "sbert:softmax", "clsm=path"):
        with pytest.raises(LtrfeatError):
            EncoderSpec.parse(bad)


def test_plan_partitions_queries():
    qids = [f"q{i}" for i in range(53)]
    plans = plan_folds(qids, k=5, valid_fraction=0.1, seed=3)
    tests = [p.test for p in plans]
    assert set().union(*tests) == set(qids) and sum(len(t) for t in tests) == len(qids)
    for p in plans:
        assert p.train | p.valid | p.test == set(qids)
        assert not (p.train & p.valid) and not (p.train & p.test) and not (p.valid & p.test)
        assert abs(len(p.valid) - 0.1 * len(p.train | p.valid)) <= 1
    assert [p.test for p in plan_folds(qids, k=5, seed=3)] == tests
    assert [p.test for p in plan_folds(qids, k=5, seed=4)] != tests


def test_scoring_jobs_cover_every_fold_row_once_without_leakage():
    plans = plan_folds([f"q{i}" for i in range(40)], k=4, seed=0)
    jobs = scoring_jobs(plans)
    assert len(jobs) == n_trainings(4) == 4 + 6
    for plan in plans:
        scored = [s for _, targets in jobs for fold, s in targets if fold == plan.name]
        assert sum(len(s) for s in scored) == 40 and set().union(*scored) == plan.test | plan.train | plan.valid
    for excluded, targets in jobs:
        for fold, scored in targets:
            test = next(p.test for p in plans if p.name == fold)
            assert scored <= excluded and test <= excluded  # never trained on what it scores, nor on the test fold


def test_plan_rejects_too_few_queries():
    with pytest.raises(LtrfeatError, match="too few"):
        plan_folds(["a", "b", "c"], k=3)
    with pytest.raises(LtrfeatError, match="at least 3 folds"):
        plan_folds([f"q{i}" for i in range(20)], k=2)


def test_no_encoder_ever_trains_on_the_queries_it_scores():
    """Fold discipline: a spy trainer records each training table; none may hold a scored query."""
    pairs = _pairs()
    plans = plan_folds(pairs["qid"], k=4, seed=0)
    trained = []

    class Spy:
        def __init__(self, table):
            self.table_queries = set(table["query"].map(normalise_query))

        def similarity(self, queries, docs):
            scored = {normalise_query(q) for q in queries}
            assert not (scored & self.table_queries)
            trained.append((self.table_queries, scored))
            return np.zeros(len(queries))

    columns = crossfit_columns(
        pairs, plans, [EncoderSpec("clsm", "softmax")], trainer=StubTrainer(lambda s, t: Spy(t)), progress=False
    )
    assert len(trained) == 10 * 2 - 4  # E_f scores one fold, E_fg two
    for plan in plans:
        values = columns[plan.name]["clsm-softmax_doc_cos"]
        assert not np.isnan(values).any()  # every row of the fold's universe (all queries) is scored once
    # the first k trainings: E_f scores exactly the test queries and was trained on all the others
    all_q = {normalise_query(q) for q in pairs["query"]}
    for plan, (table_queries, scored) in zip(plans, trained):
        test_texts = {normalise_query(f"Query  {q[1:]}") for q in plan.test}
        assert scored == test_texts and table_queries == all_q - test_texts


def test_separate_click_table_is_filtered_by_query_text():
    pairs = _pairs(n_queries=12)
    clicks = pd.DataFrame(  # full-width letters: the same query as "query 2" (NFKC), as the leakage guard sees it
        {
            "query": ["query 0", "QUERY 1", "\uff31\uff55\uff45\uff52\uff59 2", "unrelated"],
            "doc": list("abcd"),
            "label": [1, 2, 3, 4],
        }
    )
    plans = plan_folds(pairs["qid"], k=3, seed=1)
    seen = []

    def train_fn(spec, table):
        seen.append(set(table["query"].map(normalise_query)))
        return type("E", (), {"similarity": staticmethod(lambda q, d: np.ones(len(q)))})()

    crossfit_columns(
        pairs,
        plans,
        [EncoderSpec("dssm", "generalized")],
        train_table=clicks,
        trainer=StubTrainer(train_fn),
        progress=False,
    )
    assert len(seen) == n_trainings(3)
    for plan, queries in zip(plans, seen):
        test_texts = {normalise_query(f"Query  {q[1:]}") for q in plan.test}
        assert not (queries & test_texts) and "unrelated" in queries


def test_check_disjoint_raises():
    with pytest.raises(LeakageError, match="1 scored queries"):
        check_disjoint({"a", "b"}, {"b", "c"}, "clsm fold1")


def test_build_folds_splits_rows_and_appends_columns():
    pairs = _pairs(n_queries=20)
    base = RankingSet(
        pairs["qid"].to_numpy(object),
        pairs["label"],
        np.ones((len(pairs), 2)),
        FeatureMap.dense(2),
        docid=pairs["docid"].to_numpy(object),
    )
    plans = plan_folds(pairs["qid"], k=4, seed=0)
    cols = {p.name: {"clsm-softmax_doc_cos": np.arange(len(pairs), dtype=np.float32)} for p in plans}
    folds = build_folds(base, plans, cols, pairs_name="pairs.tsv")
    assert all(isinstance(f, Fold) for f in folds)
    for fold, plan in zip(folds, plans):
        assert set(fold.test.qid) == plan.test and set(fold.train.qid) == plan.train
        assert fold.test.feature_map.names[-1] == "clsm-softmax_doc_cos"
        assert fold.test.feature_map.features[-1].source == "encoder:clsm-softmax"
        assert len(fold.train) + len(fold.valid) + len(fold.test) == len(pairs)
        assert fold.origin.startswith(f"query fold {fold.name[-1]} of 4 of pairs.tsv, encoder columns cross-fitted")


def test_text_folds_end_to_end_with_stub_encoder():
    from ltrfeat.experiments.crossfit import text_folds
    from ltrfeat.features.extract import lexical_extractors

    pairs = _pairs(n_queries=16, per_query=4).sample(frac=1.0, random_state=0).reset_index(drop=True)
    stub = type("E", (), {"similarity": staticmethod(lambda q, d: np.array([len(x) for x in d], float))})()
    folds, groups, base_names, info = text_folds(
        pairs,
        lexical=lexical_extractors("bm25,coverage", fields=["doc"]),
        specs=[EncoderSpec("clsm", "softmax")],
        k=4,
        seed=0,
        trainer=StubTrainer(lambda spec, table: stub),
        progress=False,
    )
    assert groups == {"clsm-softmax": ["clsm-softmax_doc_cos"]}
    assert base_names == ["bm25_doc", "coverage_doc"]
    assert len(folds) == 4 and info["outer_folds"] == 4 and "out-of-fold" in info["description"]
    for fold in folds:
        assert fold.test.feature_map.names == base_names + ["clsm-softmax_doc_cos"]
        assert fold.test.is_contiguous() and fold.train.is_contiguous()
        # the neural column is the stub's value for each row's own document
        docs = dict(zip(pairs["docid"], pairs["doc"]))
        np.testing.assert_array_equal(fold.test.X[:, -1], [len(docs[d]) for d in fold.test.docid])


def test_cached_scores_are_reused_without_loading_the_encoder(tmp_path):
    import io

    from ltrfeat.core.fileio import read_checked

    pairs = _pairs(n_queries=30, per_query=4)
    plans = plan_folds(pairs["qid"].unique(), k=3, seed=0)
    options = {"sizes": {"hidden": [8], "out": 4}, "epochs": 1, "batch_size": 16, "threads": 1, "val_fraction": 0}
    spec = [EncoderSpec("dssm", "softmax")]
    first = crossfit_columns(pairs, plans, spec, options=options, cache=tmp_path, progress=False)
    n_scored = sum(len(targets) for _, targets in scoring_jobs(plans))  # one file per training and scored fold
    assert len(list((tmp_path / "scores").glob("dssm-softmax-*.scores"))) == n_scored
    failing = StubTrainer(lambda *a: pytest.fail("scores were cached: nothing to load"))
    second = crossfit_columns(pairs, plans, spec, options=options, cache=tmp_path, progress=False, trainer=failing)
    for fold in first:
        np.testing.assert_array_equal(first[fold]["dssm-softmax_doc_cos"], second[fold]["dssm-softmax_doc_cos"])
    # a torn scores file is scored again from the cached encoder, not trusted
    torn = next((tmp_path / "scores").glob("*.scores"))
    torn.write_bytes(torn.read_bytes()[:40])
    third = crossfit_columns(pairs, plans, spec, options=options, cache=tmp_path, progress=False)
    for fold in first:
        np.testing.assert_array_equal(first[fold]["dssm-softmax_doc_cos"], third[fold]["dssm-softmax_doc_cos"])
    payload = read_checked(torn)  # written again whole
    assert payload is not None and np.load(io.BytesIO(payload), allow_pickle=False).dtype == np.float32


@pytest.mark.parametrize(
    "settings, message",
    [
        ({"k": 1}, "at least 3 folds"),
        ({"k": 2}, "at least 3 folds"),
        (
            {"valid_fraction": 1.0},
            r"valid_fraction must be a number in \[0, 1\), got 1.0; the ranker's validation share",
        ),
        ({"encoder_jobs": -1}, "encoder_jobs must be an integer in \\[0, 1024\\]"),
        ({"options": {"score": "dot"}}, "the score is chosen per encoder"),
    ],
)
def test_crossfit_config_refuses_bad_settings(settings, message):
    with pytest.raises(ParameterError, match=message):
        CrossFitConfig(**settings)


def test_the_cluster_encodes_only_the_texts_each_minilm_use_reads():
    from ltrfeat.experiments._minilm_pass import teacher_vectors_on

    class Recorder:
        def __init__(self):
            self.asked = []

        def teacher_vectors(self, spec, texts, *, side):
            self.asked.append((spec, side, sorted(set(texts))))
            return len(set(texts))

    pairs = pd.DataFrame({"qid": ["1", "2"], "query": ["judged a", "judged b"], "doc": ["title a", "title b"]})
    clicks = pd.DataFrame({"query": ["clicked a"], "doc": ["clicked title"], "label": [1.0]})
    for specs, texts in [
        (["sbert"], (["judged a", "judged b"], ["title a", "title b"])),  # the zero-shot column: the judged pairs
        (["clsm:generalized+teacher"], (["clicked a"], ["clicked title"])),  # the distillation: its training table
    ]:
        cluster = Recorder()
        teacher_vectors_on(cluster, [EncoderSpec.parse(s) for s in specs], pairs, clicks, field="doc", profile=None)
        assert cluster.asked == [("sbert", "query", texts[0]), ("sbert", "doc", texts[1])]
