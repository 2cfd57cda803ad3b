"""EngineService: the console's only door into the engine.

It grows by feature: one small adapter per feature (`fleet`, `questions`, `reviews`, `trust`, `alerts`,
`cascade`, `gateway`, `traces`, `memory`, `tools`, `corpus`) over one shared task-and-error core (core.py). Each
adapter's methods schedule coroutines on the running asyncio (qasync) loop and its results come back
out as that adapter's Qt signals (`service.memory.sig_loaded`, ...). Every failure goes through
`report_error`, which logs it and emits sig_error; nothing raises into Qt and no modal dialog is ever
opened from async code.

The service itself holds the lifecycle (start, shutdown and their signals) and the one table from the
engine's typed events to the adapters (EVENT_ROUTES below, no string switch). Engine events are
delivered synchronously on the loop thread (which is the Qt main thread under qasync), so signals are
emitted directly.
"""
from __future__ import annotations

import asyncio
from typing import Callable

from PySide6.QtCore import QObject, Signal

from engine import (AgentChanged, AgentState, AlertChanged, AlertsRaised, CascadeResolved, CascadeScored,
                    CorpusIndexProgress, DemoTrafficChanged, Engine, EngineReady, GatewayFlagged, QuestionReceived,
                    ReviewEnqueued, SilencesChanged, StageProgressed, StoreChanged, StoreLink, TrustUpdated)

from .alerts import AlertsAdapter
from .audit import AuditAdapter
from .cascade import CascadeAdapter
from .corpus import CorpusAdapter
from .demo import DemoAdapter
from .core import Phase, ServiceCore
from .fleet import FleetAdapter
from .gateway import GatewayAdapter
from .memory import MemoryAdapter
from .questions import QuestionsAdapter
from .reviews import ReviewsAdapter
from .tools import ToolsAdapter
from .traces import TracesAdapter
from .trust import TrustAdapter


