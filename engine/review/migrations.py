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
    # alert that says so was raised. question_key: the question as asked again (engine.review.queue.question_key):
    # the same question on the same tier while its item waits joins that item (review_joins: which answers did).
    Migration(9, """
    ALTER TABLE approvals ADD COLUMN claimed_by TEXT;
    ALTER TABLE approvals ADD COLUMN claimed_until REAL;
    ALTER TABLE approvals ADD COLUMN due_at REAL;
    ALTER TABLE approvals ADD COLUMN overdue_at REAL;
    ALTER TABLE approvals ADD COLUMN question_key TEXT;
    ALTER TABLE approvals ADD COLUMN asked_times INTEGER NOT NULL DEFAULT 1;
    CREATE INDEX approvals_due ON approvals(status, due_at);
    CREATE INDEX approvals_question ON approvals(question_key, status);
    CREATE TABLE review_joins (trace_id TEXT PRIMARY KEY, item_id INTEGER NOT NULL REFERENCES approvals(id),
        at REAL NOT NULL);
    CREATE INDEX review_joins_item ON review_joins(item_id);
    ALTER TABLE approvals ADD COLUMN asked_by TEXT NOT NULL DEFAULT '';
    ALTER TABLE review_joins ADD COLUMN asked_by TEXT NOT NULL DEFAULT '';
    CREATE TABLE review_votes (item_id INTEGER NOT NULL REFERENCES approvals(id), operator TEXT NOT NULL,
        reason TEXT NOT NULL, note TEXT NOT NULL, at REAL NOT NULL, PRIMARY KEY (item_id, operator));
    """),
)
