"""The LLM generator's evaluation row (bench.evaluation.llm_row): what it counts from each decision."""
from __future__ import annotations

import dataclasses
import json

import pytest

from bench.evaluation.data import Passage
from bench.evaluation.generation import Prepared, Question
from bench.evaluation.llm_row import (LLM_ID, demo_questions, judge_case, pick_llm_agent, read_replies, replayed,
                                     summarise)
from engine.agents.client import CallResult
from engine.config import FleetConfig
from engine.errors import InputError
from engine.generation.adjudicate import Decision
from engine.types import (AgentKind, AgentOutcome, AgentSpec, CallStatus, Candidate, Chunk, Claim, ClaimCheck,
                          Generation, Role, Verdict)

QUESTION = Question("q1", "What are the moons of Mars?", ("Phobos and Deimos",),
                    (Passage("m#0", "Mars", "Mars has two moons, Phobos and Deimos.", True),))
ITEM = Prepared(QUESTION, (), {})
OK = AgentOutcome(LLM_ID, Role.GENERATOR, CallStatus.OK, 7000.0, mode="json-object-schema")


def candidate(agent: str, answer: str, *supported: bool) -> Candidate:
    gen = Generation(answer=answer, claims=tuple(Claim(f"c{i}", ("m#0",)) for i in range(len(supported))))
    checks = tuple(ClaimCheck(claim, ok, 1.0) for claim, ok in zip(gen.claims, supported))
    return Candidate(agent, gen, checks, sum(supported) / len(supported), (), 0.5)


def decided(chosen: Candidate | None, *others: Candidate) -> Decision:
    verdict = Verdict.ANSWERED if chosen else Verdict.ABSTAINED
    return Decision(verdict, chosen, tuple(([chosen] if chosen else []) + list(others)), "")


def test_counts_given_right_and_short_of_support_beside_others_and_alone():
    mine = candidate(LLM_ID, "Phobos and Deimos", True, False)
    reply = CallResult(OK, mine.generation)
    case = judge_case("demo", ITEM, reply, decided(candidate("ext", "x", True), mine), decided(mine))
    assert (case.given, case.correct, case.claims, case.supported) == (False, False, 2, 1)
    assert (case.alone_given, case.alone_correct, case.alone_unsupported_given) == (True, True, True)
    failed = judge_case("demo", ITEM, CallResult(dataclasses.replace(OK, status=CallStatus.MALFORMED), None),
                        None, None)
    summary = summarise([case, failed], AgentSpec("gen-smol", Role.GENERATOR, AgentKind.QUORUM_HTTP,
                                                  backend="llm-local"))
    assert summary["valid_reply_rate"] == 0.5 and summary["claim_support_rate"] == 0.5
    assert summary["given_rate"] == 0.0 and summary["given_correct_rate"] is None
    assert summary["alone"] == {"given_rate": 0.5, "right_answers": 1, "right_given_rate": 1.0,
                                "given_correct_rate": 1.0, "unsupported_given": 1}
    assert summary["statuses"] == {"ok": 1, "malformed": 1} and summary["latency_ms_p50"] == 7000.0


def test_the_llm_agent_is_picked_from_the_fleet_enabled_for_the_run(tmp_path):
    smol = AgentSpec("gen-smol", Role.GENERATOR, AgentKind.QUORUM_HTTP, backend="llm-local", enabled=False)
    ext = AgentSpec("gen-a", Role.GENERATOR, AgentKind.QUORUM_HTTP, backend="extractive")
    fleet = FleetConfig(tmp_path / "fleet.toml", (ext, smol), tmp_path)
    assert pick_llm_agent(fleet, None).id == "gen-smol" and pick_llm_agent(fleet, None).enabled
    with pytest.raises(InputError, match="not an LLM generator"):
        pick_llm_agent(fleet, "gen-a")
    with pytest.raises(InputError, match="no LLM generator"):
        pick_llm_agent(FleetConfig(tmp_path / "f.toml", (ext,), tmp_path), None)


def test_demo_questions_mark_the_supporting_documents_chunks_as_gold():
    chunks = [Chunk("mars-moons#0", "Mars has two moons.", metadata={"title": "Moons"}),
              Chunk("venus#0", "Venus is hot.")]
    [q] = demo_questions(chunks, [{"id": "q02", "question": "Moons of Mars?", "answers": ["Phobos"],
                                   "supporting": ["mars-moons"]}])
    assert q.id == "demo-q02" and [p.gold for p in q.passages] == [True, False]
    with pytest.raises(InputError, match="record 1"):
        demo_questions(chunks, [{"id": "q", "question": "no answers"}])


def test_a_recorded_reply_is_decided_again_as_the_model_wrote_it(tmp_path):
    mine = candidate(LLM_ID, "Phobos and Deimos", True)
    case = judge_case("demo", ITEM, CallResult(OK, mine.generation), decided(mine), decided(mine))
    cases = tmp_path / "run.llm.jsonl"
    cases.write_text(json.dumps(case.to_json()) + "\n" + json.dumps({"id": "q2", "reply": None}) + "\n")
    replies = read_replies(cases)
    assert replies == {"q1": mine.generation}
    spec = AgentSpec(LLM_ID, Role.GENERATOR, AgentKind.QUORUM_HTTP, backend="llm-local")
    assert replayed(spec, replies["q1"]).value == mine.generation
    assert replayed(spec, None).outcome.status is CallStatus.ERROR


def test_replaying_a_file_without_replies_says_so(tmp_path):
    old = tmp_path / "old.llm.jsonl"
    old.write_text(json.dumps({"id": "q1", "answer": "x"}) + "\n")
    with pytest.raises(InputError, match="no recorded replies"):
        read_replies(old)
    broken = tmp_path / "broken.llm.jsonl"
    broken.write_text("{not json\n")
    with pytest.raises(InputError, match="line 1"):
        read_replies(broken)
