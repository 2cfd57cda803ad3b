"""Who is in the fleet right now: each agent's spec, URL, state, last call and standing in the
reputation book; who may take work at a given risk tier."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Mapping, Protocol

from .config import ROLE_OPERATION, FleetConfig
from .types import AgentOutcome, AgentSpec, AgentState, CallStatus, RiskTier, Role


class TrustGate(Protocol):
    """The reputation book as the registry sees it (engine.trust.TrustKeeper)."""
    def eligible(self, agent_id: str, tier: RiskTier) -> tuple[bool, str]: ...
    def snapshot(self) -> Mapping[str, float]: ...
    def state_of(self, agent_id: str) -> str: ...


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
    trust_score: float | None = None     # the reputation book's score (None before the book has it)
    trust_state: str = "active"          # active | probation | quarantined

    @property
    def reliability(self) -> float | None:
        """Share of this agent's calls that returned a usable reply (None before any call)."""
        return self.ok_calls / self.calls if self.calls else None


def permitted(spec: AgentSpec) -> bool:
    """The engine calls an agent only for the operation its role does and its permissions list (an
    empty list is the role's own grant: the config loader never leaves it empty)."""
    return not spec.permissions or ROLE_OPERATION[spec.role] in spec.permissions


class AgentRegistry:
    def __init__(self, fleet: FleetConfig, trust: TrustGate | None = None) -> None:
        self.trust = trust
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

    def set_trust(self, agent_id: str, score: float, state: str) -> AgentView:
        view = dataclasses.replace(self._views[agent_id], trust_score=score, trust_state=state)
        self._views[agent_id] = view
        return view

    def eligible(self, role: Role, tier: RiskTier = RiskTier.MEDIUM) -> list[AgentView]:
        """Enabled agents of a role that are up and that the reputation book lets work at this tier
        (never a quarantined one; one on probation only at low risk; at high risk only above the
        floor), the most trusted first, then the best call record."""
        views = [v for v in self._views.values() if v.spec.role is role and v.state is AgentState.UP and v.url
                 and permitted(v.spec)]
        scores: Mapping[str, float] = {}
        if self.trust is not None:
            views = [v for v in views if self.trust.eligible(v.spec.id, tier)[0]]
            scores = self.trust.snapshot()
        return sorted(views, key=lambda v: (-scores.get(v.spec.id, 1.0),
                                            -(v.reliability if v.reliability is not None else 1.0)))

    def on_probation(self, agent_id: str) -> bool:
        return self.trust is not None and self.trust.state_of(agent_id) == "probation"

    def ineligible(self, role: Role, tier: RiskTier) -> list[tuple[str, str]]:
        """(agent id, why) for agents of a role that are up but that the book keeps off this tier."""
        if self.trust is None:
            return []
        out = []
        for v in self._views.values():
            if v.spec.role is role and v.state is AgentState.UP and v.url and not permitted(v.spec):
                out.append((v.spec.id, f"its permissions do not include {ROLE_OPERATION[role]} "
                                       f"(fleet file: {', '.join(v.spec.permissions) or 'none'})"))
            elif v.spec.role is role and v.state is AgentState.UP and v.url:
                ok, why = self.trust.eligible(v.spec.id, tier)
                if not ok:
                    out.append((v.spec.id, why))
        return out
