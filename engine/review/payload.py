"""What a review item's payload (the whole Answer as JSON) says, read as the operator needs it.

The payload keeps the shape it was written with, after any number of restarts and engine upgrades, so
everything here reads defensively (a missing or odd field gives an empty value, never an exception):

    candidates_from_payload(payload)   each generator's answer, with its claims, labels and evidence sentence
    positions_of(candidates)           the competing positions: candidates grouped by who agrees with whom
    cascade_from_payload(payload)      the cascade monitor's outcome and its scores per stage
    agents_from_payload(payload)       the agents involved: role, call, what came of their work, whether a
                                       decision on the answer counts for them
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from ..reputation.answer_evidence import LOCAL_VERIFIER, DecidedAnswer
from ..text import closest_sentences
from ..types import ChallengeOutcome

Payload = Mapping[str, Any]


@dataclass(frozen=True)
class ClaimSummary:
    text: str
    supported: bool
    coverage: float
    reason: str
    citations: tuple[str, ...]
    label: str = ""          # the verifiers' label (supported | refuted | not_enough_evidence) when the answer has one
    evidence: str = ""       # the sentence of its cited passages closest to it ("" when none of them is in the context)
    origin: str = ""         # declared by the generator, or split from its answer by the engine
    entailment: float | None = None   # P(its aligned evidence entails it): older records only (None: not read)
    premise: str = ""        # the evidence sentences it was read against (older records only)


@dataclass(frozen=True)
class CandidateSummary:
    """One generator's answer as the queue shows it to the operator."""
    agent_id: str
    answer: str
    support_rate: float
    credibility: float
    agreeing: tuple[str, ...]
    claims: tuple[ClaimSummary, ...]
    challenge: str = ""      # what asking it to show its evidence came to ("" when it was not asked)
    relevance: float | None = None   # P(it is the passages' answer), the judges' reading (None: not read)
    off_topic: bool = False  # the judges read it as not the passages' answer
    relevance_by: str = ""   # whose reading relevance is ("read by ver-judge")


@dataclass(frozen=True)
class Position:
    """Generators that agree with one another, and the answer they stand for (their most credible one's)."""
    agents: tuple[str, ...]
    answer: str
    support_rate: float
    credibility: float


@dataclass(frozen=True)
class StageScoreSummary:
    """The cascade monitor at one stage boundary: its three anomaly scores, the weighted p, whether it fired."""
    index: int
    stage: str
    hop: int
    attempt: int
    sfv: float
    csct: float
    cpm: float
    p: float
    fired: bool
    cascade_type: str = ""
    reasons: tuple[str, ...] = ()


@dataclass(frozen=True)
class CascadeSummary:
    fired: bool
    stage: int | None
    cascade_type: str
    mitigation: str
    resolved: bool
    reason: str
    scores: tuple[StageScoreSummary, ...]

    @property
    def halted(self) -> bool:
        return self.fired and not self.resolved


@dataclass(frozen=True)
class AgentSummary:
    """One agent's part in the answer."""
    agent_id: str
    role: str                   # retriever | generator | verifier
    status: str                 # its call: ok | timeout | down | ... ("" for a verifier known only by its votes)
    latency_ms: float
    error: str = ""
    passages_kept: int = 0      # retriever: passages of its in the safe context
    suspect: str = ""           # retriever: why secure retrieval reported it ("" when it did not)
    gave_answer: bool = False   # generator: its answer is the one given
    support_rate: float | None = None   # generator: share of its claims its evidence supports (None: no answer)
    challenge: str = ""         # generator: what asking it to show its evidence came to, for people
    challenge_outcome: ChallengeOutcome | None = None   # ... as vocabulary (None: not challenged, or unreadable)
    votes: int = 0              # verifier: claims it labelled
    decision_counts: bool = False   # an operator's approval credits it, a rejection debits it


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _challenge_outcome(value: Any) -> ChallengeOutcome | None:
    try:
        return ChallengeOutcome(value) if isinstance(value, str) else None
    except ValueError:      # a value some other version wrote
        return None


