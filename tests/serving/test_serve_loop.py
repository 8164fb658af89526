"""The loop closes: a real `serve --interleave --event-log`, simulated users clicking through `/events`, then the
same log directory read by `clicks summary`, trained on by `train-encoder --debias ipw` and by the cross-fitted
encoders of `ablate --click-log`, and judged by `interleave-report`."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("httpx")
pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")

from click.testing import CliRunner  # noqa: E402

from ltrfeat.cli.main import cli  # noqa: E402
from ltrfeat.encoders import Encoder  # noqa: E402
from ltrfeat.rankers.lambdamart import LambdaMART  # noqa: E402
from ltrfeat.serving.process import served  # noqa: E402
from builders import build_world, candidates_of  # noqa: E402

DEPTH = 6


def _invoke(*args):
    result = CliRunner().invoke(cli, [str(a) for a in args])
    assert result.exit_code == 0, result.output
    return result.output


def _users(world, log_dir: Path, rounds: int = 4) -> tuple[int, set, int]:
    """Serve every query ``rounds`` times; a simulated user examines position p with probability 1/p and clicks
    a result of grade > 0 it examines. Returns the impressions served, the clicked (impression, position) and
    the interleaved impressions."""
    args = ["--ranker", world["ranker"], "--interleave", world["ranker_b"], "--corpus-stats", world["corpus"]]
    args += ["--encoder", f"clsm={world['encoder']}", "--event-log", log_dir, "--event-log-depth", DEPTH]
    args += ["--event-log-segment-bytes", 4096]  # rotated: the reader sees several segments
    rng = np.random.default_rng(5)
    grade = dict(zip(zip(world["data"].qid, world["data"].docid), world["data"].label))
    served_n, clicked, interleaved = 0, set(), 0
    with served(args, request_timeout=20) as (_, http):
        for r in range(rounds):
            for qid in sorted(set(world["data"].qid)):
                _, cands = candidates_of(world, qid)
                query = world["queries"].set_index("qid").loc[qid, "query"]
                answer = http.post("/score", json={"query": query, "candidates": cands, "request_id": f"{qid}-{r}"})
                answer = answer.json()
                served_n, interleaved = served_n + 1, interleaved + answer["interleaved"]
                events = [
                    {
                        "action_name": "click",
                        "query_id": answer["impression_id"],
                        "event_attributes": {"position": {"ordinal": p}},
                    }
                    for p, docid in enumerate(answer["order"][:DEPTH], 1)
                    if rng.random() < 1 / p and grade[(qid, docid)] > 0
                ]
                if events:
                    assert http.post("/events", json={"events": events}).status_code == 200
                    clicked |= {(answer["impression_id"], e["event_attributes"]["position"]["ordinal"]) for e in events}
    return served_n, clicked, interleaved


def test_the_event_log_serve_writes_trains_an_encoder_and_reports_the_preference(tmp_path):
    world = build_world(tmp_path, n_queries=12)
    world["ranker_b"] = tmp_path / "ranker_b.txt"
    LambdaMART(n_estimators=3, num_leaves=3, early_stopping_rounds=None, n_jobs=1, seed=7).fit(world["data"]).save(
        world["ranker_b"]
    )
    world["docs"].to_csv(tmp_path / "docs.tsv", sep="\t", index=False)
    log_dir = tmp_path / "events"
    n, clicked, interleaved = _users(world, log_dir)
    assert len(list(log_dir.glob("events-*.jsonl"))) > 1 and clicked

    summary = json.loads(_invoke("clicks", "summary", log_dir, "--json"))
    # one row per shown result, the click lines folded onto them (never counted as impressions)
    assert (summary["impressions"], summary["clicks"]) == (n * DEPTH, len(clicked))
    assert summary["has_positions"] and summary["max_position"] == DEPTH and summary["sessions"] is not None

    out = tmp_path / "loop.ltrenc"
    fast = ["--model", "dssm", "--epochs", "1", "--batch-size", "64", "--threads", "1", "--val-fraction", "0.25"]
    # a short log: too few results shown at several positions to harvest the curve, so EM estimates it
    debias = ["--debias", "ipw", "--propensity-method", "em"]
    trained = _invoke("train-encoder", log_dir, "--docs", tmp_path / "docs.tsv", *debias, "--out", out, *fast)
    assert f"clicks: {n * DEPTH} impressions, {len(clicked)} clicks" in trained
    assert "position bias corrected by ipw (propensity by position, em: 1, " in trained
    record = Encoder.load(out).training["clicks"]
    assert record["debias"] == "ipw" and record["has_positions"]

    data, qtext = world["data"], dict(zip(world["queries"].qid, world["queries"]["query"]))
    titles = world["docs"].set_index("docid")["title"]
    judged = tmp_path / "judged.tsv"
    judged.write_text(
        "qid\tquery\tdoc\tlabel\n"
        + "".join(f"{q}\t{qtext[q]}\t{titles[d]}\t{int(y)}\n" for q, d, y in zip(data.qid, data.docid, data.label))
    )
    ablation = tmp_path / "ablation"
    args = ["--pairs", judged, "--click-log", log_dir, "--click-docs", tmp_path / "docs.tsv", "--debias", "ipw"]
    args += ["--propensity", "em", "--encoder", "dssm:generalized", "--quick", "--no-select", "--report", ablation]
    _invoke("ablate", *args, "--encoder-option", "epochs=1", "--encoder-option", "val_fraction=0")
    clicks = json.loads((ablation / "report.json").read_text())["config"]["click_training"]
    assert any(c["debias"] == "ipw" and c["impressions"] <= n * DEPTH for c in clicks.values()), clicks

    report = json.loads(_invoke("interleave-report", log_dir, "--json"))
    assert report["overall"]["impressions"] == interleaved and report["clicked_impressions"] > 0
