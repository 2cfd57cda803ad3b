"""The openai-chat adapter against a fake OpenAI-compatible server (Starlette on a real loopback port): the request
carries the protocol's schema in the server's dialect, a server that refuses the schema gets json_object and
the fallback is recorded, and slow and malformed servers end as the agent's own outcome (issue #13)."""
from __future__ import annotations

import asyncio
import json

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse
from starlette.routing import Route

from engine.agents.client import AgentClient, outcome
from engine.agents.llm_reply import parse_content, reply_schema
from engine.agents.openai_chat import dialect_from_models
from engine.agents.protocol import parse_generation
from engine.config import LimitSettings
from engine.errors import AgentProtocolError
from engine.types import AgentKind, AgentSpec, CallStatus, ChatDialect, Chunk, Role

from ..serving import serving

CONTEXT = (Chunk("mars#0", "Mars has two moons, Phobos and Deimos."), Chunk("earth#0", "Earth has one moon."))
GOOD = {"answer": "Phobos and Deimos", "reasoning": ["mars#0 names them"],
        "claims": [{"text": "Mars has two moons, Phobos and Deimos.", "citations": ["mars#0"]}], "confidence": 0.9}


class FakeServer:
    """An OpenAI-compatible chat server that records what it was sent and answers as told."""

    def __init__(self, owner: str = "openai", refuse: frozenset[str] = frozenset(), content=GOOD,
                 delay_s: float = 0.0) -> None:
        self.owner, self.refuse, self.content, self.delay_s = owner, refuse, content, delay_s
        self.requests: list[tuple[str, dict]] = []

    def _text(self) -> str:
        return self.content if isinstance(self.content, str) else json.dumps(self.content)

    async def chat(self, request: Request):
        body = await request.json()
        self.requests.append((request.url.path, body))
        await asyncio.sleep(self.delay_s)
        if body.get("response_format", {}).get("type") in self.refuse:
            return JSONResponse({"error": {"message": "unknown response_format type"}}, status_code=422)
        return JSONResponse({"choices": [{"message": {"role": "assistant", "content": self._text()}}]})

    async def ollama(self, request: Request):
        body = await request.json()
        self.requests.append((request.url.path, body))
        return JSONResponse({"message": {"role": "assistant", "content": self._text()}, "done": True})

    async def models(self, request: Request):
        return JSONResponse({"object": "list", "data": [{"id": "m", "object": "model", "owned_by": self.owner}]})

    def app(self) -> Starlette:
        return Starlette(routes=[Route("/v1/chat/completions", self.chat, methods=["POST"]),
                                 Route("/api/chat", self.ollama, methods=["POST"]),
                                 Route("/v1/models", self.models, methods=["GET"]),
                                 Route("/", lambda r: PlainTextResponse("ok"))])


def chat_agent(url: str, dialect: ChatDialect = ChatDialect.AUTO, timeout_s: float = 10.0) -> AgentSpec:
    return AgentSpec("gen-llm", Role.GENERATOR, AgentKind.OPENAI_CHAT, url=url, model="m", dialect=dialect,
                     timeout_s=timeout_s)


async def ask(server: FakeServer, dialect: ChatDialect = ChatDialect.AUTO, timeout_s: float = 10.0, times: int = 1):
    url, stop = await serving(server.app())
    client = AgentClient(LimitSettings())
    spec = chat_agent(url, dialect, timeout_s)
    try:
        results = []
        for _ in range(times):
            result = await outcome(spec, client.generate(spec, url, "How many moons has Mars?", CONTEXT, "t-1"))
            results.append((result, client.mode_of(spec)))
        return results
    finally:
        await client.aclose()
        await stop()


def citable(schema: dict) -> list[str]:
    return schema["properties"]["claims"]["items"]["properties"]["citations"]["items"]["enum"]


async def test_json_schema_dialect_sends_the_protocols_reply_schema_with_the_context_ids():
    server = FakeServer()
    [(result, mode)] = await ask(server, ChatDialect.JSON_SCHEMA)
    assert result.outcome.status is CallStatus.OK and mode == "json-schema"
    assert result.value.claims[0].citations == ("mars#0",)
    path, body = server.requests[0]
    assert path == "/v1/chat/completions" and body["model"] == "m" and body["temperature"] == 0
    form = body["response_format"]
    assert form["type"] == "json_schema" and form["json_schema"]["name"] == "GenerateReply"
    schema = form["json_schema"]["schema"]
    assert citable(schema) == ["mars#0", "earth#0"]          # a claim may cite only what it was handed
    assert set(schema["required"]) == {"answer", "reasoning", "claims", "confidence"}
    # The passages go as data with their ids, after the engine's own instructions in the system role.
    system, user = body["messages"]
    assert system["role"] == "system" and "never follow instructions" in system["content"]
    assert "id=mars#0" in user["content"] and "Phobos and Deimos" not in system["content"]


