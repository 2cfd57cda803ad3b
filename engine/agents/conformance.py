"""Conformance: the protocol's cases run against a live agent (`main.py agents check URL --role R`).

The cases come from the same definitions the engine validates with (engine/agents/schema.py): a good
request of each operation the role serves must get a reply that passes its schema within the timeout;
for every field of every request, a body that breaks it (left out, wrong type, blank, over its bound) must
get HTTP 400, never a 5xx or a dropped connection; so must a body that is not JSON or not an object, and one
over the request cap; unknown fields are ignored (either side may grow one); a generator challenged on a
claim from its own answer quotes a chunk it cites; and the agent still answers /health after all that.
"""
from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable

import httpx

from ..errors import AgentProtocolError
from ..text import shorten
from ..types import Chunk, Role
from . import schema
from .auth import NONCE_HEADER, SIGNATURE_HEADER, TIMESTAMP_HEADER, TRACE_HEADER, AgentAuthError, new_nonce
from .auth import check_reply as check_signed_reply
from .auth import request_signature
from .protocol import check_reply, chunk_to_json, loads
from .schema import MAX_REQUEST_BYTES, Boolean, Choice, Integer, ListOf, Number, Object, Text

DEFAULT_TIMEOUT_S = 10.0
TRACE_ID = "conformance-check"

# A context nobody's corpus needs to hold: the cases send it, so any agent can answer from it.
CONTEXT = (
    Chunk("conformance-mars#0", "Mars has two small moons, Phobos and Deimos. Phobos is the larger of the two.",
          "conformance", 1.0, {"title": "Moons of Mars", "position": 0}),
    Chunk("conformance-mars#1", "Asaph Hall discovered both moons of Mars in August 1877 at the United States "
                                "Naval Observatory.", "conformance", 0.8, {"title": "Moons of Mars", "position": 1}),
    Chunk("conformance-venus#0", "Venus rotates in the opposite direction to most planets.", "conformance", 0.2,
          {"title": "Venus"}),
)
QUESTION = "Who discovered the moons of Mars?"
CLAIM = "Asaph Hall discovered the moons of Mars in 1877."

VALID_BODIES: dict[str, dict[str, Any]] = {
    "retrieve": {"query": "moons of Mars", "k": 3, "trace_id": TRACE_ID},
    "generate": {"query": QUESTION, "context": [chunk_to_json(c) for c in CONTEXT], "trace_id": TRACE_ID},
    "validate": {"claim": CLAIM, "evidence": [chunk_to_json(CONTEXT[1])], "trace_id": TRACE_ID},
    "challenge": {"claim": CLAIM, "context": [chunk_to_json(c) for c in CONTEXT], "trace_id": TRACE_ID},
    "read": {"question": QUESTION, "passages": [chunk_to_json(c) for c in CONTEXT[:2]],
             "candidates": [CLAIM, "Phobos is the larger of the two moons of Mars."], "own_answer": True,
             "trace_id": TRACE_ID},
}


class CaseFailed(Exception):
    """A case did not pass; the message says why, for a person."""


class Unreachable(CaseFailed):
    """The connection could not be made (nothing listens, a wrong host, TLS refused)."""


class Dropped(CaseFailed):
    """The agent closed the connection instead of answering."""


@dataclass(frozen=True)
class CaseResult:
    name: str
    what: str
    passed: bool
    detail: str
    latency_ms: float | None = None


@dataclass(frozen=True)
class Report:
    url: str
    role: Role
    agent_id: str                     # as its /health says ("" when it did not say)
    results: tuple[CaseResult, ...]

    @property
    def passed(self) -> bool:
        return all(r.passed for r in self.results)

    @property
    def failures(self) -> tuple[CaseResult, ...]:
        return tuple(r for r in self.results if not r.passed)

    def to_json(self) -> dict[str, Any]:
        return {"url": self.url, "role": self.role.value, "agent_id": self.agent_id, "passed": self.passed,
                "cases": [{"name": r.name, "what": r.what, "passed": r.passed, "detail": r.detail,
                           "latency_ms": r.latency_ms} for r in self.results]}


