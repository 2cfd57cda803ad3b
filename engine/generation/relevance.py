"""Does each answer answer the question, read by the judge agents: verifier agents that serve `POST /answers`
(the Qwen judge, backend llm-judge). Their reading replaces the cross-encoder's on the questions where every
answer got one, so one question's answers are set aside on one scale, never on a mix of two.

An answer a judge could not read (no reply in time, a broken reply) keeps the cross-encoder's reading for the
whole question; a verifier that does not read answers (HTTP 404) is not asked again."""
from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Mapping, Protocol, Sequence

from ..errors import AgentError


class AnswerReader(Protocol):
    """A judge agent as the relevance check asks it (engine.agents.remote.RemoteAnswerReader is one)."""
    name: str

    async def read(self, question: str, answer: str, trace_id: str) -> tuple[float, str]: ...


@dataclass(frozen=True)
class JudgedRelevance:
    scores: Mapping[str, float]      # each generator's answer: P(it answers), the judges' mean
    readers: tuple[str, ...]         # the judges whose readings these are
    reasons: Mapping[str, str]       # each generator's answer: what the judges said, for people

    def describe(self) -> str:
        return f"{READ_BY}{', '.join(self.readers)}"


READ_BY = "read by "


def readers_of(relevance_by: str) -> tuple[str, ...]:
    """The judges named by a candidate's relevance_by (JudgedRelevance.describe); () for any other reading."""
    if not relevance_by.startswith(READ_BY):
        return ()
    return tuple(name for name in relevance_by.removeprefix(READ_BY).split(", ") if name)


async def judged_relevance(question: str, answers: Mapping[str, str], readers: Sequence[AnswerReader],
                           trace_id: str = "") -> JudgedRelevance | None:
    """Every answer read by every judge at once; None unless some judge read every answer."""
    todo = {agent: text for agent, text in answers.items() if text.strip()}
    if not readers or not todo:
        return None

    async def by(reader: AnswerReader) -> dict[str, tuple[float, str]] | None:
        try:
            readings = await asyncio.gather(*(reader.read(question, text, trace_id) for text in todo.values()))
        except AgentError:
            return None          # this judge is out of this question: the others (or the cross-encoder) decide
        return dict(zip(todo, readings))

    got = [(reader.name, r) for reader, r in zip(readers, await asyncio.gather(*(by(x) for x in readers)))
           if r is not None]
    if not got:
        return None
    scores = {agent: round(sum(r[agent][0] for _, r in got) / len(got), 4) for agent in todo}
    reasons = {agent: "; ".join(f"{name}: {r[agent][1]}" for name, r in got) for agent in todo}
    return JudgedRelevance(scores, tuple(name for name, _ in got), reasons)
