"""TREC runs and qrels: read them (the one qrels parser, :func:`parse_qrels`, which the converters use too),
write any ranker's scores as a run, evaluate a run.

Formats (fields separated by any run of spaces or tabs, blank lines ignored, ``.gz`` by extension):

* run: ``QID Q0 DOCID RANK SCORE TAG`` — what Anserini, Pyserini, Terrier and trec_eval use. The
  ``Q0`` and ``RANK`` fields are read but, as in trec_eval, the order comes from ``SCORE``.
* qrels: ``QID ITER DOCID GRADE`` (TREC) or ``QID DOCID GRADE`` (BEIR TSV, optional header);
  integer grades.

Conventions of :func:`evaluate_run` (trec_eval's, so the numbers match trec_eval, pytrec_eval and
ir-measures; tested against ir-measures):

* documents are ranked by score, descending; equal scores by docid, descending (trec_eval's order);
* a retrieved document without a judgement is not relevant (grade 0); negative grades count as 0;
* relevant means grade >= ``relevance_threshold`` (default 1) for recall, P, MAP and MRR; NDCG uses
  the grade itself as gain (``gain="linear"``, trec_eval's ``ndcg_cut``) and its ideal ranking is
  built from every judged document of the query, retrieved or not; recall and MAP divide by every
  relevant judged document;
* queries of the qrels that the run lacks score 0 and count in the means (``missing_queries="zero"``,
  the default: ir-measures and trec_eval ``-c``), or are left out (``"skip"``: trec_eval's and
  pytrec_eval's default); queries of the run absent from the qrels are always skipped and counted;
* a query whose judged documents are all non-relevant scores 0 (included in the means).
"""

from __future__ import annotations

import dataclasses
import io
import math
from pathlib import Path
from typing import NoReturn

import numpy as np
import pandas as pd

from ltrfeat.core.errors import LtrfeatError, TextTableError
from ltrfeat.core.duplicates import resolve_duplicates
from ltrfeat.core.fileio import atomic_output, open_input, read_lines

from ltrfeat.core.metrics import evaluate_queries, parse_metrics

RUN_FIX = "write 'QID Q0 DOCID RANK SCORE TAG' lines: six fields separated by spaces or tabs"
MISSING_QUERIES = ("zero", "skip")
TIE_BREAK = "equal scores ranked by docid, descending (as trec_eval)"


def _text_lines(path) -> list[tuple[int, list[str]]]:
    """(line, fields) of every non-blank line: the slow path that finds and names a bad line."""
    out = []
    for lineno, line in enumerate(_read_text(path).split("\n"), start=1):
        fields = line.split()
        if fields:
            out.append((lineno, fields))
    return out


def _read_text(path) -> str:
    try:
        with open_input(path) as fh:
            raw = fh.read()
    except FileNotFoundError:
        raise TextTableError("file not found", path=path, fix="check the path") from None
    except IsADirectoryError:
        raise TextTableError("is a directory, not a run file", path=path, fix="pass a file") from None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise TextTableError(
            f"cannot decode byte {raw[exc.start : exc.end].hex(' ')} as UTF-8",
            path=path,
            line=raw.count(b"\n", 0, exc.start) + 1,
            fix="TREC files hold UTF-8 (or ASCII) ids",
        ) from None


