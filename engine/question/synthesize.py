"""The synthesize stage: the generators' fan-out over every hop's safe context (with the tool stage's
finding), each reply through the gateway, their tool calls through the tool broker, then adjudication and
the challenge of doubtful claims. Its stage result carries a SynthesisPayload and its timings."""
from __future__ import annotations

import asyncio
import dataclasses
import time
from typing import Callable

from ..agents.client import CallResult
from ..agents.extractive import ExtractiveGenerator
from ..agents.remote import RemoteJudge, RemoteVerifier
from ..config import EngineSettings
from ..errors import AgentError
from ..events import Emit, GeneratorChallenged, ToolCalled
from ..gateway.envelope import lowest
from ..gateway.permissions import MEMORY_WRITE, MemoryOp
from ..gateway.report import TraceKind
from ..gateway.session import GatewaySession
from ..generation.adjudicate import Decision
from ..generation.challenge import NoReply, challenge
from ..generation.judging import Judges, adjudicate_judged
from ..registry import AgentView
from ..stages import steps
from ..stages.model import StageKind, StageResult, Timings, Trajectory
from ..stages.runner import Exclusions, Step
from ..stats import elapsed_ms
from ..types import AgentKind, Chunk, ClaimLabel, ContextChunk, RiskTier, Role, TrustLevel
from ..verify.verifier import EvidenceVerifier, Verifier, VotingVerifier
from .asked import Asked
from .calls import AgentCalls
from .payloads import RetrievalPayload, SynthesisPayload

FINDING_ID = "engine/tool"


