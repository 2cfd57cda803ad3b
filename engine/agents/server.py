"""The HTTP face of a built-in agent (Starlette app, served by uvicorn on 127.0.0.1)."""
from __future__ import annotations

import json
from typing import Any, Callable

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from ..text import content_words
from ..types import AgentSpec, FaultKind, Role
from ..verify.sentences import rank_sentences
from .extractive import ExtractiveGenerator
from .faults import FaultInjector
from .protocol import BadRequest, chunk_to_json, generation_to_json, parse_generate_request, parse_retrieve_request

MAX_REQUEST_BYTES = 1_000_000


async def _json_body(request: Request) -> Any:
    declared = request.headers.get("content-length")
    if declared and declared.isdigit() and int(declared) > MAX_REQUEST_BYTES:
        raise BadRequest(f"request body over {MAX_REQUEST_BYTES} bytes")
    body = await request.body()
    if len(body) > MAX_REQUEST_BYTES:
        raise BadRequest(f"request body over {MAX_REQUEST_BYTES} bytes")
    try:
        return json.loads(body)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise BadRequest(f"body is not JSON ({exc})") from None


def _guarded(handler: Callable) -> Callable:
    async def endpoint(request: Request) -> JSONResponse:
        try:
            return JSONResponse(await handler(request))
        except BadRequest as exc:
            return JSONResponse({"error": str(exc)}, status_code=400)
    return endpoint


def build_app(spec: AgentSpec, backend: Any, corpus_size: int) -> Starlette:
    """backend: a Retriever for retrievers, an ExtractiveGenerator for generators."""
    faults = FaultInjector(spec.fault)

    async def health(request: Request) -> dict:
        return {"status": "ok", "id": spec.id, "role": spec.role.value, "backend": spec.backend,
                "chunks": corpus_size}

    async def retrieve(request: Request) -> dict:
        query, k, _trace = parse_retrieve_request(await _json_body(request))
        lie = await faults.before_reply()
        chunks = backend.retrieve(query, k)
        if lie:
            chunks = faults.corrupt_chunks(query, chunks)
        return {"chunks": [chunk_to_json(c) for c in chunks]}

    async def generate(request: Request) -> dict:
        query, context, _trace = parse_generate_request(await _json_body(request))
        lie = await faults.before_reply()
        if lie and spec.fault.kind is FaultKind.OMIT_BEST:
            ranked = rank_sentences(query, context)
            gen = (ExtractiveGenerator.answer_from(ranked, ranked[1], set(content_words(query)))
                   if len(ranked) > 1 else backend.generate(query, context))
        else:
            gen = backend.generate(query, context)
            if lie:
                gen = faults.corrupt_generation(query, gen, context)
        return generation_to_json(gen)

    routes = [Route("/health", _guarded(health), methods=["GET"])]
    if spec.role is Role.RETRIEVER:
        routes.append(Route("/retrieve", _guarded(retrieve), methods=["POST"]))
    else:
        routes.append(Route("/generate", _guarded(generate), methods=["POST"]))
    return Starlette(routes=routes)
