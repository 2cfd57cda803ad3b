"""The gateway's tables in the one SQLite file, as steps of its schema (engine.store.migrations;
engine.schema puts every package's steps in order). A step once shipped is never edited: a change is a new step."""
from __future__ import annotations

from ..store.migrations import Migration

MIGRATIONS: tuple[Migration, ...] = (
    # the gateway (engine.gateway): every message of a trace, with its parent, and each decision
    # that stopped or changed a message, with the scanners' evidence.
    Migration(5, """
    CREATE TABLE trace_events (id INTEGER PRIMARY KEY, trace_id TEXT NOT NULL, parent_trace_id TEXT NOT NULL,
        kind TEXT NOT NULL, source TEXT NOT NULL, target TEXT NOT NULL, trust TEXT NOT NULL,
        summary TEXT NOT NULL, data TEXT NOT NULL, at REAL NOT NULL);
    CREATE INDEX trace_events_trace ON trace_events(trace_id, id);
    CREATE INDEX trace_events_parent ON trace_events(parent_trace_id, id);
    CREATE TABLE gateway_decisions (id INTEGER PRIMARY KEY, trace_id TEXT NOT NULL, parent_trace_id TEXT NOT NULL,
        source TEXT NOT NULL, target TEXT NOT NULL, kind TEXT NOT NULL, trust TEXT NOT NULL, channel TEXT NOT NULL,
        action TEXT NOT NULL, score REAL NOT NULL, evidence TEXT NOT NULL, excerpt TEXT NOT NULL, at REAL NOT NULL,
        item TEXT NOT NULL DEFAULT '');
    CREATE INDEX gateway_decisions_at ON gateway_decisions(at);
    """),
    # agents' tool calls (engine.gateway.tools): each call with its decision; outward actions wait
    # here for an operator when the agent is in approval mode; the outbox holds what was "sent".
    Migration(6, """
    CREATE TABLE tool_calls (id INTEGER PRIMARY KEY, trace_id TEXT NOT NULL, agent_id TEXT NOT NULL,
        tool TEXT NOT NULL, params TEXT NOT NULL,
        status TEXT NOT NULL CHECK(status IN ('done','refused','failed','pending','approved','rejected')),
        why TEXT NOT NULL, result TEXT NOT NULL DEFAULT '', at REAL NOT NULL, decided_by TEXT, decided_at REAL,
        reason TEXT, CHECK((decided_by IS NULL) = (decided_at IS NULL)));
    CREATE INDEX tool_calls_status ON tool_calls(status, at);
    CREATE INDEX tool_calls_trace ON tool_calls(trace_id);
    CREATE TABLE outbox (id INTEGER PRIMARY KEY, tool_call_id INTEGER NOT NULL REFERENCES tool_calls(id),
        recipient TEXT NOT NULL, subject TEXT NOT NULL, body TEXT NOT NULL, at REAL NOT NULL);
    """),
)
