"""Alerts and silences, as an operator acknowledges and silences them (engine.alerts)."""
from __future__ import annotations

from typing import Callable

from ..alerts.book import AlertBook
from ..alerts.row import AlertRow
from ..alerts.silences import Silence
from ..events import AlertChanged, AlertsRaised, Emit, SilencesChanged
from ..registry import AgentRegistry
from ..alerts.kinds import AlertKind



class AlertsFacade:
    def __init__(self, book: AlertBook, registry: AgentRegistry, emit: Emit, clock: Callable[[], float]) -> None:
        self._book, self._registry, self._emit, self._clock = book, registry, emit, clock

    async def alerts(self, open_only: bool = False, limit: int = 200) -> tuple[AlertRow, ...]:
        """Newest first, muted ones included and marked (silenced_by)."""
        return await self._book.alerts(open_only, limit)

    async def silences(self, active_only: bool = True) -> tuple[Silence, ...]:
        return await self._book.silences(active_only)

    async def acknowledge(self, alert_id: int | str, by: str, comment: str = "") -> AlertRow:
        """Audited with the comment; the first acknowledgement of an alert stands."""
        row = await self._book.acknowledge(alert_id, by, comment)
        self._emit(AlertChanged(row, self._clock()))
        return row

    async def silence(self, kind: AlertKind | str | None, agent_id: str | None, duration_s: float, by: str,
                      comment: str) -> Silence:
        """Mutes notification of matching alerts (a kind, an agent of the fleet, or both) for duration_s;
        they are still recorded and listed. Audited with the comment."""
        if agent_id:
            self._registry.require(agent_id.strip())   # a typo would silence nothing while the operator thinks it did
        silence = await self._book.silence(kind, agent_id, duration_s=duration_s, by=by, comment=comment)
        await self._announce_silences()
        return silence

    async def end_silence(self, silence_id: int | str, by: str) -> Silence:
        """Ends an active silence now (audited): its unacknowledged alerts notify again."""
        silence = await self._book.end_silence(silence_id, by)
        await self._announce_silences()
        return silence

    async def announce(self, alerts: tuple[AlertRow, ...], trace_id: str) -> None:
        """Every new alert, already recorded, reaches listeners marked muted or not as of now."""
        if alerts:
            self._emit(AlertsRaised(await self._book.marked(alerts), trace_id, self._clock()))

    async def _announce_silences(self) -> None:
        self._emit(SilencesChanged(await self._book.silences(True), self._clock()))
