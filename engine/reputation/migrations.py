"""The reputation book's tables in the one SQLite file, as steps of its schema (engine.store.migrations;
engine.schema puts every package's steps in order). A step once shipped is never edited: a change is a new step."""
from __future__ import annotations

from ..store.migrations import Migration

MIGRATIONS: tuple[Migration, ...] = (
    # each agent's standing and every score it has had (the Trust plot survives a restart); the alerts
    # table came in the same version (engine.alerts.migrations)
    Migration(3, """
    CREATE TABLE trust (agent_id TEXT PRIMARY KEY, role TEXT NOT NULL, log_odds REAL NOT NULL,
        state TEXT NOT NULL CHECK(state IN ('active','probation','quarantined')), first_seen REAL NOT NULL,
        last_change_at REAL, last_change_why TEXT NOT NULL DEFAULT '', good_streak INTEGER NOT NULL DEFAULT 0);
    CREATE TABLE trust_history (id INTEGER PRIMARY KEY, agent_id TEXT NOT NULL, score REAL NOT NULL,
        state TEXT NOT NULL, trace_id TEXT NOT NULL, why TEXT NOT NULL, at REAL NOT NULL);
    CREATE INDEX trust_history_agent ON trust_history(agent_id, at);
    """),
)
