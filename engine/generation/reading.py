"""The judges' reading of one question's answers, as adjudication uses it (engine.generation.judging makes it)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

from ..settings.judge import JudgeSettings

READ_BY = "read by "


@dataclass(frozen=True)
class Reading:
    """The judges' reading of one question's answers."""
    scores: Mapping[str, float]               # generator -> P(its answer is the passages' answer), judges' mean
    agrees: Mapping[str, bool | None]         # generator -> does its answer state the judges' own answer
    own_answer: str                           # the most reputable judge's own answer ("" when not asked)
    readers: tuple[str, ...]
    passages: tuple[str, ...]                 # the chunk ids the judges read
    reference: float | None = None            # P(yes) of the engine's own reader's answer, read the same way
    is_reference: Mapping[str, bool] = field(default_factory=dict)   # generator -> its answer says no more than it

    def is_answer(self, agent: str, settings: JudgeSettings) -> bool:
        """The passages' answer: P(yes) at answers_at or above, and no more than [judge] margin below the reading
        of the engine's own reader's answer (a lone answer is compared with the context's best other sentence,
        not held to a fixed line; chosen on dev: docs/evaluation.md, "The judge reads with the context"). With
        [judge] own_answer, also not an answer that leaves out the judges' own answer."""
        p = self.scores.get(agent, 0.0)
        if p < settings.answers_at:
            return False
        if self.reference is not None and not self.is_reference.get(agent) and p < self.reference - settings.margin:
            return False
        return not settings.own_answer or self.agrees.get(agent) is not False

    def describe(self) -> str:
        return f"{READ_BY}{', '.join(self.readers)}"


def readers_of(relevance_by: str) -> tuple[str, ...]:
    """The judges named by a candidate's relevance_by (Reading.describe); () for any other reading."""
    if not relevance_by.startswith(READ_BY):
        return ()
    return tuple(name for name in relevance_by.removeprefix(READ_BY).split(", ") if name)
