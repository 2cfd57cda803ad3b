"""One record's trajectory, run in process on real components: three heterogeneous retrievers
(MiniLM dense, BM25 with titles, TF-IDF) over the question's own paragraphs, the engine's reasoning,
tool and synthesis stages, and the stage runner with or without the cascade monitor.

The consensus pool of a retrieve stage is what two or more of the three retrievers returned; the
stage forwards its top passages by reciprocal-rank fusion. An injection corrupts one stage's output
through one faulty agent (a retriever or a reasoner); a re-run that excludes that agent or the
passage it brought gets honest work, as a re-run on another agent would.
"""
from __future__ import annotations

import asyncio
import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from ..agents.retrievers import BM25Retriever, DenseRetriever, TfidfRetriever, TITLE_BOOST
from ..cascade.monitor import CascadeMonitor
from ..cascade.types import CascadeOutcome, CascadeType
from ..corpus import Corpus
from ..stages.decompose import decompose, fill
from ..stages.model import Decomposition, QuestionShape, StageKind, StageResult, Trajectory
from ..stages.reasoning import conclude
from ..stages.runner import Exclusions, RunOutcome, StageRunner
from ..stages.tools import compare
from ..types import Chunk, Claim
from .attacks import seeded
from .cascade_data import CascadeRecord
from .cascade_inject import (FAULTY_REASONER, FAULTY_RETRIEVER, Injection, counterfactual, strip_hedges,
                             wrong_inference)

K_PER_RETRIEVER = 4
FORWARD = 3
RRF_K = 60
HONEST_REASONER = "reasoner-b"
MIN_INFLATION = 0.1     # a confidence raise smaller than this (the stage was near 1 already) is no injection


@dataclass(frozen=True)
class RunResult:
    answer: str
    confidence: float
    trajectory: Trajectory
    outcome: CascadeOutcome | None
    halted: bool
    injected: bool          # the injection took effect (some records give it nothing to change)


class RecordRun:
    """Builds a record's retrievers once; `run` may be called many times (clean, injected, watched, mitigated)."""

    def __init__(self, record: CascadeRecord, embedder) -> None:
        self.record = record
        corpus = Corpus(Path("."), record.paragraphs)
        self.retrievers = {"retriever-a": DenseRetriever(corpus, embedder),
                           "retriever-b": BM25Retriever(corpus, title_boost=TITLE_BOOST),
                           FAULTY_RETRIEVER: TfidfRetriever(corpus)}
        self.decomposition: Decomposition = decompose(record.question)

    def run(self, injection: Injection | None, monitor: CascadeMonitor | None, max_reruns: int = 1) -> RunResult:
        steps = _Steps(self, injection)
        runner = StageRunner([monitor] if monitor else [], max_reruns=max_reruns)
        start = Trajectory(self.record.question, self.record.id, self.decomposition)
        outcome: RunOutcome = asyncio.run(runner.run(start, steps.plan()))
        final = outcome.trajectory.stages[-1]
        halted = outcome.halted is not None
        return RunResult("" if halted else final.output, final.confidence, outcome.trajectory,
                         monitor.outcome(outcome) if monitor else None, halted, steps.took_effect)


