"""The HTTP re-ranking service (FastAPI).

Endpoints:

- ``POST /score`` takes ``{"query": "...", "candidates": [{"docid": "...", "<field>": "..."}]}`` and
  answers ``{"scores": [...], "order": [docids, best first]}``.
- ``POST /explain`` takes the same body, within the same limits, and answers the ``/score`` answer plus
  ``"documents"``: best first, each with ``rank``, ``docid``, ``score``, ``bias`` and every feature's
  ``contributions`` (largest |contribution| first; they and the bias add up to the score, see
  :mod:`ltrfeat.rankers.contributions`).
- ``POST /embed`` takes ``{"query": "..."}`` and answers ``{"params": {...}}``: the parameters of the
  exported LTR featureset for that query (``keywords``, each encoder's ``<name>_query_vector``, the
  query-level values), ready to send as an ``sltr`` query's ``params`` (see
  ``ltrfeat.export.plugin_features``).
- ``GET /health`` describes the ranker (features, fields, limits).
- ``GET /healthz`` (liveness: the process answers) and ``GET /readyz`` (readiness: 503 while the
  service is full or shutting down) never need the token.

Errors are JSON ``{"detail": "..."}``: 400 for a ``Host`` header that names none of the allowed hosts
(DNS rebinding: the probes are exempt), a body that is not JSON, holds a lone surrogate or nests deeper
than ``max_json_depth``; 401 without the bearer token when one is set; 408 when the body has not
arrived within ``client_timeout`` seconds or arrives slower than ``min_body_rate``; 413 for a body
over ``max_bytes``, more than ``max_candidates`` candidates or a text over ``max_text_chars``; 415 for
a body that is not ``application/json`` (a web page can send any other type without a CORS
preflight); 422 for a well-formed body with missing or mistyped fields; 503 (with ``Retry-After``)
when ``max_concurrent`` requests are already in progress or ``max_readers`` bodies are being received;
501 from ``/explain`` when the ranker's kind has no contributions. A request takes one of the
``max_concurrent`` places only once its whole body has arrived, so slow senders cannot lock the others out.

With an event log (:class:`~ltrfeat.serving.impressions.Impressions`) every ``/score`` answer also carries an
``impression_id``, the ``request_id`` that replays it and each result's ``teams`` entry, its first results are
logged before the answer goes out, and ``POST /events`` takes UBI events on them (``{"accepted": n}`` once they
are on disk; 404 without a log, 422 for an event on no result the service keeps). With :class:`Interleaving`
a share of the requests is ranked by both rankers and shown interleaved (``"interleaved": true``).
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
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass

import numpy as np
from fastapi import FastAPI, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, ValidationError
from starlette.background import BackgroundTask
from starlette.requests import ClientDisconnect

from ltrfeat.core.config_files import json_depth
from ltrfeat.rankers.contributions import explained_row
from ltrfeat.serving.fairness import Turns, steps
from ltrfeat.serving.lane import Lane
from ltrfeat.serving.impressions import (
    EventBatch,
    Impression,
    Impressions,
    Interleaving,
    UbiEvent,
    interleaved,
    new_id,
    shown_list,
)
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
    min_body_rate : bytes per second a body must arrive at, on average, after its first second
        (slower: 408 as soon as it falls behind).
    max_concurrent : requests in progress at once (parsed, waiting or being scored; a body still
        arriving does not count); more get 503 with ``Retry-After``, so a burst is shed instead of
        queueing without bound.
    max_readers : request bodies being received at once; more get 503 with ``Retry-After`` (connection
        closed) before any of their body is read, so the bodies held in memory stay under
        ``max_readers * max_bytes`` however many connections send at once.
    max_text_chars : longest query or candidate field in characters (longer: 413 naming it, before
        any text is normalised).
    trim_after_bytes : after a request body this large, return freed heap memory to the OS
        (glibc ``malloc_trim``), so the service does not stay at a burst's peak.
    """

    max_candidates: int = 1000
    max_bytes: int = 1_000_000
    max_json_depth: int = 32
    client_timeout: float = 10.0
    min_body_rate: float = 10_000.0
    max_concurrent: int = 64
    max_readers: int = 256
    max_text_chars: int = 20_000
    trim_after_bytes: int = 256 * 1024

    def __post_init__(self):
        for name in (
            "max_candidates",
            "max_bytes",
            "max_json_depth",
            "max_concurrent",
            "max_readers",
            "max_text_chars",
        ):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1, got {getattr(self, name)}")
        for name in ("client_timeout", "min_body_rate"):
            if not getattr(self, name) > 0:
                raise ValueError(f"{name} must be positive, got {getattr(self, name)}")


