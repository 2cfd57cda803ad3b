"""Generation v1: check each answer against its evidence, compare answers, decide.

Support is measured honestly for what it is: lexical coverage of each claim's content words by
the chunks it cites, and exact agreement of its numbers. Issue #4 replaces this with a fuller
verifier; the verdict rules stay here in one place.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..config import GenerationSettings
from ..text import content_words, negations, numbers
from ..types import Candidate, Claim, ClaimCheck, ContextChunk, Generation, Verdict
from ..verify.sentences import same_claim


@dataclass(frozen=True)
class Decision:
    verdict: Verdict
    chosen: Candidate | None
    candidates: tuple[Candidate, ...]
    reason: str


def check_claim(claim: Claim, evidence: dict[str, str], settings: GenerationSettings) -> ClaimCheck:
    if not claim.citations:
        return ClaimCheck(claim, False, 0.0, "cites nothing")
    unknown = [c for c in claim.citations if c not in evidence]
    if unknown:
        return ClaimCheck(claim, False, 0.0, f"cites chunks not in the context: {', '.join(unknown)}")
    cited = " ".join(evidence[c] for c in claim.citations)
    wanted = set(content_words(claim.text))
    if not wanted:
        return ClaimCheck(claim, False, 0.0, "no content words")
    coverage = len(wanted & set(content_words(cited))) / len(wanted)
    missing_numbers = numbers(claim.text) - numbers(cited)
    if missing_numbers:
        return ClaimCheck(claim, False, round(coverage, 3), f"numbers not in evidence: {', '.join(sorted(missing_numbers))}")
    added_negations = negations(claim.text) - negations(cited)
    if added_negations:
        return ClaimCheck(claim, False, round(coverage, 3), f"negation not in evidence: {', '.join(sorted(added_negations))}")
    if coverage < settings.claim_coverage:
        return ClaimCheck(claim, False, round(coverage, 3), f"only {coverage:.0%} of its words are in the evidence")
    return ClaimCheck(claim, True, round(coverage, 3), "supported")


def _checks(gen: Generation, evidence: dict[str, str], settings: GenerationSettings) -> tuple[ClaimCheck, ...]:
    checks = [check_claim(claim, evidence, settings) for claim in gen.claims]
    # The answer is a claim too, against everything it cites: nothing uncited can hide in it
    # (unless it is word for word one of the claims just checked).
    if gen.answer.strip() not in {claim.text.strip() for claim in gen.claims}:
        cited = tuple(dict.fromkeys(c for claim in gen.claims for c in claim.citations))
        checks.append(check_claim(Claim(gen.answer, cited), evidence, settings))
    return tuple(checks)


def adjudicate(generations: dict[str, Generation], context: tuple[ContextChunk, ...],
               settings: GenerationSettings) -> Decision:
    evidence = {c.chunk.id: c.chunk.text for c in context}
    answered = {agent: gen for agent, gen in generations.items() if gen.answer.strip()}
    if not answered:
        return Decision(Verdict.NO_ANSWER, None, (), "no generator produced an answer")
    candidates = []
    for agent, gen in answered.items():
        checks = _checks(gen, evidence, settings)
        support = sum(c.supported for c in checks) / len(checks)
        agreeing = tuple(other for other, og in answered.items()
                         if other != agent and same_claim(gen.answer, og.answer, settings.answer_match))
        agreement = (len(agreeing) + 1) / len(answered)
        credibility = round(0.6 * support + 0.4 * agreement, 4)
        candidates.append(Candidate(agent, gen, checks, round(support, 4), agreeing, credibility))
    candidates.sort(key=lambda c: (-c.credibility, c.agent_id))
    best = candidates[0]
    if best.support_rate < settings.min_support:
        return Decision(Verdict.ABSTAINED, None, tuple(candidates),
                        f"no answer is supported by its evidence (best: {best.support_rate:.0%} of claims)")
    rivals = [c for c in candidates[1:] if c.agent_id not in best.agreeing
              and c.support_rate >= settings.min_support and c.credibility >= best.credibility - 0.1]
    if rivals:
        return Decision(Verdict.ABSTAINED, None, tuple(candidates),
                        f"no consistent conclusion: {len(rivals) + 1} supported answers disagree")
    return Decision(Verdict.ANSWERED, best, tuple(candidates),
                    f"supported by {best.support_rate:.0%} of its claims; "
                    f"{len(best.agreeing) + 1} of {len(candidates)} generators agree")
