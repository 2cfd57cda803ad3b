"""Fuzzing the agent protocol: whatever an agent replies or a caller sends, the parsers raise only
AgentProtocolError / BadRequest (or ValueError for bytes that are not JSON), and the built-in agents answer
200 or 400, never 500. What they accept is what the engine's types promise."""
import asyncio
import json
import math

import httpx
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.agents import schema
from engine.agents.extractive import ExtractiveGenerator
from engine.agents.protocol import (BadRequest, generation_to_json, loads, parse_actions, parse_challenge_reply,
                                    parse_chunks, parse_claim_request, parse_generate_request, parse_generation,
                                    parse_health, parse_judgement, parse_retrieve_request)
from engine.agents.retrievers import BM25Retriever
from engine.agents.server import build_app
from engine.ingest.corpus import load_corpus
from engine.errors import AgentProtocolError
from engine.types import AgentKind, AgentSpec, Chunk, Claim, ClaimLabel, Generation, Role, ToolRequest

from ..conftest import TEST_CORPUS
from .fuzz_strategies import ANY_CHAR, json_values, mutated, texts

FUZZ = settings(max_examples=150, deadline=1000, suppress_health_check=[HealthCheck.too_slow])
CHUNK = {"id": "a#0", "text": "Mars has two moons.", "source": "s", "score": 0.5, "metadata": {"title": "A"}}
VALID_REPLIES = {
    parse_chunks: {"chunks": [CHUNK, {**CHUNK, "id": "b#1"}]},
    parse_generation: {"answer": "Phobos.", "reasoning": ["r"], "claims": [{"text": "Phobos.", "citations": ["a#0"]}],
                       "confidence": 0.75, "actions": [{"tool": "memory.write", "params": {"key": "k"}}]},
    parse_judgement: {"verdict": "supported", "score": 0.9, "reason": "it says so"},
    parse_challenge_reply: {"quote": "Mars has two moons.", "citations": ["a#0"]},
    parse_health: {"status": "ok", "id": "r1", "role": "retriever", "backend": "bm25", "chunks": 4},
}
VALID_REQUESTS = {
    parse_retrieve_request: {"query": "moons", "k": 3, "trace_id": "t"},
    parse_generate_request: {"query": "moons", "context": [CHUNK], "trace_id": "t", "memory": [CHUNK]},
    (lambda d: parse_claim_request(d, "evidence")): {"claim": "c", "evidence": [CHUNK], "trace_id": "t"},
    (lambda d: parse_claim_request(d, "context")): {"claim": "c", "context": [CHUNK]},
}


def _finite(x) -> bool:
    return isinstance(x, float) and math.isfinite(x)


def _is_text(s) -> bool:
    return isinstance(s, str) and not any(0xD800 <= ord(c) <= 0xDFFF for c in s)


def _chunk_ok(c) -> bool:
    return (isinstance(c, Chunk) and _is_text(c.id) and _is_text(c.text) and _is_text(c.source) and _finite(c.score)
            and isinstance(c.metadata, dict))


def _accepted_reply_is_well_typed(parse, value) -> None:
    """What a parser lets through is what the rest of the engine may rely on."""
    if parse is parse_chunks:
        assert isinstance(value, tuple) and all(_chunk_ok(c) for c in value)
    elif parse is parse_generation:
        assert isinstance(value, Generation) and _is_text(value.answer) and 0.0 <= value.confidence <= 1.0
        assert all(_is_text(s) for s in value.reasoning) and isinstance(value.reasoning, tuple)
        assert all(isinstance(c, Claim) and _is_text(c.text) and all(_is_text(i) for i in c.citations)
                   for c in value.claims)
        assert len(value.actions) <= schema.MAX_ACTIONS
        assert all(isinstance(a, ToolRequest) and _is_text(a.tool) and isinstance(a.params, dict) for a in value.actions)
    elif parse is parse_judgement:
        label, score, reason = value
        assert isinstance(label, ClaimLabel) and 0.0 <= score <= 1.0 and _is_text(reason)
    elif parse is parse_challenge_reply:
        quote, citations = value
        assert _is_text(quote) and isinstance(citations, tuple) and all(_is_text(c) for c in citations)
    else:
        assert value["role"] in {r.value for r in Role} and value["id"].strip()


def _reply_property(parse, data) -> None:
    try:
        value = parse("fuzz-agent", data)
    except AgentProtocolError as exc:
        assert exc.agent_id == "fuzz-agent" and exc.reason
        return
    _accepted_reply_is_well_typed(parse, value)


@FUZZ
@given(st.sampled_from(list(VALID_REPLIES)), json_values())
def test_reply_parsers_take_any_json_value(parse, data):
    _reply_property(parse, data)


