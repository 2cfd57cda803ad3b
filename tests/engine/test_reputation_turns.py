"""Reputation updates from several desks on one team store do not lose each other: from reading the standing to
saving the change, a book holds the store's reputation turn, and another desk's book waits for it."""
from __future__ import annotations

import asyncio

import psycopg
import pytest

from engine import InputError, Role
from engine.reputation.keeper import ReputationKeeper
from engine.schema import MIGRATIONS
from engine.store.db import REPUTATION_LOCK, Store
from tests.conftest import TEST_PG

BOUND_S = 20.0


async def desk(target) -> tuple[Store, ReputationKeeper]:
    store = Store(target, MIGRATIONS)
    await store.open()
    keeper = ReputationKeeper(store)
    await keeper.load([("gen-a", Role.GENERATOR)])
    return store, keeper


async def someone_waits_for_the_turn() -> None:
    async with await psycopg.AsyncConnection.connect(TEST_PG, autocommit=True) as conn:
        while True:
            cursor = await conn.execute("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted "
                                        "AND objid = %s", [REPUTATION_LOCK])
            if (await cursor.fetchone())[0]:
                return
            await asyncio.sleep(0.02)


async def test_a_desk_acts_on_the_standing_another_desk_just_saved(postgres_schema):
    (store_a, alice), (store_b, bob) = await desk(postgres_schema), await desk(postgres_schema)
    try:
        await store_a.call(store_a.take_turn, REPUTATION_LOCK)        # alice's book is mid-update
        late = asyncio.get_running_loop().create_task(bob.quarantine("gen-a", "fabricates", "bob"))
        await asyncio.wait_for(someone_waits_for_the_turn(), BOUND_S)
        assert not late.done()
        saved = await alice.quarantine("gen-a", "edits numbers", "alice")
        assert [type(e).__name__ for e in saved.events] == ["AgentQuarantined"]
        await store_a.call(store_a.end_turn, REPUTATION_LOCK)
        with pytest.raises(InputError, match="already quarantined"):
            await asyncio.wait_for(late, BOUND_S)     # bob read alice's quarantine before acting, not before it
        quarantines = await store_a.call(lambda: store_a.execute(
            "SELECT count(*) FROM audit WHERE type = 'reputation.quarantined'").scalar_one())
        assert quarantines == 1
    finally:
        await store_a.aclose()
        await store_b.aclose()
