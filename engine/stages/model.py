"""The stage vocabulary: what one stage of a trajectory produced, and who may watch it.

A trajectory is the ordered list of stage results of one question. Stage i's output is stage
i+1's context. Observers (the cascade monitor, the reputation book, the injection gateway) are
called at every boundary and may ask the runner to intervene: halt, or roll back and re-run from
an earlier stage with some passages or agents excluded.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Protocol

from ..types import Chunk, Claim


class StageKind(str, enum.Enum):
    FORMULATE = "formulate"      # the question, split into sub-questions where it has several hops
    RETRIEVE = "retrieve"        # passages for one sub-question, through secure retrieval
    REASON = "reason"            # a sub-answer and the bridge entity the next hop needs, with evidence
    TOOL = "tool"                # arithmetic or date comparison over what the hops found
    SYNTHESIZE = "synthesize"    # the final answer, through trusted generation


class QuestionShape(str, enum.Enum):
    SINGLE = "single"            # one hop: today's fast path
    BRIDGE = "bridge"            # hop 2 asks about what hop 1 found ("the director of the film X")
    COMPARISON = "comparison"    # the same question about two or more entities, then a comparison


@dataclass(frozen=True)
class SubQuestion:
    text: str                    # may hold the placeholder "#1" for the answer of hop 1
    hop: int                     # 0-based
    entity: str = ""             # comparison: the entity this hop is about


@dataclass(frozen=True)
class Decomposition:
    shape: QuestionShape
    hops: tuple[SubQuestion, ...]
    reason: str = ""             # which pattern matched, for people


@dataclass(frozen=True)
class Timings:
    """Milliseconds one stage spent on each part of its work (retrieve, gateway_passages, ...), in the order
    the parts first ran."""
    parts: tuple[tuple[str, float], ...] = ()

    def plus(self, name: str, ms: float) -> "Timings":
        """These timings with `ms` more spent on `name` (added to what it had)."""
        spent = dict(self.parts)
        spent[name] = spent.get(name, 0.0) + ms
        return Timings(tuple(spent.items()))

    def as_dict(self) -> dict[str, float]:
        return dict(self.parts)


@dataclass(frozen=True)
class StageResult:
    """What one stage did. Frozen: a re-run makes a new result, it never edits the old one."""
    kind: StageKind
    index: int                             # position in the trajectory, 0-based
    hop: int                               # the sub-question it served (0 for stages over the whole question)
    inputs: tuple[str, ...]                # what it was asked (question, sub-question, bridge entity)
    output: str                            # what it passes on, for people
    claims: tuple[Claim, ...] = ()         # factual statements it makes, with the passages they cite
    evidence: tuple[Chunk, ...] = ()       # passages it used or forwards
    support: tuple[float, ...] = ()        # per evidence passage: share of independent sources that returned it
    corroborated: tuple[Chunk, ...] = ()   # retrieve: what it adds to the consensus pool the monitors check against
    candidates: tuple[Chunk, ...] = ()     # retrieve: every passage its sources returned, kept or not
    confidence: float = 0.0                # the stage's own confidence, 0..1
    entailed: tuple[str, ...] = ()         # claims a judge read as entailed by the passages they cite (no quotes)
    agents: tuple[str, ...] = ()           # agents whose work it is
    elapsed_ms: float = 0.0
    note: str = ""
    attempt: int = 0                       # 0 first run; n the n-th re-run after a mitigation
    # The stage's own working record (a frozen per-kind class, engine.question.payloads) and where its time
    # went: what the answer is built from. Not part of the stored answer (to_jsonable leaves them out).
    payload: object | None = field(default=None, metadata={"jsonable": False})
    timings: Timings = field(default_factory=Timings, metadata={"jsonable": False})


@dataclass(frozen=True)
class Trajectory:
    """A question's stages so far. Its pool is the evidence several sources corroborate: what the
    monitors check every stage against, instead of one upstream output."""
    question: str
    trace_id: str
    decomposition: Decomposition
    stages: tuple[StageResult, ...] = ()

    @property
    def pool(self) -> tuple[Chunk, ...]:
        seen: dict[str, Chunk] = {}
        for stage in self.stages:
            for chunk in stage.corroborated:
                seen.setdefault(chunk.text, chunk)
        return tuple(seen.values())

    @property
    def record(self) -> tuple[Chunk, ...]:
        """Every passage the trajectory has touched: forwarded, corroborated or only returned by one source."""
        seen: dict[str, Chunk] = {}
        for stage in self.stages:
            for chunk in (*stage.evidence, *stage.corroborated, *stage.candidates):
                seen.setdefault(chunk.text, chunk)
        return tuple(seen.values())

    def with_stage(self, result: StageResult) -> "Trajectory":
        return Trajectory(self.question, self.trace_id, self.decomposition, self.stages + (result,))

    def upto(self, index: int) -> "Trajectory":
        """The trajectory before stage `index` (for a rollback)."""
        return Trajectory(self.question, self.trace_id, self.decomposition, self.stages[:index])

    def last(self, kind: StageKind, hop: int | None = None) -> StageResult | None:
        for stage in reversed(self.stages):
            if stage.kind is kind and (hop is None or stage.hop == hop):
                return stage
        return None


class InterventionKind(str, enum.Enum):
    RERUN = "rerun"              # roll back to `from_index` and run again without the excluded passages/agents
    GATE = "gate"                # keep going, but with the stage's confidence capped at `confidence_cap`
    HALT = "halt"                # stop: the answer waits for a person


@dataclass(frozen=True)
class Intervention:
    kind: InterventionKind
    reason: str
    from_index: int = 0
    exclude_passages: frozenset[str] = frozenset()
    exclude_agents: frozenset[str] = frozenset()
    refine_query: str = ""       # M1: the sub-question re-asked with what the trajectory established
    confidence_cap: float = 1.0


class StageObserver(Protocol):
    """Called after every stage; returns None to let the trajectory go on."""

    def on_stage(self, trajectory: Trajectory, result: StageResult) -> Intervention | None: ...
