"""CascadeMonitor: CHARM as a stage observer. At every boundary it scores the stage (SFV, CSCT, CPM),
lets the trigger decide, reports the score, and asks the runner for the mitigation the plan picks."""
from __future__ import annotations

import time
from typing import Callable

from ..stages.model import Intervention, StageResult, Trajectory
from ..stages.runner import RunOutcome
from .mitigation import plan
from .monitors import Monitors
from ..settings.cascade import CascadeSettings
from .statements import statements
from .trigger import trigger
from .types import CascadeOutcome, Mitigation, StageScore

Report = Callable[[StageScore], None]


class CascadeMonitor:
    """One per question. `use` switches monitors off (ablation); `mitigate=False` only watches."""

    def __init__(self, monitors: Monitors, settings: CascadeSettings, *, report: Report | None = None,
                 use: tuple[bool, bool, bool] = (True, True, True), mitigate: bool = True) -> None:
        self.monitors = monitors
        self.settings = settings
        self.report = report
        self.use = use
        self.mitigate = mitigate
        self.scores: list[StageScore] = []
        self.mitigations: list[Mitigation] = []

    def on_stage(self, trajectory: Trajectory, result: StageResult) -> Intervention | None:
        started = time.perf_counter()
        said = statements(result)
        sfv = self.monitors.sfv(trajectory, result, said) if self.use[0] or self.use[2] else None
        csct = self.monitors.csct(trajectory, result, said) if self.use[1] else None
        support = sfv.support if sfv else 1.0
        answers = sfv.answers if sfv else 1.0
        cpm = self.monitors.cpm(trajectory, result, said, support, answers) if self.use[2] else None
        # SFV may run only for CPM's support figure; switched off, it neither scores nor blames.
        used = (sfv if self.use[0] else None, csct, cpm)
        a = tuple(r.score if r is not None else 0.0 for r in used)
        fired = trigger(*a, result.kind, self.settings)
        readings = [r for r in used if r is not None]
        # A passage the pool corroborates is not excluded for contradicting a fake beside it (CSCT blames both).
        pooled = {c.id for c in trajectory.pool}
        blamed = [p for r in readings[:2] for p in r.suspects]
        suspects = tuple(dict.fromkeys(p for p in blamed if p not in pooled)) or \
            (tuple(dict.fromkeys(sfv.suspects)) if sfv is not None and self.use[0] else ())
        score = StageScore(index=result.index, stage=result.kind, hop=result.hop, a_sfv=a[0], a_csct=a[1],
                           a_cpm=a[2], p=fired.p, fired=fired.fired, cascade_type=fired.cascade_type,
                           reasons=tuple(x for r in readings for x in r.reasons),
                           suspect_passages=suspects if fired.fired else (),
                           suspect_agents=result.agents if fired.fired else (),
                           elapsed_ms=round((time.perf_counter() - started) * 1000, 2), attempt=result.attempt)
        self.scores.append(score)
        if self.report is not None:
            self.report(score)
        if not fired.fired or not self.mitigate:
            return None
        why = f"{fired.cascade_type.value} cascade at stage {result.index + 1} ({result.kind.value}), p={fired.p:.2f}"
        calibrated = cpm.support if cpm is not None else support
        mitigation, intervention = plan(fired.cascade_type, result, trajectory, passages=suspects,
                                        calibrated=calibrated, reason=why,
                                        choice=self.settings.choice(fired.cascade_type))
        self.mitigations.append(mitigation)
        return intervention

    def outcome(self, run: RunOutcome | None = None) -> CascadeOutcome:
        fired = [s for s in self.scores if s.fired]
        if not fired:
            return CascadeOutcome(False, scores=tuple(self.scores))
        first = fired[0]
        halted = run is not None and run.halted is not None
        mitigation = Mitigation.HUMAN_REVIEW if halted and not self.mitigations else \
            (self.mitigations[0] if self.mitigations else Mitigation.NONE)
        reason = run.halted.reason if halted else (
            f"{first.cascade_type.value} cascade at stage {first.index + 1} ({first.stage.value}); "
            f"{mitigation.value}" + (" resolved it" if self.mitigate else " not applied (watch only)"))
        return CascadeOutcome(True, first.index, first.cascade_type, mitigation, resolved=not halted,
                              reason=reason, scores=tuple(self.scores))