class _Steps:
    def __init__(self, run: RecordRun, injection: Injection | None) -> None:
        self.run = run
        self.record = run.record
        self.injection = injection
        self.took_effect = False

    def plan(self):
        d = self.run.decomposition
        steps = [self.formulate]
        for sub in d.hops:
            steps += [self._retrieve(sub.hop), self._reason(sub.hop)]
        if d.shape is QuestionShape.COMPARISON:
            steps.append(self.tool)
        steps.append(self.synthesize)
        return steps

    def _injecting(self, index: int, agent: str, ex: Exclusions) -> bool:
        return (self.injection is not None and self.injection.stage == index and agent not in ex.agents)

    # --- stages ---------------------------------------------------------------------------
    async def formulate(self, t: Trajectory, ex: Exclusions) -> StageResult:
        d = t.decomposition
        return StageResult(StageKind.FORMULATE, 0, 0, (t.question,), " | ".join(h.text for h in d.hops),
                           confidence=1.0, agents=("planner",), note=d.reason)

    def _sub_question(self, t: Trajectory, hop: int) -> str:
        sub = t.decomposition.hops[hop]
        bridges = {s.hop: s.note for s in t.stages if s.kind is StageKind.REASON and s.note}
        return fill(sub, bridges)

    def _retrieve(self, hop: int):
        async def step(t: Trajectory, ex: Exclusions) -> StageResult:
            index = len(t.stages)
            query = ex.queries.get(index) or self._sub_question(t, hop)
            lists: dict[str, list[Chunk]] = {}
            for agent, retriever in self.run.retrievers.items():
                if agent in ex.agents:
                    continue
                found = [c for c in retriever.retrieve(query, K_PER_RETRIEVER + len(ex.passages))
                         if not ex.excludes(c.id, c.text)]
                lists[agent] = found[:K_PER_RETRIEVER]
            fused = _fuse(lists)
            forwarded = [c for c, _ in fused[:FORWARD]]
            support = [s for _, s in fused[:FORWARD]]
            if forwarded and self._injecting(index, FAULTY_RETRIEVER, ex) and \
                    self.injection.kind in (CascadeType.RETRIEVAL, CascadeType.CONTEXT_POISONING):
                rng = seeded("cascade", self.record.id, self.injection.kind.value, self.injection.seed)
                bad = counterfactual(forwarded[0], query, self.record.paragraphs, self.record.poison, rng,
                                     use_poison=self.injection.kind is CascadeType.RETRIEVAL)
                if bad is not None and not ex.excludes(bad.id, bad.text):
                    self.took_effect = True
                    lists[FAULTY_RETRIEVER] = [bad, *lists.get(FAULTY_RETRIEVER, [])][:K_PER_RETRIEVER]
                    share = 1 / max(1, len(lists))
                    if self.injection.kind is CascadeType.RETRIEVAL:
                        forwarded, support = [bad, *forwarded[1:]], [share, *support[1:]]
                    else:
                        forwarded, support = [bad, *forwarded[:FORWARD - 1]], [share, *support[:FORWARD - 1]]
            counts = _counts(lists)
            pool = tuple(c for c, n in counts.values() if n >= 2)
            candidates = tuple(c for c, _ in counts.values())
            upstream = _upstream(t)
            # Confidence in what it forwards: how many sources agree on it (independent of the monitors).
            local = sum(support) / len(support) if support else 0.0
            return StageResult(StageKind.RETRIEVE, index, hop, (t.question, query),
                               "; ".join(c.title or c.id for c in forwarded), evidence=tuple(forwarded),
                               support=tuple(round(s, 3) for s in support), corroborated=pool, candidates=candidates,
                               confidence=round(upstream * local, 3), agents=tuple(lists))
        return step

    def _reason(self, hop: int):
        async def step(t: Trajectory, ex: Exclusions) -> StageResult:
            index = len(t.stages)
            query = self._sub_question(t, hop)
            retrieved = t.last(StageKind.RETRIEVE, hop)
            evidence = retrieved.evidence if retrieved else ()
            found = conclude(query, evidence, t.question)
            agent = HONEST_REASONER if FAULTY_REASONER in ex.agents else FAULTY_REASONER
            claim, bridge, local = found.claim, found.bridge, found.local_confidence
            confidence = round(_upstream(t) * local, 3)
            if claim is not None and self._injecting(index, FAULTY_REASONER, ex):
                rng = seeded("cascade", self.record.id, self.injection.kind.value, self.injection.seed)
                if self.injection.kind is CascadeType.INFERENCE:
                    chunk = next(c for c in evidence if c.id == claim.citations[0])
                    wrong = wrong_inference(claim.text, chunk.title, query, self.record.paragraphs, rng)
                    if wrong is not None:
                        self.took_effect = True
                        claim, bridge = Claim(wrong[0], claim.citations), wrong[1]
                elif self.injection.kind is CascadeType.CONFIDENCE_INFLATION:
                    inflated = round(min(1.0, confidence + self.injection.boost), 3)
                    stripped = strip_hedges(claim.text)
                    # A stage already near certain cannot be inflated: that record is not counted as injected.
                    self.took_effect = inflated - confidence >= MIN_INFLATION or stripped != claim.text
                    claim, confidence = Claim(stripped, claim.citations), inflated
            claims = (claim,) if claim else ()
            output = claim.text if claim else ""
            return StageResult(StageKind.REASON, index, hop, (query,), output, claims=claims, evidence=tuple(evidence),
                               confidence=confidence, agents=(agent,), note=bridge)
        return step

    async def tool(self, t: Trajectory, ex: Exclusions) -> StageResult:
        hops = t.decomposition.hops
        findings = [(h.entity or h.text, (t.last(StageKind.REASON, h.hop).output if t.last(StageKind.REASON, h.hop)
                                          else "")) for h in hops]
        result = compare(t.question, findings)
        return StageResult(StageKind.TOOL, len(t.stages), 0, tuple(f for _, f in findings), result.output,
                           confidence=_upstream(t), agents=("calculator",), note=result.used)

    async def synthesize(self, t: Trajectory, ex: Exclusions) -> StageResult:
        reasons = [s for s in t.stages if s.kind is StageKind.REASON]
        last_hop = max((s.hop for s in reasons), default=0)
        claims = tuple(c for s in reasons if s.hop == last_hop or t.decomposition.shape is QuestionShape.COMPARISON
                       for c in s.claims)
        tool = t.last(StageKind.TOOL)
        answer = tool.output if tool is not None and tool.output else " ".join(c.text for c in claims)
        evidence = tuple({c.text: c for s in reasons for c in s.evidence}.values())
        return StageResult(StageKind.SYNTHESIZE, len(t.stages), 0, (t.question,), answer, claims=claims,
                           evidence=evidence, confidence=_upstream(t), agents=("synthesizer",))


def _upstream(t: Trajectory) -> float:
    """The latest stage's confidence: along a chain of evidence, confidence can only be passed on or lost."""
    previous = [s.confidence for s in t.stages if s.kind is not StageKind.FORMULATE]
    return previous[-1] if previous else 1.0


def _fuse(lists: dict[str, list[Chunk]]) -> list[tuple[Chunk, float]]:
    """Reciprocal-rank fusion by text; each passage with the share of retrievers that returned it."""
    scores: dict[str, float] = {}
    chunks: dict[str, Chunk] = {}
    counts = _counts(lists)
    for found in lists.values():
        for rank, chunk in enumerate(found):
            scores[chunk.text] = scores.get(chunk.text, 0.0) + 1.0 / (RRF_K + rank + 1)
            chunks.setdefault(chunk.text, chunk)
    order = sorted(scores, key=lambda text: -scores[text])
    return [(chunks[text], counts[text][1] / max(1, len(lists))) for text in order]


def _counts(lists: dict[str, list[Chunk]]) -> dict[str, tuple[Chunk, int]]:
    out: dict[str, tuple[Chunk, int]] = {}
    for found in lists.values():
        for chunk in {c.text: c for c in found}.values():
            previous = out.get(chunk.text)
            out[chunk.text] = (previous[0] if previous else chunk, (previous[1] if previous else 0) + 1)
    return out
