"""Runs a trajectory's stages in order, calls the observers at every boundary, and carries out
what they ask: a gate on a stage's confidence, a rollback and re-run without some passages or
agents, or a halt for a person.

A step is `async step(trajectory, exclusions) -> StageResult`. Steps read what they need from the
trajectory so far (stage i's output is stage i+1's context), so re-running from stage i with new
exclusions re-derives everything after it.
"""
from __future__ import annotations

import asyncio
import dataclasses
import time
from dataclasses import dataclass, field
from typing import Awaitable, Callable, Mapping, Sequence

from .model import Intervention, InterventionKind, StageObserver, StageResult, Trajectory
from ..stats import elapsed_ms


@dataclass(frozen=True)
class Exclusions:
    """What re-runs leave out, and what mitigations changed, keyed so steps can ask."""
    passages: frozenset[str] = frozenset()         # passage ids and texts are both accepted
    agents: frozenset[str] = frozenset()
    queries: Mapping[int, str] = field(default_factory=dict)    # stage index → refined query (M1)
    caps: Mapping[int, float] = field(default_factory=dict)     # stage index → confidence cap (M2)

    def merged(self, intervention: Intervention, index: int) -> "Exclusions":
        queries = dict(self.queries)
        caps = dict(self.caps)
        if intervention.refine_query:
            queries[index] = intervention.refine_query
        if intervention.kind is InterventionKind.GATE:
            caps[index] = min(caps.get(index, 1.0), intervention.confidence_cap)
        return Exclusions(self.passages | intervention.exclude_passages, self.agents | intervention.exclude_agents,
                          queries, caps)

    def excludes(self, passage_id: str, text: str = "") -> bool:
        return passage_id in self.passages or (bool(text) and text in self.passages)


Step = Callable[[Trajectory, Exclusions], Awaitable[StageResult]]
# Called on the loop as each stage starts (result None) and finishes: (index, planned stages, attempt, result).
Progress = Callable[[int, int, int, "StageResult | None"], None]


@dataclass(frozen=True)
class RunOutcome:
    trajectory: Trajectory
    interventions: tuple[tuple[int, Intervention], ...]   # (stage index, what an observer asked), in order
    halted: Intervention | None = None
    # Every stage result in the order it ran, re-runs and rolled-back ones included (the trajectory keeps only
    # the latest run of each stage): what a question spent on calls and time, beyond the stages that count.
    ran: tuple[StageResult, ...] = ()

    @property
    def reruns(self) -> int:
        return sum(1 for _, i in self.interventions if i.kind is InterventionKind.RERUN)


class StageRunner:
    """max_reruns bounds the rollbacks of one question: a cascade that survives them halts."""

    def __init__(self, observers: Sequence[StageObserver], max_reruns: int = 1, *, offload: bool = False,
                 on_progress: Progress | None = None) -> None:
        """offload: observers run on a worker thread (their checks are CPU work; the console's loop stays free).
        on_progress: told of every stage start and end, re-runs included (live progress for an operator)."""
        self.observers = list(observers)
        self.max_reruns = max_reruns
        self.offload = offload
        self.on_progress = on_progress

    def _progress(self, index: int, total: int, attempt: int, result: StageResult | None) -> None:
        if self.on_progress is not None:
            self.on_progress(index, total, attempt, result)

    async def run(self, trajectory: Trajectory, steps: Sequence[Step],
                  exclusions: Exclusions = Exclusions()) -> RunOutcome:
        index, attempt = len(trajectory.stages), 0
        done: list[tuple[int, Intervention]] = []
        ran: list[StageResult] = []
        while index < len(steps):
            started = time.perf_counter()
            self._progress(index, len(steps), attempt, None)
            result = await steps[index](trajectory, exclusions)
            result = dataclasses.replace(result, index=index, attempt=attempt,
                                         elapsed_ms=result.elapsed_ms or elapsed_ms(started, 2))
            self._progress(index, len(steps), attempt, result)
            if index in exclusions.caps and result.confidence > exclusions.caps[index]:
                result = dataclasses.replace(result, confidence=exclusions.caps[index])
            trajectory = trajectory.with_stage(result)
            ran.append(result)
            intervention = (await asyncio.to_thread(self._observe, trajectory, result) if self.offload
                            else self._observe(trajectory, result))
            if intervention is None:
                index += 1
                continue
            done.append((index, intervention))
            if intervention.kind is InterventionKind.HALT:
                return RunOutcome(trajectory, tuple(done), halted=intervention, ran=tuple(ran))
            if intervention.kind is InterventionKind.GATE:
                capped = min(result.confidence, intervention.confidence_cap)
                exclusions = exclusions.merged(intervention, index)
                ran[-1] = dataclasses.replace(result, confidence=capped)
                trajectory = trajectory.upto(index).with_stage(ran[-1])
                index += 1
                continue
            reruns = sum(1 for _, i in done if i.kind is InterventionKind.RERUN)
            if reruns > self.max_reruns:
                halt = Intervention(InterventionKind.HALT, f"the cascade survived {self.max_reruns} re-run(s): "
                                                           f"{intervention.reason}")
                done.append((index, halt))
                return RunOutcome(trajectory, tuple(done), halted=halt, ran=tuple(ran))
            target = min(intervention.from_index, index)
            exclusions = exclusions.merged(intervention, target)
            trajectory = trajectory.upto(target)
            index, attempt = target, attempt + 1
        return RunOutcome(trajectory, tuple(done), ran=tuple(ran))

    def _observe(self, trajectory: Trajectory, result: StageResult) -> Intervention | None:
        """Every observer sees every boundary; the first intervention asked for wins."""
        asked = [observer.on_stage(trajectory, result) for observer in self.observers]
        return next((a for a in asked if a is not None), None)
