"""Whether a cascade's answer reached an operator: put through the product's escalation policy
(engine.review.needs_review) and its approval queue on a real store, as the engine records a decided answer.

The cascade evaluation's "escalated" row counts what this finds in the queue, pending, not what the cascade
outcome says of itself (#50: "halted" and "escalated" were equal by construction)."""
from __future__ import annotations

import asyncio
import tempfile
import time
from pathlib import Path

from engine.answer import Answer
from engine.review import ReviewQueue, needs_review
from engine.schema import MIGRATIONS
from engine.store.db import Store
from engine.types import RiskTier, Verdict

from .cascade_run import RunResult


class OperatorQueue:
    """A temporary store and its approval queue, for one evaluation run (a context manager)."""

    def __init__(self, tier: RiskTier = RiskTier.MEDIUM) -> None:
        self.tier = tier
        self._dir = tempfile.TemporaryDirectory(prefix="quorum-cascade-queue-")
        self._loop = asyncio.new_event_loop()
        self._store = Store(Path(self._dir.name) / "queue.db", MIGRATIONS)
        self._loop.run_until_complete(self._store.open())
        self._queue = ReviewQueue(self._store)

    def reached(self, trace_id: str, question: str, result: RunResult) -> bool:
        """Records the run's answer as the engine would and says whether an operator now has it pending."""
        answer = Answer(trace_id, question, self.tier, Verdict.ANSWERED if result.answer else Verdict.ABSTAINED,
                        result.answer, "", (), (), (), (), {}, time.time(), cascade=result.outcome)
        why = needs_review(answer)
        if not why:
            return False
        return self._loop.run_until_complete(self._pending(answer, why))

    async def _pending(self, answer: Answer, why: str) -> bool:
        await self._queue.enqueue(answer, why)
        item = await self._queue.item_for(answer.trace_id)
        return item is not None and item.pending

    def close(self) -> None:
        self._loop.run_until_complete(self._store.aclose())
        self._loop.close()
        self._dir.cleanup()

    def __enter__(self) -> "OperatorQueue":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
