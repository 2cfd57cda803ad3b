"""Claims on the approval queue, as a team uses it: an operator holds an item for a lease, nobody else decides
it meanwhile, a lapsed claim (a desk that died holding it) is anyone's to take, and two desks deciding one item
at once make one decision."""
from __future__ import annotations

import threading

import pytest

from engine import InputError
from engine.review import ReviewQueue
from engine.settings.review import ReviewSettings
from engine.schema import MIGRATIONS
from engine.store.db import Store
from tests.engine.test_review import make_answer


# One approval decides on both stores (a team store's default asks two of the high tier: tested on its own below).
ONE_APPROVAL = ReviewSettings(quorum_high=1)


class Clock:
    """The store's clock, moved by the test (a lease runs out when the test says so)."""
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
async def desk(store_target):
    clock = Clock()
    store = Store(store_target, MIGRATIONS, clock=clock)
    await store.open()
    queue = ReviewQueue(store, ONE_APPROVAL)
    item_id = await queue.enqueue(make_answer(), "high-risk question")
    yield queue, item_id, clock, store
    await store.aclose()


def audit_types(store: Store) -> list[tuple[str, str]]:
    return [(r[0], r[1]) for r in store.execute("SELECT actor, type FROM audit ORDER BY seq").fetchall()]


async def test_a_claimed_item_is_its_holders_to_decide(desk):
    queue, item_id, clock, store = desk
    claimed = await queue.claim(item_id, "alice", lease_s=600)
    assert (claimed.claimed_by, claimed.claimed_until) == ("alice", 1600.0)
    with pytest.raises(InputError, match="claimed by alice until"):
        await queue.decide(item_id, True, "bob", "verified against the cited sources")
    with pytest.raises(InputError, match="claimed by alice until"):
        await queue.claim(item_id, "bob")
    with pytest.raises(InputError, match="not claimed by bob"):
        await queue.unclaim(item_id, "bob")
    decided = await queue.decide(item_id, True, "alice", "verified against the cited sources")
    assert decided.decided_by == "alice" and decided.claimed_by == "" and decided.claimed_until is None
    assert audit_types(store)[-2:] == [("alice", "review.claimed"), ("alice", "review.approved")]


async def test_a_lapsed_claim_is_anyones_to_take(desk):
    queue, item_id, clock, store = desk
    await queue.claim(item_id, "alice", lease_s=600)
    clock.now += 601                                  # alice's desk died holding it; the lease ran out
    assert (await queue.get(item_id)).holder(clock.now) == ""
    taken = await queue.claim(item_id, "bob")
    assert taken.claimed_by == "bob"
    payload = store.execute("SELECT payload FROM audit WHERE type = 'review.claimed' ORDER BY seq DESC").scalar()
    assert '"lapsed_claim_of":"alice"' in payload


async def test_a_claim_is_let_go_and_renewed(desk):
    queue, item_id, clock, _ = desk
    await queue.claim(item_id, "alice", lease_s=60)
    clock.now += 30
    assert (await queue.claim(item_id, "alice", lease_s=60)).claimed_until == clock.now + 60
    assert (await queue.unclaim(item_id, "alice")).claimed_by == ""
    assert (await queue.claim(item_id, "bob")).claimed_by == "bob"


def test_two_desks_deciding_one_item_at_once_make_one_decision(store_target):
    stores = [Store(store_target, MIGRATIONS) for _ in range(2)]
    for store in stores:
        store.open_sync()
    first = ReviewQueue(stores[0], ONE_APPROVAL)
    item_id = stores[0].transaction(first.insert_in_transaction(make_answer(), "high-risk question"))
    outcomes: list[str] = []
    start = threading.Barrier(2)

    def decide(store: Store, who: str) -> None:
        start.wait()
        try:
            ReviewQueue(store, ONE_APPROVAL)._decide_sync(item_id, True, who, "verified against the cited sources", "")
            outcomes.append("decided")
        except InputError as exc:
            outcomes.append(str(exc))
    threads = [threading.Thread(target=decide, args=(s, who)) for s, who in zip(stores, ("alice", "bob"))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert sorted(outcomes)[0] == "decided" and "already approved" in sorted(outcomes)[1]
    assert stores[0].execute("SELECT count(*) FROM audit WHERE type = 'review.approved'").scalar_one() == 1
    for store in stores:
        store.close_sync()


def test_review_claim_on_the_command_line(tmp_path):
    import subprocess
    import sys
    from pathlib import Path
    db = tmp_path / "desk.db"
    store = Store(db, MIGRATIONS)
    store.open_sync()
    item_id = store.transaction(ReviewQueue(store).insert_in_transaction(make_answer(), "high-risk question"))
    store.close_sync()

    def main(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "main.py", "review", *args, "--db", str(db)], capture_output=True,
                              text=True, timeout=120, cwd=Path(__file__).resolve().parents[2])
    claimed = main("claim", str(item_id), "--operator", "alice")
    assert claimed.returncode == 0 and f"#{item_id} claimed by alice until" in claimed.stdout
    assert "claim : alice until" in main("list").stdout
    refused = main("approve", str(item_id), "--reason", "verified against the cited sources", "--operator", "bob")
    assert refused.returncode == 2 and "claimed by alice" in refused.stderr
    let_go = main("unclaim", str(item_id), "--operator", "alice")
    assert let_go.returncode == 0 and "free to claim" in let_go.stdout


