"""Every desk sees every change: a commit at one desk reaches the others' ChangeWatch (PostgreSQL: the tables
it wrote, by NOTIFY; SQLite: "something changed", by PRAGMA data_version). Waits are bounded, never timed."""
from __future__ import annotations

import asyncio

from engine.alerts import table as alert_table
from engine.alerts.row import NewAlert
from engine.schema import MIGRATIONS
from engine.store.changes import EVERYTHING, ChangeWatch
from engine.store.db import Store

BOUND_S = 20.0


def alert(agent: str) -> NewAlert:
    return NewAlert("agent_down", agent, "down", "t1", 1.0)


async def opened(target) -> Store:
    store = Store(target, MIGRATIONS)
    await store.open()
    return store


async def test_a_commit_at_one_desk_reaches_the_other(store_target):
    here, there = await opened(store_target), await opened(store_target)
    seen: asyncio.Queue[frozenset[str]] = asyncio.Queue()
    watch = ChangeWatch(here, seen.put_nowait, poll_s=0.05)
    await watch.start()
    try:
        await there.call(lambda: there.transaction(lambda: alert_table.insert_alert(there, alert("ret-b"))))
        tables = await asyncio.wait_for(seen.get(), BOUND_S)
        assert tables == (EVERYTHING if here.sqlite else frozenset({"alerts"}))
        if not here.sqlite:             # this desk's own commits are not news to it
            await here.call(lambda: here.transaction(lambda: alert_table.insert_alert(here, alert("ret-a"))))
            await there.call(lambda: there.audit_sync("", "bob", "note", {}))
            assert await asyncio.wait_for(seen.get(), BOUND_S) == frozenset({"audit"})
    finally:
        await watch.aclose()
        await here.aclose()
        await there.aclose()


async def test_a_rolled_back_write_is_not_announced(postgres_schema):
    here, there = await opened(postgres_schema), await opened(postgres_schema)
    seen: asyncio.Queue[frozenset[str]] = asyncio.Queue()
    watch = ChangeWatch(here, seen.put_nowait)
    await watch.start()
    try:
        def fails() -> None:
            alert_table.insert_alert(there, alert("ret-b"))
            raise RuntimeError("the decision failed after its write")
        try:
            await there.call(lambda: there.transaction(fails))
        except RuntimeError:
            pass
        await there.call(lambda: there.audit_sync("", "bob", "note", {}))
        assert await asyncio.wait_for(seen.get(), BOUND_S) == frozenset({"audit"})   # the alert never came
    finally:
        await watch.aclose()
        await here.aclose()
        await there.aclose()

