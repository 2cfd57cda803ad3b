"""The Answer is built from the run alone (engine/question/assemble.py): the latest run of each stage decides,
while rolled-back runs still count for the calls they made and the time they took. And what follows a
decided question is a row of observers, in the order the engine registers them."""
from __future__ import annotations

from engine import Engine, RiskTier, Verdict, load_fleet, load_settings
from engine.decided import AnnounceDecided, RecordAlerts, RecordAnswer, SnapshotMemory, UpdateReputation
from engine.generation.adjudicate import Decision
from engine.gateway.session import GatewaySession
from engine.question.asked import Asked
from engine.question.assemble import answer_from
from engine.question.payloads import RetrievalPayload, SynthesisPayload
from engine.retrieval.secure import RetrievalResult
from engine.stages.model import (Decomposition, Intervention, InterventionKind, QuestionShape, StageKind,
                                 StageResult, SubQuestion, Timings, Trajectory)
from engine.stages.runner import StageRunner
from engine.types import AgentOutcome, CallStatus, Candidate, Chunk, ContextChunk, Generation, RetrievalMode, Role

from ..conftest import FAST_SETTINGS

QUESTION = "What are the moons of Mars?"
MOONS = ContextChunk(Chunk("p-moons", "Mars has two moons, Phobos and Deimos."), 0.9, supported_by=("ret-1",))


def _report(*context: ContextChunk) -> RetrievalResult:
    return RetrievalResult(context, (), (), (), (), {}, RetrievalMode.FULL, False)


def _call(agent: str, role: Role = Role.RETRIEVER) -> AgentOutcome:
    return AgentOutcome(agent, role, CallStatus.OK, 5.0)


class Plan:
    """formulate, retrieve, synthesize; each retrieve run asks a new retriever, each synthesis a new generator."""

    def __init__(self) -> None:
        self.retrieves = self.syntheses = 0

    async def formulate(self, t, ex):
        return StageResult(StageKind.FORMULATE, 0, 0, (t.question,), t.question, confidence=1.0)

    async def retrieve(self, t, ex):
        self.retrieves += 1
        return StageResult(StageKind.RETRIEVE, 0, 0, (t.question,), "1 passage", evidence=(MOONS.chunk,),
                           confidence=0.9, agents=(f"ret-{self.retrieves}",),
                           payload=RetrievalPayload(_report(MOONS), (_call(f"ret-{self.retrieves}"),)),
                           timings=Timings().plus("retrieve", 10.0).plus("secure_retrieval", 1.0))

    async def synthesize(self, t, ex):
        self.syntheses += 1
        generator = f"gen-{self.syntheses}"
        candidate = Candidate(generator, Generation("Phobos and Deimos.", ()), (), 1.0, (), 1.0)
        decision = Decision(Verdict.ANSWERED, candidate, (candidate,), "supported")
        return StageResult(StageKind.SYNTHESIZE, 0, 0, (t.question,), "Phobos and Deimos.", confidence=0.9,
                           agents=(generator,),
                           payload=SynthesisPayload(decision, (_call(generator, Role.GENERATOR),), True),
                           timings=Timings().plus("generate", 20.0).plus("adjudicate", 2.0))

    def steps(self):
        return [self.formulate, self.retrieve, self.synthesize]


class RerunFromRetrieve:
    """Asks for a re-run from the retrieve stage at every synthesis and every re-run retrieve stage."""

    def __init__(self, *, halt_on_rerun: bool) -> None:
        self.halt_on_rerun = halt_on_rerun

    def on_stage(self, trajectory, result):
        if result.kind is StageKind.SYNTHESIZE and result.attempt == 0:
            return Intervention(InterventionKind.RERUN, "the answer drifted", from_index=1)
        if result.kind is StageKind.RETRIEVE and result.attempt > 0 and self.halt_on_rerun:
            return Intervention(InterventionKind.RERUN, "still drifting", from_index=1)
        return None


async def _run(observer) -> tuple:
    settings = load_settings(FAST_SETTINGS)
    trajectory = Trajectory(QUESTION, "t-1", Decomposition(QuestionShape.SINGLE, (SubQuestion(QUESTION, 0),)))
    run = await StageRunner([observer], max_reruns=1).run(trajectory, Plan().steps())
    asked = Asked(QUESTION, "t-1", RiskTier.MEDIUM, settings.tier(RiskTier.MEDIUM), None, GatewaySession(None, "t-1"))
    return run, answer_from(run, asked, tier_reason="default", asked_at=0.0, unavailable={}, cascade=None)


async def test_a_rerun_answers_from_the_latest_run_of_each_stage_and_counts_the_time_of_every_run():
    run, answer = await _run(RerunFromRetrieve(halt_on_rerun=False))
    assert [s.kind for s in run.trajectory.stages] == [StageKind.FORMULATE, StageKind.RETRIEVE, StageKind.SYNTHESIZE]
    assert len(run.ran) == 5                                      # formulate, retrieve, synthesize, then again
    assert answer.verdict is Verdict.ANSWERED and answer.answer == "Phobos and Deimos."
    assert [a.agent_id for a in answer.agents] == ["ret-2", "gen-2"]
    assert [c.chunk.id for c in answer.context] == ["p-moons"]
    assert answer.timings_ms["retrieve"] == 20.0 and answer.timings_ms["secure_retrieval"] == 2.0
    assert answer.timings_ms["generate"] == 20.0 and "gateway" in answer.timings_ms


async def test_a_halt_in_a_rerun_keeps_what_the_rolled_back_synthesis_asked():
    run, answer = await _run(RerunFromRetrieve(halt_on_rerun=True))
    assert run.halted is not None and run.trajectory.stages[-1].kind is StageKind.RETRIEVE
    assert answer.verdict is Verdict.ABSTAINED and answer.reason.startswith("held for review: ")
    assert [c.agent_id for c in answer.candidates] == ["gen-1"]
    assert [a.agent_id for a in answer.agents] == ["ret-2", "gen-1"]
    assert answer.participation is not None


def test_the_engine_registers_its_decided_observers_in_order(small_fleet_file, db_path, cache_dir):
    engine = Engine(load_fleet(small_fleet_file), load_settings(FAST_SETTINGS), db_path=db_path, cache_dir=cache_dir,
                    launch=False)
    assert [type(o) for o in engine._decided] == [RecordAnswer, UpdateReputation, RecordAlerts, SnapshotMemory,
                                                  AnnounceDecided]
