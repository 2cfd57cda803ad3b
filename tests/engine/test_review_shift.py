"""Each reviewer's progress over a shift (engine.review.shift), on both stores: decisions by whoever closed
the item, approvals toward a quorum that someone else closed or that still wait, unexpired holds, and the
median wait; a decision before the shift is not counted."""
from __future__ import annotations

import pytest

from engine import InputError
from engine.review import ReviewQueue
from engine.schema import MIGRATIONS
from engine.settings.review import ReviewSettings
from engine.store.db import Store
from tests.engine.test_review import make_answer

APPROVE, REJECT = "verified against the cited sources", "factually wrong"
HOUR = 3600.0


class Clock:
    def __init__(self) -> None:
        self.now = 100_000.0

    def __call__(self) -> float:
        return self.now


async def test_each_reviewer_is_counted_once_per_act_within_the_shift(store_target):
    clock = Clock()
    store = Store(store_target, MIGRATIONS, clock=clock)
    await store.open()
    try:
        queue = ReviewQueue(store, ReviewSettings(quorum_high=2))

        async def item(n: int) -> int:
            return await queue.enqueue(make_answer(f"t{n}", question=f"question {n}?"), "high-risk question")
        old = await item(0)
        await queue.decide(old, False, "carol", REJECT)          # nine hours ago: before the shift
        clock.now += 9 * HOUR
        closed, waiting, rejected, held = [await item(n) for n in (1, 2, 3, 4)]
        clock.now += 60
        await queue.decide(closed, True, "alice", APPROVE)       # toward the quorum; bob closes it
        await queue.decide(closed, True, "bob", APPROVE)
        await queue.decide(waiting, True, "alice", APPROVE)      # toward the quorum; still waits
        clock.now += 60
        await queue.decide(rejected, False, "bob", REJECT)
        await queue.claim(held, "carol")

        tally = await queue.shift(8)
        by = {r.operator: r for r in tally.reviewers}
        assert [r.operator for r in tally.reviewers] == ["bob", "alice", "carol"]
        assert (by["bob"].approved, by["bob"].rejected, by["bob"].toward_quorum) == (1, 1, 0)
        assert by["bob"].median_wait_s == 90.0                  # 60 s and 120 s
        assert (by["alice"].decided, by["alice"].toward_quorum, by["alice"].median_wait_s) == (0, 2, None)
        assert (by["carol"].decided, by["carol"].holding) == (0, 1)     # her old rejection is out of the shift
        assert tally.text().startswith("Last 8 h — bob: 1 approved, 1 rejected, median wait 2 min")
        assert (await queue.shift(10)).reviewers[0].operator == "bob"
        assert {r.operator: r.rejected for r in (await queue.shift(10)).reviewers}["carol"] == 1
        with pytest.raises(InputError, match="a shift of 0 hours"):
            await queue.shift(0)
    finally:
        await store.aclose()


def test_review_shift_on_the_command_line(tmp_path, capsys):
    import json

    import main

    async def seed() -> None:
        store = Store(tmp_path / "q.db", MIGRATIONS)
        await store.open()
        queue = ReviewQueue(store, ReviewSettings(quorum_high=1))
        item = await queue.enqueue(make_answer("t1"), "high-risk question")
        await queue.decide(item, False, "dora\x1b[2J", REJECT)        # a name that would clear a terminal
        await store.aclose()
    import asyncio
    asyncio.run(seed())
    assert main.main(["review", "shift", "--db", str(tmp_path / "q.db")]) == 0
    out = capsys.readouterr().out
    assert "dora\\x1b[2J: 0 approved, 1 rejected" in out and "\x1b" not in out
    assert main.main(["review", "shift", "--hours", "2", "--json", "--db", str(tmp_path / "q.db")]) == 0
    [dora] = json.loads(capsys.readouterr().out)
    assert (dora["operator"], dora["rejected"]) == ("dora\x1b[2J", 1)
    assert main.main(["review", "shift", "--hours", "-1", "--db", str(tmp_path / "q.db")]) == 2
    assert "a shift of -1 hours" in capsys.readouterr().err
