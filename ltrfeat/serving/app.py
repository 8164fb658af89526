"""The HTTP re-ranking service (FastAPI).

Endpoints:

- ``POST /score`` takes ``{"query": "...", "candidates": [{"docid": "...", "<field>": "..."}]}`` and
  answers ``{"scores": [...], "order": [docids, best first]}``.
- ``POST /embed`` takes ``{"query": "..."}`` and answers ``{"params": {...}}``: the parameters of the
  exported LTR featureset for that query (``keywords``, each encoder's ``<name>_query_vector``, the
  query-level values), ready to send as an ``sltr`` query's ``params`` (see
  ``ltrfeat.export.plugin_features``).
- ``GET /health`` describes the ranker (features, fields, limits).
- ``GET /healthz`` (liveness: the process answers) and ``GET /readyz`` (readiness: 503 while the
  service is full or shutting down) never need the token.

Errors are JSON ``{"detail": "..."}``: 400 for a body that is not JSON, holds a lone surrogate or
nests deeper than ``max_json_depth``; 401 without the bearer token when one is set; 408 when the body
has not arrived within ``client_timeout`` seconds; 413 for a body over ``max_bytes`` or more than
``max_candidates`` candidates; 422 for a well-formed body with missing or mistyped fields; 503 (with
``Retry-After``) when ``max_concurrent`` requests are already in progress.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import ctypes.util
import hmac
import json
import logging
import sys
from dataclasses import dataclass

import numpy as np
from fastapi import FastAPI, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, ValidationError
from starlette.background import BackgroundTask
from starlette.requests import ClientDisconnect

from ltrfeat.core.config_files import json_depth
from ltrfeat.serving.scorer import CandidateError, Scorer

log = logging.getLogger("ltrfeat.serve")


@dataclass(frozen=True)
class ServiceLimits:
    """What one request, and the service as a whole, may cost.

    Parameters
    ----------
    max_candidates : most candidates in one ``/score`` request (more: 413).
    max_bytes : largest request body (larger: 413, cut off while it streams in).
    max_json_depth : deepest nesting of arrays/objects in a body (deeper: 400); a request needs 3.
    client_timeout : seconds a client has to send a request's headers (else the connection is
        closed) and, from then, its body (else 408).
    max_concurrent : requests in progress at once (reading, waiting or being scored); more get 503
        with ``Retry-After``, so a burst is shed instead of queueing without bound.
    trim_after_bytes : after a request body this large, return freed heap memory to the OS
        (glibc ``malloc_trim``), so the service does not stay at a burst's peak.
    """

    max_candidates: int = 1000
    max_bytes: int = 1_000_000
    max_json_depth: int = 32
    client_timeout: float = 10.0
    max_concurrent: int = 64
    trim_after_bytes: int = 256 * 1024

    def __post_init__(self):
        for name in ("max_candidates", "max_bytes", "max_json_depth", "max_concurrent"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1, got {getattr(self, name)}")
        if not self.client_timeout > 0:
            raise ValueError(f"client_timeout must be positive, got {self.client_timeout}")


class ScoreRequest(BaseModel):
    """Body of ``POST /score``: candidates carry ``docid`` and the ranker's text fields."""

    model_config = ConfigDict(extra="forbid")
    query: str
    candidates: list[dict]


class EmbedRequest(BaseModel):
    """Body of ``POST /embed``."""

    model_config = ConfigDict(extra="forbid")
    query: str


class _Refused(Exception):
    def __init__(self, status: int, detail: str, headers: dict | None = None):
        super().__init__(detail)
        self.status, self.detail, self.headers = status, detail, headers


def _error(status: int, detail: str, headers: dict | None = None) -> JSONResponse:
    return JSONResponse({"detail": detail}, status_code=status, headers=headers)


