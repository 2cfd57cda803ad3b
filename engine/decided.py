"""The engine's observers of a decided question (engine/question/decided.py), registered in this order when
the Engine is built: the answer and its review item are recorded, the reputation book moves, the answer's
alerts are recorded, memory is snapshotted when due; then the console hears of it all."""
from __future__ import annotations

import dataclasses
from typing import Awaitable, Callable, Iterable

from .alerts.book import AlertBook
from .alerts.row import AlertRow
from .alerts.rules import alerts_for
from .events import GatewayFlagged, QuestionDecided, ReviewEnqueued, TrustUpdated
from .memory import MemoryStore
from .record import record_answer
from .reputation.keeper import ReputationKeeper
from .review import ReviewQueue, needs_review
from .store.db import Store

Clock = Callable[[], float]


class RecordAnswer:
    """The answer and, where it needs one, its review item commit in one transaction."""

    def __init__(self, store: Store, review: ReviewQueue) -> None:
        self.store, self.review = store, review

    async def on_decided(self, decided: QuestionDecided) -> QuestionDecided:
        answer = decided.answer
        why = needs_review(answer)
        item_id = await record_answer(self.store, answer, also=self.review.insert_in_transaction(answer, why)
                                      if why else None)
        item = await self.review.get(item_id) if item_id is not None else None
        return dataclasses.replace(decided, review_item=item)


class UpdateReputation:
    def __init__(self, keeper: ReputationKeeper) -> None:
        self.keeper = keeper

    async def on_decided(self, decided: QuestionDecided) -> QuestionDecided:
        return dataclasses.replace(decided, reputation=await self.keeper.after_answer(decided.answer))


class RecordAlerts:
    """The answer's own alerts (injection blocked, cascade, no consensus), recorded whatever the silences."""

    def __init__(self, alerts: AlertBook, min_support: float, clock: Clock) -> None:
        self.alerts, self.min_support, self.clock = alerts, min_support, clock

    async def on_decided(self, decided: QuestionDecided) -> QuestionDecided:
        raised = await self.alerts.record(alerts_for(decided.answer, self.clock(), self.min_support))
        return dataclasses.replace(decided, alerts=raised)


class SnapshotMemory:
    def __init__(self, memory: MemoryStore, clock: Clock) -> None:
        self.memory, self.clock = memory, clock

    async def on_decided(self, decided: QuestionDecided) -> QuestionDecided:
        await self.memory.maybe_snapshot(self.clock())
        return decided


class AnnounceDecided:
    """Tells listeners what the observers before it did: the agents' standing, the reputation book's move,
    the new alerts, the gateway's flags, the review item."""

    def __init__(self, emit: Callable[[object], None], clock: Clock, show_standing: Callable[[Iterable[str]], None],
                 announce_alerts: Callable[[tuple[AlertRow, ...], str], Awaitable[None]]) -> None:
        self.emit, self.clock = emit, clock
        self.show_standing, self.announce_alerts = show_standing, announce_alerts

    async def on_decided(self, decided: QuestionDecided) -> QuestionDecided:
        answer, update = decided.answer, decided.reputation
        self.show_standing({o.agent_id for o in answer.agents} | update.agents)
        self.emit(TrustUpdated(update, answer.trace_id, self.clock()))
        await self.announce_alerts(update.alerts + decided.alerts, answer.trace_id)
        if answer.gateway is not None and answer.gateway.flags:
            self.emit(GatewayFlagged(answer.gateway.flags, answer.trace_id, self.clock()))
        if decided.review_item is not None:
            self.emit(ReviewEnqueued(decided.review_item, answer.trace_id, self.clock()))
        return decided
