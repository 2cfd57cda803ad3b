"""[review] in config/engine.toml: how long an answer may wait in the approval queue, by risk tier, before it is
overdue (its service-level time: it sorts first in the queue and raises one alert)."""
from __future__ import annotations

from dataclasses import dataclass

from ..types import RiskTier


@dataclass(frozen=True)
class ReviewSettings:
    sla_high_s: float = 1800.0       # 30 minutes for a high-risk answer
    sla_medium_s: float = 14400.0    # 4 hours
    sla_low_s: float = 86400.0       # a day
    sla_check_s: float = 30.0        # how often the engine looks for items that became overdue

    def sla_s(self, tier: RiskTier) -> float:
        return {RiskTier.HIGH: self.sla_high_s, RiskTier.MEDIUM: self.sla_medium_s, RiskTier.LOW: self.sla_low_s}[tier]
