"""What the pipeline tells the book about one agent on one question: reasons, and one aggregated observation."""
from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Iterable

from ..types import RiskTier, Role


class EvidenceReason(str, enum.Enum):
    # retrieval
    ADOPTED = "adopted"                              # its passage made it into the safe context
    KEPT_OUT_DISPUTED = "kept_out_disputed"
    KEPT_OUT_TAMPERED = "kept_out_tampered"
    KEPT_OUT_ECHO = "kept_out_echo"
    KEPT_OUT_OUTLIER = "kept_out_outlier"
    REPORTED_SUSPECT = "reported_suspect"
    # generation
    CLAIMS_SUPPORTED = "claims_supported"
    ANSWER_CHOSEN = "answer_chosen"
    CLAIM_REFUTED = "claim_refuted"
    CLAIM_NOT_ENTAILED = "claim_not_entailed"        # its words are in the evidence, its meaning is not
    ANSWER_OFF_TOPIC = "answer_off_topic"            # its answer does not answer the question
    CHALLENGE_FAILED = "challenge_failed"
    CONTRADICTED_BY_CHOSEN = "contradicted_by_chosen"
    CITED_UNKNOWN = "cited_unknown"                  # cited a chunk id that is not in the context it was given
    CASCADE_SOURCE = "cascade_source"                # the cascade monitor traced a fired cascade to its answer
    # any role
    CARRIED_INJECTION = "carried_injection"          # the gateway blocked a message this agent carried
    # verification
    VOTE_AGREED = "vote_agreed"
    VOTE_OUTVOTED = "vote_outvoted"
    # operator
    OPERATOR_APPROVED = "operator_approved"
    OPERATOR_REJECTED = "operator_rejected"
    # behaviour
    BEHAVIOUR_SHIFT = "behaviour_shift"              # the engine measured a sudden change in how it behaves


GOOD_REASONS: frozenset[EvidenceReason] = frozenset({
    EvidenceReason.ADOPTED, EvidenceReason.CLAIMS_SUPPORTED, EvidenceReason.ANSWER_CHOSEN,
    EvidenceReason.VOTE_AGREED, EvidenceReason.OPERATOR_APPROVED,
})
BAD_REASONS: frozenset[EvidenceReason] = frozenset(EvidenceReason) - GOOD_REASONS


def is_good(reason: EvidenceReason) -> bool:
    return reason in GOOD_REASONS


@dataclass(frozen=True)
class Observation:
    """All evidence about one agent on one question, aggregated: any bad evidence makes it a bad question.

    engine_checked: the engine's own deterministic check established it (its verifier refuted the claim, an
    operator decided), so it lands without a committee. Otherwise it rests on peers' outputs and lands only if
    a majority of the committee are among `witnesses` (agents whose own outputs on this question agree with it).
    """
    agent_id: str
    role: Role
    trace_id: str
    tier: RiskTier
    good: int = 0
    bad: int = 0
    reasons: tuple[EvidenceReason, ...] = ()
    engine_checked: bool = False
    witnesses: frozenset[str] = field(default_factory=frozenset)

    def __post_init__(self) -> None:
        if self.good < 0 or self.bad < 0:
            raise ValueError(f"evidence counts cannot be negative (good={self.good}, bad={self.bad})")

    @classmethod
    def from_reasons(cls, agent_id: str, role: Role, trace_id: str, tier: RiskTier,
                     reasons: Iterable[EvidenceReason], engine_checked: bool = False,
                     witnesses: Iterable[str] = ()) -> "Observation":
        """Counts good and bad from the reasons themselves (one piece of evidence per reason)."""
        reasons = tuple(reasons)
        good = sum(1 for r in reasons if is_good(r))
        return cls(agent_id, role, trace_id, tier, good, len(reasons) - good, reasons, engine_checked,
                   frozenset(witnesses))

    @property
    def is_bad(self) -> bool:
        return self.bad > 0

    @property
    def has_evidence(self) -> bool:
        return self.good > 0 or self.bad > 0