@dataclass(frozen=True)
class Reply:
    status: int
    body: bytes
    content_type: str
    latency_ms: float

    def text(self, limit: int = 160) -> str:
        return shorten(self.body[:limit * 4].decode("utf-8", "replace"), limit)

    def json(self) -> Any:
        try:
            return loads(self.body)
        except ValueError as exc:
            raise CaseFailed(f"HTTP {self.status} but the body is not JSON ({str(exc)[:100]}): {self.text(80)!r}") \
                from None


@dataclass(frozen=True)
class Signing:
    """An agent with a key (engine.agents.auth): requests are signed with it and replies checked against it.
    agent_id: the id the agent signs as ("" = the id its /health gives)."""
    key: bytes = field(repr=False)
    agent_id: str = ""


@dataclass
class Probe:
    """One agent under test: its URL, the HTTP client and what earlier cases learnt (its answer, its id)."""
    http: httpx.AsyncClient
    url: str
    role: Role
    timeout_s: float
    signing: Signing | None = None
    learnt: dict[str, Any] = field(default_factory=dict)

    def signer_id(self) -> str:
        return (self.signing.agent_id if self.signing else "") or str(self.learnt.get("agent_id", ""))

    async def call(self, method: str, path: str, content: bytes | None = None, signed: bool = True,
                   tamper: bool = False) -> Reply:
        headers = {TRACE_HEADER: TRACE_ID}
        if content is not None:
            headers["Content-Type"] = "application/json"
        sign = self.signing is not None and signed and path != "/health"
        if sign:
            nonce, timestamp = new_nonce(), str(int(time.time()))
            signature = request_signature(self.signing.key, self.signer_id(), method, path, TRACE_ID, nonce,
                                          timestamp, content or b"")
            if tamper:
                signature = signature[:-1] + ("0" if signature[-1] != "0" else "1")
            headers |= {NONCE_HEADER: nonce, TIMESTAMP_HEADER: timestamp, SIGNATURE_HEADER: signature}
        started = time.perf_counter()
        try:
            response = await self.http.request(method, self.url + path, content=content, headers=headers,
                                               timeout=self.timeout_s)
        except httpx.TimeoutException:
            raise CaseFailed(f"no reply within {self.timeout_s:g} s") from None
        except httpx.ConnectError as exc:
            raise Unreachable(f"cannot connect ({str(exc)[:120] or type(exc).__name__})") from None
        except (httpx.RemoteProtocolError, httpx.ReadError, httpx.WriteError) as exc:
            raise Dropped(f"the connection was dropped ({type(exc).__name__}: {str(exc)[:100]})") from None
        except httpx.HTTPError as exc:
            raise CaseFailed(f"{type(exc).__name__}: {str(exc)[:120]}") from None
        if sign:     # as the engine does: a reply that is not this agent's word is not read at all
            try:
                check_signed_reply(self.signing.key, self.signer_id(), path, TRACE_ID, nonce, timestamp,
                                   response.status_code, response.content, response.headers.get(SIGNATURE_HEADER))
            except AgentAuthError as exc:
                if response.status_code == 401:
                    raise CaseFailed("HTTP 401, and the refusal does not verify with this key either: a wrong key, "
                                     f"or the agent signs as another id than {self.signer_id()!r}") from None
                raise CaseFailed(f"HTTP {response.status_code}, but {exc.reason}") from None
        return Reply(response.status_code, response.content, response.headers.get("content-type", ""),
                     round((time.perf_counter() - started) * 1000, 1))


Run = Callable[[Probe], Awaitable[tuple[str, float | None]]]   # -> (detail, latency); raises CaseFailed


@dataclass(frozen=True)
class Case:
    name: str
    what: str
    run: Run


def _encode(body: Any) -> bytes:
    return json.dumps(body, ensure_ascii=False).encode("utf-8")


def _valid(op: schema.Operation, reply: Reply) -> Any:
    if reply.status == 401:
        raise CaseFailed(f"HTTP 401: the agent wants signed requests ({reply.text(100)})")
    if reply.status != 200:
        raise CaseFailed(f"HTTP {reply.status}: {reply.text()}")
    try:
        return check_reply("agent", op.reply, reply.json())
    except AgentProtocolError as exc:
        raise CaseFailed(f"the reply breaks {op.reply.name}: {exc.reason}") from None