def _list(value: Any) -> list:
    return list(value) if isinstance(value, (list, tuple)) else []


def _float(value: Any, default: float = 0.0) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        return default


def _optional_float(value: Any) -> float | None:
    return None if value is None else _float(value)


def _int(value: Any, default: int = 0) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return default


def _texts(value: Any) -> tuple[str, ...]:
    return tuple(str(v) for v in _list(value))


def passages_by_id(payload: Payload) -> dict[str, str]:
    """Chunk id -> text of every passage the generators saw (the safe context), and of the citations."""
    texts = {str(c.get("chunk_id", "")): str(c.get("text", "")) for c in map(_mapping, _list(payload.get("citations")))}
    for entry in map(_mapping, _list(payload.get("context"))):
        chunk = _mapping(entry.get("chunk"))
        if chunk.get("id"):
            texts[str(chunk["id"])] = str(chunk.get("text", ""))
    texts.pop("", None)
    return texts


def evidence_sentence(claim: str, cited: list[str]) -> str:
    """The sentence of the cited passages closest to the claim by shared content words (Jaccard), "" if
    none shares a word with it."""
    return closest_sentences(claim, cited)


def candidates_from_payload(payload: Payload) -> tuple[CandidateSummary, ...]:
    passages = passages_by_id(payload)
    out = []
    for cand in map(_mapping, _list(payload.get("candidates"))):
        if not cand:
            continue
        generation = _mapping(cand.get("generation"))
        claims = []
        for check in map(_mapping, _list(cand.get("checks"))):
            claim = _mapping(check.get("claim"))
            text, citations = str(claim.get("text", "")), _texts(claim.get("citations"))
            claims.append(ClaimSummary(text=text, supported=bool(check.get("supported")),
                                       coverage=_float(check.get("coverage")), reason=str(check.get("reason", "")),
                                       citations=citations, label=str(check.get("label") or ""),
                                       evidence=evidence_sentence(text, [passages[c] for c in citations
                                                                         if c in passages]),
                                       origin=str(check.get("origin") or ""),
                                       entailment=_optional_float(check.get("entailment")),
                                       premise=str(check.get("premise") or "")))
        out.append(CandidateSummary(agent_id=str(cand.get("agent_id", "")), answer=str(generation.get("answer", "")),
                                    support_rate=_float(cand.get("support_rate")),
                                    credibility=_float(cand.get("credibility")),
                                    agreeing=_texts(cand.get("agreeing")), claims=tuple(claims),
                                    challenge=str(cand.get("challenge") or ""),
                                    relevance=_optional_float(cand.get("relevance")),
                                    off_topic=bool(cand.get("off_topic")),
                                    relevance_by=str(cand.get("relevance_by") or "")))
    return tuple(out)


def positions_of(candidates: tuple[CandidateSummary, ...]) -> tuple[Position, ...]:
    """Candidates joined wherever one agrees with another (either way), most credible position first."""
    ids = [c.agent_id for c in candidates]
    group = {agent: agent for agent in ids}

    def root(agent: str) -> str:
        while group[agent] != agent:
            agent = group[agent]
        return agent
    for cand in candidates:
        for other in cand.agreeing:
            if other in group:
                group[root(other)] = root(cand.agent_id)
    members: dict[str, list[CandidateSummary]] = {}
    for cand in candidates:
        members.setdefault(root(cand.agent_id), []).append(cand)
    positions = []
    for side in members.values():
        side.sort(key=lambda c: (-c.credibility, c.agent_id))
        positions.append(Position(tuple(c.agent_id for c in side), side[0].answer, side[0].support_rate,
                                  side[0].credibility))
    return tuple(sorted(positions, key=lambda p: (-p.credibility, p.agents)))


