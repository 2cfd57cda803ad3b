"""Edge cases of the agent client at the transport boundary (httpx.MockTransport)."""
import json

import httpx
import pytest

from engine import AgentProtocolError, CallStatus, Chunk
from engine.agents.client import AgentClient, outcome
from engine.config import LimitSettings
from engine.types import AgentKind, AgentSpec, Role

RETRIEVER = AgentSpec(id="r1", role=Role.RETRIEVER, kind=AgentKind.QUORUM_HTTP, url="http://agent", timeout_s=0.5)
CHAT = AgentSpec(id="llm", role=Role.GENERATOR, kind=AgentKind.OPENAI_CHAT, url="http://llm", model="m")


def client_for(handler, max_bytes=10_000) -> AgentClient:
    return AgentClient(LimitSettings(max_reply_bytes=max_bytes), transport=httpx.MockTransport(handler))


async def test_good_reply_is_parsed_and_trace_id_sent():
    seen = {}

    def handler(request):
        seen["trace"] = request.headers["X-Trace-Id"]
        seen["body"] = json.loads(request.content)
        return httpx.Response(200, json={"chunks": [{"id": "a#0", "text": "Mars has two moons.", "score": 0.5,
                                                     "source": "s", "metadata": {"title": "A"}}]})
    client = client_for(handler)
    chunks = await client.retrieve(RETRIEVER, RETRIEVER.url, "moons", 3, "t-1")
    await client.aclose()
    assert chunks == (Chunk("a#0", "Mars has two moons.", "s", 0.5, {"title": "A"}),)
    assert seen == {"trace": "t-1", "body": {"query": "moons", "k": 3, "trace_id": "t-1"}}


@pytest.mark.parametrize("body, fragment", [
    (b"not json", "not JSON"),
    (json.dumps({"chunks": [{"id": 5, "text": "x", "score": 1}]}).encode(), "chunks[0].id"),
    (json.dumps({"chunks": [{"id": "a", "text": "x"}]}).encode(), "chunks[0].score"),
    (json.dumps({"hits": []}).encode(), "lacks chunks"),
])
async def test_malformed_replies_are_protocol_errors(body, fragment):
    client = client_for(lambda request: httpx.Response(200, content=body))
    with pytest.raises(AgentProtocolError, match=fragment.replace("[", r"\[").replace("]", r"\]")):
        await client.retrieve(RETRIEVER, RETRIEVER.url, "q", 3, "t")
    await client.aclose()


async def test_oversized_reply_is_rejected():
    client = client_for(lambda request: httpx.Response(200, content=b"x" * 50_000), max_bytes=10_000)
    result = await outcome(RETRIEVER, client.retrieve(RETRIEVER, RETRIEVER.url, "q", 3, "t"))
    await client.aclose()
    assert result.outcome.status is CallStatus.TOO_LARGE
    assert result.value is None


async def test_http_error_and_refused_connection_become_outcomes():
    client = client_for(lambda request: httpx.Response(500, text="boom"))
    result = await outcome(RETRIEVER, client.retrieve(RETRIEVER, RETRIEVER.url, "q", 3, "t"))
    assert result.outcome.status is CallStatus.MALFORMED and "HTTP 500" in result.outcome.error

    def refuse(request):
        raise httpx.ConnectError("refused", request=request)
    client = client_for(refuse)
    result = await outcome(RETRIEVER, client.retrieve(RETRIEVER, RETRIEVER.url, "q", 3, "t"))
    await client.aclose()
    assert result.outcome.status is CallStatus.DOWN


async def test_deadline_turns_into_timeout_outcome():
    import asyncio

    async def slow():
        await asyncio.sleep(5)
    result = await outcome(RETRIEVER, slow())
    assert result.outcome.status is CallStatus.TIMEOUT
    assert result.outcome.latency_ms < 2000


async def test_openai_chat_reply_must_be_protocol_json():
    def good(request):
        sent = json.loads(request.content)
        assert sent["model"] == "m" and "never follow" in sent["messages"][0]["content"]
        content = json.dumps({"answer": "Phobos", "reasoning": ["r"], "claims": [{"text": "Phobos", "citations": ["a#0"]}],
                              "confidence": 0.9})
        return httpx.Response(200, json={"choices": [{"message": {"content": content}}]})
    client = client_for(good)
    gen = await client.generate(CHAT, CHAT.url, "q", (Chunk("a#0", "Phobos is a moon."),), "t")
    assert gen.answer == "Phobos" and gen.claims[0].citations == ("a#0",)

    bad = client_for(lambda r: httpx.Response(200, json={"choices": [{"message": {"content": "Sure! Phobos."}}]}))
    with pytest.raises(AgentProtocolError, match="did not reply with the protocol's JSON"):
        await bad.generate(CHAT, CHAT.url, "q", (), "t")
    await client.aclose()
    await bad.aclose()
