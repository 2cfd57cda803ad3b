"""The gateway at the pipeline's stage boundaries (the StageObserver hook of engine/stages): what one
stage hands the next is screened as data. An instruction in a stage's output never reaches the next
stage: the stage is run again without the agents whose work it was, or, when no agent can be left out
(the engine's own stage), the question halts for a person."""
from __future__ import annotations

from ..stages.model import Intervention, InterventionKind, StageKind, StageResult, Trajectory
from ..types import TrustLevel
from .envelope import MessageKind
from .session import GatewaySession

# Screened before: formulate hands on the operator's question (screened as USER when it arrived) and
# retrieve the passages the gateway screened one by one, as each retriever replied.
_SCREENED_ON_ARRIVAL = frozenset({StageKind.FORMULATE, StageKind.RETRIEVE})


class GatewayObserver:
    def __init__(self, session: GatewaySession) -> None:
        self.session = session

    def on_stage(self, trajectory: Trajectory, result: StageResult) -> Intervention | None:
        if result.kind in _SCREENED_ON_ARRIVAL:
            return None
        text = "\n".join([result.output, *(c.text for c in result.claims)]).strip()
        if not text:
            return None
        source = ",".join(result.agents) or "engine"
        screening = self.session.message(source, f"stage {result.index + 1}", text, TrustLevel.TOOL,
                                         MessageKind.STAGE_OUTPUT, item=f"{result.kind.value}#{result.index}")
        if screening.passes:
            return None
        why = f"the gateway stopped the {result.kind.value} stage's output ({screening.score:.2f}): " + \
              "; ".join(screening.evidence[:2])
        if result.agents:
            return Intervention(InterventionKind.RERUN, why, from_index=result.index,
                                exclude_agents=frozenset(result.agents))
        return Intervention(InterventionKind.HALT, why)
