"""EngineService: the console's only door into the engine.

Methods in (`start`, `ask`, `load_reviews`, `decide`, `quarantine`, `release`, `acknowledge_alert`,
`load_trust`, `load_gateway`, `open_trace`, `load_memory`, `snapshot_memory`, `rollback_memory`,
`quarantine_memory`, `release_memory`, `memory_spread`, `load_tool_calls`, `decide_tool_call`, `shutdown`) schedule coroutines on the running asyncio (qasync) loop and keep strong references to their tasks, so none is garbage-collected mid-flight. What happens
comes back out as Qt signals named `sig_<what happened>`. Every failure, expected or not, goes
through `report_error`, which logs it and emits `sig_error`; nothing raises into Qt and no modal
dialog is ever opened from async code.

Engine events are delivered synchronously on the loop thread (which is the Qt main thread under
qasync), so signals are emitted directly.

Agents' memory and tool calls are read whole (`load_memory`, `load_tool_calls`) when the engine is ready,
after every answered question, and after each operator change to them; a refused change comes back as
sig_memory_failed / sig_tool_call_failed and, like every failure, sig_error ("rollback refused: ...").
"""
from __future__ import annotations

import asyncio
import enum
import logging
import os
from dataclasses import dataclass
from typing import Any, Coroutine, Mapping

from PySide6.QtCore import QObject, Signal

from engine import AgentState, AgentView, Engine, InputError, QuorumError, RiskTier, Role
from engine.events import (AgentChanged, CascadeResolved, CascadeScored, EngineReady, GatewayFlagged, QuestionReceived,
                           ReviewEnqueued, TrustUpdated)
from engine.gateway.permissions import PermissionMatrix
from engine.gateway.tools import OutboxMail, ToolCall
from engine.memory import MemoryEntry, NamespaceSummary, Snapshot
from engine.reputation import ReputationSettings

log = logging.getLogger(__name__)

AUTO_TIER = "auto"    # the tier the engine's risk rules choose
SNAPSHOT_LABEL = "console"    # the label of a snapshot an operator takes in the console
TOOL_CALLS_SHOWN = 500        # the latest tool calls a load reads (every pending one comes on top)
OUTBOX_SHOWN = 100


@dataclass(frozen=True)
class MemoryState:
    """Agents' memory as stored: every namespace's counts, every version of every entry (inactive ones
    included), and every snapshot (newest first)."""
    namespaces: tuple[NamespaceSummary, ...]
    entries: tuple[MemoryEntry, ...]
    snapshots: tuple[Snapshot, ...]


@dataclass(frozen=True)
class ToolCallsState:
    """Tool calls as stored: every pending one (oldest first), the latest others (newest first), the outbox."""
    pending: tuple[ToolCall, ...]
    calls: tuple[ToolCall, ...]
    outbox: tuple[OutboxMail, ...]


@dataclass(frozen=True)
class PermissionsView:
    """The permission matrix (frozen) and the fleet's roles, for a read-only table."""
    matrix: PermissionMatrix
    roles: Mapping[str, Role]


class Phase(enum.Enum):
    IDLE = "idle"            # constructed, start() not called yet
    STARTING = "starting"    # the fleet is coming up
    READY = "ready"          # questions are accepted
    FAILED = "failed"        # start failed; only shutdown makes sense
    STOPPING = "stopping"    # shutdown under way: no new questions
    STOPPED = "stopped"


