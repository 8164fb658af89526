"""One duplicate-judgment policy (error | first | mean | max) for every reader of judged pairs."""

import json

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from builders import DATASETS
from ltrfeat.cli.main import cli
from ltrfeat.core.trec import Qrels
from ltrfeat.core.duplicates import data_record, resolve_duplicates
from ltrfeat.core.errors import TextTableError
from ltrfeat.core.text import pairs_to_ranking, read_judged_pairs

CSV = (
    "search_term,product_uid,product_title,relevance\n"
    "drill,1,Cordless Drill,3\n"  # line 2
    "drill,2,Hammer Drill,2\n"
    "drill,1,Cordless Drill,2\n"  # line 4: pair (drill, 1) again, another grade
    "hose,3,Garden Hose,1\n"
    "drill,1,Cordless Drill,1\n"  # line 6: and again
    "hose,3,Garden Hose,1\n"
)  # line 7: (hose, 3) again, same grade
COLUMNS = "query=search_term,doc=product_title,docid=product_uid,label=relevance"


def _frame():
    return pd.DataFrame(
        {
            "qid": ["a", "a", "a", "b", "a", "b"],
            "docid": ["1", "2", "1", "3", "1", "3"],
            "label": [3.0, 2.0, 2.0, 1.0, 1.0, 1.0],
            "doc": ["x", "y", "x2", "z", "x3", "z"],
        }
    )


def test_error_names_the_count_the_first_pair_its_lines_and_the_fix():
    with pytest.raises(TextTableError) as err:
        resolve_duplicates(_frame(), path="p.csv")
    text = str(err.value)
    assert "3 rows judge a (query, document) pair again (2 pairs, 1 with different grades)" in text
    assert "qid 'a', docid '1' at lines 1, 3, 5" in text and "p.csv:3" in text and "--duplicates" in text


@pytest.mark.parametrize("policy, grades", [("first", [3, 2, 1]), ("mean", [2, 2, 1]), ("max", [3, 2, 1])])
def test_policies_keep_the_first_row_with_the_chosen_grade(policy, grades):
    kept, figures = resolve_duplicates(_frame(), policy=policy)
    assert kept["doc"].tolist() == ["x", "y", "z"] and kept["label"].tolist() == grades
    assert figures == {"policy": policy, "repeated_rows": 3, "pairs": 2, "disagreeing_pairs": 1}


def test_mean_rounds_half_up_to_a_grade():
    frame = pd.DataFrame({"qid": ["a", "a"], "docid": ["1", "1"], "label": [1.0, 2.0]})
    assert resolve_duplicates(frame, policy="mean")[0]["label"].tolist() == [2.0]


def test_unique_pairs_pass_through_and_unknown_policies_fail():
    frame = _frame().drop_duplicates(["qid", "docid"])
    kept, figures = resolve_duplicates(frame)
    assert kept is frame and figures["repeated_rows"] == 0
    with pytest.raises(TextTableError, match="unknown duplicates policy 'last'"):
        resolve_duplicates(frame, policy="last")


def test_reader_applies_the_policy_and_records_it(tmp_path):
    path = tmp_path / "pairs.csv"
    path.write_text(CSV)
    with pytest.raises(TextTableError, match=r"pairs.csv:4: duplicate judged pairs: 3 rows judge .* at lines 2, 4, 6"):
        read_judged_pairs(path, columns=COLUMNS, label_map="round")
    pairs = read_judged_pairs(path, columns=COLUMNS, label_map="round", duplicates="max")
    assert pairs.index.tolist() == [2, 3, 5] and pairs["label"].tolist() == [3.0, 2.0, 1.0]
    assert pairs.attrs["duplicates"]["repeated_rows"] == 3 and data_record(pairs)["duplicates"]["policy"] == "max"
    pairs_to_ranking(pairs)  # resolved pairs are unique downstream
    with pytest.raises(TextTableError, match="row judges a .* pair again"):
        pairs_to_ranking(pd.concat([pairs, pairs.iloc[:1]]))


def test_qrels_drop_identical_repeats_and_apply_the_policy_to_conflicts():
    rows = (["q1", "q1", "q1", "q2"], ["d1", "d1", "d1", "d2"], [1, 1, 2, 0], [1, 2, 3, 4])
    with pytest.raises(TextTableError, match="at lines 1, 3"):
        Qrels.from_rows("qrels", *rows)
    qrels = Qrels.from_rows("qrels", *rows, duplicates="max")
    assert qrels.frame["grade"].tolist() == [2.0, 0.0] and qrels.duplicates["repeated_rows"] == 1
    assert Qrels.from_rows("qrels", ["q"] * 2, ["d"] * 2, [1, 1], [1, 2]).duplicates["repeated_rows"] == 0


# -- the four commands ---------------------------------------------------------------------------
def _invoke(*args):
    return CliRunner().invoke(cli, [str(a) for a in args])


