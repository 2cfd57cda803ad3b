"""Per-agent memory: isolation, versions, snapshots, rollback, quarantine and the spread of a bad entry.

    MemoryStore(store, screen, schedule=None)   write / read (an agent, its own namespace only),
                                                entries / history / namespaces / get / find / spread / rescan,
                                                snapshot / snapshot_all / snapshots / maybe_snapshot,
                                                rollback_to_snapshot / rollback_before_trace, quarantine / release
    SnapshotSchedule(every_s)                   when maybe_snapshot snapshots every namespace
    MemoryEntry, EntryStatus, MemoryRead, Snapshot, WriteResult, RollbackResult, NamespaceSummary,
    Spread, StatusChange, RescanHit             frozen rows
    MemoryAccessDenied                          an InputError: another agent's namespace (audited)

Every write passes the injection gateway first; a write that does not pass is not stored. Bad input
(an unknown entry or snapshot id, an empty reason) raises engine.errors.InputError.
"""
from .model import (EntryStatus, MemoryEntry, MemoryRead, NamespaceSummary, RescanHit, RollbackResult, Snapshot,
                    Spread, StatusChange, WriteResult)
from .policy import MemoryAccessDenied
from .schedule import SnapshotSchedule
from .store import MemoryStore

__all__ = [
    "MemoryStore", "SnapshotSchedule", "MemoryAccessDenied", "EntryStatus", "MemoryEntry", "MemoryRead", "Snapshot",
    "WriteResult", "RollbackResult", "NamespaceSummary", "Spread", "StatusChange", "RescanHit",
]
