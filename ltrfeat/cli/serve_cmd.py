"""``ltrfeat serve``: the HTTP re-ranking service on one host/port."""

from __future__ import annotations

import signal
from pathlib import Path

import click

from ltrfeat.cli._options import lexical_options, option_group, threads_option, threads_value
from ltrfeat.core.errors import LtrfeatError


def _encoders(specs) -> dict:
    out = {}
    for spec in specs:
        name, sep, path = spec.partition("=")
        name = name.strip()
        if not name or name in out:
            raise LtrfeatError(f"bad or repeated --encoder {spec!r}", fix="write NAME=PATH once per encoder name")
        out[name] = path.strip() or None if sep else None
        if out[name] is not None and not Path(out[name]).exists():  # checked before anything starts
            raise LtrfeatError(
                f"--encoder {name}: no such file or directory",
                path=out[name],
                fix="give NAME=PATH of an .ltrenc bundle or an ONNX export directory",
            )
    return out


_LIMITS = option_group(  # fields of ltrfeat.serving.app.ServiceLimits
    "limits",
    click.option(
        "--max-candidates",
        type=click.IntRange(min=1),
        default=1000,
        show_default=True,
        help="Most candidates in one request (more: 413).",
    ),
    click.option(
        "--max-bytes",
        type=click.IntRange(min=1),
        default=1_000_000,
        show_default=True,
        help="Largest request body in bytes (larger: 413).",
    ),
    click.option(
        "--client-timeout",
        type=click.FloatRange(min=0.1),
        default=10.0,
        show_default=True,
        help="Seconds a client has to send its request headers (else the connection closes) and then its body (else 408).",
    ),
    click.option(
        "--min-body-rate",
        type=click.FloatRange(min=1),
        default=10_000,
        show_default=True,
        help="Bytes per second a request body must average after its first second (slower: 408).",
    ),
    click.option(
        "--max-concurrent",
        type=click.IntRange(min=1),
        default=64,
        show_default=True,
        help="Requests in progress at once (parsed, waiting or scored; a body still arriving does not count); "
        "more get 503 with Retry-After.",
    ),
    click.option(
        "--max-readers",
        type=click.IntRange(min=1),
        default=256,
        show_default=True,
        help="Request bodies received at once; more get 503 with Retry-After before their body is read (the "
        "bodies held in memory stay under this times --max-bytes).",
    ),
    click.option(
        "--max-text-chars",
        type=click.IntRange(min=1),
        default=20_000,
        show_default=True,
        help="Longest query or candidate field in characters (longer: 413 naming it). A text is scored in one "
        "piece, so this also bounds how long other requests may wait for one.",
    ),
)


_FEATURES = option_group(  # what computes the ranker's features (its record names the settings)
    "features",
    click.option(
        "--encoder",
        "encoders",
        multiple=True,
        metavar="NAME=PATH",
        help="Encoder for NAME_<field>_cos / _dot (dot-scored) / _score (deepmatch) features: .ltrenc "
        "bundle or ONNX export directory (repeatable; default: the bundle the ranker's record names).",
    ),
    click.option("--corpus-stats", type=click.Path(dir_okay=False), help="Corpus statistics for lexical features."),
    click.option(
        "--strict",
        is_flag=True,
        help="Answer 422 to a query an --encoder was trained on (else each such query is logged once).",
    ),
)


