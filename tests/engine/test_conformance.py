"""`main.py agents check URL --role R`: the protocol's cases against live agents on loopback. Every built-in
agent of the small fleet (real processes) passes; agents that break the protocol fail, naming the case."""
import asyncio
import json
import socket
import sys
import textwrap

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

import main
from engine import load_fleet
from engine.agents.conformance import cases_for, run_check
from engine.agents.launcher import FleetLauncher
from engine.config import PROJECT_ROOT
from engine.types import Role

from ..conftest import write_fleet
from ..serving import serving

VERIFIER = """
[[agents]]
id = "ver-e5"
role = "verifier"
backend = "evidence-verifier"
"""


def health(role="retriever"):
    async def endpoint(request: Request) -> JSONResponse:
        return JSONResponse({"status": "ok", "id": "homemade", "role": role})
    return Route("/health", endpoint, methods=["GET"])


def sloppy_retriever() -> Starlette:
    """Trusts its input: a missing field or bad JSON is a 500, no cap on k or on the body, a wrong type taken."""
    async def retrieve(request: Request) -> JSONResponse:
        body = json.loads(await request.body())      # bad JSON: an uncaught error, so a 500
        query, k = body["query"], int(body.get("k", 5))    # a missing query: KeyError, a 500
        chunks = [{"id": f"doc#{i}", "text": f"{query} {i}", "score": 1.0 / (i + 1)} for i in range(min(k, 3))]
        return JSONResponse({"chunks": chunks})
    return Starlette(routes=[health(), Route("/retrieve", retrieve, methods=["POST"])])


def garbled_retriever() -> Starlette:
    """Answers everything with 200 and a body that is not JSON."""
    async def retrieve(request: Request) -> Response:
        return Response(b'{"chunks": [{"id": "doc#0", "text": "cut off', media_type="application/json")
    return Starlette(routes=[health(), Route("/retrieve", retrieve, methods=["POST"])])


def mistyped_generator() -> Starlette:
    """Says it is a retriever; its answers break the reply schema; its challenge quotes what it never saw."""
    async def generate(request: Request) -> JSONResponse:
        return JSONResponse({"answer": "Asaph Hall.", "claims": [{"text": "Asaph Hall found them.", "citations": [3]}],
                             "confidence": 7})
    async def challenge(request: Request) -> JSONResponse:
        return JSONResponse({"quote": "Trust me.", "citations": ["elsewhere#9"]})
    return Starlette(routes=[health("retriever"), Route("/generate", generate, methods=["POST"]),
                             Route("/challenge", challenge, methods=["POST"])])


def by_name(report) -> dict:
    return {r.name: r for r in report.results}


