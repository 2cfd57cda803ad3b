"""Fleet adapter: the agents as the registry sees them, live; the operator stops and starts the built-in fleet.

Every AgentChanged is emitted at once on sig_agent_changed, and batched into sig_agents_changed (the
latest view of each agent that changed, at most once per console.batch.FLUSH_MS): under demo traffic
the engine reports dozens of changes a second, and a table redraws once per batch. The batch is handed
over early when the engine turns ready, so whoever reads the fleet then sees all of it.
"""
from __future__ import annotations

import asyncio
import enum

from PySide6.QtCore import Signal

from engine import AgentChanged, AgentState, AgentView

from ..batch import Coalescer
from .core import Adapter, Attempt


class FleetAction(enum.Enum):
    START = "start"
    STOP = "stop"

    @property
    def doing(self) -> str:
        return "Starting" if self is FleetAction.START else "Stopping"

    @property
    def done(self) -> str:
        return "started" if self is FleetAction.START else "stopped"


class FleetAdapter(Adapter):
    sig_agent_changed = Signal(object)         # AgentView: state, call record or standing changed (every change)
    sig_agents_changed = Signal(list)          # list[AgentView]: latest view of each agent changed since the last batch
    sig_fleet_progress = Signal(str, int, int)   # FleetAction value, built-in agents done (up, or stopped), all of them
    sig_fleet_done = Signal(str)               # FleetAction value: the built-in fleet is started / stopped
    sig_fleet_failed = Signal(str, str)        # FleetAction value, why the start or stop was refused or failed

    def __init__(self, core) -> None:
        super().__init__(core)
        self._batch: Coalescer[AgentView] = Coalescer(self.sig_agents_changed.emit, parent=self)
        # Whatever is emitted as one change (by the engine's event, or by a test) joins the batch.
        self.sig_agent_changed.connect(lambda view: self._batch.put(view.spec.id, view))
        ready = getattr(core, "sig_ready", None)       # EngineService's; connected first, so it runs first
        if ready is not None:
            ready.connect(self.flush)
        self._running: FleetAction | None = None
        self._stopped = False

    def agents(self) -> tuple[AgentView, ...]:
        """A snapshot of the fleet, for panels that start before the first event."""
        return self.engine.fleet.agents()

    def builtin_agents(self) -> tuple[AgentView, ...]:
        """The agents the console can stop and start (the launcher's); external ones are not."""
        return tuple(v for v in self.engine.fleet.agents() if v.spec.builtin and v.spec.enabled)

    @property
    def running(self) -> FleetAction | None:
        """The start or stop under way, if any."""
        return self._running

    @property
    def stopped(self) -> bool:
        """True after a stop, until a start succeeds."""
        return self._stopped

    def flush(self, *_args) -> None:
        """Hands the waiting batch over now (the engine turned ready; tests)."""
        self._batch.flush_now()

    def on_agent_changed(self, event: AgentChanged) -> None:
        self.sig_agent_changed.emit(event.view)
        if self._running is not None:
            self._emit_progress(self._running)

    # --- start and stop ------------------------------------------------------------------------
    def stop_fleet(self) -> asyncio.Task | None:
        """Stops every built-in agent process: sig_fleet_progress as each one is gone, then sig_fleet_done,
        or sig_fleet_failed(action, why)."""
        return self._act(FleetAction.STOP)

    def start_fleet(self) -> asyncio.Task | None:
        """Starts the built-in agents again: sig_fleet_progress as each one comes up, then sig_fleet_done,
        or sig_fleet_failed(action, why)."""
        return self._act(FleetAction.START)

    def _act(self, action: FleetAction) -> asyncio.Task | None:
        def refuse(why: str) -> None:
            self.sig_fleet_failed.emit(action.value, why)
        if not self.core.require_ready(f"the fleet cannot be {action.done}", refuse):
            return None
        if self._running is not None:
            refuse(f"the fleet is being {self._running.done} already; wait until it is done")
            return None
        self._running = action
        self._emit_progress(action)
        call = self.engine.fleet.start if action is FleetAction.START else self.engine.fleet.stop
        return self.core.spawn(self._run(action, call), f"fleet.{action.value}")

    async def _run(self, action: FleetAction, call) -> None:
        try:
            # A refusal (already stopped, a start under way) is the panel's to show; a failure is also a toast.
            outcome, _views = await self.core.attempt(lambda: call(self.core.operator),
                                                      context=f"the fleet could not be {action.done}",
                                                      refused=lambda why: self.sig_fleet_failed.emit(action.value, why),
                                                      announce_refusal=False)
        finally:
            self._running = None
        if outcome is Attempt.DONE:
            self._stopped = action is FleetAction.STOP
            self.flush()                     # the table shows the fleet as it now is when "done" arrives
            self.sig_fleet_done.emit(action.value)

    def _emit_progress(self, action: FleetAction) -> None:
        views = self.builtin_agents()
        if action is FleetAction.START:
            done = sum(v.state is AgentState.UP for v in views)
        else:
            done = sum(v.stopped for v in views)
        self.sig_fleet_progress.emit(action.value, done, len(views))
