"""The engine's one HTTP client to every agent (httpx.AsyncClient).

Explicit timeouts, connection limits and a cap on reply size; every transport failure becomes
an AgentError subclass, and `outcome()` turns any call into an AgentOutcome so one dead agent
never cancels the others in a fan-out.

An agent with a key in the keyring (engine.agents.auth) gets signed requests, and its replies are
checked before anything reads them: unsigned, mis-signed or replayed, a reply is that agent's bad
outcome (AgentAuthError). https is verified (the system's CAs, or the agent's own ca_file), with the
engine's client certificate where the fleet file gives one.
"""
from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
import ssl
import time
from dataclasses import dataclass
from typing import Any, Awaitable, Generic, TypeVar

import httpx

from ..config import LimitSettings
from ..errors import (AgentError, AgentHttpStatus, AgentProtocolError, AgentReplyTooLarge, AgentTimeout,
                      AgentUnavailable)
from ..stats import elapsed_ms
from ..types import LLM_BACKEND, AgentKind, AgentOutcome, AgentSpec, CallStatus, ChatDialect, Chunk, Generation
from .auth import (NONCE_HEADER, SIGNATURE_HEADER, TIMESTAMP_HEADER, TRACE_HEADER, AgentAuthError, Keyring,
                   check_reply, new_nonce, request_signature)
from .openai_chat import MODELS_PATH, REFUSED_FORM, build_chat_request, dialect_from_models, parse_chat_reply
from .openai_judge import chat_read, chat_screen, chat_validate
from .protocol import (chunk_to_json, loads, parse_challenge_reply, parse_chunks, parse_generation, parse_judgement,
                       parse_read_reply, parse_screen_reply)
from .schema import ReadReply, ScreenReply

T = TypeVar("T")
logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class CallResult(Generic[T]):
    outcome: AgentOutcome
    value: T | None


def with_mode(result: CallResult[T], mode: str) -> CallResult[T]:
    """The result with its outcome marked by the reply form the client used (AgentClient.mode_of)."""
    return dataclasses.replace(result, outcome=dataclasses.replace(result.outcome, mode=mode)) if mode else result


