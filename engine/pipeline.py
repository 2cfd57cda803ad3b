"""One question end to end: gateway → fan-out retrieve → merge → fan-out generate → adjudicate.

Emits events as it goes (for the console) and returns a frozen Answer. Every agent failure is an
outcome in the answer, never an exception out of here.
"""
from __future__ import annotations

import asyncio
import dataclasses
import functools
import time
from dataclasses import dataclass
from typing import Callable, Mapping

from .agents.client import AgentClient, CallResult, outcome, with_mode
from .config import EngineSettings
from .agents.remote import RemoteVerifier
from .errors import AgentError, InputError
from .cascade.monitor import CascadeMonitor
from .cascade.monitors import Monitors
from .events import AgentChanged, CascadeResolved, CascadeScored, QuestionReceived, StageProgressed
from .gateway.decision import Action, Screening
from .gateway.envelope import Envelope, lowest, new_trace_id
from .gateway.gateway import Gateway
from .gateway.observer import GatewayObserver
from .gateway.permissions import MEMORY_WRITE, MemoryOp
from .gateway.report import TraceKind
from .gateway.session import GatewaySession
from .generation.adjudicate import Decision, adjudicate
from .generation.challenge import NoReply, challenge
from .participation import participation as participation_of, shortfall, unavailable_counts
from .registry import AgentRegistry, AgentView
from .stages import steps
from .stages.decompose import decompose
from .stages.model import StageKind, StageResult, Trajectory
from .stages.runner import Exclusions, StageRunner
from .retrieval.secure import OPTIMISTIC, RetrievalResult, SecureRetrieval
from .types import (AgentKind, AgentOutcome, AgentSpec, Answer, CallStatus, Chunk, Citation, ContextChunk, Event,
                    RiskTier, Role, TrustLevel, Verdict)
from .verify.verifier import EvidenceVerifier, Verifier, VotingVerifier

