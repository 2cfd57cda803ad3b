"""What the engine tells its listeners (the console, the CLI), as typed frozen events.

A listener maps each type to what it does in one table (console.service), instead of comparing
strings. The pipeline's finer trace events (`agent.call`, `retrieval.merged`, ...) stay generic
`types.Event`s: they are for the audit and for tests, not for panels.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .types import RiskTier

if TYPE_CHECKING:   # only for annotations: the registry and the review queue import the engine's types
    from .alerts.row import AlertRow
    from .alerts.silences import Silence
    from .cascade.types import CascadeOutcome, StageScore
    from .stages.model import StageKind
    from .gateway.report import GatewayFlag
    from .ingest.index import IndexProgress
    from .registry import AgentView
    from .review import ReviewItem
    from .trust import TrustUpdate
    from .types import Answer


@dataclass(frozen=True)
class AgentChanged:
    """An agent's state, call record or standing in the reputation book changed."""
    view: "AgentView"
    trace_id: str
    at: float


@dataclass(frozen=True)
class EngineReady:
    agents_up: int
    at: float


@dataclass(frozen=True)
class QuestionReceived:
    trace_id: str
    question: str                # as the engine screened it
    tier: RiskTier
    tier_reason: str             # which rule, default or operator choice set the tier
    at: float


@dataclass(frozen=True)
class ReviewEnqueued:
    item: "ReviewItem"
    trace_id: str
    at: float


@dataclass(frozen=True)
class TrustUpdated:
    """The reputation book moved (a decided question, an operator's quarantine, release or decision):
    its typed events, the new points of the score history and the new alerts."""
    update: "TrustUpdate"
    trace_id: str
    at: float


@dataclass(frozen=True)
class CascadeScored:
    """The cascade monitor scored one stage boundary of a question (the Cascade panel plots these)."""
    score: "StageScore"
    trace_id: str
    at: float


@dataclass(frozen=True)
class CascadeResolved:
    """The cascade monitor's outcome for a whole question: fired or not, the type, the mitigation."""
    outcome: "CascadeOutcome"
    trace_id: str
    question: str
    at: float


@dataclass(frozen=True)
class StageProgressed:
    """A stage of a question started (kind None: a step says what it was only when it returns) or finished:
    live progress for the console. A cascade mitigation's re-run starts an earlier index again (attempt + 1)."""
    trace_id: str
    index: int
    total: int                   # stages planned for the question
    attempt: int
    kind: "StageKind | None"
    elapsed_ms: float            # 0 while it runs
    confidence: float | None     # the stage's own confidence, once finished
    at: float


@dataclass(frozen=True)
class AlertsRaised:
    """New alerts, every one recorded: the reputation book's and the alert rules' (engine.alerts). Each
    row says which active silence mutes it now (silenced_by): a muted alert is listed but does not notify."""
    alerts: tuple["AlertRow", ...]
    trace_id: str                # the question that raised them; "" for an operator's action
    at: float


@dataclass(frozen=True)
class AlertChanged:
    """An operator acknowledged an alert (with an optional comment): the row as it now is."""
    alert: "AlertRow"
    at: float


@dataclass(frozen=True)
class SilencesChanged:
    """A silence was added or ended early: the silences active now. Expiry sends no event: each silence
    says when it ends (ends_at), and a listener re-reads its counts then."""
    silences: tuple["Silence", ...]
    at: float


@dataclass(frozen=True)
class CorpusIndexProgress:
    """The corpus index is being built or updated (at start, or again at an operator's request): how far it is,
    a few times a second at most, and always how it ended (done, with when it was indexed, or failed and why)."""
    progress: "IndexProgress"
    at: float


EngineEvent = Any   # one of the classes above, a reputation event, or a generic types.Event


@dataclass(frozen=True)
class GatewayFlagged:
    """The gateway blocked, sanitised or escalated messages of one question (or its question itself)."""
    flags: tuple["GatewayFlag", ...]
    trace_id: str
    at: float


@dataclass(frozen=True)
class DemoTrafficChanged:
    """Demo traffic (engine.demo) started, stopped, changed rate, or its counts moved (at most once a second
    while it runs): asked, answered, failed, skipped, in flight, the rate and whether it runs."""
    stats: Any                   # engine.demo.DemoStats
    at: float


@dataclass(frozen=True)
class QuestionAnswered:
    """Engine.ask is done with a question: its answer recorded and every other event about it sent (the
    last event of a question; engine.telemetry ends its trace here)."""
    answer: "Answer"
    trace_id: str
    at: float


@dataclass(frozen=True)
class QuestionFailed:
    """Engine.ask raised for a question (blocked by the gateway, unusable input, the store failing,
    cancelled): the last event of that question. error: the exception's type name; detail: its message,
    which may quote the question (for people, not for exports)."""
    trace_id: str
    error: str
    detail: str
    asked_at: float
    at: float
