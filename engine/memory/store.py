"""Agent memory on the SQLite store: per-agent namespaces, versions, snapshots, rollback, quarantine.

Every method runs its SQL on the store's own thread (Store.call). Every change is one transaction
together with its audit event, so the memory tables and the audit chain never disagree; the actor is
the agent (writes, reads, refusals) or the person or engine that asked (snapshots, rollbacks,
quarantine). Audit event types: memory.written, memory.blocked, memory.refused, memory.read,
memory.snapshot, memory.rolled_back, memory.quarantined, memory.released.

Status rules are in versions.py; who may touch what is in policy.py.
"""
from __future__ import annotations

import asyncio
import hashlib
from typing import Any, Callable, TypeVar

from ..errors import InputError, QuorumError
from ..gateway.decision import Action, Screening
from ..gateway.envelope import Envelope, MessageKind
from ..gateway.scanners.invisible import printable
from ..ids import row_id
from ..store.db import Store
from ..types import TrustLevel
from . import policy, rows
from .model import (EntryStatus, MemoryEntry, NamespaceSummary, RescanHit, RollbackResult, Snapshot, StatusChange,
                    Spread, WriteResult)
from .schedule import SnapshotSchedule
from .versions import settle

T = TypeVar("T")
Screen = Callable[[Envelope], Screening]
Match = str | Callable[[MemoryEntry], bool]


