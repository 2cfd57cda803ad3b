"""What the gateway saw during one question: every message of the trace (with its parent) and each
decision that stopped or changed a message. Kept in the answer and in the store (trace_events,
gateway_decisions), so `main.py trace` and the console's trace view can replay it."""
from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any, Mapping

from ..types import TrustLevel
from .decision import Action, Screening

EXCERPT_CHARS = 240


def excerpt(text: str, limit: int = EXCERPT_CHARS) -> str:
    """The start and the end of a long message: planted text often hides at the end of a real passage."""
    if len(text) <= limit:
        return text
    half = (limit - 3) // 2
    return f"{text[:half]} … {text[-half:]}"


class TraceKind(str, enum.Enum):
    """One line of a trace. The message kinds of envelope.MessageKind, plus what the engine did."""
    MESSAGE = "message"          # an envelope passed between two parties
    SCAN = "scan"                # the gateway screened a message and did not let it pass as it was
    TOOL_CALL = "tool_call"
    MEMORY_READ = "memory_read"
    MEMORY_WRITE = "memory_write"
    MODEL_OUTPUT = "model_output"
    DECISION = "decision"        # the engine's verdict, a halt, a hold for review


@dataclass(frozen=True)
class TraceEvent:
    trace_id: str                # this message's own id
    parent_trace_id: str         # the question's (or parent message's) id; "" for a root
    kind: TraceKind
    source: str
    target: str
    trust: str                   # TrustLevel value, "" when not a message
    summary: str                 # one line for people, plain text
    at: float
    data: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class GatewayFlag:
    """A message the gateway blocked, sanitised or escalated, with the evidence and its carrier."""
    trace_id: str
    parent_trace_id: str
    source: str                  # the agent (or operator) that carried it
    target: str
    kind: str                    # MessageKind value
    trust: TrustLevel
    channel: str
    action: Action
    score: float
    evidence: tuple[str, ...]
    excerpt: str                 # the start of the message, as plain text
    at: float
    item: str = ""               # what it was: a chunk id, a memory key, a tool name
    # A passage whose text is the indexed corpus's own under its id: the operator's document says it, and the
    # retriever that returned it only carried it faithfully (still blocked; no carrier is blamed for it).
    from_corpus: bool = False

    @classmethod
    def of(cls, screening: Screening, at: float, from_corpus: bool = False) -> "GatewayFlag":
        env = screening.envelope
        return cls(env.trace_id, env.parent_trace_id, env.source, env.target, env.kind.value, env.trust,
                   env.channel.value, screening.action, screening.score, screening.evidence,
                   excerpt(env.content), at, str(env.meta.get("item") or env.meta.get("key") or ""), from_corpus)


@dataclass(frozen=True)
class GatewayReport:
    flags: tuple[GatewayFlag, ...] = ()
    events: tuple[TraceEvent, ...] = ()
    scanned: int = 0             # messages screened
    scan_ms: float = 0.0
    blame_carrier: bool = True   # whether a blocked message counts against the agent that carried it

    def by_action(self, action: Action) -> tuple[GatewayFlag, ...]:
        return tuple(f for f in self.flags if f.action is action)

    @property
    def blocked(self) -> tuple[GatewayFlag, ...]:
        return self.by_action(Action.BLOCK)

    @property
    def escalated(self) -> tuple[GatewayFlag, ...]:
        return self.by_action(Action.ESCALATE)
