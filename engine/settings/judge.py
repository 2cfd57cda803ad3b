"""The judges' knobs ([judge] in config/engine.toml); engine/generation/judging.py says what each does."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class JudgeSettings:
    answers_at: float = 0.5          # P(yes) at which a judge reads a candidate as the passages' answer
    margin: float = 0.05             # ... and no further below the reading of the engine's own reader's answer
    own_answer: bool = False         # also ask the judge's own short answer, and give no candidate that leaves it out
    medium: bool = True              # medium tier: read a lone answer, a dispute, a claim that is no quote
    min_left_s: float = 2.0          # less of the question's deadline left than this: no judge is asked
    canary_every_s: float = 900.0    # a judge answers its known pairs at start and then this often (0: at start only)
