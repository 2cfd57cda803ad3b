"""The engine as one object: fleet, client, pipeline and store behind start / ask / aclose."""
from __future__ import annotations

import asyncio
import contextlib
import os
import time
from pathlib import Path
from typing import Callable

import httpx
import platformdirs

from .agents.auth import Keyring
from .agents.client import AgentClient
from .agents.launcher import FleetLauncher
from .alerts.book import AlertBook
from .alerts.row import AlertRow
from .alerts.silences import Silence
from .config import EngineSettings, FleetConfig
from .demo import DemoTraffic
from .errors import AgentError, FleetError, InputError
from .ingest.index import IndexProgress, IndexReport, Throttled, index_corpus
from .reputation.answer_evidence import DecidedAnswer
from .gateway.build import build_gateway
from .gateway.permissions import PermissionMatrix
from .gateway.permissions_config import load_permissions
from .gateway.tools import ToolBroker, ToolCallResult
from .memory import MemoryStore, RollbackResult, SnapshotSchedule
from .ids import row_id
from .pipeline import Pipeline, QuestionBlocked
from .decided import AnnounceDecided, RecordAlerts, RecordAnswer, SnapshotMemory, UpdateReputation
from .gateway.sessions import GatewaySessions
from .question.corpus import CorpusHashes
from .question.decided import DecidedObserver, tell as tell_decided
from .registry import AgentRegistry, AgentView, SlowRule
from .retrieval import anomaly
from .retrieval.secure import SecureRetrieval
from .review import DecisionOutcome, ReviewItem, ReviewQueue, check_decision, check_operator
from .verify.embedders import EMBEDDERS, CachedEmbedder
from .store.audit_log import AuditLog
from .schema import MIGRATIONS
from .store.db import Store
from .gateway.traces import DecisionRow, TraceLine, recent_decisions_sync, trace_sync, write_report
from .events import (AgentChanged, AlertChanged, AlertsRaised, EngineReady, GatewayFlagged, QuestionDecided,
                     SilencesChanged, TrustUpdated)
from .reputation.keeper import ReputationKeeper, ReputationUpdate
from .events import CorpusIndexProgress, QuestionAnswered, QuestionFailed
from .gateway.envelope import new_trace_id
from .telemetry import start_telemetry
from .alerts.kinds import AlertKind
from .types import AgentKind, AgentOutcome, AgentState, RiskTier
from .answer import Answer

Listener = Callable[[object], None]    # receives engine.events types and reputation events


EXTERNAL_RECHECK_S = 5.0     # how often a down external agent's /health is tried again while questions come
SKIPPED_AUDITED = 50         # skipped files named in a corpus.indexed audit event (all are counted)


def default_db_path() -> Path:
    return Path(os.environ.get("QUORUM_DB") or Path(platformdirs.user_data_dir("quorum")) / "quorum.db")


def default_cache_dir() -> Path:
    return Path(os.environ.get("QUORUM_CACHE_DIR") or platformdirs.user_cache_dir("quorum"))


