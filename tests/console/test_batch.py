"""Coalescer: bursts become one flush per interval; keyed items keep only the latest."""
from __future__ import annotations

from console.batch import Coalescer


def test_a_burst_is_flushed_once_with_every_item_in_order(qtbot):
    flushed = []
    batch = Coalescer(flushed.append, interval_ms=20)
    for n in range(50):
        batch.add(n)
    assert flushed == [] and batch.pending() == 50       # nothing drawn while the burst arrives
    qtbot.waitUntil(lambda: bool(flushed), timeout=1_000)
    assert flushed == [list(range(50))] and batch.pending() == 0


def test_keyed_items_keep_the_latest_per_key_and_a_quiet_coalescer_never_flushes(qtbot):
    flushed = []
    batch = Coalescer(flushed.append, interval_ms=20)
    batch.put("gen-a", 1)
    batch.put("gen-b", 2)
    batch.put("gen-a", 3)
    batch.flush_now()
    assert flushed == [[3, 2]]
    batch.flush_now()                     # nothing waiting: no empty flush
    qtbot.wait(60)
    assert flushed == [[3, 2]]
    batch.add("late")
    qtbot.waitUntil(lambda: len(flushed) == 2, timeout=1_000)
    assert flushed[1] == ["late"]