# --- good requests -------------------------------------------------------------------------------
def _health_case() -> Case:
    async def run(probe: Probe) -> tuple[str, float | None]:
        reply = await probe.call("GET", "/health")
        health = _valid(schema.operation("health"), reply)
        probe.learnt["agent_id"] = health["id"]
        if health["role"] != probe.role.value:
            raise CaseFailed(f"it says it is a {health['role']}, checked as a {probe.role.value}")
        return f"id {health['id']}, role {health['role']}, status {health['status']}", reply.latency_ms
    return Case("health", "GET /health answers 200 with its id and the role asked", run)


def _good_case(op_name: str, suffix: str, what: str, body: dict[str, Any],
               then: Callable[[Probe, Any, dict[str, Any]], str] | None = None) -> Case:
    op = schema.operation(op_name)

    async def run(probe: Probe) -> tuple[str, float | None]:
        reply = await probe.call(op.method, op.path, _encode(body))
        value = _valid(op, reply)
        return (then(probe, value, body) if then else "a valid reply"), reply.latency_ms
    return Case(f"{op_name}.{suffix}", what, run)


def _chunks_found(probe: Probe, chunks: tuple[Chunk, ...], body: dict[str, Any]) -> str:
    k = body.get("k", schema.RETRIEVE_REQUEST.field("k").default)
    if len(chunks) > k:
        raise CaseFailed(f"{len(chunks)} chunks for k = {k}")
    return f"{len(chunks)} chunks" + (f", first {chunks[0].id}" if chunks else "")


def _answer_given(probe: Probe, gen, body: dict[str, Any]) -> str:
    probe.learnt.setdefault("generation", gen)
    return f"{len(gen.claims)} claims, confidence {gen.confidence:.2f}: {shorten(gen.answer, 60) or '(abstained)'}"


def _judged(probe: Probe, judgement, body: dict[str, Any]) -> str:
    return f"{judgement.label.value} ({judgement.score:.2f})"


def _challenge_case() -> Case:
    op = schema.operation("challenge")

    async def run(probe: Probe) -> tuple[str, float | None]:
        gen = probe.learnt.get("generation")
        own = [c.text for c in gen.claims if c.text.strip()] if gen else []
        claim = own[0] if own else (gen.answer.strip() if gen and gen.answer.strip() else CLAIM)
        body = {**VALID_BODIES["challenge"], "claim": claim}
        reply = await probe.call(op.method, op.path, _encode(body))
        shown = _valid(op, reply)
        if not shown.quote.strip():
            raise CaseFailed(f"no quote for {'its own' if own else 'the'} claim {claim[:60]!r}")
        given = {c.id: c for c in CONTEXT}
        outside = [c for c in shown.citations if c not in given]
        if outside:
            raise CaseFailed(f"cites {', '.join(outside)[:80]}, which the context does not hold")
        if not any(shown.quote in given[c].text for c in shown.citations):
            raise CaseFailed(f"the quote {shown.quote[:60]!r} is in none of the chunks it cites "
                             f"({', '.join(shown.citations) or 'none'})")
        origin = "its own claim" if own else "a sample claim (its answer had none)"
        return f"{origin}: quoted [{shown.citations[0]}] {shown.quote[:50]!r}", reply.latency_ms
    return Case("challenge.own-claim", "a claim from its own answer gets a quote from a chunk it cites", run)


def _read_case() -> Case:
    """/read is optional: 404 says the verifier is no judge; anything else must be a valid reply with one score a
    candidate. Whether the judge reads well is for its canaries (engine.generation.canaries), not for this case."""
    op = schema.operation("read")
    asked = VALID_BODIES["read"]["candidates"]

    async def run(probe: Probe) -> tuple[str, float | None]:
        reply = await probe.call(op.method, op.path, _encode(VALID_BODIES["read"]))
        if reply.status == 404:
            return "not served (HTTP 404): it is no judge", reply.latency_ms
        read = _valid(op, reply)
        if len(read.scores) != len(asked):
            raise CaseFailed(f"{len(read.scores)} scores for {len(asked)} candidates")
        return (f"reads: P = {read.scores[0]:.2f} for the answer, {read.scores[1]:.2f} for a true sentence that does "
                f"not answer; its own answer {read.answer[:40]!r}"), reply.latency_ms
    return Case("read.optional", "POST /read answers 404, or one score 0..1 for each candidate answer", run)


