"""The Quorum agent protocol (DESIGN.md §3): JSON in and out, validated on both sides.

Every message is defined once, in engine/agents/schema.py; the functions here check through those
definitions and say what is wrong the way each side needs it. Replies from agents are untrusted input: a
bad reply becomes AgentProtocolError naming the agent and the field ("reply lacks chunks[0].id"), never a
crash further on. A request that breaks the protocol is BadRequest (the agent answers HTTP 400).
"""
from __future__ import annotations

import json
import math
import re
from typing import Any

from ..errors import AgentProtocolError
from ..types import Chunk, ClaimLabel, Generation, ToolRequest
from . import schema
from .schema import MAX_ACTIONS, MAX_K, MAX_QUERY_CHARS, Violation   # noqa: F401 (the protocol's limits)


class BadRequest(ValueError):
    """A request to an agent server does not follow the protocol (answered with HTTP 400)."""


def check_reply(agent_id: str, kind: schema.Type, data: Any) -> Any:
    try:
        return schema.check(kind, data)
    except Violation as exc:
        raise AgentProtocolError(agent_id, exc.reply_reason()) from None


def check_request(kind: schema.Type, data: Any) -> Any:
    try:
        return schema.check(kind, data)
    except Violation as exc:
        raise BadRequest(exc.request_reason()) from None


def parse_reply(agent_id: str, operation: str, data: Any) -> Any:
    """Any operation's reply (`schema.operation(name).reply`) as the engine types it."""
    return check_reply(agent_id, schema.operation(operation).reply, data)


def parse_request(operation: str, data: Any) -> Any:
    """Any operation's request as a schema.*Request value."""
    request = schema.operation(operation).request
    if request is None:
        raise BadRequest(f"{operation} takes no request body")
    return check_request(request, data)


# --- replies (the engine's side) -----------------------------------------------------------------
def chunk_to_json(chunk: Chunk) -> dict[str, Any]:
    return {"id": chunk.id, "text": chunk.text, "source": chunk.source, "score": chunk.score,
            "metadata": dict(chunk.metadata)}


def parse_chunks(agent_id: str, data: Any) -> tuple[Chunk, ...]:
    return check_reply(agent_id, schema.RETRIEVE_REPLY, data)


def generation_to_json(gen: Generation) -> dict[str, Any]:
    return {"answer": gen.answer, "reasoning": list(gen.reasoning),
            "claims": [{"text": c.text, "citations": list(c.citations)} for c in gen.claims],
            "confidence": gen.confidence,
            **({"actions": [{"tool": a.tool, "params": dict(a.params)} for a in gen.actions]} if gen.actions else {})}


def parse_generation(agent_id: str, data: Any) -> Generation:
    return check_reply(agent_id, schema.GENERATE_REPLY, data)


def parse_actions(agent_id: str, data: Any) -> tuple[ToolRequest, ...]:
    """Optional `actions: [{"tool": str, "params": {..}}]`: tool calls a generator asks for."""
    try:
        return schema.check(schema.GENERATE_REPLY.field("actions").type, data, "actions")
    except Violation as exc:
        raise AgentProtocolError(agent_id, exc.reply_reason()) from None


def parse_judgement(agent_id: str, data: Any) -> tuple[ClaimLabel, float, str]:
    """`POST /validate` reply: {verdict: supported|refuted|not_enough_evidence, score: 0..1, reason?}."""
    judgement = check_reply(agent_id, schema.VALIDATE_REPLY, data)
    return judgement.label, judgement.score, judgement.reason


def parse_read_reply(agent_id: str, data: Any, candidates: int) -> schema.ReadReply:
    """`POST /read` reply: {scores: [P(yes) per candidate], answer?, reason?}; one score for each candidate asked."""
    reply = check_reply(agent_id, schema.READ_REPLY, data)
    if len(reply.scores) != candidates:
        raise AgentProtocolError(agent_id, f"{len(reply.scores)} scores for {candidates} candidates")
    return reply


def parse_screen_reply(agent_id: str, data: Any, texts: int) -> schema.ScreenReply:
    """`POST /screen` reply: {scores: [P(yes) per text], reason?}; one score for each text asked."""
    reply = check_reply(agent_id, schema.SCREEN_REPLY, data)
    if len(reply.scores) != texts:
        raise AgentProtocolError(agent_id, f"{len(reply.scores)} scores for {texts} passages")
    return reply


def parse_challenge_reply(agent_id: str, data: Any) -> tuple[str, tuple[str, ...]]:
    """`POST /challenge` reply: {quote: the evidence sentence, citations: [chunk ids]}."""
    reply = check_reply(agent_id, schema.CHALLENGE_REPLY, data)
    return reply.quote, reply.citations


def parse_health(agent_id: str, data: Any) -> dict[str, Any]:
    """`GET /health` reply: {status, id, role, backend?, chunks?}."""
    return check_reply(agent_id, schema.HEALTH_REPLY, data)


# --- requests (the agents' side) -----------------------------------------------------------------
def parse_retrieve_request(data: Any) -> tuple[str, int, str]:
    request = check_request(schema.RETRIEVE_REQUEST, data)
    return request.query, request.k, request.trace_id


def parse_generate_request(data: Any) -> tuple[str, tuple[Chunk, ...], str]:
    request = check_request(schema.GENERATE_REQUEST, data)
    return request.query, request.context, request.trace_id


def parse_claim_request(data: Any, evidence_key: str) -> tuple[str, tuple[Chunk, ...], str]:
    """`/validate {claim, evidence, trace_id}` and `/challenge {claim, context, trace_id}` requests."""
    kind = {"evidence": schema.VALIDATE_REQUEST, "context": schema.CHALLENGE_REQUEST}[evidence_key]
    request = check_request(kind, data)
    return request.claim, request.chunks, request.trace_id


def parse_read_request(data: Any) -> schema.ReadRequest:
    """`/read {question, passages, candidates, own_answer?, trace_id}`."""
    return check_request(schema.READ_REQUEST, data)


def parse_screen_request(data: Any) -> schema.ScreenRequest:
    """`/screen {texts, trace_id}`."""
    return check_request(schema.SCREEN_REQUEST, data)


# --- the wire ------------------------------------------------------------------------------------
def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"{text[:20]} is out of a number's range")
    return value


def _bounded_int(text: str) -> int:
    value = int(text)          # past 4300 digits Python itself refuses (ValueError)
    if len(text) > 300:
        try:
            float(value)
        except OverflowError:  # metadata is read as floats further on ("authority"): out of range is no number
            raise ValueError(f"an integer of {len(text)} digits is out of a number's range") from None
    return value


_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")


def loads(body: bytes | str) -> Any:
    """Strict JSON: no NaN or Infinity, no number past a float's range, no nesting too deep for the
    parser, no lone surrogate (\\ud800 is not text: it could not be written out again). Raises ValueError."""
    try:
        value = json.loads(body, parse_constant=_no_constant, parse_float=_finite, parse_int=_bounded_int)
    except RecursionError:
        raise ValueError("nested too deeply") from None
    raw = body if isinstance(body, bytes) else body.encode("utf-8", "surrogatepass")
    if _SURROGATE_ESCAPE.search(raw):       # rare: only then pay for a second pass
        try:
            json.dumps(value, ensure_ascii=False).encode("utf-8")
        except UnicodeEncodeError:
            raise ValueError("a string holds a lone surrogate (\\ud800-\\udfff), which is not text") from None
        except RecursionError:
            raise ValueError("nested too deeply") from None
    return value
