"""The HTTP face of a built-in agent (Starlette app, served by uvicorn on 127.0.0.1)."""
from __future__ import annotations

import asyncio
from typing import Any, Callable

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from ..text import content_words
from ..types import AgentSpec, ClaimLabel, FaultKind, Role
from ..verify.judge import JudgeVerifier
from ..verify.judge_runtime import JudgeModelFailed
from ..verify.sentences import rank_sentences
from .extractive import ExtractiveGenerator
from .llm_local import LocalLlmGenerator, ModelReplyNotJson
from .faults import FaultInjector, flap_cycle, with_reply_faults, with_wire_faults
from .protocol import (BadRequest, chunk_to_json, generation_to_json, loads, parse_claim_request, parse_generate_request,
                       parse_read_request, parse_retrieve_request, parse_screen_request)
from .schema import MAX_REQUEST_BYTES


async def _json_body(request: Request) -> Any:
    declared = request.headers.get("content-length")
    if declared and declared.isdigit() and int(declared) > MAX_REQUEST_BYTES:
        raise BadRequest(f"request body over {MAX_REQUEST_BYTES} bytes")
    body = bytearray()
    async for piece in request.stream():       # a chunked body has no length to check first: stop at the cap
        body.extend(piece)
        if len(body) > MAX_REQUEST_BYTES:
            raise BadRequest(f"request body over {MAX_REQUEST_BYTES} bytes")
    try:
        return loads(bytes(body))
    except ValueError as exc:     # bad JSON or UTF-8, NaN, too deep, an integer of 4300+ digits, a lone surrogate
        raise BadRequest(f"body is not JSON ({exc})") from None


class ModelFailed(Exception):
    """The agent's model gave no usable reply (answered 502: the request was fine, the agent failed)."""


def _guarded(handler: Callable) -> Callable:
    async def endpoint(request: Request) -> JSONResponse:
        try:
            return JSONResponse(await handler(request))
        except BadRequest as exc:
            return JSONResponse({"error": str(exc)}, status_code=400)
        except ModelFailed as exc:
            return JSONResponse({"error": str(exc)}, status_code=502)
    return endpoint


def build_app(spec: AgentSpec, backend: Any, corpus_size: int, key: bytes | None = None) -> Any:
    """backend: a Retriever for retrievers, an ExtractiveGenerator for generators. key: the agent's key
    (engine.agents.auth): requests must then be signed by the engine, and every reply is signed."""
    faults = FaultInjector(spec.fault, cycle=flap_cycle())
    model_turn = asyncio.Lock()      # llm-local and llm-judge: the model answers one request at a time

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
        if isinstance(backend, LocalLlmGenerator):    # the model's own reply, for the engine to judge
            async with model_turn:       # one at a time; a request whose caller gave up meanwhile is dropped
                if await request.is_disconnected():
                    raise ModelFailed("the caller went away while the request waited for the model")
                try:
                    return await asyncio.to_thread(backend.reply, query, context)
                except ModelReplyNotJson as exc:
                    raise ModelFailed(str(exc)) from None
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

    async def challenge(request: Request) -> dict:
        # An honest generator shows the context sentence closest to the claim; whether that
        # sentence really backs the claim is for the engine to judge, not for the agent to say.
        claim, context, _trace = parse_claim_request(await _json_body(request), "context")
        ranked = rank_sentences(claim, context)
        return {"quote": ranked[0].text, "citations": [ranked[0].chunk_id]} if ranked else {"quote": "", "citations": []}

    async def validate(request: Request) -> dict:
        claim, evidence, _trace = parse_claim_request(await _json_body(request), "evidence")
        lie = await faults.before_reply()
        if isinstance(backend, JudgeVerifier):     # seconds of model time: off the loop, so /health still answers
            judgement = await _model_turn(request, backend.judge_sync, claim, evidence)
        else:
            judgement = backend.judge_sync(claim, evidence)
        label = judgement.label
        if lie:   # a Byzantine verifier vouches for what it should refute, and the other way round
            label = ClaimLabel.REFUTED if label is ClaimLabel.SUPPORTED else ClaimLabel.SUPPORTED
        return {"verdict": label.value, "score": judgement.score, "reason": judgement.reason}

    async def read(request: Request) -> dict:
        asked = parse_read_request(await _json_body(request))
        lie = await faults.before_reply()
        scores, answer = await _model_turn(request, backend.read_sync, asked.question, asked.passages,
                                           asked.candidates, asked.own_answer)
        reason = "the judge's reading"
        if lie:   # a Byzantine judge reads the passages' answer as not it, and the other way round
            scores, reason = tuple(round(1.0 - p, 4) for p in scores), "the judge's reading, reversed"
        return {"scores": list(scores), "answer": answer, "reason": reason}

    async def screen(request: Request) -> dict:
        asked = parse_screen_request(await _json_body(request))
        lie = await faults.before_reply()
        scores = await _model_turn(request, backend.instructs_sync, asked.texts)
        reason = "the judge's reading"
        if lie:   # a Byzantine judge reads an instruction as none, and the other way round
            scores, reason = tuple(round(1.0 - p, 4) for p in scores), "the judge's reading, reversed"
        return {"scores": list(scores), "reason": reason}

    async def _model_turn(request: Request, work, *args):
        """Model time, off the loop (so /health still answers), one request at a time; a request whose caller
        went away while it waited is dropped, and a model that gave no reading is the agent's failure (502)."""
        async with model_turn:
            if await request.is_disconnected():
                raise ModelFailed("the caller went away while the request waited for the model")
            try:
                return await asyncio.to_thread(work, *args)
            except JudgeModelFailed as exc:
                raise ModelFailed(str(exc)) from None

    routes = [Route("/health", _guarded(health), methods=["GET"])]
    if spec.role is Role.RETRIEVER:
        routes.append(Route("/retrieve", _guarded(retrieve), methods=["POST"]))
    elif spec.role is Role.GENERATOR:
        routes.append(Route("/generate", _guarded(generate), methods=["POST"]))
        routes.append(Route("/challenge", _guarded(challenge), methods=["POST"]))
    else:
        routes.append(Route("/validate", _guarded(validate), methods=["POST"]))
        if isinstance(backend, JudgeVerifier):     # the only built-in verifier that reads answers; others 404
            routes.append(Route("/read", _guarded(read), methods=["POST"]))
            routes.append(Route("/screen", _guarded(screen), methods=["POST"]))
    # A bad reply is the agent's own, so it is signed; the wire and the process fail outside the signature.
    app = with_reply_faults(Starlette(routes=routes), faults)
    if key is not None:
        from .signed_app import SignedApp
        app = SignedApp(app, spec.id, key, MAX_REQUEST_BYTES)
    return with_wire_faults(app, faults, key)
