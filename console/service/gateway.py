"""Gateway adapter: messages the thought-virus gateway stopped, live and as stored."""
from __future__ import annotations

import asyncio

from PySide6.QtCore import Signal

from .core import Adapter, Attempt

DECISIONS_SHOWN = 200


class GatewayAdapter(Adapter):
    sig_flagged = Signal(object)               # GatewayFlagged event: messages of one question blocked, sanitised, escalated
    sig_loaded = Signal(object)                # tuple[DecisionRow]: the gateway's decisions as stored, newest first

    def load(self, limit: int = DECISIONS_SHOWN) -> asyncio.Task | None:
        """Reads the gateway's stored decisions, newest first (panels opening mid-run): sig_loaded."""
        if not self.core.require_ready("", quiet=True):
            return None
        return self.core.spawn(self._load(int(limit)), "gateway.load")

    async def _load(self, limit: int) -> None:
        outcome, rows = await self.core.attempt(lambda: self.engine.gateway.decisions(limit),
                                                context="the gateway's decisions could not be read")
        if outcome is Attempt.DONE:
            self.sig_loaded.emit(tuple(rows))