class AgentClient:
    def __init__(self, limits: LimitSettings, transport: httpx.AsyncBaseTransport | None = None,
                 keyring: Keyring | None = None, clock=time.time) -> None:
        self.limits = limits
        self.keyring = keyring      # None or no key for an agent: its calls are unsigned, as before keys
        self.clock = clock          # the requests' timestamps: wall time, which keyed agents check against theirs
        self._transport = transport
        self._http = self._new_http(True)
        self._tls: dict[tuple[str, str, str], httpx.AsyncClient] = {}   # per (ca_file, client cert, key)
        self._dialects: dict[str, ChatDialect] = {}   # openai-chat agents: the dialect their server takes
        self._not_judges: set[str] = set()              # verifiers that answered /read with 404

    def _new_http(self, verify: ssl.SSLContext | bool) -> httpx.AsyncClient:
        return httpx.AsyncClient(
            transport=self._transport, verify=verify,
            timeout=httpx.Timeout(30.0, connect=self.limits.connect_timeout_s),
            limits=httpx.Limits(max_connections=self.limits.max_connections,
                                max_keepalive_connections=self.limits.max_connections),
            headers={"User-Agent": "quorum-engine"},
            trust_env=False,   # agents are reached directly; a proxy setting must not reroute them
        )

    def _timeout(self, spec: AgentSpec) -> httpx.Timeout:
        """The agent's own deadline for every phase of its call: a client-wide read timeout shorter than
        timeout_s (30 s was) would cut off an agent the fleet file gives longer, a slow local LLM among them.
        The whole call is held to timeout_s by outcome(); connecting gets the shorter connect_timeout_s."""
        return httpx.Timeout(spec.timeout_s, connect=min(self.limits.connect_timeout_s, spec.timeout_s))

    def _http_for(self, spec: AgentSpec) -> httpx.AsyncClient:
        """The client for this agent's TLS settings: the shared one, or one verifying with its own CA and
        presenting the engine's certificate (made on first use; an unreadable file is that call's outcome)."""
        sec = spec.security
        profile = (sec.ca_file, sec.client_cert, sec.client_key)
        if self._transport is not None or not any(profile):
            return self._http
        if profile not in self._tls:
            try:
                context = ssl.create_default_context(cafile=sec.ca_file or None)
                if sec.client_cert:
                    context.load_cert_chain(sec.client_cert, sec.client_key or None)
            except (OSError, ssl.SSLError) as exc:
                raise AgentAuthError(spec.id, f"cannot load its TLS files ({exc})") from None
            self._tls[profile] = self._new_http(context)
        return self._tls[profile]

    async def aclose(self) -> None:
        await self._http.aclose()
        for http in self._tls.values():
            await http.aclose()

    async def _post(self, spec: AgentSpec, url: str, payload: dict[str, Any], trace_id: str,
                    path: str | None = None) -> Any:
        """path: the operation below the agent's base URL ("/retrieve"), as the signatures name it."""
        path = path or "/" + url.rsplit("/", 1)[-1]
        content = json.dumps(payload, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode("utf-8")
        headers = {TRACE_HEADER: trace_id, "Content-Type": "application/json"}
        key = self.keyring.get(spec.id) if self.keyring is not None else None
        if key is not None:
            nonce, timestamp = new_nonce(), str(int(self.clock()))
            headers |= {NONCE_HEADER: nonce, TIMESTAMP_HEADER: timestamp,
                        SIGNATURE_HEADER: request_signature(key, spec.id, "POST", path, trace_id, nonce, timestamp,
                                                            content)}
        try:
            http = self._http_for(spec)
            async with http.stream("POST", url, content=content, headers=headers,
                                   timeout=self._timeout(spec)) as response:
                body = bytearray()
                async for piece in response.aiter_bytes():
                    body.extend(piece)
                    if len(body) > self.limits.max_reply_bytes:
                        raise AgentReplyTooLarge(spec.id, f"reply over {self.limits.max_reply_bytes} bytes")
                if key is not None:    # before anything reads it: an unsigned body is not this agent's word
                    check_reply(key, spec.id, path, trace_id, nonce, timestamp, response.status_code, bytes(body),
                                response.headers.get(SIGNATURE_HEADER))
                if response.status_code != 200:
                    text = bytes(body[:200]).decode(errors='replace')
                    if key is not None and response.status_code == 401:
                        raise AgentAuthError(spec.id, f"the agent refused the engine's signature: {text}")
                    raise AgentHttpStatus(spec.id, response.status_code, text)
        except httpx.TimeoutException as exc:
            raise AgentTimeout(spec.id, f"timed out ({type(exc).__name__})") from None
        except (httpx.ConnectError, httpx.RemoteProtocolError, httpx.ReadError, httpx.WriteError) as exc:
            tls = _tls_failure(exc)
            if tls:
                raise AgentAuthError(spec.id, tls) from None
            raise AgentUnavailable(spec.id, f"{type(exc).__name__}: {exc}") from None
        except httpx.HTTPError as exc:
            raise AgentError(spec.id, f"{type(exc).__name__}: {exc}") from None
        try:
            return loads(bytes(body))     # strict: no NaN, no number past a float, no nesting too deep
        except ValueError as exc:
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
            return await self._chat(spec, url, query, context, notes, trace_id)
        payload = {"query": query, "context": [chunk_to_json(c) for c in context], "trace_id": trace_id,
                   **({"memory": [chunk_to_json(c) for c in notes]} if notes else {})}
        return parse_generation(spec.id, await self._post(spec, f"{url}/generate", payload, trace_id))

    def mode_of(self, spec: AgentSpec) -> str:
        """How the agent's replies are constrained, for its outcomes: its chat dialect ("" for the protocol)."""
        if spec.backend == LLM_BACKEND:      # the built-in LLM always sends llama-cpp-python its schema this way
            return ChatDialect.JSON_OBJECT_SCHEMA.value
        if spec.kind is not AgentKind.OPENAI_CHAT:
            return ""
        return self._dialects.get(spec.id, spec.dialect).value

    async def _chat(self, spec: AgentSpec, url: str, query: str, context: tuple[Chunk, ...],
                    notes: tuple[Chunk, ...], trace_id: str) -> Generation:
        dialect = await self._dialect(spec, url)
        try:
            return await self._chat_once(spec, url, query, context, notes, trace_id, dialect)
        except AgentHttpStatus as exc:
            if exc.http_status not in REFUSED_FORM or dialect is ChatDialect.JSON_OBJECT:
                raise
            logger.warning("agent %s refused the reply schema in dialect %s (%s); falling back to json-object",
                           spec.id, dialect.value, exc.reason)
        self._dialects[spec.id] = ChatDialect.JSON_OBJECT   # sticks: the server will not take the schema
        return await self._chat_once(spec, url, query, context, notes, trace_id, ChatDialect.JSON_OBJECT)

    async def _chat_once(self, spec: AgentSpec, url: str, query: str, context: tuple[Chunk, ...],
                         notes: tuple[Chunk, ...], trace_id: str, dialect: ChatDialect) -> Generation:
        request = build_chat_request(spec.model, query, context, notes, dialect)
        data = await self._post(spec, url + request.path, request.body, trace_id, path=request.path)
        return parse_chat_reply(spec.id, data, dialect)

    async def _dialect(self, spec: AgentSpec, url: str) -> ChatDialect:
        """The fleet file's dialect, or for `auto` what the server's /v1/models says (asked once; a server that
        cannot be asked gets json-schema, the OpenAI API's own form, and is asked again next time)."""
        if spec.id in self._dialects:
            return self._dialects[spec.id]
        if spec.dialect is not ChatDialect.AUTO:
            self._dialects[spec.id] = spec.dialect
            return spec.dialect
        try:
            response = await self._http_for(spec).get(url + MODELS_PATH, timeout=min(2.0, spec.timeout_s))
            data = response.json() if response.status_code == 200 else None
        except (httpx.HTTPError, ValueError):
            return ChatDialect.JSON_SCHEMA
        dialect = dialect_from_models(data) if data is not None else ChatDialect.JSON_SCHEMA
        self._dialects[spec.id] = dialect
        return dialect

    async def validate(self, spec: AgentSpec, url: str, claim: str, evidence: tuple[Chunk, ...], trace_id: str):
        """A verifier agent's judgement of one claim against its evidence: (label, score, reason). An openai-chat
        verifier is a judge on any OpenAI-compatible server, asked the judges' own prompt."""
        if spec.kind is AgentKind.OPENAI_CHAT:
            return await chat_validate(self._chat_post(spec, url, trace_id), spec, claim, evidence)
        payload = {"claim": claim, "evidence": [chunk_to_json(c) for c in evidence], "trace_id": trace_id}
        return parse_judgement(spec.id, await self._post(spec, f"{url}/validate", payload, trace_id))

    async def read(self, spec: AgentSpec, url: str, question: str, passages: tuple[Chunk, ...],
                   candidates: tuple[str, ...], trace_id: str, *, own_answer: bool = False) -> ReadReply:
        """A judge's reading of candidate answers against their passages: P(yes) for each, and (own_answer) its
        own short answer from the passages. A verifier that is no judge replies 404 (AgentHttpStatus)."""
        if spec.kind is AgentKind.OPENAI_CHAT:
            return await chat_read(self._chat_post(spec, url, trace_id), spec, question, passages, candidates,
                                   own_answer)
        payload = {"question": question, "passages": [chunk_to_json(c) for c in passages],
                   "candidates": list(candidates), "own_answer": own_answer, "trace_id": trace_id}
        return parse_read_reply(spec.id, await self._judge_post(spec, url, "/read", payload, trace_id), len(candidates))

    async def screen(self, spec: AgentSpec, url: str, texts: tuple[str, ...], trace_id: str) -> ScreenReply:
        """A judge's reading of flagged passages: P(yes) that each holds an instruction aimed at the assistant. A
        verifier that is no judge replies 404 (AgentHttpStatus)."""
        if spec.kind is AgentKind.OPENAI_CHAT:
            return await chat_screen(self._chat_post(spec, url, trace_id), spec, texts)
        payload = {"texts": list(texts), "trace_id": trace_id}
        return parse_screen_reply(spec.id, await self._judge_post(spec, url, "/screen", payload, trace_id), len(texts))

    async def _judge_post(self, spec: AgentSpec, url: str, path: str, payload: dict, trace_id: str) -> Any:
        """POST to a judge's own path; a 404 says the verifier is no judge, and it is not asked again."""
        try:
            return await self._post(spec, url + path, payload, trace_id)
        except AgentHttpStatus as exc:
            if exc.http_status == 404:
                self._not_judges.add(spec.id)
            raise

    def is_judge(self, spec: AgentSpec) -> bool:
        """False once a verifier has said (404) that it does not serve /read: it is not asked again."""
        return spec.id not in self._not_judges

    def _chat_post(self, spec: AgentSpec, url: str, trace_id: str):
        """POST a body to an OpenAI-compatible server's path, as this agent's call (limits, TLS, errors)."""
        async def post(path: str, body: dict) -> Any:
            return await self._post(spec, url + path, body, trace_id, path=path)
        return post

    async def challenge(self, spec: AgentSpec, url: str, claim: str, context: tuple[Chunk, ...],
                        trace_id: str) -> tuple[str, tuple[str, ...]]:
        """Asks a generator to show the evidence for one of its claims: (quote, cited chunk ids)."""
        payload = {"claim": claim, "context": [chunk_to_json(c) for c in context], "trace_id": trace_id}
        return parse_challenge_reply(spec.id, await self._post(spec, f"{url}/challenge", payload, trace_id))

    async def health(self, spec: AgentSpec, url: str) -> dict[str, Any]:
        """Unsigned (it tells nothing secret), but over the agent's verified TLS where it has some."""
        try:
            response = await self._http_for(spec).get(f"{url}/health", timeout=2.0)
        except httpx.HTTPError as exc:
            tls = _tls_failure(exc)
            if tls:
                raise AgentAuthError(spec.id, tls) from None
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
        return CallResult(AgentOutcome(spec.id, spec.role, CallStatus.TIMEOUT, elapsed_ms(started),
                                       f"no reply within {spec.timeout_s:g} s"), None)
    except AgentError as exc:
        return CallResult(AgentOutcome(spec.id, spec.role, CallStatus(exc.status), elapsed_ms(started), exc.reason), None)
    except (ValueError, TypeError, ArithmeticError, RecursionError) as exc:   # a reply no parser check foresaw
        logger.warning("agent %s: its reply could not be read", spec.id, exc_info=True)
        return CallResult(AgentOutcome(spec.id, spec.role, CallStatus.MALFORMED, elapsed_ms(started),
                                       f"reply could not be read ({type(exc).__name__}: {str(exc)[:120]})"), None)
    try:
        n_items = count(value)
    except TypeError:
        n_items = 1
    return CallResult(AgentOutcome(spec.id, spec.role, CallStatus.OK, elapsed_ms(started), "", n_items), value)


def _tls_failure(exc: BaseException) -> str:
    """Why TLS refused the connection ("certificate verify failed: ..."), or "" if it was not TLS."""
    seen: BaseException | None = exc
    visited: set[int] = set()
    while seen is not None and id(seen) not in visited:
        visited.add(id(seen))
        if isinstance(seen, ssl.SSLCertVerificationError):
            return f"certificate verify failed: {seen.verify_message or seen}"
        if isinstance(seen, ssl.SSLError):
            return f"TLS handshake failed: {seen.reason or seen}"
        seen = seen.__cause__ or seen.__context__
    text = str(exc)
    if "CERTIFICATE_VERIFY_FAILED" in text:
        return f"certificate verify failed: {text}"
    return ""