LOOPBACK_HOSTS = ("localhost", "127.0.0.1", "::1")
BODY_GRACE = 1.0  # seconds of a body's arrival before min_body_rate applies


class ScoreRequest(BaseModel):
    """Body of ``POST /score``: candidates carry ``docid`` and the ranker's text fields."""

    model_config = ConfigDict(extra="forbid")
    query: str
    candidates: list[dict]
    request_id: str | None = None  # with the service's seed, decides interleaving (a replay gets the same list)
    session: str | None = None  # the log's session (default: the impression id)
    user: str | None = None


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


def host_name(header: str) -> str:
    """The host of a ``Host`` header value, lowercase, without port or trailing dot (``[::1]:80`` -> ``::1``)."""
    header = header.strip().lower()
    if header.startswith("["):
        header = header[1 : header.find("]")] if "]" in header else header
    elif header.count(":") == 1:
        header = header.split(":")[0]
    return header.rstrip(".")


def create_app(
    scorer: Scorer,
    *,
    limits: ServiceLimits | None = None,
    token: str | None = None,
    hosts: tuple[str, ...] = LOOPBACK_HOSTS,
    interleave: Interleaving | None = None,
    impressions: Impressions | None = None,
    lane: Lane | None = None,
) -> FastAPI:
    """The service around ``scorer``; ``token``: when set, every endpoint but ``/healthz`` and
    ``/readyz`` needs the header ``Authorization: Bearer <token>``; ``hosts``: the names the ``Host``
    header may give on those endpoints (``"*"``: any), against DNS rebinding; ``interleave``: ranker B and
    how requests are shared with it (needs ``impressions``, the event log and the impressions kept); ``lane``: the
    worker that computes large requests' features for the scorers (``scorer`` then ranker B), closed with the app."""
    if interleave is not None and impressions is None:
        raise ValueError("interleaving needs an event log (impressions=) to record what each ranker showed")
    service = _Service(scorer, limits or ServiceLimits(), token, hosts, interleave, impressions, lane)

    @contextlib.asynccontextmanager
    async def lifespan(_app):
        yield
        service.state["stopping"] = True
        if lane is not None:
            lane.close()

    app = FastAPI(title="ltrfeat re-ranker", docs_url=None, redoc_url=None, openapi_url=None, lifespan=lifespan)

    @app.get("/healthz")
    def healthz() -> dict:
        return {"status": "ok"}

    @app.get("/readyz")
    def readyz():
        return service.readiness()

    @app.get("/health")
    def health(request: Request):
        try:
            service.check_caller(request)
        except _Refused as exc:
            return _error(exc.status, exc.detail, exc.headers)
        return service.description()

    @app.post("/score")
    async def score(request: Request):
        return await service.guarded(request, service.score_payload)

    @app.post("/explain")
    async def explain(request: Request):
        return await service.guarded(request, service.explain_payload)

    @app.post("/embed")
    async def embed(request: Request):
        return await service.guarded(request, service.embed_payload)

    @app.post("/events")
    async def events(request: Request):
        return await service.guarded(request, service.events_payload)

    return app


