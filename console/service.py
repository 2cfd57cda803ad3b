"""EngineService: the console's only door into the engine.

Methods in (`start`, `ask`, `shutdown`) schedule coroutines on the running asyncio (qasync) loop
and keep strong references to their tasks, so none is garbage-collected mid-flight. What happens
comes back out as Qt signals named `sig_<what happened>`. Every failure, expected or not, goes
through `report_error`, which logs it and emits `sig_error`; nothing raises into Qt and no modal
dialog is ever opened from async code.

Engine events are delivered synchronously on the loop thread (which is the Qt main thread under
qasync), so signals are emitted directly.
"""
from __future__ import annotations

import asyncio
import enum
import logging
from typing import Any, Coroutine

from PySide6.QtCore import QObject, Signal

from engine import AgentState, AgentView, Engine, Event, QuorumError, RiskTier

log = logging.getLogger(__name__)


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
    sig_stopping = Signal()
    sig_stopped = Signal()

    def __init__(self, engine: Engine, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._engine = engine
        self._phase = Phase.IDLE
        self._tasks: set[asyncio.Task] = set()
        self._shutdown_task: asyncio.Task | None = None
        self._questions_running = 0
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

    # --- methods in ------------------------------------------------------------------------
    def start(self) -> asyncio.Task | None:
        if self._phase is not Phase.IDLE:
            self.report_error(f"the engine cannot start while {self._phase.value}")
            return None
        self._phase = Phase.STARTING
        self._emit_progress()
        return self._spawn(self._start(), "engine.start")

    def ask(self, question: str, tier: str = RiskTier.MEDIUM.value) -> asyncio.Task | None:
        if self._phase is not Phase.READY:
            self.report_error("the fleet is not ready for questions yet" if self._phase is Phase.STARTING
                              else f"questions are not accepted while the engine is {self._phase.value}")
            return None
        try:
            risk = RiskTier(tier)
        except ValueError:
            self.report_error(f"unknown risk tier {tier!r} (expected low, medium or high)")
            return None
        self._questions_running += 1
        return self._spawn(self._ask(question, risk), "engine.ask")

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

    async def _ask(self, question: str, tier: RiskTier) -> None:
        ok = False
        try:
            answer = await self._engine.ask(question, tier)
            if self._phase is Phase.READY:     # an answer that lands during shutdown is dropped
                self.sig_answer.emit(answer)
                ok = True
        except asyncio.CancelledError:
            raise
        except Exception as exc:   # noqa: BLE001
            self.report_error(exc, context="the question failed")
        finally:
            self._questions_running -= 1
            self.sig_question_finished.emit(ok)

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
    def _on_event(self, event: Event) -> None:
        # Called inside the engine's own code path: an exception here must never reach it.
        try:
            self._dispatch(event)
        except Exception as exc:   # noqa: BLE001
            self.report_error(exc, context=f"the console could not show event {event.kind}")

    def _dispatch(self, event: Event) -> None:
        if event.kind == "fleet.agent":
            self.sig_agent_changed.emit(event.payload["view"])
            if self._phase is Phase.STARTING:
                self._emit_progress()
        elif event.kind == "engine.ready":
            if self._phase is Phase.STARTING:
                self._phase = Phase.READY
                self.sig_ready.emit(int(event.payload.get("agents_up", 0)))
        elif event.kind == "question.received":
            self.sig_question_started.emit(event.trace_id, str(event.payload.get("question", "")))

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
