"""The approval queue: policy, queue on the real SQLite store, audit events, restarts, CLI, and the engine hook."""
from __future__ import annotations

import dataclasses
import itertools
import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from engine import Engine, InputError, RiskTier, StoreError, Verdict, load_fleet, load_settings, to_jsonable
from engine.review import (APPROVE_REASONS, REJECT_REASONS, ReviewItem, ReviewQueue, ReviewStatus, check_decision,
                           needs_review)
from engine.events import ReviewEnqueued
from engine.record import record_answer_sync
from engine.schema import MIGRATIONS
from engine.settings.review import ReviewSettings
from engine.store.db import Store
from engine.types import (AgentOutcome, CallStatus, Candidate, Citation, Claim, ClaimCheck, ClaimLabel, Generation,
                          Role)
from engine.answer import Answer

from ..conftest import FAST_SETTINGS

ROOT = Path(__file__).resolve().parents[2]
MOONS = "Mars has two small moons, Phobos and Deimos."


def make_answer(trace_id: str = "t-high", tier: RiskTier = RiskTier.HIGH, verdict: Verdict = Verdict.ANSWERED,
                asked_at: float = 100.0, question: str = "What are the moons of Mars?") -> Answer:
    """An answer to `question` (the same question asked again while its item waits joins that item: tests that
    want items of their own ask questions of their own)."""
    honest = Generation(MOONS, ("the passage names both moons",), (Claim(MOONS, ("mars-moons#0",)),), 0.9)
    liar = Generation("Mars has three moons.", (), (Claim("Mars has a third moon, Nyx.", ("survey#0",)),), 0.7)
    candidates = (
        Candidate("gen-a", honest, (ClaimCheck(honest.claims[0], True, 1.0, "all words in the evidence",
                                               ClaimLabel.SUPPORTED, 0.9),), 1.0, ("gen-b",), 0.85),
        Candidate("gen-liar", liar, (ClaimCheck(liar.claims[0], False, 0.2, "cites a passage not in the context",
                                                ClaimLabel.NOT_ENOUGH, 0.8),), 0.0, (), 0.1),
    )
    return Answer(trace_id=trace_id, question=question, tier=tier, verdict=verdict,
                  answer=MOONS if verdict is Verdict.ANSWERED else "", reason="supported by 100% of its claims",
                  citations=(Citation("mars-moons#0", "Encyclopedia", "Moons of Mars", MOONS),),
                  agents=(AgentOutcome("gen-a", Role.GENERATOR, CallStatus.OK, 20.0, n_items=1),),
                  context=(), candidates=candidates, timings_ms={"retrieve": 10.0}, asked_at=asked_at)


class Clock:
    def __init__(self) -> None:
        self._ticks = itertools.count(1000)

    def __call__(self) -> float:
        return float(next(self._ticks))


@pytest.fixture
async def store(store_target):
    store = Store(store_target, MIGRATIONS, clock=Clock())
    await store.open()
    yield store
    await store.aclose()


@pytest.fixture
def queue(store) -> ReviewQueue:
    """One approval decides, on both stores (a team store's high tier asks two: test_review_claims.py)."""
    return ReviewQueue(store, ReviewSettings(quorum_high=1))


def audit_rows(store: Store) -> list[dict]:
    return [dict(row, payload=json.loads(row["payload"])) for row in store.query("SELECT * FROM audit ORDER BY seq")]


# --- policy ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("tier, verdict, why", [
    (RiskTier.HIGH, Verdict.ANSWERED, "high-risk question"),
    (RiskTier.HIGH, Verdict.ABSTAINED, "high-risk question"),
    (RiskTier.HIGH, Verdict.NO_ANSWER, "high-risk question"),
    (RiskTier.MEDIUM, Verdict.ABSTAINED, "no consistent conclusion on a medium-risk question"),
    (RiskTier.MEDIUM, Verdict.ANSWERED, ""),
    (RiskTier.MEDIUM, Verdict.NO_ANSWER, ""),
    (RiskTier.LOW, Verdict.ABSTAINED, ""),
    (RiskTier.LOW, Verdict.ANSWERED, ""),
])
def test_needs_review_policy(tier, verdict, why):
    assert needs_review(make_answer(tier=tier, verdict=verdict)) == why