Emit = Callable[[object], None]   # engine.events types and generic Events


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
    def __init__(self, settings: EngineSettings, client: AgentClient, registry: AgentRegistry, emit: Emit,
                 secure: SecureRetrieval, clock: Callable[[], float] = time.time,
                 gateway: Gateway | None = None) -> None:
        self.settings = settings
        self.gateway = gateway
        self.tools = None        # the tool broker (engine.gateway.tools), set by the engine
        self.memory = None       # agents' memory (engine.memory), set by the engine
        # The indexed corpus's passages (id → content hash), set by the engine once it has indexed them: a passage
        # the gateway blocks that is the corpus's own text is the document's doing, not its carrier's.
        self.corpus_hashes: Mapping[str, str] = {}
        self._sessions: dict[str, GatewaySession] = {}    # questions in flight, by trace id
        self._late: set[asyncio.Task] = set()             # calls going on past their question's deadline
        self.on_late: Callable[[AgentOutcome, str], None] | None = None   # the engine audits each (set by it)
        self.client = client
        self.registry = registry
        self.emit = emit
        self.secure = secure
        self.local_verifier = EvidenceVerifier(secure.embedder, coverage=settings.generation.claim_coverage,
                                               alignment=settings.generation.alignment)
        self.clock = clock
        self.monitors = Monitors(secure.embedder, settings.cascade, coverage=settings.generation.claim_coverage,
                                 alignment=settings.generation.alignment)

    def _progress_reporter(self, trace_id: str):
        def report(index: int, total: int, attempt: int, result) -> None:
            self.emit(StageProgressed(trace_id, index, total, attempt, result.kind if result else None,
                                      result.elapsed_ms if result else 0.0,
                                      result.confidence if result else None, self.clock()))
        return report

    def _event(self, kind: str, trace_id: str, **payload) -> None:
        self.emit(Event(kind, trace_id, payload, self.clock()))

    def _verifier(self, tier: RiskTier) -> Verifier:
        """The engine's own evidence check, joined by every verifier agent that is up and trusted: they vote."""
        remote = [RemoteVerifier(self.client, v.spec, v.url) for v in self.registry.eligible(Role.VERIFIER, tier)]
        return VotingVerifier([self.local_verifier, *remote]) if remote else self.local_verifier

    async def _challenge(self, decision: Decision, context: tuple, trace_id: str) -> Decision:
        """Asks each generator with a doubtful claim to show the evidence for it (generation/challenge.py)."""
        async def ask(candidate, check):
            view = self.registry.get(candidate.agent_id)
            if not view.url or view.spec.kind is not AgentKind.QUORUM_HTTP:
                return None
            try:
                return await asyncio.wait_for(self.client.challenge(
                    view.spec, view.url, check.claim.text, context, trace_id), view.spec.timeout_s)
            except (AgentError, asyncio.TimeoutError) as exc:
                raise NoReply(getattr(exc, "reason", "timeout")) from None
        decision, results = await challenge(decision, context, ask, self.local_verifier, trace_id)
        for result in results:
            self._event("generation.challenge", trace_id, agent=result.agent_id, outcome=result.outcome.value,
                        detail=result.text)
        return decision

    def _pick(self, role: Role, limit: int, tier: RiskTier, trace_id: str) -> list[AgentView]:
        views = self.registry.eligible(role, tier)
        kept_off = self.registry.ineligible(role, tier)
        if kept_off:
            self._event("agents.kept_off", trace_id, role=role.value, agents=kept_off)
        if not limit:
            return views
        chosen = views[:limit]
        # An agent on probation ranks last by score and low-risk paths take few agents: it gets a seat
        # beside them (its vote capped by the book), or it could never earn its way back.
        probation = [v for v in views[limit:] if self.registry.on_probation(v.spec.id)]
        return chosen + probation[:1]

    def _reputations(self) -> dict[str, float] | None:
        return dict(self.registry.trust.snapshot()) if self.registry.trust is not None else None

    async def _fan_out(self, trace_id: str, agents: list[AgentView], call,
                       deadline: "Deadline | None" = None) -> list[CallResult]:
        """Every agent's call at once, each under its own timeout_s. With a deadline (the question's, from its
        tier) the fan-out returns when it passes: a call still under way is LATE in the answer and goes on in
        the background, where its reply or failure, when it comes, is that agent's recorded outcome."""
        tasks, asked_at = [], asyncio.get_running_loop().time()
        for v in agents:
            self.emit(AgentChanged(self.registry.begin(v.spec.id), trace_id, self.clock()))
            tasks.append(asyncio.ensure_future(outcome(v.spec, call(v))))
        try:
            if tasks:
                await asyncio.wait(tasks, timeout=deadline.remaining() if deadline else None)
        except asyncio.CancelledError:       # the question was cancelled: its calls go with it
            for task in tasks:
                task.cancel()
            raise
        results = []
        for view, task in zip(agents, tasks):
            if task.done():
                result = self._moded(view, task.result())     # outcome() never raises
                self._record(result.outcome, trace_id)
            else:
                result = CallResult(deadline.late_outcome(view.spec, asked_at), None)
                self._event("agent.call", trace_id, outcome=result.outcome)
                self._late.add(task)
                task.add_done_callback(functools.partial(self._late_reply, view, trace_id, deadline))
            results.append(result)
        return results

    def _moded(self, view: AgentView, result: CallResult) -> CallResult:
        return with_mode(result, self.client.mode_of(view.spec))

    def _record(self, outcome_: AgentOutcome, trace_id: str) -> None:
        self.emit(AgentChanged(self.registry.record(outcome_), trace_id, self.clock()))
        self._event("agent.call", trace_id, outcome=outcome_)

    def _late_reply(self, view: AgentView, trace_id: str, deadline: "Deadline", task: asyncio.Task) -> None:
        """A call that outlived its question's deadline ended: recorded as late if it replied, or as the failure
        it was; the engine audits it (on_late). A call cancelled at shutdown records nothing."""
        self._late.discard(task)
        if task.cancelled():
            return
        result = self._moded(view, task.result())
        late = result.outcome
        if late.status is CallStatus.OK:
            late = dataclasses.replace(late, status=CallStatus.LATE, n_items=0,
                                       error=f"replied after {late.latency_ms / 1000:.1f} s, past the question's "
                                             f"{deadline.seconds:g} s deadline: decided without it")
        self._record(late, trace_id)
        if self.on_late is not None:
            self.on_late(late, trace_id)

    async def aclose(self) -> None:
        """Cancels the calls still running past their questions' deadlines (the engine is closing)."""
        for task in list(self._late):
            task.cancel()
        if self._late:
            await asyncio.gather(*self._late, return_exceptions=True)
        self._late.clear()

    async def ask(self, question: str, tier: RiskTier | None = None, trace_id: str | None = None) -> Answer:
        """tier: the operator's choice; None lets the risk rules of the settings decide."""
        question = screen_question(question, self.settings.limits.max_question_chars)
        trace_id = trace_id or new_trace_id()
        asked_at = self.clock()
        session = GatewaySession(self.gateway, trace_id, self.clock)
        asked = await asyncio.to_thread(session.question, question)
        if asked.action is Action.BLOCK:
            raise QuestionBlocked(question, trace_id, session.report())
        self._sessions[trace_id] = session
        try:
            return await self._ask(question, tier, trace_id, asked_at, session)
        finally:
            self._sessions.pop(trace_id, None)

    def screen(self, envelope: Envelope) -> Screening:
        """The gateway for the memory store and the tool broker: a message that belongs to a question in
        flight is screened and logged in that question's trace (and its flags reach the Gateway panel)."""
        session = self._sessions.get(envelope.parent_trace_id) or GatewaySession(self.gateway, envelope.parent_trace_id)
        return session.screen(envelope)

    async def _ask(self, question: str, tier: RiskTier | None, trace_id: str, asked_at: float,
                   session: GatewaySession) -> Answer:
        tiering = self.settings.risk.classify(question, override=tier)
        tier = tiering.tier
        policy = self.settings.tier(tier)
        timings: dict[str, float] = {}
        unavailable = unavailable_counts(self.registry.all())    # not up to be asked, as the question starts
        self.emit(QuestionReceived(trace_id, question, tier, tiering.reason, self.clock()))

        monitor = self._monitor(trace_id)
        hops = _Hops(Deadline.start(policy.deadline_s))
        decomposition = decompose(question)
        fetch = self._fetcher(question, tier, policy, trace_id, timings, hops, session)
        plan = [steps.formulate(), *steps.hop_steps(decomposition, fetch, reason_single=False),
                self._synthesize_step(question, tier, policy, trace_id, timings, hops, session)]
        # The gateway looks at every stage boundary first: an instruction in a stage's output stops there.
        observers = [GatewayObserver(session)] if self.gateway is not None else []
        runner = StageRunner(observers + ([monitor] if monitor else []), max_reruns=self.settings.cascade.max_reruns,
                             offload=True, on_progress=self._progress_reporter(trace_id))
        run = await runner.run(Trajectory(question, trace_id, decomposition), plan)
        cascade = monitor.outcome(run) if monitor else None
        if cascade is not None and cascade.fired and self.settings.cascade.reviews(tier.value):
            cascade = dataclasses.replace(cascade, review=True)
        if cascade is not None:
            timings["cascade"] = round(sum(s.elapsed_ms for s in cascade.scores), 1)   # the monitors' own time
            self.emit(CascadeResolved(cascade, trace_id, question, self.clock()))
        report = hops.merged()
        decision = hops.decision if run.halted is None else None
        outcomes = hops.outcomes()

        if run.halted is not None:
            verdict, text, reason, citations = Verdict.ABSTAINED, "", f"held for review: {run.halted.reason}", ()
            candidates = hops.decision.candidates if hops.decision is not None else ()
        elif decision is None:
            why = ("no retriever returned usable evidence" if outcomes else
                   "no agent answered: no retriever is up and eligible (down, stopped or kept off this tier)")
            verdict, text, reason, candidates, citations = (Verdict.NO_ANSWER, "", why, (), ())
        else:
            verdict, reason, candidates = decision.verdict, decision.reason, decision.candidates
            text = decision.chosen.generation.answer if decision.chosen else ""
            cited = ({cid for claim in decision.chosen.generation.claims for cid in claim.citations}
                     if decision.chosen else set())
            citations = tuple(Citation(c.chunk.id, c.chunk.source, c.chunk.title, c.chunk.text,
                                       kind=str(c.chunk.metadata.get("kind") or ""),
                                       section=str(c.chunk.metadata.get("section") or ""))
                              for c in report.context if c.chunk.id in cited)
        session.note(TraceKind.DECISION, "engine", "operator", f"{verdict.value}: {text or reason}",
                     data={"verdict": verdict.value})
        gateway = session.report()
        if gateway.blocked:
            reason += f"; the gateway blocked {len(gateway.blocked)} message(s) carrying instructions"
        if gateway.escalated:
            reason += f"; {len(gateway.escalated)} message(s) held for a person by the gateway"
        timings["gateway"] = gateway.scan_ms
        participation = participation_of([hops.calls[i] for i in sorted(hops.calls)],
                                         hops.generated if hops.reached_generators else None,
                                         retrieval_mode=policy.retrieval_mode, policy_generators=policy.generators,
                                         unavailable=unavailable)
        if not participation.quorum_held:
            reason += f"; {shortfall(participation)}"
        if report.fallback:
            reason += "; retrievers did not agree on any passage, so single-agent passages were used"
        if report.positions:
            reason += "; kept out: " + "; ".join(f"{p.reason} pushing '{' '.join(p.claim[:5])}'"
                                                  for p in report.positions)
        answer = Answer(trace_id=trace_id, question=question, tier=tier, verdict=verdict, answer=text, reason=reason,
                        citations=citations, agents=tuple(outcomes), context=report.context,
                        candidates=candidates, timings_ms=timings, asked_at=asked_at, excluded=report.excluded,
                        suspects=report.suspects, tier_reason=tiering.reason, stages=run.trajectory.stages,
                        cascade=cascade, gateway=gateway, participation=participation)
        self._event("answer.decided", trace_id, answer=answer)
        return answer

    # --- stages ----------------------------------------------------------------------------
    def _monitor(self, trace_id: str) -> CascadeMonitor | None:
        if not self.settings.cascade.enabled:
            return None
        loop = asyncio.get_running_loop()
        # The monitor runs on a worker thread (see StageRunner offload); listeners hear it on the loop.
        report = lambda score: loop.call_soon_threadsafe(   # noqa: E731
            self.emit, CascadeScored(score, trace_id, self.clock()))
        return CascadeMonitor(self.monitors, self.settings.cascade, report=report)

    def _fetcher(self, question, tier, policy, trace_id, timings, hops: "_Hops", session: GatewaySession) -> steps.Fetch:
        """Retrieval for one (sub-)question: fan-out to the retrievers, then secure retrieval."""
        async def fetch(query: str, index: int, exclusions: Exclusions) -> steps.Fetched:
            started = time.perf_counter()
            retrievers = [v for v in self._pick(Role.RETRIEVER, policy.retrievers, tier, trace_id)
                          if v.spec.id not in exclusions.agents]
            k = self.settings.retrieval.k_per_agent
            # The question's vector is computed while the retrievers work (secure retrieval takes it).
            ahead = (asyncio.create_task(asyncio.to_thread(self.secure.embed_question, query))
                     if policy.retrieval_mode != OPTIMISTIC and retrievers else None)
            retrieved = await self._fan_out(trace_id, retrievers, lambda v: self.client.retrieve(
                v.spec, v.url, query, k, trace_id), hops.deadline)
            timings["retrieve"] = timings.get("retrieve", 0.0) + _ms(started)
            if ahead is not None:
                await ahead
            started = time.perf_counter()
            # Every passage passes the gateway as data from outside, whatever its retriever claims.
            trust = {v.spec.id: lowest(v.spec.trust, TrustLevel.EXTERNAL) for v in retrievers}
            screened = await asyncio.to_thread(lambda: {
                r.outcome.agent_id: session.passages(r.outcome.agent_id, r.value, trust[r.outcome.agent_id],
                                                     self.corpus_hashes)
                for r in retrieved if r.value is not None})
            timings["gateway_passages"] = timings.get("gateway_passages", 0.0) + _ms(started)
            started = time.perf_counter()
            replies = {agent: [c for c in chunks if not exclusions.excludes(c.id, c.text)]
                       for agent, chunks in screened.items()}
            kinds = {v.spec.id: v.spec.backend or v.spec.kind.value for v in retrievers}
            # CPU work (embedding, clustering) runs off the loop so the console stays responsive.
            report = await asyncio.to_thread(self.secure.run, query, replies, kinds=kinds,
                                             mode=policy.retrieval_mode, reputations=self._reputations())
            timings["secure_retrieval"] = timings.get("secure_retrieval", 0.0) + _ms(started)
            self._event("retrieval.merged", trace_id, query=query, context=[c.chunk.id for c in report.context],
                        excluded=[(c.chunk.id, c.explanation.flags if c.explanation else ()) for c in report.excluded],
                        suspects=[(x.agent_id, x.reason) for x in report.suspects], fallback=report.fallback)
            hops.retrieved(index, report, [r.outcome for r in retrieved])
            context = tuple(c.chunk for c in report.context)
            return steps.Fetched(
                forwarded=context,
                support=tuple(c.explanation.support_share if c.explanation else 0.0 for c in report.context),
                # Single-agent passages used as a fallback are nobody's consensus.
                corroborated=() if report.fallback else context,
                candidates=tuple({c.text: c for chunks in replies.values() for c in chunks}.values()),
                agents=tuple(replies), note="fallback: no passage had a quorum" if report.fallback else "")
        return fetch

    def _synthesize_step(self, question, tier, policy, trace_id, timings, hops: "_Hops", session: GatewaySession):
        async def step(trajectory: Trajectory, exclusions: Exclusions) -> StageResult:
            index = len(trajectory.stages)
            hops.decision = None
            hops.finding = _finding(trajectory)
            context_chunks = ((hops.finding,) if hops.finding else ()) + hops.context_for(trajectory)
            upstream = steps.upstream(trajectory)
            if not context_chunks:
                return StageResult(StageKind.SYNTHESIZE, index, 0, (question,), "", confidence=0.0,
                                   note="no usable evidence")
            started = time.perf_counter()
            generators = [v for v in self._pick(Role.GENERATOR, policy.generators, tier, trace_id)
                          if v.spec.id not in exclusions.agents]
            context = tuple(c.chunk for c in context_chunks)
            hops.reached_generators = True
            memories = {v.spec.id: await self._memory_for(v.spec.id, trace_id, session) for v in generators}
            for v in generators:
                session.note(TraceKind.MESSAGE, "engine", v.spec.id,
                             f"generate: the question (USER) and {len(context)} passages wrapped as data "
                             f"({', '.join(c.id for c in context)})"
                             + (f", {len(memories[v.spec.id])} of its own memory entries" if memories[v.spec.id] else ""),
                             trust=TrustLevel.EXTERNAL.value, data={"passages": [c.id for c in context]})
            generated = await self._fan_out(trace_id, generators, lambda v: self.client.generate(
                v.spec, v.url, question, context, trace_id, memory=memories[v.spec.id]), hops.deadline)
            timings["generate"] = _ms(started)
            hops.generated = [r.outcome for r in generated]
            replies = await asyncio.to_thread(self._screen_generations, session, generators, generated)
            await self._run_actions(session, replies, trace_id)
            started = time.perf_counter()
            decision = await adjudicate(question, replies,
                                        context_chunks, self.settings.generation, self._verifier(tier),
                                        embedder=self.secure.embedder, reputations=self._reputations(),
                                        trace_id=trace_id,
                                        free_text=frozenset(v.spec.id for v in generators if v.spec.free_text))
            decision = await self._challenge(decision, context, trace_id)
            timings["adjudicate"] = _ms(started)
            hops.decision = decision
            chosen = decision.chosen
            if chosen is None:
                return StageResult(StageKind.SYNTHESIZE, index, 0, (question,), "", evidence=context,
                                   confidence=0.0, note=decision.verdict.value)
            # The answer is no surer than the evidence it came through and the support it earned.
            confidence = round(min(upstream, chosen.generation.confidence or 1.0, chosen.support_rate), 3)
            return StageResult(StageKind.SYNTHESIZE, index, 0, (question,), chosen.generation.answer,
                               claims=chosen.generation.claims, evidence=context, confidence=confidence,
                               agents=(chosen.agent_id,), note=decision.verdict.value)
        return step

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
                self._event("tool.call", trace_id, agent=agent, tool=action.tool, status=result.status.value,
                            why=result.why)