def read_run(path) -> pd.DataFrame:
    """A TREC run as columns ``qid, docid, rank, score, tag`` (index ``line``: the source line).

    Errors name the file and line: a line without six fields, a score that is not a finite number,
    a rank that is not an integer, a document listed twice for one query (trec_eval refuses those too).
    """
    text = _read_text(path)
    frame = None
    if text.strip():
        try:
            frame = pd.read_csv(
                io.StringIO(text),
                sep=r"\s+",
                header=None,
                dtype=str,
                index_col=False,
                names=["qid", "q0", "docid", "rank", "score", "tag"],
                quoting=3,
                na_filter=False,
                engine="c",
            )
        except (pd.errors.ParserError, ValueError):
            frame = None
    if frame is None or (frame["tag"] == "").any():
        _fail_on_fields(path, 6, RUN_FIX)
    score = pd.to_numeric(frame["score"], errors="coerce").to_numpy(dtype=np.float64)
    rank = pd.to_numeric(frame["rank"], errors="coerce").to_numpy(dtype=np.float64)
    lines = None
    bad_score = ~np.isfinite(score)
    bad_rank = ~np.isfinite(rank) | (rank != np.round(rank))
    if bad_score.any() or bad_rank.any():
        lines = _nonblank_lines(text)
        i = int(np.flatnonzero(bad_score | bad_rank)[0])
        what = (
            f"score {frame['score'].iat[i]!r} is not a finite number"
            if bad_score[i]
            else f"rank {frame['rank'].iat[i]!r} is not an integer"
        )
        raise TextTableError(what, path=path, line=int(lines[i]), fix=RUN_FIX)
    out = pd.DataFrame(
        {
            "qid": frame["qid"],
            "docid": frame["docid"],
            "rank": rank.astype(np.int64),
            "score": score,
            "tag": frame["tag"],
        }
    )
    dup = out.duplicated(["qid", "docid"], keep=False).to_numpy()
    if dup.any():
        lines = _nonblank_lines(text)
        first = int(np.flatnonzero(dup)[0])
        same = np.flatnonzero(
            dup
            & (out["qid"] == out["qid"].iat[first]).to_numpy()
            & (out["docid"] == out["docid"].iat[first]).to_numpy()
        )
        raise TextTableError(
            f"query {out['qid'].iat[first]!r} lists document {out['docid'].iat[first]!r} twice "
            f"(lines {', '.join(str(int(lines[j])) for j in same[:5])})",
            path=path,
            line=int(lines[same[1]]),
            fix="keep one line per (query, document)",
        )
    if lines is None:
        n_lines = text.count("\n") + (0 if text.endswith("\n") else 1)
        lines = np.arange(1, len(out) + 1) if n_lines == len(out) else _nonblank_lines(text)  # no blank line
    out.index = pd.Index(lines, name="line")
    out.attrs["source"] = str(path)
    return out


def _nonblank_lines(text: str) -> np.ndarray:
    lengths = np.fromiter((bool(line.strip()) for line in text.split("\n")), dtype=bool)
    return np.flatnonzero(lengths) + 1


def _fail_on_fields(path, width: int, fix: str) -> NoReturn:
    rows = _text_lines(path)
    if not rows:
        raise TextTableError("file is empty", path=path, fix=fix)
    for lineno, fields in rows:
        if len(fields) != width:
            raise TextTableError(f"expected {width} fields, got {len(fields)}", path=path, line=lineno, fix=fix)
    raise TextTableError("cannot read this file", path=path, fix=fix)  # pragma: no cover - pandas refused, we did not


@dataclasses.dataclass
class Qrels:
    """Judgements ``qid, docid, grade`` with the ``line`` of each in ``path``."""

    path: Path
    frame: pd.DataFrame

    duplicates: dict | None = None

    @classmethod
    def from_rows(cls, path, qid, docid, grade, line, *, duplicates: str = "error") -> "Qrels":
        """Qrels from parallel lists. Repeats of a judgement with the same grade are dropped (qrels files
        repeat lines); a pair judged with different grades is resolved by ``duplicates`` (see
        :mod:`ltrfeat.core.duplicates`)."""
        frame = pd.DataFrame(
            {
                "qid": qid,
                "docid": docid,
                "grade": np.asarray(grade, dtype=np.float64),
                "line": np.asarray(line, dtype=np.int64),
            }
        )
        if len(frame) == 0:
            raise TextTableError("no judgements", path=path, fix="check that this is the qrels file")
        frame = frame.drop_duplicates(["qid", "docid", "grade"])
        frame, figures = resolve_duplicates(
            frame, policy=duplicates, label="grade", lines=frame["line"].to_numpy(), path=path
        )
        return cls(Path(path), frame.reset_index(drop=True), figures)


