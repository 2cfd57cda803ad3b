"""The reputation book follows the agent, not the desk (engine.reputation.identity): on a team store each row
names an agent by its identity, so two desks' built-in agents that share an id are never merged, while an agent
both desks reach with one key is one agent to both; a desk's own file keeps naming agents by id."""
from __future__ import annotations

import dataclasses

from engine import Role
from engine.reputation.identity import BookNames, identity
from engine.reputation.keeper import ReputationKeeper
from engine.schema import MIGRATIONS
from engine.store.db import Store
from engine.types import AgentKind, AgentSecurity, AgentSpec

KEY_A, KEY_B = b"k" * 32, b"j" * 32


def spec(agent_id: str, *, builtin: bool = True, keyed: bool = False, url: str = "") -> AgentSpec:
    base = AgentSpec(id=agent_id, role=Role.RETRIEVER, kind=AgentKind.QUORUM_HTTP, backend="bm25" if builtin else "",
                     url=url)
    return dataclasses.replace(base, security=AgentSecurity(key_env="RET_KEY" if keyed else ""))


def test_an_identity_is_the_key_the_address_or_the_desk():
    keyed, external, builtin = spec("ret-a", keyed=True), spec("ret-b", builtin=False, url="http://h:1"), spec("ret-c")
    assert identity(keyed, KEY_A, "desk1").startswith("ret-a#")
    assert identity(keyed, KEY_A, "desk1") == identity(keyed, KEY_A, "desk2") != identity(keyed, KEY_B, "desk1")
    assert identity(external, None, "desk1") == identity(external, None, "desk2")
    assert identity(external, None, "d") != identity(spec("ret-b", builtin=False, url="http://h:2"), None, "d")
    assert identity(builtin, None, "desk1") == "ret-c@desk-desk1" != identity(builtin, None, "desk2")


def test_a_desk_reads_back_only_its_own_agents_rows():
    names = BookNames.of([spec("ret-a")], lambda _id: None, "desk1")
    assert names.stored("ret-a") == "ret-a@desk-desk1" and names.local("ret-a@desk-desk1") == "ret-a"
    assert names.local("ret-a@desk-desk2") is None          # another desk's ret-a
    assert names.local("ret-a") is None                     # a row written by id alone: not this desk's ret-a
    assert BookNames().local("ret-a") == "ret-a" and BookNames().stored("ret-a") == "ret-a"


async def desk(target, names: BookNames) -> tuple[Store, ReputationKeeper]:
    store = Store(target, MIGRATIONS)
    await store.open()
    keeper = ReputationKeeper(store)
    keeper.tables.names = names
    await keeper.load([("ret-a", Role.RETRIEVER)])
    return store, keeper


async def test_two_desks_built_in_agents_sharing_an_id_keep_books_of_their_own(postgres_schema):
    desks = [await desk(postgres_schema, BookNames.of([spec("ret-a")], lambda _id: None, name))
             for name in ("desk1", "desk2")]
    (store1, book1), (store2, book2) = desks
    try:
        await book1.quarantine("ret-a", "fabricates", "alice")
        await book2.sync()
        assert book1.state_of("ret-a") == "quarantined" and book2.state_of("ret-a") == "active"
        named = await store1.call(lambda: store1.execute("SELECT agent_id, state FROM trust ORDER BY agent_id").all())
        assert named == [("ret-a@desk-desk1", "quarantined"), ("ret-a@desk-desk2", "active")]
        assert {p.agent_id for p in await book2.tables.history()} == {"ret-a"}
        assert [p.state for p in await book2.tables.history()] == ["active"]     # desk1's points are not desk2's
    finally:
        for store, _ in desks:
            await store.aclose()


async def test_one_keyed_agent_reached_from_two_desks_is_one_agent_to_both(postgres_schema):
    shared = spec("ret-a", builtin=False, keyed=True, url="http://fleet:8001")
    desks = [await desk(postgres_schema, BookNames.of([shared], lambda _id: KEY_A, name)) for name in ("d1", "d2")]
    (store1, book1), (store2, book2) = desks
    try:
        await book1.quarantine("ret-a", "fabricates", "alice")
        await book2.sync()
        assert book2.state_of("ret-a") == "quarantined"
    finally:
        for store, _ in desks:
            await store.aclose()


async def test_a_desks_own_file_names_agents_by_id(tmp_path):
    store, book = await desk(tmp_path / "q.db", BookNames())
    try:
        assert await store.call(lambda: store.execute("SELECT agent_id FROM trust").scalars().all()) == ["ret-a"]
    finally:
        await store.aclose()
