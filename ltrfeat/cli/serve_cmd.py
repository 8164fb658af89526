"""``ltrfeat serve``: the HTTP re-ranking service on one host/port."""
from __future__ import annotations

from pathlib import Path

import click

from ltrfeat.features.errors import LtrfeatError


def _encoders(specs) -> dict:
    out = {}
    for spec in specs:
        name, sep, path = spec.partition("=")
        name = name.strip()
        if not name or name in out:
            raise LtrfeatError(f"bad or repeated --encoder {spec!r}", fix="write NAME=PATH once per encoder name")
        out[name] = path.strip() or None if sep else None
        if out[name] is not None and not Path(out[name]).exists():  # checked before anything starts
            raise LtrfeatError(f"--encoder {name}: no such file or directory", path=out[name],
                               fix="give NAME=PATH of an .ltrenc bundle or an ONNX export directory")
    return out


@click.command()
@click.option("--ranker", required=True, type=click.Path(dir_okay=False), help="Ranker model from train-ranker.")
@click.option("--encoder", "encoders", multiple=True, metavar="NAME=PATH",
              help="Encoder for NAME_<field>_cos / _dot (dot-scored) / _score (deepmatch) features: .ltrenc "
                   "bundle or ONNX export directory (repeatable).")
@click.option("--corpus-stats", type=click.Path(dir_okay=False), help="Corpus statistics for lexical features.")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option("--port", type=click.IntRange(0, 65535), default=8000, show_default=True, help="Port to listen on.")
@click.option("--max-candidates", type=click.IntRange(min=1), default=1000, show_default=True,
              help="Most candidates in one request (more: 413).")
@click.option("--max-bytes", type=click.IntRange(min=1), default=1_000_000, show_default=True,
              help="Largest request body in bytes (larger: 413).")
@click.option("--threads", type=click.IntRange(min=1), default=1, show_default=True,
              help="torch threads per request (one query's candidates are a small batch; more threads often hurt).")
@click.option("--k1", type=float, default=1.2, show_default=True, help="BM25 k1 used at extraction.")
@click.option("--b", "b", type=float, default=0.75, show_default=True, help="BM25 b used at extraction.")
@click.option("--mu", type=float, default=2000.0, show_default=True, help="Dirichlet prior used at extraction.")
@click.option("--jm-lambda", type=float, default=0.1, show_default=True, help="Jelinek-Mercer lambda.")
@click.option("--ad-delta", type=float, default=0.7, show_default=True, help="Absolute discounting delta.")
def serve(ranker, encoders, corpus_stats, host, port, max_candidates, max_bytes, threads, k1, b, mu, jm_lambda, ad_delta):
    """Serve a ranker over HTTP: GET /health, POST /score.

    Computes every feature the ranker needs for one query's candidates and answers
    {"scores": [...], "order": [docids, best first]}. Bad JSON gives 400, too large a
    request 413, missing or mistyped fields 422. Stop it with Ctrl-C or SIGTERM.

    \b
    Example:
      ltrfeat serve --ranker ranker.txt --corpus-stats corpus.npz --encoder clsm=clsm.ltrenc --port 8080
      ltrfeat serve --ranker ranker.txt --corpus-stats corpus.npz --encoder dssm=dse.ltrenc \\
          --encoder deepmatch=dm.ltrenc --port 8080
      curl -s localhost:8080/score -H 'Content-Type: application/json' \\
          -d '{"query": "cheap flights", "candidates": [{"docid": "d1", "title": "Cheap flights to Rome"}]}'
    """
    import torch
    import uvicorn

    from ltrfeat.serving.app import create_app
    from ltrfeat.serving.scorer import Scorer

    torch.set_num_threads(threads)
    scorer = Scorer.load(ranker, encoders=_encoders(encoders), corpus_stats=corpus_stats,
                         lexical_params={"k1": k1, "b": b, "mu": mu, "jm_lambda": jm_lambda, "ad_delta": ad_delta})
    app = create_app(scorer, max_candidates=max_candidates, max_bytes=max_bytes)
    click.echo(f"serving {len(scorer.feature_names)} features on http://{host}:{port} (fields: "
               f"{', '.join(scorer.fields) or 'none'})", err=True)
    uvicorn.run(app, host=host, port=port, log_level="warning", access_log=False)
