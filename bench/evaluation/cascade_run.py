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

from engine.agents.retrievers import BM25Retriever, DenseRetriever, TfidfRetriever, TITLE_BOOST
from engine.cascade.monitor import CascadeMonitor
from engine.cascade.types import CascadeOutcome
from engine.types import CascadeType
from engine.ingest.corpus import Corpus
from engine.stages import steps
from engine.stages.decompose import decompose
from engine.stages.model import Decomposition, StageKind, StageResult, Trajectory
from engine.stages.runner import Exclusions, RunOutcome, StageRunner
from engine.types import Chunk, Claim
from .attacks import seeded
from .cascade_data import CascadeRecord
from .cascade_inject import (COLLUDER, FAULTY_REASONER, FAULTY_RETRIEVER, Injection, counterfactual, other_sentence,
                             own_confidence, strip_hedges, wrong_inference)

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
        agent = lambda ex: HONEST_REASONER if FAULTY_REASONER in ex.agents else FAULTY_REASONER   # noqa: E731
        return [steps.formulate("planner"), *steps.hop_steps(d, self.fetch, self.corrupt, agent), self.synthesize]

    def _injecting(self, index: int, agent: str, ex: Exclusions) -> bool:
        return self.injection is not None and self.injection.stage == index and agent not in ex.agents

    def _rng(self):
        return seeded("cascade", self.record.id, self.injection.kind.value, self.injection.seed)

    async def fetch(self, query: str, index: int, ex: Exclusions) -> steps.Fetched:
        lists: dict[str, list[Chunk]] = {}
        for agent, retriever in self.run.retrievers.items():
            if agent in ex.agents:
                continue
            found = [c for c in retriever.retrieve(query, K_PER_RETRIEVER + len(ex.passages))
                     if not ex.excludes(c.id, c.text)]
            lists[agent] = found[:K_PER_RETRIEVER]
        fused = _fuse(lists)
        forwarded = [c for c, _ in fused[:FORWARD]]
        support = [share for _, share in fused[:FORWARD]]
        if forwarded and self._injecting(index, FAULTY_RETRIEVER, ex) and \
                self.injection.kind in (CascadeType.RETRIEVAL, CascadeType.CONTEXT_POISONING):
            adaptive = self.injection.adaptive
            bad = counterfactual(forwarded[0], query, self.record.paragraphs, self.record.poison, self._rng(),
                                 use_poison=self.injection.kind is CascadeType.RETRIEVAL,
                                 paraphrased=adaptive and self.injection.kind is CascadeType.CONTEXT_POISONING)
            if bad is not None and not ex.excludes(bad.id, bad.text):
                self.took_effect = True
                liars = [FAULTY_RETRIEVER]
                if adaptive and self.injection.kind is CascadeType.RETRIEVAL and COLLUDER not in ex.agents:
                    liars.append(COLLUDER)      # a colluder returns it too: the consensus pool holds it
                for liar in liars:
                    lists[liar] = [bad, *lists.get(liar, [])][:K_PER_RETRIEVER]
                share = len(liars) / max(1, len(lists))
                if self.injection.kind is CascadeType.RETRIEVAL:      # the top passage replaced
                    forwarded, support = [bad, *forwarded[1:]], [share, *support[1:]]
                else:                                                 # a near-copy put above it
                    forwarded, support = [bad, *forwarded[:FORWARD - 1]], [share, *support[:FORWARD - 1]]
        counts = _counts(lists)
        return steps.Fetched(tuple(forwarded), tuple(round(x, 3) for x in support),
                             tuple(c for c, n in counts.values() if n >= 2), tuple(c for c, _ in counts.values()),
                             tuple(lists))

    def corrupt(self, honest: StageResult, ex: Exclusions) -> StageResult:
        """The faulty reasoner's version of a reason stage (only where the injection is, and only while it works)."""
        if not self._injecting(honest.index, FAULTY_REASONER, ex) or not honest.claims:
            return honest
        claim = honest.claims[0]
        if self.injection.kind is CascadeType.INFERENCE:
            chunk = next(c for c in honest.evidence if c.id == claim.citations[0])
            sub_question = honest.inputs[0]
            if self.injection.independent:
                found = other_sentence(claim.text, sub_question, honest.evidence)
                if found is None:
                    return honest
                sentence, cited, note = found
                bad = Claim(sentence, (cited.id,))
            else:
                adaptive = self.injection.adaptive
                drawn_from = honest.evidence if adaptive else self.record.paragraphs
                wrong = wrong_inference(claim.text, chunk.title, sub_question, drawn_from, self._rng(),
                                        adaptive=adaptive)
                if wrong is None:
                    return honest
                bad, note, cited = Claim(wrong[0], claim.citations), wrong[1], chunk
            self.took_effect = True
            confidence = own_confidence(honest.confidence, (claim.text, chunk.title), (bad.text, cited.title),
                                        sub_question)
            return dataclasses.replace(honest, claims=(bad,), output=bad.text, note=note, confidence=confidence)
        if self.injection.kind is CascadeType.CONFIDENCE_INFLATION:
            inflated = round(min(1.0, honest.confidence + self.injection.boost), 3)
            stripped = strip_hedges(claim.text)
            # A stage already near certain cannot be inflated: that record is not counted as injected.
            self.took_effect = inflated - honest.confidence >= MIN_INFLATION or stripped != claim.text
            bad = Claim(stripped, claim.citations)
            return dataclasses.replace(honest, claims=(bad,), output=bad.text, confidence=inflated)
        return honest

    async def synthesize(self, t: Trajectory, ex: Exclusions) -> StageResult:
        claims = steps.conclusions(t)
        tool = t.last(StageKind.TOOL)
        answer = tool.output if tool is not None and tool.output else " ".join(c.text for c in claims)
        return StageResult(StageKind.SYNTHESIZE, len(t.stages), 0, (t.question,), answer, claims=claims,
                           evidence=steps.hop_context(t), confidence=steps.upstream(t), agents=("synthesizer",))


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