def _envelope(author: str, namespace: str, key: str, content: str, trace_id: str, kind: MessageKind,
              **meta: Any) -> Envelope:
    # Memory is data an agent supplied: TOOL trust, read by the scanners on the DATA channel, never
    # allowed to instruct, whatever it says about itself.
    return Envelope(source=author, target=f"memory:{namespace}", content=content, trust=TrustLevel.TOOL, kind=kind,
                    parent_trace_id=trace_id, meta={"key": key, **meta})


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class MemoryStore:
    """Memory on an open Store. `screen` is the gateway's (Gateway.screen): without one, writes are
    refused and rescan cannot run (fail closed); the reads, queries and operator actions still work.
    `schedule` drives maybe_snapshot (None: it never snapshots)."""

    def __init__(self, store: Store, screen: Screen | None = None, *,
                 schedule: SnapshotSchedule | None = None) -> None:
        self._store = store
        self._screen = screen
        self.schedule = schedule

    async def _txn(self, fn: Callable[[], T]) -> T:
        return await self._store.call(self._store.transaction, fn)


    def _require_screen(self, what: str) -> Screen:
        if self._screen is None:
            raise QuorumError(f"memory: {what} needs the gateway's screen, and this MemoryStore has none")
        return self._screen

    # --- agents: write and read their own namespace ------------------------------------------
    async def write(self, author: str, namespace: str, key: str, content: str, trace_id: str) -> WriteResult:
        """Screens `content` and, if it passes, stores it as the key's new active version.

        Raises MemoryAccessDenied (an InputError; audited as memory.refused) when namespace is not the
        author's own, InputError for an empty key, content or trace id. A screening that does not pass
        is not an error: nothing is stored, memory.blocked records the evidence, the result says so."""
        author, namespace = policy.name(author, "the author"), policy.name(namespace, "the namespace")
        key, trace_id = policy.key(key), policy.trace(trace_id, "a memory write")
        if not policy.own_namespace(author, namespace):
            await self._refuse(author, "write", namespace, key, trace_id)
        if not isinstance(content, str) or not content.strip():
            raise InputError(f"memory: nothing to write to {namespace}/{key} (empty content)")
        screen = self._require_screen("a memory write")
        # Scanners may be slow (a classifier): not on the loop, and not on the store's thread.
        screening = await asyncio.to_thread(
            screen, _envelope(author, namespace, key, content, trace_id, MessageKind.MEMORY_WRITE))
        if not screening.passes:
            await self._txn(lambda: self._audit_blocked(author, namespace, key, content, trace_id, screening))
            return WriteResult(False, screening.action, screening.score, screening.evidence)
        return await self._txn(lambda: self._insert(author, namespace, key, trace_id, screening))

    def _audit_blocked(self, author: str, namespace: str, key: str, content: str, trace_id: str,
                       screening: Screening) -> None:
        self._store.append_audit(trace_id, author, "memory.blocked", {
            "namespace": namespace, "key": key, "action": screening.action.value, "score": screening.score,
            "evidence": list(screening.evidence), "excerpt": printable(content, 160), "chars": len(content)})

    def _insert(self, author: str, namespace: str, key: str, trace_id: str, screening: Screening) -> WriteResult:
        store = self._store
        previous = store.execute("SELECT id FROM memory_entries WHERE namespace = ? AND key = ? AND status = 'active'",
                                (namespace, key)).fetchone()
        version = store.execute("SELECT COALESCE(MAX(version), 0) + 1 FROM memory_entries WHERE namespace = ? AND key = ?",
                               (namespace, key)).fetchone()[0]
        # Stored as superseded, then settle() makes it the active version (one rule for all changes).
        # screening.text, not the content: sanitised, and cut where the scanners stopped reading.
        entry_id = store.insert(
            "INSERT INTO memory_entries (namespace, key, content, version, author, trace_id, written_at, screen_score, "
            "status, status_why) VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'superseded', '')",
            (namespace, key, screening.text, version, author, trace_id, store.clock(), screening.score))
        settle(store, namespace, key, "sanitised by the gateway" if screening.action is Action.SANITISE else "")
        store.append_audit(trace_id, author, "memory.written", {
            "entry_id": entry_id, "namespace": namespace, "key": key, "version": version,
            "action": screening.action.value, "score": screening.score, "evidence": list(screening.evidence),
            "superseded": previous[0] if previous else None, "chars": len(screening.text),
            "sha256": _sha256(screening.text)})
        return WriteResult(True, screening.action, screening.score, screening.evidence, self._get(entry_id),
                           previous[0] if previous else None)

    async def read(self, reader: str, namespace: str, key: str | None = None,
                   trace_id: str | None = None) -> tuple[MemoryEntry, ...]:
        """The active entries of the reader's own namespace (one key, or every key), recording who read
        which entry in which trace (memory_reads; see spread). Raises MemoryAccessDenied for another
        namespace (audited as memory.refused)."""
        reader, namespace = policy.name(reader, "the reader"), policy.name(namespace, "the namespace")
        key = None if key is None else policy.key(key)
        trace_id = policy.trace(trace_id, "a memory read")
        if not policy.own_namespace(reader, namespace):
            await self._refuse(reader, "read", namespace, key, trace_id)
        return await self._txn(lambda: self._read(reader, namespace, key, trace_id))

    def _read(self, reader: str, namespace: str, key: str | None, trace_id: str) -> tuple[MemoryEntry, ...]:
        where, args = "WHERE namespace = ? AND status = 'active'", [namespace]
        if key is not None:
            where, args = where + " AND key = ?", args + [key]
        found = tuple(rows.entry(r) for r in self._store.execute(f"{rows.SELECT_ENTRY} {where} ORDER BY key", args))
        if found:
            at = self._store.clock()
            self._store.executemany("INSERT INTO memory_reads (entry_id, reader, trace_id, at) VALUES (?, ?, ?, ?)",
                                   [(e.id, reader, trace_id, at) for e in found])
            self._store.append_audit(trace_id, reader, "memory.read",
                                     {"namespace": namespace, "key": key, "entries": [e.id for e in found]})
        return found

    async def _refuse(self, actor: str, op: str, namespace: str, key: str | None, trace_id: str) -> None:
        """Audits the attempt (memory.refused), then raises: a refused access is evidence against the agent."""
        denied = policy.MemoryAccessDenied(actor, op, namespace)
        await self._txn(lambda: self._store.append_audit(
            trace_id, actor, "memory.refused", {"op": op, "namespace": namespace, "key": key, "why": str(denied)}))
        raise denied

    # --- queries (no audit: nothing changes) ------------------------------------------------
    def _get(self, entry_id: int) -> MemoryEntry | None:
        row = self._store.execute(f"{rows.SELECT_ENTRY} WHERE id = ?", (entry_id,)).fetchone()
        return rows.entry(row) if row else None

    def _must_get(self, entry_id: int) -> MemoryEntry:
        entry = self._get(entry_id)
        if entry is None:
            raise InputError(f"memory entry #{entry_id} does not exist")
        return entry

    async def get(self, entry_id: int | str) -> MemoryEntry | None:
        return await self._store.call(self._get, row_id(entry_id, "memory entry"))

    async def entries(self, namespace: str | None = None, include_inactive: bool = False) -> tuple[MemoryEntry, ...]:
        """A namespace's entries (None: every namespace): the active ones, or every version."""
        where, args = [], []
        if namespace is not None:
            where, args = ["namespace = ?"], [policy.name(namespace, "the namespace")]
        if not include_inactive:
            where.append("status = 'active'")
        sql = f"{rows.SELECT_ENTRY} {'WHERE ' + ' AND '.join(where) if where else ''} ORDER BY namespace, key, version"
        return await self._store.call(lambda: tuple(rows.entry(r) for r in self._store.execute(sql, args)))

    async def history(self, namespace: str, key: str) -> tuple[MemoryEntry, ...]:
        """Every version of one key, oldest first."""
        args = (policy.name(namespace, "the namespace"), policy.key(key))
        sql = f"{rows.SELECT_ENTRY} WHERE namespace = ? AND key = ? ORDER BY version"
        return await self._store.call(lambda: tuple(rows.entry(r) for r in self._store.execute(sql, args)))

    async def namespaces(self) -> tuple[NamespaceSummary, ...]:
        counts = ", ".join(f"COUNT(CASE WHEN status = '{s.value}' THEN 1 END)" for s in (
            EntryStatus.ACTIVE, EntryStatus.SUPERSEDED, EntryStatus.QUARANTINED, EntryStatus.ROLLED_BACK))
        sql = (f"SELECT namespace, {counts}, MAX(id), MAX(written_at) FROM memory_entries "
               "GROUP BY namespace ORDER BY namespace")
        return await self._store.call(lambda: tuple(NamespaceSummary(*r) for r in self._store.execute(sql)))

    async def spread(self, entry_id: int | str) -> Spread:
        """Who read this entry, in which traces, and what those readers wrote later in the same traces."""
        return await self._store.call(self._spread, row_id(entry_id, "memory entry"))

    def _spread(self, entry_id: int) -> Spread:
        entry = self._must_get(entry_id)
        reads = tuple(rows.read(r) for r in self._store.execute(
            f"{rows.SELECT_READ} WHERE entry_id = ? ORDER BY at, id", (entry_id,)))
        derived = tuple(rows.entry(r) for r in self._store.execute(
            f"{rows.SELECT_ENTRY} WHERE id > ? AND EXISTS (SELECT 1 FROM memory_reads r WHERE r.entry_id = ? "
            "AND r.trace_id = memory_entries.trace_id AND r.reader = memory_entries.author) ORDER BY id",
            (entry_id, entry_id)))
        return Spread(entry, reads, derived)

    async def find(self, match: Match, namespace: str | None = None,
                   include_inactive: bool = True) -> tuple[MemoryEntry, ...]:
        """Entries whose content contains `match` (case-insensitive), or for which `match(entry)` is true."""
        if isinstance(match, str):
            needle = match.casefold()
            if not needle.strip():
                raise InputError("memory: nothing to find (empty text)")
            test: Callable[[MemoryEntry], bool] = lambda e: needle in e.content.casefold()
        elif callable(match):
            test = match
        else:
            raise InputError(f"memory: find takes a text or a predicate, not {type(match).__name__}")
        return tuple(e for e in await self.entries(namespace, include_inactive) if test(e))

    async def rescan(self, namespace: str | None = None) -> tuple[RescanHit, ...]:
        """Re-screens the active entries with the current screen: the ones that no longer pass slipped
        through when they were written (an older screen, a new attack) and need an operator's look."""
        screen = self._require_screen("a rescan")
        active = await self.entries(namespace)

        def scan() -> list[tuple[MemoryEntry, Screening]]:
            return [(e, screen(_envelope(e.author, e.namespace, e.key, e.content, e.trace_id, MessageKind.MEMORY_READ,
                                         entry_id=e.id))) for e in active]
        screened = await asyncio.to_thread(scan)
        return tuple(RescanHit(e, s.action, s.score, s.evidence) for e, s in screened if not s.passes)

    # --- snapshots ---------------------------------------------------------------------------
    async def snapshot(self, namespace: str, label: str, by: str) -> Snapshot:
        """Marks the namespace's current state (its newest entry id) to roll back to later."""
        namespace = policy.name(namespace, "the namespace")
        label, by = policy.name(label, "the label"), policy.name(by, "who takes the snapshot")
        return await self._txn(lambda: self._snapshot(namespace, label, by, None))

    async def snapshot_all(self, label: str, by: str) -> tuple[Snapshot, ...]:
        """One snapshot of every namespace that has entries, in one transaction."""
        label, by = policy.name(label, "the label"), policy.name(by, "who takes the snapshot")
        return await self._txn(lambda: self._snapshot_all(label, by))

    def _snapshot_all(self, label: str, by: str) -> tuple[Snapshot, ...]:
        latest = self._store.execute(
            "SELECT namespace, MAX(id) FROM memory_entries GROUP BY namespace ORDER BY namespace").fetchall()
        return tuple(self._snapshot(namespace, label, by, last) for namespace, last in latest)

    def _snapshot(self, namespace: str, label: str, by: str, last_entry_id: int | None) -> Snapshot:
        store = self._store
        if last_entry_id is None:
            last_entry_id = store.execute("SELECT MAX(id) FROM memory_entries WHERE namespace = ?",
                                         (namespace,)).fetchone()[0]
            if last_entry_id is None:
                raise InputError(f"memory namespace {namespace!r} has no entries; there is nothing to snapshot")
        snapshot_id = store.insert(
            "INSERT INTO memory_snapshots (namespace, label, at, last_entry_id, created_by) VALUES (?, ?, ?, ?, ?)",
            (namespace, label, store.clock(), last_entry_id, by))
        store.append_audit("", by, "memory.snapshot", {"snapshot_id": snapshot_id, "namespace": namespace,
                                                       "label": label, "last_entry_id": last_entry_id})
        return rows.snapshot(store.execute(f"{rows.SELECT_SNAPSHOT} WHERE id = ?", (snapshot_id,)).fetchone())

    async def snapshots(self, namespace: str | None = None) -> tuple[Snapshot, ...]:
        """Snapshots of one namespace (None: all), newest first."""
        where, args = ("WHERE namespace = ?", [policy.name(namespace, "the namespace")]) if namespace is not None \
            else ("", [])
        sql = f"{rows.SELECT_SNAPSHOT} {where} ORDER BY at DESC, id DESC"
        return await self._store.call(lambda: tuple(rows.snapshot(r) for r in self._store.execute(sql, args)))

    async def maybe_snapshot(self, now: float) -> tuple[Snapshot, ...]:
        """For the engine after each question: snapshots every namespace when the schedule says so.
        The check and the snapshots share one transaction, so two processes never both take it."""
        schedule = self.schedule
        if schedule is None or not schedule.enabled:
            return ()

        def txn() -> tuple[Snapshot, ...]:
            last_at = self._store.execute("SELECT MAX(at) FROM memory_snapshots WHERE label = ?",
                                         (schedule.label,)).fetchone()[0]
            return self._snapshot_all(schedule.label, schedule.by) if schedule.due(now, last_at) else ()
        return await self._txn(txn)

    # --- rollback ----------------------------------------------------------------------------
    async def rollback_to_snapshot(self, snapshot_id: int | str, by: str, reason: str) -> RollbackResult:
        """Rolls the snapshot's namespace back to it: later entries become rolled_back, and each key's
        newest remaining version in play is active again. No other namespace changes."""
        snapshot_id = row_id(snapshot_id, "memory snapshot")
        by, reason = policy.name(by, "who rolls back"), policy.reason(reason, "roll memory back")

        def txn() -> RollbackResult:
            row = self._store.execute(f"{rows.SELECT_SNAPSHOT} WHERE id = ?", (snapshot_id,)).fetchone()
            if row is None:
                raise InputError(f"memory snapshot #{snapshot_id} does not exist")
            snap = rows.snapshot(row)
            return self._rollback(snap.namespace, snap.last_entry_id, by, reason, "", snapshot_id=snap.id)
        return await self._txn(txn)

    async def rollback_before_trace(self, namespace: str, trace_id: str, by: str, reason: str) -> RollbackResult:
        """Rolls the namespace back to just before the first entry that trace wrote in it (that entry
        and every later one of the namespace become rolled_back)."""
        namespace, trace_id = policy.name(namespace, "the namespace"), policy.trace(trace_id, "a rollback before a trace")
        by, reason = policy.name(by, "who rolls back"), policy.reason(reason, "roll memory back")

        def txn() -> RollbackResult:
            first = self._store.execute("SELECT MIN(id) FROM memory_entries WHERE namespace = ? AND trace_id = ?",
                                       (namespace, trace_id)).fetchone()[0]
            if first is None:
                raise InputError(f"trace {trace_id} wrote nothing in memory namespace {namespace!r}")
            return self._rollback(namespace, first - 1, by, reason, trace_id, before_trace=trace_id)
        return await self._txn(txn)

    def _rollback(self, namespace: str, after_entry_id: int, by: str, reason: str, trace_id: str, *,
                  snapshot_id: int | None = None, before_trace: str = "") -> RollbackResult:
        store = self._store
        later = store.execute("SELECT id, key, status, status_why FROM memory_entries WHERE namespace = ? AND id > ? "
                             "AND status != 'rolled_back' ORDER BY id", (namespace, after_entry_id)).fetchall()
        why = f"rolled back by {by}: {reason}"
        # Quarantined entries are rolled back too (rolled_back is final); their quarantine stays in the
        # audit trail and in status_why.
        store.executemany("UPDATE memory_entries SET status = 'rolled_back', status_why = ? WHERE id = ?",
                         [(why if status != "quarantined" else f"{why} (was {old_why})", entry_id)
                          for entry_id, _, status, old_why in later])
        restored = [settle(store, namespace, key, f"restored by rollback: {reason}")
                    for key in dict.fromkeys(key for _, key, _, _ in later)]
        result = RollbackResult(namespace, after_entry_id, tuple(r[0] for r in later),
                                tuple(r for r in restored if r is not None), snapshot_id, before_trace)
        self._store.append_audit(trace_id, by, "memory.rolled_back", {
            "namespace": namespace, "after_entry_id": after_entry_id, "snapshot_id": snapshot_id,
            "before_trace": before_trace or None, "entries": list(result.rolled_back),
            "was_quarantined": [r[0] for r in later if r[2] == "quarantined"],
            "restored": list(result.restored), "reason": reason})
        return result

    # --- quarantine --------------------------------------------------------------------------
    async def quarantine(self, entry_id: int | str, by: str, reason: str) -> StatusChange:
        """Takes an entry out of memory (never read again until released); if it was the active version,
        the key's newest remaining version in play becomes active."""
        entry_id = row_id(entry_id, "memory entry")
        by, reason = policy.name(by, "who quarantines"), policy.reason(reason, "quarantine a memory entry")

        def txn() -> StatusChange:
            entry = self._must_get(entry_id)
            if entry.status is EntryStatus.QUARANTINED:
                raise InputError(f"memory entry #{entry_id} is already quarantined ({entry.status_why})")
            if entry.status is EntryStatus.ROLLED_BACK:
                raise InputError(f"memory entry #{entry_id} was rolled back; it is out of memory for good")
            self._store.execute("UPDATE memory_entries SET status = 'quarantined', status_why = ? WHERE id = ?",
                               (f"quarantined by {by}: {reason}", entry_id))
            restored = settle(self._store, entry.namespace, entry.key, f"restored: #{entry_id} was quarantined")
            return self._status_change("memory.quarantined", entry, by, reason, restored)
        return await self._txn(txn)

    async def release(self, entry_id: int | str, by: str, reason: str) -> StatusChange:
        """Puts a quarantined entry back in play; it is active again if it is its key's newest version."""
        entry_id = row_id(entry_id, "memory entry")
        by, reason = policy.name(by, "who releases"), policy.reason(reason, "release a memory entry")

        def txn() -> StatusChange:
            entry = self._must_get(entry_id)
            if entry.status is not EntryStatus.QUARANTINED:
                raise InputError(f"memory entry #{entry_id} is {entry.status.value}, not quarantined; "
                                 "only a quarantined entry can be released")
            self._store.execute("UPDATE memory_entries SET status = 'superseded', status_why = ? WHERE id = ?",
                               (f"released by {by}: {reason}", entry_id))
            restored = settle(self._store, entry.namespace, entry.key, f"released by {by}: {reason}")
            return self._status_change("memory.released", entry, by, reason, restored)
        return await self._txn(txn)

    def _status_change(self, type_: str, before: MemoryEntry, by: str, reason: str,
                       restored: int | None) -> StatusChange:
        active = self._store.execute(f"{rows.SELECT_ENTRY} WHERE namespace = ? AND key = ? AND status = 'active'",
                                    (before.namespace, before.key)).fetchone()
        change = StatusChange(self._must_get(before.id), rows.entry(active) if active else None)
        # Audited under the trace that wrote the entry, so the trace's record shows what became of it.
        self._store.append_audit(before.trace_id, by, type_, {
            "entry_id": before.id, "namespace": before.namespace, "key": before.key, "version": before.version,
            "was": before.status.value, "now": change.entry.status.value, "reason": reason,
            "active": change.active.id if change.active else None, "restored": restored})
        return change
