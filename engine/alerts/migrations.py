"""The operator alerts' tables in the one SQLite file, as steps of its schema (engine.store.migrations;
engine.schema puts every package's steps in order). A step once shipped is never edited: a change is a new step."""
from __future__ import annotations

from ..store.migrations import Migration

MIGRATIONS: tuple[Migration, ...] = (
    # the alerts an operator acknowledges (the same version as the reputation book's tables, after them)
    Migration(3, """
    CREATE TABLE alerts (id INTEGER PRIMARY KEY, kind TEXT NOT NULL, agent_id TEXT NOT NULL, message TEXT NOT NULL,
        trace_id TEXT NOT NULL, at REAL NOT NULL, acknowledged_by TEXT, acknowledged_at REAL,
        CHECK((acknowledged_by IS NULL) = (acknowledged_at IS NULL)));
    CREATE INDEX alerts_open ON alerts(acknowledged_at, at);
    """),
    # operator alerts (engine.alerts): each alert's severity (older rows get their kind's, as the
    # kinds table had it then), the acknowledgement's comment, and silences: a kind and/or an agent muted
    # until expires_at (or until an operator ends it). Silences mute notification; alerts are still kept.
    Migration(8, """
    ALTER TABLE alerts ADD COLUMN severity TEXT NOT NULL DEFAULT 'warning'
        CHECK(severity IN ('critical','warning','info'));
    UPDATE alerts SET severity = 'critical' WHERE kind IN ('auto_quarantine','agent_down','injection_blocked');
    ALTER TABLE alerts ADD COLUMN ack_comment TEXT;
    CREATE TABLE silences (id INTEGER PRIMARY KEY, kind TEXT, agent_id TEXT, created_by TEXT NOT NULL,
        comment TEXT NOT NULL, created_at REAL NOT NULL, expires_at REAL NOT NULL, ended_at REAL, ended_by TEXT,
        CHECK(kind IS NOT NULL OR agent_id IS NOT NULL), CHECK(expires_at > created_at),
        CHECK((ended_at IS NULL) = (ended_by IS NULL)));
    CREATE INDEX silences_expiry ON silences(expires_at);
    """),
)
