"""Reviews adapter: the approval queue and the operator's decisions on it, one item or several at once."""
from __future__ import annotations

import asyncio
from typing import Iterable

from PySide6.QtCore import Signal

from engine import ReviewEnqueued

from .core import Adapter, Attempt

DECIDED_SHOWN = 100     # the latest decided items a load reads (every pending one comes first)


class ReviewsAdapter(Adapter):
    sig_changed = Signal(object)               # ReviewItem: enqueued by the engine, or decided
    sig_loaded = Signal(object)                # list[ReviewItem]: the queue as the store has it
    sig_failed = Signal(int, str)              # item id, why the decision was not saved
    sig_decided_many = Signal(object)          # tuple[DecisionOutcome, ...]: a bulk decision, item by item
    sig_many_failed = Signal(object, str)      # tuple of item ids, why none of them was decided
    sig_shift = Signal(object)                 # ShiftTally: each reviewer's progress over the shift, with each load

    def load(self, every_decision: bool = False) -> asyncio.Task | None:
        """Reads the approval queue: every pending item, then the latest DECIDED_SHOWN decisions (all of
        them with every_decision): sig_loaded."""
        if not self.core.require_ready("the approval queue cannot be read"):
            return None
        return self.core.spawn(self._load(None if every_decision else DECIDED_SHOWN), "review.load")

    def decide(self, item_id: int, approve: bool, reason: str, note: str = "") -> asyncio.Task | None:
        """Approves or rejects a review item as the operator: sig_changed with the decided item, or
        sig_failed(item_id, message) if the engine refused it (unlisted reason, "other" without a note,
        decided meanwhile)."""
        item_id = int(item_id)
        if not self.core.require_ready("decisions are not accepted", lambda m: self.sig_failed.emit(item_id, m)):
            return None
        return self.core.spawn(self._decide(item_id, bool(approve), reason, note), "review.decide")

    def claim(self, item_id: int, hold: bool = True) -> asyncio.Task | None:
        """Claims a pending item as the operator for the claim's lease (hold=False lets go of it): sig_changed with
        the item as it now is, or sig_failed(item_id, why) when another operator holds it or it was decided."""
        item_id = int(item_id)
        if not self.core.require_ready("items cannot be claimed", lambda m: self.sig_failed.emit(item_id, m)):
            return None
        return self.core.spawn(self._claim(item_id, bool(hold)), "review.claim")

    async def _claim(self, item_id: int, hold: bool) -> None:
        faces = self.engine.reviews
        act = faces.claim if hold else faces.unclaim
        outcome, item = await self.core.attempt(
            lambda: act(item_id, self.core.operator),
            context=f"the claim on review item #{item_id} was not saved",
            refused=lambda m: self.sig_failed.emit(item_id, m), announce_refusal=False)
        if outcome is Attempt.DONE:
            self.sig_changed.emit(item)
        elif outcome is Attempt.REFUSED:      # show the item as the store has it (claimed or decided elsewhere)
            await self._refresh(item_id)

    def decide_many(self, item_ids: Iterable[int], approve: bool, reason: str, note: str = "") -> asyncio.Task | None:
        """The same decision on several items, one by one (Engine.decide_many): sig_changed for every item
        whose state is now known (decided, or found decided by someone else), then sig_decided_many with
        each item's outcome. A refusal of the whole batch (an unlisted reason, ...) or a failure of the
        store is sig_many_failed(ids, message), and the queue is read again to show what did happen."""
        ids = tuple(int(i) for i in item_ids)
        if not self.core.require_ready("decisions are not accepted", lambda m: self.sig_many_failed.emit(ids, m)):
            return None
        return self.core.spawn(self._decide_many(ids, bool(approve), reason, note), "review.decide_many")

    async def _load(self, decided_limit: int | None) -> None:
        review = self.engine.reviews

        async def read():
            pending = await review.pending()
            decided = [i for i in await review.items(limit=decided_limit) if not i.pending]
            return pending + decided, await review.shift()
        outcome, read_out = await self.core.attempt(read, context="the approval queue could not be read")
        if outcome is Attempt.DONE:
            items, shift = read_out
            self.sig_loaded.emit(items)
            self.sig_shift.emit(shift)

    async def _decide(self, item_id: int, approve: bool, reason: str, note: str) -> None:
        outcome, item = await self.core.attempt(
            lambda: self.engine.reviews.decide(item_id, approve, self.core.operator, reason, note),
            context=f"the decision on review item #{item_id} was not saved",
            refused=lambda m: self.sig_failed.emit(item_id, m), announce_refusal=False)
        if outcome is Attempt.DONE:
            self.sig_changed.emit(item)
        elif outcome is Attempt.REFUSED:      # show the item as the store has it (decided elsewhere?)
            await self._refresh(item_id)

    async def _decide_many(self, ids: tuple[int, ...], approve: bool, reason: str, note: str) -> None:
        outcome, outcomes = await self.core.attempt(
            lambda: self.engine.reviews.decide_many(ids, approve, self.core.operator, reason, note),
            context=f"the decisions on {len(ids)} review items were not all saved",
            refused=lambda m: self.sig_many_failed.emit(ids, m), announce_refusal=False)
        if outcome is Attempt.DONE:
            for each in outcomes:
                if each.item is not None:
                    self.sig_changed.emit(each.item)
            self.sig_decided_many.emit(outcomes)
        elif outcome is Attempt.FAILED:       # some may have been decided before the failure: read them again
            await self._load(DECIDED_SHOWN)

    async def _refresh(self, item_id: int) -> None:
        outcome, item = await self.core.attempt(lambda: self.engine.reviews.get(item_id),
                                                context=f"review item #{item_id} could not be read")
        if outcome is Attempt.DONE and item is not None:
            self.sig_changed.emit(item)

    def on_enqueued(self, event: ReviewEnqueued) -> None:
        self.sig_changed.emit(event.item)
