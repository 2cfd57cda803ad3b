"""Questions as an operator (or the demo traffic) asks them."""
from __future__ import annotations

from typing import Awaitable, Callable

from ..types import RiskTier
from ..answer import Answer

Ask = Callable[[str, "RiskTier | None", "str | None"], Awaitable[Answer]]


class QuestionsFacade:
    def __init__(self, ask: Ask) -> None:
        self._ask = ask

    async def ask(self, question: str, tier: RiskTier | None = None, trace_id: str | None = None) -> Answer:
        """tier: the operator's choice; None lets the settings' risk rules classify the question.
        trace_id: the caller's own (the console follows its question's progress by it); a new one if None.
        Its last event is QuestionAnswered, or QuestionFailed when it raises."""
        return await self._ask(question, tier, trace_id)