class _Service:
    """What :func:`create_app`'s routes share: the scorers, the limits, the places taken and the turns at the
    scorer, and each step of a request: the caller checked, the body received, admitted, parsed and handled."""

    def __init__(
        self,
        scorer: Scorer,
        limits: ServiceLimits,
        token: str | None,
        hosts: tuple[str, ...],
        interleave: Interleaving | None,
        impressions: Impressions | None,
        lane: Lane | None,
    ):
        self.scorer, self.limits = scorer, limits
        self.interleave, self.impressions, self.lane = interleave, impressions, lane
        self.scorers = (scorer,) if interleave is None else (scorer, interleave.scorer)
        self.fields = tuple(dict.fromkeys(f for s in self.scorers for f in s.fields))
        self.state = {"in_progress": 0, "reading": 0, "stopping": False}
        self.turns = Turns()  # the scorer is serialised: waiters wait here, not in threads
        self.lane_turns = Turns()  # the lane's worker, one step at a time too
        self.expected = f"Bearer {token}".encode() if token else None
        self.allowed = None if "*" in hosts else {host_name(h) for h in hosts}

    def readiness(self):
        """``/readyz``: 503 while shutting down or full."""
        if self.state["stopping"]:
            return _error(503, "shutting down")
        if self.state["in_progress"] >= self.limits.max_concurrent:
            return _error(503, f"busy: {self.state['in_progress']} requests in progress", {"Retry-After": "1"})
        return {"status": "ready", "in_progress": self.state["in_progress"]}

    def description(self) -> dict:
        """``/health``: the ranker's features and fields, the limits, ranker B and the event log."""
        answer = {
            "status": "ok",
            "features": self.scorer.feature_names,
            "fields": list(self.fields),
            "max_candidates": self.limits.max_candidates,
            "max_bytes": self.limits.max_bytes,
            "max_text_chars": self.limits.max_text_chars,
        }
        if self.interleave is not None:
            answer["interleave"] = {
                "features_b": self.interleave.scorer.feature_names,
                "method": self.interleave.method,
                "share": self.interleave.share,
            }
        if self.impressions is not None:
            answer["event_log"] = {"depth": self.impressions.depth}
        return answer

    def check_host(self, request: Request) -> None:
        given = request.headers.get("host", "")
        if self.allowed is not None and host_name(given) not in self.allowed:
            raise _Refused(
                400,
                f"Host header {given[:100]!r} names none of the hosts this service answers to "
                f"({', '.join(sorted(self.allowed))}); start serve with --allow-host NAME for a name clients use",
            )

    def check_caller(self, request: Request) -> None:
        """The ``Host`` header (400), then the token (401)."""
        self.check_host(request)
        if self.expected is None:
            return
        given = request.headers.get("authorization", "").encode("latin-1", "replace")
        if not hmac.compare_digest(given, self.expected):
            raise _Refused(
                401,
                "missing or wrong bearer token: send 'Authorization: Bearer <token>'",
                {"WWW-Authenticate": "Bearer"},
            )

    @contextlib.asynccontextmanager
    async def admitted(self):
        if self.state["in_progress"] >= self.limits.max_concurrent:
            raise _Refused(
                503,
                f"the service is busy ({self.limits.max_concurrent} requests in progress); retry shortly",
                {"Retry-After": "1"},
            )
        self.state["in_progress"] += 1
        try:
            yield
        finally:
            self.state["in_progress"] -= 1

    @contextlib.asynccontextmanager
    async def receiving(self):
        if self.state["reading"] >= self.limits.max_readers:
            raise _Refused(
                503,
                f"the service is receiving {self.limits.max_readers} request bodies already; retry shortly",
                {"Retry-After": "1", "Connection": "close"},
            )
        self.state["reading"] += 1
        try:
            yield
        finally:
            self.state["reading"] -= 1

    async def read_body(self, request: Request) -> bytes:
        """The whole body, by ``client_timeout`` and at ``min_body_rate`` at least (else 408)."""
        kind = request.headers.get("content-type", "")
        if kind.split(";")[0].strip().lower() != "application/json":
            raise _Refused(415, f"the body must be sent as Content-Type: application/json, not {kind[:100]!r}")
        declared = request.headers.get("content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.limits.max_bytes:
            raise _Refused(413, f"request body of {declared} bytes exceeds the limit of {self.limits.max_bytes}")
        body = bytearray()
        loop = asyncio.get_running_loop()
        start = loop.time()
        chunks = aiter(request.stream())
        while True:
            due = min(start + self.limits.client_timeout, start + BODY_GRACE + len(body) / self.limits.min_body_rate)
            try:
                async with asyncio.timeout_at(due):
                    chunk = await anext(chunks)
            except StopAsyncIteration:
                return bytes(body)
            except TimeoutError:
                late = loop.time() - start >= self.limits.client_timeout
                raise _Refused(
                    408,
                    f"request body not received within {self.limits.client_timeout:g} s ({len(body)} bytes arrived)"
                    if late
                    else f"request body arriving slower than {self.limits.min_body_rate:g} bytes/s "
                    f"({len(body)} bytes in {loop.time() - start:.1f} s)",
                    {"Connection": "close"},
                ) from None
            body += chunk
            if len(body) > self.limits.max_bytes:
                raise _Refused(413, f"request body exceeds the limit of {self.limits.max_bytes} bytes")

    async def parse(self, data: bytes):
        if len(data) > _INLINE_PARSE_BYTES:  # keep the event loop free for other clients meanwhile
            return await run_in_threadpool(parse_body, data, self.limits.max_json_depth)
        return parse_body(data, self.limits.max_json_depth)

    async def guarded(self, request: Request, handle):
        """Run ``handle(payload, connection)`` with the token, admission, body and disconnect handling."""
        client = f"{request.client.host}:{request.client.port}" if request.client else "a client"
        try:
            self.check_caller(request)
            async with self.receiving():
                body = await self.read_body(request)  # before admission: a slow sender holds no place
            size = len(body)
            async with self.admitted():
                answer = await handle(await self.parse(body), request.client)
        except _Refused as exc:
            return _error(exc.status, exc.detail, exc.headers)
        except ClientDisconnect:
            log.warning("client %s disconnected before sending its whole %s request", client, request.url.path)
            return _error(400, "client disconnected")
        trim = BackgroundTask(run_in_threadpool, release_memory) if size >= self.limits.trim_after_bytes else None
        return JSONResponse(answer, background=trim)

    def check_length(self, where: str, text) -> None:
        if isinstance(text, str) and len(text) > self.limits.max_text_chars:
            raise _Refused(
                413,
                f"{where} holds {len(text):,} characters; the limit is {self.limits.max_text_chars:,} (--max-text-chars)",
            )

    def checked(self, payload) -> ScoreRequest:
        """A ``/score`` or ``/explain`` body within the candidate and text limits (else 413)."""
        req = _validated(ScoreRequest, payload)
        if len(req.candidates) > self.limits.max_candidates:
            raise _Refused(413, f"{len(req.candidates)} candidates exceed the limit of {self.limits.max_candidates}")
        for name in ("query", "request_id", "session", "user"):
            self.check_length(name, getattr(req, name))
        for i, candidate in enumerate(req.candidates):
            for field in self.fields:
                self.check_length(f"candidates[{i}].{field}", candidate.get(field))
        return req

    def large(self, ranker: Scorer, req: ScoreRequest) -> bool:
        """Whether the lane's worker computes the request's features."""
        return self.lane is not None and self.lane.running and self.lane.takes(req.query, req.candidates, ranker.fields)

    async def step(self, ranker: Scorer, pairs, client, in_lane: bool) -> np.ndarray:
        if in_lane and self.lane is not None:
            try:
                return await self.lane_turns.run(client, self.lane.pair_features, self.scorers.index(ranker), pairs)
            except BrokenProcessPool:
                pass  # the worker is gone: here from now on
        return await self.turns.run(client, ranker.pair_features, pairs)

    async def features(self, ranker: Scorer, req: ScoreRequest, client) -> np.ndarray:
        """The request's feature rows, computed in steps so that other requests are scored in between (a large
        request's in the lane's worker)."""
        in_lane = self.large(ranker, req)
        pairs = await self.turns.run(client, ranker.prepare, req.query, req.candidates)
        X = [
            await self.step(ranker, pairs.iloc[part], client, in_lane) for part in steps(req.candidates, ranker.fields)
        ]
        return np.concatenate(X)

    async def logged(self, lines: list[dict]) -> None:
        """Append to the event log; on disk when this returns."""
        try:
            await run_in_threadpool(self.impressions.log.append, lines)  # type: ignore[union-attr]
        except OSError as exc:
            log.error("the event log cannot be written: %s", exc)
            raise _Refused(503, "the event log cannot be written; retry later", {"Retry-After": "5"}) from None

    async def ranked(self, ranker: Scorer, req: ScoreRequest, client) -> np.ndarray:
        """One ranker's scores of the request's candidates, in steps when they are large."""
        try:
            if not self.large(ranker, req) and len(steps(req.candidates, ranker.fields)) == 1:
                scores = await self.turns.run(client, ranker.score, req.query, req.candidates)
            else:
                scores = await self.turns.run(client, ranker.predict, await self.features(ranker, req, client))
        except CandidateError as exc:
            raise _Refused(422, str(exc)) from None
        return _finite(scores)

    async def score_payload(self, payload, client) -> dict:
        req = self.checked(payload)
        scores = await self.ranked(self.scorer, req, client)
        if self.impressions is None:
            order = np.argsort(-scores, kind="stable")
            return {"scores": [float(s) for s in scores], "order": [str(req.candidates[i]["docid"]) for i in order]}
        request_id = req.request_id if req.request_id is not None else new_id()
        both = interleaved(self.interleave, request_id)
        scores_b = await self.ranked(self.interleave.scorer, req, client) if both else None  # type: ignore[union-attr]
        shown, teams, method, rank_a, rank_b = shown_list(scores, scores_b, self.interleave, request_id)
        docids = [str(req.candidates[i]["docid"]) for i in shown]
        impression_id = new_id()
        kept = shown[: self.impressions.depth]
        impression = Impression(
            session=req.session if req.session is not None else impression_id,
            query=req.query,
            docids=tuple(docids[: self.impressions.depth]),
            teams=tuple(teams[: self.impressions.depth]),
            method=method,
            rank_a=tuple(int(r) for r in rank_a[kept]),
            rank_b=tuple(int(r) for r in rank_b[kept]) if rank_b is not None else (None,) * len(kept),
            user=req.user,
        )
        await self.logged(self.impressions.lines(impression_id, impression))
        self.impressions.keep(impression_id, impression)
        answer = {
            "scores": [float(s) for s in scores],
            "order": docids,
            "impression_id": impression_id,
            "request_id": request_id,
            "teams": teams,
            "interleaved": both,
        }
        if scores_b is not None:
            answer["scores_b"] = [float(s) for s in scores_b]
        return answer

    async def explain_payload(self, payload, client) -> dict:
        req = self.checked(payload)
        if not getattr(self.scorer, "explains", False):  # a scorer of another make may not say
            raise _Refused(
                501,
                f"this service's ranker ({type(getattr(self.scorer, 'ranker', self.scorer)).__name__}) cannot say what its "
                "scores are made of: its model class has no contributions(data) method",
            )
        try:
            X = await self.features(self.scorer, req, client)
        except CandidateError as exc:
            raise _Refused(422, str(exc)) from None
        scores = _finite(await self.turns.run(client, self.scorer.predict, X))
        order = np.argsort(-scores, kind="stable")
        answer: dict = {
            "scores": [float(s) for s in scores],
            "order": [str(req.candidates[i]["docid"]) for i in order],
        }
        contrib = await self.turns.run(client, self.scorer.contributions, X)
        answer["documents"] = [
            {"rank": rank, "docid": str(req.candidates[i]["docid"]), **explained_row(contrib, i, scores[i])}
            for rank, i in enumerate(order.tolist(), 1)
        ]
        return answer

    async def embed_payload(self, payload, client) -> dict:
        req = _validated(EmbedRequest, payload)
        self.check_length("query", req.query)
        return {"params": await self.turns.run(client, self.scorer.query_params, req.query)}

    async def events_payload(self, payload, client) -> dict:
        if self.impressions is None:
            raise _Refused(404, "this service keeps no event log; start serve with --event-log DIR")
        batch = isinstance(payload, dict) and "events" in payload
        events = _validated(EventBatch, payload).events if batch else [_validated(UbiEvent, payload)]
        if len(events) > self.limits.max_candidates:
            raise _Refused(413, f"{len(events)} events exceed the limit of {self.limits.max_candidates}")
        for k, event in enumerate(events):
            self.check_length(f"events[{k}].query_id", event.query_id)
            attrs = event.event_attributes
            self.check_length(
                f"events[{k}].event_attributes.object.object_id", attrs and attrs.object and attrs.object.object_id
            )
        try:
            lines = self.impressions.event_lines(events)
        except ValueError as exc:
            raise _Refused(422, str(exc)) from None
        await self.logged(lines)
        return {"accepted": len(lines)}


def _validated(model, payload):
    """``payload`` as ``model``, or 422 naming what is wrong."""
    try:
        return model.model_validate(payload)
    except ValidationError as exc:
        raise _Refused(422, _validation_message(exc)) from None


def _finite(scores: np.ndarray) -> np.ndarray:
    """The scores, or 500 when one is not finite."""
    if not np.isfinite(scores).all():
        bad = int(np.flatnonzero(~np.isfinite(scores))[0])
        log.error("the ranker scored candidate %d as %r: the model file is damaged", bad, float(scores[bad]))
        raise _Refused(500, f"the ranker gave a non-finite score ({float(scores[bad])!r}) to candidate {bad}")
    return scores
