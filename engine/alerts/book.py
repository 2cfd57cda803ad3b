"""The alert book: records alerts, lets operators acknowledge them and silence kinds or agents for a while.

Every method has a `_sync` form that runs on the store's thread (the CLI and tests call them there) and
an async one that awaits it. All times come from the injected clock, so tests can move time.

A silence mutes notification, never detection (engine.alerts.silences): `record` stores every alert
whatever the silences, and each row read back says which active silence, if any, mutes it now.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Callable, Iterable, Sequence, TypeVar

from ..errors import InputError
from ..ids import row_id
from .kinds import AlertKind
from ..store.db import Store
from . import table
from .row import AlertRow, NewAlert
from .silences import MAX_COMMENT_CHARS, Silence, check_request, muting

T = TypeVar("T")
MAX_LIMIT = 10_000


class AlertBook:
    def __init__(self, store: Store, clock: Callable[[], float] | None = None) -> None:
        self.store = store
        self.clock = clock or store.clock

    async def _call(self, fn: Callable[..., T], *args) -> T:
        return await self.store.call(fn, *args)

    # --- detection -----------------------------------------------------------------------------
    def record_sync(self, alerts: Iterable[NewAlert]) -> tuple[AlertRow, ...]:
        """Stores and audits (alert.raised) new alerts in one transaction, silenced or not; returns them
        with their ids, each marked with the silence that mutes it now."""
        alerts = list(alerts)
        if not alerts:
            return ()
        return self.marked_sync(self.store.transaction(lambda: self.insert_sync(alerts)))

    def insert_sync(self, alerts: Iterable[NewAlert]) -> list[AlertRow]:
        """Inside the caller's transaction: stores and audits (alert.raised) each alert (not marked muted)."""
        ids = []
        for alert in alerts:
            ids.append(table.insert_alert(self.store, alert))
            self.store.append_audit(alert.trace_id, "engine", "alert.raised",
                                    {"kind": alert.kind, "agent": alert.agent_id, "message": alert.message,
                                     "alert": ids[-1]})
        return [table.get_alert(self.store, i) for i in ids]

    async def record(self, alerts: Iterable[NewAlert]) -> tuple[AlertRow, ...]:
        return await self._call(self.record_sync, list(alerts))

    # --- reads ---------------------------------------------------------------------------------
    def alerts_sync(self, open_only: bool = False, limit: int = 200, now: float | None = None) -> tuple[AlertRow, ...]:
        """Newest first (muted ones too, marked)."""
        if not 1 <= int(limit) <= MAX_LIMIT:
            raise InputError(f"alerts: the limit must be between 1 and {MAX_LIMIT} (got {limit})")
        return self.marked_sync(table.list_alerts(self.store, open_only, int(limit)), now)

    async def alerts(self, open_only: bool = False, limit: int = 200, now: float | None = None) -> tuple[AlertRow, ...]:
        return await self._call(self.alerts_sync, open_only, limit, now)

    def marked_sync(self, rows: Sequence[AlertRow], now: float | None = None) -> tuple[AlertRow, ...]:
        """The rows with silenced_by set from the silences active at `now` (default: the clock's now)."""
        now = self.clock() if now is None else now
        active = [s for s in table.list_silences(self.store) if s.active(now)]
        return tuple(_mark(row, active, now) for row in rows)

    async def marked(self, rows: Sequence[AlertRow], now: float | None = None) -> tuple[AlertRow, ...]:
        """For alerts another writer stored (the reputation book's): marked as the book's own are."""
        return await self._call(self.marked_sync, list(rows), now)

    def is_muted_sync(self, alert: AlertRow, now: float | None = None) -> bool:
        now = self.clock() if now is None else now
        return muting(alert, table.list_silences(self.store), now) is not None

    async def is_muted(self, alert: AlertRow, now: float | None = None) -> bool:
        return await self._call(self.is_muted_sync, alert, now)

    def unacknowledged_counts_sync(self, now: float | None = None) -> tuple[int, int]:
        """(loud, muted): unacknowledged alerts that notify, and those an active silence mutes."""
        now = self.clock() if now is None else now
        active = [s for s in table.list_silences(self.store) if s.active(now)]
        loud = muted = 0
        for kind, agent_id, count in table.open_groups(self.store):
            probe = AlertRow(0, kind, agent_id, "", "", now)      # muting depends on kind and agent only
            if muting(probe, active, now) is None:
                loud += count
            else:
                muted += count
        return loud, muted

    async def unacknowledged_counts(self, now: float | None = None) -> tuple[int, int]:
        return await self._call(self.unacknowledged_counts_sync, now)

    def silences_sync(self, active_only: bool = True, now: float | None = None) -> tuple[Silence, ...]:
        """Newest first; active_only: those muting at `now` (not expired, not ended, started)."""
        now = self.clock() if now is None else now
        return tuple(s for s in table.list_silences(self.store) if not active_only or s.active(now))

    async def silences(self, active_only: bool = True, now: float | None = None) -> tuple[Silence, ...]:
        return await self._call(self.silences_sync, active_only, now)

    def next_expiry_sync(self, now: float | None = None) -> float | None:
        """When the next active silence stops muting (a listener re-reads its counts then), or None."""
        return min((s.ends_at for s in self.silences_sync(True, now)), default=None)

    async def next_expiry(self, now: float | None = None) -> float | None:
        return await self._call(self.next_expiry_sync, now)

    # --- the operator's hand -------------------------------------------------------------------
    def acknowledge_sync(self, alert_id: int | str, by: str, comment: str = "") -> AlertRow:
        """Audited as alert.acknowledged with the comment. The first acknowledgement stands: acknowledging
        again returns the alert unchanged."""
        number = row_id(alert_id, "alert")
        by = _operator(by, "acknowledge")
        comment = (comment or "").strip()
        if len(comment) > MAX_COMMENT_CHARS:
            raise InputError(f"acknowledge: the comment is {len(comment)} characters long; "
                             f"the limit is {MAX_COMMENT_CHARS}")
        row = self.store.transaction(lambda: table.acknowledge(self.store, number, by, comment, self.clock()))
        return self.marked_sync([row])[0]

    async def acknowledge(self, alert_id: int | str, by: str, comment: str = "") -> AlertRow:
        return await self._call(self.acknowledge_sync, alert_id, by, comment)

    def silence_sync(self, kind: AlertKind | str | None = None, agent_id: str | None = None, *,
                     duration_s: float, by: str, comment: str) -> Silence:
        """Mutes matching alerts (a kind, an agent, or both) from now for duration_s; audited as alert.silenced."""
        request = check_request(kind, agent_id, duration_s, by, comment)
        return self.store.transaction(lambda: table.insert_silence(self.store, request, self.clock()))

    async def silence(self, kind: AlertKind | str | None = None, agent_id: str | None = None, *,
                      duration_s: float, by: str, comment: str) -> Silence:
        return await self._call(lambda: self.silence_sync(kind, agent_id, duration_s=duration_s, by=by,
                                                          comment=comment))

    def end_silence_sync(self, silence_id: int | str, by: str) -> Silence:
        """Ends an active silence now (audited as alert.silence_ended): its alerts notify again."""
        number = row_id(silence_id, "silence")
        by = _operator(by, "end a silence")
        return self.store.transaction(lambda: table.end_silence(self.store, number, by, self.clock()))

    async def end_silence(self, silence_id: int | str, by: str) -> Silence:
        return await self._call(self.end_silence_sync, silence_id, by)


def _mark(row: AlertRow, active: Sequence[Silence], now: float) -> AlertRow:
    silence = muting(row, active, now)
    silenced_by = silence.id if silence is not None else None
    return row if row.silenced_by == silenced_by else replace(row, silenced_by=silenced_by)


def _operator(by: str, what: str) -> str:
    by = (by or "").strip()
    if not by:
        raise InputError(f"{what}: who does it is missing (the operator)")
    return by