async def test_an_item_past_its_tiers_sla_raises_one_alert_however_many_desks_look(store_target):
    from engine.alerts.book import AlertBook
    from engine.settings.review import ReviewSettings
    clock = Clock()
    stores = [Store(store_target, MIGRATIONS, clock=clock) for _ in range(2)]
    for store in stores:
        await store.open()
    sla = ReviewSettings(sla_high_s=600.0)
    queues = [ReviewQueue(store, sla) for store in stores]
    item_id = await queues[0].enqueue(make_answer(), "high-risk question")
    assert (await queues[0].get(item_id)).due_at == 1600.0
    assert await stores[0].call(queues[0].raise_overdue_sync, AlertBook(stores[0])) == []
    clock.now += 601
    assert (await queues[0].get(item_id)).overdue(clock.now)
    raised = [await store.call(queue.raise_overdue_sync, AlertBook(store)) for store, queue in zip(stores, queues)]
    assert [len(r) for r in raised] == [1, 0]
    alert = raised[0][0]
    assert alert.kind == "review_overdue" and f"review item #{item_id} (high risk) has waited 10 min" in alert.message
    assert await stores[1].call(queues[1].raise_overdue_sync, AlertBook(stores[1])) == []
    for store in stores:
        await store.aclose()


async def test_the_same_question_asked_again_while_its_item_waits_joins_that_item(desk):
    from engine import RiskTier
    queue, item_id, clock, store = desk
    again = await queue.enqueue(make_answer("t-again"), "high-risk question")
    spaced = make_answer("t-spaced")
    spaced = spaced.__class__(**{**spaced.__dict__, "question": "  what are the moons of   MARS "})
    assert again == item_id and await queue.enqueue(spaced, "high-risk question") == item_id
    item = await queue.item_for("t-again")
    assert item.id == item_id and item.asked_times == 3 and item.trace_id == "t-high"
    assert await queue.enqueue(make_answer("t-again"), "high-risk question") == item_id     # idempotent per trace
    assert (await queue.get(item_id)).asked_times == 3
    other_tier = await queue.enqueue(make_answer("t-medium", tier=RiskTier.MEDIUM), "no consistent conclusion")
    assert other_tier != item_id
    await queue.decide(item_id, True, "alice", "verified against the cited sources")
    assert await queue.enqueue(make_answer("t-later"), "high-risk question") not in (item_id, other_tier)
    assert [t for _, t in audit_types(store)].count("review.joined") == 2


async def test_a_high_risk_answer_on_a_team_store_needs_two_operators_and_not_its_asker(desk):
    _, item_id, clock, store = desk
    queue = ReviewQueue(store)                  # [review] quorum_high = 0: automatic
    item = await queue.get(item_id)
    if not store.target.shared:            # a desk's own file: one approval decides, the asker's own included
        assert item.quorum == 1
        decided = await queue.decide(item_id, True, item.asked_by, "verified against the cited sources")
        assert decided.status.value == "approved"
        return
    assert (item.quorum, item.asked_by) == (2, "quorum")      # the role the store signed in as asked it
    with pytest.raises(InputError, match="answers a question quorum asked; another operator approves it"):
        await queue.decide(item_id, True, "quorum", "verified against the cited sources")
    first = await queue.decide(item_id, True, "alice", "verified against the cited sources")
    assert first.pending and first.approvals == ("alice",)
    with pytest.raises(InputError, match="alice already approved review item"):
        await queue.decide(item_id, True, "alice", "matches operator knowledge")
    second = await queue.decide(item_id, True, "bob", "matches operator knowledge")
    assert second.status.value == "approved" and second.note == "approved by alice, bob"
    assert [t for _, t in audit_types(store)][-2:] == ["review.approval_counted", "review.approved"]


async def test_one_rejection_ends_a_high_risk_item_whatever_its_quorum(desk):
    _, item_id, clock, store = desk
    queue = ReviewQueue(store)
    if store.target.shared:
        await queue.decide(item_id, True, "alice", "verified against the cited sources")
    rejected = await queue.decide(item_id, False, "bob", "factually wrong")
    assert rejected.status.value == "rejected" and rejected.decided_by == "bob"
