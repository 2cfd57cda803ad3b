"""Alerts adapter: what the engine raised for an operator, acknowledged (one or many, with a comment) and
silenced (a kind, an agent or both, for a while).

What changed comes back through the engine's events, routed here by EngineService: AlertsRaised ->
sig_raised, AlertChanged -> sig_changed (so an acknowledgement made here arrives once, through the event
the engine emits for it), SilencesChanged -> sig_silences. A silence mutes notification, never detection:
muted alerts keep arriving, marked (AlertRow.silenced_by). Expiry sends no event: listeners watch
Silence.ends_at themselves.
"""
from __future__ import annotations

import asyncio
from typing import Iterable

from PySide6.QtCore import Signal

from engine import AlertChanged, AlertKind, AlertsRaised, SilencesChanged

from .core import Adapter, Attempt

OPEN_SHOWN = 2000         # every unacknowledged alert a load reads (so the counts are right after a restart)
RECENT_SHOWN = 200        # and the latest ones of any status
NEW_SILENCE = 0           # the silence id sig_silence_failed names when a new silence was refused


class AlertsAdapter(Adapter):
    sig_loaded = Signal(object, object)        # tuple[AlertRow] newest first (marked), tuple[Silence] active now
    sig_raised = Signal(object)                # tuple[AlertRow]: new alerts, each marked muted or not
    sig_changed = Signal(object)               # AlertRow as it now is (acknowledged)
    sig_silences = Signal(object)              # tuple[Silence]: the silences active now, newest first
    sig_failed = Signal(int, str)              # alert id, why its acknowledgement was refused or failed
    sig_acknowledge_done = Signal(object, object)   # tuple[int] acknowledged, dict[int, str] not (id -> why)
    sig_silence_failed = Signal(int, str)      # silence id (NEW_SILENCE for a new one), why it was refused

    # --- reads -----------------------------------------------------------------------------
    def load(self) -> asyncio.Task | None:
        """Reads the alerts (every open one and the latest others) and the active silences: sig_loaded."""
        if not self.core.require_ready("", quiet=True):
            return None
        return self.core.spawn(self._load(), "alerts.load")

    async def _load(self) -> None:
        engine = self.engine

        async def read():
            open_rows = await engine.alerts.alerts(True, OPEN_SHOWN)
            recent = await engine.alerts.alerts(False, RECENT_SHOWN)
            merged = {row.id: row for row in (*open_rows, *recent)}
            alerts = tuple(sorted(merged.values(), key=lambda a: (-a.at, -a.id)))
            return alerts, tuple(await engine.alerts.silences(True))
        outcome, loaded = await self.core.attempt(read, context="the alerts could not be read")
        if outcome is Attempt.DONE:
            self.sig_loaded.emit(*loaded)

    # --- acknowledging ---------------------------------------------------------------------
    def acknowledge(self, alert_ids: int | Iterable[int], comment: str = "") -> asyncio.Task | None:
        """Acknowledges one alert or many as the operator, with an optional comment. Each success arrives
        as sig_changed (the engine's AlertChanged); each refusal as sig_failed(id, why); then one
        sig_acknowledge_done(acknowledged ids, {id: why}) for the whole batch."""
        ids = tuple(dict.fromkeys(int(i) for i in ((alert_ids,) if isinstance(alert_ids, int) else alert_ids)))
        if not ids:
            return None

        def refuse_all(message: str) -> None:
            for alert_id in ids:
                self.sig_failed.emit(alert_id, message)
            self.sig_acknowledge_done.emit((), {alert_id: message for alert_id in ids})
        if not self.core.require_ready("alerts cannot be acknowledged", refuse_all):
            return None
        return self.core.spawn(self._acknowledge(ids, comment), "alert.acknowledge")

    async def _acknowledge(self, ids: tuple[int, ...], comment: str) -> None:
        done: list[int] = []
        failed: dict[int, str] = {}
        for alert_id in ids:        # one transaction each: one bad id does not undo the others
            def refused(message: str, alert_id: int = alert_id) -> None:
                failed[alert_id] = message
                self.sig_failed.emit(alert_id, message)
            outcome, _row = await self.core.attempt(
                lambda alert_id=alert_id: self.engine.alerts.acknowledge(alert_id, self.core.operator, comment),
                context=f"alert #{alert_id} could not be acknowledged", refused=refused, announce_refusal=False)
            if outcome is Attempt.DONE:
                done.append(alert_id)
        self.sig_acknowledge_done.emit(tuple(done), failed)

    # --- silencing -------------------------------------------------------------------------
    def silence(self, kind: AlertKind | str | None, agent_id: str | None, duration_s: float,
                comment: str) -> asyncio.Task | None:
        """Mutes notification of matching alerts (a kind, an agent or both) for duration_s, as the operator:
        sig_silences (the engine's SilencesChanged), or sig_silence_failed(NEW_SILENCE, why)."""
        def refused(message: str) -> None:
            self.sig_silence_failed.emit(NEW_SILENCE, message)
        if not self.core.require_ready("alerts cannot be silenced", refused):
            return None
        return self.core.spawn(self.core.attempt(
            lambda: self.engine.alerts.silence(kind, agent_id, duration_s, self.core.operator, comment),
            context="the silence was not saved", refused=refused, announce_refusal=False), "alert.silence")

    def end_silence(self, silence_id: int) -> asyncio.Task | None:
        """Ends an active silence now: sig_silences, or sig_silence_failed(silence_id, why)."""
        silence_id = int(silence_id)
        def refused(message: str) -> None:
            self.sig_silence_failed.emit(silence_id, message)
        if not self.core.require_ready("silences cannot be ended", refused):
            return None
        return self.core.spawn(self.core.attempt(
            lambda: self.engine.alerts.end_silence(silence_id, self.core.operator),
            context=f"silence #{silence_id} was not ended", refused=refused, announce_refusal=False),
            "alert.end_silence")

    # --- engine events (EngineService._routes) ---------------------------------------------
    def on_raised(self, event: AlertsRaised) -> None:
        self.sig_raised.emit(tuple(event.alerts))

    def on_changed(self, event: AlertChanged) -> None:
        self.sig_changed.emit(event.alert)

    def on_silences(self, event: SilencesChanged) -> None:
        self.sig_silences.emit(tuple(event.silences))

