"""Challenge-response: a generator with a doubtful claim is asked to show the evidence for it.

The engine checks what it shows itself: the quote must be in a chunk the generator cited, and must
back the claim by the engine's own verifier. The outcome is recorded on the candidate (and counts in
the reputation book); it never changes the verdict.
"""
from __future__ import annotations

import asyncio
import dataclasses
from dataclasses import dataclass
from typing import Awaitable, Callable, Mapping, Sequence

from ..types import Candidate, Chunk, ChallengeOutcome, ClaimCheck, ClaimLabel
from ..verify.verifier import Verifier
from .adjudicate import Decision


@dataclass(frozen=True)
class ChallengeResult:
    agent_id: str
    outcome: ChallengeOutcome
    text: str                   # for people: what it showed and why it passed or failed


class NoReply(Exception):
    """The agent did not answer the challenge; `reason` says how."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


# (candidate, its doubtful claim check) → (quote, cited chunk ids); raises NoReply; None: cannot be asked.
Ask = Callable[[Candidate, ClaimCheck], Awaitable[tuple[str, Sequence[str]] | None]]


def doubtful(decision: Decision) -> list[tuple[Candidate, ClaimCheck]]:
    """Each candidate with an unsupported claim, and its first such claim."""
    return [(c, next(k for k in c.checks if not k.supported)) for c in decision.candidates
            if not all(k.supported for k in c.checks)]


async def judge_quote(agent_id: str, claim: str, quote: str, cited: Sequence[str], evidence: Mapping[str, Chunk],
                      verifier: Verifier, trace_id: str = "") -> ChallengeResult:
    shown = [evidence[c] for c in cited if c in evidence and quote and quote in evidence[c].text]
    if not shown:
        return ChallengeResult(agent_id, ChallengeOutcome.QUOTE_NOT_CITED,
                               "failed: the quote it showed is not in the chunks it cited")
    judgement = await verifier.judge(claim, [Chunk(shown[0].id, quote)], trace_id)
    if judgement.label is ClaimLabel.SUPPORTED:
        return ChallengeResult(agent_id, ChallengeOutcome.PASSED, f"passed: showed [{shown[0].id}] \"{quote[:120]}\"")
    return ChallengeResult(agent_id, ChallengeOutcome.QUOTE_DOES_NOT_BACK,
                           f"failed: its quote [{shown[0].id}] does not back the claim ({judgement.reason})")


async def challenge(decision: Decision, context: Sequence[Chunk], ask: Ask, verifier: Verifier,
                    trace_id: str = "") -> tuple[Decision, tuple[ChallengeResult, ...]]:
    """The decision with each challenged candidate's outcome recorded, and the outcomes."""
    asked = doubtful(decision)
    if not asked:
        return decision, ()
    evidence = {chunk.id: chunk for chunk in context}

    async def one(candidate: Candidate, check: ClaimCheck) -> ChallengeResult:
        try:
            shown = await ask(candidate, check)
        except NoReply as exc:
            return ChallengeResult(candidate.agent_id, ChallengeOutcome.NO_REPLY, f"failed: no reply ({exc.reason})")
        if shown is None:
            return ChallengeResult(candidate.agent_id, ChallengeOutcome.NOT_ASKED,
                                   "not asked: the agent does not speak the challenge protocol")
        quote, cited = shown
        return await judge_quote(candidate.agent_id, check.claim.text, quote, cited, evidence, verifier, trace_id)

    results = tuple(await asyncio.gather(*(one(c, k) for c, k in asked)))
    by_agent = {r.agent_id: r for r in results}
    candidates = tuple(dataclasses.replace(c, challenge=by_agent[c.agent_id].text,
                                           challenge_outcome=by_agent[c.agent_id].outcome)
                       if c.agent_id in by_agent else c for c in decision.candidates)
    chosen = next((c for c in candidates if decision.chosen and c.agent_id == decision.chosen.agent_id), None)
    return dataclasses.replace(decision, candidates=candidates, chosen=chosen), results
