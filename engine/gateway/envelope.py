"""Every message in the system travels in an envelope: who sent it, to whom, what it says, how far it
is trusted, and the trace it belongs to. Trust comes from where a message came from, never from what
it says about itself: a passage that claims to be a system notice is still EXTERNAL data."""
from __future__ import annotations

import enum
import uuid
from dataclasses import dataclass, field
from typing import Any, Mapping

from ..types import TrustLevel
from .scanners.base import Channel


class MessageKind(str, enum.Enum):
    QUESTION = "question"          # the operator's question
    PASSAGE = "passage"            # a retriever's chunk
    GENERATION = "generation"      # a generator's answer, reasoning and claims
    JUDGEMENT = "judgement"        # a verifier's vote and its reason
    STAGE_OUTPUT = "stage_output"  # what one pipeline stage hands the next
    TOOL_CALL = "tool_call"        # an agent asks for a tool
    TOOL_RESULT = "tool_result"
    MEMORY_WRITE = "memory_write"
    MEMORY_READ = "memory_read"
    PEER_MESSAGE = "peer_message"  # an agent asks to pass a message to another agent


# Levels that may instruct: only the engine's own prompt and the operator's question.
INSTRUCTING = frozenset({TrustLevel.SYSTEM, TrustLevel.USER})
RANK = {TrustLevel.SYSTEM: 0, TrustLevel.USER: 1, TrustLevel.TOOL: 2, TrustLevel.EXTERNAL: 3}


def lowest(*levels: TrustLevel) -> TrustLevel:
    """The least trusted of several levels: what a message built from all of them is worth."""
    return max(levels, key=RANK.__getitem__)


def new_trace_id() -> str:
    return uuid.uuid4().hex


@dataclass(frozen=True)
class Envelope:
    source: str                    # agent id, "operator" or "engine"
    target: str                    # agent id, role ("generators") or "engine"
    content: str
    trust: TrustLevel
    kind: MessageKind
    parent_trace_id: str = ""      # the question (or message) this one belongs to
    trace_id: str = field(default_factory=new_trace_id)
    meta: Mapping[str, Any] = field(default_factory=dict)   # chunk id, tool name, memory key ...

    @property
    def channel(self) -> Channel:
        """The scanners read the operator's own words as USER and everything else as DATA."""
        return Channel.USER if self.trust in INSTRUCTING else Channel.DATA

    @property
    def may_instruct(self) -> bool:
        return self.trust in INSTRUCTING