@FUZZ
@given(st.data())
def test_reply_parsers_take_near_misses_of_good_replies(data):
    parse = data.draw(st.sampled_from(list(VALID_REPLIES)))
    _reply_property(parse, data.draw(mutated(VALID_REPLIES[parse])))


@FUZZ
@given(json_values())
def test_actions_parser_takes_anything(data):
    try:
        actions = parse_actions("fuzz-agent", data)
    except AgentProtocolError:
        return
    assert isinstance(actions, tuple) and len(actions) <= schema.MAX_ACTIONS


@FUZZ
@given(st.data())
def test_request_validators_take_anything(data):
    parse = data.draw(st.sampled_from(list(VALID_REQUESTS)))
    body = data.draw(st.one_of(json_values(), mutated(VALID_REQUESTS[parse])))
    try:
        request = parse(body)
    except BadRequest as exc:
        assert str(exc)
        return
    text, chunks_or_k, trace = request
    assert _is_text(text) and text.strip() and _is_text(trace)
    if isinstance(chunks_or_k, int):
        assert 1 <= chunks_or_k <= schema.MAX_K and len(text) <= schema.MAX_QUERY_CHARS
    else:
        assert all(_chunk_ok(c) for c in chunks_or_k)


gen_texts = texts(ANY_CHAR, 40).filter(lambda s: not any(0xD800 <= ord(c) <= 0xDFFF for c in s))


@FUZZ
@given(st.builds(Generation, answer=gen_texts, reasoning=st.lists(gen_texts, max_size=3).map(tuple),
                 claims=st.lists(st.builds(Claim, gen_texts, st.lists(gen_texts, max_size=3).map(tuple)),
                                 max_size=3).map(tuple),
                 confidence=st.floats(0, 1), actions=st.lists(st.builds(ToolRequest, gen_texts, st.just({})),
                                                              max_size=schema.MAX_ACTIONS).map(tuple)))
def test_every_generation_survives_the_wire(gen):
    """What the built-in agents send (generation_to_json, then JSON) parses back to the same Generation."""
    wire = json.dumps(generation_to_json(gen), ensure_ascii=False).encode("utf-8")
    assert parse_generation("g", loads(wire)) == gen


@FUZZ
@given(st.one_of(st.binary(max_size=300), json_values().map(lambda v: json.dumps(v).encode()),
                 st.text(ANY_CHAR, max_size=100).map(lambda s: s.encode("utf-8", "surrogatepass"))))
def test_strict_json_raises_only_value_error(body):
    try:
        value = loads(body)
    except ValueError:
        return
    json.dumps(value, ensure_ascii=False, allow_nan=False).encode("utf-8")   # whatever it takes can be written out


# --- the built-in agents' HTTP face -------------------------------------------------------------------
CORPUS = load_corpus(TEST_CORPUS)
APPS = {
    Role.RETRIEVER: build_app(AgentSpec(id="r", role=Role.RETRIEVER, kind=AgentKind.QUORUM_HTTP, backend="bm25"),
                              BM25Retriever(CORPUS), len(CORPUS.chunks)),
    Role.GENERATOR: build_app(AgentSpec(id="g", role=Role.GENERATOR, kind=AgentKind.QUORUM_HTTP,
                                        backend="extractive"), ExtractiveGenerator(), 0),
}
ROUTES = [(Role.RETRIEVER, "/retrieve", parse_chunks, {"query": "moons of Mars", "k": 3}),
          (Role.GENERATOR, "/generate", parse_generation, {"query": "Who found the moons?", "context": [CHUNK]}),
          (Role.GENERATOR, "/challenge", parse_challenge_reply, {"claim": "Mars has moons.", "context": [CHUNK]})]


async def _post(app, path: str, body: bytes) -> httpx.Response:
    transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)   # a crash is a 500 here, not a raise
    async with httpx.AsyncClient(transport=transport, base_url="http://agent") as http:
        return await http.post(path, content=body)


@settings(max_examples=120, deadline=2000, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_built_in_agents_answer_200_or_400_to_any_body(data):
    role, path, parse, valid = data.draw(st.sampled_from(ROUTES))
    body = data.draw(st.one_of(
        st.binary(max_size=200),
        json_values().map(lambda v: json.dumps(v).encode()),
        st.tuples(mutated(valid), st.booleans()).map(
            lambda m: json.dumps(m[0], ensure_ascii=m[1]).encode("utf-8", "surrogatepass"))))
    response = asyncio.run(_post(APPS[role], path, body))
    assert response.status_code in (200, 400), (response.status_code, response.text[:300])
    if response.status_code == 400:
        assert response.json()["error"]
    else:
        parse("built-in", loads(response.content))    # its reply is good protocol too
