"""What the retrieve and synthesize stages carry on their frozen stage results (StageResult.payload): the
answer is built from these, stage by stage."""
from __future__ import annotations

from dataclasses import dataclass

from ..generation.adjudicate import Decision
from ..retrieval.secure import RetrievalResult
from ..types import AgentOutcome, ContextChunk


@dataclass(frozen=True)
class RetrievalPayload:
    """One retrieve stage: secure retrieval's result, and how each retriever's call went."""
    report: RetrievalResult
    calls: tuple[AgentOutcome, ...]


@dataclass(frozen=True)
class SynthesisPayload:
    """The synthesize stage: the decision (None: no evidence to decide on), how each generator's call went,
    and the tool stage's finding it read as context."""
    decision: Decision | None
    generated: tuple[AgentOutcome, ...] = ()
    reached_generators: bool = False     # there was evidence to ask generators about
    finding: ContextChunk | None = None
