"""What the engine tells its listeners (the console, the CLI), as typed frozen events.

A listener maps each type to what it does in one table (console.service), instead of comparing
strings. The pipeline's finer trace events (AgentCalled, RetrievalMerged, ...) are for the telemetry
and for tests, not for panels.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Awaitable, Callable

from .types import PassageFlag, RiskTier

Emit = Callable[[object], None]                        # hands one event to every listener (Engine.subscribe)
Audit = Callable[[str, str, dict], Awaitable[None]]    # (actor, event type, payload): an audit event in no trace

if TYPE_CHECKING:   # only for annotations: the registry and the review queue import the engine's types
    from .alerts.row import AlertRow
    from .alerts.silences import Silence
    from .cascade.types import CascadeOutcome, StageScore
    from .stages.model import StageKind
    from .gateway.report import GatewayFlag
    from .ingest.index import IndexProgress
    from .registry import AgentView
    from .review import ReviewItem
    from .reputation.keeper import ReputationUpdate
    from .gateway.tools import ToolStatus
    from .types import AgentOutcome, ChallengeOutcome, Role
    from .answer import Answer


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
class StoreChanged:
    """Another desk (or a command) committed to the store this engine shares: these tables changed ("*": which
    is not known, read everything again). Coalesced: at most one every StoreFeed.quiet_s."""
    tables: frozenset[str]
    at: float

    def touches(self, *tables: str) -> bool:
        return "*" in self.tables or any(t in self.tables for t in tables)


@dataclass(frozen=True)
class StoreLink:
    """The team store's server went away (online False: this desk shows what it has, and every write is refused
    with a clear error until it is back), or was reached again (online True; each view reads it again)."""
    online: bool
    why: str
    at: float


@dataclass(frozen=True)
class TrustUpdated:
    """The reputation book moved (a decided question, an operator's quarantine, release or decision):
    its typed events, the new points of the score history and the new alerts."""
    update: "ReputationUpdate"
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


EngineEvent = Any   # one of the classes in this module, or a reputation event


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


# --- the pipeline's trace events: one question's finer steps ---------------------------------------
@dataclass(frozen=True)
class AgentsKeptOff:
    """Agents of a role that are up but kept off this tier (by the reputation book or their permissions),
    each with why."""
    role: "Role"
    agents: tuple[tuple[str, str], ...]     # (agent id, why)
    trace_id: str
    at: float


@dataclass(frozen=True)
class AgentCalled:
    """One agent's call of a question ended, or passed the question's deadline (status LATE)."""
    outcome: "AgentOutcome"
    trace_id: str
    at: float


@dataclass(frozen=True)
class RetrievalMerged:
    """Secure retrieval merged the retrievers' passages for one (sub-)question."""
    query: str
    context: tuple[str, ...]                            # passage ids handed on
    excluded: tuple[tuple[str, tuple[PassageFlag, ...]], ...]   # (passage id, its flags)
    suspects: tuple[tuple[str, str], ...]               # (agent id, reason)
    fallback: bool                                      # no passage had a quorum: single-agent ones were used
    trace_id: str
    at: float


@dataclass(frozen=True)
class GeneratorChallenged:
    """A generator was asked to show the evidence for a doubtful claim (generation/challenge.py)."""
    agent: str
    outcome: "ChallengeOutcome"
    detail: str                  # the generator's own words: untrusted
    trace_id: str
    at: float


@dataclass(frozen=True)
class ToolCalled:
    """A generator's tool call went through the tool broker."""
    agent: str
    tool: str                    # as the agent asked for it: untrusted
    status: "ToolStatus"
    why: str
    trace_id: str
    at: float


@dataclass(frozen=True)
class AnswerDecided:
    """The pipeline decided a question's answer (before the engine records it: QuestionAnswered comes last)."""
    answer: "Answer"
    trace_id: str
    at: float


@dataclass(frozen=True)
class QuestionDecided:
    """A decided answer on its way through the engine's decided observers (engine/decided.py), in order; each
    hands the next what it made of it. Not sent to listeners: they hear the events the last observer sends."""
    answer: "Answer"
    review_item: "ReviewItem | None" = None       # the approval-queue item recorded with it, if it needs review
    reputation: "ReputationUpdate | None" = None  # how the reputation book moved
    alerts: tuple["AlertRow", ...] = ()           # the answer's own alerts, recorded
