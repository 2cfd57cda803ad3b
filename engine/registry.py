"""Who is in the fleet right now: each agent's spec, URL, state, recent calls and standing in the
reputation book; who may take work at a given risk tier.

Besides the lifetime call counts (kept in the store), the registry keeps each agent's last
STATS_WINDOW calls in memory: their median latency and error rate, the time of its last usable reply
(from the engine's clock), and whether the slowness rule (SlowRule, from [limits] in engine.toml)
calls it slow. `AgentView.status` folds process state, standing and slowness into the one word the
Fleet panel shows.
"""
from __future__ import annotations

import dataclasses
import enum
import statistics
import time
from collections import deque
from dataclasses import dataclass
from typing import Callable, Mapping, Protocol, Sequence

from .config import ROLE_OPERATION, FleetConfig, LimitSettings
from .errors import InputError
from .types import AgentOutcome, AgentSpec, AgentState, CallStatus, CanaryState, RiskTier, Role

STATS_WINDOW = 50        # calls per agent behind its latency median and error rate


class TrustGate(Protocol):
    """The reputation book as the registry sees it (engine.reputation.keeper.ReputationKeeper)."""
    def eligible(self, agent_id: str, tier: RiskTier) -> tuple[bool, str]: ...
    def snapshot(self) -> Mapping[str, float]: ...
    def state_of(self, agent_id: str) -> str: ...


class FleetState(str, enum.Enum):
    """What the Fleet panel says of an agent, in one word (AgentView.status). The process comes first
    (an agent that is not running takes no work whatever its standing), then its standing in the
    reputation book, then how fast it answers."""
    DISABLED = "disabled"          # enabled = false in the fleet file
    STOPPED = "stopped"            # the operator stopped the built-in fleet
    DOWN = "down"
    STARTING = "starting"
    QUARANTINED = "quarantined"    # the reputation book gives it no work
    MISREADS = "misreads"          # a judge that misread its canaries (or could not answer them): not asked
    CHECKING = "checking"          # a judge answering its canaries: not asked until it has read them right
    PROBATION = "probation"        # low-risk work only, capped vote
    SLOW = "slow"                  # up, but SlowRule says it answers slowly
    UP = "up"


@dataclass(frozen=True)
class CallSample:
    """One call of an agent, as the statistics window keeps it."""
    status: CallStatus
    latency_ms: float


@dataclass(frozen=True)
class SlowRule:
    """When an up agent counts as slow: the median latency of its recent calls is above after_ms, or its
    last `timeouts` calls all timed out. A refused connection measures no latency and is left out."""
    after_ms: float = 2000.0
    timeouts: int = 3

    @classmethod
    def from_limits(cls, limits: LimitSettings) -> "SlowRule":
        return cls(after_ms=limits.slow_after_ms, timeouts=limits.slow_after_timeouts)

    def why_slow(self, calls: Sequence[CallSample]) -> str:
        """Why these calls (oldest first) make the agent slow, or "" if they do not."""
        last = tuple(calls)[-self.timeouts:]
        if len(last) == self.timeouts and all(c.status is CallStatus.TIMEOUT for c in last):
            return f"its last {self.timeouts} calls timed out" if self.timeouts > 1 else "its last call timed out"
        p50 = median_latency(calls)
        if p50 is not None and p50 > self.after_ms:
            return f"median reply {p50:,.0f} ms over its last {len(calls)} calls (slow above {self.after_ms:,.0f} ms)"
        return ""


def median_latency(calls: Sequence[CallSample]) -> float | None:
    """Median latency of the calls that got a reply or timed out (None when there is none)."""
    latencies = [c.latency_ms for c in calls if c.status is not CallStatus.DOWN]
    return statistics.median(latencies) if latencies else None


def error_rate(calls: Sequence[CallSample]) -> float | None:
    """Share of the calls without a usable reply (None before any call)."""
    return sum(c.status is not CallStatus.OK for c in calls) / len(calls) if calls else None


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
    # Over the last STATS_WINDOW calls (this run of the engine): None before the first call.
    latency_p50_ms: float | None = None
    error_rate: float | None = None
    recent_calls: int = 0                # calls in that window
    last_seen: float | None = None       # engine clock time of the last usable reply
    slow_reason: str = ""                # why SlowRule calls it slow; "" when it is not
    stopped: bool = False                # down because the operator stopped the built-in fleet
    at_work: int = 0                     # calls to it under way now
    at_work_since: float | None = None   # engine clock time the oldest of them went out
    canaries: CanaryState | None = None  # a judge: how it read its known pairs (None: no judge, or not yet asked)
    canary_detail: str = ""              # what it read, or what it got wrong

    @property
    def reads_meaning(self) -> bool:
        """A judge that may be asked now: it read its canaries right."""
        return self.spec.judge and self.canaries is CanaryState.PASSED

    def at_work_s(self, now: float) -> float | None:
        """How long it has been at work on its oldest call under way (None when it is idle)."""
        return None if self.at_work_since is None else max(0.0, now - self.at_work_since)

    @property
    def reliability(self) -> float | None:
        """Share of this agent's calls that returned a usable reply (None before any call)."""
        return self.ok_calls / self.calls if self.calls else None

    @property
    def status(self) -> FleetState:
        """The one word for the Fleet panel: process state, then standing (quarantined and probation win
        over up and slow), then slowness."""
        if self.state is AgentState.DISABLED:
            return FleetState.DISABLED
        if self.stopped:
            return FleetState.STOPPED
        if self.state is AgentState.DOWN:
            return FleetState.DOWN
        if self.state is AgentState.STARTING:
            return FleetState.STARTING
        if self.trust_state == "quarantined":
            return FleetState.QUARANTINED
        if self.canaries is CanaryState.FAILED:
            return FleetState.MISREADS
        if self.spec.judge and self.canaries in (None, CanaryState.PENDING):
            return FleetState.CHECKING
        if self.trust_state == "probation":
            return FleetState.PROBATION
        return FleetState.SLOW if self.slow_reason else FleetState.UP


