"""The robustness catalogue: bad input files and bad CLI arguments, run through every command.

Each case must end with a non-zero exit code and exactly one line of error output (``error: ...``)
naming the file, line or option concerned, with no traceback, and must leave no file behind (the
workspace is listed before and after). Cases run in process through click's CliRunner; the ones
that could crash natively (damaged model files) run in a child process.

Add a case by adding a row to ``CASES``: ``(id, argv, needle)``; ``{w}`` in an argument is the
workspace directory and ``{d}`` the repository's ``data/`` sample (read only).
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from ltrfeat.cli.main import cli
from ltrfeat.core.letor import write_letor
from builders import small, synthetic

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "data"
NAMES = ["bm25_title", "tfidf", "noise_a", "noise_b", "len_title", "cos"]

GOOD_LINES = b"".join(b"%d qid:%d 1:0.5 2:%d 3:1 #docid = d%d\n" % (i % 3, i // 4, i % 5, i) for i in range(40))


def _lines(text: str) -> bytes:
    return text.encode()


# name -> bytes of a bad (or auxiliary) input file written into the workspace
BAD_FILES = {
    "badlog/events-000001.jsonl": b'{"session": "s"}\n{oops\n',
    "plainlog/events-000001.jsonl": json.dumps(
        {"session": "s", "query": "q", "docid": "d", "position": 1, "clicked": 0, "timestamp": "t"}
        | {"impression_id": "i", "ranker": "a", "team": "A", "method": "none", "action": "impression"}
    ).encode()
    + b"\n",
    "oldreport/.ltrfeat-output": b'{"written_by": "ltrfeat", "kind": "report"}\n',
    "oldreport/cache/kept.json": b"{}\n",
    "cr_only.letor": GOOD_LINES.replace(b"\n", b"\r"),
    "mixed_cr.letor": GOOD_LINES[:200] + b"\r" + GOOD_LINES[200:],
    "cut.letor.gz": gzip.compress(GOOD_LINES)[:60],
    "badmethod.letor.gz": gzip.compress(GOOD_LINES)[:2] + b"\x07" + gzip.compress(GOOD_LINES)[3:],
    "garbage.letor.gz": b"\x1f\x8b\x08\x00garbage-garbage-garbage",
    "empty.letor": b"",
    "only_comments.letor": b"# nothing here\n\n   \n",
    "binary.letor": bytes(range(256)) * 4,
    "no_qid.letor": b"1 1:0.5 2:0.1\n0 1:0.3 2:0.2\n",
    "label_word.letor": b"high qid:1 1:0.5\n",
    "label_nan.letor": b"nan qid:1 1:0.5\n0 qid:1 1:0.1\n",
    "label_inf.letor": b"inf qid:1 1:0.5\n0 qid:1 1:0.1\n",
    "empty_qid.letor": b"1 qid: 1:0.5\n",
    "fid_zero.letor": b"1 qid:1 0:0.5\n",
    "fid_word.letor": b"1 qid:1 x:0.5\n",
    "fid_lead0.letor": b"1 qid:1 01:0.5\n",
    "fid_huge.letor": b"1 qid:1 1234567890:0.5\n",
    "fid_order.letor": b"1 qid:1 2:0.5 1:0.3\n",
    "fid_dup.letor": b"1 qid:1 2:0.5 2:0.3\n",
    "value_word.letor": b"1 qid:1 1:abc\n",
    "value_empty.letor": b"1 qid:1 1:\n",
    "two_colons.letor": b"1 qid:1 1:2:3\n",
    "dup_qid.letor": b"1 qid:1 qid:2 1:0.5\n",
    "qid_bad_utf8.letor": b"1 qid:\xff\xfe 1:0.5\n",
    "comment_bad_utf8.letor": b"1 qid:1 1:0.5 #\xff\xfe\n",
    "value_nan.letor": b"1 qid:1 1:nan\n0 qid:1 1:0.5\n",
    "noncontig.letor": b"1 qid:1 1:1\n0 qid:2 1:1\n1 qid:1 1:0\n",
    "neg_label.letor": b"-1 qid:1 1:0.5 2:1 3:1 4:1 5:1 6:1\n1 qid:1 1:0.1 2:1 3:1 4:1 5:1 6:1\n",
    "big_label.letor": b"1100 qid:1 1:0.5 2:1 3:1 4:1 5:1 6:1\n1 qid:1 1:0.1 2:1 3:1 4:1 5:1 6:1\n",
    "huge_label.letor": b"1e300 qid:1 1:0.5 2:1 3:1 4:1 5:1 6:1\n1 qid:1 1:0.1 2:1 3:1 4:1 5:1 6:1\n",
    "frac_label.letor": b"1.5 qid:1 1:0.5 2:1 3:1 4:1 5:1 6:1\n1 qid:1 1:0.1 2:1 3:1 4:1 5:1 6:1\n",
    "other_features.letor": b"1 qid:1 7:0.5\n0 qid:1 7:0.1\n",
    "unknown_qid.letor": b"1 qid:zzz 1:0.5 #docid = D00001\n0 qid:zzz 1:0.1 #docid = D00002\n",
    "sparse.svm": b"1 1:0.5\n0 1:0.1\n1 1:0.3\n",
    "groups_bad.svm": b"1 1:0.5\n0 1:0.1\n",
    "groups_bad.svm.query": b"two\n",
    "groups_zero.svm": b"1 1:0.5\n0 1:0.1\n",
    "groups_zero.svm.query": b"0\n2\n",
    "groups_short.svm": b"1 1:0.5\n0 1:0.1\n1 1:0.2\n",
    "groups_short.svm.query": b"2\n",
    "groups_long.svm": b"1 1:0.5\n0 1:0.1\n",
    "groups_long.svm.query": b"2\n3\n",
    "weights_bad.letor": b"1 qid:1 1:0.5\n0 qid:1 1:0.1\n",
    "weights_bad.letor.weight": b"1\nheavy\n",
    "weights_short.letor": b"1 qid:1 1:0.5\n0 qid:1 1:0.1\n",
    "weights_short.letor.weight": b"1\n",
    "sidecar_utf8.letor": b"1 qid:1 1:0.5\n",
    "sidecar_utf8.letor.features.json": b"\xff\xfe{}",
    "sidecar_json.letor": b"1 qid:1 1:0.5\n",
    "sidecar_json.letor.features.json": b"{not json",
    "sidecar_kind.letor": b"1 qid:1 1:0.5\n",
    "sidecar_kind.letor.features.json": b'{"format": "something else"}',
    "sidecar_ids.letor": b"1 qid:1 1:0.5\n",
    "sidecar_ids.letor.features.json": b'{"format": "ltrfeat.features/1", "features": [{"id": "x", "name": "a"}]}',
    # text tables
    "pairs_hash.tsv": _lines("qid\tquery\tdocid\tdoc\tlabel\nq#1\tred hose\td1\tgarden hose\t1\n"),
    "pairs_space.tsv": _lines("qid\tquery\tdocid\tdoc\tlabel\nq 1\tred hose\td1\tgarden hose\t1\n"),
    "pairs_label.tsv": _lines("query\tdoc\tlabel\nred hose\tgarden hose\thigh\n"),
    "pairs_frac.tsv": _lines("query\tdoc\tlabel\nred hose\tgarden hose\t1.5\n"),
    "pairs_fields.tsv": _lines("query\tdoc\tlabel\nred hose\tgarden hose\n"),
    "pairs_nodoc.tsv": _lines("query\tlabel\nred hose\t1\n"),
    "pairs_empty.tsv": b"",
    "pairs_header.tsv": _lines("query\tdoc\tlabel\n"),
    "pairs_latin1.tsv": "query\tdoc\tlabel\nchaise caf\u00e9\tcaf\u00e9 chair\t1\n".encode("latin-1"),
    "pairs_dupcol.tsv": _lines("query\tquery\tdoc\tlabel\na\tb\tc\t1\n"),
    "pairs.jsonl": _lines('{"query": "a", "doc": "b", "label": 1}\n{not json}\n'),
    "pairs_list.jsonl": _lines("[1, 2]\n"),
    "pairs_bad.csv": _lines('query,doc,label\n"a,b,1\n'),
    "pairs.xyz": _lines("query\tdoc\tlabel\na\tb\t1\n"),
    "pairs.tsv.gz": gzip.compress(b"query\tdoc\tlabel\na\tb\t1\n")[:20],
    "pairs_bin.parquet": b"PAR1 not really parquet",
    "queries_dup.tsv": _lines("qid\tquery\nq1\ta\nq1\tb\n"),
    "queries_empty_id.tsv": _lines("qid\tquery\n\ta\n"),
    "docs_nofield.tsv": _lines("docid\nd1\n"),
    "json_bad.json": b"{not json",
    "json_list.json": b"[1, 2, 3]",
    "not_a_bundle.ltrenc": b"label qid:1 1:0.5\n",
    "short.ltrenc": b"\x01\x02",
    "not_npz.npz": b"not a zip file",
    # hostile inputs, round two (issue 34)
    "endless.letor.gz": gzip.compress(b"1" * 2**20, compresslevel=9) * 1024,  # one 1 GiB line from ~1 MB
    "longline.letor": b"1 qid:1 " + b" ".join(b"%d:0.5" % i for i in range(1, 400)) + b"\n0 qid:1 1:0.1\n",
    "wide150k.letor": b"".join(
        b"%d qid:%d " % (r % 2, r // 10) + b" ".join(b"%d:1" % (r * 1000 + j + 1) for j in range(1000)) + b"\n"
        for r in range(150)
    ),
    "overflow.letor": b"\n".join(
        line.replace(b" #", b" 4:1e39 #") if i == 1 else line for i, line in enumerate(GOOD_LINES.split(b"\n"))
    ),
    "flat_labels.letor": b"".join(
        b"1 qid:%d 1:0.%d 2:0.5 #docid = d%d\n" % (q, d, 4 * q + d) for q in range(5) for d in range(4)
    ),
    "one_doc.letor": b"".join(b"%d qid:%d 1:0.%d 2:0.5\n" % (q % 3, q, q % 10) for q in range(20)),
    "no_variance.letor": b"".join(b"%d qid:%d 1:0.%d 2:0.5\n" % (q % 2, q, d) for q in range(6) for d in range(3)),
    "deep.json": b'{"seed": ' + b"[" * 100_000 + b"]" * 100_000 + b"}",
    "deep.toml": b"seed = " + b"[" * 100_000 + b"]" * 100_000,
    "deep.yaml": b"seed: " + b"[" * 100_000 + b"]" * 100_000,
    "deep_block.yaml": b"seed:\n" + b"- " * 100_000 + b"x",
    "bigint.json": b'{"seed": ' + b"9" * 5000 + b"}",
    "bigint.toml": b"seed = " + b"9" * 5000,
    "bigint.yaml": b"seed: " + b"9" * 5000,
    "laughs.yaml": (
        b"a: &a [x, x, x, x, x, x, x, x, x, x]\n"
        + b"".join(b"%c: &%c [%s]\n" % (98 + i, 98 + i, b", ".join([b"*%c" % (97 + i)] * 10)) for i in range(8))
    ),
    "loop.yaml": b"a: &a [*a]\n",
    "thesis/thesis.tex": b"\\documentclass{article}",
    "thesis/sub/data.csv": b"a,b\n1,2\n",
    "cutreport/report.json": json.dumps(
        {"results": [{"feature_set": "a", "metric": "ndcg@1", "n_queries": 4}]}
    ).encode(),
    "cutreport/per_query.tsv": (
        b"feature_set\tfold\tqid\tn_docs\tn_relevant\tndcg@1\na\tFold1\tq1\t5\t1\t0.5\na\tFold1\tq2\t5\t2\t1\n"
    ),
    "run.trec": b"q1 Q0 D00001 1 2.5 base\n",
    # received files that would run or reach outside themselves (docs/reliability.md, "What a received file can do")
    "evil_st/modules.json": json.dumps(
        [{"idx": 0, "path": "", "type": "sentence_transformers.models.Transformer"}]
    ).encode(),
    "evil_st/config.json": json.dumps({"model_type": "evil", "auto_map": {"AutoModel": "evil.EvilModel"}}).encode(),
    "evil_st/evil.py": b"open('PWNED', 'w')\n",
    "badreport/report.json": json.dumps(
        {"format": "ltrfeat.ablation/1", "summary": "s", "runs": {"qrels": "q", "directory": 7}}
    ).encode(),
    # click logs (ltrfeat clicks ...)
    "clicks_pos0.tsv": b"session\tquery\tdocid\tposition\tclicked\ns\tq\tD1\t1\t1\ns\tq\tD2\t0\t0\n",
    "clicks_more.csv": b"query,docid,position,impressions,clicks\nq,D1,1,2,3\n",
    "clicks_nan.jsonl": b'{"query": "q", "docid": "D1", "position": "nan", "clicked": 1}\n',
    "clicks_cp1252.tsv": "session\tquery\tdocid\tposition\tclicked\ns\tcaf\u00e9\tD1\t1\t1\n".encode("cp1252"),
    "clicks_nocols.tsv": b"query\tdocid\tclicks\nq\tD1\t1\n",
    "ubi_events.jsonl": b'{"action_name": "click", "query_id": "q1", "event_attributes": {"object": {"object_id": "Z"}}}\n',
}

W, D = "{w}", "{d}"
M_TXT, M_JSON, ENC = f"{W}/m.txt", f"{W}/m.json", f"{W}/enc.ltrenc"
TRAIN, TEST = f"{W}/train.letor", f"{W}/test.letor"
OUT = f"{W}/out/result.letor"

# malformed LETOR files -> needle in the error line (the file and, where there is one, the line)
LINE_1 = (
    "no_qid",
    "label_word",
    "label_nan",
    "label_inf",
    "empty_qid",
    "fid_zero",
    "fid_word",
    "fid_lead0",
    "fid_huge",
    "fid_order",
    "fid_dup",
    "value_word",
    "value_empty",
    "two_colons",
    "dup_qid",
    "qid_bad_utf8",
    "comment_bad_utf8",
)
LETOR_BAD = {f"{n}.letor": f"{n}.letor:1:" for n in LINE_1} | {
    "cr_only.letor": "cr_only.letor:1: carriage return",
    "mixed_cr.letor": "mixed_cr.letor:",
    "cut.letor.gz": "cut.letor.gz: gzip data",
    "badmethod.letor.gz": "badmethod.letor.gz: gzip data",
    "garbage.letor.gz": "garbage.letor.gz",
    "binary.letor": "binary.letor:",
    "groups_bad.svm": "groups_bad.svm.query:1:",
    "groups_zero.svm": "groups_zero.svm.query:1:",
    "groups_short.svm": "groups_short.svm",
    "groups_long.svm": "groups_long.svm",
    "weights_bad.letor": "weights_bad.letor.weight:2:",
    "weights_short.letor": "weights_short.letor",
    "sidecar_utf8.letor": "sidecar_utf8.letor.features.json",
    "sidecar_json.letor": "sidecar_json.letor.features.json:1:",
    "sidecar_kind.letor": "sidecar_kind.letor.features.json",
    "sidecar_ids.letor": "sidecar_ids.letor.features.json",
    "missing.letor": "missing.letor",
}

CASES = []
# every malformed LETOR file through validate, info and convert
for name, needle in LETOR_BAD.items():
    CASES.append((f"validate-{name}", ["letor", "validate", f"{W}/{name}"], needle))
for name in (
    "cr_only.letor",
    "cut.letor.gz",
    "fid_huge.letor",
    "value_word.letor",
    "sidecar_utf8.letor",
    "weights_bad.letor",
    "groups_bad.svm",
    "missing.letor",
    "qid_bad_utf8.letor",
):
    CASES.append((f"info-{name}", ["letor", "info", f"{W}/{name}"], LETOR_BAD[name]))
    CASES.append((f"convert-{name}", ["letor", "convert", f"{W}/{name}", OUT, "--to", "svmlight"], LETOR_BAD[name]))
CASES += [
    (
        "validate-value-nan-policy-error",
        ["letor", "validate", f"{W}/value_nan.letor", "--nan-policy", "error"],
        "value_nan.letor:1:",
    ),
    ("validate-noncontiguous", ["letor", "validate", f"{W}/noncontig.letor"], "noncontig.letor"),
    (
        "qrels-no-docid",
        ["letor", "qrels", f"{W}/noncontig.letor", "--out", f"{W}/out/q"],
        "noncontig.letor:1: no docid",
    ),
    ("qrels-empty", ["letor", "qrels", f"{W}/empty.letor", "--out", f"{W}/out/q"], "empty.letor"),
    ("validate-empty", ["letor", "validate", f"{W}/empty.letor"], "empty.letor"),
    ("validate-only-comments", ["letor", "validate", f"{W}/only_comments.letor"], "only_comments.letor"),
    ("validate-svmlight-no-group", ["letor", "validate", f"{W}/sparse.svm", "--from", "svmlight"], "sparse.svm"),
    ("validate-missing-group", ["letor", "validate", f"{W}/sparse.svm", "--group", f"{W}/nope.query"], "nope.query"),
    ("validate-from-choice", ["letor", "validate", TRAIN, "--from", "csv"], "'--from'"),
    ("validate-directory", ["letor", "validate", W], "'FILE'"),
    ("convert-to-choice", ["letor", "convert", TRAIN, OUT, "--to", "parquet"], "'--to'"),
    ("convert-chunk-zero", ["letor", "convert", TRAIN, OUT, "--chunk-queries", "0"], "'--chunk-queries'"),
    ("convert-out-under-file", ["letor", "convert", TRAIN, f"{W}/train.letor/sub/x.letor"], "cannot write the output"),
    ("convert-out-is-dir", ["letor", "convert", TRAIN, f"{W}/out"], "TARGET"),
    (
        "convert-svmlight-group-missing",
        ["letor", "convert", f"{W}/sparse.svm", OUT, "--from", "svmlight", "--group", f"{W}/nope.query"],
        "nope.query",
    ),
    ("letor-unknown-subcommand", ["letor", "explode", TRAIN], "explode"),
    ("unknown-command", ["frobnicate"], "frobnicate"),
    ("unknown-option", ["letor", "info", TRAIN, "--colour"], "--colour"),
]

# train-ranker
TR = ["train-ranker", TRAIN, "--out", f"{W}/out/m.txt", "--n-estimators", "3", "--threads", "1"]
CASES += [
    ("train-neg-label", ["train-ranker", f"{W}/neg_label.letor", "--out", f"{W}/out/m.txt"], "neg_label.letor"),
    ("train-label-1100", ["train-ranker", f"{W}/big_label.letor", "--out", f"{W}/out/m.txt"], "big_label.letor"),
    ("train-label-1e300", ["train-ranker", f"{W}/huge_label.letor", "--out", f"{W}/out/m.txt"], "huge_label.letor"),
    ("train-label-fraction", ["train-ranker", f"{W}/frac_label.letor", "--out", f"{W}/out/m.txt"], "frac_label.letor"),
    ("train-valid-label-1100", TR + ["--valid", f"{W}/big_label.letor"], "big_label.letor"),
    ("train-features-beyond", TR + ["--features", "1-99"], "'1-99'"),
    ("train-features-unknown-name", TR + ["--features", "bm25_body"], "bm25_body"),
    ("train-features-reversed", TR + ["--features", "5-2"], "5-2"),
    ("train-features-id", TR + ["--features", "42"], "42"),
    ("train-param-type", TR + ["--param", "num_leaves=abc"], "num_leaves"),
    ("train-param-range", TR + ["--param", "num_leaves=-3"], "num_leaves"),
    ("train-param-objective", TR + ["--param", "objective=nonsense"], "nonsense"),
    ("train-param-float", TR + ["--param", "learning_rate=x"], "--param"),
    ("train-param-not-kv", TR + ["--param", "num_leaves"], "--param"),
    (
        "train-xgb-param",
        TR[:3] + [f"{W}/out/m.json", "--engine", "xgboost", "--param", "learning_rate=x"],
        "learning_rate",
    ),
    ("train-xgb-objective", TR[:3] + [f"{W}/out/m.json", "--engine", "xgboost", "--param", "objective=nope"], "nope"),
    ("train-engine-choice", TR + ["--engine", "catboost"], "'--engine'"),
    ("train-n-estimators-zero", TR + ["--n-estimators", "0"], "'--n-estimators'"),
    ("train-learning-rate-zero", TR + ["--learning-rate", "0"], "'--learning-rate'"),
    ("train-num-leaves-one", TR + ["--num-leaves", "1"], "'--num-leaves'"),
    ("train-missing-file", ["train-ranker", f"{W}/missing.letor", "--out", f"{W}/out/m.txt"], "missing.letor"),
    ("train-bad-file", ["train-ranker", f"{W}/fid_word.letor", "--out", f"{W}/out/m.txt"], "fid_word.letor:1:"),
    ("train-valid-other-features", TR + ["--valid", f"{W}/other_features.letor"], "other_features.letor"),
    ("train-out-under-file", ["train-ranker", TRAIN, "--out", f"{W}/train.letor/m.txt"], "cannot write the output"),
    ("train-dask-bad", TR + ["--dask", "local:zero"], "local:zero"),
    ("train-select-candidate", TR + ["--select", "--candidates", "forest"], "forest"),
    ("train-select-tuned-no-search", TR + ["--select", "--candidates", "lightgbm-tuned"], "--tune"),
    ("train-select-inner-folds", TR + ["--select", "--inner-folds", "1"], "'--inner-folds'"),
    ("train-select-too-few", TR + ["--select", "--inner-folds", "15"], "--inner-folds"),
    ("train-select-dask", TR + ["--select", "--dask", "local:2"], "--dask"),
    ("train-select-tune", TR + ["--select", "--tune", "random"], "'--tune'"),
    (
        "train-select-neg-label",
        ["train-ranker", f"{W}/neg_label.letor", "--out", f"{W}/out/m.txt", "--select"],
        "neg_label.letor",
    ),
]

# evaluate and rank
CASES += [
    ("evaluate-neg-label", ["evaluate", M_TXT, f"{W}/neg_label.letor"], "neg_label.letor"),
    ("evaluate-metric", ["evaluate", M_TXT, TEST, "--metrics", "ndcg@0"], "ndcg@0"),
    ("evaluate-metric-word", ["evaluate", M_TXT, TEST, "--metrics", "accuracy"], "accuracy"),
    ("evaluate-metric-cutoff", ["evaluate", M_TXT, TEST, "--metrics", "3,ndcg@3"], "'3'"),
    ("evaluate-threshold", ["evaluate", M_TXT, TEST, "--relevance-threshold", "0"], "'--relevance-threshold'"),
    ("evaluate-features-missing", ["evaluate", M_TXT, f"{W}/other_features.letor"], "other_features.letor"),
    ("evaluate-model-missing", ["evaluate", f"{W}/nope.txt", TEST], "nope.txt"),
    ("evaluate-model-no-meta", ["evaluate", f"{W}/lonely.txt", TEST], "lonely.txt.meta.json"),
    ("evaluate-meta-json", ["evaluate", f"{W}/badmeta.txt", TEST], "badmeta.txt.meta.json:1:"),
    ("evaluate-meta-format", ["evaluate", f"{W}/oldmeta.txt", TEST], "oldmeta.txt.meta.json"),
    ("evaluate-sha-mismatch", ["evaluate", f"{W}/edited.txt", TEST], "edited.txt"),
    ("evaluate-bad-test", ["evaluate", M_TXT, f"{W}/cut.letor.gz"], "cut.letor.gz"),
    (
        "evaluate-per-query-under-file",
        ["evaluate", M_TXT, TEST, "--per-query", f"{W}/train.letor/q.tsv"],
        "cannot write the output",
    ),
    (
        "rank-trec-no-docid",
        ["rank", M_TXT, f"{W}/test_nodocid.letor", "--out", f"{W}/out/run", "--format", "trec"],
        "test_nodocid.letor",
    ),
    ("rank-format", ["rank", M_TXT, TEST, "--out", f"{W}/out/run", "--format", "csv"], "'--format'"),
    ("rank-noncontig", ["rank", M_TXT, f"{W}/noncontig.letor", "--out", f"{W}/out/run"], "noncontig.letor"),
    ("rank-out-under-file", ["rank", M_TXT, TEST, "--out", f"{W}/train.letor/run"], "cannot write the output"),
    ("explain-ranker-qid", ["explain-ranker", M_TXT, TEST, "--qid", "nope"], "query 'nope' is not in the data"),
    ("explain-ranker-top", ["explain-ranker", M_TXT, TEST, "--top", "0"], "'--top'"),
    ("explain-ranker-model-missing", ["explain-ranker", f"{W}/nope.txt", TEST], "nope.txt"),
    ("explain-ranker-features-missing", ["explain-ranker", M_TXT, f"{W}/other_features.letor"], "other_features.letor"),
]
# damaged models whose checksum was fixed up (run in a child process: these used to crash natively)
# (the others go through the same check in process; tests/rankers/test_model_files.py fuzzes it in a child process)
NATIVE = {
    "evaluate-truncated-lightgbm",
    "export-truncated-lightgbm",
    "serve-truncated-lightgbm",
    "evaluate-truncated-xgboost",
}
CASES += [
    ("evaluate-truncated-lightgbm", ["evaluate", f"{W}/cut.txt", TEST], "cut.txt:"),
    ("rank-truncated-lightgbm", ["rank", f"{W}/cut.txt", TEST, "--out", f"{W}/out/run"], "cut.txt:"),
    (
        "export-truncated-lightgbm",
        ["export-ranker", f"{W}/cut.txt", "--to", "es-ltr", "--out", f"{W}/out/x.json"],
        "cut.txt:",
    ),
    ("serve-truncated-lightgbm", ["serve", "--ranker", f"{W}/cut.txt"], "cut.txt:"),
    ("evaluate-truncated-xgboost", ["evaluate", f"{W}/cut.json", TEST], "cut.json:"),
    ("evaluate-params-cut-lightgbm", ["evaluate", f"{W}/tail.txt", TEST], "tail.txt:"),
]

# extract
EX = ["extract", f"{D}/test.letor", "--queries", f"{D}/queries.tsv", "--docs", f"{D}/docs.tsv", "--out", OUT]


def ex_letor(letor, *, queries=f"{D}/queries.tsv", docs=f"{D}/docs.tsv"):
    return ["extract", letor, "--queries", queries, "--docs", docs, "--lexical", "bm25", "--out", OUT]


def ex_pairs(pairs, *extra):
    return ["extract", "--pairs", pairs, *extra, "--lexical", "bm25", "--out", OUT]


CASES += [
    ("extract-k1-negative", EX + ["--lexical", "bm25", "--k1", "-5"], "--k1"),
    ("extract-k1-nan", EX + ["--lexical", "bm25", "--k1", "nan"], "--k1"),
    ("extract-b-above-one", EX + ["--lexical", "bm25", "--b", "2"], "--b"),
    ("extract-mu-negative", EX + ["--lexical", "lm_dirichlet", "--mu", "-2000"], "--mu"),
    ("extract-jm-lambda", EX + ["--lexical", "lm_jm", "--jm-lambda", "1.5"], "--jm-lambda"),
    ("extract-stem", EX + ["--lexical", "bm25", "--stem", "klingon"], "--stem"),
    ("extract-stopwords", EX + ["--lexical", "bm25", "--stopwords", "french"], "'--stopwords'"),
    ("extract-lexical-unknown", EX + ["--lexical", "bm99"], "bm99"),
    ("extract-field-unknown", EX + ["--lexical", "bm25", "--fields", "colour"], "colour"),
    ("extract-encoder-missing-file", EX + ["--encoder", f"dssm={W}/nope.ltrenc"], "nope.ltrenc"),
    ("extract-encoder-not-bundle", EX + ["--encoder", f"dssm={W}/not_a_bundle.ltrenc"], "not_a_bundle.ltrenc"),
    ("extract-encoder-short", EX + ["--encoder", f"dssm={W}/short.ltrenc"], "short.ltrenc"),
    ("extract-encoder-flipped", EX + ["--encoder", f"dssm={W}/flipped.ltrenc"], "flipped.ltrenc"),
    ("extract-encoder-kind", EX + ["--encoder", f"klingon={ENC}"], "klingon"),
    ("extract-corpus-stats-bad", EX + ["--lexical", "bm25", "--corpus-stats", f"{W}/not_npz.npz"], "not_npz.npz"),
    ("extract-corpus-stats-missing", EX + ["--lexical", "bm25", "--corpus-stats", f"{W}/nope.npz"], "nope.npz"),
    ("extract-ids-ten-digits", ex_letor(f"{W}/wide.letor"), "999999999"),
    ("extract-queries-missing", ex_letor(f"{D}/test.letor", queries=f"{W}/nope.tsv"), "nope.tsv"),
    ("extract-queries-dup", ex_letor(f"{D}/test.letor", queries=f"{W}/queries_dup.tsv"), "queries_dup.tsv"),
    (
        "extract-queries-empty-id",
        ex_letor(f"{D}/test.letor", queries=f"{W}/queries_empty_id.tsv"),
        "queries_empty_id.tsv",
    ),
    ("extract-docs-nofield", ex_letor(f"{D}/test.letor", docs=f"{W}/docs_nofield.tsv"), "docs_nofield.tsv"),
    ("extract-letor-bad", ex_letor(f"{W}/cr_only.letor"), "cr_only.letor:1:"),
    ("extract-name-clash", ex_letor(TEST), "bm25_title"),
    ("extract-unknown-qids", ex_letor(f"{W}/unknown_qid.letor"), "zzz"),
    ("extract-pairs-encoding-unknown", ex_pairs(f"{D}/judged.tsv", "--encoding", "klingon"), "klingon"),
]
PAIRS_BAD = {  # judged-pairs tables: file -> needle
    "pairs_hash.tsv": "pairs_hash.tsv:2:",
    "pairs_space.tsv": "pairs_space.tsv:2:",
    "pairs_label.tsv": "pairs_label.tsv",
    "pairs_frac.tsv": "pairs_frac.tsv",
    "pairs_fields.tsv": "pairs_fields.tsv:2:",
    "pairs_nodoc.tsv": "pairs_nodoc.tsv",
    "pairs_empty.tsv": "pairs_empty.tsv",
    "pairs_header.tsv": "pairs_header.tsv",
    "pairs_latin1.tsv": "pairs_latin1.tsv",
    "pairs_dupcol.tsv": "pairs_dupcol.tsv:1:",
    "pairs.jsonl": "pairs.jsonl:2:",
    "pairs_list.jsonl": "pairs_list.jsonl:1:",
    "pairs_bad.csv": "pairs_bad.csv",
    "pairs.xyz": "pairs.xyz",
    "pairs.tsv.gz": "pairs.tsv.gz",
    "pairs_bin.parquet": "pairs_bin.parquet",
}
CASES += [(f"extract-{name}", ex_pairs(f"{W}/{name}"), needle) for name, needle in PAIRS_BAD.items()]
CASES += [
    ("extract-columns-commas", ex_pairs(f"{D}/judged.tsv", "--columns", ",,,"), "',,,'"),
    ("extract-columns-bad-item", ex_pairs(f"{D}/judged.tsv", "--columns", "query"), "'query'"),
    ("extract-columns-unknown", ex_pairs(f"{D}/judged.tsv", "--columns", "query=nope"), "nope"),
    ("extract-label-map", ex_pairs(f"{D}/judged.tsv", "--label-map", "linear:3:1:2"), "linear:3:1:2"),
    (
        "extract-pairs-and-letor",
        ["extract", f"{D}/test.letor", "--pairs", f"{D}/judged.tsv", "--lexical", "bm25", "--out", OUT],
        "--pairs",
    ),
    ("extract-nothing", ["extract", f"{D}/test.letor", "--out", OUT], "--queries"),
    ("extract-out-under-file", EX[:-1] + [f"{W}/train.letor/x.letor", "--lexical", "bm25"], "cannot write the output"),
]

# encoders: train-encoder, explain, export-encoder
TE = ["train-encoder", f"{D}/judged.tsv", "--out", f"{W}/out/e.ltrenc", "--epochs", "1"]
CASES += [
    ("train-encoder-missing", ["train-encoder", f"{W}/nope.tsv", "--out", f"{W}/out/e.ltrenc"], "nope.tsv"),
    ("train-encoder-columns", TE + ["--columns", ",,,"], "',,,'"),
    ("train-encoder-model", TE + ["--model", "bert"], "'--model'"),
    ("train-encoder-loss", TE + ["--loss", "mse"], "'--loss'"),
    ("train-encoder-epochs", TE + ["--epochs", "0"], "'--epochs'"),
    (
        "train-encoder-label-word",
        ["train-encoder", f"{W}/pairs_label.tsv", "--out", f"{W}/out/e.ltrenc"],
        "pairs_label.tsv",
    ),
    ("train-encoder-topics", TE + ["--model", "deepmatch", "--topics", "many"], "--topics"),
    ("train-encoder-resume-bad", TE + ["--resume", f"{W}/not_a_bundle.ltrenc"], "not_a_bundle.ltrenc"),
    ("train-encoder-out-under-file", TE[:2] + ["--out", f"{W}/train.letor/e.ltrenc"], "cannot write the output"),
    ("train-encoder-nothing", ["train-encoder", "--out", f"{W}/out/e.ltrenc"], "PAIRS"),
    ("explain-missing", ["explain", f"{W}/nope.ltrenc", "a", "b"], "nope.ltrenc"),
    ("explain-not-bundle", ["explain", f"{W}/not_a_bundle.ltrenc", "a", "b"], "not_a_bundle.ltrenc"),
    ("explain-flipped", ["explain", f"{W}/flipped.ltrenc", "a", "b"], "flipped.ltrenc"),
    ("explain-top-zero", ["explain", ENC, "a", "b", "--top", "0"], "'--top'"),
    ("export-encoder-flipped", ["export-encoder", f"{W}/flipped.ltrenc", "--out", f"{W}/out/onnx"], "flipped.ltrenc"),
    ("export-encoder-short", ["export-encoder", f"{W}/short.ltrenc", "--out", f"{W}/out/onnx"], "short.ltrenc"),
    ("export-encoder-to", ["export-encoder", ENC, "--to", "tflite", "--out", f"{W}/out/onnx"], "'--to'"),
    # a directory of someone else's files (here a model directory): the export would replace it whole
    ("export-encoder-not-its-own", ["export-encoder", ENC, "--out", f"{W}/evil_st"], "not an ONNX encoder export"),
    ("export-encoder-holds-model", ["export-encoder", ENC, "--out", W], "is inside --out"),
]

# export-ranker and serve
ER = ["export-ranker", M_TXT, "--out", f"{W}/out/x.json"]
CASES += [
    ("export-ranker-to", ER + ["--to", "solr"], "'--to'"),
    (
        "export-ranker-missing",
        ["export-ranker", f"{W}/nope.txt", "--to", "es-ltr", "--out", f"{W}/out/x.json"],
        "nope.txt",
    ),
    ("export-ranker-templates-json", ER + ["--to", "es-ltr", "--templates", f"{W}/json_bad.json"], "json_bad.json"),
    ("export-ranker-templates-list", ER + ["--to", "es-ltr", "--templates", f"{W}/json_list.json"], "json_list.json"),
    ("export-ranker-normalizers", ER + ["--to", "es-ltr", "--normalizers", f"{W}/json_list.json"], "json_list.json"),
    (
        "export-ranker-out-under-file",
        ["export-ranker", M_TXT, "--to", "es-ltr", "--out", f"{W}/train.letor/x.json"],
        "cannot write the output",
    ),
    ("serve-ranker-missing", ["serve", "--ranker", f"{W}/nope.txt"], "nope.txt"),
    ("serve-encoder-missing", ["serve", "--ranker", M_TXT, "--encoder", f"clsm={W}/nope.ltrenc"], "nope.ltrenc"),
    (
        "serve-encoder-unused",
        ["serve", "--ranker", M_TXT, "--corpus-stats", f"{W}/not_npz.npz", "--encoder", f"dssm={ENC}"],
        "not_npz.npz",
    ),
    ("serve-encoder-not-needed", ["serve", "--ranker", M_TXT, "--encoder", f"dssm={ENC}"], "encoder dssm"),
    (
        "serve-encoder-repeated",
        ["serve", "--ranker", M_TXT, "--encoder", f"dssm={ENC}", "--encoder", f"dssm={ENC}"],
        "--encoder",
    ),
    ("serve-no-corpus", ["serve", "--ranker", M_TXT], "--corpus-stats"),
    ("serve-port", ["serve", "--ranker", M_TXT, "--port", "70000"], "'--port'"),
    ("serve-interleave-no-log", ["serve", "--ranker", M_TXT, "--interleave", M_TXT], "--event-log DIR"),
    ("serve-interleave-share", ["serve", "--ranker", M_TXT, "--interleave-share", "1.5"], "'--interleave-share'"),
    ("serve-event-log-depth", ["serve", "--ranker", M_TXT, "--event-log-depth", "0"], "'--event-log-depth'"),
    ("serve-lane-chars", ["serve", "--ranker", M_TXT, "--lane-chars", "-1"], "'--lane-chars'"),
    ("interleave-report-missing", ["interleave-report", f"{W}/nope"], "nope"),
    (
        "interleave-report-bad-line",
        ["interleave-report", f"{W}/badlog"],
        "events-000001.jsonl:1: field 'impression_id' must be str, got missing",
    ),
    ("interleave-report-not-interleaved", ["interleave-report", f"{W}/plainlog"], "no interleaved impression"),
    ("interleave-report-effect", ["interleave-report", f"{W}/plainlog", "--effect", "0.7"], "'--effect'"),
]

# ablate, compare, datasets
CASES += [
    ("ablate-no-mode", ["ablate", "--report", f"{W}/out/abl"], "--folds"),
    (
        "ablate-neural-beyond",
        [
            "ablate",
            "--folds",
            f"{W}/folds",
            "--base",
            "1-4",
            "--neural",
            "g=5-99",
            "--quick",
            "--report",
            f"{W}/out/abl",
        ],
        "5-99",
    ),
    (
        "ablate-base-beyond",
        ["ablate", "--folds", f"{W}/folds", "--base", "1-40", "--neural", "g=6", "--quick", "--report", f"{W}/out/abl"],
        "1-40",
    ),
    (
        "ablate-neural-not-kv",
        ["ablate", "--folds", f"{W}/folds", "--base", "1-4", "--neural", "g", "--quick", "--report", f"{W}/out/abl"],
        "--neural",
    ),
    (
        "ablate-folds-empty",
        ["ablate", "--folds", f"{W}/out", "--base", "1-4", "--neural", "g=5", "--quick", "--report", f"{W}/out/abl"],
        "out",
    ),
    (
        "ablate-pairs-columns",
        [
            "ablate",
            "--pairs",
            f"{D}/judged.tsv",
            "--columns",
            ",,,",
            "--encoder",
            "dssm",
            "--quick",
            "--report",
            f"{W}/out/abl",
        ],
        "',,,'",
    ),
    (
        "ablate-pairs-bad",
        ["ablate", "--pairs", f"{W}/pairs_label.tsv", "--encoder", "dssm", "--quick", "--report", f"{W}/out/abl"],
        "pairs_label.tsv",
    ),
    (
        "ablate-encoder-spec",
        ["ablate", "--pairs", f"{D}/judged.tsv", "--encoder", "lstm:softmax", "--quick", "--report", f"{W}/out/abl"],
        "lstm",
    ),
    (
        "ablate-spans-path",
        ["ablate", "--pairs", f"{D}/judged.tsv", "--encoder", "clsm:generalized+spans=x", "--report", f"{W}/out/abl"],
        "takes no path",
    ),
    (
        "ablate-collection-missing",
        [
            "ablate",
            "--pairs",
            f"{D}/judged.tsv",
            "--encoder",
            "clsm:generalized+spans",
            "--collection",
            f"{W}/nope.tsv",
            "--report",
            f"{W}/out/abl",
        ],
        "nope.tsv",
    ),  # fmt: skip
    (
        "ablate-collection-field",
        [
            "ablate",
            "--pairs",
            f"{D}/judged.tsv",
            "--encoder",
            "clsm:generalized+spans",
            "--collection",
            f"{D}/docs.tsv",
            "--collection-field",
            "body",
            "--report",
            f"{W}/out/abl",
        ],
        "body",
    ),  # fmt: skip
    (
        "ablate-collection-without-spans",
        [
            "ablate",
            "--pairs",
            f"{D}/judged.tsv",
            "--encoder",
            "clsm:generalized",
            "--collection",
            f"{D}/docs.tsv",
            "--report",
            f"{W}/out/abl",
        ],
        "+spans / +spans+teacher encoders only",
    ),  # fmt: skip
    (
        "ablate-span-option-not-int",
        [
            "ablate",
            "--pairs",
            f"{D}/judged.tsv",
            "--encoder",
            "clsm:generalized+spans",
            "--encoder-option",
            "spans_per_doc=many",
            "--report",
            f"{W}/out/abl",
        ],
        "spans_per_doc",
    ),  # fmt: skip
    (
        "ablate-seeds",
        [
            "ablate",
            "--folds",
            f"{W}/folds",
            "--base",
            "1-4",
            "--neural",
            "g=5",
            "--seeds",
            "a,b",
            "--report",
            f"{W}/out/abl",
        ],
        "--seeds",
    ),
    ("compare-missing", ["compare", f"{W}/nope_report", "a:b"], "nope_report"),
    ("compare-not-report", ["compare", f"{W}/out", "a:b"], "out"),
    ("report-missing", ["report", f"{W}/nope_report"], "nope_report"),
    ("report-html-malformed", ["report", f"{W}/badreport", "--html"], "report does not hold what an ablation writes"),
    (
        "extract-sbert-dir-code",
        ["extract", "--pairs", f"{D}/judged.tsv", "--encoder", f"sbert={W}/evil_st", "--lexical", "bm25", "--out", OUT],
        "evil_st/config.json: declares auto_map (code to import)",
    ),
    (
        "extract-sbert-ft-code",
        ["extract", "--pairs", f"{D}/judged.tsv", "--encoder", f"sbert-ft={W}/evil.ltrenc", "--lexical", "bm25"]
        + ["--out", OUT],
        "evil.ltrenc: bundle file shared/config.json declares auto_map",
    ),
    ("report-not-report", ["report", f"{W}/out", "--html"], "out"),
    ("compare-runs-no-source", ["compare-runs", f"{W}/a.run", f"{W}/b.run"], "--qrels"),
    ("compare-runs-missing-run", ["compare-runs", "--qrels", f"{W}/nope.qrels", f"{W}/a.run", f"{W}/b.run"], "nope"),
    ("compare-runs-one-system", ["compare-runs", "--test", f"{W}/nope.letor", f"{W}/a.txt"], "--"),
    ("synth-queries-zero", ["datasets", "synth", "--out", f"{W}/out/world", "--queries", "0"], "'--queries'"),
    ("synth-exponent", ["datasets", "synth", "--out", f"{W}/out/world", "--examination-exponent", "-1"], "exponent"),
    ("clicks-summary-position-0", ["clicks", "summary", f"{W}/clicks_pos0.tsv"], "clicks_pos0.tsv:3: "),
    ("clicks-propensity-no-positions", ["clicks", "propensity", f"{D}/clicks.tsv"], "has no positions"),
    ("clicks-propensity-position-0", ["clicks", "propensity", f"{W}/clicks_pos0.tsv"], "clicks_pos0.tsv:3: "),
    (
        "clicks-propensity-max-position",
        ["clicks", "propensity", f"{D}/clicks_impressions.tsv", "--max-position", "0"],
        "'--max-position'",
    ),
    ("clicks-summary-no-columns", ["clicks", "summary", f"{W}/clicks_nocols.tsv"], "clicks_nocols.tsv:1: no "),
    (
        "ablate-click-log-position-0",
        [
            *[
                "ablate",
                "--pairs",
                f"{D}/judged.tsv",
                "--encoder",
                "dssm:generalized",
                "--quick",
                "--report",
                f"{W}/out/abl",
            ],
            "--click-log",
            f"{W}/clicks_pos0.tsv",
        ],
        "clicks_pos0.tsv:3: ",
    ),
    (
        "ablate-click-log-ubi-never-shown",
        [
            *[
                "ablate",
                "--pairs",
                f"{D}/judged.tsv",
                "--encoder",
                "dssm:generalized",
                "--quick",
                "--report",
                f"{W}/out/abl",
            ],
            "--click-log",
            f"{W}/ubi_events.jsonl",
        ],
        "ubi_events.jsonl:1: ",
    ),
    (
        "ablate-click-log-missing",
        [
            *[
                "ablate",
                "--pairs",
                f"{D}/judged.tsv",
                "--encoder",
                "dssm:generalized",
                "--quick",
                "--report",
                f"{W}/out/abl",
            ],
            "--click-log",
            f"{W}/nope.tsv",
        ],
        "nope.tsv",
    ),
    (
        "ablate-debias-no-click-log",
        [
            *[
                "ablate",
                "--pairs",
                f"{D}/judged.tsv",
                "--encoder",
                "dssm:generalized",
                "--quick",
                "--report",
                f"{W}/out/abl",
            ],
            "--debias",
            "pbm",
        ],
        "--debias goes with --click-log",
    ),
    (
        "ablate-propensity-not-a-file",
        [
            *[
                "ablate",
                "--pairs",
                f"{D}/judged.tsv",
                "--encoder",
                "dssm:generalized",
                "--quick",
                "--report",
                f"{W}/out/abl",
            ],
            "--click-log",
            f"{D}/clicks_impressions.tsv",
            "--propensity",
            "x",
        ],
        "'x'",
    ),
    (
        "extract-clicks-unknown-doc",
        ["extract", "--clicks", f"{W}/clicks_pos0.tsv", "--docs", f"{D}/docs.tsv", "--lexical", "bm25", "--out", OUT],
        "clicks_pos0.tsv:2: ",
    ),
    (
        "extract-clicks-aggregated",
        ["extract", "--clicks", f"{D}/clicks.tsv", "--docs", f"{D}/docs.tsv", "--lexical", "bm25", "--out", OUT],
        "aggregated click log",
    ),
    (
        "extract-clicks-no-docs",
        ["extract", "--clicks", f"{D}/clicks_impressions.tsv", "--lexical", "bm25", "--out", OUT],
        "--clicks needs --docs",
    ),
    (
        "train-encoder-spec-click-position-0",
        ["train-encoder", f"{W}/clicks_pos0.tsv", "--debias", "ipw", "--spec", "dssm:generalized", "--out", OUT],
        "clicks_pos0.tsv:3: ",
    ),
    (
        "train-encoder-spec-click-no-docs",
        ["train-encoder", f"{D}/clicks_impressions.tsv", "--debias", "ipw", "--spec", "dssm:generalized", "--out", OUT],
        "with --docs",
    ),
    (
        "train-encoder-spec-click-loss",
        ["train-encoder", f"{D}/clicks_impressions.tsv", "--debias", "pbm", "--spec", "dssm:hinge", "--out", OUT],
        "not hinge",
    ),
    (
        "train-encoder-spec-clip-alone",
        ["train-encoder", f"{D}/judged.tsv", "--clip", "0.1", "--spec", "dssm:generalized", "--out", OUT],
        "--clip goes with --debias",
    ),
    ("clicks-summary-ubi-never-shown", ["clicks", "summary", f"{W}/ubi_events.jsonl"], "ubi_events.jsonl:1: "),
    ("clicks-summary-missing", ["clicks", "summary", f"{W}/nope.tsv"], "nope.tsv"),
    (
        "clicks-aggregate-more-clicks",
        ["clicks", "aggregate", f"{W}/clicks_more.csv", "--out", OUT],
        "clicks_more.csv:2:",
    ),
    ("clicks-aggregate-nan", ["clicks", "aggregate", f"{W}/clicks_nan.jsonl", "--out", OUT], "clicks_nan.jsonl:1:"),
    ("clicks-aggregate-encoding", ["clicks", "aggregate", f"{W}/clicks_cp1252.tsv", "--out", OUT], "--encoding"),
    ("clicks-aggregate-no-positions", ["clicks", "aggregate", f"{D}/clicks.tsv", "--out", OUT], "no positions"),
    (
        "clicks-aggregate-chunk-rows",
        ["clicks", "aggregate", f"{D}/clicks.tsv", "--out", OUT, "--chunk-rows", "0"],
        "--chunk-rows",
    ),
    ("synth-candidates", ["datasets", "synth", "--out", f"{W}/out/world", "--candidates", "9-3"], "'--candidates'"),
    ("convert-dataset-unknown", ["datasets", "convert", "imagenet", f"{W}/x", "--out", f"{W}/out/ds"], "imagenet"),
    (
        "convert-dataset-missing",
        ["datasets", "convert", "homedepot", f"{W}/nope.csv", "--out", f"{W}/out/ds"],
        "nope.csv",
    ),
    (
        "convert-dataset-stem",
        ["datasets", "convert", "homedepot", f"{W}/pairs_bad.csv", "--out", f"{W}/out/ds", "--stem", "klingon"],
        "--stem",
    ),
    (
        "convert-dataset-split",
        ["datasets", "convert", "homedepot", f"{W}/pairs_bad.csv", "--out", f"{W}/out/ds", "--split", "0.5,0.9,0.1"],
        "--split",
    ),
]


# hostile inputs, round two (issue 34): bounded readers, checked loaders, replaced directories, degenerate data
ENDLESS, LONG, WIDE, OVER = f"{W}/endless.letor.gz", f"{W}/longline.letor", f"{W}/wide150k.letor", f"{W}/overflow.letor"
SHORT_LINES = ["--max-line-bytes", "1000"]
CASES += [
    ("validate-gzip-bomb", ["letor", "validate", ENDLESS], "expands more than 200-fold"),
    ("info-gzip-bomb", ["letor", "info", ENDLESS], "expands more than 200-fold"),
    ("convert-gzip-bomb", ["letor", "convert", ENDLESS, OUT], "expands more than 200-fold"),
    ("train-gzip-bomb", ["train-ranker", ENDLESS, "--out", f"{W}/out/m.txt"], "expands more than 200-fold"),
    (
        "validate-endless-line",
        ["--max-gzip-ratio", "5000", "letor", "validate", ENDLESS],
        "endless.letor.gz:1: line is longer than 67108864 bytes",
    ),
    ("validate-long-line", [*SHORT_LINES, "letor", "validate", LONG], "longline.letor:1: line is longer than 1000"),
    ("info-long-line", [*SHORT_LINES, "letor", "info", LONG], "longline.letor:1: line is longer"),
    ("convert-long-line", [*SHORT_LINES, "letor", "convert", LONG, OUT], "longline.letor:1: line is longer"),
    ("train-long-line", [*SHORT_LINES, "train-ranker", LONG, "--out", f"{W}/out/m.txt"], "longline.letor:1:"),
    ("evaluate-long-line", [*SHORT_LINES, "evaluate", M_TXT, LONG], "longline.letor:1: line is longer"),
    ("rank-long-line", [*SHORT_LINES, "rank", M_TXT, LONG, "--out", f"{W}/out/run"], "longline.letor:1:"),
    ("max-line-bytes-zero", ["--max-line-bytes", "0", "letor", "info", TRAIN], "'--max-line-bytes'"),
    ("max-gzip-ratio-below-one", ["--max-gzip-ratio", "0.5", "letor", "info", TRAIN], "'--max-gzip-ratio'"),
    ("max-features-negative", ["--max-features", "-1", "letor", "info", TRAIN], "'--max-features'"),
    ("max-model-params-word", ["--max-model-params", "many", "letor", "info", TRAIN], "'--max-model-params'"),
    ("train-wide-ids", ["train-ranker", WIDE, "--out", f"{W}/out/m.txt"], "150000 distinct feature ids"),
    ("train-valid-wide-ids", TR + ["--valid", WIDE], "150000 distinct feature ids"),
    ("train-select-wide-ids", ["train-ranker", WIDE, "--out", f"{W}/out/m.txt", "--select"], "150000 distinct"),
    ("convert-wide-ids", ["letor", "convert", WIDE, OUT], "150000 distinct feature ids"),
    ("train-few-max-features", ["--max-features", "3", *TR], "6 distinct feature ids exceed the limit of 3"),
    ("validate-overflow", ["letor", "validate", OVER], "overflow.letor:2:"),
    ("convert-overflow", ["letor", "convert", OVER, OUT], "overflow.letor:2:"),
    ("train-overflow", ["train-ranker", OVER, "--out", f"{W}/out/m.txt"], "overflow.letor:2: feature 4 is 1e+39"),
    ("train-valid-overflow", TR[:3] + [f"{W}/out/m.txt", "--valid", OVER], "overflow.letor:2:"),
    ("evaluate-overflow", ["evaluate", M_TXT, OVER], "overflow.letor:2:"),
    ("rank-overflow", ["rank", M_TXT, OVER, "--out", f"{W}/out/run"], "overflow.letor:2:"),
    ("train-flat-labels", ["train-ranker", f"{W}/flat_labels.letor", "--out", f"{W}/out/m.txt"], "every label is 1"),
    ("train-one-doc", ["train-ranker", f"{W}/one_doc.letor", "--out", f"{W}/out/m.txt"], "has one document"),
    ("train-no-variance", ["train-ranker", f"{W}/no_variance.letor", "--out", f"{W}/out/m.txt"], "the same label"),
    (
        "train-xgb-flat-labels",
        ["train-ranker", f"{W}/flat_labels.letor", "--out", f"{W}/out/m.json", "--engine", "xgboost"],
        "flat_labels.letor: train data cannot train a ranker",
    ),
    ("evaluate-nan-leaves", ["evaluate", f"{W}/nanleaf.txt", TEST], "leaf_value holds NaN"),
    ("rank-nan-leaves", ["rank", f"{W}/nanleaf.txt", TEST, "--out", f"{W}/out/run"], "leaf_value holds NaN"),
    (
        "export-nan-leaves",
        ["export-ranker", f"{W}/nanleaf.txt", "--to", "es-ltr", "--out", f"{W}/out/x.json"],
        "leaf_value holds NaN",
    ),
    ("serve-nan-leaves", ["serve", "--ranker", f"{W}/nanleaf.txt"], "leaf_value holds NaN"),
    ("explain-size-bomb", ["explain", f"{W}/bomb.ltrenc", "a", "b"], "more than the limit of 250,000,000"),
    ("extract-size-bomb", EX + ["--encoder", f"dssm={W}/bomb.ltrenc"], "bomb.ltrenc"),
    ("export-encoder-size-bomb", ["export-encoder", f"{W}/bomb.ltrenc", "--out", f"{W}/out/onnx"], "bomb.ltrenc"),
    ("explain-shape-lie", ["explain", f"{W}/shape.ltrenc", "a", "b"], "where the config declares"),
    ("extract-shape-lie", EX + ["--encoder", f"dssm={W}/shape.ltrenc"], "where the config declares"),
    ("explain-max-model-params", ["--max-model-params", "1000", "explain", ENC, "a", "b"], "limit of 1,000"),
    (
        "embed-size-bomb",
        [
            "embed",
            "--docs",
            f"{D}/docs.tsv",
            "--encoder",
            f"dssm={W}/bomb.ltrenc",
            "--index",
            "i",
            "--out",
            f"{W}/out/b.ndjson",
        ],
        "bomb.ltrenc",
    ),  # fmt: skip
    ("info-config-deep-json", ["letor", "info", TRAIN, "--config", f"{W}/deep.json"], "deep.json: settings nest"),
    ("train-config-deep-toml", TR + ["--config", f"{W}/deep.toml"], "deep.toml: settings nest"),
    ("evaluate-config-deep-yaml", ["evaluate", M_TXT, TEST, "--config", f"{W}/deep.yaml"], "deep.yaml: settings"),
    (
        "rank-config-deep-block",
        ["rank", M_TXT, TEST, "--out", f"{W}/out/run", "--config", f"{W}/deep_block.yaml"],
        "deep_block.yaml",
    ),  # fmt: skip
    ("extract-config-bigint-json", EX + ["--config", f"{W}/bigint.json"], "bigint.json: a value cannot be read"),
    ("train-config-bigint-toml", TR + ["--config", f"{W}/bigint.toml"], "bigint.toml: a value cannot be read"),
    ("serve-config-bigint-yaml", ["serve", "--config", f"{W}/bigint.yaml"], "bigint.yaml: a value cannot be read"),
    ("ablate-config-laughs", ["ablate", "--config", f"{W}/laughs.yaml"], "laughs.yaml: settings expand to more than"),
    ("convert-config-loop", ["letor", "convert", TRAIN, OUT, "--config", f"{W}/loop.yaml"], "loop.yaml: a YAML alias"),
    (
        "ablate-overwrite-foreign-dir",
        [
            "ablate",
            "--folds",
            f"{W}/folds",
            "--base",
            "1-4",
            "--neural",
            "g=5",
            "--report",
            f"{W}/thesis",
            "--overwrite",
        ],
        "no .ltrfeat-output marker",
    ),  # fmt: skip
    (
        "convert-dataset-overwrite-foreign-dir",
        ["datasets", "convert", "homedepot", f"{W}/pairs_bad.csv", "--out", f"{W}/thesis", "--overwrite"],
        "no .ltrfeat-output marker",
    ),
    ("demo-foreign-dir", ["demo", "--quick", "--out", f"{W}/thesis"], "no .ltrfeat-output marker"),
    ("compare-truncated-table", ["compare", f"{W}/cutreport", "a:b"], "holds 2 queries of feature set 'a'"),
    (
        "rerank-ranker-missing",
        [
            "rerank",
            f"{W}/nope.txt",
            "--run",
            f"{W}/run.trec",
            "--queries",
            f"{D}/queries.tsv",
            "--docs",
            f"{D}/docs.tsv",
            "--out",
            f"{W}/out/r.trec",
        ],
        "nope.txt",
    ),  # fmt: skip
    (
        "rerank-depth-zero",
        [
            "rerank",
            M_TXT,
            "--run",
            f"{W}/run.trec",
            "--queries",
            f"{D}/queries.tsv",
            "--docs",
            f"{D}/docs.tsv",
            "--out",
            f"{W}/out/r.trec",
            "--depth",
            "0",
        ],
        "'--depth'",
    ),  # fmt: skip
    (
        "embed-docs-missing",
        ["embed", "--docs", f"{W}/nope.tsv", "--encoder", f"dssm={ENC}", "--index", "i", "--out", f"{W}/out/b.ndjson"],
        "nope.tsv",
    ),  # fmt: skip
    ("features-list-extra-argument", ["features", "list", "bm25"], "bm25"),
]

# hostile inputs, round three (issue 48): outputs checked before any work, option bounds, encodings
ABL = ["ablate", "--folds", f"{W}/folds", "--base", "1-4", "--neural", "g=5", "--quick"]
OLD_REPORT = f"{W}/oldreport"  # an earlier report (marker) holding a filled cache
CR = ["compare-runs", "--qrels", TRAIN, "a=x.run", "b=y.run"]
CASES += [
    ("ablate-cache-inside-report", ABL + ["--cache", f"{OLD_REPORT}/cache", "--report", OLD_REPORT, "--overwrite"],
     "--cache"),
    ("ablate-cache-inside-new-report", ABL + ["--cache", f"{W}/out/r/cache", "--report", f"{W}/out/r"], "--cache"),
    ("ablate-features-inside-report", ABL + ["--write-features", f"{W}/out/r/f", "--report", f"{W}/out/r"],
     "--write-features"),
    ("ablate-pairs-inside-report", ["ablate", "--pairs", f"{OLD_REPORT}/cache/kept.json", "--report", OLD_REPORT,
     "--overwrite"], "--pairs"),
    ("ablate-existing-report", ABL + ["--report", OLD_REPORT], "--overwrite"),
    ("extract-two-outputs-one-path", EX + ["--lexical", "bm25", "--save-corpus-stats", OUT], "--save-corpus-stats"),
    ("train-encoder-checkpoint-is-out", TE + ["--checkpoint", f"{W}/out/e.ltrenc"], "--checkpoint"),
    ("ablate-seeds-negative", ABL + ["--report", f"{W}/out/r", "--seeds=-1"], "--seeds"),
    ("ablate-seeds-huge", ABL + ["--report", f"{W}/out/r", "--seeds", "0,4294967296"], "--seeds"),
    ("ablate-split-seed-negative", ["ablate", "--pairs", f"{D}/judged.tsv", "--report", f"{W}/out/r",
     "--split-seed", "-1"], "--split-seed"),
    ("compare-runs-seed-negative", CR + ["--seed", "-1"], "--seed"),
    ("compare-runs-resamples-huge", CR + ["--resamples", "1e9"], "--resamples"),
    ("compare-seed-negative", ["compare", W, "a:b", "--seed", "-1"], "--seed"),
    ("train-threads-huge", TR + ["--threads", "100000"], "--threads"),
    ("train-seed-huge", TR + ["--seed", str(2**32)], "--seed"),
    ("serve-threads-huge", ["serve", "--ranker", M_TXT, "--threads", "3000"], "--threads"),
    ("extract-encoding-rot13", ex_pairs(f"{D}/judged.tsv", "--encoding", "rot13"), "--encoding"),
    ("extract-encoding-unknown", ex_pairs(f"{D}/judged.tsv", "--encoding", "klingon"), "--encoding"),
    ("extract-encoding-utf16-on-utf8", ex_pairs(f"{D}/judged.tsv", "--encoding", "utf-16"), "--encoding utf-8"),
    ("train-encoder-encoding-rot13", TE + ["--encoding", "rot13"], "--encoding"),
]  # fmt: skip


@pytest.fixture(scope="module")
def workspace(tmp_path_factory):
    """Good files (LETOR data, two rankers, an encoder, LETOR folds) and every bad file of ``BAD_FILES``."""
    from builders import tiny_encoder as make

    w = tmp_path_factory.mktemp("catalogue")
    for name, data in BAD_FILES.items():
        (w / name).parent.mkdir(parents=True, exist_ok=True)
        (w / name).write_bytes(data)
    write_letor(w / "train.letor", synthetic(seed=0, n_queries=20, docs=10, n_features=6, names=NAMES))
    write_letor(w / "test.letor", synthetic(seed=2, n_queries=10, docs=10, n_features=6, names=NAMES))
    nodoc = synthetic(seed=3, n_queries=3, docs=4, n_features=6, names=NAMES)
    nodoc.docid = None
    write_letor(w / "test_nodocid.letor", nodoc)
    for engine, name in (("lightgbm", "m.txt"), ("xgboost", "m.json")):
        small(engine, n_estimators=8, early_stopping_rounds=0).fit(
            synthetic(seed=0, n_queries=20, docs=10, n_features=6, names=NAMES)
        ).save(w / name)
    raw_txt, raw_json = (w / "m.txt").read_bytes(), (w / "m.json").read_bytes()
    meta_txt = json.loads((w / "m.txt.meta.json").read_text())

    def model_copy(name, raw, meta, *, fix_sha=True):
        (w / name).write_bytes(raw)
        m = dict(meta)
        if fix_sha:
            m["model_sha256"] = hashlib.sha256(raw).hexdigest()
        (w / f"{name}.meta.json").write_text(json.dumps(m))

    model_copy("cut.txt", raw_txt[: len(raw_txt) // 2], meta_txt)
    model_copy("tail.txt", raw_txt[: int(len(raw_txt) * 0.99)], meta_txt)
    model_copy("cut.json", raw_json[: len(raw_json) // 2], json.loads((w / "m.json.meta.json").read_text()))
    model_copy("edited.txt", raw_txt.replace(b"shrinkage=", b"shrinkage=1", 1), meta_txt, fix_sha=False)
    (w / "lonely.txt").write_bytes(raw_txt)
    (w / "badmeta.txt").write_bytes(raw_txt)
    (w / "badmeta.txt.meta.json").write_text("{oops")
    model_copy("oldmeta.txt", raw_txt, meta_txt | {"format": "ltrfeat.ranker/0"})
    model_copy("nanleaf.txt", _nan_leaves(raw_txt), meta_txt)
    make("dssm").save(w / "enc.ltrenc")
    _code_declaring_bundle(w / "evil_st", w / "evil.ltrenc")
    _declaring(w / "enc.ltrenc", w / "bomb.ltrenc", [12000, 12000])
    _declaring(w / "enc.ltrenc", w / "shape.ltrenc", [301, 300])
    flipped = bytearray((w / "enc.ltrenc").read_bytes())
    flipped[-5] ^= 0x01
    (w / "flipped.ltrenc").write_bytes(bytes(flipped))
    lines = (DATA / "test.letor").read_text().splitlines()[:30]
    (w / "wide.letor").write_text("".join(line.replace(" #", " 999999999:1 #", 1) + "\n" for line in lines))
    for part in ("train", "vali", "test"):
        fold = w / "folds" / "Fold1"
        fold.mkdir(parents=True, exist_ok=True)
        data = synthetic(seed=len(part), n_queries=8, docs=6, n_features=6)
        write_letor(fold / f"{part}.letor", data)
    (w / "out").mkdir()
    return w


def _nan_leaves(raw: bytes) -> bytes:
    """A LightGBM model whose every leaf is NaN, written by LightGBM itself (consistent tree sizes)."""
    import lightgbm as lgb

    booster = lgb.Booster(model_str=raw.decode())
    for tree in booster.dump_model()["tree_info"]:
        for leaf in range(tree["num_leaves"]):
            booster.set_leaf_output(tree["tree_index"], leaf, float("nan"))
    return booster.model_to_string().encode()


def _declaring(good: Path, out: Path, hidden: list) -> None:
    """A copy of the bundle ``good`` whose header declares other hidden sizes (tensors and checksums untouched)."""
    import safetensors.torch

    raw = good.read_bytes()
    n = int.from_bytes(raw[:8], "little")
    header = json.loads(json.loads(raw[8 : 8 + n])["__metadata__"]["ltrenc"])
    header["model"]["tower"]["hidden"] = hidden
    out.write_bytes(safetensors.torch.save(safetensors.torch.load(raw), metadata={"ltrenc": json.dumps(header)}))


def _code_declaring_bundle(folder: Path, out: Path) -> None:
    """An ``sbert-ft`` bundle carrying ``folder``'s files (a config whose auto_map names its Python file)."""
    import torch

    from ltrfeat.encoders.bundle import write_bundle

    files = {p.name: {"text": p.read_text()} for p in folder.iterdir()}
    header = {"towers": ["shared"], "max_seq_length": 32, "files": {"shared": files}}
    write_bundle(out, kind="sbert-ft", header=header, tensors={"shared/model.safetensors::w": torch.zeros(1)})