def cascade_from_payload(payload: Payload) -> CascadeSummary | None:
    """None when the question was not watched (no cascade in the payload)."""
    cascade = payload.get("cascade")
    if not isinstance(cascade, Mapping):
        return None
    scores = []
    for score in map(_mapping, _list(cascade.get("scores"))):
        scores.append(StageScoreSummary(
            index=_int(score.get("index")), stage=str(score.get("stage", "")), hop=_int(score.get("hop")),
            attempt=_int(score.get("attempt")), sfv=_float(score.get("a_sfv")), csct=_float(score.get("a_csct")),
            cpm=_float(score.get("a_cpm")), p=_float(score.get("p")), fired=bool(score.get("fired")),
            cascade_type=str(score.get("cascade_type") or ""), reasons=_texts(score.get("reasons"))))
    stage = cascade.get("stage")
    return CascadeSummary(fired=bool(cascade.get("fired")), stage=None if stage is None else _int(stage),
                          cascade_type=str(cascade.get("cascade_type") or ""),
                          mitigation=str(cascade.get("mitigation") or "none"),
                          resolved=bool(cascade.get("resolved", True)), reason=str(cascade.get("reason") or ""),
                          scores=tuple(scores))


def decided_agents(payload: Payload) -> tuple[str, ...]:
    """The agents an operator's decision on this answer credits or debits (as Engine.decide counts them)."""
    try:
        decided = DecidedAnswer.from_payload(payload)
    except (ValueError, TypeError, AttributeError):
        return ()
    return (*decided.generators, *decided.cited_retrievers)


def agents_from_payload(payload: Payload) -> tuple[AgentSummary, ...]:
    """Every agent called for the answer, in the order they were called, then verifiers known by their votes."""
    counts = set(decided_agents(payload))
    given = str(payload.get("answer", ""))
    kept: dict[str, int] = {}
    for entry in map(_mapping, _list(payload.get("context"))):
        for agent in _texts(entry.get("supported_by")):
            kept[agent] = kept.get(agent, 0) + 1
    suspects = {str(s.get("agent_id", "")): str(s.get("reason", "")) for s in map(_mapping, _list(payload.get("suspects")))}
    candidates = {str(c.get("agent_id", "")): c for c in map(_mapping, _list(payload.get("candidates")))}
    votes: dict[str, int] = {}
    for cand in candidates.values():
        for check in map(_mapping, _list(cand.get("checks"))):
            for vote in map(_mapping, _list(check.get("votes"))):
                verifier = str(vote.get("verifier", ""))
                votes[verifier] = votes.get(verifier, 0) + 1
    out, seen = [], set()
    for call in map(_mapping, _list(payload.get("agents"))):
        agent = str(call.get("agent_id", ""))
        if not agent or agent in seen:
            continue
        seen.add(agent)
        cand = candidates.get(agent)
        answer = str(_mapping(cand.get("generation")).get("answer", "")) if cand else ""
        out.append(AgentSummary(
            agent_id=agent, role=str(call.get("role", "")), status=str(call.get("status", "")),
            latency_ms=_float(call.get("latency_ms")), error=str(call.get("error") or ""),
            passages_kept=kept.get(agent, 0), suspect=suspects.get(agent, ""),
            gave_answer=bool(given) and answer == given,
            support_rate=_float(cand.get("support_rate")) if cand else None,
            challenge=str(cand.get("challenge") or "") if cand else "",
            challenge_outcome=_challenge_outcome(cand.get("challenge_outcome")) if cand else None,
            votes=votes.get(agent, 0),
            decision_counts=agent in counts))
    for verifier, n in votes.items():
        if verifier and verifier not in seen and verifier != LOCAL_VERIFIER:     # not the engine's own check
            out.append(AgentSummary(agent_id=verifier, role="verifier", status="", latency_ms=0.0, votes=n))
    return tuple(out)
