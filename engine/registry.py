"""Who is in the fleet right now: each agent's spec, URL, state and last call."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from .config import FleetConfig
from .types import AgentOutcome, AgentSpec, AgentState, CallStatus, Role


@dataclass(frozen=True)
class AgentView:
    spec: AgentSpec
    url: str
    state: AgentState
    detail: str = ""
    last_status: CallStatus | None = None
    last_latency_ms: float | None = None
    calls: int = 0
    ok_calls: int = 0

    @property
    def reliability(self) -> float | None:
        """Share of this agent's calls that returned a usable reply (None before any call)."""
        return self.ok_calls / self.calls if self.calls else None


class AgentRegistry:
    def __init__(self, fleet: FleetConfig) -> None:
        self._views: dict[str, AgentView] = {}
        for spec in fleet.agents:
            state = AgentState.DISABLED if not spec.enabled else (AgentState.STARTING if spec.builtin else AgentState.UP)
            self._views[spec.id] = AgentView(spec=spec, url=spec.url, state=state)

    def all(self) -> tuple[AgentView, ...]:
        return tuple(self._views.values())

    def get(self, agent_id: str) -> AgentView:
        return self._views[agent_id]

    def set_state(self, agent_id: str, state: AgentState, url: str = "", detail: str = "") -> AgentView:
        view = self._views[agent_id]
        view = dataclasses.replace(view, state=state, url=url or view.url, detail=detail)
        self._views[agent_id] = view
        return view

    def load_stats(self, stats: dict[str, dict[str, float]]) -> None:
        for agent_id, row in stats.items():
            if agent_id in self._views:
                self._views[agent_id] = dataclasses.replace(self._views[agent_id], calls=int(row["calls"]),
                                                            ok_calls=int(row["ok"]))

    def record(self, outcome: AgentOutcome) -> AgentView:
        view = self._views[outcome.agent_id]
        ok = outcome.status is CallStatus.OK
        state = view.state
        if outcome.status is CallStatus.DOWN:
            state = AgentState.DOWN
        elif ok and state is AgentState.DOWN:
            state = AgentState.UP
        view = dataclasses.replace(view, state=state, last_status=outcome.status, last_latency_ms=outcome.latency_ms,
                                   calls=view.calls + 1, ok_calls=view.ok_calls + ok,
                                   detail=outcome.error if not ok else view.detail)
        self._views[outcome.agent_id] = view
        return view

    def eligible(self, role: Role) -> list[AgentView]:
        """Enabled agents of a role that are up, best record first (never a down or disabled one)."""
        views = [v for v in self._views.values() if v.spec.role is role and v.state is AgentState.UP and v.url]
        return sorted(views, key=lambda v: -(v.reliability if v.reliability is not None else 1.0))
