"""The quorum (engine.participation), the quorum_lost alert, and what the engine's client makes of each bad
reply the fault profiles send (no agent process: httpx.MockTransport and the ASGI middleware alone)."""
from __future__ import annotations

import dataclasses
import random

import httpx
import pytest

from engine import load_settings
from engine.agents.client import AgentClient, outcome
from engine.agents.faults import (MALFORMED_BODIES, SERVER_ERRORS, WRONG_TYPE_REPLIES, FaultInjector, ReplyFaults,
                                  bad_reply)
from engine.alerts import Severity, severity_of
from engine.alerts.rules import alerts_for, quorum_alerts
from engine.participation import participation, role_participation, shortfall, summary
from engine.types import AgentKind, AgentOutcome, AgentSpec, CallStatus, FaultKind, FaultProfile, Role, Verdict

from ..console.answers import make_answer


def calls(role: Role, *statuses: CallStatus) -> list[AgentOutcome]:
    return [AgentOutcome(f"{role.value[:3]}-{i}", role, s, 10.0) for i, s in enumerate(statuses)]


OK, DOWN, TIMEOUT = CallStatus.OK, CallStatus.DOWN, CallStatus.TIMEOUT


# --- the quorum ------------------------------------------------------------------------------------
def test_retrievers_need_three_answers_and_a_majority_in_full_mode():
    three_of_five = role_participation(Role.RETRIEVER, calls(Role.RETRIEVER, OK, OK, OK, DOWN, TIMEOUT), 3)
    assert (three_of_five.needed, three_of_five.held, dict(three_of_five.failed)) == (3, True, {"down": 1, "timeout": 1})
    # Two answering lists: secure retrieval's passage quorum would not apply.
    assert not role_participation(Role.RETRIEVER, calls(Role.RETRIEVER, OK, OK), 3).held
    # Four of nine is past the minimum but not a majority: the failed agents' weight went to the rest.
    four_of_nine = role_participation(Role.RETRIEVER, calls(Role.RETRIEVER, *[OK] * 4, *[DOWN] * 5), 3)
    assert (four_of_nine.needed, four_of_nine.held) == (5, False)


def test_the_low_tier_needs_two_lists_and_its_single_generator():
    low = participation([calls(Role.RETRIEVER, OK, OK)], calls(Role.GENERATOR, OK), retrieval_mode="optimistic",
                        policy_generators=1)
    assert low.quorum_held and (low.retrievers.needed, low.generators.needed) == (2, 1)
    medium = participation([calls(Role.RETRIEVER, OK, OK, OK)], calls(Role.GENERATOR, OK, DOWN),
                           retrieval_mode="full", policy_generators=0)
    assert not medium.quorum_held and medium.generators.needed == 2
    assert summary(medium) == "3 of 3 retrievers, 1 of 2 generators answered"
    assert shortfall(medium) == "quorum not held: 1 of 2 generators answered, 2 needed (1 down)"


def test_the_weakest_retrieve_stage_counts_and_an_unreached_role_needs_nothing():
    hops = [calls(Role.RETRIEVER, OK, OK, OK), calls(Role.RETRIEVER, OK, TIMEOUT, TIMEOUT)]
    part = participation(hops, None, retrieval_mode="full", policy_generators=0, unavailable={Role.RETRIEVER: 2})
    assert (part.retrievers.answered, part.retrievers.asked, part.retrievers.unavailable) == (1, 3, 2)
    assert part.generators.needed == 0 and part.generators.held and not part.quorum_held
    assert summary(part) == "1 of 3 retrievers answered"
    assert shortfall(part) == "quorum not held: 1 of 3 retrievers answered, 3 needed (2 timeout; 2 not up to be asked)"
    nobody = participation([], None, retrieval_mode="full", policy_generators=0)
    assert (nobody.retrievers.asked, nobody.retrievers.needed, nobody.quorum_held) == (0, 3, False)


def test_an_agent_asked_twice_in_one_stage_counts_once_by_its_last_call():
    twice = [AgentOutcome("ret-a", Role.RETRIEVER, DOWN, 1.0), AgentOutcome("ret-a", Role.RETRIEVER, OK, 1.0)]
    assert role_participation(Role.RETRIEVER, twice, 1).asked == 1


