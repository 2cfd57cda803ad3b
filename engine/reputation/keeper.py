"""The engine's reputation keeper: the reputation book fed by every decided question and operator decision,
kept in the store (standing, score history, alerts, audit events in one transaction).

The book itself (engine.reputation.book) is pure logic; this is where its events meet the store.
"""
from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass
from typing import AsyncIterator, Callable, Iterable, Sequence

from ..alerts.row import AlertRow, NewAlert
from ..errors import StoreError
from ..store.db import REPUTATION_LOCK, Store
from ..types import CallStatus, RiskTier, Role, to_jsonable
from ..answer import Answer
from .answer_evidence import DecidedAnswer, agreement, observations, operator_observations
from .book import ReputationBook
from .events import AgentQuarantined, AgentReleased, AlertRaised, ProbationEnded, ReputationChanged, ReputationEvent
from ..settings.reputation import ReputationSettings
from .store import AuditEntry, ReputationTables, ScorePoint

# Events that change what the Trust plot shows: each becomes a point in the score history.
_POINT_EVENTS = (ReputationChanged, AgentQuarantined, AgentReleased, ProbationEnded)


@dataclass(frozen=True)
class ReputationUpdate:
    """What one question or one operator action did to the book, as saved."""
    events: tuple[ReputationEvent, ...] = ()
    points: tuple[ScorePoint, ...] = ()     # new points of the score history (the Trust plot)
    alerts: tuple[AlertRow, ...] = ()       # new alerts, with the ids the operator acknowledges them by

    @property
    def agents(self) -> set[str]:
        return {e.agent_id for e in self.events} | {p.agent_id for p in self.points}


class ReputationKeeper:
    def __init__(self, store: Store, settings: ReputationSettings | None = None,
                 clock: Callable[[], float] | None = None) -> None:
        self.tables = ReputationTables(store)
        self.book = ReputationBook(settings, clock=clock or store.clock)
        self._clock = clock or store.clock
        self._turns = asyncio.Lock()

    # --- lifecycle -------------------------------------------------------------------------
    async def load(self, agents: Iterable[tuple[str, Role]], save: bool = True) -> None:
        """Reads the saved standing, then registers agents the book has not seen (a first point each, saved
        unless `save` is False: a viewer's desk, which writes nothing, keeps them in its own book only)."""
        self.book.load(await self.tables.standings())
        new = []
        for agent_id, role in agents:
            if agent_id not in self.book:
                self.book.register(agent_id, role)
                new.append(agent_id)
        if new and save:
            await self._save([], touched=new, why="registered")

    @contextlib.asynccontextmanager
    async def _turn(self) -> AsyncIterator[None]:
        """From reading the standing to saving the change, this book holds the team store's reputation turn: two
        desks' updates to one agent never write over each other (engine.store.db.Store.take_turn). On this desk
        too, one turn at a time (the server's lock is the session's, which all of this desk's turns share)."""
        store = self.tables.store
        async with self._turns:
            await store.call(store.take_turn, REPUTATION_LOCK)
            before = self.book.checkpoint()
            try:
                yield
            except BaseException:
                # Not saved (the server went away, the disk is full): the book goes back to what the store holds, or
                # this desk would act on a standing nobody else sees ("already quarantined"). What this turn's sync
                # took in is newer in the store than the book, and the next sync takes it in again.
                self.book.restore(before)
                raise
            finally:
                try:
                    await store.call(store.end_turn, REPUTATION_LOCK)
                except StoreError:
                    if store.online:
                        raise
                    # The turn is a lock of the server session that went with the lost connection: it ended there.
                    # What the turn saved before that is saved, and must not be reported as refused.

    async def sync(self) -> list[str]:
        """Takes in changes another process made to the same file (the CLI's quarantine, release or
        decision) before this book acts, so it never writes over them."""
        return self.book.merge(await self.tables.standings())

    # --- evidence --------------------------------------------------------------------------
    async def after_answer(self, answer: Answer) -> ReputationUpdate:
        async with self._turn():
            return await self._after_answer(answer)

    async def _after_answer(self, answer: Answer) -> ReputationUpdate:
        await self.sync()
        events: list[ReputationEvent] = list(self.book.decay())
        for obs in observations(answer):
            if obs.agent_id in self.book and obs.has_evidence:
                events += self.book.observe(obs)
        went_along = agreement(answer)
        for outcome in answer.agents:
            if outcome.agent_id in self.book:
                events += self.book.observe_behaviour(outcome.agent_id, outcome.latency_ms, outcome.n_items,
                                                      outcome.status is not CallStatus.OK,
                                                      went_along.get(outcome.agent_id), trace_id=answer.trace_id)
        return await self._save(events)

    async def after_decision(self, decided: DecidedAnswer, approved: bool) -> ReputationUpdate:
        """An operator approved or rejected this answer: the agents behind it gain or lose."""
        async with self._turn():
            await self.sync()
            events: list[ReputationEvent] = []
            for obs in operator_observations(decided, approved):
                if obs.agent_id in self.book:
                    events += self.book.observe(obs)
            return await self._save(events)

    # --- the operator's hand ---------------------------------------------------------------
    async def quarantine(self, agent_id: str, reason: str, actor: str) -> ReputationUpdate:
        async with self._turn():
            await self.sync()
            return await self._save(self.book.quarantine(agent_id, reason, actor))

    async def release(self, agent_id: str, reason: str, actor: str) -> ReputationUpdate:
        async with self._turn():
            await self.sync()
            return await self._save(self.book.release(agent_id, reason, actor))

    # --- reads -----------------------------------------------------------------------------
    def snapshot(self) -> dict[str, float]:
        return dict(self.book.snapshot())

    def state_of(self, agent_id: str) -> str:
        return self.book.record(agent_id).state.value if agent_id in self.book else "active"

    def eligible(self, agent_id: str, tier: RiskTier) -> tuple[bool, str]:
        if agent_id not in self.book:
            return True, "not scored yet"
        return self.book.eligible(agent_id, tier)

    # --- persistence -----------------------------------------------------------------------
    async def _save(self, events: Sequence[ReputationEvent], touched: Iterable[str] = (),
                    why: str = "") -> ReputationUpdate:
        touched = list(touched)
        agents = set(touched) | {e.agent_id for e in events}
        if not agents:
            return ReputationUpdate()
        rows = [r for r in self.book.to_rows() if r["agent_id"] in agents]
        points = [_point(self.book, e) for e in events if isinstance(e, _POINT_EVENTS)]
        points += [ScorePoint(a, self.book.record(a).score, self.book.record(a).state.value, "", why, self._clock())
                   for a in touched]
        raised = [e for e in events if isinstance(e, AlertRaised)]
        alerts = [NewAlert(e.kind.value, e.agent_id, e.message, e.trace_id, e.at) for e in raised]
        audit = [AuditEntry(e.trace_id, getattr(e, "actor", "reputation") or "reputation", e.KIND, to_jsonable(e))
                 for e in events]
        ids = await self.tables.save(rows, points, alerts, audit)
        saved = tuple(AlertRow(i, a.kind, a.agent_id, a.message, a.trace_id, a.at) for i, a in zip(ids, alerts))
        return ReputationUpdate(tuple(events), tuple(points), saved)


def _point(book: ReputationBook, event) -> ScorePoint:
    record = book.record(event.agent_id)
    score = event.new_score if isinstance(event, ReputationChanged) else record.score
    why = getattr(event, "why", "") or getattr(event, "reason", "") or type(event).KIND
    return ScorePoint(event.agent_id, score, record.state.value, event.trace_id, why, event.at)

