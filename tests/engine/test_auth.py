"""Agent authentication: signed requests and replies between the engine's client and a keyed agent, over
ASGI in process; forged, replayed and tampered replies at the transport boundary (httpx.MockTransport)."""
import json
import os
import time

import httpx
import pytest

from engine import CallStatus
from engine.agents.auth import (NONCE_HEADER, SIGNATURE_HEADER, TIMESTAMP_HEADER, TRACE_HEADER, AgentAuthError,
                                Keyring, ReplayGuard, load_key, parse_key, reply_signature, request_signature)
from engine.agents.client import AgentClient, outcome
from engine.agents.extractive import ExtractiveGenerator
from engine.agents.retrievers import BM25Retriever
from engine.agents.server import build_app
from engine.config import LimitSettings
from engine.ingest.corpus import load_corpus
from engine.errors import AgentError, AgentProtocolError, ConfigError
from engine.types import AgentKind, AgentSecurity, AgentSpec, Role

from ..conftest import TEST_CORPUS

CORPUS = load_corpus(TEST_CORPUS)
KEY_R1 = bytes(range(32))
KEY_R2 = bytes(range(100, 132))
R1 = AgentSpec(id="r1", role=Role.RETRIEVER, kind=AgentKind.QUORUM_HTTP, url="http://r1", timeout_s=5)
GEN = AgentSpec(id="g1", role=Role.GENERATOR, kind=AgentKind.QUORUM_HTTP, url="http://g1", timeout_s=5)


def keyring(**keys: bytes) -> Keyring:
    ring = Keyring()
    ring._keys.update(keys)      # what load() or key_for_launch() put there
    return ring


def agent_app(spec=R1, key=KEY_R1):
    backend = BM25Retriever(CORPUS) if spec.role is Role.RETRIEVER else ExtractiveGenerator()
    return build_app(spec, backend, len(CORPUS.chunks), key=key)


def client(transport, ring=None) -> AgentClient:
    return AgentClient(LimitSettings(), transport=transport, keyring=ring)


class Recording(httpx.AsyncBaseTransport):
    """Passes requests to the agent and keeps what went by (the attacker's view of the wire)."""

    def __init__(self, app) -> None:
        self.inner = httpx.ASGITransport(app=app)
        self.seen: list[tuple[httpx.Request, httpx.Response, bytes]] = []

    async def handle_async_request(self, request):
        response = await self.inner.handle_async_request(request)
        body = await response.aread()
        self.seen.append((request, response, body))
        return httpx.Response(response.status_code, headers=response.headers, content=body)


# --- the good path ---------------------------------------------------------------------------
async def test_a_keyed_agent_answers_signed_replies_the_engine_accepts():
    wire = Recording(agent_app())
    http = client(wire, keyring(r1=KEY_R1))
    chunks = await http.retrieve(R1, R1.url, "moons of Mars", 3, "t-1")
    await http.aclose()
    assert chunks and any("Phobos" in c.text for c in chunks)
    request, response, _ = wire.seen[0]
    assert request.headers[SIGNATURE_HEADER].startswith("v1=") and request.headers[TRACE_HEADER] == "t-1"
    assert response.headers[SIGNATURE_HEADER].startswith("v1=")


async def test_a_keyed_generator_is_signed_on_generate_and_challenge():
    http = client(httpx.ASGITransport(app=agent_app(GEN, KEY_R2)), keyring(g1=KEY_R2))
    from engine.types import Chunk
    context = (Chunk("mars#0", "Mars has two moons, Phobos and Deimos.", "s"),)
    generation = await http.generate(GEN, GEN.url, "What are the moons of Mars?", context, "t-2")
    quote, cited = await http.challenge(GEN, GEN.url, "Mars has two moons", context, "t-2")
    await http.aclose()
    assert "Phobos" in generation.answer and cited == ("mars#0",)


async def test_without_a_key_nothing_changes():
    unkeyed = agent_app(key=None)
    for ring in (None, Keyring()):
        wire = Recording(unkeyed)
        http = client(wire, ring)
        assert await http.retrieve(R1, R1.url, "moons of Mars", 3, "t")
        await http.aclose()
        request, response, _ = wire.seen[0]
        assert SIGNATURE_HEADER not in request.headers and SIGNATURE_HEADER not in response.headers