def permitted(spec: AgentSpec) -> bool:
    """The engine calls an agent only for the operation its role does and its permissions list (an
    empty list is the role's own grant: the config loader never leaves it empty)."""
    return not spec.permissions or ROLE_OPERATION[spec.role] in spec.permissions


class AgentRegistry:
    def __init__(self, fleet: FleetConfig, trust: TrustGate | None = None, *,
                 clock: Callable[[], float] = time.time, slow: SlowRule = SlowRule()) -> None:
        self.trust = trust
        self.clock = clock
        self.slow = slow
        self._views: dict[str, AgentView] = {}
        self._windows: dict[str, deque[CallSample]] = {}
        self._under_way: dict[str, list[float]] = {}    # per agent: when each call under way went out
        for spec in fleet.agents:
            state = AgentState.DISABLED if not spec.enabled else (AgentState.STARTING if spec.builtin else AgentState.UP)
            self._views[spec.id] = AgentView(spec=spec, url=spec.url, state=state)
            self._windows[spec.id] = deque(maxlen=STATS_WINDOW)

    def all(self) -> tuple[AgentView, ...]:
        return tuple(self._views.values())

    def get(self, agent_id: str) -> AgentView:
        return self._views[agent_id]

    def require(self, agent_id: str) -> AgentView:
        """An operator's agent id: InputError naming the fleet's agents when there is no such agent."""
        try:
            return self._views[agent_id]
        except KeyError:
            known = ", ".join(self._views)
            raise InputError(f"no agent {agent_id!r} in the fleet (agents: {known})") from None

    def set_state(self, agent_id: str, state: AgentState, url: str = "", detail: str = "") -> AgentView:
        """What the launcher or a health check reports; any report of the process ends "stopped"."""
        view = self._views[agent_id]
        view = dataclasses.replace(view, state=state, url=url or view.url, detail=detail, stopped=False)
        self._views[agent_id] = view
        return view

    def mark_stopped(self, agent_id: str, detail: str) -> AgentView:
        """The operator stopped this built-in agent: down on purpose, its old URL gone (a restart gets a new port)."""
        view = dataclasses.replace(self._views[agent_id], state=AgentState.DOWN, url="", detail=detail, stopped=True)
        self._views[agent_id] = view
        return view

    def load_stats(self, stats: dict[str, dict[str, float]]) -> None:
        for agent_id, row in stats.items():
            if agent_id in self._views:
                self._views[agent_id] = dataclasses.replace(self._views[agent_id], calls=int(row["calls"]),
                                                            ok_calls=int(row["ok"]))

    def begin(self, agent_id: str) -> AgentView:
        """A call to this agent went out: it is at work until record() takes that call's outcome."""
        started = self._under_way.setdefault(agent_id, [])
        started.append(self.clock())
        view = dataclasses.replace(self._views[agent_id], at_work=len(started), at_work_since=started[0])
        self._views[agent_id] = view
        return view

    def record(self, outcome: AgentOutcome) -> AgentView:
        started = self._under_way.get(outcome.agent_id)
        if started:              # the oldest call ends (which one cannot matter: only their count and the oldest show)
            started.pop(0)
        view = dataclasses.replace(self._views[outcome.agent_id], at_work=len(started or ()),
                                   at_work_since=started[0] if started else None)
        ok = outcome.status is CallStatus.OK
        replied = ok or outcome.status is CallStatus.LATE     # a late reply is no use, but the agent is alive
        state = view.state
        if outcome.status is CallStatus.DOWN:
            state = AgentState.DOWN
        elif replied and state is AgentState.DOWN and not view.stopped:    # a reply from before the stop revives nothing
            state = AgentState.UP
        window = self._windows[outcome.agent_id]
        window.append(CallSample(outcome.status, outcome.latency_ms))
        recent = tuple(window)
        view = dataclasses.replace(view, state=state, last_status=outcome.status, last_latency_ms=outcome.latency_ms,
                                   calls=view.calls + 1, ok_calls=view.ok_calls + ok,
                                   detail=outcome.error if not (ok or view.stopped) else view.detail,
                                   latency_p50_ms=median_latency(recent), error_rate=error_rate(recent),
                                   recent_calls=len(recent), last_seen=self.clock() if replied else view.last_seen,
                                   slow_reason=self.slow.why_slow(recent))
        self._views[outcome.agent_id] = view
        return view

    def set_canaries(self, agent_id: str, state: CanaryState, detail: str) -> AgentView:
        """A judge's canaries: pending while it answers them, then passed or failed with what it read."""
        view = dataclasses.replace(self._views[agent_id], canaries=state, canary_detail=detail)
        self._views[agent_id] = view
        return view

    def set_trust(self, agent_id: str, score: float, state: str) -> AgentView:
        view = dataclasses.replace(self._views[agent_id], trust_score=score, trust_state=state)
        self._views[agent_id] = view
        return view

    def eligible(self, role: Role, tier: RiskTier = RiskTier.MEDIUM) -> list[AgentView]:
        """Enabled agents of a role that are up, that serve this tier (the fleet file's `tiers`) and that the
        reputation book lets work at it (never a quarantined one; one on probation only at low risk; at high
        risk only above the floor), the most trusted first, then the best call record."""
        views = [v for v in self._views.values() if v.spec.role is role and v.state is AgentState.UP and v.url
                 and permitted(v.spec) and tier in v.spec.tiers]
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
