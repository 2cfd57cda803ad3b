"""End to end on real agent processes on 127.0.0.1 (the small, torch-free test fleet)."""
import asyncio
import os
import signal

import httpx

from engine import AgentState, CallStatus, Engine, RiskTier, Verdict, load_fleet, load_settings
from engine.events import (AgentCalled, AgentChanged, AnswerDecided, EngineReady, QuestionReceived, RetrievalMerged,
                           TrustUpdated)

from ..conftest import write_fleet


async def test_every_agent_serves_health_and_a_question_is_answered(small_fleet_file, db_path, cache_dir):
    engine = Engine(load_fleet(small_fleet_file), load_settings(), db_path=db_path, cache_dir=cache_dir)
    events = []
    engine.subscribe(events.append)
    async with engine:
        views = engine.fleet.agents()
        assert all(v.state is AgentState.UP for v in views)
        async with httpx.AsyncClient() as http:
            for view in views:
                health = (await http.get(f"{view.url}/health")).json()
                assert health["id"] == view.spec.id and health["status"] == "ok"
                assert view.url.startswith("http://127.0.0.1:")
        answer = await engine.questions.ask("What are the moons of Mars?", RiskTier.MEDIUM)
    assert answer.verdict is Verdict.ANSWERED
    assert "Phobos" in answer.answer
    assert answer.citations and all(c.chunk_id in {x.chunk.id for x in answer.context} for c in answer.citations)
    assert len(answer.agents) == 6 and all(a.status is CallStatus.OK for a in answer.agents)
    # The tampering retriever's edited copies were outvoted; the liar generator's answer had no support.
    assert any("ret-rogue" in c.disputed_by for c in answer.context)
    assert all("ret-rogue" not in c.supported_by for c in answer.context)
    liar = next(c for c in answer.candidates if c.agent_id == "gen-liar")
    assert liar.support_rate == 0
    # Asked to show the evidence for its claim, the fabricating generator could not.
    assert liar.challenge.startswith("failed")
    assert all(not c.challenge for c in answer.candidates if c.agent_id != "gen-liar")
    assert {type(e) for e in events} >= {AgentChanged, EngineReady, QuestionReceived, TrustUpdated}
    assert {type(e) for e in events} >= {AgentCalled, RetrievalMerged, AnswerDecided}
    # No process outlives the engine.
    assert all(c.process.poll() is not None for c in engine.parts.launcher._children.values())


async def test_killing_an_agent_mid_question_still_answers(tmp_path, db_path, cache_dir):
    fleet_file = write_fleet(tmp_path, extra="""
        [[agents]]
        id = "ret-slow"
        role = "retriever"
        backend = "bm25"
        fault = { kind = "slow", delay_s = 3.0 }
        """)
    engine = Engine(load_fleet(fleet_file), load_settings(), db_path=db_path, cache_dir=cache_dir)
    async with engine:
        pid = engine.parts.launcher.pid("ret-slow")
        task = asyncio.create_task(engine.questions.ask("Who discovered the moons of Mars?"))
        await asyncio.sleep(0.8)
        os.kill(pid, signal.SIGKILL)
        answer = await task
        await asyncio.sleep(0.3)
        state_after = engine.parts.registry.get("ret-slow").state
    outcome = next(a for a in answer.agents if a.agent_id == "ret-slow")
    assert outcome.status is CallStatus.DOWN
    assert answer.verdict is Verdict.ANSWERED and "Asaph Hall" in answer.answer
    assert sum(a.status is CallStatus.OK for a in answer.agents) == 6
    assert state_after is AgentState.DOWN


async def test_crashing_agent_is_marked_down_and_never_asked_again(tmp_path, db_path, cache_dir):
    fleet_file = write_fleet(tmp_path, extra="""
        [[agents]]
        id = "ret-crash"
        role = "retriever"
        backend = "bm25"
        fault = { kind = "crash", after_requests = 0 }
        """)
    engine = Engine(load_fleet(fleet_file), load_settings(), db_path=db_path, cache_dir=cache_dir)
    async with engine:
        first = await engine.questions.ask("What is the largest moon of Saturn?")
        await asyncio.sleep(0.3)
        second = await engine.questions.ask("What is the largest moon of Saturn?")
    assert next(a for a in first.agents if a.agent_id == "ret-crash").status is CallStatus.DOWN
    assert "ret-crash" not in {a.agent_id for a in second.agents}
    assert "Titan" in first.answer and "Titan" in second.answer


