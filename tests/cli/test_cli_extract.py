import json

import numpy as np
import pytest
from click.testing import CliRunner

from ltrfeat.cli.main import cli
from ltrfeat.core.dataset import FeatureMap
from ltrfeat.core.letor import read_letor

PAIRS_CSV = (
    "search_term,product_uid,product_title,relevance\n"
    "angle bracket,100001,Simpson Strong-Tie 12-Gauge Angle,3\n"
    "l bracket,100001,Simpson Strong-Tie 12-Gauge Angle,2.5\n"
    "angle bracket,100002,BEHR Premium Textured DeckOver,1\n"
    "deck over,100002,BEHR Premium Textured DeckOver,3\n"
    "deck over,100003,Angle Deck Bracket,1.67\n"
    "gas mowe,100011,Toro 22 in. Self-Propelled Gas Lawn Mower 30\u00b0,3\n"
)
COLUMNS = "query=search_term,doc=product_title,docid=product_uid,label=relevance"


def run(*args):
    return CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)


def write_pairs(tmp_path, encoding="utf-8"):
    path = tmp_path / "pairs.csv"
    path.write_bytes(PAIRS_CSV.encode(encoding))
    return path


def extract_pairs(pairs, out, *options):
    """``ltrfeat extract --pairs PAIRS --columns COLUMNS OPTIONS --out OUT``."""
    return run("extract", "--pairs", pairs, "--columns", COLUMNS, *options, "--out", out)


def files(tmp_path):
    return sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("out"))


def test_pairs_to_letor_then_letor_info_shows_the_named_columns(tmp_path):
    pairs = write_pairs(tmp_path)
    out = tmp_path / "out.letor"
    res = extract_pairs(
        pairs,
        out,
        "--label-map",
        "linear:1:3:7",
        "--lexical",
        "bm25,coverage,trigram_cos",
        "--write-texts",
        tmp_path / "texts",
        "--save-corpus-stats",
        tmp_path / "corpus.npz",
    )
    assert res.exit_code == 0, res.output
    assert "wrote" in res.output and "bm25_doc" in res.output
    names = ["bm25_doc", "coverage_doc", "trigram_cos_doc"]
    assert FeatureMap.load(FeatureMap.sidecar_path(out)).names == names
    info = run("letor", "info", out)
    assert info.exit_code == 0 and "features:      3 (max id 3, names from sidecar)" in info.output
    data = read_letor(out)
    assert data.feature_map.names == names and len(data) == 6 and data.n_queries == 4
    assert data.docid.tolist()[:3] == ["100001", "100002", "100001"]
    assert data.label.tolist()[:3] == [6.0, 0.0, 5.0]
    assert data.X[:2, 1].tolist() == [0.5, 0.0]  # coverage of "angle bracket": half / none
    assert (tmp_path / "texts" / "queries.csv").exists() and (tmp_path / "texts" / "docs.csv").exists()

    # second pass: LETOR + the written texts + the saved statistics append more columns
    out2 = tmp_path / "out2.letor"

    def second_pass(lexical):
        texts = tmp_path / "texts"
        return run(
            "extract",
            out,
            "--queries",
            texts / "queries.csv",
            "--docs",
            texts / "docs.csv",
            "--corpus-stats",
            tmp_path / "corpus.npz",
            "--lexical",
            lexical,
            "--out",
            out2,
            "--no-progress",
        )

    res = second_pass("lm_dirichlet,bm25")
    assert res.exit_code == 2 and "duplicate feature names" in res.output  # bm25_doc is already there
    assert not out2.exists()
    res = second_pass("lm_dirichlet")
    assert res.exit_code == 0, res.output
    again = read_letor(out2)
    assert again.feature_map.names == names + ["lm_dirichlet_doc"] and again.feature_map.ids == [1, 2, 3, 4]
    np.testing.assert_array_equal(again.X[:, :3], data.X)


