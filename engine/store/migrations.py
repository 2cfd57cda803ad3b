"""How the one SQLite file's schema grows: numbered steps, each package declaring the steps for its own tables.

The store runs every step after the file's PRAGMA user_version, in order, each in one transaction, and
leaves user_version at the last. It imports no package above it, so the steps are handed to it
(engine.schema gathers every package's). Two packages may share a version (3: the reputation book's
tables and the alerts table came in together): their parts run as one step, in the order given.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence


@dataclass(frozen=True)
class Migration:
    version: int        # the file's user_version once this step has run
    script: str         # SQL statements (no BEGIN / COMMIT: the store wraps each step in one transaction)


def in_order(*packages: Sequence[Migration]) -> tuple[Migration, ...]:
    """Every package's steps as the store runs them: one per version, 1, 2, 3, ... with no gap; the parts of a
    shared version joined in the order the packages are given."""
    parts: dict[int, list[str]] = {}
    for migration in (m for package in packages for m in package):
        parts.setdefault(migration.version, []).append(migration.script)
    if sorted(parts) != list(range(1, len(parts) + 1)):
        raise ValueError(f"schema versions must run 1..{len(parts)} with no gap, found {sorted(parts)}")
    return tuple(Migration(v, "".join(parts[v])) for v in sorted(parts))


# The store's own tables: the questions, their agent calls and the audit chain.
MIGRATIONS: tuple[Migration, ...] = (
    # questions, agent calls, audit chain
    Migration(1, """
    CREATE TABLE questions (trace_id TEXT PRIMARY KEY, question TEXT NOT NULL, tier TEXT NOT NULL,
        verdict TEXT NOT NULL, answer TEXT NOT NULL, asked_at REAL NOT NULL, answer_json TEXT NOT NULL);
    CREATE TABLE agent_calls (id INTEGER PRIMARY KEY, trace_id TEXT NOT NULL, agent_id TEXT NOT NULL,
        role TEXT NOT NULL, status TEXT NOT NULL, latency_ms REAL NOT NULL, error TEXT NOT NULL, at REAL NOT NULL);
    CREATE INDEX agent_calls_agent ON agent_calls(agent_id, at);
    CREATE TABLE audit (seq INTEGER PRIMARY KEY, trace_id TEXT NOT NULL, actor TEXT NOT NULL, type TEXT NOT NULL,
        payload TEXT NOT NULL, at REAL NOT NULL, prev_hash TEXT NOT NULL, hash TEXT NOT NULL);
    CREATE INDEX audit_trace ON audit(trace_id);
    """),
    # the audit trail's filters (engine.store.audit_log): by actor, by type (exact or a prefix) and by
    # time, and the actor / type dropdowns (DISTINCT on a covering index), without scanning the chain.
    Migration(7, """
    CREATE INDEX audit_actor ON audit(actor);
    CREATE INDEX audit_type ON audit(type);
    CREATE INDEX audit_at ON audit(at);
    """),
)
