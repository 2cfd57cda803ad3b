"""Trust adapter: the reputation book's scores and history, and the operator's quarantine and release."""
from __future__ import annotations

import asyncio

from PySide6.QtCore import Signal

from engine import ReputationSettings, TrustUpdated

from .core import Adapter, Attempt


class TrustAdapter(Adapter):
    sig_updated = Signal(object)               # ReputationUpdate: new score points, alerts, reputation events
    sig_loaded = Signal(object, object)        # score history (list[ScorePoint]), alerts (list[AlertRow]) as stored
    sig_failed = Signal(str, str)              # agent id, why a quarantine or release was refused

    @property
    def settings(self) -> ReputationSettings:
        """The reputation book's settings, read-only (frozen): panels quote its floor and probation terms."""
        return self.engine.reputation.settings

    @property
    def quarantine_floor(self) -> float:
        """The score below which the reputation book quarantines an agent on its own (engine settings)."""
        return self.settings.quarantine_floor

    def load(self) -> asyncio.Task | None:
        """Reads the score history and the alerts as stored (panels opening mid-run): sig_loaded."""
        if not self.core.require_ready("", quiet=True):
            return None
        return self.core.spawn(self._load(), "trust.load")

    def quarantine(self, agent_id: str, reason: str) -> asyncio.Task | None:
        """Takes an agent off all work as the operator: sig_updated, or sig_failed(agent, why)."""
        return self._act("quarantine", agent_id, reason)

    def release(self, agent_id: str, reason: str) -> asyncio.Task | None:
        """Lets a quarantined agent back on probation: sig_updated, or sig_failed(agent, why)."""
        return self._act("release", agent_id, reason)

    def _act(self, action: str, agent_id: str, reason: str) -> asyncio.Task | None:
        if not self.core.require_ready("agents cannot be quarantined or released",
                                       lambda m: self.sig_failed.emit(agent_id, m)):
            return None
        call = getattr(self.engine.reputation, action)
        # A refusal (no reason, already quarantined) is shown by the reason dialog, not as a toast.
        return self.core.spawn(self.core.attempt(lambda: call(agent_id, reason, self.core.operator),
                                                 context=f"the {action} of {agent_id} was not saved",
                                                 refused=lambda m: self.sig_failed.emit(agent_id, m),
                                                 announce_refusal=False), f"agent.{action}")

    async def _load(self) -> None:
        reputation = self.engine.reputation

        async def read():
            return await reputation.history(), await reputation.alerts()
        outcome, loaded = await self.core.attempt(read, context="the trust history could not be read")
        if outcome is Attempt.DONE:
            self.sig_loaded.emit(*loaded)

    def on_updated(self, event: TrustUpdated) -> None:
        self.sig_updated.emit(event.update)