def test_datasets_convert_records_the_policy_in_convert_json(tmp_path):
    path = tmp_path / "train.csv"
    path.write_text(
        CSV.replace("relevance", "relevance")
        .replace(
            "search_term,product_uid,product_title,relevance", "id,search_term,product_uid,product_title,relevance"
        )
        .replace("\ndrill", "\n0,drill")
        .replace("\nhose", "\n0,hose"),
        encoding="latin-1",
    )
    res = _invoke("datasets", "convert", "homedepot", path, "--out", tmp_path / "out")
    assert res.exit_code == 2 and "--duplicates" in res.output and not (tmp_path / "out").exists()
    res = _invoke("datasets", "convert", "homedepot", path, "--out", tmp_path / "out", "--duplicates", "mean")
    assert res.exit_code == 0, res.output
    summary = json.loads((tmp_path / "out" / "convert.json").read_text())
    assert summary["duplicates"] == {"policy": "mean", "repeated_rows": 3, "pairs": 2, "disagreeing_pairs": 1}
    assert summary["counts"]["pairs"] == 3 and "merged 3 repeated rows into 2 judged pairs" in res.output


def test_train_encoder_and_extract_take_the_policy(tmp_path):
    from ltrfeat.encoders.encoder import Encoder
    from ltrfeat.core.letor import read_letor

    path = tmp_path / "pairs.csv"
    path.write_text(CSV + "".join(f"q{i},{10 + i},doc {i} text,{1 + i % 3}\n" for i in range(40)))
    common = ["--columns", COLUMNS, "--label-map", "round"]
    res = _invoke("train-encoder", path, *common, "--out", tmp_path / "e.ltrenc", "--epochs", "1")
    assert res.exit_code == 2 and "3 rows judge a (query, document) pair again" in res.output
    res = _invoke(
        "train-encoder",
        path,
        *common,
        "--out",
        tmp_path / "e.ltrenc",
        "--epochs",
        "1",
        "--duplicates",
        "first",
        "--val-fraction",
        "0",
    )
    assert res.exit_code == 0, res.output
    assert Encoder.load(tmp_path / "e.ltrenc").training["duplicates"]["policy"] == "first"
    res = _invoke(
        "extract", "--pairs", path, *common, "--lexical", "bm25", "--out", tmp_path / "x.letor", "--duplicates", "mean"
    )
    assert res.exit_code == 0, res.output
    assert len(read_letor(tmp_path / "x.letor")) == 43 and "--duplicates mean: merged 3" in res.output


def test_ablate_records_the_policy_in_the_report(tmp_path):
    rng = np.random.default_rng(0)
    rows = [f"q{q % 30},{q % 30}_{d},doc {d} of {q % 30},{rng.integers(1, 4)}" for q in range(30) for d in range(6)]
    rows += ["q1,1_0,doc 0 of 1,3", "q1,1_0,doc 0 of 1,1"]
    path = tmp_path / "pairs.csv"
    path.write_text("search_term,product_uid,product_title,relevance\n" + "\n".join(rows) + "\n")
    args = [
        "ablate",
        "--pairs",
        path,
        "--columns",
        COLUMNS,
        "--label-map",
        "round",
        "--encoder",
        "dssm:softmax",
        "--encoder-option",
        "epochs=1",
        "--k-folds",
        "3",
        "--quick",
        "--no-select",
        "--report",
        tmp_path / "r",
    ]
    assert _invoke(*args).exit_code == 2
    res = _invoke(*args, "--duplicates", "max")
    assert res.exit_code == 0, res.output
    config = json.loads((tmp_path / "r" / "report.json").read_text())["config"]
    assert config["duplicates"]["pairs"] == {"policy": "max", "repeated_rows": 2, "pairs": 1, "disagreeing_pairs": 1}


HOME_DEPOT = DATASETS / "home_depot" / "raw" / "train.csv"


@pytest.mark.skipif(not HOME_DEPOT.exists(), reason="Home Depot data not present")
def test_home_depot_with_title_ids_repeats_pairs_and_every_policy_reads_it(tmp_path):
    # without product_uid a document is its title: 1,227 rows share a (query, title) with another row
    columns = "query=search_term,doc=product_title,label=relevance"
    res = _invoke(
        "extract",
        "--pairs",
        HOME_DEPOT,
        "--encoding",
        "latin-1",
        "--columns",
        columns,
        "--label-map",
        "linear:1:3:7",
        "--lexical",
        "bm25",
        "--out",
        tmp_path / "hd.letor",
    )
    assert res.exit_code == 2 and not (tmp_path / "hd.letor").exists()
    first_line = res.output.strip().splitlines()[-1]
    assert first_line.startswith("error: ") and "rows judge a (query, document) pair again" in first_line
    sizes = {}
    for policy in ("first", "mean", "max"):
        pairs = read_judged_pairs(
            HOME_DEPOT, encoding="latin-1", columns=columns, label_map="linear:1:3:7", duplicates=policy
        )
        sizes[policy] = (len(pairs), pairs.attrs["duplicates"]["repeated_rows"], pairs["label"].sum())
    assert sizes["first"][0] == sizes["mean"][0] == sizes["max"][0] == 74_067 - sizes["first"][1]
    assert sizes["first"][1] > 500 and sizes["max"][2] > sizes["mean"][2]
