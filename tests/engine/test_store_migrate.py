"""`main.py store migrate --from FILE.db`: a desk's history moves whole into a team store and its chain verifies
there; a broken chain, or a store that already holds records, is refused and nothing moves."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from engine.alerts import table as alert_table
from engine.alerts.row import NewAlert
from engine.record import record_answer_sync
from engine.review import ReviewQueue
from engine.schema import MIGRATIONS
from engine.store.anchors import desk_id
from engine.store.db import Store
from engine.types import AgentOutcome, CallStatus, RiskTier, Role, Verdict
from engine.answer import Answer

ROOT = Path(__file__).resolve().parents[2]


def answer(trace_id: str) -> Answer:
    return Answer(trace_id=trace_id, question=f"What are the moons of Mars? ({trace_id})", tier=RiskTier.HIGH,
                  verdict=Verdict.ANSWERED, answer="Phobos and Deimos.", reason="r", citations=(),
                  agents=(AgentOutcome("ret-a", Role.RETRIEVER, CallStatus.OK, 12.0, "", 3),),
                  context=(), candidates=(), timings_ms={}, asked_at=1700000000.5)


def desk_file(path: Path) -> Path:
    """A desk's SQLite history: answers, a review item, an alert and a note in the chain."""
    store = Store(path, MIGRATIONS)
    store.open_sync()
    queue = ReviewQueue(store)
    for n in range(3):
        record_answer_sync(store, answer(f"t{n}"), also=queue.insert_in_transaction(answer(f"t{n}"), "high risk"))
    store.transaction(lambda: alert_table.insert_alert(store, NewAlert("agent_down", "ret-a", "down", "t1", 1.5)))
    store.audit_sync("", "alice", "note", {"text": "shift handover"})
    # A standing for one of the default fleet's agents, and one for an agent no longer in it.
    store.execute("INSERT INTO trust (agent_id, role, log_odds, state, first_seen) VALUES "
                  "('ret-bm25', 'retriever', 1.5, 'active', 1.0), ('ret-gone', 'retriever', 0.0, 'active', 1.0)")
    store.close_sync()
    return path


def main(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "main.py", *args], cwd=ROOT, capture_output=True, text=True, timeout=120)


def count(target, table: str) -> int:
    store = Store(target, MIGRATIONS)
    store.open_sync()
    try:
        return store.execute(f"SELECT COUNT(*) FROM {table}").scalar_one()
    finally:
        store.close_sync()


def test_a_desk_history_moves_into_the_team_store_and_verifies(tmp_path, postgres_schema):
    source = desk_file(tmp_path / "desk.db")
    events = count(source, "audit")
    moved = main("store", "migrate", "--from", str(source), "--db", postgres_schema, "--operator", "alice")
    assert moved.returncode == 0, moved.stderr
    assert f"{events} events" in moved.stdout and "questions 3" in moved.stdout and "approvals 3" in moved.stdout
    verified = main("audit", "verify", "--db", postgres_schema)
    assert verified.returncode == 0 and f"intact ({events + 1} events)" in verified.stdout
    listed = main("audit", "list", "--db", postgres_schema, "--kind", "store.migrated")
    # On a team store the actor is the role signed in (quorum, as the URL says), not the --operator typed.
    assert " quorum " in listed.stdout and "alice" not in listed.stdout
    # The moved ids stay, and the team store numbers new rows after them.
    store = Store(postgres_schema, MIGRATIONS)
    store.open_sync()
    new_id = store.transaction(lambda: alert_table.insert_alert(store, NewAlert("agent_down", "ret-b", "x", "t9", 2.0)))
    assert new_id == 2
    # The book's rows now name the desk's built-in agent as its engine names it on the team store (its desk).
    named = dict(store.execute("SELECT agent_id, log_odds FROM trust").all())
    assert named == {f"ret-bm25@desk-{desk_id()}": 1.5, "ret-gone": 0.0}
    store.close_sync()
    again = main("store", "migrate", "--from", str(source), "--db", postgres_schema)
    assert again.returncode == 2 and "already holds records" in again.stderr


def test_a_broken_chain_is_not_moved(tmp_path, store_target):
    source = desk_file(tmp_path / "desk.db")
    store = Store(source, MIGRATIONS)
    store.open_sync()
    store.execute("UPDATE audit SET actor = 'mallory' WHERE seq = 2")
    store.close_sync()
    refused = main("store", "migrate", "--from", str(source), "--db", str(store_target))
    assert refused.returncode == 2 and "audit chain broken at event 2" in refused.stderr
    if store_target.path is None:
        assert count(store_target, "audit") == 0


def test_a_missing_source_file_is_named(tmp_path):
    refused = main("store", "migrate", "--from", str(tmp_path / "nowhere.db"), "--db", str(tmp_path / "team.db"))
    assert refused.returncode == 2 and "nowhere.db: no such file" in refused.stderr
