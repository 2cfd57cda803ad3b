"""An agent's timeout_s holds end to end (issue #13): no client-wide cap cuts off an agent the fleet file gives
longer, and a slow agent is cut off at its own deadline, not later."""
from __future__ import annotations

import asyncio

import httpx
from starlette.applications import Starlette
from starlette.responses import JSONResponse
from starlette.routing import Route

from engine.agents.client import AgentClient, outcome
from engine.config import LimitSettings
from engine.types import AgentKind, AgentSpec, CallStatus, Role

from ..serving import serving

CHUNKS = {"chunks": [{"id": "a#0", "text": "Mars has two moons.", "source": "a", "score": 1.0}]}


def retriever(url: str, timeout_s: float) -> AgentSpec:
    return AgentSpec("ret-slow", Role.RETRIEVER, AgentKind.QUORUM_HTTP, url=url, timeout_s=timeout_s)


async def test_every_phase_of_a_call_gets_the_agents_own_deadline():
    seen: list[dict] = []

    def reply(request: httpx.Request) -> httpx.Response:
        seen.append(request.extensions["timeout"])
        return httpx.Response(200, json=CHUNKS)

    client = AgentClient(LimitSettings(connect_timeout_s=2.0), transport=httpx.MockTransport(reply))
    try:
        for timeout_s in (60.0, 0.5):
            spec = retriever("http://agent", timeout_s)
            result = await outcome(spec, client.retrieve(spec, spec.url, "moons", 3, "t"))
            assert result.outcome.status is CallStatus.OK
    finally:
        await client.aclose()
    # 60 s: read, write and pool wait as long as the agent may take (the old client cut reads at 30 s);
    # connecting keeps its own shorter limit, and never exceeds the agent's deadline.
    assert seen[0] == {"connect": 2.0, "read": 60.0, "write": 60.0, "pool": 60.0}
    assert seen[1] == {"connect": 0.5, "read": 0.5, "write": 0.5, "pool": 0.5}


async def test_a_slow_agent_is_waited_for_up_to_its_deadline_and_cut_off_at_it():
    async def slow(request):
        await asyncio.sleep(1.5)
        return JSONResponse(CHUNKS)

    url, stop = await serving(Starlette(routes=[Route("/retrieve", slow, methods=["POST"])]))
    client = AgentClient(LimitSettings())
    try:
        patient = retriever(url, 4.0)
        waited = (await outcome(patient, client.retrieve(patient, url, "moons", 3, "t"))).outcome
        hasty = retriever(url, 0.5)
        cut = (await outcome(hasty, client.retrieve(hasty, url, "moons", 3, "t"))).outcome
    finally:
        await client.aclose()
        await stop()
    assert waited.status is CallStatus.OK and waited.latency_ms >= 1500
    assert cut.status is CallStatus.TIMEOUT and "0.5 s" in cut.error
    assert 500 <= cut.latency_ms < 1500       # at its own deadline, not at the reply
