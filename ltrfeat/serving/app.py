"""The HTTP re-ranking service (FastAPI): ``GET /health``, ``POST /score`` and ``POST /embed``.

``POST /embed`` takes ``{"query": "..."}`` and answers ``{"params": {...}}``: the parameters of the
exported LTR featureset for that query (``keywords``, each encoder's ``<name>_query_vector``, the
query-level values), ready to send as an ``sltr`` query's ``params`` (see ``ltrfeat.rankers.plugin_features``).

``POST /score`` takes ``{"query": "...", "candidates": [{"docid": "...", "<field>": "..."}]}``
and answers ``{"scores": [...], "order": [docids, best first]}``. Errors are JSON
``{"detail": "..."}``: 400 for a body that is not JSON, 413 for a body over ``max_bytes`` or more
than ``max_candidates`` candidates, 422 for a well-formed body with missing or mistyped fields.
"""
from __future__ import annotations

import json

import numpy as np
from fastapi import FastAPI, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, ValidationError

from ltrfeat.serving.scorer import CandidateError, Scorer


class ScoreRequest(BaseModel):
    """Body of ``POST /score``: candidates carry ``docid`` and the ranker's text fields."""

    model_config = ConfigDict(extra="forbid")
    query: str
    candidates: list[dict]


class EmbedRequest(BaseModel):
    """Body of ``POST /embed``."""

    model_config = ConfigDict(extra="forbid")
    query: str


def _error(status: int, detail: str) -> JSONResponse:
    return JSONResponse({"detail": detail}, status_code=status)


def _validation_message(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors()[:5]:
        where = ".".join(str(p) for p in err["loc"]) or "body"
        parts.append(f"{where}: {err['msg']}")
    return "; ".join(parts)


def create_app(scorer: Scorer, *, max_candidates: int = 1000, max_bytes: int = 1_000_000) -> FastAPI:
    """The service around ``scorer`` with request limits."""
    app = FastAPI(title="ltrfeat re-ranker", docs_url=None, redoc_url=None)

    @app.get("/health")
    def health() -> dict:
        return {"status": "ok", "features": scorer.feature_names, "fields": list(scorer.fields),
                "max_candidates": max_candidates, "max_bytes": max_bytes}

    @app.post("/score")
    async def score(request: Request):
        declared = request.headers.get("content-length")
        if declared is not None and declared.isdigit() and int(declared) > max_bytes:
            return _error(413, f"request body of {declared} bytes exceeds the limit of {max_bytes}")
        body = bytearray()
        async for chunk in request.stream():
            body += chunk
            if len(body) > max_bytes:
                return _error(413, f"request body exceeds the limit of {max_bytes} bytes")
        try:
            payload = json.loads(body)
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            return _error(400, f"request body is not valid JSON: {exc}")
        try:
            req = ScoreRequest.model_validate(payload)
        except ValidationError as exc:
            return _error(422, _validation_message(exc))
        if len(req.candidates) > max_candidates:
            return _error(413, f"{len(req.candidates)} candidates exceed the limit of {max_candidates}")
        try:
            scores = await run_in_threadpool(scorer.score, req.query, req.candidates)
        except CandidateError as exc:
            return _error(422, str(exc))
        order = np.argsort(-scores, kind="stable")
        return {"scores": [float(s) for s in scores],
                "order": [str(req.candidates[i]["docid"]) for i in order]}

    @app.post("/embed")
    async def embed(req: EmbedRequest):
        return {"params": await run_in_threadpool(scorer.query_params, req.query)}

    return app
