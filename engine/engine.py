"""The engine as one object: its parts wired once, its faces (engine/facades) for whoever works with it, and
start / aclose around them."""
from __future__ import annotations

import asyncio
import logging
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import httpx
import platformdirs

from .agents.auth import Keyring
from .agents.client import AgentClient
from .agents.launcher import FleetLauncher
from .alerts.book import AlertBook
from .alerts.kinds import AlertKind
from .alerts.row import NewAlert
from .config import EngineSettings, FleetConfig
from .decided import AnnounceDecided, RecordAlerts, RecordAnswer, SnapshotMemory, UpdateReputation
from .demo import DemoTraffic
from .errors import AgentError, InputError, StoreError
from .events import (AgentChanged, EngineReady, GatewayFlagged, QuestionAnswered, QuestionDecided, QuestionFailed,
                     StoreChanged, StoreLink)
from .facades import (AlertsFacade, CascadeFacade, CorpusFacade, FleetFacade, GatewayFacade, MemoryFacade,
                      QuestionsFacade, ReputationFacade, ReviewsFacade, ToolsFacade)
from .gateway.build import build_gateway
from .gateway.gateway import Gateway
from .gateway.envelope import new_trace_id
from .gateway.permissions import PermissionMatrix
from .gateway.permissions_config import load_permissions
from .gateway.sessions import GatewaySessions
from .gateway.tools import ToolBroker
from .gateway.traces import write_report
from .judges import JudgeWatch
from .memory import MemoryStore, SnapshotSchedule
from .pipeline import Pipeline, QuestionBlocked
from .question.corpus import CorpusHashes
from .question.decided import DecidedObserver, tell as tell_decided
from .registry import AgentRegistry, AgentView, SlowRule
from .reputation.identity import book_names
from .reputation.keeper import ReputationKeeper
from .retrieval import anomaly
from .retrieval.secure import SecureRetrieval
from .review import ReviewQueue
from .schema import MIGRATIONS
from .store.anchors import anchor_head, default_anchor_files
from .store.audit_log import AuditLog
from .store.changes import ChangeWatch
from .store.db import Store
from .store.refusals import fold_refusals
from .store.target import StoreTarget, store_target
from .telemetry import start_telemetry
from .types import AgentKind, AgentOutcome, AgentState, CanaryState, RiskTier
from .verify.embedders import EMBEDDERS, CachedEmbedder
from .answer import Answer

Listener = Callable[[object], None]    # receives engine.events types and reputation events


log = logging.getLogger(__name__)

EXTERNAL_RECHECK_S = 5.0     # how often a down external agent's /health is tried again while questions come
STORE_QUIET_S = 0.2          # other desks' changes to the store are told as one StoreChanged at most this often


def default_store(configured: str = "") -> StoreTarget:
    """$QUORUM_DB, else [store] url (each a SQLite file or a postgresql:// URL), else the desk's own file in the
    user data dir. A --db given on the command line comes before all three."""
    return store_target(os.environ.get("QUORUM_DB") or configured.strip()
                        or Path(platformdirs.user_data_dir("quorum")) / "quorum.db")


def default_cache_dir() -> Path:
    return Path(os.environ.get("QUORUM_CACHE_DIR") or platformdirs.user_cache_dir("quorum"))


