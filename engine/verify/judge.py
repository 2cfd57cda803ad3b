"""The LLM judge: a verifier agent (backend `llm-judge`) that reads meaning where words cannot.

It is asked two things, each with one prompt of engine.verify.judge_prompt:
- `read`: is each candidate the answer these passages give to the question (P(yes) of its first token), and,
  when asked, its own short answer from the passages;
- `judge_sync` (`POST /validate`): is a claim entailed by its aligned evidence (the closest sentence of each
  cited passage, as the evidence check reads it)?
- `instructs_sync` (`POST /screen`): does a passage hold an instruction aimed at the assistant that reads it?

Every text in a prompt is untrusted and goes in as plain data (judge_prompt.plain), and only the Yes/No
log-probabilities of one token, or a few words of its own answer, are read back.
"""
from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Sequence

from ..errors import AgentError
from ..text import aligned_evidence
from ..types import Chunk, ClaimLabel
from . import judge_prompt
from .judge_runtime import JudgeModel, JudgeModelFailed
from .verifier import Judgement, nothing_to_check

SUPPORTED_AT = 0.5            # P(yes) at or above which the judge votes supported, else refuted
OWN_ANSWER_TOKENS = 24        # the judge's own answer: a few words


def judgement_from(p: float, name: str, supported_at: float = SUPPORTED_AT) -> Judgement:
    """A claim's vote from the judge's P(yes) that its evidence supports it."""
    if p >= supported_at:
        return Judgement(ClaimLabel.SUPPORTED, round(p, 4),
                         f"the judge reads its evidence as supporting it (P(yes) = {p:.2f})", name)
    return Judgement(ClaimLabel.REFUTED, round(1.0 - p, 4),
                     f"the judge reads its evidence as not supporting it (P(yes) = {p:.2f})", name)


def claim_prompt(claim: str, evidence: Sequence[Chunk], name: str) -> Judgement | list[dict]:
    """The entailment prompt for a claim, or the judgement already made when there is nothing to read."""
    if (unchecked := nothing_to_check(claim, evidence, name)) is not None:
        return unchecked
    # Each cited passage's closest sentence, after its title: "It opened in 1890" says nothing alone.
    aligned = [(judge_prompt.title_of(c), aligned_evidence(claim, [c.text])) for c in {c.id: c for c in evidence}.values()]
    premise = " ".join(f"({title}) {sentence}" if title else sentence for title, sentence in aligned if sentence)
    if not premise:
        return Judgement(ClaimLabel.NOT_ENOUGH, 1.0, "no sentence of its evidence shares a word with it", name)
    return judge_prompt.entails(premise, claim)


class JudgeVerifier:
    """The built-in judge agent's backend: one model, asked one request at a time (the model's own loop
    queues them; its cache keeps the last prompt, which the next reading of the same question shares)."""

    def __init__(self, model: JudgeModel, name: str = "llm-judge", supported_at: float = SUPPORTED_AT) -> None:
        self.model, self.name, self.supported_at = model, name, supported_at

    def _p_yes(self, messages: list[dict]) -> float:
        p = self.model.p_yes(messages)
        if p is None:
            raise JudgeModelFailed("the model put neither Yes nor No among its likely first words")
        return round(p, 4)

    def judge_sync(self, claim: str, evidence: Sequence[Chunk]) -> Judgement:
        prompt = claim_prompt(claim, evidence, self.name)
        if isinstance(prompt, Judgement):
            return prompt
        return judgement_from(self._p_yes(prompt), self.name, self.supported_at)

    def instructs_sync(self, texts: Sequence[str]) -> tuple[float, ...]:
        """P(yes) that each text holds an instruction aimed at the AI assistant reading it."""
        return tuple(self._p_yes(judge_prompt.instructs(t)) for t in texts)

    def read_sync(self, question: str, passages: Sequence[Chunk], candidates: Sequence[str],
                  own_answer: bool = False) -> tuple[tuple[float, ...], str]:
        """(P(yes) for each candidate, the judge's own short answer or "")."""
        scores = tuple(self._p_yes(judge_prompt.reading(question, passages, c)) for c in candidates)
        answer = self.model.generate(judge_prompt.own_answer(question, passages), OWN_ANSWER_TOKENS) if own_answer else ""
        return scores, answer


@dataclass(frozen=True)
class JudgeReply:
    """What a judge says of one question's candidates (as the protocol's ReadReply says it)."""
    scores: tuple[float, ...]
    answer: str = ""
    reason: str = ""


class LocalJudge:
    """A judge in this process, asked as the engine asks a judge agent (POST /read, POST /validate): for the
    evaluations, which decide questions without a fleet. The product asks the ver-judge agent instead."""

    def __init__(self, judge: JudgeVerifier) -> None:
        self.inner, self.name = judge, judge.name

    async def read(self, question: str, passages: Sequence[Chunk], candidates: Sequence[str], trace_id: str = "", *,
                   own_answer: bool = False) -> JudgeReply:
        try:
            scores, answer = await asyncio.to_thread(self.inner.read_sync, question, passages, candidates, own_answer)
        except JudgeModelFailed as exc:          # a failed reading, as an agent's failed call reads
            raise AgentError(self.name, str(exc)) from None
        return JudgeReply(scores, answer)

    async def screen(self, texts: Sequence[str], trace_id: str = "") -> JudgeReply:
        try:
            return JudgeReply(await asyncio.to_thread(self.inner.instructs_sync, texts))
        except JudgeModelFailed as exc:
            raise AgentError(self.name, str(exc)) from None

    async def judge(self, claim: str, evidence: Sequence[Chunk], trace_id: str = "") -> Judgement:
        try:
            return await asyncio.to_thread(self.inner.judge_sync, claim, evidence)
        except JudgeModelFailed as exc:
            raise AgentError(self.name, str(exc)) from None