def _listing(root: Path) -> set:
    return {str(p.relative_to(root)) for p in root.rglob("*")}


def _argv(args, w):
    return [a.replace(W, str(w)).replace(D, str(DATA)) for a in args]


def _run(args, w, native: bool):
    if not native:
        res = CliRunner().invoke(cli, args)
        return res.exit_code, res.stdout, res.stderr, res.exception
    env = os.environ | {"PYTHONPATH": f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}", "CI": "1"}
    res = subprocess.run(
        [sys.executable, "-m", "ltrfeat.cli.main", *args], cwd=w, env=env, capture_output=True, text=True, timeout=120
    )
    return res.returncode, res.stdout, res.stderr, None


def _command_path(argv) -> str:
    """The command an argument list runs (``letor validate``), found by walking the click app past the
    top-level options."""
    import click

    group, path, args = cli, [], list(argv)
    while args:
        word = args.pop(0)
        if word.startswith("-"):
            option = next((p for p in group.params if word in p.opts), None)
            if option is not None and not getattr(option, "is_flag", False) and not getattr(option, "count", False):
                args.pop(0)  # its value
            continue
        command = group.commands.get(word) if isinstance(group, click.Group) else None
        if command is None:
            break
        path.append(word)
        if not isinstance(command, click.Group):
            break
        group = command
    return " ".join(path)


