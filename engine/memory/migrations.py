"""The agents' memory tables in the one SQLite file, as steps of its schema (engine.store.migrations;
engine.schema puts every package's steps in order). A step once shipped is never edited: a change is a new step."""
from __future__ import annotations

from ..store.migrations import Migration

MIGRATIONS: tuple[Migration, ...] = (
    # per-agent memory (engine.memory): every write versioned with its trace id, snapshots to roll
    # back to, and every read, so the spread of a tainted entry can be traced.
    Migration(4, """
    CREATE TABLE memory_entries (id INTEGER PRIMARY KEY, namespace TEXT NOT NULL, key TEXT NOT NULL,
        content TEXT NOT NULL, version INTEGER NOT NULL, author TEXT NOT NULL, trace_id TEXT NOT NULL,
        written_at REAL NOT NULL, screen_score REAL NOT NULL DEFAULT 0,
        status TEXT NOT NULL DEFAULT 'active' CHECK(status IN ('active','superseded','quarantined','rolled_back')),
        status_why TEXT NOT NULL DEFAULT '', UNIQUE(namespace, key, version));
    CREATE INDEX memory_entries_ns ON memory_entries(namespace, key, status);
    CREATE UNIQUE INDEX memory_entries_one_active ON memory_entries(namespace, key) WHERE status = 'active';
    CREATE INDEX memory_entries_trace ON memory_entries(trace_id);
    CREATE TABLE memory_reads (id INTEGER PRIMARY KEY, entry_id INTEGER NOT NULL REFERENCES memory_entries(id),
        reader TEXT NOT NULL, trace_id TEXT NOT NULL, at REAL NOT NULL);
    CREATE INDEX memory_reads_entry ON memory_reads(entry_id, at);
    CREATE TABLE memory_snapshots (id INTEGER PRIMARY KEY, namespace TEXT NOT NULL, label TEXT NOT NULL,
        at REAL NOT NULL, last_entry_id INTEGER NOT NULL, created_by TEXT NOT NULL);
    CREATE INDEX memory_snapshots_ns ON memory_snapshots(namespace, at);
    """),
)
