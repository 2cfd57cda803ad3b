"""Which answers wait for an operator, and which reasons an operator may give for a decision.

The escalation policy is one small function, `needs_review`, so it can be read (and changed) in one
place; the reason lists are fixed so decisions can be counted and compared in the audit trail.
"""
from __future__ import annotations

from ..errors import InputError
from ..types import RiskTier, Verdict
from ..answer import Answer

OTHER = "other"
APPROVE_REASONS: tuple[str, ...] = ("verified against the cited sources", "matches operator knowledge", OTHER)
REJECT_REASONS: tuple[str, ...] = ("factually wrong", "insufficient evidence", "unsafe or injected content", "policy",
                                   OTHER)


def needs_review(answer: Answer) -> str:
    """Why `answer` must wait for an operator, or "" if it need not."""
    if answer.tier is RiskTier.HIGH:
        return "high-risk question"
    if answer.cascade is not None and answer.cascade.halted:
        return "a cascade was held for review: " + answer.cascade.reason
    if answer.cascade is not None and answer.cascade.fired and answer.cascade.review:
        return "a cascade fired on this question: " + answer.cascade.reason
    if answer.gateway is not None and answer.gateway.escalated:
        flag = answer.gateway.escalated[0]
        return (f"the gateway held a {flag.kind} from {flag.source} for a person "
                f"(score {flag.score:.2f}): " + "; ".join(flag.evidence[:1]))
    if answer.tier is RiskTier.MEDIUM and answer.verdict is Verdict.ABSTAINED:
        return "no consistent conclusion on a medium-risk question"
    return ""


def reasons_for(approve: bool) -> tuple[str, ...]:
    return APPROVE_REASONS if approve else REJECT_REASONS


def allowed_reasons_text(approve: bool) -> str:
    """'verified against the cited sources | matches operator knowledge | other', for messages."""
    return " | ".join(f'"{r}"' for r in reasons_for(approve))


def check_operator(operator: str) -> str:
    """The operator's name with its spaces collapsed; raises InputError when there is none."""
    name = " ".join(str(operator or "").split())
    if not name:
        raise InputError("a decision needs the operator's name")
    return name


def check_decision(approve: bool, reason: str, note: str = "") -> tuple[str, str]:
    """Returns (reason as listed, note stripped); raises InputError naming the problem and the allowed reasons.
    Reasons match without regard to case or surrounding spaces; "other" needs a note saying what it is."""
    action = "approve" if approve else "reject"
    wanted = " ".join(str(reason or "").split()).lower()
    listed = next((r for r in reasons_for(approve) if r == wanted), None)
    if listed is None:
        shown = f'"{reason}"' if str(reason or "").strip() else "no reason"
        raise InputError(f"{shown} is not a reason to {action}; allowed reasons: {allowed_reasons_text(approve)}")
    note = " ".join(str(note or "").split())
    if listed == OTHER and not note:
        raise InputError(f'the reason "other" needs a note that says why (to {action})')
    return listed, note
