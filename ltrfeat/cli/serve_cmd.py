"""``ltrfeat serve``: the HTTP re-ranking service on one host/port."""

from __future__ import annotations

import signal
from pathlib import Path

import click

from ltrfeat.cli._paths import DIR, FILE
from click.core import ParameterSource

from ltrfeat.cli._options import lexical_options, option_group, scoring_options, threads_option, threads_value
from ltrfeat.core.errors import LtrfeatError


_LIMITS = option_group(  # fields of ltrfeat.serving.app.ServiceLimits, and the lane.Lane bound
    "limits",
    click.option(
        "--max-candidates",
        type=int,
        default=1000,
        help="Most candidates in one request (more: 413).",
    ),
    click.option(
        "--max-bytes",
        type=int,
        default=1_000_000,
        help="Largest request body in bytes (larger: 413).",
    ),
    click.option(
        "--client-timeout",
        type=float,
        default=10.0,
        help="Seconds a client has to send its request headers (else the connection closes) and then its body (else 408).",
    ),
    click.option(
        "--min-body-rate",
        type=click.FloatRange(min=1),
        default=10_000,
        help="Bytes per second a request body must average after its first second (slower: 408).",
    ),
    click.option(
        "--max-concurrent",
        type=int,
        default=64,
        help="Requests in progress at once (parsed, waiting or scored; a body still arriving does not count); "
        "more get 503 with Retry-After.",
    ),
    click.option(
        "--max-readers",
        type=int,
        default=256,
        help="Request bodies received at once; more get 503 with Retry-After before their body is read (the "
        "bodies held in memory stay under this times --max-bytes).",
    ),
    click.option(
        "--max-text-chars",
        type=int,
        default=20_000,
        help="Longest query or candidate field in characters (longer: 413 naming it). A text is scored in one "
        "piece, so this also bounds how long other large requests may wait for one.",
    ),
    click.option(
        "--lane-chars",
        type=int,
        default=4096,
        help="Requests with more text than this (query and candidate fields, in characters) are scored by a worker "
        "process at lower CPU priority, so that small requests never wait for their steps; 0: all in this process.",
    ),
)


_FEATURES = scoring_options(  # what computes the ranker's features (its record names the settings)
    encoder="Encoder for NAME_<field>_cos / _dot (dot-scored) / _score (deepmatch) features: .ltrenc "
    "bundle or ONNX export directory (repeatable; default: the bundle the ranker's record names).",
    corpus_stats="Corpus statistics for lexical features.",
    strict="Answer 422 to a query an --encoder was trained on (else each such query is logged once).",
)


_EXPERIMENT = option_group(  # ltrfeat.serving.impressions: Interleaving and Impressions
    "experiment",
    click.option(
        "--interleave",
        "ranker_b",
        type=FILE,
        help="Ranker B: interleave its ranking with --ranker's (A) and log which ranker each result came from "
        "(needs --event-log; `ltrfeat interleave-report` says which one users prefer). B's features are "
        "computed with the same --encoder/--corpus-stats options, checked against B's own record.",
    ),
    click.option(
        "--interleave-method",
        type=click.Choice(["team-draft", "balanced"]),
        default="team-draft",
        help="How the two rankings are merged.",
    ),
    click.option(
        "--interleave-share",
        type=click.FloatRange(0, 1, min_open=True),
        default=1.0,
        help="Fraction of requests interleaved; the others are served by A alone (and logged as such).",
    ),
    click.option(
        "--interleave-seed",
        type=int,
        default=0,
        help="With a request's request_id, decides whether and how it is interleaved (replays are identical).",
    ),
    click.option(
        "--event-log",
        type=DIR,
        help="Directory for the append-only log of impressions and POST /events events (JSON lines in the "
        "impression-level click format, fsync-ed before each answer). Enables /events.",
    ),
    click.option(
        "--event-log-segment-bytes",
        type=int,
        default=64 * 2**20,
        help="Size after which the log starts a new segment file.",
    ),
    click.option(
        "--event-log-depth",
        type=int,
        default=20,
        help="Results of each impression logged and open to events (set it to what your page shows).",
    ),
    click.option(
        "--impression-memory",
        type=int,
        default=64 * 2**20,
        help="Bytes of recent impressions kept to check events against (the oldest dropped first; an event "
        "on a dropped one gets 422).",
    ),
)