def parse_qrels(path, encoding: str, *, duplicates: str = "error") -> Qrels:
    """BEIR (``q d grade``, optional header) or TREC (``q iter d grade``) qrels."""
    qid, docid, grade, lines = [], [], [], []
    width, seen_data = None, False
    fix = "write 'QUERY DOC GRADE' (BEIR, header optional) or 'QUERY 0 DOC GRADE' (TREC) lines with integer grades"
    for lineno, line in read_lines(path, encoding):
        parts = line.split()
        if not parts:
            continue
        if len(parts) not in (3, 4) or (width is not None and len(parts) != width):
            raise TextTableError(
                f"expected {width or '3 or 4'} fields, got {len(parts)}", path=path, line=lineno, fix=fix
            )
        try:
            value = float(parts[-1])
        except ValueError:
            if not seen_data and len(parts) == 3:  # a BEIR header such as "query-id corpus-id score"
                seen_data = True
                continue
            raise TextTableError(f"grade {parts[-1]!r} is not a number", path=path, line=lineno, fix=fix) from None
        if not math.isfinite(value) or value != int(value):
            raise TextTableError(f"grade {parts[-1]!r} is not an integer", path=path, line=lineno, fix=fix)
        seen_data, width = True, len(parts)
        qid.append(parts[0])
        docid.append(parts[-2])
        grade.append(int(value))
        lines.append(lineno)
    return Qrels.from_rows(path, qid, docid, grade, lines, duplicates=duplicates)


def read_qrels(path) -> pd.DataFrame:
    """Judgements as columns ``qid, docid, label`` (index ``line``), from TREC ``QID ITER DOCID GRADE``
    or BEIR ``QID DOCID GRADE`` lines. A pair judged twice with different grades is an error."""
    frame = parse_qrels(path, "utf-8").frame
    out = pd.DataFrame(
        {
            "qid": frame["qid"].to_numpy(),
            "docid": frame["docid"].to_numpy(),
            "label": frame["grade"].to_numpy(dtype=np.float64),
        },
        index=pd.Index(frame["line"].to_numpy(), name="line"),
    )
    out.attrs["source"] = str(path)
    return out


def write_qrels(path, qid, docid, label) -> int:
    """Write judgements as TREC qrels ``QID 0 DOCID GRADE`` (integer grades), atomically."""
    label = np.asarray(label, dtype=np.float64)
    if not (np.isfinite(label) & (label == np.round(label))).all():
        raise LtrfeatError("qrels grades must be integers", fix="map the labels to integer grades first")
    rows = list(
        zip(
            np.asarray(qid, dtype=object).tolist(),
            np.asarray(docid, dtype=object).tolist(),
            label.astype(np.int64).tolist(),
        )
    )
    bad = next(
        (i for i, (q, d, _) in enumerate(rows) if not str(q).split() == [str(q)] or not str(d).split() == [str(d)]),
        None,
    )
    if bad is not None:
        raise LtrfeatError(
            f"row {bad + 1}: ids {rows[bad][0]!r} / {rows[bad][1]!r} are empty or hold whitespace",
            fix="use ids without spaces",
        )
    with atomic_output(path) as fh:
        fh.writelines(f"{q} 0 {d} {g}\n" for q, d, g in rows)
    return len(rows)


def trec_order(qid, docid, scores) -> np.ndarray:
    """Row order of a TREC run: queries in order of first appearance, then score descending, then
    docid descending (trec_eval's tie-break, so written ranks equal the order evaluators use)."""
    codes, _ = pd.factorize(np.asarray(qid, dtype=object))
    doc_codes = pd.Series(np.asarray(docid, dtype=object)).rank(method="dense").to_numpy()
    return np.lexsort((-doc_codes, -np.asarray(scores, dtype=np.float64), codes))