class SynthesizeStage:
    """memory: the agents' memory store (engine.memory); tools: the tool broker (engine.gateway.tools). Without
    them generators read no memory and every tool call is refused."""

    def __init__(self, settings: EngineSettings, calls: AgentCalls, embedder, emit: Emit,
                 clock: Callable[[], float] = time.time, *, memory=None, tools=None) -> None:
        self.settings = settings
        self.calls = calls
        self.embedder = embedder
        self.emit = emit
        self.clock = clock
        self.memory = memory
        self.tools = tools
        self.local_verifier = EvidenceVerifier(embedder, coverage=settings.generation.claim_coverage,
                                               alignment=settings.generation.alignment)
        self._reader = ExtractiveGenerator()     # the engine's own reader: the judges compare each answer with its

    def for_question(self, asked: Asked) -> Step:
        async def step(trajectory: Trajectory, exclusions: Exclusions) -> StageResult:
            return await self.run(asked, trajectory, exclusions)
        return step

    async def run(self, asked: Asked, trajectory: Trajectory, exclusions: Exclusions) -> StageResult:
        question, trace_id, session, policy = asked.question, asked.trace_id, asked.session, asked.policy
        index = len(trajectory.stages)
        found = finding(trajectory)
        context_chunks = ((found,) if found else ()) + hop_context(trajectory)
        upstream = steps.upstream(trajectory)
        if not context_chunks:
            return StageResult(StageKind.SYNTHESIZE, index, 0, (question,), "", confidence=0.0,
                               note="no usable evidence", payload=SynthesisPayload(None, finding=found))
        started = time.perf_counter()
        generators = [v for v in self.calls.pick(Role.GENERATOR, policy.generators, asked.tier, trace_id)
                      if v.spec.id not in exclusions.agents]
        context = tuple(c.chunk for c in context_chunks)
        memories = {v.spec.id: await self._memory_for(v.spec.id, trace_id, session) for v in generators}
        for v in generators:
            session.note(TraceKind.MESSAGE, "engine", v.spec.id,
                         f"generate: the question (USER) and {len(context)} passages wrapped as data "
                         f"({', '.join(c.id for c in context)})"
                         + (f", {len(memories[v.spec.id])} of its own memory entries" if memories[v.spec.id] else ""),
                         trust=TrustLevel.EXTERNAL.value, data={"passages": [c.id for c in context]})
        generated = await self.calls.fan_out(trace_id, generators, lambda v: self.calls.client.generate(
            v.spec, v.url, question, context, trace_id, memory=memories[v.spec.id]), asked.deadline)
        timings = Timings().plus("generate", elapsed_ms(started))
        outcomes = tuple(r.outcome for r in generated)
        replies = await asyncio.to_thread(self._screen_generations, session, generators, generated)
        await self._run_actions(session, replies, trace_id)
        started = time.perf_counter()
        options = dict(embedder=self.embedder, reputations=self.calls.reputations(), trace_id=trace_id,
                       free_text=frozenset(v.spec.id for v in generators if v.spec.free_text))
        judges = dataclasses.replace(self.judges_for(asked), reference=self._reader.generate(question, context).answer)
        decision = await adjudicate_judged(question, replies, context_chunks, self.settings.generation,
                                           self._verifier(asked.tier), asked.tier, self.settings.judge, judges,
                                           **options)
        decision = await self._challenge(decision, context, trace_id)
        timings = timings.plus("adjudicate", elapsed_ms(started))
        payload = SynthesisPayload(decision, outcomes, reached_generators=True, finding=found)
        chosen = decision.chosen
        if chosen is None:
            return StageResult(StageKind.SYNTHESIZE, index, 0, (question,), "", evidence=context,
                               confidence=0.0, note=decision.verdict.value, payload=payload, timings=timings)
        # The answer is no surer than the evidence it came through and the support it earned.
        confidence = round(min(upstream, chosen.generation.confidence or 1.0, chosen.support_rate), 3)
        # Claims a judge read as entailed (its supporting vote stands in the check): no quotes, yet checked.
        readers = {j.name for j in judges.claims}
        entailed = tuple(c.claim.text for c in chosen.checks
                         if c.supported and any(v.verifier in readers and v.label is ClaimLabel.SUPPORTED for v in c.votes))
        return StageResult(StageKind.SYNTHESIZE, index, 0, (question,), chosen.generation.answer,
                           claims=chosen.generation.claims, evidence=context, confidence=confidence, entailed=entailed,
                           agents=(chosen.agent_id,), note=decision.verdict.value, payload=payload, timings=timings)

    def _verifier(self, tier: RiskTier) -> Verifier:
        """The engine's own evidence check, joined by every verifier agent that is up and trusted and is no judge:
        they vote on every claim. Judges read only what the cheap checks cannot place (engine.generation.judging)."""
        client, registry = self.calls.client, self.calls.registry
        remote = [RemoteVerifier(client, v.spec, v.url) for v in registry.eligible(Role.VERIFIER, tier)
                  if not v.spec.judge]
        return VotingVerifier([self.local_verifier, *remote]) if remote else self.local_verifier

    def judges_for(self, asked: Asked) -> Judges:
        """The judges up, trusted on this tier and passing their canaries, each held to what is left of the
        question's deadline; none when too little is left, with the reason for the answer's mark."""
        client, registry = self.calls.client, self.calls.registry
        views = [v for v in registry.eligible(Role.VERIFIER, asked.tier) if v.reads_meaning and client.is_judge(v.spec)]
        if not views:
            configured = [v for v in registry.all() if v.spec.judge]
            why = (f"no judge is up, trusted on this tier and reading its canaries right "
                   f"({', '.join(f'{v.spec.id}: {v.status.value}' for v in configured)})" if configured else
                   "no judge is in the fleet (config/fleet.toml: a verifier with backend llm-judge or kind openai-chat)")
            return Judges(unavailable=why)
        left = asked.deadline.remaining() if asked.deadline is not None else None
        if left is not None and left < self.settings.judge.min_left_s:
            return Judges(unavailable=f"only {left:.1f} s of the question's deadline was left")
        weights = self.calls.reputations() or {}
        return Judges(answers=[RemoteJudge(client, v.spec, v.url, timeout_s=left) for v in views],
                      claims=[RemoteVerifier(client, v.spec, v.url) for v in views],
                      weights={v.spec.id: weights.get(v.spec.id, 1.0) for v in views})

    async def _challenge(self, decision: Decision, context: tuple, trace_id: str) -> Decision:
        """Asks each generator with a doubtful claim to show the evidence for it (generation/challenge.py)."""
        client, registry = self.calls.client, self.calls.registry

        async def ask(candidate, check):
            view = registry.get(candidate.agent_id)
            if not view.url or view.spec.kind is not AgentKind.QUORUM_HTTP:
                return None
            try:
                return await asyncio.wait_for(client.challenge(
                    view.spec, view.url, check.claim.text, context, trace_id), view.spec.timeout_s)
            except (AgentError, asyncio.TimeoutError) as exc:
                raise NoReply(getattr(exc, "reason", "timeout")) from None
        decision, results = await challenge(decision, context, ask, self.local_verifier, trace_id)
        for result in results:
            self.emit(GeneratorChallenged(result.agent_id, result.outcome, result.text, trace_id, self.clock()))
        return decision

    async def _memory_for(self, agent_id: str, trace_id: str, session: GatewaySession) -> tuple:
        """An agent's own memory entries for its request (read through the store, so every read is recorded
        for the spread query); nothing when the matrix gives it no memory."""
        if self.memory is None or self.tools is None:
            return ()
        if not self.tools.matrix.check_memory(agent_id, agent_id, MemoryOp.READ).allowed:
            return ()
        entries = await self.memory.read(agent_id, agent_id, None, trace_id)
        for entry in entries:
            session.note(TraceKind.MEMORY_READ, f"memory:{agent_id}", agent_id,
                         f"read {entry.key} v{entry.version} (entry {entry.id}): {entry.content}",
                         trust=TrustLevel.TOOL.value, data={"entry": entry.id, "key": entry.key})
        return entries

    @staticmethod
    def _screen_generations(session: GatewaySession, generators: list[AgentView], generated: list[CallResult]):
        """Generators' replies that pass the gateway (a reply carrying instructions is dropped whole)."""
        trust = {v.spec.id: lowest(v.spec.trust, TrustLevel.TOOL) for v in generators}
        return {r.outcome.agent_id: r.value for r in generated
                if r.value is not None and session.generation(r.outcome.agent_id, r.value,
                                                              trust[r.outcome.agent_id]).passes}

    async def _run_actions(self, session: GatewaySession, replies: dict, trace_id: str) -> None:
        """Tool calls the generators asked for go through the tool broker (permission matrix, approval)."""
        if self.tools is None:
            for agent, gen in replies.items():
                for action in gen.actions:
                    session.note(TraceKind.TOOL_CALL, agent, action.tool, f"refused {action.tool}: no tool broker",
                                 data={"tool": action.tool, "status": "refused"})
            return
        for agent, gen in replies.items():
            for action in gen.actions:
                result = await self.tools.handle(agent, action, trace_id)
                session.note(TraceKind.MEMORY_WRITE if action.tool == MEMORY_WRITE else TraceKind.TOOL_CALL,
                             agent, action.tool, f"{result.status.value} {action.tool}: {result.why}",
                             data={"tool": action.tool, "status": result.status.value, "why": result.why,
                                   "call": result.call_id})
                self.emit(ToolCalled(agent, action.tool, result.status, result.why, trace_id, self.clock()))


