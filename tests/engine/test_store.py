import sqlite3

import pytest

from engine import AuditChainBroken
from engine.record import record_answer, record_answer_sync
from engine.schema import MIGRATIONS
from engine.store.db import Store
from engine.types import AgentOutcome, CallStatus, RiskTier, Role, Verdict
from engine.answer import Answer


def answer(trace_id="t1") -> Answer:
    return Answer(trace_id=trace_id, question="q?", tier=RiskTier.MEDIUM, verdict=Verdict.ANSWERED, answer="a",
                  reason="r", citations=(), agents=(AgentOutcome("r1", Role.RETRIEVER, CallStatus.OK, 12.0, "", 3),
                                                    AgentOutcome("r2", Role.RETRIEVER, CallStatus.DOWN, 1.0, "refused")),
                  context=(), candidates=(), timings_ms={}, asked_at=1.0)


async def test_answer_and_its_audit_events_persist_across_reopen(store_target):
    store = Store(store_target, MIGRATIONS)
    await store.open()
    await record_answer(store, answer())
    await store.aclose()

    again = Store(store_target, MIGRATIONS)
    await again.open()
    assert (await again.recent_questions())[0]["trace_id"] == "t1"
    assert await again.agent_stats() == {"r1": {"calls": 1, "ok": 1}, "r2": {"calls": 1, "ok": 0}}
    assert again.verify_audit_sync() == 3     # two agent calls + the decision
    await again.aclose()


def test_editing_a_row_breaks_the_chain(store_target):
    store = Store(store_target, MIGRATIONS)
    store.open_sync()
    for i in range(3):
        store.audit_sync(f"t{i}", "operator", "note", {"i": i})
    assert store.verify_audit_sync() == 3
    store.execute("UPDATE audit SET payload = '{\"i\":9}' WHERE seq = 2")
    with pytest.raises(AuditChainBroken, match="event 2"):
        store.verify_audit_sync()
    store.close_sync()


def test_deleting_a_row_breaks_the_chain(store_target):
    store = Store(store_target, MIGRATIONS)
    store.open_sync()
    for i in range(3):
        store.audit_sync("t", "engine", "note", {"i": i})
    store.execute("DELETE FROM audit WHERE seq = 2")
    with pytest.raises(AuditChainBroken, match="missing or reordered"):
        store.verify_audit_sync()
    store.close_sync()


def test_failed_write_rolls_back_everything(store_target):
    store = Store(store_target, MIGRATIONS)
    store.open_sync()
    record_answer_sync(store, answer("dup"))
    with pytest.raises(Exception):
        record_answer_sync(store, answer("dup"))     # same trace id: the question insert fails
    assert store.verify_audit_sync() == 3          # no half-written audit rows from the failed attempt
    store.close_sync()


def test_newer_schema_is_refused(db_path):
    conn = sqlite3.connect(db_path)
    conn.execute("PRAGMA user_version = 99")
    conn.close()
    from engine import StoreError
    with pytest.raises(StoreError, match="newer than this Quorum"):
        Store(db_path, MIGRATIONS).open_sync()
