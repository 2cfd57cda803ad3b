"""The alerts migration on a database of the previous schema: old alerts get their kind's severity and stay
acknowledged as they were; silences work on the migrated file."""
from __future__ import annotations

import sqlite3

import pytest

from engine.alerts import Severity, severity_of
from engine.errors import StoreError
from engine.alerts.book import AlertBook
from engine.alerts.kinds import AlertKind
from engine.schema import MIGRATIONS
from engine.store.db import Store

ALERTS_MIGRATION = next(m.version for m in MIGRATIONS if "CREATE TABLE silences" in m.script)


def previous_version(path) -> None:
    """A file as the Quorum before the alerts migration left it."""
    conn = sqlite3.connect(path, isolation_level=None)
    for m in MIGRATIONS[:ALERTS_MIGRATION - 1]:
        conn.executescript(f"BEGIN; {m.script} PRAGMA user_version={m.version}; COMMIT;")
    rows = [(kind, f"gen-{i}", f"{kind} happened", f"t{i}", 100.0 + i) for i, kind in enumerate(
        ("auto_quarantine", "score_drop", "agent_down", "behaviour_shift"))]
    conn.executemany("INSERT INTO alerts (kind, agent_id, message, trace_id, at) VALUES (?, ?, ?, ?, ?)", rows)
    conn.execute("UPDATE alerts SET acknowledged_by = 'alice', acknowledged_at = 200.0 WHERE kind = 'score_drop'")
    conn.close()


def test_the_previous_schema_had_no_severity(db_path):
    previous_version(db_path)
    conn = sqlite3.connect(db_path)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == ALERTS_MIGRATION - 1
    assert "severity" not in {r[1] for r in conn.execute("PRAGMA table_info(alerts)")}
    conn.close()


def test_old_alerts_get_their_kinds_severity_and_keep_their_acknowledgement(db_path):
    previous_version(db_path)
    store = Store(db_path, MIGRATIONS, clock=lambda: 1000.0)
    store.open_sync()
    try:
        assert store.execute("PRAGMA user_version").fetchone()[0] == len(MIGRATIONS)
        book = AlertBook(store)
        alerts = {a.kind: a for a in book.alerts_sync()}
        assert set(alerts) == {"auto_quarantine", "score_drop", "agent_down", "behaviour_shift"}
        for kind, alert in alerts.items():
            assert alert.severity is severity_of(kind)
        assert alerts["auto_quarantine"].severity is Severity.CRITICAL
        assert alerts["behaviour_shift"].severity is Severity.WARNING
        stored = dict(store.execute("SELECT kind, severity FROM alerts").fetchall())
        assert stored["agent_down"] == "critical" and stored["score_drop"] == "warning"
        acked = alerts["score_drop"]
        assert (acked.acknowledged_by, acked.acknowledged_at, acked.ack_comment) == ("alice", 200.0, "")
        # The new table works on the migrated file.
        book.silence_sync(AlertKind.AGENT_DOWN, duration_s=60, by="alice", comment="migrated")
        assert {a.kind for a in book.alerts_sync() if a.muted} == {"agent_down"}
        assert book.unacknowledged_counts_sync() == (2, 1)
    finally:
        store.close_sync()


def test_the_schema_refuses_a_silence_of_everything(db_path):
    store = Store(db_path, MIGRATIONS)
    store.open_sync()
    try:
        with pytest.raises(StoreError, match="CHECK constraint"):
            store.execute("INSERT INTO silences (kind, agent_id, created_by, comment, created_at, expires_at) "
                                  "VALUES (NULL, NULL, 'x', 'y', 1, 2)")
    finally:
        store.close_sync()