# --- what the engine refuses -----------------------------------------------------------------
async def _captured_reply(trace_id: str) -> tuple[httpx.Response, bytes]:
    wire = Recording(agent_app())
    http = client(wire, keyring(r1=KEY_R1))
    await http.retrieve(R1, R1.url, "moons of Mars", 3, trace_id)
    await http.aclose()
    _, response, body = wire.seen[0]
    return response, body


async def _outcome_against(handler, trace_id="t-new"):
    http = client(httpx.MockTransport(handler), keyring(r1=KEY_R1))
    result = await outcome(R1, http.retrieve(R1, R1.url, "moons of Mars", 3, trace_id))
    await http.aclose()
    return result


@pytest.mark.parametrize("claimed", ["r1", "r2"])
async def test_a_reply_signed_with_another_agents_key_is_refused(claimed):
    def impersonator(request):
        # r2 knows only its own key: whoever it says it is, its signature is not r1's.
        body = json.dumps({"chunks": [{"id": "x#0", "text": "Mars has nine moons.", "score": 1.0}]}).encode()
        signature = reply_signature(KEY_R2, claimed, "/retrieve", request.headers[TRACE_HEADER],
                                    request.headers[NONCE_HEADER], request.headers[TIMESTAMP_HEADER], 200, body)
        return httpx.Response(200, content=body, headers={SIGNATURE_HEADER: signature})
    result = await _outcome_against(impersonator)
    assert result.value is None
    assert result.outcome.status is CallStatus.MALFORMED
    assert "signature does not match" in result.outcome.error


@pytest.mark.parametrize("same_trace", [False, True])
async def test_a_replayed_reply_is_refused(same_trace):
    """A genuine reply, captured and served again: for another trace id, or for the same trace id but
    another request (the engine's nonce is new every time)."""
    captured, body = await _captured_reply("t-old")

    def replay(request):
        return httpx.Response(200, content=body, headers={SIGNATURE_HEADER: captured.headers[SIGNATURE_HEADER]})
    result = await _outcome_against(replay, "t-old" if same_trace else "t-new")
    assert result.value is None and "signature does not match" in result.outcome.error


async def test_a_tampered_body_is_refused():
    wire = Recording(agent_app())

    async def tamper(request):
        response = await wire.handle_async_request(request)
        body = response.content.replace(b"Phobos", b"Phobia", 1)
        assert body != response.content
        return httpx.Response(200, content=body, headers={SIGNATURE_HEADER: response.headers[SIGNATURE_HEADER]})
    http = client(httpx.MockTransport(tamper), keyring(r1=KEY_R1))
    result = await outcome(R1, http.retrieve(R1, R1.url, "moons of Mars", 3, "t"))
    await http.aclose()
    assert result.value is None and "signature does not match" in result.outcome.error


async def test_an_unsigned_reply_from_a_keyed_agent_is_refused():
    result = await _outcome_against(lambda request: httpx.Response(200, json={"chunks": []}))
    assert result.outcome.status is CallStatus.MALFORMED and "not signed" in result.outcome.error


async def test_a_signature_failure_is_an_agent_error_the_fan_out_can_count():
    http = client(httpx.MockTransport(lambda request: httpx.Response(200, json={"chunks": []})), keyring(r1=KEY_R1))
    with pytest.raises(AgentAuthError) as caught:
        await http.retrieve(R1, R1.url, "q", 3, "t")
    await http.aclose()
    assert isinstance(caught.value, AgentProtocolError) and isinstance(caught.value, AgentError)
    assert caught.value.agent_id == "r1"


async def test_an_agent_with_another_key_refuses_the_engine_and_its_refusal_does_not_verify():
    http = client(httpx.ASGITransport(app=agent_app(key=KEY_R2)), keyring(r1=KEY_R1))
    result = await outcome(R1, http.retrieve(R1, R1.url, "q", 3, "t"))
    await http.aclose()
    assert result.outcome.status is CallStatus.MALFORMED and "signature does not match" in result.outcome.error


# --- what a keyed agent refuses --------------------------------------------------------------
def _signed_headers(body: bytes, key=KEY_R1, nonce="n" * 32, timestamp=None, trace="t", path="/retrieve"):
    timestamp = str(int(time.time())) if timestamp is None else timestamp
    return {TRACE_HEADER: trace, NONCE_HEADER: nonce, TIMESTAMP_HEADER: timestamp,
            SIGNATURE_HEADER: request_signature(key, "r1", "POST", path, trace, nonce, timestamp, body)}


async def _post(app, body: bytes, headers: dict) -> httpx.Response:
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://agent") as http:
        return await http.post("/retrieve", content=body, headers=headers)


