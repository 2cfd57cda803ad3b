"""Questions adapter: ask the fleet; the answer (or the failure) comes back as signals."""
from __future__ import annotations

import asyncio

from PySide6.QtCore import Signal

from engine import RiskTier
from engine.events import QuestionReceived

from .core import Adapter, Attempt, Phase

AUTO_TIER = "auto"    # the tier the engine's risk rules choose


class QuestionsAdapter(Adapter):
    sig_started = Signal(str, str)             # trace_id, question (as the engine screened it)
    sig_answer = Signal(object)                # Answer
    sig_finished = Signal(bool)                # True if an answer came back; always follows ask()

    def __init__(self, core) -> None:
        super().__init__(core)
        self._running = 0

    @property
    def busy(self) -> bool:
        return self._running > 0

    @property
    def running(self) -> int:
        return self._running

    def ask(self, question: str, tier: str = AUTO_TIER) -> asyncio.Task | None:
        """tier: "auto" (the engine's risk rules decide) or low, medium, high."""
        core = self.core
        if core.phase is Phase.STARTING:
            core.report_error("the fleet is not ready for questions yet")
            return None
        if not core.require_ready("questions are not accepted"):
            return None
        try:
            risk = None if tier == AUTO_TIER else RiskTier(tier)
        except ValueError:
            core.report_error(f"unknown risk tier {tier!r} (expected auto, low, medium or high)")
            return None
        self._running += 1
        return core.spawn(self._ask(question, risk), "engine.ask")

    async def _ask(self, question: str, tier: RiskTier | None) -> None:
        ok = False
        try:
            outcome, answer = await self.core.attempt(lambda: self.engine.ask(question, tier),
                                                      context="the question failed", refusal_prefix="The question failed: ")
            if outcome is Attempt.DONE and self.core.ready:     # an answer that lands during shutdown is dropped
                self.sig_answer.emit(answer)
                ok = True
        finally:
            self._running -= 1
            self.sig_finished.emit(ok)

    def on_received(self, event: QuestionReceived) -> None:
        self.sig_started.emit(event.trace_id, event.question)
