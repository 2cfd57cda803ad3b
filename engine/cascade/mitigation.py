"""Which mitigation a fired cascade gets, as an intervention the stage runner carries out.

- confidence inflation → M2: the stage's confidence is capped at what its upstream and evidence allow.
- retrieval cascade, context poisoning → M4: roll back to the retrieve stage the bad passage came in
  at and re-run without it (and every stage after); with no passage to blame, M1: re-retrieve with
  the sub-question refined by what the trajectory has established.
- inference cascade → M3: the stage is derived again by another agent (its own agents excluded) and
  checked by the monitors like any other; an engine-local stage re-runs without the passages blamed.
A cascade that survives its mitigation halts for human review (the runner's max_reruns).
The settings may pick another mitigation per type (`on_<type>` in [cascade]): "review" halts at once.
"""
from __future__ import annotations

from ..stages.model import Intervention, InterventionKind, StageKind, StageResult, Trajectory
from ..types import CascadeType
from .types import Mitigation


def plan(kind: CascadeType, result: StageResult, trajectory: Trajectory, *, passages: tuple[str, ...],
         calibrated: float, reason: str, choice: str = "auto") -> tuple[Mitigation, Intervention]:
    """choice: one of engine.settings.cascade.CHOICES[kind]; "auto" is the mapping in this module's docstring."""
    if choice == "review":
        return Mitigation.HUMAN_REVIEW, Intervention(InterventionKind.HALT, f"{reason}; sent to a person")
    if kind is CascadeType.CONFIDENCE_INFLATION:
        return Mitigation.CONFIDENCE_GATE, Intervention(InterventionKind.GATE, reason, result.index,
                                                         confidence_cap=round(calibrated, 3))
    retrieval_side = kind in (CascadeType.RETRIEVAL, CascadeType.CONTEXT_POISONING)
    if retrieval_side or choice == "rollback" or not result.agents:
        source = _retrieve_stage(trajectory, result)
        if passages and choice != "requery":
            return Mitigation.ROLLBACK, Intervention(InterventionKind.RERUN, reason, source.index,
                                                     exclude_passages=frozenset(passages))
        return Mitigation.REQUERY, Intervention(InterventionKind.RERUN, reason, source.index,
                                                refine_query=_refined(trajectory, source))
    return Mitigation.PARALLEL_VERIFIER, Intervention(InterventionKind.RERUN, reason, result.index,
                                                      exclude_agents=frozenset(result.agents))


def _retrieve_stage(trajectory: Trajectory, result: StageResult) -> StageResult:
    """The retrieve stage that brought in what `result` rests on: itself, else the latest of its hop."""
    if result.kind is StageKind.RETRIEVE:
        return result
    earlier = trajectory.stages[:result.index]
    same_hop = [s for s in earlier if s.kind is StageKind.RETRIEVE and s.hop == result.hop]
    any_hop = [s for s in earlier if s.kind is StageKind.RETRIEVE]
    return (same_hop or any_hop or [result])[-1]


def _refined(trajectory: Trajectory, source: StageResult) -> str:
    """The sub-question with what earlier hops established (their outputs), for a second retrieval."""
    asked = source.inputs[-1] if source.inputs else trajectory.question
    established = [s.output for s in trajectory.stages[:source.index] if s.kind is StageKind.REASON and s.output]
    return " ".join([asked, *established[-1:]]).strip()
