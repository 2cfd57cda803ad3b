"""Trusted generation: check every answer claim by claim, compare answers, decide.

1. claims: the generator's declared claims plus every atomic claim split from its answer;
2. evidence: each claim against the context chunks it cites (citations outside the safe context
   are not evidence) by the verifier (one, or several voting);
3. consistency: how much of each answer the other answers state too, with the same facts;
4. credibility = weighted support rate, consistency and reputation (weights in config);
5. verdict: the most credible answer when its claims are supported (>= min_support) and no
   supported rival comes within contest_margin of it; otherwise abstain with the positions.
"""
from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Mapping, Sequence

from ..config import GenerationSettings
from ..settings.judge import JudgeSettings
from ..text import coverage
from ..types import (Candidate, CheckReason, Chunk, Claim, ClaimCheck, ClaimLabel, ClaimOrigin, ContextChunk, Generation,
                     JudgeNote, Verdict)
from ..verify.dated import dated_conflict
from ..verify.verifier import Judgement, Verifier
from .claims import claims_to_check
from .consistency import contradicts, mutual_agreement
from .reading import Reading


@dataclass(frozen=True)
class Decision:
    verdict: Verdict
    chosen: Candidate | None
    candidates: tuple[Candidate, ...]
    reason: str
    judge: JudgeNote = JudgeNote()       # what the judges did (engine.generation.judging)


async def check_claim(claim: Claim, evidence: Mapping[str, Chunk], verifier: Verifier,
                      origin: ClaimOrigin = ClaimOrigin.DECLARED, trace_id: str = "") -> ClaimCheck:
    if not claim.citations:
        return ClaimCheck(claim, False, 0.0, "cites nothing", ClaimLabel.NOT_ENOUGH, 1.0, origin,
                          reason_kind=CheckReason.CITES_NOTHING)
    unknown = [c for c in claim.citations if c not in evidence]
    if unknown:
        return ClaimCheck(claim, False, 0.0, f"cites chunks not in the context: {', '.join(unknown)}",
                          ClaimLabel.NOT_ENOUGH, 1.0, origin, reason_kind=CheckReason.CITES_UNKNOWN)
    judgement = await verifier.judge(claim.text, [evidence[c] for c in claim.citations], trace_id)
    covered = coverage(claim.text, " ".join(evidence[c].text for c in claim.citations))
    return ClaimCheck(claim, judgement.label is ClaimLabel.SUPPORTED, round(covered, 3), judgement.reason,
                      judgement.label, judgement.score, origin, judgement.ballots)


class JudgedOnce:
    """A verifier that judges each (claim, evidence) once per question: generators that state the same claim
    on the same passages (extractive ones often do) share one judgement, and one round trip to each verifier."""

    def __init__(self, verifier: Verifier) -> None:
        self.verifier = verifier
        self.name = verifier.name
        self._judged: dict[tuple, asyncio.Future] = {}

    def judge(self, claim: str, evidence, trace_id: str = "") -> "asyncio.Future[Judgement]":
        key = (claim, tuple((c.id, c.text) for c in evidence))
        if key not in self._judged:
            self._judged[key] = asyncio.ensure_future(self.verifier.judge(claim, evidence, trace_id))
        return self._judged[key]


def credibility(support: float, consistency: float, reputation: float, s: GenerationSettings) -> float:
    """The one formula that ranks answers; its weights live in config/engine.toml [generation]."""
    total = s.weight_support + s.weight_consistency + s.weight_reputation or 1.0
    return round((s.weight_support * support + s.weight_consistency * consistency
                  + s.weight_reputation * reputation) / total, 4)


