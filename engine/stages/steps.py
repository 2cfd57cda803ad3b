"""Step builders shared by the live pipeline and the cascade evaluation: the same formulate, retrieve,
reason and tool stages, whatever fetches the passages and whatever synthesizes the answer.

A retrieve step asks a `Fetch` for one (sub-)question and turns what it returns into a stage
result; a reason step concludes from the passages of its hop; a tool step compares what the hops
found. `Corrupt` hooks let an evaluation put a faulty agent's output in place of a stage's honest one.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Awaitable, Callable

from .decompose import fill
from .model import Decomposition, QuestionShape, StageKind, StageResult, Timings, Trajectory
from .reasoning import conclude
from .runner import Exclusions, Step
from .tools import compare
from ..types import Chunk, Claim

REASONER = "engine-reasoner"


@dataclass(frozen=True)
class Fetched:
    """What one retrieval returned, ready for the stage result."""
    forwarded: tuple[Chunk, ...]          # the context handed on, best first
    support: tuple[float, ...]            # per forwarded passage: share of sources that returned it
    corroborated: tuple[Chunk, ...]       # what several independent sources agree on (the consensus pool)
    candidates: tuple[Chunk, ...]         # everything any source returned
    agents: tuple[str, ...]
    note: str = ""
    payload: object | None = None         # the fetcher's own record, carried on the stage result
    timings: Timings = Timings()


Fetch = Callable[[str, int, Exclusions], Awaitable[Fetched]]            # (query, stage index, exclusions)
CorruptReason = Callable[[StageResult, Exclusions], StageResult]        # a faulty reasoner's version of a result


def upstream(t: Trajectory) -> float:
    """The latest stage's confidence: along a chain of evidence, confidence can only be passed on or lost."""
    previous = [s.confidence for s in t.stages if s.kind is not StageKind.FORMULATE]
    return previous[-1] if previous else 1.0


def sub_question(t: Trajectory, hop: int) -> str:
    """The hop's sub-question with the bridge entities earlier hops found in place of #1, #2, ..."""
    bridges = {s.hop: s.note for s in t.stages if s.kind is StageKind.REASON and s.note}
    return fill(t.decomposition.hops[hop], bridges)


def formulate(agent: str = "engine") -> Step:
    async def step(t: Trajectory, ex: Exclusions) -> StageResult:
        d = t.decomposition
        return StageResult(StageKind.FORMULATE, 0, 0, (t.question,), " | ".join(h.text for h in d.hops),
                           confidence=1.0, agents=(agent,), note=f"{d.shape.value}: {d.reason}")
    return step


def retrieve(hop: int, fetch: Fetch, *, single: bool = False) -> Step:
    """single: the question is asked as it is (the fast path), not as the hop's sub-question."""
    async def step(t: Trajectory, ex: Exclusions) -> StageResult:
        index = len(t.stages)
        query = ex.queries.get(index) or (t.question if single else sub_question(t, hop))
        got = await fetch(query, index, ex)
        # Confidence in what it forwards: how many sources agree on it (independent of the monitors).
        local = sum(got.support) / len(got.support) if got.support else 0.0
        titles = "; ".join(c.title or c.id for c in got.forwarded)
        return StageResult(StageKind.RETRIEVE, index, hop, (t.question, query),
                           f"{len(got.forwarded)} passages: {titles}" if got.forwarded else "no passages",
                           evidence=got.forwarded, support=got.support, corroborated=got.corroborated,
                           candidates=got.candidates, confidence=round(upstream(t) * local, 3), agents=got.agents,
                           note=got.note, payload=got.payload, timings=got.timings)
    return step


def reason(hop: int, corrupt: CorruptReason | None = None, agent: Callable[[Exclusions], str] | None = None) -> Step:
    async def step(t: Trajectory, ex: Exclusions) -> StageResult:
        index = len(t.stages)
        query = sub_question(t, hop)
        retrieved = t.last(StageKind.RETRIEVE, hop)
        evidence = retrieved.evidence if retrieved else ()
        found = conclude(query, evidence, t.question)
        claims = (found.claim,) if found.claim else ()
        result = StageResult(StageKind.REASON, index, hop, (query,), found.claim.text if found.claim else "",
                             claims=claims, evidence=tuple(evidence),
                             confidence=round(upstream(t) * found.local_confidence, 3),
                             agents=(agent(ex) if agent else REASONER,), note=found.bridge)
        return corrupt(result, ex) if corrupt is not None and found.claim is not None else result
    return step


def tool() -> Step:
    async def step(t: Trajectory, ex: Exclusions) -> StageResult:
        findings = []
        for h in t.decomposition.hops:
            concluded = t.last(StageKind.REASON, h.hop)
            findings.append((h.entity or h.text, concluded.output if concluded else ""))
        result = compare(t.question, findings)
        # The computed sentence travels as the stage's claim: synthesis reads it as context.
        claims = (Claim(result.sentence),) if result.sentence else ()
        return StageResult(StageKind.TOOL, len(t.stages), 0, tuple(f for _, f in findings), result.output,
                           claims=claims, confidence=upstream(t), agents=("calculator",), note=result.used)
    return step


def hop_steps(d: Decomposition, fetch: Fetch, corrupt: CorruptReason | None = None,
              agent: Callable[[Exclusions], str] | None = None, *, reason_single: bool = True) -> list[Step]:
    """Retrieve (and reason) per hop, then the tool stage for comparisons. A single-hop question keeps
    the fast path: one retrieve of the question as asked, and a reason stage only if `reason_single`."""
    if d.shape is QuestionShape.SINGLE:
        return [retrieve(0, fetch, single=True)] + ([reason(0, corrupt, agent)] if reason_single else [])
    steps: list[Step] = []
    for sub in d.hops:
        steps += [retrieve(sub.hop, fetch), reason(sub.hop, corrupt, agent)]
    if d.shape is QuestionShape.COMPARISON:
        steps.append(tool())
    return steps


def hop_context(t: Trajectory) -> tuple[Chunk, ...]:
    """Every hop's latest forwarded passages, deduplicated by text, in hop order: synthesis reads them all."""
    latest: dict[int, StageResult] = {}
    for s in t.stages:
        if s.kind is StageKind.RETRIEVE:
            latest[s.hop] = s
    seen: dict[str, Chunk] = {}
    for hop in sorted(latest):
        for chunk in latest[hop].evidence:
            seen.setdefault(chunk.text, chunk)
    return tuple(seen.values())


def conclusions(t: Trajectory) -> tuple[Claim, ...]:
    """The reason stages' claims of the last hop (all hops for a comparison), for synthesis."""
    reasons = [s for s in t.stages if s.kind is StageKind.REASON]
    if not reasons:
        return ()
    if t.decomposition.shape is QuestionShape.COMPARISON:
        return tuple(c for s in reasons for c in s.claims)
    last = max(s.hop for s in reasons)
    return tuple(c for s in reasons if s.hop == last for c in s.claims)