@click.command()
@click.option("--ranker", required=True, type=FILE, help="Ranker model from train-ranker.")
@_FEATURES
@_EXPERIMENT
@click.option("--host", default="127.0.0.1", help="Address to listen on.")
@click.option("--port", type=click.IntRange(0, 65535), default=8000, help="Port to listen on.")
@click.option(
    "--allow-host",
    "allow_hosts",
    multiple=True,
    metavar="NAME",
    help="Also answer requests whose Host header names NAME (repeatable; '*': any). Always answered: localhost, "
    "127.0.0.1, [::1] and --host; other names get 400, which stops DNS-rebinding pages.",
)
@_LIMITS
@option_group(
    "access",
    click.option(
        "--token",
        envvar="LTRFEAT_SERVE_TOKEN",
        show_envvar=True,
        metavar="SECRET",
        help="Require 'Authorization: Bearer SECRET' on /score, /explain, /embed, /events and /health (/healthz and "
        "/readyz stay open for probes). Needed to listen beyond loopback.",
    ),
    click.option(
        "--no-token-beyond-loopback",
        "open_bind",
        is_flag=True,
        help="Allow a non-loopback --host without --token (only behind a proxy that authenticates).",
    ),
)
@threads_option(default=1, what="per request (one query's candidates are a small batch; more threads often hurt)")
@lexical_options(used_at_extraction=True)
def serve(ranker, features, experiment, host, port, allow_hosts, limits, access, threads, lexical_params):
    """Serve a ranker over HTTP: POST /score, /explain, /embed, /events, GET /health, /healthz, /readyz.

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
      ltrfeat serve --ranker a.txt --interleave b.txt --corpus-stats corpus.npz --event-log events/
      ltrfeat interleave-report events/
    """
    token = access["token"]
    lane_chars = limits.pop("lane_chars")
    if not token and not access["open_bind"] and not _loopback(host):
        raise LtrfeatError(
            f"--host {host} listens beyond this machine without authentication",
            fix="set --token SECRET (or LTRFEAT_SERVE_TOKEN), or pass --no-token-beyond-loopback "
            "behind an authenticating proxy",
        )
    ctx = click.get_current_context()
    for names, needed, needs in (
        (
            ("interleave_method", "interleave_share", "interleave_seed"),
            "ranker_b",
            "--interleave B (the second ranker)",
        ),
        (("event_log_segment_bytes", "event_log_depth", "impression_memory"), "event_log", "--event-log DIR"),
    ):
        for name in names:
            source = ctx.get_parameter_source(name)
            if not experiment[needed] and source is not None and source != ParameterSource.DEFAULT:
                raise click.UsageError(f"--{name.replace('_', '-')} needs {needs}")
    if experiment["ranker_b"] and not experiment["event_log"]:
        raise LtrfeatError(
            "--interleave needs --event-log DIR: which ranker each clicked result came from is the experiment",
            fix="add --event-log DIR",
        )
    import torch

    from ltrfeat.encoders.spec import parse_encoder_specs
    from ltrfeat.serving import server
    from ltrfeat.serving.app import LOOPBACK_HOSTS, ServiceLimits, create_app
    from ltrfeat.serving.lane import Lane
    from ltrfeat.serving.scorer import Scorer

    torch.set_num_threads(threads_value(threads))
    _log_to_stderr()
    encoders = parse_encoder_specs(features["encoders"])
    scorer = Scorer.load(
        ranker,
        encoders=encoders,
        corpus_stats=features["corpus_stats"],
        lexical_params=lexical_params,
        strict=features["strict"],
    )
    interleave, impressions = _experiment(experiment, ranker, encoders, features, lexical_params)
    scorers = [scorer] if interleave is None else [scorer, interleave.scorer]
    load_args = [s.load_args for s in scorers]  # each was loaded from a file: none is None
    lane = Lane(load_args, chars=lane_chars, threads=threads_value(threads)) if lane_chars else None
    hosts = (*LOOPBACK_HOSTS, *([] if host in ("0.0.0.0", "::", "") else [host]), *allow_hosts)
    app = create_app(
        scorer,
        limits=ServiceLimits(**limits),
        token=token or None,
        hosts=hosts,
        interleave=interleave,
        impressions=impressions,
        lane=lane,
    )
    click.echo(
        f"serving {len(scorer.feature_names)} features on http://{host}:{port} (fields: "
        f"{', '.join(scorer.fields) or 'none'}; {'bearer token required' if token else 'no token'})",
        err=True,
    )
    # the server stops gracefully on SIGTERM itself and then re-raises it: the default action, not an error
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    server.run(app, host=host, port=port, client_timeout=limits["client_timeout"])


def _experiment(experiment: dict, ranker, encoders: dict, features: dict, lexical_params: dict):
    """Ranker B's :class:`Interleaving` (or None) and the :class:`Impressions` log (or None)."""
    from ltrfeat.experiments.event_log import EventLog
    from ltrfeat.rankers.models import load_ranker
    from ltrfeat.serving.impressions import Impressions, Interleaving
    from ltrfeat.serving.scorer import Scorer

    interleave = None
    names = (Path(ranker).name, "")
    if experiment["ranker_b"]:
        path_b = experiment["ranker_b"]
        features_b = load_ranker(path_b).feature_map_.names
        scorer_b = Scorer.load(  # B's own record is checked against the same options
            path_b,
            encoders={n: p for n, p in encoders.items() if any(f.startswith(n + "_") for f in features_b)},
            corpus_stats=features["corpus_stats"],
            lexical_params=lexical_params,
            strict=features["strict"],
        )
        interleave = Interleaving(
            scorer_b,
            method=experiment["interleave_method"],
            share=experiment["interleave_share"],
            seed=experiment["interleave_seed"],
        )
        names = (Path(ranker).name, Path(path_b).name)
        if names[0] == names[1]:
            names = (f"A:{names[0]}", f"B:{names[1]}")
    if not experiment["event_log"]:
        return None, None
    impressions = Impressions(
        EventLog(experiment["event_log"], max_bytes=experiment["event_log_segment_bytes"]),
        rankers=names,
        depth=experiment["event_log_depth"],
        max_bytes=experiment["impression_memory"],
    )
    return interleave, impressions


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
