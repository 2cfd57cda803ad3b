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



async def test_a_commit_to_another_store_in_the_same_database_is_not_news(postgres_schema):
    import uuid

    import psycopg
    from tests.conftest import TEST_PG
    name = f"test_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(TEST_PG, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {name}")
    try:
        here, elsewhere = await opened(postgres_schema), await opened(f"{TEST_PG}?options=-csearch_path%3D{name}")
        there = await opened(postgres_schema)
        seen: asyncio.Queue[frozenset[str]] = asyncio.Queue()
        watch = ChangeWatch(here, seen.put_nowait)
        await watch.start()
        try:
            await elsewhere.call(lambda: elsewhere.transaction(lambda: alert_table.insert_alert(elsewhere, alert("x"))))
            await there.call(lambda: there.audit_sync("", "bob", "note", {}))
            assert await asyncio.wait_for(seen.get(), BOUND_S) == frozenset({"audit"})     # the alert was another's
        finally:
            await watch.aclose()
            for store in (here, elsewhere, there):
                await store.aclose()
    finally:
        with psycopg.connect(TEST_PG, autocommit=True) as conn:
            conn.execute(f"DROP SCHEMA {name} CASCADE")