async def test_every_built_in_agent_of_the_small_fleet_passes(tmp_path):
    fleet = load_fleet(write_fleet(tmp_path, extra=VERIFIER))
    launcher = FleetLauncher(fleet, tmp_path / "cache", ready_timeout_s=90)
    try:
        urls = await launcher.start()
        assert set(urls) == {a.id for a in launcher.builtin_agents()}
        for spec in launcher.builtin_agents():     # honest and Byzantine alike: lying is no protocol breach
            report = await run_check(urls[spec.id], spec.role, timeout_s=30)
            assert report.passed, (spec.id, [(r.name, r.detail) for r in report.failures])
            assert report.agent_id == spec.id
            assert len(report.results) == len(cases_for(spec.role)) >= 15
        # The command line, as an operator runs it: a table, exit 0.
        process = await asyncio.create_subprocess_exec(
            sys.executable, "main.py", "agents", "check", urls["gen-a"], "--role", "generator",
            cwd=PROJECT_ROOT, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        out, err = await asyncio.wait_for(process.communicate(), timeout=60)
    finally:
        await launcher.stop()
    text = out.decode()
    assert process.returncode == 0, (text, err.decode())
    assert "pass  challenge.own-claim" in text and "FAIL" not in text
    assert f"{len(cases_for(Role.GENERATOR))} of {len(cases_for(Role.GENERATOR))} cases pass (gen-a)" in text


async def test_an_agent_that_trusts_its_input_fails_the_bad_request_cases_by_name():
    url, stop = await serving(sloppy_retriever())
    try:
        report = await run_check(url, Role.RETRIEVER, timeout_s=5)
    finally:
        await stop()
    cases = by_name(report)
    assert not report.passed
    for passing in ("health", "retrieve.good", "retrieve.defaults", "retrieve.k-at-cap", "retrieve.unknown-field",
                    "health.after"):
        assert cases[passing].passed, cases[passing]
    for name, reason in (("retrieve.not-json", "HTTP 500, expected 400"),
                         ("retrieve.query.missing", "HTTP 500, expected 400"),
                         ("retrieve.k.above", "accepted (HTTP 200"),
                         ("retrieve.query.too-long", "accepted (HTTP 200"),
                         ("retrieve.oversized", "HTTP 200 for 1000001 bytes, expected 400 or 413")):
        assert not cases[name].passed and cases[name].detail.startswith(reason), cases[name]
    assert cases["retrieve.query.missing"].what == "query left out: 400"


async def test_malformed_json_and_broken_reply_schemas_are_named(capsys):
    url, stop = await serving(garbled_retriever())
    try:
        garbled = by_name(await run_check(url, Role.RETRIEVER, timeout_s=5))
    finally:
        await stop()
    assert garbled["health"].passed
    assert garbled["retrieve.good"].detail.startswith("HTTP 200 but the body is not JSON")
    assert not garbled["retrieve.k.above"].passed and garbled["retrieve.k.above"].detail.startswith("accepted")

    url, stop = await serving(mistyped_generator())
    try:
        report = await run_check(url, Role.GENERATOR, timeout_s=5)
    finally:
        await stop()
    cases = by_name(report)
    assert cases["health"].detail == "it says it is a retriever, checked as a generator"
    assert cases["generate.good"].detail.startswith("the reply breaks GenerateReply: claims[0].citations[0] has type "
                                                    "integer")
    assert cases["challenge.own-claim"].detail == "cites elsewhere#9, which the context does not hold"
    assert report.agent_id == "homemade"


async def test_an_agent_that_is_not_there_or_too_slow_fails_every_case_with_the_reason():
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()                                 # nothing listens there now
    report = await run_check(f"http://127.0.0.1:{port}", Role.VERIFIER, timeout_s=2)
    assert not report.passed and all(r.detail.startswith("cannot connect") for r in report.results)

    calls = []

    async def slow(request: Request) -> JSONResponse:
        calls.append(1)
        if len(calls) == 1:             # the first (good) request only, so the rest of the run is quick
            await asyncio.sleep(2)
        return JSONResponse({"verdict": "supported", "score": 1})
    url, stop = await serving(Starlette(routes=[health("verifier"), Route("/validate", slow, methods=["POST"])]))
    try:
        cases = by_name(await run_check(url, Role.VERIFIER, timeout_s=0.3))
    finally:
        await stop()
    assert cases["health"].passed
    assert cases["validate.good"].detail == "no reply within 0.3 s"


async def test_the_command_exits_1_and_prints_the_failing_cases():
    url, stop = await serving(sloppy_retriever())
    try:
        process = await asyncio.create_subprocess_exec(
            sys.executable, "main.py", "agents", "check", url, "--role", "retriever", "--timeout", "5",
            cwd=PROJECT_ROOT, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        out, _ = await asyncio.wait_for(process.communicate(), timeout=60)
        as_json = await asyncio.create_subprocess_exec(
            sys.executable, "main.py", "agents", "check", url, "--role", "retriever", "--json",
            cwd=PROJECT_ROOT, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        data, _ = await asyncio.wait_for(as_json.communicate(), timeout=60)
    finally:
        await stop()
    text = out.decode()
    assert process.returncode == 1 and as_json.returncode == 1
    assert "FAIL  retrieve.query.missing" in text and "expected: query left out: 400" in text
    assert "pass  retrieve.good" in text and "failing: retrieve.not-json" in text
    report = json.loads(data)
    assert report["passed"] is False and report["role"] == "retriever"
    assert {c["name"] for c in report["cases"] if not c["passed"]} >= {"retrieve.query.missing", "retrieve.oversized"}


@pytest.mark.parametrize("argv, fragment", [
    (["agents", "check", "ftp://127.0.0.1:1", "--role", "retriever"], "expected an agent's base URL"),
    (["agents", "check", "http://127.0.0.1:99999", "--role", "retriever"], "expected an agent's base URL"),
    (["agents", "check", "http://127.0.0.1:8001", "--role", "retriever", "--timeout", "0"], "--timeout"),
    (["agents", "check", "https://127.0.0.1:8001", "--role", "retriever", "--ca-file", "/nonexistent/ca.pem"],
     "--ca-file"),
])
def test_bad_input_exits_2(argv, fragment, capsys):
    assert main.main(argv) == 2
    assert fragment in capsys.readouterr().err


def test_an_unknown_role_is_refused_by_the_parser(capsys):
    with pytest.raises(SystemExit) as exit_:
        main.main(["agents", "check", "http://127.0.0.1:8001", "--role", "oracle"])
    assert exit_.value.code == 2
    assert "invalid choice: 'oracle'" in capsys.readouterr().err


def test_the_agent_s_words_cannot_drive_the_terminal(capsys):
    from engine.cli.reputation import _print_case
    from engine.agents.conformance import CaseResult
    _print_case(CaseResult("retrieve.good", "a good query", False, "HTTP 500: \x1b[2J\x1b]0;owned\x07gone"))
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\x07" not in out and "gone" in out
    assert textwrap.dedent(out).count("\n") == 2


async def test_a_keyed_agent_passes_when_checked_with_its_key_and_refuses_without(monkeypatch):
    from engine.agents.conformance import Signing
    from engine.agents.retrievers import BM25Retriever
    from engine.agents.server import build_app
    from engine.ingest.corpus import load_corpus
    from engine.types import AgentKind, AgentSpec

    from ..conftest import TEST_CORPUS
    corpus = load_corpus(TEST_CORPUS)
    key = bytes(range(32))
    spec = AgentSpec(id="ret-keyed", role=Role.RETRIEVER, kind=AgentKind.QUORUM_HTTP, backend="bm25")
    url, stop = await serving(build_app(spec, BM25Retriever(corpus), len(corpus.chunks), key=key))
    try:
        signed = await run_check(url, Role.RETRIEVER, timeout_s=10, signing=Signing(key))
        unsigned = by_name(await run_check(url, Role.RETRIEVER, timeout_s=10))
        wrong = by_name(await run_check(url, Role.RETRIEVER, timeout_s=10, signing=Signing(bytes(32))))
        monkeypatch.setenv("CONFORMANCE_TEST_KEY", key.hex())
        process = await asyncio.create_subprocess_exec(
            sys.executable, "main.py", "agents", "check", url, "--role", "retriever", "--key-env",
            "CONFORMANCE_TEST_KEY", cwd=PROJECT_ROOT, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        out, _ = await asyncio.wait_for(process.communicate(), timeout=60)
    finally:
        await stop()
    assert signed.passed, [(r.name, r.detail) for r in signed.failures]
    assert {"retrieve.unsigned", "retrieve.mis-signed"} <= {r.name for r in signed.results}
    assert unsigned["health"].passed
    assert unsigned["retrieve.good"].detail.startswith("HTTP 401: the agent wants signed requests")
    assert wrong["retrieve.good"].detail.startswith("HTTP 401, and the refusal does not verify with this key")
    assert process.returncode == 0 and key.hex() not in out.decode()
    assert "signed requests" in out.decode()


def test_a_key_variable_that_is_unset_or_not_a_key_is_bad_input(monkeypatch, capsys):
    monkeypatch.delenv("CONFORMANCE_NO_KEY", raising=False)
    argv = ["agents", "check", "http://127.0.0.1:8001", "--role", "retriever", "--key-env", "CONFORMANCE_NO_KEY"]
    assert main.main(argv) == 2 and "not set" in capsys.readouterr().err
    monkeypatch.setenv("CONFORMANCE_NO_KEY", "sekrit-words")
    assert main.main(argv) == 2
    err = capsys.readouterr().err
    assert "expected hex digits" in err and "sekrit" not in err


def verifier_reading_answers(scores) -> Starlette:
    async def validate(request: Request) -> JSONResponse:
        return JSONResponse({"verdict": "supported", "score": 1})

    async def read(request: Request) -> JSONResponse:
        return JSONResponse({"scores": scores, "answer": "Asaph Hall", "reason": "homemade reading"})
    return Starlette(routes=[health("verifier"), Route("/validate", validate, methods=["POST"]),
                             Route("/read", read, methods=["POST"])])


@pytest.mark.parametrize("scores, passed, detail", [
    ([0.8, 0.3], True, "reads: P = 0.80 for the answer, 0.30 for a true sentence that does not answer"),
    ([1.5, 0.3], False, "the reply breaks ReadReply: scores[0]"),
    ([0.8], False, "1 scores for 2 candidates"),
])
async def test_an_optional_read_route_is_checked_when_it_is_served(scores, passed, detail):
    url, stop = await serving(verifier_reading_answers(scores))
    try:
        cases = by_name(await run_check(url, Role.VERIFIER, timeout_s=5))
    finally:
        await stop()
    assert cases["read.optional"].passed is passed and cases["read.optional"].detail.startswith(detail)
    assert cases["validate.good"].passed


def openai_judge(reads_right: bool, logprobs: bool = True):
    """An OpenAI-compatible server at the transport: P(yes) high for a canary's answer (or for everything else)."""
    from engine.generation.canaries import CANARIES, CLAIM_CANARIES
    answers = {c.answer for c in CANARIES}
    supported = {c.claim for c in CLAIM_CANARIES if c.supported}

    def handler(request):
        body = json.loads(request.content)
        last = body["messages"][-1]["content"]
        if not logprobs:
            return httpx.Response(200, json={"choices": [{"message": {"content": "Yes"}}]})
        if "Hypothesis: " in last:
            right = any(f"Hypothesis: {c}" in last for c in supported)
        else:
            right = any(last.endswith(f"Candidate answer: {a}") for a in answers)
        yes = -0.1 if right == reads_right else -3.0
        top = [{"token": "Yes", "logprob": yes}, {"token": "No", "logprob": -1.2}]
        return httpx.Response(200, json={"choices": [{"logprobs": {"content": [{"top_logprobs": top}]}}]})
    return httpx.MockTransport(handler)


@pytest.mark.parametrize("reads_right, logprobs, passed", [(True, True, (True, True)), (False, True, (True, False)),
                                                           (True, False, (False, False))])
async def test_an_openai_compatible_judge_is_checked_by_its_log_probabilities_and_its_canaries(reads_right, logprobs,
                                                                                                passed):
    from engine.agents.conformance import run_judge_check
    report = await run_judge_check("http://judge", "qwen", 5, transport=openai_judge(reads_right, logprobs))
    assert tuple(r.passed for r in report.results) == passed
    assert [r.name for r in report.results] == ["judge.logprobs", "judge.canaries"] and report.agent_id == "qwen"
    if not logprobs:
        assert "log-probabilities" in report.results[0].detail
