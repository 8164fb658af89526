"""scikit-learn interop: LambdaMART.fit(X, y, group=...) like LightGBM, get_feature_names_out, a
Pipeline from a pairs DataFrame to scores, and the estimator checks that apply."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from sklearn.base import clone
from sklearn.exceptions import NotFittedError, SkipTestWarning
from sklearn.pipeline import Pipeline
from sklearn.utils import get_tags
from sklearn.utils import estimator_checks as checks

from ltrfeat.core.errors import LtrfeatError
from ltrfeat.features.extract import PairFeatures, extract_pairs
from ltrfeat.features.lexical import LexicalExtractor
from ltrfeat.features.neural import EncoderExtractor
from ltrfeat.core.text import read_judged_pairs
from ltrfeat.rankers.lambdamart import ENGINES, LambdaMART, RankerNotFittedError
from ltrfeat.core.metrics import evaluate_queries
from builders import small, synthetic

DATA = Path(__file__).resolve().parents[2] / "data"


def sizes(data) -> np.ndarray:
    return data.group_sizes()


@pytest.mark.parametrize("engine", ENGINES)
def test_fit_arrays_with_group_equals_fit_ranking_set(engine, tmp_path):
    train, valid, test = synthetic(seed=0), synthetic(seed=1), synthetic(seed=2)
    reference = small(engine).fit(train, valid)
    model = small(engine).fit(
        train.X, train.label, group=sizes(train), eval_set=[(valid.X, valid.label)], eval_group=[sizes(valid)]
    )
    assert model.best_iteration_ == reference.best_iteration_
    np.testing.assert_array_equal(model.predict(test.X), reference.predict(test))
    np.testing.assert_array_equal(model.predict(test), reference.predict(test))  # names f1..f8 match the file's
    assert model.feature_map_.names == [f"f{i}" for i in range(1, 9)]
    model.save(tmp_path / "m")
    np.testing.assert_array_equal(LambdaMART.load(tmp_path / "m").predict(test.X), reference.predict(test))


def test_fit_with_qid_regroups_and_dataframe_names_are_kept():
    train, test = synthetic(seed=0, n_features=4), synthetic(seed=2, n_features=4)
    names = ["bm25", "tfidf", "len", "noise"]
    order = np.random.default_rng(0).permutation(len(train))  # rows of a query scattered
    frame = pd.DataFrame(train.X[order], columns=names)
    with pytest.warns(UserWarning, match="regrouped"):
        model = small("lightgbm", early_stopping_rounds=None).fit(frame, train.label[order], qid=train.qid[order])
    assert model.feature_map_.names == names
    shuffled = pd.DataFrame(test.X, columns=names)[["noise", "len", "bm25", "tfidf"]]  # matched by name
    np.testing.assert_allclose(model.predict(shuffled), model.predict(test.X))
    with pytest.raises(LtrfeatError, match="3 columns but the model has 4 features"):
        model.predict(test.X[:, :3])


@pytest.mark.parametrize(
    "kwargs,problem",
    [
        ({}, "needs the query of every row"),
        ({"group": [5, 5]}, "summing to"),
        ({"group": [0, 1200]}, "positive query sizes"),
        ({"qid": ["a"] * 3}, "has 3 ids"),
        ({"group": [1200], "qid": ["a"] * 1200}, "not both"),
    ],
)
def test_fit_arrays_input_errors(kwargs, problem):
    train = synthetic(seed=0)
    with pytest.raises(LtrfeatError, match=problem):
        small("lightgbm").fit(train.X, train.label, **kwargs)


def test_fit_mixing_conventions_is_an_error():
    train = synthetic(seed=0)
    with pytest.raises(LtrfeatError, match="valid must be a RankingSet"):
        small("lightgbm").fit(train, train.X)
    with pytest.raises(LtrfeatError, match="go with fit\\(X, y\\)"):
        small("lightgbm").fit(train, group=sizes(train))
    with pytest.raises(LtrfeatError, match="labels y are missing"):
        small("lightgbm").fit(train.X, group=sizes(train))


def test_not_fitted_is_sklearns_error_and_ours():
    with pytest.raises(NotFittedError):
        LambdaMART().predict(np.zeros((2, 3)))
    with pytest.raises(LtrfeatError, match="not fitted"):
        LambdaMART().save("nowhere")
    assert issubclass(RankerNotFittedError, LtrfeatError)


def test_clone_gives_an_unfitted_twin_that_trains_identically():
    train, test = synthetic(seed=0), synthetic(seed=2)
    model = small("lightgbm", params={"min_data_in_leaf": 5}).fit(train.X, train.label, group=sizes(train))
    twin = clone(model)
    assert twin.get_params() == model.get_params() and not hasattr(twin, "booster_")
    twin.fit(train.X, train.label, group=sizes(train))
    np.testing.assert_array_equal(twin.predict(test.X), model.predict(test.X))
    twin.set_params(num_leaves=3)
    assert twin.num_leaves == 3 and model.num_leaves == 7


def lexical(**kw):
    return LexicalExtractor(features=("bm25", "coverage"), fields=("doc",), **kw)


ESTIMATORS = [LambdaMART(), LexicalExtractor(), PairFeatures([lexical()]), EncoderExtractor(name="dssm")]
CHECKS = [
    checks.check_get_params_invariance,
    checks.check_set_params,
    checks.check_no_attributes_set_in_init,
    checks.check_estimator_cloneable,
    checks.check_estimator_repr,
    checks.check_do_not_raise_errors_in_init_or_set_params,
]


@pytest.mark.parametrize("estimator", ESTIMATORS, ids=lambda e: type(e).__name__)
@pytest.mark.parametrize("check", CHECKS, ids=lambda c: c.__name__)
def test_sklearn_estimator_checks(estimator, check):
    check(type(estimator).__name__, estimator)


@pytest.mark.parametrize("estimator", ESTIMATORS[1:], ids=lambda e: type(e).__name__)
def test_check_estimator_runs_on_the_extractors_and_says_what_it_skips(estimator):
    """Without transformer tags check_estimator stopped with a RuntimeError; with them it knows the input is a
    table of strings, runs what needs no data and skips its numeric-array checks with a warning naming the input."""
    with pytest.warns(SkipTestWarning, match=r"requires input\s+of type .*string=True"):
        results = checks.check_estimator(estimator, on_fail=None)
    assert results and all(r["status"] == "passed" for r in results)
    tags = get_tags(estimator)
    assert tags.transformer_tags is not None and tags.transformer_tags.preserves_dtype == []
    assert tags.input_tags.string and not tags.input_tags.two_d_array and tags.requires_fit


def test_sklearn_unfitted_check_for_the_ranker():
    checks.check_estimators_unfitted("LambdaMART", LambdaMART())
    checks.check_parameters_default_constructible("LambdaMART", LambdaMART())


def test_extractors_get_feature_names_out():
    pairs = read_judged_pairs(DATA / "judged.tsv")
    docs = pairs.drop_duplicates("docid")[["docid", "doc"]]
    ex = lexical().fit(docs)
    assert ex.get_feature_names_out().tolist() == ["bm25_doc", "coverage_doc"]
    with pytest.raises(NotFittedError):
        lexical().get_feature_names_out()
    with pytest.raises(NotFittedError):
        EncoderExtractor(name="dssm").get_feature_names_out()
    with pytest.raises(NotFittedError):
        PairFeatures([lexical()]).get_feature_names_out()


def split(pairs: pd.DataFrame):
    qids = pairs["qid"].unique()
    test = pairs["qid"].isin(qids[::4])
    return pairs[~test], pairs[test]


def test_pipeline_from_pairs_to_scores_equals_the_extract_path():
    """The pipeline of docs/rankers.md: pairs DataFrame -> lexical features -> LambdaMART -> scores."""
    pairs = read_judged_pairs(DATA / "judged.tsv")
    train, test = split(pairs)
    pipe = Pipeline(
        [
            ("features", PairFeatures([lexical()]).set_output(transform="pandas")),
            ("ranker", LambdaMART(n_estimators=30, num_leaves=7, n_jobs=1)),
        ]
    )
    pipe.fit(train, train["label"], ranker__qid=train["qid"])
    scores = pipe.predict(test)
    assert pipe.named_steps["ranker"].feature_map_.names == ["bm25_doc", "coverage_doc"]
    ndcg = evaluate_queries(test["qid"], test["label"], scores, "ndcg@10")["ndcg@10"].mean()
    # the same model through the library path (extract_pairs -> RankingSet -> LambdaMART)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        extracted = extract_pairs(train, [lexical()])
        extracted_test = extract_pairs(test, [lexical().fit(train.drop_duplicates("docid")[["docid", "doc"]])])
    reference = LambdaMART(n_estimators=30, num_leaves=7, n_jobs=1).fit(extracted)
    want = pd.Series(reference.predict(extracted_test), index=extracted_test.docid + "|" + extracted_test.qid)
    got = pd.Series(scores, index=(test["docid"] + "|" + test["qid"]).to_numpy())
    np.testing.assert_allclose(got.to_numpy(), want.reindex(got.index).to_numpy(), rtol=1e-6)
    lexical_alone = evaluate_queries(
        test["qid"], test["label"], pipe[:-1].transform(test)["bm25_doc"].to_numpy(), "ndcg@10"
    )["ndcg@10"].mean()
    assert ndcg > lexical_alone  # the ranker beats its best input on held-out queries
    clone(pipe).fit(train, train["label"], ranker__qid=train["qid"])  # clonable as a whole


def test_pair_features_errors():
    pairs = read_judged_pairs(DATA / "judged.tsv")
    with pytest.raises(LtrfeatError, match="no extractors"):
        PairFeatures([]).fit(pairs)
    with pytest.raises(LtrfeatError, match=r"no field\(s\) doc"):
        PairFeatures([lexical()]).fit(pairs.drop(columns="doc"))
    fitted = PairFeatures([lexical()]).fit(pairs)
    broken = pairs.head(3).copy()
    broken.loc[broken.index[1], "doc"] = None
    with pytest.raises(LtrfeatError, match="1 pairs have no text"):
        fitted.transform(broken)
