"""CHARM's knobs ([cascade] in config/engine.toml). Tuned on the HotpotQA dev half only."""
from __future__ import annotations

from dataclasses import dataclass

from ..types import CascadeType

# The mitigations an operator may choose per cascade type (`on_<type>`); "auto" is engine.cascade.mitigation's mapping.
CHOICES: dict[CascadeType, tuple[str, ...]] = {
    CascadeType.RETRIEVAL: ("auto", "rollback", "requery", "review"),
    CascadeType.CONTEXT_POISONING: ("auto", "rollback", "requery", "review"),
    CascadeType.INFERENCE: ("auto", "reverify", "rollback", "review"),
    CascadeType.CONFIDENCE_INFLATION: ("auto", "gate", "review"),
}

# The paper's profiles: a cascade's type is the profile with the largest dot product with (a_sfv, a_csct, a_cpm).
PROFILES: dict[CascadeType, tuple[float, float, float]] = {
    CascadeType.RETRIEVAL: (0.6, 0.3, 0.1),
    CascadeType.INFERENCE: (0.5, 0.5, 0.2),
    CascadeType.CONTEXT_POISONING: (0.3, 0.7, 0.1),
    CascadeType.CONFIDENCE_INFLATION: (0.1, 0.2, 0.7),
}


@dataclass(frozen=True)
class CascadeSettings:
    enabled: bool = True
    w_sfv: float = 0.4            # CRT weights (the paper's)
    w_csct: float = 0.4
    w_cpm: float = 0.2
    theta: float = 0.55           # CRT fires at p ≥ θ
    # With the weights above no monitor fires alone; confidence inflation would never trigger. M2's
    # gate fires on CPM by itself at this level and caps the stage's confidence at its support.
    cpm_gate: float = 0.3
    confidence_margin: float = 0.05   # confidence may exceed what its upstream and evidence justify by this much
    drift_floor: float = 0.2          # cosine to the question and trajectory below which a stage has drifted
    max_reruns: int = 1               # rollbacks per question before it halts for review
    # A fired cascade also waits for a person at this risk tier and above (low | medium | high | never),
    # even when its mitigation resolved it; a halted one always does.
    review_on_fire_tier: str = "high"
    # The mitigation per cascade type (CHOICES above); "auto" is the built-in mapping.
    on_retrieval: str = "auto"              # rollback | requery | review
    on_context_poisoning: str = "auto"      # rollback | requery | review
    on_inference: str = "auto"              # reverify | rollback | review
    on_confidence_inflation: str = "auto"   # gate | review

    def choice(self, kind: CascadeType) -> str:
        return getattr(self, f"on_{kind.value}")

    def reviews(self, tier_value: str) -> bool:
        order = ("low", "medium", "high")
        if self.review_on_fire_tier not in order:
            return False
        return order.index(tier_value) >= order.index(self.review_on_fire_tier)

    @property
    def weights(self) -> tuple[float, float, float]:
        return (self.w_sfv, self.w_csct, self.w_cpm)
