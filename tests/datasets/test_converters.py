"""Dataset converters on tiny fixtures written here, reproducing each source's quirks."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ltrfeat.cli.main import cli
from ltrfeat.datasets.converters import convert, convert_to_dir, resolve_inputs
from ltrfeat.datasets.converters._cranfield import read_records
from ltrfeat.core.trec import parse_qrels
from ltrfeat.core.errors import LtrfeatError, TextTableError
from ltrfeat.core.letor import read_letor
from ltrfeat.core.text import read_docs, read_judged_pairs, read_queries
from builders import dataset_path

# ---------------------------------------------------------------------------------- fixtures

HOMEDEPOT = (
    "id,product_uid,product_title,search_term,relevance\n"
    "2,100001,Simpson Strong-Tie 12-Gauge Angle,angle bracket,3\n"
    "3,100001,Simpson Strong-Tie 12-Gauge Angle,l bracket,2.5\n"
    '9,100002,"BEHR Premium 8 oz. Deckover\nSample, 30\xb0",deck over,2.33\n'
    "16,100005,Delta Vero 1-Handle Shower,rain shower head,1.33\n"
    "17,100005,Delta Vero 1-Handle Shower,shower only faucet,2.67\n"
    "18,100006,Whirlpool 1.9 cu. ft. Over the Range,convection otr,3\n"
    "20,100006,Whirlpool 1.9 cu. ft. Over the Range,microwave over stove,1\n"
    "21,100007,Lithonia Lighting Quantum 2-Light,emergency light,1.67\n"
    "23,100009,House of Fara 3/4 in. x 3 in. x 8 ft.,angle bracket,2\n"
    "24,100006,Whirlpool 1.9 cu. ft. Over-the-Range,otr microwave,2.33\n"
)


def homedepot_csv(tmp_path, text=HOMEDEPOT, encoding="latin-1"):
    path = tmp_path / "train.csv"
    path.write_bytes(text.encode(encoding))
    return path


CROWDFLOWER = (
    "id,query,product_title,product_description,median_relevance,relevance_variance\n"
    '1,bridal shower decorations,Accent Pillow with Heart Design - Red/Black,"Red satin accent pillow\nembroidered",1,0\n'
    "2,led christmas lights,Set of 10 Battery Operated Multi LED Train Christmas Lights - Clear Wire,,4,0\n"
    "4,projector,ViewSonic Pro8200 DLP Multimedia Projector,,4,0.471\n"
    "5,wine rack,Concept Housewares WR-44526 Solid-Wood Ceiling/Wall-Mount Wine Rack,Like a silent and sturdy tree,4,0\n"
    '7,light bulb,Wintergreen Lighting Christmas LED Light Bulb (Pack of 25),"WTGR1011\tChristmas",4,0\n'
    "8,led christmas lights,Set of 10 Battery Operated Train Lights,,3,0.5\n"
    '9,projector,Epson Home Cinema projector,"Bright\r\nand sharp",2,0.8\n'
)

# CRLF line endings, .W text spanning lines, query .I ids 001 002 004 (not 1 2 3).
CRAN_DOCS = (
    ".I 1\n.T\nexperimental investigation of the aerodynamics of a\nwing in a slipstream .\n.A\nbrenckman,m.\n"
    ".B\nj. ae. scs. 25, 1958, 324.\n.W\nexperimental investigation of the aerodynamics of a\n"
    "wing in a slipstream .\n  an experimental study of a wing in a propeller slipstream was\nmade .\n"
    ".I 2\n.T\nsimple shear flow past a flat plate in an incompressible fluid of small\nviscosity .\n.A\nting-yili\n"
    ".B\ndepartment of aeronautical engineering, rensselaer polytechnic\ninstitute\n.W\n"
    "simple shear flow past a flat plate in an incompressible fluid of small\nviscosity .\n"
    ".I 3\n.T\nthe boundary layer in simple shear flow past a flat plate .\n.A\nm. b. glauert\n.B\nbrit. 1955\n"
    ".W\nthe boundary layer in simple shear flow past a flat plate .\nthe boundary-layer equations are presented\n"
    ".I 4\n.T\napproximate solutions of the incompressible laminar\nboundary layer equations for a plate in shear flow .\n"
    ".A\nyen,k.t.\n.B\nj. ae. scs. 22, 1955, 728.\n.W\nthe two-dimensional steady boundary-layer problem for a flat\n"
    "plate in a shear flow of an incompressible fluid is considered .\n"
    ".I 5\n.T\none-dimensional transient heat conduction into a double-layer\nslab subjected to a linear heat input .\n"
    ".A\nburke,m.\n.B\nj. ae. scs.\n.W\nheat conduction into a double layer slab .\n"
).replace("\n", "\r\n")
CRAN_QRY = (
    ".I 001\n.W\nwhat similarity laws must be obeyed when constructing aeroelastic models\nof a wing in a slipstream .\n"
    ".I 002\n.W\nwhat are the structural and aeroelastic problems associated with flight\nof high speed aircraft .\n"
    ".I 004\n.W\nhow is the boundary layer of a flat plate in shear\nflow computed .\n"
).replace("\n", "\r\n")
# query 3 (the .I 004 one) is the boundary-layer query; code 1 = most relevant, -1 dropped.
CRAN_QREL = "1 1 2\r\n1 2 -1\r\n2 5 4\r\n3 3 1\r\n3 4 2\r\n3 5 4 \r\n3 1 3\r\n"


def cranfield_files(tmp_path, docs=CRAN_DOCS, qry=CRAN_QRY, qrel=CRAN_QREL):
    paths = []
    for name, text in (("cran.all.1400", docs), ("cran.qry", qry), ("cranqrel", qrel)):
        (tmp_path / name).write_bytes(text.encode())
        paths.append(tmp_path / name)
    return paths


BEIR_CORPUS = [
    {
        "_id": "d1",
        "title": "Aspirin and heart",
        "text": "Aspirin lowers the risk of heart attack.",
        "metadata": {"y": 1},
    },
    {"_id": "d2", "title": "", "text": "Statins lower cholesterol in the blood."},
    {"_id": "d3", "title": "Vitamin D", "text": "Vitamin D and bone\ndensity in adults.", "metadata": {}},
    {"_id": "d4", "title": "Heart rate", "text": "Exercise raises the heart rate."},
    {"_id": "d5", "title": "Sleep", "text": "Sleep helps memory."},
]
BEIR_QUERIES = [
    {"_id": "q1", "text": "does aspirin prevent heart attack"},
    {"_id": "q2", "text": "cholesterol statins"},
    {"_id": "q3", "text": "vitamin D bone"},
    {"_id": "q9", "text": "a query with no qrels"},
]
BEIR_QRELS = "query-id\tcorpus-id\tscore\nq1\td1\t2\nq1\td4\t0\nq2\td2\t1\nq3\td3\t1\nq3\td5\t1\n"


def beir_dir(tmp_path, qrels=BEIR_QRELS, corpus=BEIR_CORPUS, queries=BEIR_QUERIES):
    root = tmp_path / "beir"
    (root / "qrels").mkdir(parents=True)
    (root / "corpus.jsonl").write_text("".join(json.dumps(r) + "\n" for r in corpus))
    (root / "queries.jsonl").write_text("".join(json.dumps(r) + "\n" for r in queries))
    (root / "qrels" / "test.tsv").write_text(qrels)
    return root


MSMARCO_COLLECTION = (
    "0\tThe presence of communication amid scientific minds was important.\n"
    "1\tThe Manhattan Project and its atomic bomb helped bring an end to World War II.\n"
    "2\tEssay on the Manhattan Project - The Manhattan Project was to see if making an atomic bomb "
    "was possible.\n"
    "3\tA hammer is a tool.\n"
)
MSMARCO_QUERIES = (
    "1048585\twhat is paula deen's brother\n2\tmanhattan project atomic bomb\n3\thammer tool\n"
    "4\twhat ended world war II\n"
)
MSMARCO_QRELS = "2\t0\t1\t1\n2 0 3 -2\n3 0 3 1\n4 0 1 2\n"


def msmarco_files(tmp_path):
    paths = []
    for name, text in (
        ("collection.tsv", MSMARCO_COLLECTION),
        ("queries.tsv", MSMARCO_QUERIES),
        ("qrels.tsv", MSMARCO_QRELS),
    ):
        (tmp_path / name).write_text(text)
        paths.append(tmp_path / name)
    return paths


def fixture_inputs(name, tmp_path):
    if name == "homedepot":
        return [homedepot_csv(tmp_path)]
    if name == "crowdflower":
        return [homedepot_csv(tmp_path, CROWDFLOWER, "utf-8")]
    if name == "cranfield":
        return cranfield_files(tmp_path)
    if name == "trec":
        return [beir_dir(tmp_path)]
    return msmarco_files(tmp_path)


ALL = ["homedepot", "crowdflower", "cranfield", "trec", "msmarco"]


@pytest.fixture
def runner():
    return CliRunner()


def run(runner, *args):
    return runner.invoke(cli, [str(a) for a in args], catch_exceptions=False)


# ---------------------------------------------------------------------------------- every source


@pytest.mark.filterwarnings("ignore::ltrfeat.core.text.TextTableWarning")  # empty titles / descriptions
@pytest.mark.parametrize("name", ALL)
def test_output_validates_and_reads_back(name, tmp_path, runner):
    out = tmp_path / "out"
    result = run(
        runner,
        "datasets",
        "convert",
        name,
        *fixture_inputs(name, tmp_path),
        "--out",
        out,
        "--split",
        "0.4,0.3,0.3",
        "--seed",
        "3",
        "--no-progress",
    )
    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in out.iterdir()) == sorted(
        [".ltrfeat-output", "pairs.tsv", "queries.tsv", "docs.tsv", "convert.json"]
        + [f"{s}.letor{x}" for s in ("all", "train", "vali", "test") for x in ("", ".features.json")]
    )
    for part in ("all", "train", "vali", "test"):
        check = run(runner, "letor", "validate", out / f"{part}.letor")
        assert check.exit_code == 0 and check.output.startswith("ok"), check.output
    ranking = read_letor(out / "all.letor")
    pairs = read_judged_pairs(out / "pairs.tsv")
    queries, docs = read_queries(out / "queries.tsv"), read_docs(out / "docs.tsv", missing="keep")
    assert ranking.n_features == 0 and ranking.is_contiguous()
    assert ranking.qid.tolist() == pairs["qid"].tolist() and ranking.docid.tolist() == pairs["docid"].tolist()
    assert ranking.label.tolist() == pairs["label"].tolist()
    assert set(queries["qid"]) == set(pairs["qid"]) and set(docs["docid"]) == set(pairs["docid"])
    parts = [read_letor(out / f"{s}.letor") for s in ("train", "vali", "test")]
    assert sum(len(p) for p in parts) == len(ranking)
    assert not set(parts[0].qid) & set(parts[2].qid)
    summary = json.loads((out / "convert.json").read_text())
    assert summary["source"] == name and summary["counts"]["pairs"] == len(pairs)
    assert set(summary["outputs"]) == {p.name for p in out.iterdir()} - {"convert.json", ".ltrfeat-output"}
    assert all(len(v["sha256"]) == 64 for v in summary["inputs"].values())
    for table in ("pairs.tsv", "queries.tsv", "docs.tsv"):
        assert "\r" not in (out / table).read_text()


@pytest.mark.parametrize("name", ALL)
def test_conversion_is_reproducible(name, tmp_path):
    inputs = fixture_inputs(name, tmp_path)
    a = convert_to_dir(name, inputs, tmp_path / "a", split=(0.4, 0.3, 0.3), seed=5)
    b = convert_to_dir(name, inputs, tmp_path / "b", split=(0.4, 0.3, 0.3), seed=5)
    assert a["outputs"] == b["outputs"]
    c = convert_to_dir(name, inputs, tmp_path / "c", split=(0.4, 0.3, 0.3), seed=6)
    assert c["outputs"]["all.letor"] == a["outputs"]["all.letor"]


# ---------------------------------------------------------------------------------- sources


def test_homedepot_labels_latin1_and_retitled_products(tmp_path):
    conv = convert("homedepot", [homedepot_csv(tmp_path)])
    p = conv.pairs
    assert dict(zip(p["raw_label"], p["label"])) == {
        "3": 6,
        "2.5": 5,
        "2.33": 4,
        "1.33": 1,
        "2.67": 5,
        "1": 0,
        "1.67": 2,
        "2": 3,
    }
    # rows of a query are contiguous: both "angle bracket" rows come first
    assert p["query"].tolist()[:2] == ["angle bracket", "angle bracket"]
    assert "BEHR Premium 8 oz. Deckover Sample, 30\xb0" in p["doc"].tolist()  # newline cleaned, Latin-1 decoded
    assert list(conv.docs.columns) == ["docid", "title"]
    assert conv.docs.set_index("docid").loc["100006", "title"] == "Whirlpool 1.9 cu. ft. Over the Range"
    assert any("different document texts" in n for n in conv.notes)
    assert convert("homedepot", [homedepot_csv(tmp_path)], label_map="threshold:2").pairs["label"].max() == 1


def test_crowdflower_labels_fields_and_derived_docids(tmp_path):
    conv = convert("crowdflower", fixture_inputs("crowdflower", tmp_path))
    p = conv.pairs
    assert sorted(set(p["label"])) == [0, 1, 2, 3]
    assert list(conv.docs.columns) == ["docid", "title", "body"]
    row = p[p["query"] == "light bulb"].iloc[0]
    assert row["body"] == "WTGR1011 Christmas" and row["doc"] == row["title"] + " " + row["body"]
    assert p[p["query"] == "projector"]["body"].isna().tolist() == [True, False]
    assert p["docid"].str.fullmatch(r"d[0-9a-f]{12}").all() and p["docid"].is_unique
    assert p["relevance_variance"].tolist()[:1] == ["0"]


def test_cranfield_quirks(tmp_path):
    conv = convert("cranfield", cranfield_files(tmp_path))
    q = conv.queries.set_index("qid")
    assert q.loc["3", "cran_id"] == "004" and q.loc["3", "query"].startswith("how is the boundary layer")
    assert q.loc["1", "query"].endswith("models of a wing in a slipstream .")  # .W spans lines
    docs = conv.docs.set_index("docid")
    assert docs.loc["1", "title"] == "experimental investigation of the aerodynamics of a wing in a slipstream ."
    assert "brenckman" not in " ".join(conv.pairs["doc"])  # .A and .B are not text fields
    labels = conv.pairs.set_index(["qid", "docid"])["label"]
    assert labels[("3", "3")] == 4 and labels[("3", "4")] == 3 and labels[("3", "5")] == 1
    assert labels[("1", "1")] == 3
    assert ("1", "2") not in labels.index or labels[("1", "2")] == 0  # code -1 dropped: unjudged
    assert conv.labels["dropped_qrels_code_minus_1"] == 1
    assert conv.pairs.groupby("qid")["bm25_rank"].apply(lambda r: r.tolist() == list(range(1, len(r) + 1))).all()
    r = conv.retrieval
    assert r["judged_relevant"] == 6 and r["relevant_in_top_k"] + r["relevant_outside_top_k"] == 6


def test_relevant_outside_top_k_is_counted(tmp_path):
    inputs = cranfield_files(tmp_path)
    full = convert("cranfield", inputs, k=100).retrieval
    top1 = convert("cranfield", inputs, k=1)
    assert top1.pairs.groupby("qid").size().max() == 1
    relevant_first = int((top1.pairs["label"] > 0).sum())
    assert top1.retrieval["relevant_in_top_k"] == relevant_first
    assert top1.retrieval["relevant_outside_top_k"] == full["judged_relevant"] - relevant_first
    assert full["relevant_outside_top_k"] < top1.retrieval["relevant_outside_top_k"]


def test_trec_beir_layout(tmp_path):
    conv = convert("trec", [beir_dir(tmp_path)])
    assert set(conv.queries["qid"]) == {"q1", "q2", "q3"}  # q9 has no qrels
    assert conv.retrieval["queries_in_file"] == 4 and conv.retrieval["judged_queries"] == 3
    labels = conv.pairs.set_index(["qid", "docid"])["label"]
    assert labels[("q1", "d1")] == 2 and labels[("q1", "d4")] == 0 and labels[("q2", "d2")] == 1
    assert conv.docs.set_index("docid").loc["d3", "body"] == "Vitamin D and bone density in adults."
    assert pd.isna(conv.docs.set_index("docid").loc["d2", "title"])


def test_trec_classic_qrels_and_negative_grades(tmp_path):
    root = beir_dir(tmp_path, qrels="q1 0 d1 2\nq1 0 d4 -2\nq2 0 d2 1\n")
    conv = convert("trec", [root / "corpus.jsonl", root / "queries.jsonl", root / "qrels" / "test.tsv"])
    labels = conv.pairs.set_index(["qid", "docid"])["label"]
    assert labels[("q1", "d4")] == 0 and conv.labels["negative_grades_as_0"] == 1
    assert conv.retrieval["judged_relevant"] == 2


def test_msmarco_tsv_layout_and_untitled_field_dropped(tmp_path):
    conv = convert("msmarco", msmarco_files(tmp_path))
    assert conv.fields == ("body",) and list(conv.docs.columns) == ["docid", "body"]
    assert conv.queries["qid"].tolist() == ["2", "3", "4"]  # 1048585 has no qrels
    p = conv.pairs
    assert set(p[p["qid"] == "2"]["docid"]) == {"1", "2"} and labels_of(p)[("2", "1")] == 1
    assert labels_of(p)[("3", "3")] == 1 and labels_of(p)[("4", "1")] == 2


def labels_of(pairs):
    return pairs.set_index(["qid", "docid"])["label"]


def test_inputs_from_a_directory_and_wrong_counts(tmp_path):
    paths = cranfield_files(tmp_path)
    assert resolve_inputs("cranfield", [tmp_path]) == dict(zip(("docs", "queries", "qrels"), paths))
    with pytest.raises(TextTableError, match="cranfield needs 3 input"):
        resolve_inputs("cranfield", paths[:2])
    with pytest.raises(TextTableError, match="no docs file"):
        resolve_inputs("trec", [tmp_path])
    with pytest.raises(TextTableError, match="input file not found"):
        resolve_inputs("homedepot", [tmp_path / "nope.csv"])
    with pytest.raises(TextTableError, match="unknown data set"):
        resolve_inputs("letor", [tmp_path])


# ---------------------------------------------------------------------------------- bad input


def expect_error(runner, tmp_path, name, inputs, *patterns, extra=()):
    out = tmp_path / "out"
    result = runner.invoke(cli, ["datasets", "convert", name, *map(str, inputs), "--out", str(out), *extra])
    assert result.exit_code == 2, result.output
    line = result.output.strip()
    assert line.startswith("error: ") and "\n" not in line
    for pattern in patterns:
        assert pattern in line, line
    assert not out.exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".out.")]  # no staging left
    return line


def test_errors_name_file_line_and_fix(tmp_path, runner):
    hd = homedepot_csv(tmp_path, HOMEDEPOT.replace("search_term", "query"))
    expect_error(runner, tmp_path, "homedepot", [hd], "train.csv:1:", "no column 'search_term'")
    hd = homedepot_csv(tmp_path)
    expect_error(
        runner, tmp_path, "homedepot", [hd], "train.csv:5:", "cannot decode", "cp1252", extra=["--encoding", "utf-8"]
    )
    expect_error(
        runner, tmp_path, "homedepot", [hd], "outside the linear map range", extra=["--label-map", "linear:1:2:3"]
    )
    expect_error(
        runner, tmp_path, "cranfield", cranfield_files(tmp_path), "takes no label map", extra=["--label-map", "round"]
    )
    cf = homedepot_csv(tmp_path, CROWDFLOWER.replace("1,bridal shower decorations", "1,"), "utf-8")
    expect_error(runner, tmp_path, "crowdflower", [cf], "train.csv:2:", "empty 'query'")


def test_qrels_errors(tmp_path, runner):
    bad = beir_dir(tmp_path, qrels=BEIR_QRELS + "q7\td1\t1\n")
    expect_error(runner, tmp_path, "trec", [bad], "test.tsv:7:", "query 'q7'", "not in the query file")
    (bad / "qrels" / "test.tsv").write_text(BEIR_QRELS + "q1\td99\t1\n")
    expect_error(runner, tmp_path, "trec", [bad], "test.tsv:7:", "document 'd99'")
    (bad / "qrels" / "test.tsv").write_text(BEIR_QRELS + "q1\td1\t1.5\n")
    expect_error(runner, tmp_path, "trec", [bad], "test.tsv:7:", "not an integer")
    (bad / "qrels" / "test.tsv").write_text(BEIR_QRELS + "q1\td1\t1\n")
    expect_error(runner, tmp_path, "trec", [bad], "test.tsv:7:", "different grades")
    (bad / "corpus.jsonl").write_text('{"_id": "d1", "text": "x"}\n{"_id": "d2", "text": \n')
    expect_error(runner, tmp_path, "trec", [bad], "corpus.jsonl:2:", "invalid JSON")


def test_cranfield_errors(tmp_path, runner):
    files = cranfield_files(tmp_path, qrel=CRAN_QREL + "4 1 2\r\n")
    expect_error(runner, tmp_path, "cranfield", files, "cranqrel:8:", "outside 1..3", "position")
    files = cranfield_files(tmp_path, qrel=CRAN_QREL + "1 3 7\r\n")
    expect_error(runner, tmp_path, "cranfield", files, "cranqrel:8:", "code 7")
    files = cranfield_files(tmp_path, docs=CRAN_DOCS.replace(".B\r\nbrit", ".X\r\nbrit"))
    expect_error(runner, tmp_path, "cranfield", files, "cran.all.1400:", "unknown field marker .X")
    files = cranfield_files(tmp_path, qry="what is it\r\n" + CRAN_QRY)
    expect_error(runner, tmp_path, "cranfield", files, "cran.qry:1:", "before the first .I")


def test_output_directory_rules(tmp_path, runner):
    inputs = fixture_inputs("homedepot", tmp_path)
    out = tmp_path / "out"
    out.mkdir()
    (out / "keep.txt").write_text("x")
    result = runner.invoke(cli, ["datasets", "convert", "homedepot", *map(str, inputs), "--out", str(out)])
    assert result.exit_code == 2 and "not empty" in result.output and (out / "keep.txt").exists()
    overwrite = ["datasets", "convert", "homedepot", *map(str, inputs), "--out", str(out), "--overwrite"]
    result = runner.invoke(cli, overwrite)
    assert result.exit_code == 2 and "marker" in result.output and (out / "keep.txt").exists()
    (out / ".ltrfeat-output").write_text("{}")  # as an earlier conversion leaves it
    result = runner.invoke(cli, overwrite)
    assert result.exit_code == 0 and not (out / "keep.txt").exists() and (out / "all.letor").exists()
    with pytest.raises(LtrfeatError, match="too few"):
        convert_to_dir("homedepot", inputs, tmp_path / "x", split=(0.98, 0.01, 0.01))
    assert not (tmp_path / "x").exists()
    result = runner.invoke(
        cli, ["datasets", "convert", "homedepot", *map(str, inputs), "--out", str(tmp_path / "y"), "--split", "0.5,0.5"]
    )
    assert result.exit_code == 2 and "bad split" in result.output


def test_cli_reports_candidates_outside_top_k(tmp_path, runner):
    cranfield_files(tmp_path)
    result = run(
        runner, "datasets", "convert", "cranfield", tmp_path, "--out", tmp_path / "c", "--k", "1", "--stem", "english"
    )
    assert result.exit_code == 0
    assert "judged relevant documents retrieved" in result.output and "outside the top 1" in result.output
    summary = json.loads((tmp_path / "c" / "convert.json").read_text())
    assert summary["retrieval"]["analyzer"]["stemmer"] == "english" and summary["options"]["k"] == 1


# ---------------------------------------------------------------------------------- parser properties

_WORD = st.text(alphabet="abcdefghij0123456789-,", min_size=1, max_size=8)
_TEXT = st.lists(_WORD, min_size=1, max_size=12)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(records=st.lists(st.tuples(_TEXT, _TEXT, st.integers(1, 4)), min_size=1, max_size=6), crlf=st.booleans())
def test_cranfield_records_round_trip(tmp_path, records, crlf):
    lines = []
    for i, (title, body, width) in enumerate(records):
        lines += [
            f".I {i + 1}",
            ".T",
            *[" ".join(title[j : j + width]) for j in range(0, len(title), width)],
            ".A",
            "someone",
            ".W",
            *[" ".join(body[j : j + width]) for j in range(0, len(body), width)],
        ]
    path = tmp_path / "cran.all"
    path.write_bytes(("\r\n" if crlf else "\n").join(lines).encode())
    got = read_records(path, "utf-8", {"T": "title", "W": "body"})
    assert [(r["id"], r["title"], r["body"]) for r in got] == [
        (str(i + 1), " ".join(t), " ".join(b)) for i, (t, b, _) in enumerate(records)
    ]


_ID = st.text(alphabet="abcXYZ0123456789_-.", min_size=1, max_size=6)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    rows=st.dictionaries(st.tuples(_ID, _ID), st.integers(-2, 5), min_size=1, max_size=20),
    trec=st.booleans(),
    header=st.booleans(),
    sep=st.sampled_from(["\t", " "]),
)
def test_qrels_round_trip(tmp_path, rows, trec, header, sep):
    body = [sep.join([q, "0", d, str(g)] if trec else [q, d, str(g)]) for (q, d), g in rows.items()]
    if header and not trec:
        body.insert(0, sep.join(["query-id", "corpus-id", "score"]))
    path = tmp_path / "qrels.tsv"
    path.write_text("\n".join(body) + "\n")
    got = parse_qrels(path, "utf-8").frame
    assert {(q, d): g for q, d, g in zip(got["qid"], got["docid"], got["grade"])} == rows


# ---------------------------------------------------------------------------------- real data


def test_real_home_depot(tmp_path):
    path = dataset_path("home_depot", "raw", "train.csv")
    summary = convert_to_dir("homedepot", [path], tmp_path / "hd", split=(0.6, 0.2, 0.2), seed=1)
    assert summary["counts"] == {
        "queries": 11795,
        "docs": 54667,
        "pairs": 74067,
        "fields": ["title"],
        "splits": summary["counts"]["splits"],
    }
    assert summary["labels"]["histogram"]["6"] == 19125 and summary["labels"]["histogram"]["0"] == 2105
    assert summary["inputs"]["pairs"]["sha256"].startswith("4a754892f569")
    assert np.isclose(sum(v["queries"] for v in summary["counts"]["splits"].values()), 11795)
    assert pd.read_csv(tmp_path / "hd" / "queries.tsv", sep="\t", dtype=str)["qid"].is_unique