def test_reasons_are_checked_without_regard_to_case_and_other_needs_a_note():
    assert check_decision(True, "  Verified against the  cited sources ") == ("verified against the cited sources", "")
    assert check_decision(False, "other", "  a  note ") == ("other", "a note")
    with pytest.raises(InputError, match='"factually wrong" is not a reason to approve; allowed reasons: '
                                         '"verified against the cited sources" \\| "matches operator knowledge"'):
        check_decision(True, "factually wrong")
    with pytest.raises(InputError, match="no reason is not a reason to reject"):
        check_decision(False, " ")
    with pytest.raises(InputError, match='"other" needs a note'):
        check_decision(False, "other", "   ")


# --- queue on the store ---------------------------------------------------------------------------
async def test_enqueue_is_idempotent_per_trace_id_and_audited_once(store, queue):
    answer = make_answer()
    first = await queue.enqueue(answer, needs_review(answer))
    assert await queue.enqueue(answer, needs_review(answer)) == first
    assert await queue.enqueue(dataclasses.replace(answer, answer="changed"), "again") == first
    other = await queue.enqueue(make_answer("t-other", question="Which moon of Mars is larger?"), "high-risk question")
    assert other != first

    items = await queue.pending()
    assert [i.id for i in items] == [first, other]              # oldest first
    item = items[0]
    assert isinstance(item, ReviewItem) and item.status is ReviewStatus.PENDING and item.status == "pending"
    assert (item.trace_id, item.question, item.tier, item.verdict, item.why) == (
        "t-high", "What are the moons of Mars?", RiskTier.HIGH, Verdict.ANSWERED, "high-risk question")
    assert item.answer_text == MOONS and item.created_at == 1000.0
    assert (item.decided_by, item.reason, item.note, item.decided_at) == ("", "", "", None)
    assert [c.agent_id for c in item.candidates_summary] == ["gen-a", "gen-liar"]
    liar = item.candidates_summary[1]
    assert liar.answer == "Mars has three moons." and liar.support_rate == 0.0
    assert liar.claims[0].text == "Mars has a third moon, Nyx." and not liar.claims[0].supported
    assert liar.claims[0].citations == ("survey#0",) and "not in the context" in liar.claims[0].reason
    assert liar.claims[0].label == "not_enough_evidence" and item.candidates_summary[0].claims[0].label == "supported"
    with pytest.raises(dataclasses.FrozenInstanceError):
        item.status = ReviewStatus.APPROVED

    events = [r for r in audit_rows(store) if r["type"] == "review.enqueued"]
    assert [(e["trace_id"], e["actor"], e["payload"]["id"]) for e in events] == [("t-high", "engine", first),
                                                                                ("t-other", "engine", other)]
    assert events[0]["payload"]["why"] == "high-risk question"


async def test_approve_and_reject_with_listed_reasons_are_final_and_audited(store, queue):
    a = await queue.enqueue(make_answer("t-a"), "high-risk question")
    b = await queue.enqueue(make_answer("t-b", question="Which moon of Mars is larger?"), "high-risk question")

    approved = await queue.decide(a, True, "alice", "verified against the cited sources")
    assert approved.status is ReviewStatus.APPROVED and approved.id == a
    assert (approved.decided_by, approved.reason, approved.note) == ("alice", "verified against the cited sources", "")
    assert approved.decided_at is not None and approved.decided_at > approved.created_at
    rejected = await queue.decide(b, False, "bob", "other", note="the moon count is out of date")
    assert (rejected.status, rejected.reason, rejected.note) == (ReviewStatus.REJECTED, "other",
                                                                  "the moon count is out of date")

    decisions = [r for r in audit_rows(store) if r["type"] in ("review.approved", "review.rejected")]
    assert [(r["type"], r["actor"], r["trace_id"]) for r in decisions] == [
        ("review.approved", "alice", "t-a"), ("review.rejected", "bob", "t-b")]
    assert decisions[0]["payload"] == {"id": a, "reason": "verified against the cited sources", "note": ""}
    assert decisions[1]["payload"] == {"id": b, "reason": "other", "note": "the moon count is out of date"}
    assert store.verify_audit_sync() == 4

    assert await queue.pending() == []
    assert [i.id for i in await queue.items("approved")] == [a]
    assert [i.id for i in await queue.items("rejected")] == [b]
    assert [i.id for i in await queue.items()] == [b, a]         # decisions newest first
    assert await queue.counts() == {"pending": 0, "approved": 1, "rejected": 1}


