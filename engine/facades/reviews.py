"""The approval queue as an operator works it (engine.review): read, claim, decide one item or several."""
from __future__ import annotations

from typing import Awaitable, Callable, Iterable

from ..errors import InputError, StoreError
from ..reputation.answer_evidence import DecidedAnswer
from ..reputation.keeper import ReputationKeeper, ReputationUpdate
from ..review import DecisionOutcome, ReviewItem, ReviewQueue, ShiftTally, check_decision, check_operator

Changed = Callable[[ReputationUpdate], Awaitable[None]]     # ReputationFacade.changed


class ReviewsFacade:
    def __init__(self, queue: ReviewQueue, keeper: ReputationKeeper, changed: Changed) -> None:
        self._queue, self._keeper, self._changed = queue, keeper, changed

    async def pending(self) -> list[ReviewItem]:
        return await self._queue.pending()

    async def items(self, status: str | None = None, limit: int | None = 100) -> list[ReviewItem]:
        return await self._queue.items(status, limit=limit)

    async def get(self, item_id: int | str) -> ReviewItem | None:
        return await self._queue.get(item_id)

    async def shift(self, hours: float | None = None) -> ShiftTally:
        """Each reviewer's progress over the last `hours` (default [review] shift_h): decisions, approvals toward a
        quorum, holds, wait."""
        return await self._queue.shift(hours)

    async def item_for(self, trace_id: str) -> ReviewItem | None:
        """The approval-queue item of the answer with this trace id, or None if it did not need review."""
        return await self._queue.item_for(trace_id)

    async def claim(self, item_id: int | str, operator: str) -> ReviewItem:
        """Holds a pending item for this operator for the claim's lease (engine.review.queue.CLAIM_LEASE_S)."""
        return await self._queue.claim(item_id, operator)

    async def unclaim(self, item_id: int | str, operator: str) -> ReviewItem:
        return await self._queue.unclaim(item_id, operator)

    async def decide(self, item_id: int, approve: bool, operator: str, reason: str, note: str = "") -> ReviewItem:
        """An operator's decision on a waiting answer; the agents behind the answer gain or lose by it."""
        item = await self._queue.decide(item_id, approve, operator, reason, note)
        if not item.pending:        # an approval counted toward a quorum decides nothing yet
            try:
                await self._changed(await self._keeper.after_decision(DecidedAnswer.from_payload(item.payload),
                                                                      approve))
            except StoreError as exc:
                # The decision committed in a transaction of its own: the error must not say that nothing was written.
                raise StoreError(f"review item #{item.id} was {item.status.value} by {operator}, and that is saved; "
                                 f"the agents' reputation did not move by it: {exc}") from exc
        return item

    async def decide_many(self, item_ids: Iterable[int], approve: bool, operator: str, reason: str,
                          note: str = "") -> tuple[DecisionOutcome, ...]:
        """The same decision on each item in turn, each as `decide` makes it (its own transaction with its
        audit event, then the reputation it moves), so an item decided meanwhile or unknown fails alone:
        one outcome per distinct id, in order, each with the item as the store now has it. A reason that
        is not listed, "other" without a note, or no operator name refuses them all (InputError)."""
        reason, note = check_decision(approve, reason, note)
        operator = check_operator(operator)
        outcomes = []
        for item_id in dict.fromkeys(item_ids):
            try:
                outcomes.append(DecisionOutcome(item_id, await self.decide(item_id, approve, operator, reason, note)))
            except InputError as refused:
                try:
                    now = await self._queue.get(item_id)
                except InputError:       # not even a number
                    now = None
                outcomes.append(DecisionOutcome(item_id, now, str(refused)))
        return tuple(outcomes)
