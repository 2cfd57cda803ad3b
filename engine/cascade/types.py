"""The cascade monitor's vocabulary: per-stage scores, the mitigation and its outcome (the cascade type, which
the settings name too, is engine.types.CascadeType)."""
from __future__ import annotations

import enum
from dataclasses import dataclass

from ..stages.model import StageKind
from ..types import CascadeType


class Mitigation(str, enum.Enum):
    NONE = "none"
    REQUERY = "M1 re-retrieval"                  # retrieve again with a refined query
    CONFIDENCE_GATE = "M2 confidence gate"       # cap the stage's confidence at its evidence's support
    PARALLEL_VERIFIER = "M3 parallel verifier"   # another agent re-derives the stage; the engine checks it
    ROLLBACK = "M4 rollback"                     # back to the last clean stage, re-run without the suspects
    HUMAN_REVIEW = "human review"                # the approval queue


@dataclass(frozen=True)
class StageScore:
    """The monitors' view of one stage boundary. Each a_* is an anomaly score in [0, 1]."""
    index: int
    stage: StageKind
    hop: int
    a_sfv: float          # stage-level fact verification against the consensus pool
    a_csct: float         # drift from the question and the trajectory; entities and numbers new to it
    a_cpm: float          # confidence above the stage's evidence support; hedges stripped
    p: float              # CRT: w_sfv·a_sfv + w_csct·a_csct + w_cpm·a_cpm
    fired: bool           # p ≥ θ, or the confidence gate tripped
    cascade_type: CascadeType | None = None
    reasons: tuple[str, ...] = ()                # for people: what each monitor saw
    suspect_passages: tuple[str, ...] = ()       # passage ids the monitors blame
    suspect_agents: tuple[str, ...] = ()         # agents whose output carried the fault
    elapsed_ms: float = 0.0                      # the monitors' own cost at this boundary
    attempt: int = 0


@dataclass(frozen=True)
class CascadeOutcome:
    """What CHARM did for one question."""
    fired: bool
    stage: int | None = None                     # the first stage where it fired
    cascade_type: CascadeType | None = None
    mitigation: Mitigation = Mitigation.NONE
    resolved: bool = True                        # False: the mitigation failed and the answer was halted for review
    reason: str = ""
    scores: tuple[StageScore, ...] = ()
    review: bool = False                         # the settings send fired cascades at this tier to a person

    @property
    def halted(self) -> bool:
        return self.fired and not self.resolved