def _leaf_commands(group, prefix=()) -> set:
    import click

    found = set()
    for name, command in group.commands.items():
        if isinstance(command, click.Group):
            found |= _leaf_commands(command, (*prefix, name))
        else:
            found.add(" ".join((*prefix, name)))
    return found


def test_catalogue_has_unique_ids_and_cases_for_every_command():
    ids = [c[0] for c in CASES]
    assert len(ids) >= 200 and len(set(ids)) == len(ids)
    # a new command of the click app without a catalogue case fails here
    assert _leaf_commands(cli) <= {_command_path(c[1]) for c in CASES}


@pytest.mark.parametrize("case_id,args,needle", CASES, ids=[c[0] for c in CASES])
def test_bad_input_is_one_line_error(workspace, case_id, args, needle):
    before = _listing(workspace)
    code, out, err, exc = _run(_argv(args, workspace), workspace, case_id in NATIVE)
    assert code not in (0, None), f"exit {code}: {out} {err}"
    assert code > 0, f"killed by signal {-code}: {err}"
    assert exc is None or isinstance(exc, SystemExit), repr(exc)
    assert "Traceback" not in out + err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    assert lines[0].startswith("error: "), lines[0]
    assert needle.replace(W, str(workspace)) in lines[0], (needle, lines[0])
    assert _listing(workspace) == before, sorted(_listing(workspace) ^ before)


