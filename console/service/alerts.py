"""Alerts adapter: acknowledging what the engine raised for an operator."""
from __future__ import annotations

import asyncio

from PySide6.QtCore import Signal

from .core import Adapter, Attempt


class AlertsAdapter(Adapter):
    sig_acknowledged = Signal(object)          # AlertRow as it now is

    def acknowledge(self, alert_id: int) -> asyncio.Task | None:
        if not self.core.require_ready("alerts cannot be acknowledged"):
            return None
        return self.core.spawn(self._acknowledge(int(alert_id)), "alert.acknowledge")

    async def _acknowledge(self, alert_id: int) -> None:
        outcome, row = await self.core.attempt(
            lambda: self.engine.trust.tables.acknowledge(alert_id, self.core.operator),
            context=f"alert #{alert_id} could not be acknowledged")
        if outcome is Attempt.DONE:
            self.sig_acknowledged.emit(row)
