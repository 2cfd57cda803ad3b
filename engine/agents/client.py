"""The engine's one HTTP client to every agent (httpx.AsyncClient).

Explicit timeouts, connection limits and a cap on reply size; every transport failure becomes
an AgentError subclass, and `outcome()` turns any call into an AgentOutcome so one dead agent
never cancels the others in a fan-out.
"""
from __future__ import annotations

import asyncio
import json
import time
from dataclasses import dataclass
from typing import Any, Awaitable, Generic, TypeVar

import httpx

from ..config import LimitSettings
from ..errors import AgentError, AgentProtocolError, AgentReplyTooLarge, AgentTimeout, AgentUnavailable
from ..types import AgentKind, AgentOutcome, AgentSpec, CallStatus, Chunk, Generation
from .openai_chat import build_chat_request, parse_chat_reply
from .protocol import chunk_to_json, parse_challenge_reply, parse_chunks, parse_generation, parse_judgement

T = TypeVar("T")


@dataclass(frozen=True)
class CallResult(Generic[T]):
    outcome: AgentOutcome
    value: T | None


class AgentClient:
    def __init__(self, limits: LimitSettings, transport: httpx.AsyncBaseTransport | None = None) -> None:
        self.limits = limits
        self._http = httpx.AsyncClient(
            transport=transport,
            timeout=httpx.Timeout(30.0, connect=limits.connect_timeout_s),
            limits=httpx.Limits(max_connections=limits.max_connections, max_keepalive_connections=limits.max_connections),
            headers={"User-Agent": "quorum-engine"},
            trust_env=False,   # agents are reached directly; a proxy setting must not reroute them
        )

    async def aclose(self) -> None:
        await self._http.aclose()

    async def _post(self, spec: AgentSpec, url: str, payload: dict[str, Any], trace_id: str) -> Any:
        try:
            async with self._http.stream("POST", url, json=payload, headers={"X-Trace-Id": trace_id}) as response:
                body = bytearray()
                async for piece in response.aiter_bytes():
                    body.extend(piece)
                    if len(body) > self.limits.max_reply_bytes:
                        raise AgentReplyTooLarge(spec.id, f"reply over {self.limits.max_reply_bytes} bytes")
                if response.status_code != 200:
                    raise AgentProtocolError(spec.id, f"HTTP {response.status_code}: {bytes(body[:200]).decode(errors='replace')}")
        except httpx.TimeoutException as exc:
            raise AgentTimeout(spec.id, f"timed out ({type(exc).__name__})") from None
        except (httpx.ConnectError, httpx.RemoteProtocolError, httpx.ReadError, httpx.WriteError) as exc:
            raise AgentUnavailable(spec.id, f"{type(exc).__name__}: {exc}") from None
        except httpx.HTTPError as exc:
            raise AgentError(spec.id, f"{type(exc).__name__}: {exc}") from None
        try:
            return json.loads(body)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise AgentProtocolError(spec.id, f"reply is not JSON ({exc})") from None

    async def retrieve(self, spec: AgentSpec, url: str, query: str, k: int, trace_id: str) -> tuple[Chunk, ...]:
        data = await self._post(spec, f"{url}/retrieve", {"query": query, "k": k, "trace_id": trace_id}, trace_id)
        return parse_chunks(spec.id, data)[:k]

    async def generate(self, spec: AgentSpec, url: str, query: str, context: tuple[Chunk, ...],
                       trace_id: str, memory: tuple = ()) -> Generation:
        """memory: the agent's own memory entries (engine.memory), handed over as data beside the passages."""
        notes = tuple(Chunk(f"memory:{m.key}@v{m.version}", m.content, source=f"{spec.id}'s memory",
                            metadata={"trust": "TOOL", "carrier": f"memory:{spec.id}"}) for m in memory)
        if spec.kind is AgentKind.OPENAI_CHAT:
            data = await self._post(spec, f"{url}/v1/chat/completions",
                                    build_chat_request(spec.model, query, context, notes), trace_id)
            return parse_chat_reply(spec.id, data)
        payload = {"query": query, "context": [chunk_to_json(c) for c in context], "trace_id": trace_id,
                   **({"memory": [chunk_to_json(c) for c in notes]} if notes else {})}
        return parse_generation(spec.id, await self._post(spec, f"{url}/generate", payload, trace_id))

    async def validate(self, spec: AgentSpec, url: str, claim: str, evidence: tuple[Chunk, ...], trace_id: str):
        """A verifier agent's judgement of one claim against its evidence: (label, score, reason)."""
        payload = {"claim": claim, "evidence": [chunk_to_json(c) for c in evidence], "trace_id": trace_id}
        return parse_judgement(spec.id, await self._post(spec, f"{url}/validate", payload, trace_id))

    async def challenge(self, spec: AgentSpec, url: str, claim: str, context: tuple[Chunk, ...],
                        trace_id: str) -> tuple[str, tuple[str, ...]]:
        """Asks a generator to show the evidence for one of its claims: (quote, cited chunk ids)."""
        payload = {"claim": claim, "context": [chunk_to_json(c) for c in context], "trace_id": trace_id}
        return parse_challenge_reply(spec.id, await self._post(spec, f"{url}/challenge", payload, trace_id))

    async def health(self, spec: AgentSpec, url: str) -> dict[str, Any]:
        try:
            response = await self._http.get(f"{url}/health", timeout=2.0)
        except httpx.HTTPError as exc:
            raise AgentUnavailable(spec.id, f"{type(exc).__name__}") from None
        if response.status_code != 200:
            raise AgentUnavailable(spec.id, f"health answered HTTP {response.status_code}")
        return response.json()


async def outcome(spec: AgentSpec, op: Awaitable[T], count=len) -> CallResult[T]:
    """Runs one agent call under the agent's deadline; failures become a result, never an exception."""
    started = time.perf_counter()
    try:
        value = await asyncio.wait_for(op, timeout=spec.timeout_s)
    except asyncio.TimeoutError:
        return CallResult(AgentOutcome(spec.id, spec.role, CallStatus.TIMEOUT, _ms(started),
                                       f"no reply within {spec.timeout_s:g} s"), None)
    except AgentError as exc:
        return CallResult(AgentOutcome(spec.id, spec.role, CallStatus(exc.status), _ms(started), exc.reason), None)
    try:
        n_items = count(value)
    except TypeError:
        n_items = 1
    return CallResult(AgentOutcome(spec.id, spec.role, CallStatus.OK, _ms(started), "", n_items), value)


def _ms(started: float) -> float:
    return round((time.perf_counter() - started) * 1000, 1)
