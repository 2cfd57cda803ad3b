"""The human approval queue: high-risk answers (and unresolved medium-risk ones) wait for an operator.

    needs_review(answer) -> str           the escalation policy ("" = no review needed)
    ReviewQueue(store)                    enqueue / pending / items / get / item_for / decide, on the store's thread
    ReviewItem, CandidateSummary, ClaimSummary, ReviewStatus
    DecisionOutcome                       one item of a bulk decision (Engine.decide_many): decided or refused
    ShiftTally, ReviewerTally             each reviewer's progress over a shift (shift.py)
    Position, CascadeSummary, StageScoreSummary, AgentSummary
                                          what the item's payload says: competing positions, the cascade
                                          monitor's scores per stage, the agents involved (payload.py)
    APPROVE_REASONS, REJECT_REASONS       what an operator may give as the reason for a decision

Bad decisions (an unlisted reason, "other" without a note, an unknown or already decided item) raise
engine.errors.InputError with a message an operator can act on.
"""
from .payload import AgentSummary, CascadeSummary, Position, StageScoreSummary
from .policy import (APPROVE_REASONS, OTHER, REJECT_REASONS, allowed_reasons_text, check_decision, check_operator,
                     needs_review, reasons_for)
from .queue import (STATUS_FILTERS, CandidateSummary, ClaimSummary, DecisionOutcome, ReviewItem, ReviewQueue,
                    ReviewStatus)
from .shift import ReviewerTally, ShiftTally

__all__ = [
    "needs_review", "ReviewQueue", "ReviewItem", "ReviewStatus", "CandidateSummary", "ClaimSummary",
    "APPROVE_REASONS", "REJECT_REASONS", "OTHER", "STATUS_FILTERS", "reasons_for", "allowed_reasons_text",
    "check_decision", "check_operator", "DecisionOutcome", "Position", "CascadeSummary", "StageScoreSummary",
    "AgentSummary", "ShiftTally", "ReviewerTally",
]
