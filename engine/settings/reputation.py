"""What the reputation book trades off, in one frozen dataclass (each default says what it buys and costs)."""
from __future__ import annotations

import math
from dataclasses import dataclass, fields

from ..types import RiskTier

DAY_S = 86400.0


@dataclass(frozen=True)
class ReputationSettings:
    # The scale (scores; the book works on their log-odds).
    start: float = 0.75               # new agents, and where decay leads: configured, so trusted; yet below a record
    score_cap: float = 0.95           # honest records cannot bank unbounded credit, so a sleeper that turns falls fast
    score_min: float = 0.02           # liars cannot dig so deep that a repaired agent never climbs back
    # Evidence: one step per question (the down/up ratio ~8 makes 11% bad questions the break-even point).
    up_step: float = 0.0625           # log-odds a good question adds: more forgives faster, and hides occasional liars
    down_step: float = 0.5            # log-odds a bad question takes: more catches liars sooner, hurts false flags more
    low_tier_factor: float = 0.5      # low-risk questions get a light check, so their evidence counts less
    medium_tier_factor: float = 1.0
    high_tier_factor: float = 1.5     # high-risk questions get full consensus, so their evidence counts most
    # Committee that confirms evidence resting on peers' outputs.
    committee_size: int = 5           # up to this many peers (at least 3 to form): five resist two colluders wherever
                                      # they sit; fewer peers make a smaller committee
    committee_floor: float = 0.5      # a member's least score: higher keeps doubtful agents out, forms committees less
    # Decay toward `start`.
    decay_half_life_s: float = 7 * DAY_S   # shorter: trust must be kept up sooner; longer: old lies linger longer
    decay_min_change: float = 0.01    # decay() holds back smaller moves until they add up, so the audit is not flooded
    # States.
    quarantine_floor: float = 0.2     # below it, automatic quarantine: higher catches liars sooner, risks honest agents
    probation_start: float = 0.45     # a released agent restarts at least here: a release does not erase the doubt
    probation_weight: float = 0.5     # the most a probation agent's vote weighs
    probation_questions: int = 20     # good questions in a row to leave probation: more is safer, slower to restore
    high_tier_floor: float = 0.6      # score needed for high-risk work: higher is safer, leaves fewer agents eligible
    score_drop_alert: float = 0.15    # a drop larger than this within one question alerts the operator
    # Behaviour baseline (latency, reply size, error rate, agreement against the agent's own history).
    baseline_size: int = 50           # samples kept: longer is steadier, absorbs a lasting change later
    baseline_window: int = 10         # recent samples compared against the rest: shorter notices sooner, noisier
    baseline_min: int = 20            # history samples of a kind (besides the window) before that kind is judged
    shift_sigmas: float = 4.0         # robust standard deviations that make a shift: lower notices more, cries wolf
    shift_rate: float = 0.4           # absolute move of error or agreement rate that makes a shift
    shift_spread_floor: float = 0.05  # least robust sd of log latency/size (about 5%): a steady agent is not
                                      # flagged for a few ms
    behaviour_step_share: float = 0.5 # a shift takes this share of down_step: it is a hint, not a proven lie
    down_after_errors: int = 3        # failed calls in a row that raise an agent-down alert

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if not value > 0:
                raise ValueError(f"reputation setting {f.name} must be positive, found {value}")
        if not (self.score_min < self.quarantine_floor < self.probation_start <= self.start < self.score_cap < 1):
            raise ValueError("reputation settings must keep 0 < score_min < quarantine_floor < probation_start "
                             "<= start < score_cap < 1")
        for name in ("committee_floor", "high_tier_floor", "probation_weight", "score_drop_alert", "shift_rate",
                     "behaviour_step_share"):
            if getattr(self, name) >= 1:
                raise ValueError(f"reputation setting {name} must be below 1, found {getattr(self, name)}")
        if self.committee_size < 3:
            raise ValueError(f"reputation setting committee_size must be at least 3, found {self.committee_size}")
        if self.baseline_window < 2 or self.baseline_size < self.baseline_window + self.baseline_min:
            raise ValueError("reputation settings need baseline_window >= 2 and "
                             "baseline_size >= baseline_window + baseline_min")

    # The log-odds bounds, as engine.reputation.scale.logit computes them (this module sits below the book).
    @property
    def l0(self) -> float:
        """Neutral log-odds: where new agents start and decay leads."""
        return _logit(self.start)

    @property
    def l_max(self) -> float:
        return _logit(self.score_cap)

    @property
    def l_min(self) -> float:
        return _logit(self.score_min)

    def tier_factor(self, tier: RiskTier) -> float:
        return {RiskTier.LOW: self.low_tier_factor, RiskTier.MEDIUM: self.medium_tier_factor,
                RiskTier.HIGH: self.high_tier_factor}[tier]


def _logit(score: float) -> float:
    return math.log(score / (1.0 - score))
