"""Questions adapter: ask the fleet; its progress through the stages, then the answer (or the failure),
come back as signals.

The adapter gives each of the operator's questions its trace id before the engine sees it, so the
progress of that question is told apart from everything else the engine is doing (demo traffic,
questions of the command line on the same store)."""
from __future__ import annotations

import asyncio

from PySide6.QtCore import Signal

from engine import QuestionReceived, RiskTier, StageProgressed, new_trace_id

from .core import Adapter, Attempt, Phase

AUTO_TIER = "auto"    # the tier the engine's risk rules choose


class QuestionsAdapter(Adapter):
    sig_asked = Signal(str, str)               # trace_id, question: one of the operator's, handed to the engine
    sig_started = Signal(str, str)             # trace_id, question (as the engine screened it): every question
    sig_progress = Signal(object)              # StageProgressed of the operator's own questions
    sig_any_progress = Signal(object)          # StageProgressed of every question
    sig_answer = Signal(object)                # Answer
    sig_finished = Signal(bool)                # True if an answer came back; always follows ask()

    def __init__(self, core) -> None:
        super().__init__(core)
        self._running = 0
        self._mine: set[str] = set()           # trace ids of the operator's questions in flight

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
        trace_id = new_trace_id()
        self._mine.add(trace_id)
        self.sig_asked.emit(trace_id, question)
        return core.spawn(self._ask(question, risk, trace_id), "engine.ask")

    async def _ask(self, question: str, tier: RiskTier | None, trace_id: str) -> None:
        ok = False
        try:
            outcome, answer = await self.core.attempt(lambda: self.engine.questions.ask(question, tier, trace_id),
                                                      context="the question failed", refusal_prefix="The question failed: ")
            if outcome is Attempt.DONE and self.core.ready:     # an answer that lands during shutdown is dropped
                self.sig_answer.emit(answer)
                ok = True
        finally:
            self._running -= 1
            self._mine.discard(trace_id)
            self.sig_finished.emit(ok)

    def on_received(self, event: QuestionReceived) -> None:
        self.sig_started.emit(event.trace_id, event.question)

    def on_progress(self, event: StageProgressed) -> None:
        self.sig_any_progress.emit(event)
        if event.trace_id in self._mine:
            self.sig_progress.emit(event)
