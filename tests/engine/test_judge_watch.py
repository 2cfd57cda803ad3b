"""engine/judges.py: each judge answers its canaries over the wire (a judge agent behind a mock transport), the
registry says whether it may be asked, and a check cut short by the agent going away says nothing."""
import json

import httpx

from engine.agents.client import AgentClient
from engine.config import LimitSettings, load_fleet
from engine.generation.canaries import CANARIES, CLAIM_CANARIES
from engine.judges import JudgeWatch
from engine.registry import AgentRegistry, FleetState
from engine.settings.judge import JudgeSettings
from engine.types import AgentState, CanaryState

from .test_config import write_fleet

JUDGE = '[[agents]]\nid = "ver-judge"\nrole = "verifier"\nbackend = "llm-judge"\n'


def judge_agent(reads_right: bool):
    answers = {c.answer for c in CANARIES}
    supported = {c.claim for c in CLAIM_CANARIES if c.supported}

    def handler(request):
        body = json.loads(request.content)
        if request.url.path == "/read":
            right = [0.9 if (text in answers) == reads_right else 0.3 for text in body["candidates"]]
            return httpx.Response(200, json={"scores": right, "answer": "", "reason": ""})
        verdict = "supported" if body["claim"] in supported else "refuted"
        return httpx.Response(200, json={"verdict": verdict, "score": 0.9, "reason": ""})
    return handler


async def checked(tmp_path, handler, *, goes_down=False):
    registry = AgentRegistry(load_fleet(write_fleet(tmp_path, extra=JUDGE)))
    registry.set_state("ver-judge", AgentState.UP, url="http://judge")
    assert registry.get("ver-judge").status is FleetState.CHECKING and not registry.get("ver-judge").reads_meaning
    reports = []

    async def report(view, result, before):
        reports.append((view.canaries, result.passed, before))

    def wire(request):
        if goes_down:
            registry.set_state("ver-judge", AgentState.DOWN, url="http://judge")
        return handler(request)
    client = AgentClient(LimitSettings(), transport=httpx.MockTransport(wire))
    result = await JudgeWatch(client, registry, JudgeSettings(), report).check("ver-judge")
    await client.aclose()
    return registry.get("ver-judge"), result, reports


async def test_a_judge_that_reads_its_canaries_right_may_be_asked(tmp_path):
    view, result, reports = await checked(tmp_path, judge_agent(reads_right=True))
    assert result.passed and view.canaries is CanaryState.PASSED and view.reads_meaning
    assert view.status is FleetState.UP and "0.90/0.30" in view.canary_detail
    assert reports == [(CanaryState.PASSED, True, None)]


async def test_a_judge_that_misreads_them_is_not_asked_and_says_why(tmp_path):
    view, result, reports = await checked(tmp_path, judge_agent(reads_right=False))
    assert not result.passed and view.canaries is CanaryState.FAILED and not view.reads_meaning
    assert view.status is FleetState.MISREADS and "under 0.50" in view.canary_detail
    assert reports == [(CanaryState.FAILED, False, None)]


async def test_a_check_cut_short_by_the_judge_going_away_is_no_reading_of_it(tmp_path):
    view, result, reports = await checked(tmp_path, judge_agent(reads_right=True), goes_down=True)
    assert result is None and reports == [] and view.canaries is CanaryState.PENDING