class Engine:
    """Constructing does no I/O; `await start()` opens the store and brings the fleet up."""

    def __init__(self, fleet: FleetConfig, settings: EngineSettings, db_path: Path | None = None,
                 cache_dir: Path | None = None, *, launch: bool = True,
                 transport: httpx.AsyncBaseTransport | None = None, clock: Callable[[], float] = time.time,
                 per_run_keys: bool = True) -> None:
        """per_run_keys=False: built-in agents without a configured key run unsigned (see Keyring)."""
        self.fleet = fleet
        self.settings = settings
        self.clock = clock
        self.store = Store(db_path or default_db_path(), MIGRATIONS, clock=clock)
        self.audit_log = AuditLog(self.store)        # the audit trail as operators filter, verify and export it
        self.review = ReviewQueue(self.store)        # the approval queue, on the same SQLite file
        self.cache_dir = Path(cache_dir or default_cache_dir())
        # The reputation book, on the same file.
        self.trust = ReputationKeeper(self.store, settings.reputation, clock=clock)
        self.alerts = AlertBook(self.store, clock=clock)   # operators' alerts and silences, on the same file
        self.registry = AgentRegistry(fleet, trust=self.trust, clock=clock, slow=SlowRule.from_limits(settings.limits))
        # Each agent's key for this run (engine.agents.auth): read from where the fleet file says at start,
        # or made new per launch for built-in agents; the client signs and checks with the same ring.
        self.keyring = Keyring(per_run=per_run_keys)
        self.client = AgentClient(settings.limits, transport=transport, keyring=self.keyring)
        self.launcher = (FleetLauncher(fleet, self.cache_dir, on_state=self._on_agent_state, keyring=self.keyring)
                         if launch else None)
        self.embedder = CachedEmbedder(EMBEDDERS[settings.retrieval.embedder](), self.cache_dir / "engine")
        self.gateway = build_gateway(settings.gateway, self.embedder) if settings.gateway.enabled else None
        # Agents' own memory and tools: every write screened, every call checked against the matrix.
        self.permissions = (load_permissions(fleet.permissions, known_agents=[a.id for a in fleet.agents])
                            if fleet.permissions else PermissionMatrix(source=f"{fleet.path} (no permissions file)"))
        # One question's gateway session for all who screen its messages: the pipeline, and the memory store and
        # tool broker, whose screenings join the trace of the question they belong to.
        self.sessions = GatewaySessions(self.gateway, clock)
        screen = self.sessions.screen if self.sessions.enabled else None
        self.memory = MemoryStore(self.store, screen, schedule=SnapshotSchedule(settings.gateway.snapshot_every_s))
        self.tools = ToolBroker(self.permissions, self.store, screen, self.memory, agents=fleet.agents)
        self.corpus_hashes = CorpusHashes()  # the indexed corpus's passages, replaced after each index
        self.pipeline = Pipeline(settings, self.client, self.registry, self._emit,
                                 SecureRetrieval(settings.retrieval, self.embedder), clock=clock,
                                 sessions=self.sessions, tools=self.tools, memory=self.memory,
                                 on_late=self._on_late_reply, corpus=self.corpus_hashes)
        # What follows a decided question, in this order (engine/decided.py).
        self._decided: tuple[DecidedObserver, ...] = (
            RecordAnswer(self.store, self.review), UpdateReputation(self.trust),
            RecordAlerts(self.alerts, settings.generation.min_support, clock), SnapshotMemory(self.memory, clock),
            AnnounceDecided(self._emit, clock, self._show_trust, self._announce_alerts))
        self._listeners: list[Listener] = []
        self._tasks: set[asyncio.Task] = set()
        self._probed: dict[str, float] = {}  # external agents: when each down one was last probed (_recheck_external)
        self._fleet_stopped = False          # the operator stopped the built-in fleet (stop_fleet)
        self._fleet_busy = ""                # "starting" or "stopping" while start_fleet / stop_fleet runs
        # Demo questions at a chosen rate (off until started); stamped with the engine's clock.
        self.demo = DemoTraffic(self.ask, self._emit, stamp=clock)
        self.telemetry = None                # traces out (engine.telemetry), when [telemetry] is on: made in start()
        self._corpus_index: IndexProgress | None = None   # the corpus index's latest progress (corpus_index)
        self._indexing = False               # an index of the corpus is under way (at start or reindex_corpus)

    # --- events ----------------------------------------------------------------------------
    def subscribe(self, listener: Listener) -> None:
        self._listeners.append(listener)

    def _emit(self, event: object) -> None:
        for listener in list(self._listeners):
            listener(event)

    def _spawn(self, coro) -> asyncio.Task:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    def _on_agent_state(self, agent_id: str, state: AgentState, url: str, detail: str) -> None:
        view = self.registry.set_state(agent_id, state, url, detail)
        self._emit(AgentChanged(view, "", self.clock()))
        if state in (AgentState.UP, AgentState.DOWN):
            self._spawn(self.store.audit("", "fleet", f"agent.{state.value}", {"agent": agent_id, "detail": detail}))

    def _on_late_reply(self, outcome: AgentOutcome, trace_id: str) -> None:
        """A call that outlived its question's deadline ended: audited as agent.late with how it ended."""
        self._spawn(self.store.audit(trace_id, outcome.agent_id, "agent.late",
                                     {"agent": outcome.agent_id, "status": outcome.status.value,
                                      "latency_ms": outcome.latency_ms, "detail": outcome.error}))

    # --- lifecycle -------------------------------------------------------------------------
    async def start(self) -> None:
        self.telemetry = start_telemetry(self.settings.telemetry, clock=self.clock)   # None when off
        if self.telemetry is not None:
            self.subscribe(self.telemetry.on_event)
        self.keyring.load(self.fleet)     # a missing or bad key is a ConfigError before anything opens
        await self.store.open()
        self.registry.load_stats(await self.store.agent_stats())
        await self.trust.load((a.id, a.role) for a in self.fleet.agents)
        self._show_trust(a.id for a in self.fleet.agents)
        await self.store.audit("", "engine", "engine.started",
                               {"fleet": str(self.fleet.path), "agents": [a.id for a in self.fleet.agents]})
        for view in self.registry.all():
            self._emit(AgentChanged(view, "", self.clock()))
        await asyncio.gather(*(self._check_external(v) for v in self.registry.all()
                               if not v.spec.builtin and v.spec.enabled))
        # The engine's embedder loads (torch import included) and embeds the built-in corpus into its
        # cache while the agents start, so questions pay only for passages it has never seen.
        self._indexing = True
        warm = self._spawn(asyncio.to_thread(self._warm_embedder, asyncio.get_running_loop()))
        warm.add_done_callback(lambda _task: setattr(self, "_indexing", False))
        if self.launcher:
            await self.launcher.start()
        await asyncio.shield(warm)   # a cancelled start leaves the thread to aclose(), which awaits it
        self._emit(EngineReady(sum(v.state is AgentState.UP for v in self.agents()), self.clock()))

    def _warm_embedder(self, loop: asyncio.AbstractEventLoop) -> None:
        """In a worker thread: loads the models and indexes the built-in agents' corpus (a folder that cannot be
        read fails the start, as its agents would)."""
        self.embedder.embed_passages(["warm-up"])
        if any(a.builtin and a.enabled for a in self.fleet.agents):
            self._index_corpus(loop, actor="engine")
        self.embedder.embed_query("warm-up")     # loads the model even when every passage was cached
        anomaly.warm_up()
        if self.gateway is not None:
            self.gateway.warm_up()

    def _index_corpus(self, loop: asyncio.AbstractEventLoop, actor: str) -> IndexReport:
        """In a worker thread: its progress reaches listeners on the loop's thread, where they expect it, a few
        times a second; the end is audited as corpus.indexed."""
        show = Throttled(lambda progress: loop.call_soon_threadsafe(self._show_index, progress))
        report = index_corpus(self.fleet.corpus_dir, self.embedder, self.cache_dir / "engine", on_progress=show,
                              clock=self.clock)
        self.corpus_hashes.replace(report.passage_hashes)     # one reference swapped: safe beside questions
        loop.call_soon_threadsafe(self._audit_index, report, actor)
        return report

    def _show_index(self, progress: IndexProgress) -> None:
        self._corpus_index = progress
        self._emit(CorpusIndexProgress(progress, self.clock()))

    def _audit_index(self, report: IndexReport, actor: str) -> None:
        self._spawn(self.store.audit("", actor, "corpus.indexed", {
            "folder": report.folder, "fingerprint": report.fingerprint, "files": report.files,
            "passages": report.passages, "code_passages": report.code_passages, "texts": report.texts,
            "new": report.new, "cached": report.cached, "skipped_count": len(report.skipped),
            "skipped": [{"path": s.path, "reason": s.reason} for s in report.skipped[:SKIPPED_AUDITED]],
            "seconds": round(report.elapsed_s, 3)}))

    @property
    def corpus_index(self) -> IndexProgress | None:
        """The corpus index as last reported (None before the start reads the corpus, and on a fleet without
        built-in agents until an operator indexes it): for a listener that comes late."""
        return self._corpus_index

    async def reindex_corpus(self, operator: str) -> IndexReport:
        """Reads the corpus folder again and embeds what changed, in a worker thread, with CorpusIndexProgress
        events as at start. The built-in agents read the folder when they start: a changed file reaches their
        answers when the fleet is started again. InputError while an index is under way."""
        if self._indexing:
            raise InputError("the corpus is being indexed already; wait until it is done")
        self._indexing = True
        work = self._spawn(asyncio.to_thread(self._index_corpus, asyncio.get_running_loop(), operator))
        work.add_done_callback(lambda _task: setattr(self, "_indexing", False))
        return await asyncio.shield(work)    # a cancelled caller leaves the thread to finish (aclose awaits it)

    async def _check_external(self, view: AgentView) -> None:
        """External agents are only marked down if they do not answer /health."""
        try:
            if view.spec.kind is AgentKind.QUORUM_HTTP:
                await self.client.health(view.spec, view.url)
            self._on_agent_state(view.spec.id, AgentState.UP, view.url, "external")
        except AgentError as exc:
            self._on_agent_state(view.spec.id, AgentState.DOWN, view.url, exc.reason)

    def _recheck_external(self) -> None:
        """A down external agent is probed again (at most every EXTERNAL_RECHECK_S, in the background) as
        questions come: one that flapped or sat behind a healed partition comes back to work. No launcher
        watches it, and a down agent is never asked, so no call of its own could tell."""
        now = self.clock()
        for view in self.registry.all():
            spec = view.spec
            if spec.builtin or not spec.enabled or view.state is not AgentState.DOWN or view.stopped:
                continue
            if now - self._probed.get(spec.id, float("-inf")) >= EXTERNAL_RECHECK_S:
                self._probed[spec.id] = now
                self._spawn(self._revive_external(view))

    async def _revive_external(self, view: AgentView) -> None:
        """UP (audited as agent.up) once it answers /health; still down: nothing new to say. An openai-chat
        endpoint has no /health: it gets its next call."""
        try:
            if view.spec.kind is AgentKind.QUORUM_HTTP:
                await self.client.health(view.spec, view.url)
        except AgentError:
            return
        self._on_agent_state(view.spec.id, AgentState.UP, view.url, "external: answers again")

    async def aclose(self) -> None:
        """Stops in order: demo traffic (its questions answered), the fleet, pending writes, the client, the store."""
        await self.demo.aclose()
        await self.pipeline.aclose()      # calls past their questions' deadlines: none outlives the engine
        if self.launcher:
            await self.launcher.stop()
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)
        if self.telemetry is not None:       # after the last question's events: its trace leaves too
            await self.telemetry.aclose()
        await self.client.aclose()
        await self.store.aclose()
        self.embedder.close()

    async def __aenter__(self) -> "Engine":
        await self.start()
        return self

    async def __aexit__(self, *exc) -> None:
        await self.aclose()

    # --- work ------------------------------------------------------------------------------
    def agents(self) -> tuple[AgentView, ...]:
        return self.registry.all()

    async def ask(self, question: str, tier: RiskTier | None = None, trace_id: str | None = None) -> Answer:
        """tier: the operator's choice; None lets the settings' risk rules classify the question.
        trace_id: the caller's own (the console follows its question's progress by it); a new one if None.
        Its last event is QuestionAnswered, or QuestionFailed when it raises."""
        trace_id, asked_at = trace_id or new_trace_id(), self.clock()
        try:
            answer = await self._answer(question, tier, trace_id)
        except BaseException as exc:         # cancelled included: a listener must hear the question ended
            self._emit(QuestionFailed(trace_id, type(exc).__name__, str(exc), asked_at, self.clock()))
            raise
        self._emit(QuestionAnswered(answer, answer.trace_id, self.clock()))
        return answer

    async def _answer(self, question: str, tier: RiskTier | None, trace_id: str) -> Answer:
        self._recheck_external()
        try:
            answer = await self.pipeline.ask(question, tier, trace_id)
        except QuestionBlocked as blocked:
            await self._record_blocked(blocked)
            raise
        await tell_decided(self._decided, QuestionDecided(answer))
        return answer

    async def _record_blocked(self, blocked: QuestionBlocked) -> None:
        """A question the gateway stopped: its trace and the decision are saved and audited, and the
        console hears of it, though no answer was made."""
        def write() -> None:
            write_report(self.store, blocked.report)
        await self.store.call(lambda: self.store.transaction(write))
        self._emit(GatewayFlagged(blocked.report.flags, blocked.trace_id, self.clock()))

    # --- the operator's hand ---------------------------------------------------------------
    async def quarantine(self, agent_id: str, reason: str, operator: str) -> AgentView:
        """Takes an agent off all work now, with the operator's reason (audited)."""
        self._known(agent_id)
        await self._after_trust_change(await self.trust.quarantine(agent_id, reason, operator))
        return self.registry.get(agent_id)

    async def release(self, agent_id: str, reason: str, operator: str) -> AgentView:
        """Lets a quarantined agent back on probation: low-risk work and a capped vote until it earns its way."""
        self._known(agent_id)
        await self._after_trust_change(await self.trust.release(agent_id, reason, operator))
        return self.registry.get(agent_id)

    async def decide(self, item_id: int, approve: bool, operator: str, reason: str, note: str = "") -> ReviewItem:
        """An operator's decision on a waiting answer; the agents behind the answer gain or lose by it."""
        item = await self.review.decide(item_id, approve, operator, reason, note)
        update = await self.trust.after_decision(DecidedAnswer.from_payload(item.payload), approve)
        await self._after_trust_change(update)
        return item

    # --- review: one decision on several items (engine.review) ------------------------------------
    async def decide_many(self, item_ids, approve: bool, operator: str, reason: str,
                          note: str = "") -> tuple[DecisionOutcome, ...]:
        """The same decision on each item in turn, each as `decide` makes it (its own transaction with its
        audit event, then the reputation it moves), so an item decided meanwhile or unknown fails alone:
        one outcome per distinct id, in order, each with the item as the store now has it. A reason that
        is not listed, "other" without a note, or no operator name refuses them all (InputError)."""
        reason, note = check_decision(approve, reason, note)
        operator = check_operator(operator)
        outcomes = []
        for item_id in dict.fromkeys(item_ids):
            try:
                outcomes.append(DecisionOutcome(item_id, await self.decide(item_id, approve, operator, reason, note)))
            except InputError as refused:
                try:
                    now = await self.review.get(item_id)
                except InputError:       # not even a number
                    now = None
                outcomes.append(DecisionOutcome(item_id, now, str(refused)))
        return tuple(outcomes)

    def _known(self, agent_id: str) -> None:
        try:
            self.registry.get(agent_id)
        except KeyError:
            known = ", ".join(v.spec.id for v in self.registry.all())
            raise InputError(f"no agent {agent_id!r} in the fleet (agents: {known})") from None

    async def _after_trust_change(self, update: ReputationUpdate) -> None:
        self._show_trust(update.agents)
        self._emit(TrustUpdated(update, "", self.clock()))
        await self._announce_alerts(update.alerts, "")

    def _show_trust(self, agent_ids) -> None:
        """Copies the book's standing into the registry's views and tells the console."""
        for agent_id in agent_ids:
            if agent_id in self.trust.book:
                record = self.trust.book.record(agent_id)
                self.registry.set_trust(agent_id, round(record.score, 4), record.state.value)
                self._emit(AgentChanged(self.registry.get(agent_id), "", self.clock()))

    # --- the built-in fleet: the operator stops and starts it ------------------------------------
    @property
    def fleet_stopped(self) -> bool:
        """True after stop_fleet until start_fleet brings the built-in agents back."""
        return self._fleet_stopped

    async def stop_fleet(self, operator: str) -> tuple[AgentView, ...]:
        """Stops every built-in agent's process and marks it stopped (audited as fleet.stopped). External
        agents are not the launcher's and stay as they are. Questions still run meanwhile: no stopped agent
        is asked, and one under way gets no reply from them (each call becomes that agent's outcome)."""
        launcher, operator = self._fleet_launcher("stopped", operator)
        if self._fleet_stopped:
            raise InputError("the built-in fleet is already stopped")
        agents = [spec.id for spec in launcher.builtin_agents()]
        with self._fleet_action("stopping"):
            await launcher.stop(on_exit=lambda agent_id: self._show_stopped(agent_id, f"stopped by {operator}"))
            self._fleet_stopped = True
            await self.store.audit("", operator, "fleet.stopped", {"agents": agents})
        return tuple(self.registry.get(a) for a in agents)

    async def start_fleet(self, operator: str) -> tuple[AgentView, ...]:
        """Starts the built-in agents again, as new processes on new ports (audited as fleet.started, with
        the agents that came up). Their states reach listeners as the launcher reports them."""
        launcher, operator = self._fleet_launcher("started", operator)
        if not self._fleet_stopped:
            raise InputError("the built-in fleet is already running")
        agents = [spec.id for spec in launcher.builtin_agents()]
        with self._fleet_action("starting"):
            try:
                urls = await launcher.start()
            except FleetError as exc:    # the launcher stopped what it had started
                for agent_id in agents:
                    self._show_stopped(agent_id, f"could not start: {exc}")
                raise
            self._fleet_stopped = False
            await self.store.audit("", operator, "fleet.started", {"agents": agents, "up": sorted(urls)})
        return tuple(self.registry.get(a) for a in agents)

    def _fleet_launcher(self, done: str, operator: str) -> tuple[FleetLauncher, str]:
        """The launcher and the operator's name (spaces collapsed), or InputError saying why not now."""
        if self.launcher is None:
            raise InputError(f"this engine runs no built-in fleet, so it cannot be {done}")
        if self._fleet_busy:
            raise InputError(f"the built-in fleet is {self._fleet_busy} already; wait until it is done")
        name = " ".join(str(operator or "").split())
        if not name:
            raise InputError(f"the fleet cannot be {done} without the operator's name (it is audited)")
        return self.launcher, name

    @contextlib.contextmanager
    def _fleet_action(self, doing: str):
        self._fleet_busy = doing
        try:
            yield
        finally:
            self._fleet_busy = ""

    def _show_stopped(self, agent_id: str, detail: str) -> None:
        self._emit(AgentChanged(self.registry.mark_stopped(agent_id, detail), "", self.clock()))

    # --- alerts: acknowledge, silence (engine.alerts) ---------------------------------------------
    async def _announce_alerts(self, alerts: tuple[AlertRow, ...], trace_id: str) -> None:
        """Every new alert, already recorded, reaches listeners marked muted or not as of now."""
        if alerts:
            self._emit(AlertsRaised(await self.alerts.marked(alerts), trace_id, self.clock()))

    async def alerts_list(self, open_only: bool = False, limit: int = 200) -> tuple[AlertRow, ...]:
        """Newest first, muted ones included and marked (silenced_by)."""
        return await self.alerts.alerts(open_only, limit)

    async def silences(self, active_only: bool = True) -> tuple[Silence, ...]:
        return await self.alerts.silences(active_only)

    async def acknowledge_alert(self, alert_id: int | str, by: str, comment: str = "") -> AlertRow:
        """Audited with the comment; the first acknowledgement of an alert stands."""
        row = await self.alerts.acknowledge(alert_id, by, comment)
        self._emit(AlertChanged(row, self.clock()))
        return row

    async def silence_alerts(self, kind: AlertKind | str | None, agent_id: str | None, duration_s: float, by: str,
                             comment: str) -> Silence:
        """Mutes notification of matching alerts (a kind, an agent of the fleet, or both) for duration_s;
        they are still recorded and listed. Audited with the comment."""
        if agent_id:
            self._known(agent_id.strip())     # a typo would silence nothing while the operator thinks it did
        silence = await self.alerts.silence(kind, agent_id, duration_s=duration_s, by=by, comment=comment)
        await self._announce_silences()
        return silence

    async def end_silence(self, silence_id: int | str, by: str) -> Silence:
        """Ends an active silence now (audited): its unacknowledged alerts notify again."""
        silence = await self.alerts.end_silence(silence_id, by)
        await self._announce_silences()
        return silence

    async def _announce_silences(self) -> None:
        self._emit(SilencesChanged(await self.alerts.silences(True), self.clock()))

    # --- the gateway's record ----------------------------------------------------------------
    async def gateway_decisions(self, limit: int = 200) -> tuple[DecisionRow, ...]:
        """Messages the gateway blocked, sanitised or escalated, newest first, with their evidence."""
        return await self.store.call(recent_decisions_sync, self.store, limit)

    async def trace(self, trace_id: str) -> tuple[TraceLine, ...]:
        """The whole chain of one question or message (`main.py trace`): messages, scans, tool calls,
        memory reads and writes, decisions, audit events, each with its depth under the root."""
        return await self.store.call(trace_sync, self.store, trace_id.strip())

    async def review_item_for(self, trace_id: str) -> ReviewItem | None:
        """The approval-queue item of the answer with this trace id, or None if it did not need review."""
        return await self.review.item_for(trace_id)

    # --- agents' memory and tool calls: the operator's side -------------------------------------
    async def rollback_memory(self, namespace: str, by: str, reason: str, *, snapshot_id: int | str | None = None,
                              before_trace: str | None = None) -> RollbackResult:
        """Rolls one agent's memory back to one of its own snapshots, or to just before the first entry a
        trace wrote in it (exactly one of the two). A snapshot of another namespace is refused rather than
        rolled back (the operator named this namespace); other namespaces never change."""
        trace = (before_trace or "").strip()
        if (snapshot_id is None) == (not trace):
            raise InputError("a memory rollback needs a snapshot or a trace id (one of them, not both)")
        if snapshot_id is None:
            return await self.memory.rollback_before_trace(namespace, trace, by, reason)
        number = row_id(snapshot_id, "memory snapshot")
        if number not in {s.id for s in await self.memory.snapshots(namespace)}:
            raise InputError(f"memory snapshot #{number} is not a snapshot of {namespace!r}")
        return await self.memory.rollback_to_snapshot(number, by, reason)

    async def decide_tool_call(self, call_id: int | str, approve: bool, by: str, reason: str) -> ToolCallResult:
        """An operator's decision on a pending tool call: an approval runs it (send_email writes the outbox,
        nothing is sent), a rejection drops it. Both need a reason, and a decision is final."""
        return await (self.tools.approve if approve else self.tools.reject)(call_id, by, reason)