@pytest.mark.parametrize("case, fragment", [
    ("unsigned", "not signed"),
    ("other key", "signature does not match"),
    ("stale", "outside the 300 s window"),
    ("other path", "signature does not match"),
])
async def test_a_keyed_agent_refuses_requests_without_the_engines_signature(case, fragment):
    body = b'{"query": "moons", "k": 3}'
    headers = {"unsigned": lambda: {TRACE_HEADER: "t"},
               "other key": lambda: _signed_headers(body, key=KEY_R2),
               "stale": lambda: _signed_headers(body, timestamp=str(int(time.time()) - 3600)),
               "other path": lambda: _signed_headers(body, path="/generate")}[case]()
    response = await _post(agent_app(), body, headers)
    assert response.status_code == 401 and fragment in response.json()["error"]
    assert "chunks" not in response.json()


async def test_a_keyed_agent_refuses_a_replayed_request():
    app, body = agent_app(), b'{"query": "moons", "k": 3}'
    headers = _signed_headers(body)
    first, again = await _post(app, body, headers), await _post(app, body, headers)
    assert first.status_code == 200 and first.json()["chunks"]
    assert again.status_code == 401 and "replayed" in again.json()["error"]


async def test_health_stays_unsigned_and_tells_nothing_about_the_key():
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=agent_app()), base_url="http://agent") as http:
        response = await http.get("/health")
    assert response.status_code == 200 and response.json()["id"] == "r1"
    assert SIGNATURE_HEADER not in response.headers
    assert KEY_R1.hex() not in response.text and "key" not in response.text.lower()


def test_replay_guard_forgets_nonces_only_after_the_window():
    guard = ReplayGuard(window_s=10)
    assert guard.refusal("a", "100", now=100) == ""
    assert "replayed" in guard.refusal("a", "100", now=105)
    assert guard.refusal("b", "130", now=130) == ""         # "a" is pruned now ...
    assert "outside" in guard.refusal("a", "100", now=130)  # ... and its timestamp is refused instead
    assert "not a number" in guard.refusal("c", "soon", now=130)


# --- keys ------------------------------------------------------------------------------------
def _spec(**security) -> AgentSpec:
    return AgentSpec(id="x", role=Role.RETRIEVER, kind=AgentKind.QUORUM_HTTP, url="https://x",
                     security=AgentSecurity(**security))


def test_keys_are_hex_of_at_least_32_bytes_and_errors_never_repeat_them():
    assert parse_key(" " + KEY_R1.hex() + "\n") == KEY_R1
    for bad in ("zz" * 40, "ab" * 16):
        with pytest.raises(ValueError) as caught:
            parse_key(bad)
        assert bad not in str(caught.value)
    with pytest.raises(ConfigError) as caught:
        load_key("fleet.toml", "agents[0] (x)", _spec(key_env="QK"), environ={"QK": "secret-but-short"})
    assert caught.value.key == "agents[0] (x).key_env" and "secret-but-short" not in str(caught.value)
    with pytest.raises(ConfigError, match="QK is not set"):
        load_key("fleet.toml", "agents[0] (x)", _spec(key_env="QK"), environ={})
    assert load_key("f", "a", _spec(key_env="QK"), environ={"QK": KEY_R2.hex()}) == KEY_R2


def test_a_key_file_must_be_its_owners_alone(tmp_path):
    path = tmp_path / "x.key"
    path.write_text(KEY_R1.hex())
    os.chmod(path, 0o644)
    with pytest.raises(ConfigError, match="chmod 600") as caught:
        load_key("fleet.toml", "agents[0] (x)", _spec(key_file=str(path)))
    assert caught.value.key == "agents[0] (x).key_file"
    os.chmod(path, 0o600)
    assert load_key("fleet.toml", "agents[0] (x)", _spec(key_file=str(path))) == KEY_R1


def test_the_keyring_makes_a_new_key_per_launch_and_shows_no_key():
    from engine.config import FleetConfig
    spec = AgentSpec(id="b", role=Role.RETRIEVER, kind=AgentKind.QUORUM_HTTP, backend="bm25")
    fleet = FleetConfig(path=TEST_CORPUS, agents=(spec,), corpus_dir=TEST_CORPUS)
    ring = Keyring()
    first = ring.key_for_launch(fleet, spec)
    second = ring.key_for_launch(fleet, spec)
    assert len(first) == 32 and first != second and ring.get("b") == second
    assert repr(ring) == "Keyring(agents=['b'])" and second.hex() not in repr(ring)
