"""One question end to end: gateway → fan-out retrieve → merge → fan-out generate → adjudicate.

The stages (engine/stages, engine/question) run under the StageRunner with the gateway and the cascade
monitor watching every boundary; the Answer is built from the run alone. Emits events as it goes (for the
console). Every agent failure is an outcome in the answer, never an exception out of here.
"""
from __future__ import annotations

import asyncio
import dataclasses
import time
from typing import Callable

from .config import EngineSettings
from .agents.client import AgentClient
from .errors import InputError
from .cascade.monitor import CascadeMonitor
from .cascade.monitors import Monitors
from .events import AnswerDecided, CascadeResolved, CascadeScored, Emit, QuestionReceived, StageProgressed
from .gateway.decision import Action
from .gateway.envelope import new_trace_id
from .gateway.judged import JudgedPassages
from .gateway.observer import GatewayObserver
from .gateway.sessions import GatewaySessions
from .participation import unavailable_counts
from .question.asked import Asked, Deadline
from .question.assemble import answer_from
from .question.calls import AgentCalls, OnLate
from .question.corpus import CorpusHashes
from .question.instructions import read_instructions
from .question.retrieve import SecureFetch
from .question.synthesize import SynthesizeStage
from .registry import AgentRegistry
from .stages import steps
from .stages.decompose import decompose
from .stages.model import Trajectory
from .stages.runner import StageRunner
from .retrieval.secure import SecureRetrieval
from .types import RiskTier
from .answer import Answer


def screen_question(question: str, max_chars: int) -> str:
    text = " ".join(question.split())
    if not text:
        raise InputError("the question is empty")
    if len(text) > max_chars:
        raise InputError(f"the question is {len(text)} characters long; the limit is {max_chars}")
    return text


class QuestionBlocked(InputError):
    """The gateway stopped the operator's question itself (an override of the engine's rules)."""

    def __init__(self, question: str, trace_id: str, report) -> None:
        flag = report.blocked[0]
        super().__init__(f"the gateway blocked the question (score {flag.score:.2f}): "
                         + "; ".join(flag.evidence[:2]))
        self.question, self.trace_id, self.report = question, trace_id, report


class Pipeline:
    """sessions: the gateway's sessions (engine/gateway/sessions.py; none: nothing is screened, all is traced).
    tools: the tool broker (engine.gateway.tools); memory: the agents' memory (engine.memory); on_late: told of
    each call that ended past its question's deadline (the engine audits it); corpus: the indexed corpus's
    passage hashes, read by each question (the engine replaces them after indexing)."""

    def __init__(self, settings: EngineSettings, client: AgentClient, registry: AgentRegistry, emit: Emit,
                 secure: SecureRetrieval, clock: Callable[[], float] = time.time, *,
                 sessions: GatewaySessions | None = None, tools=None, memory=None, on_late: OnLate | None = None,
                 corpus: CorpusHashes | None = None) -> None:
        self.settings = settings
        self.registry = registry
        self.emit = emit
        self.clock = clock
        self.sessions = sessions or GatewaySessions(None, clock)
        self.calls = AgentCalls(client, registry, emit, clock, on_late)
        self.fetch = SecureFetch(settings, self.calls, secure, corpus or CorpusHashes(), emit, clock)
        self.synthesize = SynthesizeStage(settings, self.calls, secure.embedder, emit, clock, memory=memory,
                                          tools=tools)
        self.monitors = Monitors(secure.embedder, settings.cascade, coverage=settings.generation.claim_coverage,
                                 alignment=settings.generation.alignment)

    def _progress_reporter(self, trace_id: str):
        def report(index: int, total: int, attempt: int, result) -> None:
            self.emit(StageProgressed(trace_id, index, total, attempt, result.kind if result else None,
                                      result.elapsed_ms if result else 0.0,
                                      result.confidence if result else None, self.clock()))
        return report

    async def aclose(self) -> None:
        """Cancels the calls still running past their questions' deadlines (the engine is closing)."""
        await self.calls.aclose()

    async def ask(self, question: str, tier: RiskTier | None = None, trace_id: str | None = None) -> Answer:
        """tier: the operator's choice; None lets the risk rules of the settings decide."""
        question = screen_question(question, self.settings.limits.max_question_chars)
        trace_id = trace_id or new_trace_id()
        asked_at = self.clock()
        session = self.sessions.new(trace_id)
        asked = await asyncio.to_thread(session.question, question)
        if asked.action is Action.BLOCK:
            raise QuestionBlocked(question, trace_id, session.report())
        with self.sessions.in_flight(session):
            return await self._ask(question, tier, trace_id, asked_at, session)

    async def _ask(self, question: str, tier: RiskTier | None, trace_id: str, asked_at: float,
                   session) -> Answer:
        tiering = self.settings.risk.classify(question, override=tier)
        policy = self.settings.tier(tiering.tier)
        unavailable = unavailable_counts(self.registry.all())    # not up to be asked, as the question starts
        self.emit(QuestionReceived(trace_id, question, tiering.tier, tiering.reason, self.clock()))

        monitor = self._monitor(trace_id)
        asked = Asked(question, trace_id, tiering.tier, policy, Deadline.start(policy.deadline_s), session)
        decomposition = decompose(question)
        plan = [steps.formulate(), *steps.hop_steps(decomposition, self.fetch.for_question(asked), reason_single=False),
                self.synthesize.for_question(asked)]
        # The gateway looks at every stage boundary first: an instruction in a stage's output stops there.
        observers = [GatewayObserver(session)] if self.sessions.enabled else []
        if self.sessions.enabled and self.settings.gateway.judge_confirms:
            observers.append(JudgedPassages(session, self.settings.gateway, self._instruction_reader(asked)))
        runner = StageRunner(observers + ([monitor] if monitor else []), max_reruns=self.settings.cascade.max_reruns,
                             offload=True, on_progress=self._progress_reporter(trace_id))
        run = await runner.run(Trajectory(question, trace_id, decomposition), plan)
        cascade = monitor.outcome(run) if monitor else None
        if cascade is not None and cascade.fired and self.settings.cascade.reviews(tiering.tier.value):
            cascade = dataclasses.replace(cascade, review=True)
        if cascade is not None:
            self.emit(CascadeResolved(cascade, trace_id, question, self.clock()))
        answer = answer_from(run, asked, tier_reason=tiering.reason, asked_at=asked_at, unavailable=unavailable,
                             cascade=cascade)
        self.emit(AnswerDecided(answer, trace_id, self.clock()))
        return answer

    def _instruction_reader(self, asked: Asked):
        """The judges' reading of flagged passages, asked from the observers' worker thread on this loop."""
        loop = asyncio.get_running_loop()

        async def on_loop(texts):      # the registry and the agents' client belong to the loop
            return await read_instructions(self.synthesize.judges_for(asked), texts, asked.trace_id)

        return lambda texts: asyncio.run_coroutine_threadsafe(on_loop(texts), loop).result()

    def _monitor(self, trace_id: str) -> CascadeMonitor | None:
        if not self.settings.cascade.enabled:
            return None
        loop = asyncio.get_running_loop()
        # The monitor runs on a worker thread (see StageRunner offload); listeners hear it on the loop.
        report = lambda score: loop.call_soon_threadsafe(   # noqa: E731
            self.emit, CascadeScored(score, trace_id, self.clock()))
        return CascadeMonitor(self.monitors, self.settings.cascade, report=report)
