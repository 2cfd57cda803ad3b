"""A viewer's desk on a team store (Engine.read_only): it starts without writing, launches no agent, refuses to
ask with a clear message; a write it tries anyway is refused by the server, and an operator's desk folds that
refusal into the audit chain with the viewer as its actor."""
from __future__ import annotations

import asyncio
import json

import pytest

from engine import Engine, InputError, load_fleet, load_settings
from engine.errors import StoreRefused
from engine.schema import MIGRATIONS
from engine.store.db import Store
from engine.store.refusals import REFUSED_EVENT
from engine.store.roles import OPERATOR, VIEWER

FOLDED_WITHIN_S = 30.0


def audit_rows(url: str) -> list[dict]:
    store = Store(url, MIGRATIONS)
    store.open_sync()
    try:
        return store.query("SELECT actor, type, payload FROM audit ORDER BY seq")
    finally:
        store.close_sync()


async def test_a_viewer_desk_reads_writes_nothing_and_its_refused_act_reaches_the_audit_chain(
        team_logins, small_fleet_file, cache_dir):
    urls, names = team_logins
    viewer = Engine(load_fleet(small_fleet_file), load_settings(), db_path=urls[VIEWER], cache_dir=cache_dir)
    async with viewer:
        assert viewer.read_only and viewer.signed_in == names[VIEWER]
        assert viewer.parts.launcher is not None and viewer.parts.launcher._children == {}     # no agent launched
        assert all(v.stopped and "a viewer's desk" in v.detail for v in viewer.fleet.agents() if v.spec.enabled)
        with pytest.raises(InputError, match="a viewer of the team store"):
            await viewer.questions.ask("What are the moons of Mars?")
        with pytest.raises(StoreRefused, match="this role may not do that"):
            await viewer.reputation.quarantine("gen-a", "looks wrong", names[VIEWER])
        assert await viewer.reviews.pending() == []         # it still reads
    assert audit_rows(urls[VIEWER]) == []                    # its start and close wrote nothing

    operator = Engine(load_fleet(small_fleet_file), load_settings(), db_path=urls[OPERATOR], cache_dir=cache_dir,
                      launch=False)
    async with operator:
        assert not operator.read_only

        async def folded() -> list[dict]:
            while not (found := [r for r in audit_rows(urls[OPERATOR]) if r["type"] == REFUSED_EVENT]):
                await asyncio.sleep(0.1)
            return found
        [refusal] = await asyncio.wait_for(folded(), FOLDED_WITHIN_S)
        assert refusal["actor"] == names[VIEWER]
        assert json.loads(refusal["payload"])["action"].split()[0] in ("INSERT", "UPDATE")
        chain = await operator.audit.verify()
        assert chain.intact and chain.checked >= 2       # engine.started, the refusal