def finding(trajectory: Trajectory) -> ContextChunk | None:
    """The tool stage's computed sentence as a passage of its own, marked as the engine's: the generators
    read it beside the hops' passages, and a citation of it says where it came from."""
    tool = trajectory.last(StageKind.TOOL)
    if tool is None or not tool.claims:
        return None
    chunk = Chunk(FINDING_ID, tool.claims[0].text, source="Quorum engine (computed from the passages above)",
                  metadata={"title": f"{tool.note.capitalize()} of the hops' findings", "computed": True})
    return ContextChunk(chunk, 1.0, supported_by=())


def union(reports, lead: tuple[ContextChunk, ...] = ()) -> tuple[ContextChunk, ...]:
    """`lead`, then each report's safe context in order, the first copy of each text kept."""
    seen: dict[str, ContextChunk] = {}
    for c in (*lead, *(c for report in reports for c in report.context)):
        seen.setdefault(c.chunk.text, c)
    return tuple(seen.values())


def hop_context(trajectory: Trajectory) -> tuple[ContextChunk, ...]:
    """Every hop's safe context (the trajectory's retrieve stages: the latest run of each), deduplicated, hop
    order."""
    return union([s.payload.report for s in trajectory.stages
                  if s.kind is StageKind.RETRIEVE and isinstance(s.payload, RetrievalPayload)])