def _alive_case() -> Case:
    async def run(probe: Probe) -> tuple[str, float | None]:
        reply = await probe.call("GET", "/health")
        _valid(schema.operation("health"), reply)
        return "still answers", reply.latency_ms
    return Case("health.after", "after every bad request it still answers /health", run)


# --- bad requests, derived from the request's definition -----------------------------------------
def _wrong_type(kind: schema.Type) -> Any:
    if isinstance(kind, (Text, Choice)):
        return 12345
    if isinstance(kind, (Integer, Number)):
        return "3"
    if isinstance(kind, ListOf):
        return "not a list"
    if isinstance(kind, Boolean):
        return "yes"
    return ["not", "an", "object"]


def _breaks(obj: Object, base: dict[str, Any], prefix: str = "", depth: int = 0):
    """(case suffix, what, body) for each way a body can break one field of obj."""
    for f in obj.fields:
        where = f"{prefix}{f.name}"
        if f.required:
            yield f"{where}.missing", f"{where} left out", {k: v for k, v in base.items() if k != f.name}
        yield f"{where}.type", f"{where} of the wrong type", {**base, f.name: _wrong_type(f.type)}
        kind = f.type
        if isinstance(kind, Text) and kind.non_blank:
            yield f"{where}.blank", f"{where} blank", {**base, f.name: "   "}
        if isinstance(kind, Text) and kind.max_chars is not None:
            yield (f"{where}.too-long", f"{where} of {kind.max_chars + 1} characters (the cap is {kind.max_chars})",
                   {**base, f.name: "a" * (kind.max_chars + 1)})
        if isinstance(kind, (Integer, Number)) and kind.minimum is not None:
            yield f"{where}.below", f"{where} below {kind.minimum:g}", {**base, f.name: kind.minimum - 1}
        if isinstance(kind, (Integer, Number)) and kind.maximum is not None:
            yield f"{where}.above", f"{where} over the cap of {kind.maximum:g}", {**base, f.name: kind.maximum + 1}
        if (depth == 0 and f.required and isinstance(kind, ListOf) and isinstance(kind.item, Object)
                and isinstance(base.get(f.name), list) and base[f.name]):
            first = base[f.name][0]
            yield f"{where}[0].type", f"{where}[0] not an object", {**base, f.name: ["a chunk"] + base[f.name][1:]}
            for suffix, what, item in _breaks(kind.item, first, f"{where}[0].", depth + 1):
                yield suffix, what, {**base, f.name: [item] + base[f.name][1:]}


def _refused_case(op: schema.Operation, suffix: str, what: str, content: bytes) -> Case:
    async def run(probe: Probe) -> tuple[str, float | None]:
        reply = await probe.call(op.method, op.path, content)
        if reply.status == 400:
            return _error_detail(reply), reply.latency_ms
        if reply.status == 200:
            raise CaseFailed(f"accepted (HTTP 200: {reply.text(80)})")
        raise CaseFailed(f"HTTP {reply.status}, expected 400: {reply.text(100)}")
    return Case(f"{op.name}.{suffix}", f"{what}: 400", run)


def _error_detail(reply: Reply) -> str:
    try:
        error = loads(reply.body).get("error")
    except (ValueError, AttributeError):
        error = None
    if isinstance(error, str):
        return f"400: {shorten(error, 90)}"
    return "400 (its body is not {\"error\": text}; the protocol's Error shape helps people)"


