"""The Quorum agent protocol (DESIGN.md §3): JSON in and out, validated on both sides.

Replies from agents are untrusted input: every field is type-checked here and a bad reply
becomes AgentProtocolError naming the agent and the field, never a crash further on.
"""
from __future__ import annotations

from typing import Any

from ..errors import AgentProtocolError
from ..types import Chunk, Claim, ClaimLabel, Generation, ToolRequest

MAX_K = 50
MAX_QUERY_CHARS = 4000


class BadRequest(ValueError):
    """A request to an agent server does not follow the protocol (answered with HTTP 400)."""


def _require(agent_id: str, obj: Any, key: str, kind: type | tuple[type, ...], where: str) -> Any:
    if not isinstance(obj, dict) or key not in obj:
        raise AgentProtocolError(agent_id, f"reply lacks {where}{key}")
    value = obj[key]
    kinds = kind if isinstance(kind, tuple) else (kind,)
    if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):
        raise AgentProtocolError(agent_id, f"{where}{key} has type {type(value).__name__}")
    return value


def chunk_to_json(chunk: Chunk) -> dict[str, Any]:
    return {"id": chunk.id, "text": chunk.text, "source": chunk.source, "score": chunk.score,
            "metadata": dict(chunk.metadata)}


def parse_chunks(agent_id: str, data: Any) -> tuple[Chunk, ...]:
    items = _require(agent_id, data, "chunks", list, "")
    chunks = []
    for i, item in enumerate(items):
        where = f"chunks[{i}]."
        metadata = item.get("metadata", {}) if isinstance(item, dict) else None
        if not isinstance(metadata, dict):
            raise AgentProtocolError(agent_id, f"{where}metadata is not an object")
        chunks.append(Chunk(
            id=_require(agent_id, item, "id", str, where),
            text=_require(agent_id, item, "text", str, where),
            source=str(item.get("source", "")),
            score=float(_require(agent_id, item, "score", (int, float), where)),
            metadata=metadata,
        ))
    return tuple(chunks)


def generation_to_json(gen: Generation) -> dict[str, Any]:
    return {"answer": gen.answer, "reasoning": list(gen.reasoning),
            "claims": [{"text": c.text, "citations": list(c.citations)} for c in gen.claims],
            "confidence": gen.confidence,
            **({"actions": [{"tool": a.tool, "params": dict(a.params)} for a in gen.actions]} if gen.actions else {})}


def parse_generation(agent_id: str, data: Any) -> Generation:
    answer = _require(agent_id, data, "answer", str, "")
    reasoning = data.get("reasoning", [])
    if not isinstance(reasoning, list) or not all(isinstance(s, str) for s in reasoning):
        raise AgentProtocolError(agent_id, "reasoning is not a list of strings")
    claims = []
    for i, item in enumerate(_require(agent_id, data, "claims", list, "")):
        where = f"claims[{i}]."
        citations = _require(agent_id, item, "citations", list, where)
        if not all(isinstance(c, str) for c in citations):
            raise AgentProtocolError(agent_id, f"{where}citations is not a list of chunk ids")
        claims.append(Claim(text=_require(agent_id, item, "text", str, where), citations=tuple(citations)))
    confidence = float(_require(agent_id, data, "confidence", (int, float), ""))
    if not 0.0 <= confidence <= 1.0:
        raise AgentProtocolError(agent_id, f"confidence {confidence} is outside 0..1")
    return Generation(answer=answer, reasoning=tuple(reasoning), claims=tuple(claims), confidence=confidence,
                      actions=parse_actions(agent_id, data.get("actions", [])))


MAX_ACTIONS = 8


