"""What the reputation book did, as typed frozen events: the book returns them, the engine audits and shows them.

Each class has a KIND (its audit event kind) so the store and the console can map types, not strings.
Scores are in (0, 1); `at` is the book's injected clock.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Union

from ..alerts.kinds import AlertKind
from ..types import Event, to_jsonable
from .evidence import EvidenceReason


@dataclass(frozen=True)
class ReputationChanged:
    """A change landed. confirmed_by names the committee members who witnessed it; it is empty when the
    engine's own check (or an operator, or decay) is the authority, and `why` says which."""
    KIND: ClassVar[str] = "reputation.changed"
    agent_id: str
    old_score: float
    new_score: float
    reasons: tuple[EvidenceReason, ...]
    trace_id: str
    at: float
    confirmed_by: tuple[str, ...]
    why: str


@dataclass(frozen=True)
class ChangeRejected:
    """A proposed change the committee did not confirm (kept for the audit: it may be slander)."""
    KIND: ClassVar[str] = "reputation.rejected"
    agent_id: str
    proposed_delta: float                  # in score units, as it would have landed
    reasons: tuple[EvidenceReason, ...]
    trace_id: str
    at: float
    why: str


@dataclass(frozen=True)
class AgentQuarantined:
    KIND: ClassVar[str] = "reputation.quarantined"
    agent_id: str
    score: float
    reason: str
    actor: str                             # the operator, or "reputation" when automatic
    trace_id: str
    at: float
    automatic: bool


@dataclass(frozen=True)
class AgentReleased:
    KIND: ClassVar[str] = "reputation.released"
    agent_id: str
    reason: str
    actor: str
    trace_id: str
    at: float


@dataclass(frozen=True)
class ProbationEnded:
    KIND: ClassVar[str] = "reputation.probation_ended"
    agent_id: str
    score: float
    trace_id: str
    at: float


@dataclass(frozen=True)
class BehaviourShift:
    KIND: ClassVar[str] = "reputation.behaviour_shift"
    agent_id: str
    metric: str                            # a BehaviourMetric value
    why: str                               # "latency 2400 ms against a usual 120 ms"
    trace_id: str
    at: float


@dataclass(frozen=True)
class AlertRaised:
    KIND: ClassVar[str] = "reputation.alert"
    kind: AlertKind
    agent_id: str
    message: str
    trace_id: str
    at: float


ReputationEvent = Union[ReputationChanged, ChangeRejected, AgentQuarantined, AgentReleased, ProbationEnded,
                        BehaviourShift, AlertRaised]
EVENT_TYPES: tuple[type, ...] = (ReputationChanged, ChangeRejected, AgentQuarantined, AgentReleased, ProbationEnded,
                                 BehaviourShift, AlertRaised)


def as_audit_event(event: ReputationEvent) -> Event:
    """The engine's generic audit Event for a typed one (payload: its fields as JSON types)."""
    return Event(kind=event.KIND, trace_id=event.trace_id, payload=to_jsonable(event), at=event.at)