@dataclass(frozen=True)
class Deadline:
    """A question's deadline on the loop's clock: what is in by then decides it."""
    seconds: float
    at: float

    @classmethod
    def start(cls, seconds: float) -> "Deadline | None":
        return cls(seconds, asyncio.get_running_loop().time() + seconds) if seconds > 0 else None

    def remaining(self) -> float:
        return max(0.0, self.at - asyncio.get_running_loop().time())

    def late_outcome(self, spec: AgentSpec, asked_at: float) -> AgentOutcome:
        """The call asked at `asked_at` (loop clock) as the answer lists it: late, with the time it was given."""
        waited = asyncio.get_running_loop().time() - asked_at
        return AgentOutcome(spec.id, spec.role, CallStatus.LATE, round(waited * 1000, 1),
                            f"no reply by the question's {self.seconds:g} s deadline: decided without it")


FINDING_ID = "engine/tool"


def _finding(trajectory: Trajectory) -> ContextChunk | None:
    """The tool stage's computed sentence as a passage of its own, marked as the engine's: the generators
    read it beside the hops' passages, and a citation of it says where it came from."""
    tool = trajectory.last(StageKind.TOOL)
    if tool is None or not tool.claims:
        return None
    chunk = Chunk(FINDING_ID, tool.claims[0].text, source="Quorum engine (computed from the passages above)",
                  metadata={"title": f"{tool.note.capitalize()} of the hops' findings", "computed": True})
    return ContextChunk(chunk, 1.0, supported_by=())