def _validation_message(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors()[:5]:
        where = ".".join(str(p) for p in err["loc"]) or "body"
        parts.append(f"{where}: {err['msg']}")
    return "; ".join(parts)


_INLINE_PARSE_BYTES = 64 * 1024


def parse_body(body: bytes, max_depth: int):
    """The JSON value of a request body, or :class:`_Refused` (400) with a one-line reason: nesting deeper
    than ``max_depth`` (checked before parsing, in linear time), invalid JSON or UTF-8, an integer beyond
    Python's digit limit, a lone UTF-16 surrogate."""
    depth = json_depth(body)
    if depth > max_depth:
        raise _Refused(400, f"request body nests {depth} levels deep; the limit is {max_depth}")
    try:
        payload = json.loads(body)
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        raise _Refused(400, f"request body is not valid JSON: {exc}") from None
    except ValueError as exc:  # an integer of more digits than int() converts (sys.get_int_max_str_digits)
        raise _Refused(400, f"request body holds a number that cannot be read: {str(exc).split(';')[0]}") from None
    where = lone_surrogate(payload)
    if where:
        raise _Refused(
            400,
            f"{where} holds a lone UTF-16 surrogate (e.g. \\ud800), which is not text; "
            "send valid UTF-8 or paired surrogate escapes",
        )
    return payload


def lone_surrogate(value, where: str = "body") -> str | None:
    """Where a string of a parsed JSON value holds a lone UTF-16 surrogate (``"\\ud800"`` is valid
    JSON but no text: it cannot be encoded as UTF-8), else None."""
    if isinstance(value, str):
        if not value.isascii():
            try:
                value.encode("utf-8")
            except UnicodeEncodeError:
                return where
        return None
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, item in items:
        found = lone_surrogate(key, f"{where} key") if isinstance(key, str) else None
        found = found or lone_surrogate(item, f"{where}.{key}" if isinstance(key, str) else f"{where}[{key}]")
        if found:
            return found
    return None


def _malloc_trim():
    path = ctypes.util.find_library("c")
    with contextlib.suppress(OSError, AttributeError):
        return ctypes.CDLL(path).malloc_trim if path else None
    return None


_TRIM = _malloc_trim()


def release_memory() -> None:
    """Return freed memory to the OS: pyarrow's pool (the text columns) and the C heap (glibc
    ``malloc_trim``; elsewhere nothing happens). After a 26 MB request this took the server from
    687 to 501 MB (429 MB before the request)."""
    arrow = sys.modules.get("pyarrow")
    if arrow is not None:
        arrow.default_memory_pool().release_unused()
    if _TRIM is not None:
        _TRIM(0)


def create_app(scorer: Scorer, *, limits: ServiceLimits | None = None, token: str | None = None) -> FastAPI:
    """The service around ``scorer``; ``token``: when set, every endpoint but ``/healthz`` and
    ``/readyz`` needs the header ``Authorization: Bearer <token>``."""
    limits = limits or ServiceLimits()
    state = {"in_progress": 0, "stopping": False}
    score_lock = asyncio.Lock()  # the scorer is serialised: waiters wait here, not in threads
    expected = f"Bearer {token}".encode() if token else None

    @contextlib.asynccontextmanager
    async def lifespan(_app):
        yield
        state["stopping"] = True

    app = FastAPI(title="ltrfeat re-ranker", docs_url=None, redoc_url=None, openapi_url=None, lifespan=lifespan)

    def check_token(request: Request) -> None:
        if expected is None:
            return
        given = request.headers.get("authorization", "").encode("latin-1", "replace")
        if not hmac.compare_digest(given, expected):
            raise _Refused(
                401,
                "missing or wrong bearer token: send 'Authorization: Bearer <token>'",
                {"WWW-Authenticate": "Bearer"},
            )

    @contextlib.asynccontextmanager
    async def admitted():
        if state["in_progress"] >= limits.max_concurrent:
            raise _Refused(
                503,
                f"the service is busy ({limits.max_concurrent} requests in progress); retry shortly",
                {"Retry-After": "1"},
            )
        state["in_progress"] += 1
        try:
            yield
        finally:
            state["in_progress"] -= 1

    async def read_json(request: Request):
        declared = request.headers.get("content-length")
        if declared is not None and declared.isdigit() and int(declared) > limits.max_bytes:
            raise _Refused(413, f"request body of {declared} bytes exceeds the limit of {limits.max_bytes}")
        body = bytearray()
        try:
            async with asyncio.timeout(limits.client_timeout):
                async for chunk in request.stream():
                    body += chunk
                    if len(body) > limits.max_bytes:
                        raise _Refused(413, f"request body exceeds the limit of {limits.max_bytes} bytes")
        except TimeoutError:
            raise _Refused(
                408,
                f"request body not received within {limits.client_timeout:g} s ({len(body)} bytes arrived)",
                {"Connection": "close"},
            ) from None
        data = bytes(body)
        if len(data) > _INLINE_PARSE_BYTES:  # keep the event loop free for other clients meanwhile
            payload = await run_in_threadpool(parse_body, data, limits.max_json_depth)
        else:
            payload = parse_body(data, limits.max_json_depth)
        return payload, len(body)

    def validated(model, payload):
        try:
            return model.model_validate(payload)
        except ValidationError as exc:
            raise _Refused(422, _validation_message(exc)) from None

    async def guarded(request: Request, handle):
        """Run ``handle(payload)`` with the token, admission, body and disconnect handling."""
        client = "%s:%d" % tuple(request.client) if request.client else "a client"
        try:
            check_token(request)
            async with admitted():
                payload, size = await read_json(request)
                answer = await handle(payload)
        except _Refused as exc:
            return _error(exc.status, exc.detail, exc.headers)
        except ClientDisconnect:
            log.warning("client %s disconnected before sending its whole %s request", client, request.url.path)
            return _error(400, "client disconnected")
        trim = BackgroundTask(run_in_threadpool, release_memory) if size >= limits.trim_after_bytes else None
        return JSONResponse(answer, background=trim)

    @app.get("/healthz")
    def healthz() -> dict:
        return {"status": "ok"}

    @app.get("/readyz")
    def readyz():
        if state["stopping"]:
            return _error(503, "shutting down")
        if state["in_progress"] >= limits.max_concurrent:
            return _error(503, f"busy: {state['in_progress']} requests in progress", {"Retry-After": "1"})
        return {"status": "ready", "in_progress": state["in_progress"]}

    @app.get("/health")
    def health(request: Request):
        try:
            check_token(request)
        except _Refused as exc:
            return _error(exc.status, exc.detail, exc.headers)
        return {
            "status": "ok",
            "features": scorer.feature_names,
            "fields": list(scorer.fields),
            "max_candidates": limits.max_candidates,
            "max_bytes": limits.max_bytes,
        }

    async def score_payload(payload) -> dict:
        req = validated(ScoreRequest, payload)
        if len(req.candidates) > limits.max_candidates:
            raise _Refused(413, f"{len(req.candidates)} candidates exceed the limit of {limits.max_candidates}")
        async with score_lock:
            try:
                scores = await run_in_threadpool(scorer.score, req.query, req.candidates)
            except CandidateError as exc:
                raise _Refused(422, str(exc)) from None
        if not np.isfinite(scores).all():
            bad = int(np.flatnonzero(~np.isfinite(scores))[0])
            log.error("the ranker scored candidate %d as %r: the model file is damaged", bad, float(scores[bad]))
            raise _Refused(500, f"the ranker gave a non-finite score ({float(scores[bad])!r}) to candidate {bad}")
        order = np.argsort(-scores, kind="stable")
        return {"scores": [float(s) for s in scores], "order": [str(req.candidates[i]["docid"]) for i in order]}

    async def embed_payload(payload) -> dict:
        req = validated(EmbedRequest, payload)
        async with score_lock:
            return {"params": await run_in_threadpool(scorer.query_params, req.query)}

    @app.post("/score")
    async def score(request: Request):
        return await guarded(request, score_payload)

    @app.post("/embed")
    async def embed(request: Request):
        return await guarded(request, embed_payload)

    return app
