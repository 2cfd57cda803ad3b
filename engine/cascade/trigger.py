"""CRT: the cascade resolution trigger. p = w·(a_sfv, a_csct, a_cpm); fire at p ≥ θ, or when CPM
alone passes M2's gate (with the paper's weights no single monitor can reach θ, so confidence
inflation by itself would never fire). The type is the profile with the largest dot product, among
the types that can start at this kind of stage."""
from __future__ import annotations

from dataclasses import dataclass

from ..stages.model import StageKind
from ..settings.cascade import PROFILES, CascadeSettings
from ..types import CascadeType

# Retrieval-side cascades start where passages enter; inference-side ones where the pipeline concludes.
_POSSIBLE = {
    StageKind.RETRIEVE: (CascadeType.RETRIEVAL, CascadeType.CONTEXT_POISONING, CascadeType.CONFIDENCE_INFLATION),
}
_CONCLUDING = (CascadeType.INFERENCE, CascadeType.RETRIEVAL, CascadeType.CONFIDENCE_INFLATION)


@dataclass(frozen=True)
class Trigger:
    p: float
    fired: bool
    gated: bool                      # fired by CPM's gate rather than by p
    cascade_type: CascadeType | None


def trigger(a_sfv: float, a_csct: float, a_cpm: float, stage: StageKind, settings: CascadeSettings,
            *, use: tuple[bool, bool, bool] = (True, True, True)) -> Trigger:
    """`use` switches monitors off for the ablation (a monitor switched off reads 0)."""
    a = tuple(value if on else 0.0 for value, on in zip((a_sfv, a_csct, a_cpm), use))
    # With monitors switched off (the ablation) the weights of those left are scaled up to sum to 1,
    # so a monitor alone can fire; with all on this is the paper's sum.
    used = sum(w for w, on in zip(settings.weights, use) if on) or 1.0
    p = round(sum(w * x for w, x in zip(settings.weights, a)) / used, 3)
    fired = p >= settings.theta
    gated = not fired and use[2] and a[2] >= settings.cpm_gate
    if not (fired or gated):
        return Trigger(p, False, False, None)
    if gated:
        return Trigger(p, True, True, CascadeType.CONFIDENCE_INFLATION)
    possible = _POSSIBLE.get(stage, _CONCLUDING)
    kind = max(possible, key=lambda t: sum(w * x for w, x in zip(PROFILES[t], a)))
    return Trigger(p, True, False, kind)