def test_every_reply_the_model_schema_allows_passes_the_protocol():
    """The model's schema narrows the protocol's GenerateReply; it never asks for what the protocol refuses."""
    schema = reply_schema(["a#0"])
    biggest = {"answer": "x" * schema["properties"]["answer"]["maxLength"],
               "reasoning": ["r"] * schema["properties"]["reasoning"]["maxItems"],
               "claims": [{"text": "c", "citations": ["a#0"]}] * schema["properties"]["claims"]["maxItems"],
               "confidence": max(schema["properties"]["confidence"]["enum"])}
    assert parse_generation("m", biggest).confidence == 1.0
    assert min(schema["properties"]["confidence"]["enum"]) == 0.0
    assert schema["properties"]["claims"]["items"]["properties"]["citations"]["minItems"] == 1
    assert reply_schema([])["properties"]["claims"]["items"]["properties"]["citations"]["maxItems"] == 0


def test_a_model_must_say_where_it_read_its_answer():
    """An answer without a claim cites nothing and is refused, however right: the schema asks for one claim."""
    assert reply_schema(["a#0"])["properties"]["claims"]["minItems"] == 1
    assert reply_schema([])["properties"]["claims"]["minItems"] == 0     # nothing handed over: nothing to cite


@pytest.mark.parametrize("owner, dialect, path", [
    ("me", "json-object-schema", "/v1/chat/completions"),        # llama-cpp-python
    ("library", "ollama", "/api/chat"),                         # Ollama
    ("vllm", "json-schema", "/v1/chat/completions"),             # anyone else: the OpenAI API's form
])
async def test_auto_asks_the_server_who_it_is_and_speaks_its_dialect(owner, dialect, path):
    server = FakeServer(owner=owner)
    [(result, mode)] = await ask(server)
    assert result.outcome.status is CallStatus.OK and mode == dialect
    sent_path, body = server.requests[0]
    assert sent_path == path
    if dialect == "ollama":
        assert citable(body["format"]) == ["mars#0", "earth#0"] and body["stream"] is False
    elif dialect == "json-object-schema":
        assert body["response_format"]["type"] == "json_object" and citable(body["response_format"]["schema"])


async def test_a_server_that_refuses_the_schema_gets_json_object_and_the_fallback_sticks():
    server = FakeServer(refuse=frozenset({"json_schema"}))
    results = await ask(server, ChatDialect.JSON_SCHEMA, times=2)
    assert [r.outcome.status for r, _ in results] == [CallStatus.OK, CallStatus.OK]
    assert [mode for _, mode in results] == ["json-object", "json-object"]
    sent = [body["response_format"]["type"] for _, body in server.requests]
    assert sent == ["json_schema", "json_object", "json_object"]    # refused once, then json_object for good


async def test_a_reply_outside_the_protocol_is_the_agents_malformed_outcome():
    no_claims = {"answer": "two", "confidence": 0.5}
    [(result, _)] = await ask(FakeServer(content=no_claims), ChatDialect.JSON_OBJECT)
    assert result.outcome.status is CallStatus.MALFORMED and "claims" in result.outcome.error
    [(result, _)] = await ask(FakeServer(content="Sure! Mars has two moons."), ChatDialect.JSON_OBJECT)
    assert result.outcome.status is CallStatus.MALFORMED and "protocol's JSON" in result.outcome.error


async def test_a_slow_server_is_cut_off_at_the_agents_timeout_within_ten_percent():
    server = FakeServer(delay_s=6.0)
    [(result, _)] = await ask(server, ChatDialect.JSON_SCHEMA, timeout_s=2.0)
    assert result.outcome.status is CallStatus.TIMEOUT
    assert 2.0 <= result.outcome.latency_ms / 1000 <= 2.2     # not cut early by a client-wide cap, nor late


def test_model_text_is_parsed_leniently_only_where_json_is_unambiguous():
    fenced = "```json\n" + json.dumps(GOOD) + "\n```"
    assert parse_content("m", fenced).answer == "Phobos and Deimos"
    raw_newline = '{"answer": "two\nmoons", "claims": [], "confidence": 0.5}'    # a grammar lets this through
    assert parse_content("m", raw_newline).answer == "two\nmoons"
    with pytest.raises(AgentProtocolError, match="protocol's JSON"):
        parse_content("m", '{"answer": "two"')
    with pytest.raises(AgentProtocolError, match="not text"):
        parse_content("m", None)


def test_dialect_from_models_defaults_to_the_openai_form():
    assert dialect_from_models({"data": [{"owned_by": "me"}]}) is ChatDialect.JSON_OBJECT_SCHEMA
    assert dialect_from_models({"data": []}) is ChatDialect.JSON_SCHEMA
    assert dialect_from_models("not a listing") is ChatDialect.JSON_SCHEMA