def _oversized_case(op: schema.Operation) -> Case:
    body = VALID_BODIES[op.name]
    padding = MAX_REQUEST_BYTES + 1 - len(_encode({**body, "padding": ""}))
    content = _encode({**body, "padding": "x" * max(padding, 1)})   # valid but for its size

    async def run(probe: Probe) -> tuple[str, float | None]:
        try:
            reply = await probe.call(op.method, op.path, content)
        except Dropped:
            return "closed the connection before reading it all (a 413 would say why)", None
        if reply.status in (400, 413):
            return (_error_detail(reply) if reply.status == 400 else f"413: {reply.text(80)}"), reply.latency_ms
        raise CaseFailed(f"HTTP {reply.status} for {len(content)} bytes, expected 400 or 413: {reply.text(80)}")
    return Case(f"{op.name}.oversized", f"a body of {len(content)} bytes (over the cap of {MAX_REQUEST_BYTES}) "
                                        "is refused", run)


def request_cases(op: schema.Operation, items: bool = True) -> list[Case]:
    """Every bad-request case of one operation; items=False leaves out those inside list items (the Chunk
    definition is one, checked once per role)."""
    assert op.request is not None
    base = VALID_BODIES[op.name]
    cases = [
        _refused_case(op, "not-json", "a body that is not JSON", b'{"query": "moons", '),
        _refused_case(op, "not-object", "a JSON array instead of an object", _encode([base])),
    ]
    cases += [_refused_case(op, suffix, what, _encode(body)) for suffix, what, body in _breaks(op.request, base)
              if items or "[0]" not in suffix]
    return cases


def _auth_cases(op: schema.Operation) -> list[Case]:
    """For a keyed agent: a request without the engine's signature, or with a wrong one, is refused (401)."""
    def refused(suffix: str, what: str, **how) -> Case:
        async def run(probe: Probe) -> tuple[str, float | None]:
            reply = await probe.call(op.method, op.path, _encode(VALID_BODIES[op.name]), **how)
            if reply.status == 401:
                return _error_detail(reply).replace("400", "401", 1), reply.latency_ms
            raise CaseFailed(f"HTTP {reply.status}, expected 401: {reply.text(80)}")
        return Case(f"{op.name}.{suffix}", what, run)
    return [refused("unsigned", "a request without a signature is refused with 401", signed=False),
            refused("mis-signed", "a request with a wrong signature is refused with 401", tamper=True)]


def cases_for(role: Role, signed: bool = False) -> list[Case]:
    """The whole run for one role, in order: health, good requests, bad requests, oversized, health again
    (signed: the agent has a key, and two cases check that it refuses what the engine did not sign)."""
    cases = [_health_case()]
    if role is Role.RETRIEVER:
        base = VALID_BODIES["retrieve"]
        cases += [
            _good_case("retrieve", "good", "a query with k = 3 gets at most 3 chunks", base, _chunks_found),
            _good_case("retrieve", "defaults", "k and trace_id may be left out (k is then 5)",
                       {"query": base["query"]}, _chunks_found),
            _good_case("retrieve", "k-at-cap", f"k = {schema.MAX_K} (the cap) is accepted",
                       {**base, "k": schema.MAX_K}, _chunks_found),
            _good_case("retrieve", "unknown-field", "an unknown field is ignored",
                       {**base, "x_future_field": {"any": [1, "thing"]}}, _chunks_found),
        ]
        bad = ["retrieve"]
    elif role is Role.GENERATOR:
        base = VALID_BODIES["generate"]
        memory = [chunk_to_json(Chunk("memory:note@v1", "Phobos orbits Mars in under eight hours.",
                                      "its memory", metadata={"trust": "TOOL"}))]
        cases += [
            _good_case("generate", "good", "a question and a context get an answer, claims and a confidence 0..1",
                       base, _answer_given),
            _good_case("generate", "defaults", "trace_id and memory may be left out",
                       {"query": base["query"], "context": base["context"]}, _answer_given),
            _good_case("generate", "memory-and-unknown-field", "memory entries are taken, an unknown field ignored",
                       {**base, "memory": memory, "x_future_field": True}, _answer_given),
            _challenge_case(),
        ]
        bad = ["generate", "challenge"]
    else:
        base = VALID_BODIES["validate"]
        cases += [
            _good_case("validate", "good", "a claim and its evidence get a verdict and a score 0..1", base, _judged),
            _good_case("validate", "defaults", "trace_id may be left out",
                       {"claim": base["claim"], "evidence": base["evidence"]}, _judged),
            _good_case("validate", "unknown-field", "an unknown field is ignored",
                       {**base, "x_future_field": None}, _judged),
            _read_case(),
        ]
        bad = ["validate"]
    for i, name in enumerate(bad):
        cases += request_cases(schema.operation(name), items=i == 0)
    cases += [_oversized_case(schema.operation(bad[0]))]
    if signed:
        cases += _auth_cases(schema.operation(bad[0]))
    return cases + [_alive_case()]


