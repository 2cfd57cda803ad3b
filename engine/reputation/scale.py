"""The trust scale: log-odds inside, a score in (0, 1) outside, and exponential decay toward neutral."""
from __future__ import annotations

import math


def logit(score: float) -> float:
    return math.log(score / (1.0 - score))


def sigmoid(log_odds: float) -> float:
    # Two branches so that neither exp() can overflow at the extremes.
    if log_odds >= 0:
        return 1.0 / (1.0 + math.exp(-log_odds))
    e = math.exp(log_odds)
    return e / (1.0 + e)


def decayed(log_odds: float, neutral: float, elapsed_s: float, half_life_s: float) -> float:
    """log_odds after `elapsed_s` seconds of halving its distance to `neutral` every `half_life_s`.
    Halving is memoryless, so decaying in many small steps lands where one big step does."""
    if elapsed_s <= 0:
        return log_odds
    return neutral + (log_odds - neutral) * 0.5 ** (elapsed_s / half_life_s)