# -- outputs that are not regular files: streamed straight to them, no sidecars beside them -------------
STREAMED = [
    ("convert", ["letor", "convert", TRAIN, "{o}"]),
    ("convert-svmlight", ["letor", "convert", TRAIN, "{o}", "--to", "svmlight"]),
    ("train-ranker", ["train-ranker", TRAIN, "--out", "{o}", "--n-estimators", "3", "--threads", "1"]),
    ("rank", ["rank", M_TXT, TEST, "--out", "{o}"]),
    ("rank-trec", ["rank", M_TXT, TEST, "--out", "{o}", "--format", "trec"]),
    ("evaluate-per-query", ["evaluate", M_TXT, TEST, "--per-query", "{o}"]),
    ("export-ranker", ["export-ranker", M_TXT, "--to", "es-ltr", "--allow-missing-features", "--out", "{o}"]),
    ("extract", ["extract", "--pairs", f"{D}/judged.tsv", "--lexical", "bm25", "--out", "{o}"]),
    ("embed", ["embed", "--docs", f"{D}/docs.tsv", "--encoder", f"dssm={ENC}", "--index", "i", "--out", "{o}"]),
]


@pytest.mark.parametrize("target", ["dash", "fifo"])
@pytest.mark.parametrize("case_id,args", STREAMED, ids=[c[0] for c in STREAMED])
def test_output_to_a_stream_is_written_straight_to_it(workspace, tmp_path, case_id, args, target):
    import stat
    import threading

    before = _listing(workspace)
    got = []
    if target == "fifo":
        out = tmp_path / "pipe"
        os.mkfifo(out)
        reader = threading.Thread(target=lambda: got.append(open(out, "rb").read()), daemon=True)
        reader.start()
    else:
        out = "-"
    res = CliRunner().invoke(cli, [a.replace("{o}", str(out)) for a in _argv(args, workspace)])
    if target == "fifo":
        reader.join(30)
        assert stat.S_ISFIFO(os.stat(out).st_mode)
        assert sorted(p.name for p in tmp_path.iterdir()) == ["pipe"]  # no sidecar, no temporary file
    else:
        got.append(res.stdout_bytes)
        assert not os.path.exists("-")
    assert res.exit_code == 0, res.output
    assert "Traceback" not in res.output and got and got[0].strip()
    assert _listing(workspace) == before


