"""Audit adapter: the hash-chained audit trail as an operator reads it (engine.store.audit_log): filtered
events, the dropdowns' actors and kinds, the chain's status, and exports (each one itself an audit event).

The trail grows while the console runs (every question, block and operator decision writes events), so
the adapter says when it did: `note_written` is connected to the signals that follow such writes
(EngineService.__init__) and becomes at most one `sig_changed` per REFRESH_MS, however many questions a
burst brings. Listeners decide whether to read again now (the Audit panel does only while it is shown).
"""
from __future__ import annotations

import asyncio
import dataclasses
from pathlib import Path

from PySide6.QtCore import Signal, SignalInstance

from engine import AuditFilter

from ..batch import Coalescer
from .core import Adapter, Attempt, ServiceCore

REFRESH_MS = 1000          # one reload a second at most under traffic: a table of 1000 rows, not a plot


class AuditAdapter(Adapter):
    sig_loaded = Signal(object, object, bool)  # AuditFilter, tuple[AuditRow] newest first (at most its limit), more?
    sig_facets = Signal(object, object)        # actors, kinds (tuple[str], sorted): what the dropdowns offer
    sig_verified = Signal(object)              # ChainStatus: intact with N events, or broken at which seq and why
    sig_verify_failed = Signal(str)            # why the chain could not be read at all (also sent to sig_error)
    sig_exported = Signal(str, int)            # path, events written (the export's own event is in the chain now)
    sig_export_failed = Signal(str, str)       # path, why nothing was written
    sig_changed = Signal()                     # new events were written (coalesced): read again when it suits

    def __init__(self, core: ServiceCore, grows_on: tuple[SignalInstance, ...] = ()) -> None:
        super().__init__(core)
        self._changes: Coalescer[bool] = Coalescer(lambda _items: self.sig_changed.emit(), REFRESH_MS, self)
        for signal in grows_on:
            signal.connect(self.note_written)

    @property
    def changes(self) -> Coalescer[bool]:
        """The coalescer behind sig_changed (tests flush it rather than wait out the interval)."""
        return self._changes

    def note_written(self, *_args) -> None:
        """Something wrote audit events: sig_changed follows within REFRESH_MS, once for the whole burst."""
        self._changes.put("audit", True)

    # --- reads -----------------------------------------------------------------------------
    def load(self, filter: AuditFilter) -> asyncio.Task | None:
        """The newest `filter.limit` matching events: sig_loaded(filter, rows, more). Quiet before the
        engine is ready (the panel reads again on sig_ready)."""
        if not self.core.require_ready("", quiet=True):
            return None
        return self.core.spawn(self._load(filter), "audit.load")

    def facets(self) -> asyncio.Task | None:
        """Every actor and every event type in the trail: sig_facets(actors, kinds)."""
        if not self.core.require_ready("", quiet=True):
            return None
        return self.core.spawn(self._facets(), "audit.facets")

    def verify(self) -> asyncio.Task | None:
        """Checks every event against its hash and the one before it: sig_verified(ChainStatus). A broken
        chain is a status, not an error; only a store that cannot be read is sig_verify_failed."""
        if not self.core.require_ready("the audit chain cannot be verified", self.sig_verify_failed.emit):
            return None
        return self.core.spawn(self._verify(), "audit.verify")

    async def _load(self, filter: AuditFilter) -> None:
        log = self.engine.audit
        # One row past the limit says whether more match, without counting the whole trail.
        probe = filter if filter.limit is None else dataclasses.replace(filter, limit=filter.limit + 1)
        outcome, rows = await self.core.attempt(lambda: log.query(probe), context="the audit trail could not be read")
        if outcome is Attempt.DONE:
            more = filter.limit is not None and len(rows) > filter.limit
            self.sig_loaded.emit(filter, tuple(rows[:filter.limit]) if more else tuple(rows), more)

    async def _facets(self) -> None:
        log = self.engine.audit

        async def read():
            return await log.actors(), await log.kinds()
        outcome, facets = await self.core.attempt(read, context="the audit trail's actors and kinds could not be read")
        if outcome is Attempt.DONE:
            self.sig_facets.emit(*facets)

    async def _verify(self) -> None:
        outcome, status = await self.core.attempt(self.engine.audit.verify,
                                                  context="the audit chain could not be verified",
                                                  refused=self.sig_verify_failed.emit)
        if outcome is Attempt.DONE:
            self.sig_verified.emit(status)

    # --- export ----------------------------------------------------------------------------
    def export(self, filter: AuditFilter, path: str | Path, fmt: str) -> asyncio.Task | None:
        """Writes the matching events (oldest first) to `path` as csv or jsonl, recorded as an
        "audit.exported" event by the operator: sig_exported(path, count), or sig_export_failed(path, why)
        with nothing written (the engine writes beside `path` and renames into place)."""
        path = str(path)
        if not self.core.require_ready("the audit trail cannot be exported",
                                       lambda m: self.sig_export_failed.emit(path, m)):
            return None
        return self.core.spawn(self._export(filter, path, fmt), "audit.export")

    async def _export(self, filter: AuditFilter, path: str, fmt: str) -> None:
        outcome, result = await self.core.attempt(
            lambda: self.engine.audit.export(filter, fmt, path, self.core.operator),    # type: ignore[arg-type]
            context=f"the audit export to {path} failed",
            refused=lambda m: self.sig_export_failed.emit(path, m), announce_refusal=False)
        if outcome is Attempt.DONE:
            self.sig_exported.emit(path, result.rows)
            self.note_written()            # its "audit.exported" event