# --- the alert -------------------------------------------------------------------------------------
def test_a_lost_quorum_raises_one_warning_naming_who_did_not_reply():
    part = participation([calls(Role.RETRIEVER, OK, OK, DOWN, TIMEOUT)], calls(Role.GENERATOR, OK, OK),
                         retrieval_mode="full", policy_generators=0)
    agents = tuple(calls(Role.RETRIEVER, OK, OK, DOWN, TIMEOUT)) + tuple(calls(Role.GENERATOR, OK, OK))
    answer = dataclasses.replace(make_answer(Verdict.ANSWERED, agents=agents, trace_id="q5"), participation=part)
    [alert] = quorum_alerts(answer, 7.0)
    assert (alert.kind, alert.agent_id, alert.trace_id) == ("quorum_lost", "", "q5")
    assert alert.message == ("answered, quorum not held: 2 of 4 retrievers answered, 3 needed (1 down; 1 timeout); "
                             "no reply from ret-2, ret-3")
    assert severity_of("quorum_lost") is Severity.WARNING
    assert [a.kind for a in alerts_for(answer, 7.0)][-1] == "quorum_lost"
    held = dataclasses.replace(answer, participation=participation(
        [calls(Role.RETRIEVER, OK, OK, OK)], calls(Role.GENERATOR, OK, OK), retrieval_mode="full", policy_generators=0))
    assert quorum_alerts(held, 7.0) == () and quorum_alerts(make_answer(), 7.0) == ()   # held; not counted


# --- the client on every bad reply -----------------------------------------------------------------
async def call_with(reply: httpx.Response, role: Role):
    client = AgentClient(load_settings().limits, transport=httpx.MockTransport(lambda request: reply))
    spec = AgentSpec("agent-x", role, AgentKind.QUORUM_HTTP, url="http://agent")
    op = (client.retrieve(spec, spec.url, "q", 4, "t") if role is Role.RETRIEVER else
          client.generate(spec, spec.url, "q", (), "t"))
    try:
        return (await outcome(spec, op)).outcome
    finally:
        await client.aclose()


@pytest.mark.parametrize("role", [Role.RETRIEVER, Role.GENERATOR])
@pytest.mark.parametrize("body", MALFORMED_BODIES, ids=["truncated", "shape", "nan", "huge-number", "deep", "not-utf8"])
async def test_every_malformed_body_is_that_agents_malformed_outcome(body, role):
    # NaN, a 400-digit number and 100,000 nested brackets used to pass as a chunk score or escape the
    # fan-out as OverflowError / RecursionError, failing the whole question.
    got = await call_with(httpx.Response(200, content=body, headers={"content-type": "application/json"}), role)
    assert got.status is CallStatus.MALFORMED and got.error


@pytest.mark.parametrize("content_type,body", WRONG_TYPE_REPLIES)
async def test_a_page_instead_of_json_is_malformed(content_type, body):
    got = await call_with(httpx.Response(200, content=body, headers={"content-type": content_type.decode()}),
                          Role.RETRIEVER)
    assert got.status is CallStatus.MALFORMED and "not JSON" in got.error


@pytest.mark.parametrize("status,content_type,body", SERVER_ERRORS)
async def test_a_server_error_is_that_agents_outcome_with_its_status(status, content_type, body):
    # Any status but 200 is "malformed" today (engine.agents.client), a 5xx included.
    got = await call_with(httpx.Response(status, content=body), Role.RETRIEVER)
    assert got.status is CallStatus.MALFORMED and got.error.startswith(f"HTTP {status}")


# --- the faults themselves ------------------------------------------------------------------------
def test_faults_strike_after_the_good_requests_at_their_rate():
    always = FaultInjector(FaultProfile(kind=FaultKind.DRIP, after_requests=2))
    assert [always.strikes() for _ in range(4)] == [False, False, True, True]
    sometimes = FaultInjector(FaultProfile(kind=FaultKind.MALFORMED, rate=0.3, seed=4))
    hits = sum(sometimes.strikes() for _ in range(400))
    assert 80 < hits < 160
    # Each life of a flapping agent draws anew.
    first, second = (FaultInjector(FaultProfile(kind=FaultKind.FLAP, rate=0.5), cycle=c) for c in (0, 1))
    assert [first.strikes() for _ in range(32)] != [second.strikes() for _ in range(32)]


async def test_reply_faults_answer_operations_and_leave_health_alone():
    sent = []

    async def app(scope, receive, send):
        sent.append(("app", scope["path"]))

    async def send(message):
        sent.append(message)
    faults = ReplyFaults(app, FaultInjector(FaultProfile(kind=FaultKind.HTTP_5XX)))
    await faults({"type": "http", "path": "/health"}, None, send)
    await faults({"type": "http", "path": "/retrieve"}, None, send)
    assert sent[0] == ("app", "/health")
    assert sent[1]["type"] == "http.response.start" and sent[1]["status"] in (500, 502, 503)
    assert {bad_reply(FaultKind.WRONG_TYPE, random.Random(i))[1] for i in range(20)} == {t for t, _ in WRONG_TYPE_REPLIES}