async def test_refused_decisions_change_nothing(store, queue):
    item_id = await queue.enqueue(make_answer(), "high-risk question")
    before = audit_rows(store)

    with pytest.raises(InputError, match="not a reason to approve.*allowed reasons"):
        await queue.decide(item_id, True, "alice", "factually wrong")          # a reject reason
    with pytest.raises(InputError, match="not a reason to reject"):
        await queue.decide(item_id, False, "alice", "looks fine")
    with pytest.raises(InputError, match='"other" needs a note'):
        await queue.decide(item_id, False, "alice", "other")
    with pytest.raises(InputError, match="operator's name"):
        await queue.decide(item_id, True, "  ", "matches operator knowledge")
    with pytest.raises(InputError, match="review item #999 does not exist"):
        await queue.decide(999, True, "alice", "matches operator knowledge")
    with pytest.raises(InputError, match="not a number"):
        await queue.decide("seven", True, "alice", "matches operator knowledge")
    assert audit_rows(store) == before
    assert (await queue.get(item_id)).pending

    await queue.decide(f"#{item_id}", False, "alice", "policy")
    with pytest.raises(InputError, match=f"review item #{item_id} was already rejected by alice \\(policy\\); "
                                         "a decision is final"):
        await queue.decide(item_id, True, "bob", "matches operator knowledge")
    assert (await queue.get(item_id)).status is ReviewStatus.REJECTED
    assert [r["type"] for r in audit_rows(store)][len(before):] == ["review.rejected"]
    assert store.verify_audit_sync() == len(before) + 1


async def test_unknown_status_filter_is_refused(queue):
    with pytest.raises(InputError, match="unknown review status 'maybe'"):
        await queue.items("maybe")
    assert await queue.items("all") == []


def test_a_decision_rolls_back_with_its_audit_row(db_path):
    """The row change and its audit event are one transaction: if the audit write fails, the item stays pending."""
    store = Store(db_path, MIGRATIONS)
    store.open_sync()
    queue = ReviewQueue(store)
    answer = make_answer()
    item_id = store.transaction(queue.insert_in_transaction(answer, "high-risk question"))
    original = store.append_audit

    def failing_audit(*args, **kwargs):
        original(*args, **kwargs)
        raise sqlite3.OperationalError("disk I/O error")

    store.append_audit = failing_audit
    with pytest.raises(Exception, match="disk"):
        queue._decide_sync(item_id, True, "alice", "matches operator knowledge", "")
    store.append_audit = original
    assert queue._one_sync("id", item_id).pending
    assert [r["type"] for r in audit_rows(store)] == ["review.enqueued"]
    assert store.verify_audit_sync() == 1
    store.close_sync()


async def test_items_survive_a_restart_with_their_payload_intact(db_path):
    answer = make_answer()
    store = Store(db_path, MIGRATIONS)
    await store.open()
    queue = ReviewQueue(store)
    kept = await queue.enqueue(answer, "high-risk question")
    decided = await queue.enqueue(make_answer("t-2", question="Which moon of Mars is larger?"), "high-risk question")
    await queue.decide(decided, False, "carol", "insufficient evidence", "only one source")
    await store.aclose()

    again = Store(db_path, MIGRATIONS)
    await again.open()
    queue = ReviewQueue(again)
    item = await queue.item_for("t-high")
    assert item.id == kept and item.pending
    assert item.payload == json.loads(json.dumps(to_jsonable(answer)))      # the whole Answer, nothing lost
    assert item.candidates_summary[0].claims[0].text == MOONS
    assert item.citations[0]["chunk_id"] == "mars-moons#0" and item.answer_reason == answer.reason
    other = await queue.get(decided)
    assert (other.status, other.decided_by, other.reason, other.note) == (
        ReviewStatus.REJECTED, "carol", "insufficient evidence", "only one source")
    assert again.verify_audit_sync() == 3
    await again.aclose()