async def test_low_tier_uses_two_retrievers_and_one_generator(small_fleet_file, db_path, cache_dir):
    async with Engine(load_fleet(small_fleet_file), load_settings(), db_path=db_path, cache_dir=cache_dir) as engine:
        answer = await engine.questions.ask("Which planet is closest to the Sun?", RiskTier.LOW)
    roles = [a.role.value for a in answer.agents]
    assert roles.count("retriever") == 2 and roles.count("generator") == 1
    assert "Mercury" in answer.answer


async def test_verifier_agents_vote_and_a_lying_one_is_outvoted(tmp_path, db_path, cache_dir):
    fleet_file = write_fleet(tmp_path, extra="""
        [[agents]]
        id = "ver-honest"
        role = "verifier"
        backend = "evidence-verifier"

        [[agents]]
        id = "ver-liar"
        role = "verifier"
        backend = "evidence-verifier"
        fault = { kind = "tamper" }
        """)
    async with Engine(load_fleet(fleet_file), load_settings(), db_path=db_path, cache_dir=cache_dir) as engine:
        answer = await engine.questions.ask("What are the moons of Mars?")
    assert answer.verdict is Verdict.ANSWERED and "Phobos" in answer.answer
    chosen = next(c for c in answer.candidates if c.generation.answer == answer.answer)
    # Three voters (the engine's own check, the honest and the lying agent): the liar's flipped vote loses.
    assert all(k.supported for k in chosen.checks)
    assert any("ver-honest" in k.reason for k in chosen.checks)
    liar = next(c for c in answer.candidates if c.agent_id == "gen-liar")
    assert liar.support_rate == 0


async def test_the_decision_audit_event_records_suspects_kept_out_passages_and_challenges(small_fleet_file, db_path,
                                                                                          cache_dir):
    import json
    async with Engine(load_fleet(small_fleet_file), load_settings(), db_path=db_path, cache_dir=cache_dir) as engine:
        answer = await engine.questions.ask("What are the moons of Mars?")
        row = engine.parts.store.execute(
            "SELECT payload FROM audit WHERE trace_id = ? AND type = 'question.decided'", [answer.trace_id]).fetchone()
    payload = json.loads(row[0])
    # No tier was chosen: the shipped rules found none that matched, so the default tier applied and says so.
    assert answer.tier.value == payload["tier"] == "medium"
    assert payload["tier_reason"] == answer.tier_reason and "default" in answer.tier_reason
    assert payload["suspects"] == ["ret-rogue"] and payload["kept_out"]
    assert payload["challenges"]["gen-liar"].startswith("failed")


async def test_a_comparison_question_runs_stage_by_stage_and_the_cascade_monitor_scores_every_boundary(
        small_fleet_file, db_path, cache_dir):
    import json
    from engine.events import CascadeResolved, CascadeScored
    from engine.stages.model import StageKind
    events = []
    async with Engine(load_fleet(small_fleet_file), load_settings(), db_path=db_path, cache_dir=cache_dir) as engine:
        engine.subscribe(events.append)
        answer = await engine.questions.ask("Was Titan or Phobos discovered first?", RiskTier.MEDIUM)
        row = engine.parts.store.execute(
            "SELECT payload FROM audit WHERE trace_id = ? AND type = 'question.decided'", [answer.trace_id]).fetchone()
    kinds = [s.kind for s in answer.stages]
    assert kinds[0] is StageKind.FORMULATE and kinds[-1] is StageKind.SYNTHESIZE
    # One retrieval and one conclusion per compared entity, then the comparison tool.
    assert [s.kind for s in answer.stages if s.attempt == 0][1:6] == [
        StageKind.RETRIEVE, StageKind.REASON, StageKind.RETRIEVE, StageKind.REASON, StageKind.TOOL]
    queries = [s.inputs[-1] for s in answer.stages if s.kind is StageKind.RETRIEVE]
    assert any("Titan" in q and "Phobos" not in q for q in queries)
    assert any("Phobos" in q and "Titan" not in q for q in queries)
    # Every boundary was scored live, and the outcome arrived once, on the answer too.
    scored = [e.score for e in events if isinstance(e, CascadeScored) and e.trace_id == answer.trace_id]
    assert len(scored) == len(answer.stages)
    assert [s.index for s in scored] == [s.index for s in answer.stages]
    resolved = [e for e in events if isinstance(e, CascadeResolved) and e.trace_id == answer.trace_id]
    assert len(resolved) == 1 and resolved[0].outcome == answer.cascade
    assert all(0.0 <= s.p <= 1.0 for s in answer.cascade.scores)
    assert json.loads(row[0])["stages"] == [k.value for k in kinds]