def parse_actions(agent_id: str, data: Any) -> tuple[ToolRequest, ...]:
    """Optional `actions: [{"tool": str, "params": {..}}]`: tool calls a generator asks for."""
    if not isinstance(data, list):
        raise AgentProtocolError(agent_id, "actions is not a list")
    if len(data) > MAX_ACTIONS:
        raise AgentProtocolError(agent_id, f"{len(data)} actions; at most {MAX_ACTIONS} are taken")
    out = []
    for i, item in enumerate(data):
        where = f"actions[{i}]."
        tool = _require(agent_id, item, "tool", str, where)
        params = item.get("params", {})
        if not isinstance(params, dict):
            raise AgentProtocolError(agent_id, f"{where}params is not an object")
        out.append(ToolRequest(tool, params))
    return tuple(out)


def parse_retrieve_request(data: Any) -> tuple[str, int, str]:
    if not isinstance(data, dict):
        raise BadRequest("body must be a JSON object")
    query, k, trace_id = data.get("query"), data.get("k", 5), data.get("trace_id", "")
    if not isinstance(query, str) or not query.strip():
        raise BadRequest("query must be a non-empty string")
    if len(query) > MAX_QUERY_CHARS:
        raise BadRequest(f"query longer than {MAX_QUERY_CHARS} characters")
    if not isinstance(k, int) or isinstance(k, bool) or not 1 <= k <= MAX_K:
        raise BadRequest(f"k must be an integer 1..{MAX_K}")
    if not isinstance(trace_id, str):
        raise BadRequest("trace_id must be a string")
    return query, k, trace_id


def parse_generate_request(data: Any) -> tuple[str, tuple[Chunk, ...], str]:
    if not isinstance(data, dict):
        raise BadRequest("body must be a JSON object")
    query, trace_id = data.get("query"), data.get("trace_id", "")
    if not isinstance(query, str) or not query.strip():
        raise BadRequest("query must be a non-empty string")
    try:
        context = parse_chunks("request", {"chunks": data.get("context")})
    except AgentProtocolError as exc:
        raise BadRequest(f"context: {exc.reason}") from None
    if not isinstance(trace_id, str):
        raise BadRequest("trace_id must be a string")
    return query, context, trace_id


def parse_judgement(agent_id: str, data: Any) -> tuple[ClaimLabel, float, str]:
    """`POST /validate` reply: {verdict: supported|refuted|not_enough_evidence, score: 0..1, reason?}."""
    verdict = _require(agent_id, data, "verdict", str, "")
    try:
        label = ClaimLabel(verdict)
    except ValueError:
        raise AgentProtocolError(agent_id, f"verdict {verdict!r} is not one of "
                                           f"{', '.join(l.value for l in ClaimLabel)}") from None
    score = float(_require(agent_id, data, "score", (int, float), ""))
    if not 0.0 <= score <= 1.0:
        raise AgentProtocolError(agent_id, f"score {score} is outside 0..1")
    reason = data.get("reason", "")
    return label, score, reason if isinstance(reason, str) else ""


def parse_challenge_reply(agent_id: str, data: Any) -> tuple[str, tuple[str, ...]]:
    """`POST /challenge` reply: {quote: the evidence sentence, citations: [chunk ids]}."""
    quote = _require(agent_id, data, "quote", str, "")
    citations = _require(agent_id, data, "citations", list, "")
    if not all(isinstance(c, str) for c in citations):
        raise AgentProtocolError(agent_id, "citations is not a list of chunk ids")
    return quote, tuple(citations)


def parse_claim_request(data: Any, evidence_key: str) -> tuple[str, tuple[Chunk, ...], str]:
    """`/validate {claim, evidence, trace_id}` and `/challenge {claim, context, trace_id}` requests."""
    if not isinstance(data, dict):
        raise BadRequest("body must be a JSON object")
    claim, trace_id = data.get("claim"), data.get("trace_id", "")
    if not isinstance(claim, str) or not claim.strip():
        raise BadRequest("claim must be a non-empty string")
    try:
        chunks = parse_chunks("request", {"chunks": data.get(evidence_key)})
    except AgentProtocolError as exc:
        raise BadRequest(f"{evidence_key}: {exc.reason}") from None
    if not isinstance(trace_id, str):
        raise BadRequest("trace_id must be a string")
    return claim, chunks, trace_id