async def adjudicate(question: str, generations: Mapping[str, Generation], context: tuple[ContextChunk, ...],
                     settings: GenerationSettings, verifier: Verifier, *, embedder=None,
                     reputations: Mapping[str, float] | None = None, trace_id: str = "",
                     free_text: frozenset[str] = frozenset(), reading: Reading | None = None,
                     judge_settings: JudgeSettings = JudgeSettings()) -> Decision:
    """free_text: generators (LLMs) whose answer may be given only with settings.free_text_min_support of its
    claims supported (all, by default): it is still a position, shown, but never the answer with a claim short.
    reading: the judges' reading of the answers against their passages (engine.generation.judging); where given,
    it decides which answers are the passages' answer (Reading.is_answer)."""
    evidence = {c.chunk.id: c.chunk for c in context}
    answered = {agent: gen for agent, gen in generations.items() if gen.answer.strip()}
    if not answered:
        return Decision(Verdict.NO_ANSWER, None, (), "no generator produced an answer")
    reputations = reputations or {}
    # Every generator's claims at once: the verifiers' round trips overlap instead of queueing per generator.
    once = verifier if isinstance(verifier, JudgedOnce) else JudgedOnce(verifier)
    checked = await asyncio.gather(*(asyncio.gather(*(check_claim(claim, evidence, once, origin, trace_id)
                                                      for claim, origin in claims_to_check(
                                                          gen, whole_answer=agent in free_text)))
                                     for agent, gen in answered.items()))
    checks: dict[str, tuple[ClaimCheck, ...]] = {agent: tuple(c) for agent, c in zip(answered, checked)}
    relevance: dict[str, float] = {}
    answers_at, relevance_by = 0.0, ""
    off_topic: set[str] = set()
    if reading is not None:
        # What the judges read as not the passages' answer is set aside.
        relevance, answers_at, relevance_by = dict(reading.scores), judge_settings.answers_at, reading.describe()
        off_topic = {agent for agent in answered if agent in relevance and not reading.is_answer(agent, judge_settings)}
    stated = {agent: [c.claim.text for c in checks[agent]] for agent in answered}
    support = {agent: sum(c.supported for c in checks[agent]) / len(checks[agent]) if checks[agent] else 0.0
               for agent in answered}
    # Agreement counts only among answers that answer and are supported: two colluders who agree with each
    # other on a sentence that does not answer cannot outvote the one answer that does.
    passing = [a for a in answered if a not in off_topic and support[a] >= settings.min_support]
    candidates = []
    for agent, gen in answered.items():
        others = [o for o in passing if o != agent]
        scores = {o: mutual_agreement(stated[agent], stated[o], embedder, settings.claim_match) for o in others}
        agreeing = tuple(o for o, score in scores.items() if score >= settings.answer_match)
        consistency = sum(scores.values()) / len(scores) if scores else 1.0
        candidates.append(Candidate(agent, gen, checks[agent], round(support[agent], 4), agreeing,
                                    credibility(support[agent], consistency, reputations.get(agent, 1.0), settings),
                                    consistency=round(consistency, 4), relevance=relevance.get(agent),
                                    off_topic=agent in off_topic,
                                    relevance_by=relevance_by if agent in relevance else ""))
    # Equal credibility (the same true claims in another order) goes to the answer most generators
    # gave word for word, never to whichever agent id sorts first.
    same_answer = {c.agent_id: sum(o.generation.answer.strip() == c.generation.answer.strip() for o in candidates)
                   for c in candidates}
    candidates.sort(key=lambda c: (-c.credibility, -same_answer[c.agent_id], c.agent_id))
    short = {c.agent_id for c in candidates
             if c.agent_id in free_text and c.support_rate < settings.free_text_min_support}
    if reading is not None and off_topic and all(c.agent_id in off_topic for c in candidates):
        best = max(candidates, key=lambda c: c.relevance or 0.0)
        own = f"; the judges' own answer from them: \"{reading.own_answer}\"" if reading.own_answer else ""
        return Decision(Verdict.ABSTAINED, None, tuple(candidates),
                        f"no answer is the passages' answer to the question (the closest: P = "
                        f"{best.relevance or 0.0:.2f}, needs {answers_at:.2f}, {relevance_by}){own}")
    eligible = [c for c in candidates if c.agent_id not in short and c.agent_id not in off_topic]
    if not eligible:
        best = candidates[0]
        return Decision(Verdict.ABSTAINED, None, tuple(candidates),
                        f"no answer is supported by its evidence (best: {best.support_rate:.0%} of claims, "
                        f"from an LLM whose every claim must be)")
    best = eligible[0]
    if best.support_rate < settings.min_support:
        return Decision(Verdict.ABSTAINED, None, tuple(candidates),
                        f"no answer is supported by its evidence (best: {best.support_rate:.0%} of claims)")
    # Honest sources of different dates that give different values: the newer one is preferred,
    # so an answer from the outdated source neither wins nor contests.
    conflict = dated_conflict(question, tuple(c.chunk for c in context))
    outdated: set[str] = set()
    if conflict is not None:
        outdated = {s.chunk_id for s in conflict.older}
        best = _prefer_newer(best, eligible, conflict.newer.chunk_id, outdated, settings)
    # A supported answer contests the best one when it states another fact about the same thing
    # and comes within contest_margin, or when nothing at all sets the two apart (equal credibility).
    # One that says something different but compatible (another true sentence) and is less
    # credible does not: two honest generators may quote different true sentences.
    rivals = [c for c in eligible if c is not best and c.agent_id not in best.agreeing
              and c.support_rate >= settings.min_support and not (outdated and _cites(c, outdated))
              and (c.credibility >= best.credibility
                   or (c.credibility >= best.credibility - settings.contest_margin
                       and contradicts(stated[best.agent_id], stated[c.agent_id], embedder, settings.claim_match)))]
    if rivals:
        return Decision(Verdict.ABSTAINED, None, tuple(candidates),
                        f"no consistent conclusion: {len(rivals) + 1} supported answers disagree")
    reason = (f"supported by {best.support_rate:.0%} of its claims; "
              f"{len(best.agreeing) + 1} of {len(candidates)} generators agree")
    if best.relevance is not None:
        reason += f"; the passages' answer (P = {best.relevance:.2f}, {relevance_by})"
    if off_topic:
        reason += f"; {len(off_topic)} that do not answer set aside"
    if conflict is not None and _from_outdated(best, conflict.newer.chunk_id, outdated):
        reason += f"; no generator answered from the newer source: {conflict.describe()}"
    elif conflict is not None:
        reason += f"; {conflict.describe()}"
    return Decision(Verdict.ANSWERED, best, tuple(candidates), reason)


def _cites(candidate: Candidate, chunk_ids: set[str]) -> bool:
    return any(cid in chunk_ids for claim in candidate.generation.claims for cid in claim.citations)


def _from_outdated(candidate: Candidate, newer: str, outdated: set[str]) -> bool:
    return _cites(candidate, outdated) and not _cites(candidate, {newer})


def _prefer_newer(best: Candidate, candidates: list[Candidate], newer: str, outdated: set[str],
                  settings: GenerationSettings) -> Candidate:
    """An answer drawn from an outdated source gives way to a supported one from the newer source."""
    if not _from_outdated(best, newer, outdated):
        return best
    fresh = [c for c in candidates if c.support_rate >= settings.min_support
             and _cites(c, {newer}) and not _cites(c, outdated)]
    return fresh[0] if fresh else best
