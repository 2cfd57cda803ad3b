"""SQL columns of the memory tables (migration 4 in engine/memory/migrations.py) and their frozen rows."""
from __future__ import annotations

from typing import Any, Sequence

from .model import EntryStatus, MemoryEntry, MemoryRead, Snapshot

ENTRY_COLUMNS = ("id", "namespace", "key", "content", "version", "author", "trace_id", "written_at",
                 "screen_score", "status", "status_why")
SELECT_ENTRY = f"SELECT {', '.join(ENTRY_COLUMNS)} FROM memory_entries"

READ_COLUMNS = ("id", "entry_id", "reader", "trace_id", "at")
SELECT_READ = f"SELECT {', '.join(READ_COLUMNS)} FROM memory_reads"

SNAPSHOT_COLUMNS = ("id", "namespace", "label", "at", "last_entry_id", "created_by")
SELECT_SNAPSHOT = f"SELECT {', '.join(SNAPSHOT_COLUMNS)} FROM memory_snapshots"


def entry(row: Sequence[Any]) -> MemoryEntry:
    values = dict(zip(ENTRY_COLUMNS, row))
    return MemoryEntry(**{**values, "status": EntryStatus(values["status"])})


def read(row: Sequence[Any]) -> MemoryRead:
    return MemoryRead(*row)


def snapshot(row: Sequence[Any]) -> Snapshot:
    return Snapshot(*row)
