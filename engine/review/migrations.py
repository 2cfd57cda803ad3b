"""The approval queue's tables in the one SQLite file, as steps of its schema (engine.store.migrations;
engine.schema puts every package's steps in order). A step once shipped is never edited: a change is a new step."""
from __future__ import annotations

from ..store.migrations import Migration

MIGRATIONS: tuple[Migration, ...] = (
    # the approval queue (engine.review): answers that wait for an operator, and the decision.
    # payload is the whole Answer as JSON (engine.types.to_jsonable), so nothing is lost.
    Migration(2, """
    CREATE TABLE approvals (id INTEGER PRIMARY KEY, trace_id TEXT UNIQUE NOT NULL, question TEXT NOT NULL,
        tier TEXT NOT NULL, verdict TEXT NOT NULL,
        status TEXT NOT NULL DEFAULT 'pending' CHECK(status IN ('pending','approved','rejected')),
        why TEXT NOT NULL, created_at REAL NOT NULL, payload TEXT NOT NULL,
        decided_by TEXT, reason TEXT, note TEXT, decided_at REAL,
        CHECK((status = 'pending') = (decided_at IS NULL)));
    CREATE INDEX approvals_status ON approvals(status, created_at);
    """),
    # claims (engine.review.queue): an operator holds a pending item for a lease, so a team does not review
    # the same answer twice; a claim whose lease ran out is free to take (a desk that died loses it). due_at:
    # when the item is overdue by its tier's service-level time (older items: none); overdue_at: when the one
    # alert that says so was raised.
    Migration(9, """
    ALTER TABLE approvals ADD COLUMN claimed_by TEXT;
    ALTER TABLE approvals ADD COLUMN claimed_until REAL;
    ALTER TABLE approvals ADD COLUMN due_at REAL;
    ALTER TABLE approvals ADD COLUMN overdue_at REAL;
    CREATE INDEX approvals_due ON approvals(status, due_at);
    """),
)