def write_trec_run(path, qid, docid, scores, tag: str = "ltrfeat", *, depth: int | None = None) -> int:
    """Write scores as a TREC run ``QID Q0 DOCID RANK SCORE TAG``, atomically; returns the lines written.

    Rows may come in any order. Queries are written in order of first appearance; within a query,
    by score descending, equal scores by docid descending (trec_eval's own tie-break, so the RANK
    column is the order every evaluator uses); ranks start at 1. Scores are written with 17
    significant digits (they read back exactly). ``depth`` keeps the top ``depth`` of each query.
    Ids and the tag must be non-empty and free of whitespace; scores finite; a (qid, docid) pair
    may occur once.
    """
    qid = np.asarray(qid, dtype=object)
    docid = np.asarray(docid, dtype=object)
    scores = np.asarray(scores, dtype=np.float64)
    if not (len(qid) == len(docid) == len(scores)):
        raise LtrfeatError(f"qid, docid and scores differ in length ({len(qid)}, {len(docid)}, {len(scores)})")
    if not tag or any(ch.isspace() for ch in str(tag)):
        raise LtrfeatError(f"run tag {tag!r} is empty or holds whitespace", fix="use a tag such as ltrfeat")
    for name, values in (("qid", qid), ("docid", docid)):
        text = pd.Series(values, dtype=object).astype(str)
        bad = (pd.Series(values, dtype=object).isna() | (text == "") | text.str.contains(r"\s", regex=True)).to_numpy()
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise LtrfeatError(
                f"row {i + 1}: {name} {values[i]!r} is empty or holds whitespace, which a TREC run cannot carry",
                fix=f"use {name}s without spaces",
            )
    if not np.isfinite(scores).all():
        i = int(np.flatnonzero(~np.isfinite(scores))[0])
        raise LtrfeatError(f"row {i + 1}: score {scores[i]} is not finite", fix="write finite scores only")
    keys = pd.DataFrame({"q": qid.astype(str), "d": docid.astype(str)})
    dup = keys.duplicated(keep=False).to_numpy()
    if dup.any():
        i = int(np.flatnonzero(dup)[0])
        raise LtrfeatError(
            f"query {qid[i]!r} holds document {docid[i]!r} twice (row {i + 1})",
            fix="score each (query, document) pair once",
        )
    order = trec_order(qid, docid, scores)
    q_sorted = qid[order]
    starts = np.flatnonzero(np.r_[True, q_sorted[1:] != q_sorted[:-1]]) if len(order) else np.zeros(0, int)
    rank = np.arange(len(order)) - np.repeat(starts, np.diff(np.r_[starts, len(order)])) + 1
    if depth is not None:
        keep = rank <= depth
        order, q_sorted, rank = order[keep], q_sorted[keep], rank[keep]
    with atomic_output(path) as fh:
        fh.writelines(
            f"{q} Q0 {d} {r} {s:.17g} {tag}\n"
            for q, d, r, s in zip(q_sorted.tolist(), docid[order].tolist(), rank.tolist(), scores[order].tolist())
        )
    return len(order)


