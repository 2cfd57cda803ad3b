"""The Answer: what one question came to, with its trajectory, what the cascade monitor and the gateway
saw, and who took part. It sits above the stages, the cascade monitor and the gateway, whose results it
carries; the vocabulary it is made of is engine.types."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

from .cascade.types import CascadeOutcome
from .gateway.report import GatewayReport
from .stages.model import StageResult
from .types import (AgentOutcome, CallStatus, Candidate, Citation, ContextChunk, JudgeNote, Participation, RiskTier, Role,
                    Suspect, Verdict)


@dataclass(frozen=True)
class Answer:
    trace_id: str
    question: str
    tier: RiskTier
    verdict: Verdict
    answer: str
    reason: str
    citations: tuple[Citation, ...]
    agents: tuple[AgentOutcome, ...]
    context: tuple[ContextChunk, ...]
    candidates: tuple[Candidate, ...]
    timings_ms: Mapping[str, float]
    asked_at: float
    excluded: tuple[ContextChunk, ...] = ()          # passages secure retrieval kept out, with reasons
    suspects: tuple[Suspect, ...] = ()               # retrievers reported, for the console and the reputation book
    tier_reason: str = ""                            # which rule, default or operator choice set the tier
    stages: tuple[StageResult, ...] = ()             # the trajectory: formulate, retrieve, reason, tool, synthesize
    cascade: CascadeOutcome | None = None            # what the cascade monitor saw and did (None: not watched)
    gateway: GatewayReport | None = None             # what the thought-virus gateway screened, blocked, escalated
    participation: Participation | None = None       # how many agents took part, and whether a quorum held
    judge: JudgeNote = JudgeNote()                   # whether judges read its meaning ("meaning not read" if not)

    def agents_ok(self, role: Role) -> int:
        return sum(1 for a in self.agents if a.role is role and a.status is CallStatus.OK)
