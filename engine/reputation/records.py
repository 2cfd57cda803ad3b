"""An agent's standing as the book shows it: state, score and the last change with its reason."""
from __future__ import annotations

import enum
from dataclasses import dataclass

from ..types import Role


class StandingState(str, enum.Enum):
    ACTIVE = "active"
    PROBATION = "probation"        # released from quarantine: low-risk work, a capped vote, until it earns its way back
    QUARANTINED = "quarantined"    # no work at all


@dataclass(frozen=True)
class AgentStanding:
    agent_id: str
    role: Role
    score: float
    state: StandingState
    first_seen: float              # seniority: the committee is drawn from the longest-standing agents
    last_change_at: float
    last_change_why: str
    good_streak: int               # good questions in a row (probation ends on probation_questions of them)


ROW_KEYS: tuple[str, ...] = ("agent_id", "role", "log_odds", "state", "first_seen", "last_change_at",
                             "last_change_why", "good_streak")
