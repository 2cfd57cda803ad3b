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
    from .cascade.types import CascadeOutcome, StageScore
    from .gateway.report import GatewayFlag
    from .registry import AgentView
    from .review import ReviewItem
    from .trust import TrustUpdate


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


EngineEvent = Any   # one of the classes above, a reputation event, or a generic types.Event


@dataclass(frozen=True)
class GatewayFlagged:
    """The gateway blocked, sanitised or escalated messages of one question (or its question itself)."""
    flags: tuple["GatewayFlag", ...]
    trace_id: str
    at: float