# -- hostile request bodies for the service: a one-line JSON error of the right status, quickly ---------
SERVE_BODIES = [
    ("escaped-quotes-1mb", "/score", b'{"query": "' + b'\\"' * 499_000, 400),
    ("backslash-runs", "/score", b'{"query": "' + b"\\\\" * 200_000 + b'\\"' * 200_000, 400),
    ("deep-brackets", "/score", b'{"query": "q", "candidates": ' + b"[" * 400_000, 400),
    ("deep-objects", "/embed", b'{"a": ' * 100_000, 400),
    ("huge-int-score", "/score", b'{"query": "q", "candidates": [{"docid": ' + b"7" * 5000 + b"}]}", 400),
    ("huge-int-embed", "/embed", b'{"query": ' + b"-" + b"1" * 10_000 + b"}", 400),
    ("huge-int-key-depth", "/score", b'{"query": "q", "n": [' * 20 + b"9" * 5000 + b"]}" * 20, 400),
    ("lone-surrogate", "/embed", b'{"query": "\\ud800"}', 400),
    ("deep-events", "/events", b'{"events": ' + b"[" * 400_000, 400),
    ("lone-surrogate-event", "/events", b'{"action_name": "\\udc00", "query_id": "i"}', 400),
    ("events-without-log", "/events", b'{"action_name": "click", "query_id": "i"}', 404),
    ("not-utf8", "/score", b'{"query": "\xff\xfe"}', 400),
    ("nan-scores", "/score", b'{"query": "q", "candidates": [{"docid": "d", "title": "t"}]}', 500),
    ("explain-escaped-quotes", "/explain", b'{"query": "' + b'\\"' * 499_000, 400),
    ("explain-deep-brackets", "/explain", b'{"query": "q", "candidates": ' + b"[" * 400_000, 400),
    ("explain-huge-int", "/explain", b'{"query": "q", "candidates": [{"docid": ' + b"7" * 5000 + b"}]}", 400),
    ("explain-no-contributions", "/explain", b'{"query": "q", "candidates": [{"docid": "d", "title": "t"}]}', 501),
]


class _Scorer:
    feature_names = ["f"]
    fields = ("title",)

    def score(self, query, candidates):
        return np.full(len(candidates), np.nan)

    def query_params(self, query):
        return {"keywords": query}


@pytest.mark.parametrize("case_id,path,body,status", SERVE_BODIES, ids=[c[0] for c in SERVE_BODIES])
def test_hostile_request_bodies_get_a_one_line_error(case_id, path, body, status):
    import time

    pytest.importorskip("fastapi")
    from fastapi.testclient import TestClient

    from ltrfeat.serving.app import create_app

    client = TestClient(create_app(_Scorer()), raise_server_exceptions=False, base_url="http://localhost")
    start = time.perf_counter()
    res = client.post(path, content=body, headers={"content-type": "application/json"})
    assert time.perf_counter() - start < 5
    assert res.status_code == status, res.text
    detail = res.json()["detail"]
    assert isinstance(detail, str) and "\n" not in detail and "Traceback" not in detail