@dataclass(frozen=True)
class EngineParts:
    """What the Engine is made of, wired once in its constructor. The faces use these, and so may the command
    line's and the tests' own checks; the console works through the faces, except its screenshot tool's demo
    seeding, which writes memory and asks for tools as agents would."""
    store: Store                       # the one SQLite file
    registry: AgentRegistry            # every agent's spec, state and standing
    keyring: Keyring                   # each agent's key for this run (engine.agents.auth)
    client: AgentClient                # signs, sends and checks every agent call
    launcher: FleetLauncher | None     # the built-in fleet's processes (None: an engine over external agents)
    embedder: CachedEmbedder           # the engine's own embedder, cached by content hash
    gateway: Gateway | None            # the injection gateway (None when [gateway] is off)
    sessions: GatewaySessions          # every question's gateway session, for all who screen its messages
    review: ReviewQueue                # the approval queue
    reputation: ReputationKeeper       # the reputation book and its tables
    alerts: AlertBook                  # operators' alerts and silences
    memory: MemoryStore                # agents' own memory
    tools: ToolBroker                  # agents' tool calls, checked against the permission matrix
    pipeline: Pipeline                 # one question's road
    corpus_hashes: CorpusHashes        # the indexed corpus's passages, replaced after each index
    cache_dir: Path
    clock: Callable[[], float]


