"""Each converter's output round-trips through ``ablate --pairs --quick``.

A generated world is written in each source's own file format, converted, validated and ablated, so the
converters are exercised on collections large enough for query folds (the quirk fixtures in
test_converters.py are too small for that).
"""

from __future__ import annotations

import json

import pandas as pd
import pytest
from click.testing import CliRunner

from ltrfeat.cli.main import cli
from ltrfeat.datasets.synth import generate_world

TINY_ABLATE = [
    "--quick",
    "--k-folds",
    "3",
    "--lexical",
    "bm25,coverage",
    "--encoder",
    "dssm:generalized",
    "--encoder-option",
    "epochs=1",
    "--encoder-option",
    'sizes={"hidden": [16], "out": 8}',
    "--n-estimators",
    "10",
    "--resamples",
    "200",
]


@pytest.fixture(scope="module")
def world():
    w = generate_world(seed=5, n_queries=40, n_docs=150, n_click_queries=40)
    judged = w.judged.copy()
    judged["n"] = judged.groupby("qid").cumcount()
    return w.docs, judged


def write_source(name, docs, judged, root):
    """The world in ``name``'s own layout; returns the converter's input paths."""
    root.mkdir()
    if name == "homedepot":
        frame = pd.DataFrame(
            {
                "id": range(1, len(judged) + 1),
                "product_uid": judged["docid"],
                "product_title": judged["doc"],
                "search_term": judged["query"],
                "relevance": 1 + judged["label"] * 2 / 3,
            }
        )
        frame.to_csv(root / "train.csv", index=False, encoding="latin-1")
        return [root / "train.csv"]
    if name == "crowdflower":
        desc = docs.set_index("docid")["description"]
        frame = pd.DataFrame(
            {
                "id": range(1, len(judged) + 1),
                "query": judged["query"],
                "product_title": judged["doc"],
                "product_description": desc.loc[judged["docid"]].values,
                "median_relevance": judged["label"] + 1,
                "relevance_variance": 0.0,
            }
        )
        frame.to_csv(root / "train.csv", index=False)
        return [root / "train.csv"]
    queries = judged.drop_duplicates("qid")[["qid", "query"]]
    qrels = judged[judged["label"] > 0]
    if name == "cranfield":
        number = {d: i + 1 for i, d in enumerate(docs["docid"])}
        qnum = {q: i + 1 for i, q in enumerate(queries["qid"])}
        (root / "cran.all.1400").write_bytes(
            "".join(
                f".I {number[d]}\r\n.T\r\n{t}\r\n.A\r\nanon\r\n.B\r\nsynth\r\n.W\r\n{b}\r\n"
                for d, t, b in zip(docs["docid"], docs["title"], docs["description"])
            ).encode()
        )
        (root / "cran.qry").write_bytes(
            "".join(
                f".I {qnum[q] * 2:03d}\r\n.W\r\n{text}\r\n" for q, text in zip(queries["qid"], queries["query"])
            ).encode()
        )
        (root / "cranqrel").write_bytes(
            "".join(
                f"{qnum[q]} {number[d]} {4 - int(label)}\r\n"
                for q, d, label in zip(qrels["qid"], qrels["docid"], qrels["label"])
            ).encode()
        )
        return [root / "cran.all.1400", root / "cran.qry", root / "cranqrel"]
    if name == "trec":
        (root / "qrels").mkdir()
        (root / "corpus.jsonl").write_text(
            "".join(
                json.dumps({"_id": d, "title": t, "text": b}) + "\n"
                for d, t, b in zip(docs["docid"], docs["title"], docs["description"])
            )
        )
        (root / "queries.jsonl").write_text(
            "".join(json.dumps({"_id": q, "text": t}) + "\n" for q, t in zip(queries["qid"], queries["query"]))
        )
        (root / "qrels" / "test.tsv").write_text(
            "query-id\tcorpus-id\tscore\n"
            + "".join(f"{q}\t{d}\t{int(label)}\n" for q, d, label in zip(qrels["qid"], qrels["docid"], qrels["label"]))
        )
        return [root]
    (root / "collection.tsv").write_text("".join(f"{d}\t{t}\n" for d, t in zip(docs["docid"], docs["title"])))
    (root / "queries.tsv").write_text("".join(f"{q}\t{t}\n" for q, t in zip(queries["qid"], queries["query"])))
    (root / "qrels.tsv").write_text(
        "".join(f"{q}\t0\t{d}\t{int(label)}\n" for q, d, label in zip(qrels["qid"], qrels["docid"], qrels["label"]))
    )
    return [root / "collection.tsv", root / "queries.tsv", root / "qrels.tsv"]


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("name", ["homedepot", "crowdflower", "cranfield", "trec", "msmarco"])
def test_converted_collection_validates_and_ablates(world, tmp_path, name):
    runner = CliRunner()
    inputs = write_source(name, *world, tmp_path / "src")
    out = tmp_path / "conv"
    args = ["datasets", "convert", name, *inputs, "--out", out, "--no-progress"]
    if name in ("cranfield", "trec", "msmarco"):
        args += ["--k", "10"]
    result = runner.invoke(cli, [str(a) for a in args])
    assert result.exit_code == 0, result.output
    check = runner.invoke(cli, ["letor", "validate", str(out / "all.letor")])
    assert check.exit_code == 0, check.output
    result = runner.invoke(
        cli, ["ablate", "--pairs", str(out / "pairs.tsv"), *TINY_ABLATE, "--report", str(tmp_path / "report")]
    )
    assert result.exit_code == 0, result.output
    report = json.loads((tmp_path / "report" / "report.json").read_text())
    assert {c["variant"] for c in report["comparisons"] if c["baseline"] == "lexical"} == {"lexical+dssm-generalized"}
    assert report["verdict"]["recommended"]
    assert report["config"]["cross_fitting"]["outer_folds"] == 3