@click.command()
@click.option("--ranker", required=True, type=click.Path(dir_okay=False), help="Ranker model from train-ranker.")
@_FEATURES
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option("--port", type=click.IntRange(0, 65535), default=8000, show_default=True, help="Port to listen on.")
@click.option(
    "--allow-host",
    "allow_hosts",
    multiple=True,
    metavar="NAME",
    help="Also answer requests whose Host header names NAME (repeatable; '*': any). Always answered: localhost, "
    "127.0.0.1, [::1] and --host; other names get 400, which stops DNS-rebinding pages.",
)
@_LIMITS
@click.option(
    "--token",
    envvar="LTRFEAT_SERVE_TOKEN",
    show_envvar=True,
    metavar="SECRET",
    help="Require 'Authorization: Bearer SECRET' on /score, /explain, /embed and /health (/healthz and /readyz "
    "stay open for probes). Needed to listen beyond loopback.",
)
@click.option(
    "--no-token-beyond-loopback",
    "open_bind",
    is_flag=True,
    help="Allow a non-loopback --host without --token (only behind a proxy that authenticates).",
)
@threads_option(default=1, what="per request (one query's candidates are a small batch; more threads often hurt)")
@lexical_options(used_at_extraction=True)
def serve(ranker, features, host, port, allow_hosts, limits, token, open_bind, threads, lexical_params):
    """Serve a ranker over HTTP: POST /score, POST /explain, POST /embed, GET /health, /healthz, /readyz.

    Computes every feature the ranker needs for one query's candidates and answers
    {"scores": [...], "order": [docids, best first]}; POST /explain takes the same request and adds
    each document's per-feature contributions to its score. Each candidate carries its docid and
    every text field the ranker's features read (GET /health lists them as "fields"; the
    example below is for a ranker on title and description). An unknown Host, bad JSON, lone
    surrogates or deep nesting give 400, no token 401, a stalled or slow body 408, too large a
    request or text 413, a body not sent as application/json 415, missing or mistyped fields 422,
    a full service 503 with Retry-After. Stop it with Ctrl-C or SIGTERM.

    \b
    Example:
      ltrfeat serve --ranker ranker.txt --corpus-stats corpus.npz --encoder clsm=clsm.ltrenc --port 8080
      ltrfeat serve --ranker ranker.txt --corpus-stats corpus.npz --encoder dssm=dse.ltrenc \\
          --encoder deepmatch=dm.ltrenc --port 8080
      curl -s localhost:8080/health | python -m json.tool    # "fields": the texts each candidate needs
      curl -s localhost:8080/score -H 'Content-Type: application/json' -d '{"query": "cheap flights",
          "candidates": [{"docid": "d1", "title": "Cheap flights to Rome", "description": "Return fares"}]}'
    """
    if not token and not open_bind and not _loopback(host):
        raise LtrfeatError(
            f"--host {host} listens beyond this machine without authentication",
            fix="set --token SECRET (or LTRFEAT_SERVE_TOKEN), or pass --no-token-beyond-loopback "
            "behind an authenticating proxy",
        )
    import torch

    from ltrfeat.serving import server
    from ltrfeat.serving.app import LOOPBACK_HOSTS, ServiceLimits, create_app
    from ltrfeat.serving.scorer import Scorer

    torch.set_num_threads(threads_value(threads))
    _log_to_stderr()
    scorer = Scorer.load(
        ranker,
        encoders=_encoders(features["encoders"]),
        corpus_stats=features["corpus_stats"],
        lexical_params=lexical_params,
        strict=features["strict"],
    )
    hosts = (*LOOPBACK_HOSTS, *([] if host in ("0.0.0.0", "::", "") else [host]), *allow_hosts)
    app = create_app(scorer, limits=ServiceLimits(**limits), token=token or None, hosts=hosts)
    click.echo(
        f"serving {len(scorer.feature_names)} features on http://{host}:{port} (fields: "
        f"{', '.join(scorer.fields) or 'none'}; {'bearer token required' if token else 'no token'})",
        err=True,
    )
    # the server stops gracefully on SIGTERM itself and then re-raises it: the default action, not an error
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    server.run(app, host=host, port=port, client_timeout=limits["client_timeout"])


def _loopback(host: str) -> bool:
    import ipaddress

    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _log_to_stderr() -> None:
    """The service's own warnings (disconnects, slow clients) as one line each on stderr."""
    import logging

    log = logging.getLogger("ltrfeat.serve")
    if not log.handlers:
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter("ltrfeat serve: %(message)s"))
        log.addHandler(handler)
        log.setLevel(logging.INFO)
        log.propagate = False
