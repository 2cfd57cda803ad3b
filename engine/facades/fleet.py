"""The fleet as an operator runs it: the agents as the registry sees them; stop and start the built-in fleet."""
from __future__ import annotations

import contextlib
from typing import Callable

from ..agents.launcher import FleetLauncher
from ..config import FleetConfig
from ..errors import FleetError, InputError
from ..events import AgentChanged, Audit, Emit
from ..registry import AgentRegistry, AgentView



class FleetFacade:
    def __init__(self, config: FleetConfig, registry: AgentRegistry, launcher: FleetLauncher | None, audit: Audit,
                 emit: Emit, clock: Callable[[], float]) -> None:
        self.config = config
        self._registry, self._launcher, self._audit, self._emit, self._clock = registry, launcher, audit, emit, clock
        self._stopped = False        # the operator stopped the built-in fleet (stop)
        self._busy = ""              # "starting" or "stopping" while start / stop runs

    def agents(self) -> tuple[AgentView, ...]:
        return self._registry.all()

    def agent(self, agent_id: str) -> AgentView:
        """InputError naming the fleet's agents when there is no such agent."""
        return self._registry.require(agent_id)

    @property
    def stopped(self) -> bool:
        """True after stop until start brings the built-in agents back."""
        return self._stopped

    async def stop(self, operator: str) -> tuple[AgentView, ...]:
        """Stops every built-in agent's process and marks it stopped (audited as fleet.stopped). External
        agents are not the launcher's and stay as they are. Questions still run meanwhile: no stopped agent
        is asked, and one under way gets no reply from them (each call becomes that agent's outcome)."""
        launcher, operator = self._launcher_for("stopped", operator)
        if self._stopped:
            raise InputError("the built-in fleet is already stopped")
        agents = [spec.id for spec in launcher.builtin_agents()]
        with self._action("stopping"):
            await launcher.stop(on_exit=lambda agent_id: self._show_stopped(agent_id, f"stopped by {operator}"))
            self._stopped = True
            await self._audit(operator, "fleet.stopped", {"agents": agents})
        return tuple(self._registry.get(a) for a in agents)

    async def start(self, operator: str) -> tuple[AgentView, ...]:
        """Starts the built-in agents again, as new processes on new ports (audited as fleet.started, with
        the agents that came up). Their states reach listeners as the launcher reports them."""
        launcher, operator = self._launcher_for("started", operator)
        if not self._stopped:
            raise InputError("the built-in fleet is already running")
        agents = [spec.id for spec in launcher.builtin_agents()]
        with self._action("starting"):
            try:
                urls = await launcher.start()
            except FleetError as exc:    # the launcher stopped what it had started
                for agent_id in agents:
                    self._show_stopped(agent_id, f"could not start: {exc}")
                raise
            self._stopped = False
            await self._audit(operator, "fleet.started", {"agents": agents, "up": sorted(urls)})
        return tuple(self._registry.get(a) for a in agents)

    def _launcher_for(self, done: str, operator: str) -> tuple[FleetLauncher, str]:
        """The launcher and the operator's name (spaces collapsed), or InputError saying why not now."""
        if self._launcher is None:
            raise InputError(f"this engine runs no built-in fleet, so it cannot be {done}")
        if self._busy:
            raise InputError(f"the built-in fleet is {self._busy} already; wait until it is done")
        name = " ".join(str(operator or "").split())
        if not name:
            raise InputError(f"the fleet cannot be {done} without the operator's name (it is audited)")
        return self._launcher, name

    @contextlib.contextmanager
    def _action(self, doing: str):
        self._busy = doing
        try:
            yield
        finally:
            self._busy = ""

    def _show_stopped(self, agent_id: str, detail: str) -> None:
        self._emit(AgentChanged(self._registry.mark_stopped(agent_id, detail), "", self._clock()))