class Engine:
    """Constructing does no I/O; `await start()` opens the store and brings the fleet up.

    Its faces: fleet, questions, reviews, reputation, alerts, memory, audit, corpus, tools, gateway, cascade and
    demo (engine/facades); `parts` is what they are made of."""

    def __init__(self, fleet: FleetConfig, settings: EngineSettings, db_path: Path | str | StoreTarget | None = None,
                 cache_dir: Path | None = None, *, launch: bool = True,
                 transport: httpx.AsyncBaseTransport | None = None, clock: Callable[[], float] = time.time,
                 per_run_keys: bool = True) -> None:
        """per_run_keys=False: built-in agents without a configured key run unsigned (see Keyring)."""
        self.settings = settings
        self._listeners: list[Listener] = []
        self._tasks: set[asyncio.Task] = set()
        self._watch: ChangeWatch | None = None
        self._changed: set[str] = set()     # tables other desks changed, told at the next StoreChanged
        self._store_online = True
        self._overdue_timer: asyncio.TimerHandle | None = None
        self._probed: dict[str, float] = {}  # external agents: when each down one was last probed (_recheck_external)
        self.telemetry = None                # traces out (engine.telemetry), when [telemetry] is on: made in start()
        self.parts = parts = self._build(fleet, settings, db_path, Path(cache_dir or default_cache_dir()),
                                         launch=launch, transport=transport, clock=clock, per_run_keys=per_run_keys)

        self.fleet = FleetFacade(fleet, parts.registry, parts.launcher, self._audit, self._emit, clock)
        self.alerts = AlertsFacade(parts.alerts, parts.registry, self._emit, clock)
        self.reputation = ReputationFacade(parts.reputation, settings.reputation, parts.registry, self._emit, clock,
                                           self.alerts.announce)
        self.reviews = ReviewsFacade(parts.review, parts.reputation, self.reputation.changed)
        self.questions = QuestionsFacade(self._ask)
        self.memory = MemoryFacade(parts.memory)
        self.audit = AuditLog(parts.store)   # the audit trail as operators filter, verify and export it
        self.corpus = CorpusFacade(fleet.corpus_dir, parts.embedder, parts.cache_dir / "engine",
                                   on_indexed=lambda report: parts.corpus_hashes.replace(report.passage_hashes),
                                   audit=self._audit, emit=self._emit, spawn=self._spawn, clock=clock)
        self.tools = ToolsFacade(parts.tools, parts.tools.matrix, {a.id: a.role for a in fleet.agents})
        self.gateway = GatewayFacade(parts.store)
        self.cascade = CascadeFacade(settings.cascade)
        # Each judge answers its canaries when it comes up and now and then after (engine/judges.py).
        self.judges = JudgeWatch(parts.client, parts.registry, settings.judge, self._judge_checked, clock)
        self._judge_rounds: asyncio.Task | None = None
        self._closing = False
        # Demo questions at a chosen rate (off until started); stamped with the engine's clock.
        self.demo = DemoTraffic(self.questions.ask, self._emit, stamp=clock, busy=self._judge_reading)
        # What follows a decided question, in this order (engine/decided.py).
        self._decided: tuple[DecidedObserver, ...] = (
            RecordAnswer(parts.store, parts.review), UpdateReputation(parts.reputation),
            RecordAlerts(parts.alerts, settings.generation.min_support, clock), SnapshotMemory(parts.memory, clock),
            AnnounceDecided(self._emit, clock, self.reputation.show, self.alerts.announce))

    def _build(self, fleet: FleetConfig, settings: EngineSettings, db_path: Path | str | StoreTarget | None,
               cache_dir: Path, *,
               launch: bool, transport: httpx.AsyncBaseTransport | None, clock: Callable[[], float],
               per_run_keys: bool) -> EngineParts:
        store = Store(db_path or default_store(settings.store.url), MIGRATIONS, clock=clock)
        reputation = ReputationKeeper(store, settings.reputation, clock=clock)   # on the same file
        registry = AgentRegistry(fleet, trust=reputation, clock=clock, slow=SlowRule.from_limits(settings.limits))
        # Each agent's key for this run: read from where the fleet file says at start, or made new per launch for
        # built-in agents; the client signs and checks with the same ring.
        keyring = Keyring(per_run=per_run_keys)
        client = AgentClient(settings.limits, transport=transport, keyring=keyring)
        launcher = (FleetLauncher(fleet, cache_dir, on_state=self._on_agent_state, keyring=keyring)
                    if launch else None)
        embedder = CachedEmbedder(EMBEDDERS[settings.retrieval.embedder](), cache_dir / "engine")
        gateway = build_gateway(settings.gateway, embedder) if settings.gateway.enabled else None
        # Agents' own memory and tools: every write screened, every call checked against the matrix.
        permissions = (load_permissions(fleet.permissions, known_agents=[a.id for a in fleet.agents])
                       if fleet.permissions else PermissionMatrix(source=f"{fleet.path} (no permissions file)"))
        # One question's gateway session for all who screen its messages: the pipeline, and the memory store and
        # tool broker, whose screenings join the trace of the question they belong to.
        sessions = GatewaySessions(gateway, clock)
        screen = sessions.screen if sessions.enabled else None
        memory = MemoryStore(store, screen, schedule=SnapshotSchedule(settings.gateway.snapshot_every_s))
        tools = ToolBroker(permissions, store, screen, memory, agents=fleet.agents)
        corpus_hashes = CorpusHashes()
        pipeline = Pipeline(settings, client, registry, self._emit, SecureRetrieval(settings.retrieval, embedder),
                            clock=clock, sessions=sessions, tools=tools, memory=memory, on_late=self._on_late_reply,
                            corpus=corpus_hashes)
        return EngineParts(store=store, registry=registry, keyring=keyring, client=client, launcher=launcher,
                           embedder=embedder, gateway=gateway, sessions=sessions, review=ReviewQueue(store, settings.review),
                           reputation=reputation, alerts=AlertBook(store, clock=clock), memory=memory, tools=tools,
                           pipeline=pipeline, corpus_hashes=corpus_hashes, cache_dir=cache_dir, clock=clock)

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

    async def _audit(self, actor: str, kind: str, payload: dict) -> None:
        """An operator's or the engine's own act, in no question's trace."""
        await self.parts.store.audit("", actor, kind, payload)

    def _on_agent_state(self, agent_id: str, state: AgentState, url: str, detail: str) -> None:
        view = self.parts.registry.set_state(agent_id, state, url, detail)
        self._emit(AgentChanged(view, "", self.parts.clock()))
        if state in (AgentState.UP, AgentState.DOWN):
            self._spawn(self._audit("fleet", f"agent.{state.value}", {"agent": agent_id, "detail": detail}))
        if state is AgentState.UP and view.spec.judge:
            self._spawn(self.judges.check(agent_id))

    def _judge_reading(self) -> bool:
        """A judge has a reading under way: demo traffic yields to it."""
        return any(v.spec.judge and v.at_work for v in self.parts.registry.all())

    async def _judge_checked(self, view: AgentView, result, before: CanaryState | None) -> None:
        """A judge's canaries: shown in the Fleet panel, audited, and an alert when it starts failing them."""
        clock = self.parts.clock
        self._emit(AgentChanged(view, "", clock()))
        if self._closing:        # the fleet is stopping under it: a canary cut short says nothing of the judge
            return
        await self._audit("engine", "judge.canaries", {"agent": view.spec.id, "passed": result.passed,
                                                       "detail": result.detail, "seconds": round(result.seconds, 2)})
        if not result.passed and before is not CanaryState.FAILED:
            alert = NewAlert(AlertKind.JUDGE_MISREADS, view.spec.id,
                             f"{view.spec.id} {result.detail}: it is not asked until it reads its canaries right", "",
                             clock())
            await self.alerts.announce(await self.parts.alerts.record([alert]), "")

    def _on_late_reply(self, outcome: AgentOutcome, trace_id: str) -> None:
        """A call that outlived its question's deadline ended: audited as agent.late with how it ended."""
        self._spawn(self.parts.store.audit(trace_id, outcome.agent_id, "agent.late",
                                           {"agent": outcome.agent_id, "status": outcome.status.value,
                                            "latency_ms": outcome.latency_ms, "detail": outcome.error}))

    # --- lifecycle -------------------------------------------------------------------------
    async def start(self) -> None:
        parts, config = self.parts, self.fleet.config
        self.telemetry = start_telemetry(self.settings.telemetry, clock=parts.clock)   # None when off
        if self.telemetry is not None:
            self.subscribe(self.telemetry.on_event)
        parts.keyring.load(config)     # a missing or bad key is a ConfigError before anything opens
        await parts.store.open()
        # On a team store the book names each agent by its identity: two desks' agents sharing an id stay apart.
        parts.reputation.tables.names = book_names(config.agents, parts.keyring.get, parts.store.target.shared)
        parts.registry.load_stats(await parts.store.agent_stats())
        await parts.reputation.load(((a.id, a.role) for a in config.agents), save=not self.read_only)
        self.reputation.show(a.id for a in config.agents)
        loop = asyncio.get_running_loop()
        parts.store.on_link = lambda online, why: loop.call_soon_threadsafe(self._on_store_link, online, why)
        self._watch = ChangeWatch(parts.store, self._on_store_change, on_link=self._on_feed_link)
        if not self.read_only:
            await self._audit("engine", "engine.started", {"fleet": str(config.path),
                                                           "agents": [a.id for a in config.agents]})
        await parts.store.call(self._anchor)
        await self._watch.start()
        if self.read_only:
            self._show_reading()
            return
        self._overdue_timer = loop.call_later(0.0, self._look_for_overdue)
        for view in parts.registry.all():
            self._emit(AgentChanged(view, "", parts.clock()))
        await asyncio.gather(*(self._check_external(v) for v in parts.registry.all()
                               if not v.spec.builtin and v.spec.enabled))
        # The engine's embedder loads (torch import included) and embeds the built-in corpus into its
        # cache while the agents start, so questions pay only for passages it has never seen.
        warm = self.corpus.busy_until(self._spawn(asyncio.to_thread(self._warm_embedder, asyncio.get_running_loop())))
        if parts.launcher:
            await parts.launcher.start()
        if any(a.judge and a.enabled for a in config.agents):
            # Not one of _tasks (the engine's own writes, awaited at close): a loop that sleeps until cancelled.
            self._judge_rounds = asyncio.get_running_loop().create_task(self.judges.run())
        await asyncio.shield(warm)   # a cancelled start leaves the thread to aclose(), which awaits it
        self._emit(EngineReady(sum(v.state is AgentState.UP for v in self.fleet.agents()), parts.clock()))

    def _show_reading(self) -> None:
        """A viewer's desk, started: it watches the team store and writes nothing to it, so it launches no agent,
        asks nothing and recorded no start (its chain's head is still anchored here, a witness of its own)."""
        for view in self.parts.registry.all():
            if view.spec.enabled:
                view = self.parts.registry.mark_stopped(view.spec.id, "not run here: a viewer's desk asks no agent")
            self._emit(AgentChanged(view, "", self.parts.clock()))
        self._emit(EngineReady(0, self.parts.clock()))

    @property
    def read_only(self) -> bool:
        """True on a team store whose signed-in role may not write the audit chain (a viewer): see start()."""
        return not self.parts.store.may_write

    def _warm_embedder(self, loop: asyncio.AbstractEventLoop) -> None:
        """In a worker thread: loads the models and indexes the built-in agents' corpus (a folder that cannot be
        read fails the start, as its agents would)."""
        parts = self.parts
        parts.embedder.embed_passages(["warm-up"])
        if any(a.builtin and a.enabled for a in self.fleet.config.agents):
            self.corpus.index_now(loop, actor="engine")
        parts.embedder.embed_query("warm-up")     # loads the model even when every passage was cached
        anomaly.warm_up()
        if parts.gateway is not None:
            parts.gateway.warm_up()

    async def _check_external(self, view: AgentView) -> None:
        """External agents are only marked down if they do not answer /health."""
        try:
            if view.spec.kind is AgentKind.QUORUM_HTTP:
                await self.parts.client.health(view.spec, view.url)
            self._on_agent_state(view.spec.id, AgentState.UP, view.url, "external")
        except AgentError as exc:
            self._on_agent_state(view.spec.id, AgentState.DOWN, view.url, exc.reason)

    def _recheck_external(self) -> None:
        """A down external agent is probed again (at most every EXTERNAL_RECHECK_S, in the background) as
        questions come: one that flapped or sat behind a healed partition comes back to work. No launcher
        watches it, and a down agent is never asked, so no call of its own could tell."""
        now = self.parts.clock()
        for view in self.parts.registry.all():
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
                await self.parts.client.health(view.spec, view.url)
        except AgentError:
            return
        self._on_agent_state(view.spec.id, AgentState.UP, view.url, "external: answers again")

    async def aclose(self) -> None:
        """Stops in order: demo traffic (its questions answered), the fleet, pending writes, the client, the store."""
        parts = self.parts
        self._closing = True
        await self.demo.aclose()
        if self._judge_rounds is not None:
            self._judge_rounds.cancel()
            await asyncio.gather(self._judge_rounds, return_exceptions=True)
        await parts.pipeline.aclose()      # calls past their questions' deadlines: none outlives the engine
        if parts.launcher:
            await parts.launcher.stop()
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)
        if self.telemetry is not None:       # after the last question's events: its trace leaves too
            await self.telemetry.aclose()
        await parts.client.aclose()
        if self._overdue_timer is not None:
            self._overdue_timer.cancel()
        if self._watch is not None:
            await self._watch.aclose()
        await parts.store.call(self._anchor)
        await parts.store.aclose()
        parts.embedder.close()

    @property
    def signed_in(self) -> str | None:
        """On a team store, the PostgreSQL role this desk signed in as: the actor of its operator's acts."""
        return self.parts.store.signed_in

    def _look_for_overdue(self) -> None:
        """Every [review] sla_check_s: an alert for each answer that waited past its tier's service-level time,
        and the writes the team store refused to viewers folded into the audit chain (a timer, not a task: the
        engine keeps no task of its own running between questions)."""
        if self._closing:
            return

        async def look() -> None:
            try:
                raised = await self.parts.store.call(self.parts.review.raise_overdue_sync, self.parts.alerts)
                await self.parts.store.call(fold_refusals, self.parts.store)    # viewers' refused writes, audited
            except StoreError as exc:       # the store is away: the banner says so; look again next time
                log.debug("overdue review items not looked for: %s", exc)
                return
            if raised:
                await self.alerts.announce(tuple(raised), "")
        self._spawn(look())
        self._overdue_timer = asyncio.get_running_loop().call_later(self.settings.review.sla_check_s,
                                                                    self._look_for_overdue)

    @property
    def store_online(self) -> bool:
        """False while a team store's server cannot be reached (writes are refused; reads show what was read)."""
        return self._store_online

    def _on_store_link(self, online: bool, why: str) -> None:
        if online == self._store_online or self._closing:
            return
        self._store_online = online
        self._emit(StoreLink(online, why, self.parts.clock()))
        if online:      # what changed meanwhile is not known: every view reads the store again
            self._on_store_change(frozenset({"*"}))

    def _on_feed_link(self, online: bool, why: str) -> None:
        """The change feed's own connection: the first to know, even while this desk writes nothing."""
        if not online:
            self._on_store_link(False, why)
            return

        async def reach() -> None:      # the store's own connection comes back on a read, not on the next decision
            if await self.parts.store.call(self.parts.store.reach):
                self._on_store_link(True, why)
        self._spawn(reach())

    def _on_store_change(self, tables: frozenset[str]) -> None:
        """Another desk committed: coalesced into one StoreChanged; the reputation book takes in its standings
        (a quarantine or release made there holds here before the next question)."""
        first = not self._changed
        self._changed |= tables
        if first:
            asyncio.get_running_loop().call_later(STORE_QUIET_S, self._tell_store_changed)

    def _tell_store_changed(self) -> None:
        tables, self._changed = frozenset(self._changed), set()
        if self._closing or not tables:
            return
        event = StoreChanged(tables, self.parts.clock())
        if event.touches("trust"):
            self._spawn(self.parts.reputation.sync())
        self._emit(event)

    def _anchor(self) -> None:
        """The chain's head, anchored outside the store at start and at close (engine.store.anchors); a failure
        is logged, never stops the engine."""
        anchors, key = default_anchor_files()
        try:
            anchor_head(self.parts.store, anchors, key)
        except (InputError, StoreError) as exc:
            log.warning("the audit chain's head was not anchored: %s", exc)

    async def __aenter__(self) -> "Engine":
        await self.start()
        return self

    async def __aexit__(self, *exc) -> None:
        await self.aclose()

    # --- one question (engine.questions) ---------------------------------------------------------
    async def _ask(self, question: str, tier: RiskTier | None = None, trace_id: str | None = None) -> Answer:
        """Its last event is QuestionAnswered, or QuestionFailed when it raises."""
        if self.read_only:
            raise InputError(f"this desk signed in as {self.signed_in}, a viewer of the team store: it reads and asks "
                             "nothing, since every question is written to the store; sign in as an operator to ask")
        clock = self.parts.clock
        trace_id, asked_at = trace_id or new_trace_id(), clock()
        try:
            answer = await self._answer(question, tier, trace_id)
        except BaseException as exc:         # cancelled included: a listener must hear the question ended
            self._emit(QuestionFailed(trace_id, type(exc).__name__, str(exc), asked_at, clock()))
            raise
        self._emit(QuestionAnswered(answer, answer.trace_id, clock()))
        return answer

    async def _answer(self, question: str, tier: RiskTier | None, trace_id: str) -> Answer:
        self._recheck_external()
        try:
            answer = await self.parts.pipeline.ask(question, tier, trace_id)
        except QuestionBlocked as blocked:
            await self._record_blocked(blocked)
            raise
        await tell_decided(self._decided, QuestionDecided(answer))
        return answer

    async def _record_blocked(self, blocked: QuestionBlocked) -> None:
        """A question the gateway stopped: its trace and the decision are saved and audited, and the
        console hears of it, though no answer was made."""
        store = self.parts.store

        def write() -> None:
            write_report(store, blocked.report)
        await store.call(lambda: store.transaction(write))
        self._emit(GatewayFlagged(blocked.report.flags, blocked.trace_id, self.parts.clock()))