class _Hops:
    """What the stages of one question produced beyond their stage results: secure retrieval's
    report per retrieve stage, the agent calls, the adjudication."""

    def __init__(self, deadline: "Deadline | None" = None) -> None:
        self.deadline = deadline                     # the question's, from its tier (None: agents' own timeouts)
        self.reports: dict[int, RetrievalResult] = {}
        self.calls: dict[int, list] = {}
        self.generated: list = []
        self.reached_generators = False              # the synthesize stage had evidence to ask generators about
        self.decision: Decision | None = None
        self.finding: ContextChunk | None = None     # the tool stage's computed result, as context

    def retrieved(self, index: int, report: RetrievalResult, calls: list) -> None:
        self.reports[index] = report
        self.calls[index] = calls

    def _current(self, trajectory: Trajectory | None = None) -> list[RetrievalResult]:
        if trajectory is None:
            return [self.reports[i] for i in sorted(self.reports)]
        return [self.reports[s.index] for s in trajectory.stages
                if s.kind is StageKind.RETRIEVE and s.index in self.reports]

    @staticmethod
    def _union(reports: list[RetrievalResult], lead: tuple[ContextChunk, ...] = ()) -> tuple[ContextChunk, ...]:
        """`lead`, then each report's safe context in order, the first copy of each text kept."""
        seen: dict[str, ContextChunk] = {}
        for c in (*lead, *(c for report in reports for c in report.context)):
            seen.setdefault(c.chunk.text, c)
        return tuple(seen.values())

    def context_for(self, trajectory: Trajectory) -> tuple[ContextChunk, ...]:
        """Every hop's safe context (latest run of each retrieve stage), deduplicated, hop order."""
        return self._union(self._current(trajectory))

    def merged(self) -> RetrievalResult:
        reports = self._current()
        if not reports:
            return RetrievalResult((), (), (), (), (), {}, "full", False)
        context = self._union(reports, (self.finding,) if self.finding else ())
        return RetrievalResult(context, tuple(c for r in reports for c in r.excluded),
                               tuple(d for r in reports for d in r.dropped),
                               tuple({s.agent_id: s for r in reports for s in r.suspects}.values()),
                               tuple(p for r in reports for p in r.positions), reports[-1].agreement,
                               reports[-1].mode, any(r.fallback for r in reports))

    def outcomes(self) -> list:
        return [o for i in sorted(self.calls) for o in self.calls[i]] + list(self.generated)


def _ms(started: float) -> float:
    return round((time.perf_counter() - started) * 1000, 1)