def test_a_version_1_database_gains_the_queue_and_keeps_its_rows(db_path):
    conn = sqlite3.connect(db_path, isolation_level=None)
    conn.executescript(f"BEGIN; {MIGRATIONS[0].script} PRAGMA user_version=1; COMMIT;")
    conn.close()
    old = Store(db_path, MIGRATIONS)
    old.open_sync()
    old.audit_sync("t0", "operator", "note", {"i": 1})
    old.close_sync()

    store = Store(db_path, MIGRATIONS)
    store.open_sync()
    assert store.execute("PRAGMA user_version").fetchone()[0] == len(MIGRATIONS) >= 2
    assert store.execute("SELECT name FROM sqlite_master WHERE name = 'approvals'").fetchone() is not None
    assert store.verify_audit_sync() == 1
    with pytest.raises(StoreError, match="CHECK constraint"):      # the schema itself refuses a status outside the three
        store.execute("INSERT INTO approvals (trace_id, question, tier, verdict, status, why, created_at, "
                      "payload) VALUES ('x', 'q', 'high', 'answered', 'maybe', 'w', 1, '{}')")
    store.close_sync()


# --- command line ---------------------------------------------------------------------------------
def run_cli(*args, db: Path, cache: Path, timeout: float = 60):
    env = {**os.environ, "QUORUM_DB": str(db), "QUORUM_CACHE_DIR": str(cache), "USER": "dana"}
    return subprocess.run([sys.executable, "main.py", *args], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=timeout)


async def test_review_commands_list_approve_and_reject_with_exit_codes(db_path, cache_dir):
    store = Store(db_path, MIGRATIONS)
    await store.open()
    queue = ReviewQueue(store)
    first = await queue.enqueue(make_answer("t-1", question="Which moon of Mars is larger?"), "high-risk question")
    second = await queue.enqueue(make_answer("t-2", RiskTier.MEDIUM, Verdict.ABSTAINED),
                                 "no consistent conclusion on a medium-risk question")
    await store.aclose()

    listed = run_cli("review", "list", "--json", db=db_path, cache=cache_dir)
    assert listed.returncode == 0, listed.stderr
    data = json.loads(listed.stdout)
    assert [(i["id"], i["status"], i["tier"]) for i in data] == [(first, "pending", "high"), (second, "pending", "medium")]
    assert data[0]["why"] == "high-risk question" and data[0]["answer"] == MOONS and data[0]["decided_by"] is None
    assert data[1]["verdict"] == "abstained" and [c["agent_id"] for c in data[1]["candidates"]] == ["gen-a", "gen-liar"]

    bad = run_cli("review", "reject", str(first), "--reason", "wrong", db=db_path, cache=cache_dir)
    assert bad.returncode == 2
    assert '"wrong" is not a reason to reject' in bad.stderr
    assert all(reason in bad.stderr for reason in REJECT_REASONS)
    no_note = run_cli("review", "approve", str(first), "--reason", "other", db=db_path, cache=cache_dir)
    assert no_note.returncode == 2 and '"other" needs a note' in no_note.stderr
    unknown = run_cli("review", "approve", "42", "--reason", APPROVE_REASONS[0], db=db_path, cache=cache_dir)
    assert unknown.returncode == 2 and "review item #42 does not exist" in unknown.stderr

    ok = run_cli("review", "reject", str(first), "--reason", "factually wrong", "--note", "three moons?",
                 db=db_path, cache=cache_dir)
    assert ok.returncode == 0, ok.stderr
    assert f"Review item #{first} rejected by dana: factually wrong — three moons?" in ok.stdout
    again = run_cli("review", "approve", str(first), "--reason", "matches operator knowledge", "--operator", "erin",
                    db=db_path, cache=cache_dir)
    assert again.returncode == 2 and f"review item #{first} was already rejected by dana" in again.stderr

    pending = json.loads(run_cli("review", "list", "--json", db=db_path, cache=cache_dir).stdout)
    assert [i["id"] for i in pending] == [second]
    everything = json.loads(run_cli("review", "list", "--status", "all", "--json", db=db_path, cache=cache_dir).stdout)
    assert [(i["id"], i["status"], i["decided_by"], i["reason"], i["note"]) for i in everything] == [
        (second, "pending", None, None, None), (first, "rejected", "dana", "factually wrong", "three moons?")]
    text = run_cli("review", "list", "--status", "rejected", db=db_path, cache=cache_dir)
    assert text.returncode == 0 and f"#{first}" in text.stdout and "rejected by dana: factually wrong" in text.stdout
    verified = run_cli("audit", "verify", db=db_path, cache=cache_dir)
    assert verified.returncode == 0 and "(3 events)" in verified.stdout