def evaluate_run(
    qrels: pd.DataFrame,
    run: pd.DataFrame,
    metrics="ndcg@10",
    *,
    gain: str = "linear",
    relevance_threshold: float = 1.0,
    missing_queries: str = "zero",
) -> pd.DataFrame:
    """Per-query metrics of a run (as from :func:`read_run`) against qrels (:func:`read_qrels`).

    The conventions are trec_eval's (see the module docstring). Returns one row per evaluated query
    (run order, then qrels-only queries with ``missing_queries="zero"``), a column per metric plus
    ``n_docs`` (retrieved) and ``n_relevant`` (judged relevant); ``attrs["conventions"]`` describes
    the conventions and ``attrs["skipped"]`` counts the queries left out.
    """
    if missing_queries not in MISSING_QUERIES:
        raise LtrfeatError(
            f"unknown missing-queries policy {missing_queries!r}", fix=f"use one of {', '.join(MISSING_QUERIES)}"
        )
    names = parse_metrics(metrics)
    if any(n.startswith("err@") for n in names):
        raise LtrfeatError("err@k is not defined for TREC runs here", fix="use ndcg, recall, p, map or mrr")
    judged_q = pd.Index(pd.unique(qrels["qid"].to_numpy(dtype=object)))
    run_q = pd.Index(pd.unique(run["qid"].to_numpy(dtype=object)))
    both = run_q[run_q.isin(judged_q)]
    r = run[run["qid"].isin(both)]
    q = qrels[qrels["qid"].isin(both)]
    labels = pd.Series(
        np.maximum(q["label"].to_numpy(dtype=np.float64), 0.0),
        index=pd.MultiIndex.from_arrays([q["qid"].to_numpy(dtype=object), q["docid"].to_numpy(dtype=object)]),
    )
    run_keys = pd.MultiIndex.from_arrays([r["qid"].to_numpy(dtype=object), r["docid"].to_numpy(dtype=object)])
    run_label = labels.reindex(run_keys).fillna(0.0).to_numpy()
    # judged documents the run did not return: ideal ranking and relevant counts only
    unretrieved = q[~labels.index.isin(run_keys) & (labels.to_numpy() > 0)]
    order = trec_order(r["qid"], r["docid"], r["score"])
    floor = (np.min(r["score"].to_numpy()) - 1.0) if len(r) else 0.0
    qid = np.concatenate([r["qid"].to_numpy(dtype=object)[order], unretrieved["qid"].to_numpy(dtype=object)])
    label = np.concatenate([run_label[order], np.maximum(unretrieved["label"].to_numpy(dtype=np.float64), 0.0)])
    score = np.concatenate([r["score"].to_numpy()[order], np.full(len(unretrieved), floor)])
    retrieved = np.r_[np.ones(len(r), dtype=bool), np.zeros(len(unretrieved), dtype=bool)]
    if len(qid):
        # run rows first (trec order), then each query's unretrieved judged documents after them
        regroup = np.lexsort((~retrieved, pd.factorize(qid)[0]))
        qid, label, score, retrieved = qid[regroup], label[regroup], score[regroup], retrieved[regroup]
        per_query = evaluate_queries(
            qid,
            label,
            score,
            names,
            gain=gain,
            no_relevant="zero",
            ties="input",  # the rows are in trec_eval's order
            relevance_threshold=relevance_threshold,
            retrieved=retrieved,
        )
        per_query["n_docs"] = (
            pd.Series(qid[retrieved]).value_counts().reindex(per_query.index).fillna(0).astype(np.int64)
        )
    else:
        per_query = pd.DataFrame(columns=[*names, "n_docs", "n_relevant"], index=pd.Index([], name="qid"))
    conventions = per_query.attrs.get("conventions", {}) if len(qid) else {}
    absent = judged_q[~judged_q.isin(run_q)]
    if missing_queries == "zero" and len(absent):
        relevant = (qrels["label"] >= relevance_threshold).groupby(qrels["qid"]).sum()
        extra = pd.DataFrame(
            {
                **{n: 0.0 for n in names},
                "n_docs": 0,
                "n_relevant": relevant.reindex(absent).to_numpy().astype(np.int64),
            },
            index=pd.Index(absent, name="qid"),
        )
        per_query = pd.concat([per_query, extra])
    per_query.attrs["conventions"] = {
        "gain": gain,
        "relevance_threshold": relevance_threshold,
        "no_relevant": "zero",
        "ties": "docid-descending",
        "missing_queries": missing_queries,
        "description": describe_conventions(gain, relevance_threshold, missing_queries),
    } | {k: v for k, v in conventions.items() if k == "err_max_label"}
    per_query.attrs["skipped"] = {
        "run_queries_without_qrels": int((~run_q.isin(judged_q)).sum()),
        "qrels_queries_without_run": int(len(absent)) if missing_queries == "skip" else 0,
    }
    per_query.attrs["zero_filled"] = int(len(absent)) if missing_queries == "zero" else 0
    return per_query


def describe_conventions(gain: str, relevance_threshold: float, missing_queries: str) -> str:
    gain_text = "rel (linear, trec_eval ndcg_cut)" if gain == "linear" else "2^rel-1"
    missing = (
        "qrels queries missing from the run skipped (trec_eval, pytrec_eval)"
        if missing_queries == "skip"
        else "qrels queries missing from the run scored 0 (ir-measures, trec_eval -c)"
    )
    return (
        f"trec_eval conventions: ranked by score, {TIE_BREAK}; unjudged = not relevant, negative grades = 0; "
        f"relevant = grade >= {relevance_threshold:g}; NDCG gain {gain_text}, ideal from all judged documents; "
        f"queries without a relevant document scored 0; run queries without qrels skipped; {missing}"
    )


def summarise_run(per_query: pd.DataFrame) -> dict:
    """Means over the evaluated queries, counts, and the conventions."""
    metric_cols = [c for c in per_query.columns if c not in ("n_docs", "n_relevant")]
    return {
        "metrics": {c: float(per_query[c].astype(float).mean()) if len(per_query) else math.nan for c in metric_cols},
        "n_queries": int(len(per_query)),
        "skipped": per_query.attrs.get("skipped", {}),
        "qrels_queries_without_run_scored_0": per_query.attrs.get("zero_filled", 0),
        "conventions": per_query.attrs.get("conventions", {}),
    }