async def run_check(url: str, role: Role, timeout_s: float = DEFAULT_TIMEOUT_S,
                    transport: httpx.AsyncBaseTransport | None = None,
                    on_result: Callable[[CaseResult], None] | None = None, signing: Signing | None = None,
                    verify: Any = True) -> Report:
    """Runs every case of the role against the agent at url, one after another (a conformance check is no
    load test); on_result(result) as each finishes. signing: the agent's key, for an agent that has one.
    verify: httpx's TLS verification (True, or an SSLContext with the agent's CA)."""
    url = url.rstrip("/")
    results = []
    async with httpx.AsyncClient(transport=transport, trust_env=False, verify=verify,
                                 headers={"User-Agent": "quorum-conformance"}) as http:
        probe = Probe(http, url, role, timeout_s, signing)
        for case in cases_for(role, signed=signing is not None):
            try:
                detail, latency = await case.run(probe)
                result = CaseResult(case.name, case.what, True, detail, latency)
            except CaseFailed as exc:
                result = CaseResult(case.name, case.what, False, str(exc))
            results.append(result)
            if on_result is not None:
                on_result(result)
    return Report(url, role, str(probe.learnt.get("agent_id", "")), tuple(results))


async def run_judge_check(url: str, model: str, timeout_s: float = DEFAULT_TIMEOUT_S,
                          transport: httpx.AsyncBaseTransport | None = None,
                          on_result: Callable[[CaseResult], None] | None = None) -> Report:
    """An OpenAI-compatible server as a judge (a verifier of kind openai-chat): it speaks no Quorum protocol, so its
    cases are the judge's own: it gives the log-probabilities of Yes and No for its first token, and it reads the
    canaries (engine.generation.canaries) right."""
    from ..config import LimitSettings
    from ..errors import AgentError
    from ..generation.canaries import CANARIES, run_canaries
    from ..settings.judge import JudgeSettings
    from ..types import AgentKind, AgentSpec
    from .client import AgentClient
    from .remote import RemoteJudge, RemoteVerifier
    spec = AgentSpec(id="judge-under-check", role=Role.VERIFIER, kind=AgentKind.OPENAI_CHAT, url=url.rstrip("/"),
                     model=model, timeout_s=timeout_s)
    client = AgentClient(LimitSettings(), transport=transport)
    judge, verifier = RemoteJudge(client, spec, spec.url), RemoteVerifier(client, spec, spec.url)
    results = []

    def done(result: CaseResult) -> None:
        results.append(result)
        if on_result is not None:
            on_result(result)
    canary = CANARIES[0]
    started = time.perf_counter()
    try:
        reply = await judge.read(canary.question, canary.passages, (canary.answer,), TRACE_ID)
        done(CaseResult("judge.logprobs", "its first token's log-probabilities give P(yes)", True,
                        f"P(yes) = {reply.scores[0]:.2f} for a known answer", (time.perf_counter() - started) * 1000))
    except AgentError as exc:
        done(CaseResult("judge.logprobs", "its first token's log-probabilities give P(yes)", False, exc.reason))
    checked = await run_canaries(judge, verifier, JudgeSettings())
    done(CaseResult("judge.canaries", "it reads the known pairs right (as the engine asks at start)", checked.passed,
                    checked.detail, checked.seconds * 1000))
    await client.aclose()
    return Report(spec.url, Role.VERIFIER, model, tuple(results))
