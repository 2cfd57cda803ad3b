"""Reputation as an operator watches and overrides it (engine.reputation): scores over time, quarantine, release."""
from __future__ import annotations

from typing import Awaitable, Callable, Iterable

from ..alerts.row import AlertRow
from ..events import AgentChanged, Emit, TrustUpdated
from ..registry import AgentRegistry, AgentView
from ..reputation.keeper import ReputationKeeper, ReputationUpdate
from ..settings.reputation import ReputationSettings
from ..reputation.store import ScorePoint

Announce = Callable[[tuple[AlertRow, ...], str], Awaitable[None]]    # AlertsFacade.announce


class ReputationFacade:
    def __init__(self, keeper: ReputationKeeper, settings: ReputationSettings, registry: AgentRegistry, emit: Emit,
                 clock: Callable[[], float], announce: Announce) -> None:
        self._keeper, self.settings, self._registry = keeper, settings, registry
        self._emit, self._clock, self._announce = emit, clock, announce

    async def history(self) -> list[ScorePoint]:
        """Every agent's score over time (the Trust plot)."""
        return await self._keeper.tables.history()

    async def alerts(self) -> list[AlertRow]:
        """The alerts the reputation book raised (quarantines, drops, behaviour shifts)."""
        return await self._keeper.tables.alerts()

    async def quarantine(self, agent_id: str, reason: str, operator: str) -> AgentView:
        """Takes an agent off all work now, with the operator's reason (audited)."""
        self._registry.require(agent_id)
        await self.changed(await self._keeper.quarantine(agent_id, reason, operator))
        return self._registry.get(agent_id)

    async def release(self, agent_id: str, reason: str, operator: str) -> AgentView:
        """Lets a quarantined agent back on probation: low-risk work and a capped vote until it earns its way."""
        self._registry.require(agent_id)
        await self.changed(await self._keeper.release(agent_id, reason, operator))
        return self._registry.get(agent_id)

    async def changed(self, update: ReputationUpdate, trace_id: str = "") -> None:
        """After the book moved (a question, a decision, an operator's hand): the registry and listeners hear it."""
        self.show(update.agents)
        self._emit(TrustUpdated(update, trace_id, self._clock()))
        await self._announce(update.alerts, trace_id)

    def show(self, agent_ids: Iterable[str]) -> None:
        """Copies the book's standing into the registry's views and tells listeners."""
        book = self._keeper.book
        for agent_id in agent_ids:
            if agent_id in book:
                record = book.record(agent_id)
                self._registry.set_trust(agent_id, round(record.score, 4), record.state.value)
                self._emit(AgentChanged(self._registry.get(agent_id), "", self._clock()))