class EngineService(ServiceCore):
    sig_starting = Signal(int, int)            # agents up, agents expected (enabled ones)
    sig_ready = Signal(int)                    # agents up
    sig_stopping = Signal()
    sig_stopped = Signal()
    sig_store_link = Signal(bool, str)         # the team store's server reached (True) or gone (False), and why

    def __init__(self, engine: Engine, parent: QObject | None = None) -> None:
        super().__init__(engine, parent)
        self._shutdown_task: asyncio.Task | None = None
        self.fleet = FleetAdapter(self)
        self.questions = QuestionsAdapter(self)
        self.reviews = ReviewsAdapter(self)
        self.trust = TrustAdapter(self)
        self.alerts = AlertsAdapter(self)
        self.cascade = CascadeAdapter(self)
        self.gateway = GatewayAdapter(self)
        self.traces = TracesAdapter(self)
        self.memory = MemoryAdapter(self)
        self.tools = ToolsAdapter(self)
        self.demo = DemoAdapter(self, ready=self.sig_ready)
        self.corpus = CorpusAdapter(self)
        # After each of these the audit trail holds new events: the Audit panel reads it again (coalesced).
        self.audit = AuditAdapter(self, grows_on=(self.trust.sig_updated, self.gateway.sig_flagged,
                                                  self.reviews.sig_changed, self.alerts.sig_changed,
                                                  self.alerts.sig_silences, self.memory.sig_changed,
                                                  self.tools.sig_changed, self.corpus.sig_finished))
        # The one table from engine event types to what the console does with them.
        self._routes: dict[type, Callable[[object], None]] = {
            AgentChanged: self._on_agent_changed,
            EngineReady: self._on_engine_ready,
            QuestionReceived: self.questions.on_received,
            StageProgressed: self.questions.on_progress,
            ReviewEnqueued: self.reviews.on_enqueued,
            TrustUpdated: self.trust.on_updated,
            CascadeScored: self.cascade.sig_scored.emit,
            CascadeResolved: self.cascade.sig_resolved.emit,
            GatewayFlagged: self.gateway.sig_flagged.emit,
            DemoTrafficChanged: self.demo.on_changed,
            CorpusIndexProgress: self.corpus.on_progress,
            AlertsRaised: self.alerts.on_raised,
            AlertChanged: self.alerts.on_changed,
            SilencesChanged: self.alerts.on_silences,
            StoreChanged: self._on_store_changed,
            StoreLink: lambda event: self.sig_store_link.emit(event.online, event.why),
        }
        # The question's agents may have written memory or asked for tools: read both again after it.
        self.questions.sig_answer.connect(lambda _answer: (self.memory.load(), self.tools.load()))
        engine.subscribe(self._on_event)

    # --- lifecycle -------------------------------------------------------------------------
    def start(self) -> asyncio.Task | None:
        if self.phase is not Phase.IDLE:
            self.report_error(f"the engine cannot start while {self.phase.value}")
            return None
        self.phase = Phase.STARTING
        self._emit_progress()
        return self.spawn(self._start(), "engine.start")

    def shutdown(self) -> asyncio.Task:
        """Stops in order: refuse new questions, cancel running work, close the engine (which stops
        the fleet and flushes the store). Idempotent: every call returns the same awaitable task."""
        if self._shutdown_task is None:
            was_started = self.phase is not Phase.IDLE
            self.phase = Phase.STOPPING
            self.sig_stopping.emit()
            # Not in self.tasks: it must not cancel itself.
            self._shutdown_task = asyncio.get_running_loop().create_task(self._shutdown(was_started),
                                                                          name="engine.shutdown")
        return self._shutdown_task

    async def _start(self) -> None:
        try:
            await self.engine.start()
        except asyncio.CancelledError:
            raise
        except Exception as exc:   # noqa: BLE001 - every failure becomes sig_error
            self.phase = Phase.FAILED
            self.report_error(exc, context="the fleet could not be started")

    async def _shutdown(self, was_started: bool) -> None:
        await self.cancel_all()
        if was_started:
            try:
                await self.engine.aclose()
            except Exception as exc:   # noqa: BLE001
                self.report_error(exc, context="the engine did not close cleanly")
        self.phase = Phase.STOPPED
        self.sig_stopped.emit()

    def handle_loop_exception(self, loop: asyncio.AbstractEventLoop, context: dict) -> None:
        """asyncio loop exception handler: errors nobody awaited still reach the operator."""
        error = context.get("exception")
        self.report_error(error if error is not None else str(context.get("message", "unknown error")),
                          context="background error" if error is not None else "")

    # --- engine events ---------------------------------------------------------------------
    def _on_store_changed(self, event: StoreChanged) -> None:
        """Another desk changed the store this one shares: each panel showing a changed table reads it again."""
        if event.touches("approvals"):
            self.reviews.load()
        if event.touches("alerts", "silences"):
            self.alerts.load()
        if event.touches("trust", "trust_history"):
            self.trust.load()
        if event.touches("memory_entries", "memory_snapshots"):
            self.memory.load()
        if event.touches("tool_calls"):
            self.tools.load()
        if event.touches("audit"):
            self.audit.note_written()

    def _on_event(self, event: object) -> None:
        # Called inside the engine's own code path: an exception here must never reach it.
        try:
            route = self._routes.get(type(event))
            if route is not None:     # the pipeline's trace events (AgentCalled, RetrievalMerged, ...) are not for panels
                route(event)
        except Exception as exc:   # noqa: BLE001
            self.report_error(exc, context=f"the console could not show event {type(event).__name__}")

    def _on_agent_changed(self, event: AgentChanged) -> None:
        self.fleet.on_agent_changed(event)
        if self.phase is Phase.STARTING:
            self._emit_progress()

    def _on_engine_ready(self, event: EngineReady) -> None:
        if self.phase is Phase.STARTING:
            # On a team store the operator is the role signed in to PostgreSQL, whatever $USER says; set before
            # the panels hear sig_ready, so what they say first names the right desk.
            self.operator = self.engine.signed_in or self.operator
            self.phase = Phase.READY
            self.sig_ready.emit(event.agents_up)

    def _emit_progress(self) -> None:
        views = [v for v in self.engine.fleet.agents() if v.state is not AgentState.DISABLED]
        self.sig_starting.emit(sum(v.state is AgentState.UP for v in views), len(views))