def test_review_list_without_a_database_is_empty_and_creates_nothing(tmp_path):
    missing = tmp_path / "none.db"
    out = run_cli("review", "list", "--json", db=missing, cache=tmp_path)
    assert out.returncode == 0 and json.loads(out.stdout) == []
    assert not missing.exists()


def test_ask_on_a_high_risk_question_prints_the_review_item(small_fleet_file, db_path, cache_dir):
    out = run_cli("ask", "What are the moons of Mars?", "--tier", "high", "--json", "--settings", str(FAST_SETTINGS),
                  "--fleet", str(small_fleet_file),
                  db=db_path, cache=cache_dir, timeout=120)
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data["tier"] == "high"
    assert data["review"] == {"id": 1, "status": "pending", "why": "high-risk question"}
    listed = json.loads(run_cli("review", "list", "--json", db=db_path, cache=cache_dir).stdout)
    assert [(i["id"], i["trace_id"]) for i in listed] == [(1, data["trace_id"])]


# --- the engine hook, end to end on the small fleet ------------------------------------------------
async def test_a_high_risk_answer_waits_for_an_operator_across_an_engine_restart(small_fleet_file, db_path, cache_dir):
    fleet, settings = load_fleet(small_fleet_file), load_settings()
    engine = Engine(fleet, settings, db_path=db_path, cache_dir=cache_dir)
    events = []
    engine.subscribe(events.append)
    async with engine:
        high = await engine.questions.ask("What are the moons of Mars?", RiskTier.HIGH)
        low = await engine.questions.ask("What are the moons of Mars?", RiskTier.LOW)
        item = await engine.reviews.item_for(high.trace_id)
        assert await engine.reviews.item_for(low.trace_id) is None
    assert isinstance(high.answer, str) and "Phobos" in high.answer          # ask's return value is the Answer
    assert item.pending and item.why == "high-risk question" and item.tier is RiskTier.HIGH
    assert item.payload["trace_id"] == high.trace_id and item.answer_text == high.answer
    assert {c.agent_id for c in item.candidates_summary} == {c.agent_id for c in high.candidates}
    enqueued = [e for e in events if isinstance(e, ReviewEnqueued)]
    assert len(enqueued) == 1 and enqueued[0].trace_id == high.trace_id and enqueued[0].item == item

    # A restart: a new Engine on the same database (without launching the agents again: the queue needs none).
    async with Engine(fleet, settings, db_path=db_path, cache_dir=cache_dir, launch=False) as restarted:
        pending = await restarted.parts.review.pending()
        assert [(i.id, i.trace_id, i.status) for i in pending] == [(item.id, high.trace_id, ReviewStatus.PENDING)]
        assert pending[0].payload == item.payload
        assert await restarted.reviews.item_for(high.trace_id) == item
        types = [r["type"] for r in audit_rows(restarted.parts.store)]
        assert types.count("review.enqueued") == 1 and types.index("question.decided") < types.index("review.enqueued")
        assert restarted.parts.store.verify_audit_sync() == len(types)


def test_an_answer_and_its_review_item_commit_together_or_not_at_all(db_path):
    """A failure in the queue insert rolls the recorded answer back too: no answer that needed
    review is ever stored without its item."""
    store = Store(db_path, MIGRATIONS)
    store.open_sync()
    queue = ReviewQueue(store)
    answer = make_answer()

    def failing_insert():
        raise RuntimeError("disk full")
    with pytest.raises(RuntimeError):
        record_answer_sync(store, answer, also=failing_insert)
    assert store.recent_questions_sync() == []
    item_id = record_answer_sync(store, answer, also=queue.insert_in_transaction(answer, "high-risk question"))
    assert store.recent_questions_sync()[0]["trace_id"] == answer.trace_id and item_id == 1
    assert store.verify_audit_sync() > 0
    store.close_sync()