def test_letor_input_with_fields_and_stemming(tmp_path):
    (tmp_path / "q.tsv").write_text("qid\tquery\n1\trunning shoes\n2\tred cats\n")
    (tmp_path / "d.tsv").write_text("docid\ttitle\tbody\nA\tRun shoe\tshoes for running\nB\tcat\tred cat toys\n")
    (tmp_path / "in.letor").write_text("1 qid:1 3:0.5 #docid = A\n0 qid:1 3:0.1 #docid = B\n1 qid:2 3:0.2 #docid = B\n")
    out = tmp_path / "out.letor"
    res = run(
        "extract",
        tmp_path / "in.letor",
        "--queries",
        tmp_path / "q.tsv",
        "--docs",
        tmp_path / "d.tsv",
        "--fields",
        "body",
        "--stem",
        "english",
        "--lexical",
        "tf,query_len",
        "--out",
        out,
    )
    assert res.exit_code == 0, res.output
    data = read_letor(out)
    assert data.feature_map.names == ["f3", "tf_sum_body", "tf_min_body", "tf_max_body", "tf_mean_body", "query_len"]
    assert data.X[:, 1].tolist() == [2, 0, 2]  # stemmed: running~running, shoes~shoes; red, cats~cat


def test_missing_text_gives_one_line_error_and_no_output(tmp_path):
    (tmp_path / "q.tsv").write_text("qid\tquery\n1\tred\n")
    (tmp_path / "d.tsv").write_text("docid\ttitle\nA\tred\n")
    (tmp_path / "in.letor").write_text("1 qid:1 1:1 #docid = A\n0 qid:1 1:2 #docid = GONE\n0 qid:7 1:2 #docid = A\n")
    texts = ("--queries", tmp_path / "q.tsv", "--docs", tmp_path / "d.tsv", "--lexical", "bm25")
    res = run("extract", tmp_path / "in.letor", *texts, "--out", tmp_path / "out.letor")
    assert res.exit_code == 2
    line = res.output.strip()
    assert line.count("\n") == 0 and line.startswith("error: ") and "2 rows have no text" in line
    assert "GONE" in line and "(7)" in line
    assert files(tmp_path) == []
    res = run("extract", tmp_path / "in.letor", *texts, "--missing", "zero", "--out", tmp_path / "out.letor")
    assert res.exit_code == 0 and files(tmp_path) == ["out.letor", "out.letor.features.json"]


def test_mismatched_encoding_is_reported_with_the_fix_and_no_output(tmp_path):
    pairs = write_pairs(tmp_path, encoding="latin-1")
    res = extract_pairs(pairs, tmp_path / "out.letor", "--label-map", "round", "--lexical", "bm25")
    assert res.exit_code == 2
    assert "cannot decode" in res.output and "--encoding" in res.output and "pairs.csv:7" in res.output
    assert files(tmp_path) == []
    res = extract_pairs(
        pairs, tmp_path / "out.letor", "--label-map", "round", "--lexical", "bm25", "--encoding", "latin-1"
    )
    assert res.exit_code == 0, res.output


@pytest.mark.parametrize(
    "args,message",
    [
        (["--lexical", "bm25"], "give one of LETOR_IN"),
        (["--pairs", "P", "--lexical", "bm99"], "unknown lexical feature(s) bm99"),
        (["--pairs", "P"], "no extractor chosen"),
        (["--pairs", "P", "--lexical", "bm25", "--corpus-stats", "NOPE.npz"], "corpus statistics file not found"),
    ],
)
def test_usage_errors(tmp_path, args, message):
    args = [str(write_pairs(tmp_path)) if a == "P" else a for a in args]
    res = run("extract", *args, "--columns", COLUMNS, "--label-map", "round", "--out", tmp_path / "out.letor")
    assert res.exit_code == 2 and message in res.output
    assert files(tmp_path) == []


def test_features_list_and_help_examples():
    res = run("features", "list")
    assert res.exit_code == 0
    lines = res.output.strip().splitlines()
    assert len(lines) >= 14 and lines[0].startswith("bm25 ") and any(line.startswith("trigram_cos") for line in lines)
    for command in (["extract"], ["features"], ["features", "list"]):
        help_text = run(*command, "--help").output
        assert "ltrfeat " in help_text and "Example" in help_text


def test_conflicting_doc_texts_need_a_policy(tmp_path):
    path = tmp_path / "pairs.csv"
    path.write_text("search_term,product_uid,product_title,relevance\na,1,x y,1\nb,1,x z,2\n")
    res = extract_pairs(path, tmp_path / "out.letor", "--lexical", "bm25")
    assert res.exit_code == 2 and "different" in res.output
    res = extract_pairs(path, tmp_path / "out.letor", "--lexical", "bm25", "--conflicts", "first")
    assert res.exit_code == 0 and "warning:" in res.output
    assert json.loads((tmp_path / "out.letor.features.json").read_text())["features"][0]["name"] == "bm25_doc"
