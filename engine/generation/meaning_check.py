"""Reading for meaning, after the word checks: does each claim's evidence entail it, and does each answer
answer the question?

Each claim is read against its aligned evidence: from each passage it cites, the one sentence that shares the
most of its words (a second sentence of the same passage lowered the model's reading of honest claims: on
HotpotQA dev, honest false flags went from 0.06 to 0.32 at the same thresholds); a claim too short to be a
statement ("Phobos and Deimos") is read as the answer to the question ("What are the two moons of Mars? Phobos
and Deimos"). A claim the words supported but the meaning does not is no longer supported; a claim the words
could not place (a paraphrase, an LLM's short answer) is supported when its evidence entails it with at least
`lift` confidence, and never when a check refuted it.
A question's pairs go to the model in one batch per task, off the event loop."""
from __future__ import annotations

import asyncio
from dataclasses import dataclass, replace
from typing import Mapping, Protocol, Sequence

from ..settings.meaning import MeaningSettings
from ..text import aligned_evidence, sentences
from ..types import CheckReason, ClaimCheck, ClaimLabel
from ..verify.meaning import ANSWERS, ENTAILS
SHORT_CLAIM_WORDS = 5        # fewer words than this: read as the answer to the question, not as a statement


class MeaningReader(Protocol):
    """What the check needs of a meaning model (engine.verify.meaning.MeaningModel is one)."""
    entails_threshold: float
    answers_threshold: float

    def score(self, task: str, pairs: Sequence[tuple[str, str]]) -> list[float]: ...


@dataclass(frozen=True)
class MeaningRead:
    checks: Mapping[str, tuple[ClaimCheck, ...]]    # each generator's claim checks, entailment read
    relevance: Mapping[str, float]                  # each generator's answer: P(it answers the question)
    answers_threshold: float


def hypothesis(question: str, claim: str) -> str:
    """What the evidence must entail: the claim, or for a fragment the question with the claim as its answer."""
    if len(claim.split()) < SHORT_CLAIM_WORDS:
        return f"{question.strip()} {claim.strip()}"
    return claim


def _verbatim(claim: str, premise: str) -> bool:
    """A statement that is word for word one whole sentence of its evidence: entailed, with no model call (a part
    of a sentence is not: "it is not certain that X" holds "X")."""
    def norm(text: str) -> str:
        return " ".join(text.lower().split()).rstrip(".")
    return len(claim.split()) >= SHORT_CLAIM_WORDS and norm(claim) in {norm(s) for s in sentences(premise)}


async def read_meaning(question: str, answers: Mapping[str, str], checks: Mapping[str, tuple[ClaimCheck, ...]],
                       passages: Mapping[str, str], model: MeaningReader, settings: MeaningSettings) -> MeaningRead:
    """answers: each generator's answer text; checks: its word checks; passages: chunk id -> text."""
    entails_at = settings.entails_threshold or model.entails_threshold
    answers_at = settings.answers_threshold or model.answers_threshold
    pairs: dict[tuple[str, str], float | None] = {}
    premises: dict[tuple[str, int], tuple[str, str]] = {}
    for agent, agent_checks in checks.items():
        for i, check in enumerate(agent_checks):
            if check.reason_kind is not CheckReason.JUDGED or check.label is ClaimLabel.REFUTED:
                continue          # nothing to read against, or already refuted
            cited = [passages[c] for c in check.claim.citations if c in passages]
            premise = aligned_evidence(check.claim.text, cited)
            if not premise:
                continue
            pair = (premise, hypothesis(question, check.claim.text))
            premises[(agent, i)] = pair
            pairs.setdefault(pair, 1.0 if _verbatim(check.claim.text, premise) else None)
    relevance_pairs = {agent: (question, text) for agent, text in answers.items() if text.strip()}
    todo = [pair for pair, known in pairs.items() if known is None]
    entailed, relevant = await asyncio.to_thread(_score, model, todo, list(dict.fromkeys(relevance_pairs.values())))
    pairs.update(entailed)
    read: dict[str, tuple[ClaimCheck, ...]] = {}
    for agent, agent_checks in checks.items():
        out = []
        for i, check in enumerate(agent_checks):
            pair = premises.get((agent, i))
            out.append(check if pair is None else _judged(check, pair[0], pairs[pair], entails_at, settings.lift))
        read[agent] = tuple(out)
    return MeaningRead(read, {agent: relevant[pair] for agent, pair in relevance_pairs.items()}, answers_at)


def _score(model: MeaningReader, entail_pairs: list[tuple[str, str]], answer_pairs: list[tuple[str, str]]):
    entailed = dict(zip(entail_pairs, model.score(ENTAILS, entail_pairs))) if entail_pairs else {}
    relevant = dict(zip(answer_pairs, model.score(ANSWERS, answer_pairs))) if answer_pairs else {}
    return entailed, relevant


def _judged(check: ClaimCheck, premise: str, p: float, entails_at: float, lift: float) -> ClaimCheck:
    check = replace(check, entailment=round(p, 4), premise=premise)
    if check.supported and p < entails_at:
        return replace(check, supported=False, label=ClaimLabel.NOT_ENOUGH, reason_kind=CheckReason.NOT_ENTAILED,
                       reason=f"its evidence does not entail it (P = {p:.2f}; the words matched: {check.reason})")
    if not check.supported and check.label is ClaimLabel.NOT_ENOUGH and lift and p >= lift:
        return replace(check, supported=True, label=ClaimLabel.SUPPORTED, reason_kind=CheckReason.ENTAILED,
                       reason=f"its evidence entails it (P = {p:.2f}) though the words differ ({check.reason})")
    return check
