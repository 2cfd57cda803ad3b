"""One question as its stages see it: what was asked, at which tier and policy, by when, and its gateway
session."""
from __future__ import annotations

import asyncio
from dataclasses import dataclass

from ..config import TierPolicy
from ..gateway.session import GatewaySession
from ..types import AgentOutcome, AgentSpec, CallStatus, RiskTier


@dataclass(frozen=True)
class Deadline:
    """A question's deadline on the loop's clock: what is in by then decides it."""
    seconds: float
    at: float

    @classmethod
    def start(cls, seconds: float) -> "Deadline | None":
        return cls(seconds, asyncio.get_running_loop().time() + seconds) if seconds > 0 else None

    def remaining(self) -> float:
        return max(0.0, self.at - asyncio.get_running_loop().time())

    def late_outcome(self, spec: AgentSpec, asked_at: float) -> AgentOutcome:
        """The call asked at `asked_at` (loop clock) as the answer lists it: late, with the time it was given."""
        waited = asyncio.get_running_loop().time() - asked_at
        return AgentOutcome(spec.id, spec.role, CallStatus.LATE, round(waited * 1000, 1),
                            f"no reply by the question's {self.seconds:g} s deadline: decided without it")


@dataclass(frozen=True)
class Asked:
    question: str                # as the engine screened it
    trace_id: str
    tier: RiskTier
    policy: TierPolicy           # the tier's: how many agents, which retrieval mode, the deadline
    deadline: Deadline | None    # None: only the agents' own timeouts
    session: GatewaySession      # screens and traces every message of the question
