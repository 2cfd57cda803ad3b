"""[review] in config/engine.toml: how long an answer may wait in the approval queue, by risk tier, before it is
overdue (its service-level time: it sorts first in the queue and raises one alert)."""
from __future__ import annotations

from dataclasses import dataclass

from ..types import RiskTier

LONGEST_SHIFT_H = 24 * 31       # a shift to count reviewers over: more than 0 hours, at most a month


@dataclass(frozen=True)
class ReviewSettings:
    sla_high_s: float = 1800.0       # 30 minutes for a high-risk answer
    sla_medium_s: float = 14400.0    # 4 hours
    sla_low_s: float = 86400.0       # a day
    sla_check_s: float = 30.0        # how often the engine looks for items that became overdue
    # Approvals by different operators a high-risk answer needs (a rejection by one ends it); 0: one on a desk's
    # own file, two on a team store. Nobody approves an answer to a question they asked.
    quorum_high: int = 0
    shift_h: float = 8.0             # the Approvals panel's per-reviewer tally covers the last shift_h hours

    def quorum(self, tier: RiskTier, team: bool) -> int:
        if tier is not RiskTier.HIGH:
            return 1
        return self.quorum_high or (2 if team else 1)

    def sla_s(self, tier: RiskTier) -> float:
        return {RiskTier.HIGH: self.sla_high_s, RiskTier.MEDIUM: self.sla_medium_s, RiskTier.LOW: self.sla_low_s}[tier]