class EngineService(QObject):
    sig_starting = Signal(int, int)            # agents up, agents expected (enabled ones)
    sig_agent_changed = Signal(object)         # AgentView
    sig_ready = Signal(int)                    # agents up
    sig_question_started = Signal(str, str)    # trace_id, question (as the engine screened it)
    sig_answer = Signal(object)                # Answer
    sig_question_finished = Signal(bool)       # True if an answer came back; always follows ask()
    sig_error = Signal(str)                    # a message an operator can read
    sig_review_changed = Signal(object)        # ReviewItem: enqueued by the engine, or decided
    sig_reviews_loaded = Signal(object)        # list[ReviewItem]: the queue as the store has it
    sig_review_failed = Signal(int, str)       # item id, why the decision was not saved
    sig_trust_updated = Signal(object)         # engine.trust.TrustUpdate: new score points, alerts, reputation events
    sig_trust_loaded = Signal(object, object)  # score history (list[ScorePoint]), alerts (list[AlertRow]) as stored
    sig_trust_failed = Signal(str, str)        # agent id, why a quarantine or release was refused
    sig_alert_acknowledged = Signal(object)    # AlertRow as it now is
    sig_cascade_scored = Signal(object)        # CascadeScored event: one stage boundary's scores and its trace id
    sig_cascade_resolved = Signal(object)      # CascadeResolved event: a question's outcome (before its answer)
    sig_gateway_flagged = Signal(object)       # GatewayFlagged event: messages of one question blocked, sanitised, escalated
    sig_gateway_loaded = Signal(object)        # tuple[DecisionRow]: the gateway's decisions as stored, newest first
    sig_trace_loaded = Signal(str, object)     # trace id, tuple[TraceLine]: one question's or message's whole chain
    sig_trace_failed = Signal(str, str)        # trace id, why it could not be shown (also sent to sig_error)
    sig_memory_loaded = Signal(object)         # MemoryState: namespaces, every entry version, snapshots
    sig_memory_changed = Signal(object)        # what a change returned: tuple[Snapshot], RollbackResult or StatusChange
    sig_memory_failed = Signal(str, str)       # action (snapshot, rollback, quarantine, release, spread), why
    sig_memory_spread = Signal(object)         # Spread: who read an entry, in which traces, and what they wrote next
    sig_tool_calls_loaded = Signal(object)     # ToolCallsState: pending calls, the latest calls, the outbox
    sig_tool_call_changed = Signal(object)     # ToolCallResult of an operator's approval or rejection
    sig_tool_call_failed = Signal(int, str)    # call id, why the decision was refused
    sig_stopping = Signal()
    sig_stopped = Signal()

    def __init__(self, engine: Engine, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._engine = engine
        self._phase = Phase.IDLE
        self._tasks: set[asyncio.Task] = set()
        self._shutdown_task: asyncio.Task | None = None
        self._questions_running = 0
        self.operator = os.environ.get("USER") or "operator"    # who the console's decisions are recorded as
        # The one table from engine event types to what the console does with them.
        self._handlers = {
            AgentChanged: self._on_agent_changed,
            EngineReady: self._on_engine_ready,
            QuestionReceived: lambda e: self.sig_question_started.emit(e.trace_id, e.question),
            ReviewEnqueued: lambda e: self.sig_review_changed.emit(e.item),
            TrustUpdated: self._on_trust_updated,
            CascadeScored: self.sig_cascade_scored.emit,
            CascadeResolved: self.sig_cascade_resolved.emit,
            GatewayFlagged: self.sig_gateway_flagged.emit,
        }
        engine.subscribe(self._on_event)

    # --- state -----------------------------------------------------------------------------
    @property
    def phase(self) -> Phase:
        return self._phase

    @property
    def ready(self) -> bool:
        return self._phase is Phase.READY

    @property
    def busy(self) -> bool:
        return self._questions_running > 0

    def agents(self) -> tuple[AgentView, ...]:
        """A snapshot of the fleet, for panels that start before the first event."""
        return self._engine.agents()

    @property
    def reputation_settings(self) -> ReputationSettings:
        """The reputation book's settings, read-only (frozen): panels quote its floor and probation terms."""
        return self._engine.settings.reputation

    @property
    def quarantine_floor(self) -> float:
        """The score below which the reputation book quarantines an agent on its own (engine settings)."""
        return self.reputation_settings.quarantine_floor

    @property
    def cascade_threshold(self) -> float:
        """CHARM's trigger threshold θ (engine settings), drawn on the Cascade panel's plot."""
        return self._engine.settings.cascade.theta

    # --- methods in ------------------------------------------------------------------------
    def start(self) -> asyncio.Task | None:
        if self._phase is not Phase.IDLE:
            self.report_error(f"the engine cannot start while {self._phase.value}")
            return None
        self._phase = Phase.STARTING
        self._emit_progress()
        return self._spawn(self._start(), "engine.start")

    def ask(self, question: str, tier: str = AUTO_TIER) -> asyncio.Task | None:
        """tier: "auto" (the engine's risk rules decide) or low, medium, high."""
        if self._phase is not Phase.READY:
            self.report_error("the fleet is not ready for questions yet" if self._phase is Phase.STARTING
                              else f"questions are not accepted while the engine is {self._phase.value}")
            return None
        try:
            risk = None if tier == AUTO_TIER else RiskTier(tier)
        except ValueError:
            self.report_error(f"unknown risk tier {tier!r} (expected auto, low, medium or high)")
            return None
        self._questions_running += 1
        return self._spawn(self._ask(question, risk), "engine.ask")

    def load_reviews(self) -> asyncio.Task | None:
        """Reads the approval queue (every pending item, then the latest decisions); sig_reviews_loaded."""
        if self._phase is not Phase.READY:
            self.report_error(f"the approval queue cannot be read while the engine is {self._phase.value}")
            return None
        return self._spawn(self._load_reviews(), "review.load")

    def decide(self, item_id: int, approve: bool, reason: str, note: str = "") -> asyncio.Task | None:
        """Approves or rejects a review item as self.operator: sig_review_changed with the decided item,
        or sig_review_failed(item_id, message) if the engine refused it (unlisted reason, "other" without
        a note, decided meanwhile)."""
        if self._phase is not Phase.READY:
            message = f"decisions are not accepted while the engine is {self._phase.value}"
            self.sig_review_failed.emit(int(item_id), message)
            self.report_error(message)
            return None
        return self._spawn(self._decide(int(item_id), bool(approve), reason, note), "review.decide")

    def quarantine(self, agent_id: str, reason: str) -> asyncio.Task | None:
        """Takes an agent off all work as self.operator: sig_trust_updated, or sig_trust_failed(agent, why)."""
        return self._trust_action("quarantine", agent_id, reason)

    def release(self, agent_id: str, reason: str) -> asyncio.Task | None:
        """Lets a quarantined agent back on probation: sig_trust_updated, or sig_trust_failed(agent, why)."""
        return self._trust_action("release", agent_id, reason)

    def acknowledge_alert(self, alert_id: int) -> asyncio.Task | None:
        if self._phase is not Phase.READY:
            self.report_error(f"alerts cannot be acknowledged while the engine is {self._phase.value}")
            return None
        return self._spawn(self._acknowledge(int(alert_id)), "alert.acknowledge")

    def load_trust(self) -> asyncio.Task | None:
        """Reads the score history and the alerts as stored (panels opening mid-run): sig_trust_loaded."""
        if self._phase is not Phase.READY:
            return None
        return self._spawn(self._load_trust(), "trust.load")

    def load_gateway(self, limit: int = 200) -> asyncio.Task | None:
        """Reads the gateway's stored decisions, newest first (panels opening mid-run): sig_gateway_loaded."""
        if self._phase is not Phase.READY:
            return None
        return self._spawn(self._load_gateway(int(limit)), "gateway.load")

    def open_trace(self, trace_id: str) -> asyncio.Task | None:
        """Reads the whole chain of a question or message: sig_trace_loaded(trace_id, lines), or
        sig_trace_failed(trace_id, why) and sig_error when there is no such trace."""
        trace_id = (trace_id or "").strip()
        if not trace_id:
            message = "no trace id given: paste the 32-hex trace id an answer, an alert or the Gateway tab shows"
        elif self._phase is not Phase.READY:
            message = f"traces cannot be read while the engine is {self._phase.value}"
        else:
            return self._spawn(self._open_trace(trace_id), "trace.open")
        self.sig_trace_failed.emit(trace_id, message)
        self.report_error(message)
        return None

    # --- agents' memory ---------------------------------------------------------------------
    def load_memory(self) -> asyncio.Task | None:
        """Reads every namespace, every entry version and every snapshot: sig_memory_loaded(MemoryState)."""
        if self._phase is not Phase.READY:
            return None
        return self._spawn(self._load_memory(), "memory.load")

    def snapshot_memory(self, namespace: str | None, label: str = SNAPSHOT_LABEL) -> asyncio.Task | None:
        """Marks one namespace's state (None: every namespace's) to roll back to later, as self.operator."""
        memory = self._engine.memory
        if namespace is None:
            return self._memory_action("snapshot", lambda: memory.snapshot_all(label, self.operator))
        return self._memory_action("snapshot", lambda: self._one_snapshot(namespace, label))

    def rollback_memory(self, namespace: str, snapshot_id: int | None = None, before_trace: str | None = None,
                        reason: str = "") -> asyncio.Task | None:
        """Rolls one namespace back to one of its snapshots, or to just before a trace's first write in it."""
        return self._memory_action("rollback", lambda: self._engine.rollback_memory(
            namespace, self.operator, reason, snapshot_id=snapshot_id, before_trace=before_trace))

    def quarantine_memory(self, entry_id: int, reason: str) -> asyncio.Task | None:
        """Takes an entry out of memory (never read again until released); the key's previous version in
        play becomes active."""
        return self._memory_action("quarantine", lambda: self._engine.memory.quarantine(entry_id, self.operator,
                                                                                        reason))

    def release_memory(self, entry_id: int, reason: str) -> asyncio.Task | None:
        """Puts a quarantined entry back in play."""
        return self._memory_action("release", lambda: self._engine.memory.release(entry_id, self.operator, reason))

    def memory_spread(self, entry_id: int) -> asyncio.Task | None:
        """Who read an entry, in which traces, and what they wrote next in them: sig_memory_spread(Spread)."""
        if self._phase is not Phase.READY:
            return self._refuse_memory("spread", f"memory cannot be read while the engine is {self._phase.value}")
        return self._spawn(self._memory_spread(entry_id), "memory.spread")

    async def _one_snapshot(self, namespace: str, label: str):
        return (await self._engine.memory.snapshot(namespace, label, self.operator),)

    def _memory_action(self, action: str, call) -> asyncio.Task | None:
        if self._phase is not Phase.READY:
            return self._refuse_memory(action, f"memory cannot be changed while the engine is {self._phase.value}")
        return self._spawn(self._do_memory_action(action, call), f"memory.{action}")

    def _refuse_memory(self, action: str, message: str) -> None:
        self.sig_memory_failed.emit(action, message)
        self.report_error(message)
        return None

    async def _do_memory_action(self, action: str, call) -> None:
        try:
            result = await call()
        except asyncio.CancelledError:
            raise
        except InputError as exc:      # expected: no reason, an unknown id, already quarantined, ...
            message = f"{action} refused: {exc}"
            self.sig_memory_failed.emit(action, message)
            self.report_error(message)
            return
        except Exception as exc:   # noqa: BLE001
            self.sig_memory_failed.emit(action, f"{action} failed: {exc}")
            self.report_error(exc, context=f"the memory {action} was not saved")
            return
        self.sig_memory_changed.emit(result)
        await self._load_memory()

    async def _load_memory(self) -> None:
        memory = self._engine.memory
        try:
            state = MemoryState(await memory.namespaces(), await memory.entries(None, include_inactive=True),
                                await memory.snapshots())
        except asyncio.CancelledError:
            raise
        except Exception as exc:   # noqa: BLE001
            self.report_error(exc, context="agents' memory could not be read")
            return
        self.sig_memory_loaded.emit(state)

    async def _memory_spread(self, entry_id: int) -> None:
        try:
            spread = await self._engine.memory.spread(entry_id)
        except asyncio.CancelledError:
            raise
        except InputError as exc:
            self._refuse_memory("spread", f"spread refused: {exc}")
            return
        except Exception as exc:   # noqa: BLE001
            self.sig_memory_failed.emit("spread", str(exc))
            self.report_error(exc, context=f"the readers of memory entry #{entry_id} could not be read")
            return
        self.sig_memory_spread.emit(spread)

    # --- agents' tool calls ------------------------------------------------------------------
    def load_tool_calls(self) -> asyncio.Task | None:
        """Reads the pending tool calls, the latest others and the outbox: sig_tool_calls_loaded(ToolCallsState)."""
        if self._phase is not Phase.READY:
            return None
        return self._spawn(self._load_tool_calls(), "tools.load")

    def decide_tool_call(self, call_id: int, approve: bool, reason: str) -> asyncio.Task | None:
        """Approves (runs: send_email writes the outbox, nothing is sent) or rejects a pending tool call as
        self.operator: sig_tool_call_changed, or sig_tool_call_failed(call_id, why) and sig_error."""
        if self._phase is not Phase.READY:
            message = f"tool calls cannot be decided while the engine is {self._phase.value}"
            self.sig_tool_call_failed.emit(int(call_id), message)
            self.report_error(message)
            return None
        return self._spawn(self._decide_tool_call(int(call_id), bool(approve), reason), "tools.decide")

    def permissions(self) -> PermissionsView:
        """The permission matrix and the fleet's roles (read-only; the matrix is a config file)."""
        return PermissionsView(self._engine.permissions, {a.id: a.role for a in self._engine.fleet.agents})

    async def _decide_tool_call(self, call_id: int, approve: bool, reason: str) -> None:
        try:
            result = await self._engine.decide_tool_call(call_id, approve, self.operator, reason)
        except asyncio.CancelledError:
            raise
        except InputError as exc:      # expected: no reason, decided meanwhile, no longer allowed
            message = f"{'approval' if approve else 'rejection'} refused: {exc}"
            self.sig_tool_call_failed.emit(call_id, message)
            self.report_error(message)
            await self._load_tool_calls()      # show the call as the store has it (decided elsewhere?)
            return
        except Exception as exc:   # noqa: BLE001
            self.sig_tool_call_failed.emit(call_id, str(exc))
            self.report_error(exc, context=f"the decision on tool call #{call_id} was not saved")
            return
        self.sig_tool_call_changed.emit(result)
        await self._load_tool_calls()

    async def _load_tool_calls(self) -> None:
        tools = self._engine.tools
        try:
            state = ToolCallsState(tuple(await tools.pending()), tuple(await tools.calls(limit=TOOL_CALLS_SHOWN)),
                                   tuple(await tools.outbox(OUTBOX_SHOWN)))
        except asyncio.CancelledError:
            raise
        except Exception as exc:   # noqa: BLE001
            self.report_error(exc, context="the tool calls could not be read")
            return
        self.sig_tool_calls_loaded.emit(state)

    def _trust_action(self, action: str, agent_id: str, reason: str) -> asyncio.Task | None:
        if self._phase is not Phase.READY:
            message = f"agents cannot be quarantined or released while the engine is {self._phase.value}"
            self.sig_trust_failed.emit(agent_id, message)
            self.report_error(message)
            return None
        return self._spawn(self._do_trust_action(action, agent_id, reason), f"agent.{action}")

    async def _do_trust_action(self, action: str, agent_id: str, reason: str) -> None:
        try:
            await getattr(self._engine, action)(agent_id, reason, self.operator)
        except asyncio.CancelledError:
            raise
        except InputError as exc:      # expected (the dialog shows it): no reason, already quarantined, ...
            log.warning("%s %s: %s", action, agent_id, exc)
            self.sig_trust_failed.emit(agent_id, str(exc))
        except Exception as exc:   # noqa: BLE001
            self.sig_trust_failed.emit(agent_id, str(exc))
            self.report_error(exc, context=f"the {action} of {agent_id} was not saved")

    async def _acknowledge(self, alert_id: int) -> None:
        try:
            row = await self._engine.trust.tables.acknowledge(alert_id, self.operator)
        except asyncio.CancelledError:
            raise
        except Exception as exc:   # noqa: BLE001
            self.report_error(exc, context=f"alert #{alert_id} could not be acknowledged")
            return
        self.sig_alert_acknowledged.emit(row)

    async def _load_trust(self) -> None:
        try:
            history = await self._engine.trust.tables.history()
            alerts = await self._engine.trust.tables.alerts()
        except asyncio.CancelledError:
            raise
        except Exception as exc:   # noqa: BLE001
            self.report_error(exc, context="the trust history could not be read")
            return
        self.sig_trust_loaded.emit(history, alerts)

    async def _load_gateway(self, limit: int) -> None:
        try:
            rows = await self._engine.gateway_decisions(limit)
        except asyncio.CancelledError:
            raise
        except Exception as exc:   # noqa: BLE001
            self.report_error(exc, context="the gateway's decisions could not be read")
            return
        self.sig_gateway_loaded.emit(tuple(rows))

    async def _open_trace(self, trace_id: str) -> None:
        try:
            lines = await self._engine.trace(trace_id)
        except asyncio.CancelledError:
            raise
        except Exception as exc:   # noqa: BLE001
            self.sig_trace_failed.emit(trace_id, str(exc))
            self.report_error(exc, context=f"trace {trace_id} could not be read")
            return
        if not lines:
            message = (f"no trace {trace_id!r} in the store (trace ids are the 32-hex ids an answer, an alert "
                       f"and the Gateway tab show)")
            self.sig_trace_failed.emit(trace_id, message)
            self.report_error(message)
            return
        self.sig_trace_loaded.emit(trace_id, tuple(lines))

    def shutdown(self) -> asyncio.Task:
        """Stops in order: refuse new questions, cancel running work, close the engine (which stops
        the fleet and flushes the store). Idempotent: every call returns the same awaitable task."""
        if self._shutdown_task is None:
            was_started = self._phase is not Phase.IDLE
            self._phase = Phase.STOPPING
            self.sig_stopping.emit()
            # Not in self._tasks: it must not cancel itself.
            self._shutdown_task = asyncio.get_running_loop().create_task(self._shutdown(was_started),
                                                                          name="engine.shutdown")
        return self._shutdown_task

    # --- coroutines ------------------------------------------------------------------------
    async def _start(self) -> None:
        try:
            await self._engine.start()
        except asyncio.CancelledError:
            raise
        except Exception as exc:   # noqa: BLE001 - every failure becomes sig_error
            self._phase = Phase.FAILED
            self.report_error(exc, context="the fleet could not be started")

    async def _ask(self, question: str, tier: RiskTier | None) -> None:
        ok = False
        try:
            answer = await self._engine.ask(question, tier)
            if self._phase is Phase.READY:     # an answer that lands during shutdown is dropped
                self.sig_answer.emit(answer)
                ok = True
                # The question's agents may have written memory or asked for tools: read both again.
                self.load_memory()
                self.load_tool_calls()
        except asyncio.CancelledError:
            raise
        except Exception as exc:   # noqa: BLE001
            self.report_error(exc, context="the question failed")
        finally:
            self._questions_running -= 1
            self.sig_question_finished.emit(ok)

    async def _load_reviews(self) -> None:
        try:
            pending = await self._engine.review.pending()
            decided = [i for i in await self._engine.review.items(limit=100) if not i.pending]
            self.sig_reviews_loaded.emit(pending + decided)
        except asyncio.CancelledError:
            raise
        except Exception as exc:   # noqa: BLE001
            self.report_error(exc, context="the approval queue could not be read")

    async def _decide(self, item_id: int, approve: bool, reason: str, note: str) -> None:
        try:
            item = await self._engine.decide(item_id, approve, self.operator, reason, note)
        except asyncio.CancelledError:
            raise
        except InputError as exc:
            # Expected (the form shows it): a bad reason, or the item was decided elsewhere meanwhile.
            log.warning("review item #%s: %s", item_id, exc)
            self.sig_review_failed.emit(item_id, str(exc))
            await self._refresh_review(item_id)
            return
        except Exception as exc:   # noqa: BLE001
            self.sig_review_failed.emit(item_id, str(exc))
            self.report_error(exc, context=f"the decision on review item #{item_id} was not saved")
            return
        self.sig_review_changed.emit(item)

    async def _refresh_review(self, item_id: int) -> None:
        """After a refused decision: show the item as the store has it (another operator may have decided it)."""
        try:
            item = await self._engine.review.get(item_id)
        except QuorumError as exc:
            self.report_error(exc, context=f"review item #{item_id} could not be read")
            return
        if item is not None:
            self.sig_review_changed.emit(item)

    async def _shutdown(self, was_started: bool) -> None:
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)
        if was_started:
            try:
                await self._engine.aclose()
            except Exception as exc:   # noqa: BLE001
                self.report_error(exc, context="the engine did not close cleanly")
        self._phase = Phase.STOPPED
        self.sig_stopped.emit()

    # --- engine events ---------------------------------------------------------------------
    def _on_event(self, event: object) -> None:
        # Called inside the engine's own code path: an exception here must never reach it.
        try:
            self._dispatch(event)
        except Exception as exc:   # noqa: BLE001
            self.report_error(exc, context=f"the console could not show event {type(event).__name__}")

    def _dispatch(self, event: object) -> None:
        handler = self._handlers.get(type(event))
        if handler is not None:      # generic trace events (agent.call, retrieval.merged, ...) are not for panels
            handler(event)

    def _on_agent_changed(self, event: AgentChanged) -> None:
        self.sig_agent_changed.emit(event.view)
        if self._phase is Phase.STARTING:
            self._emit_progress()

    def _on_engine_ready(self, event: EngineReady) -> None:
        if self._phase is Phase.STARTING:
            self._phase = Phase.READY
            self.sig_ready.emit(event.agents_up)

    def _on_trust_updated(self, event: TrustUpdated) -> None:
        self.sig_trust_updated.emit(event.update)

    def _emit_progress(self) -> None:
        views = [v for v in self._engine.agents() if v.state is not AgentState.DISABLED]
        self.sig_starting.emit(sum(v.state is AgentState.UP for v in views), len(views))

    # --- tasks and errors ------------------------------------------------------------------
    def _spawn(self, coro: Coroutine[Any, Any, None], name: str) -> asyncio.Task:
        task = asyncio.get_running_loop().create_task(coro, name=name)
        self._tasks.add(task)
        task.add_done_callback(self._task_done)
        return task

    def _task_done(self, task: asyncio.Task) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            self.report_error(task.exception(), context=f"{task.get_name()} failed")

    def report_error(self, error: BaseException | str, context: str = "") -> None:
        """The one handler: logs (with traceback when unexpected) and emits sig_error."""
        if isinstance(error, str):
            message = error
            log.warning("%s", message)
        elif isinstance(error, QuorumError):
            message = str(error)      # written for operators already
            log.warning("%s: %s", context or "engine error", message)
        else:
            message = f"{type(error).__name__}: {error}"
            log.error("%s", context or "unexpected error", exc_info=error)
        self.sig_error.emit(f"{context[:1].upper()}{context[1:]}: {message}" if context else message)

    def handle_loop_exception(self, loop: asyncio.AbstractEventLoop, context: dict) -> None:
        """asyncio loop exception handler: errors nobody awaited still reach the operator."""
        error = context.get("exception")
        self.report_error(error if error is not None else str(context.get("message", "unknown error")),
                          context="background error" if error is not None else "")
