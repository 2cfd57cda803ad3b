"""When the team store's server goes away: every write is refused with a clear error and nothing is half-written or
queued, whoever watches hears it (the store's own connection, the change feed), and the desk reaches the server
again by itself once it is back. The outage is real: the desk reaches PostgreSQL through a loopback proxy that the
test takes down and brings back. The server also ends an engine's own connection (pg_terminate_backend) in the
middle of its decisions: the write in flight is saved or refused whole, nothing acknowledged is lost, and the
engine's next call connects again."""
from __future__ import annotations

import asyncio
import json
import os
import re
from typing import Awaitable, Callable

import psycopg
import pytest

from engine import Engine, RiskTier, StoreError, StoreLink, Verdict, load_fleet, load_settings
from engine.schema import MIGRATIONS
from engine.store.changes import ChangeWatch
from engine.store.db import AUDIT_LOCK, Store
from engine.store.audit_log import AuditLog
from tests.conftest import FAST_SETTINGS, TEST_PG, write_fleet
from tests.engine.test_review import make_answer

BOUND_S = 20.0
UNREACHABLE = re.compile("cannot be reached.*nothing was written")
# A decision is two writes, each a transaction: the item's decision, then the agents' reputation by it.
SAVED_UNMOVED = re.compile(r"was (approved|rejected) by alice, and that is saved; the agents' reputation did not move")
REASONS = {True: "verified against the cited sources", False: "insufficient evidence"}


class Proxy:
    """127.0.0.1:port -> the test server, until stop(); start() listens on the same port again."""
    def __init__(self) -> None:
        self.port = 0
        self._server: asyncio.base_events.Server | None = None
        self._pipes: set[asyncio.StreamWriter] = set()

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", self.port)
        self.port = self._server.sockets[0].getsockname()[1]

    async def stop(self) -> None:
        assert self._server is not None
        self._server.close()
        for writer in list(self._pipes):
            writer.close()
        await self._server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            up_reader, up_writer = await asyncio.open_connection("127.0.0.1", 5432)
        except OSError:
            writer.close()
            return
        self._pipes |= {writer, up_writer}

        async def pipe(source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
            try:
                while data := await source.read(65536):
                    sink.write(data)
                    await sink.drain()
            except (ConnectionError, OSError):
                pass
            finally:
                sink.close()
        await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer))
        self._pipes -= {writer, up_writer}


@pytest.fixture
async def proxied(postgres_schema, tmp_path, monkeypatch):
    """The test schema's URL through a proxy, and the proxy. The password travels in a pgpass file of the test's
    own (any port), as libpq reads it."""
    with psycopg.connect(TEST_PG) as conn:
        user, secret = conn.info.user, conn.info.password
    passfile = tmp_path / "pgpass"
    passfile.write_text(f"127.0.0.1:*:*:{user}:{secret}\n")
    os.chmod(passfile, 0o600)
    monkeypatch.setenv("PGPASSFILE", str(passfile))
    proxy = Proxy()
    await proxy.start()
    yield postgres_schema.replace("127.0.0.1:5432", f"127.0.0.1:{proxy.port}", 1), proxy
    await proxy.stop()


async def test_writes_are_refused_while_the_server_is_away_and_resume_when_it_is_back(proxied):
    url, proxy = proxied
    store = Store(url, MIGRATIONS)
    await store.open()
    links: list[tuple[bool, str]] = []
    store.on_link = lambda online, why: links.append((online, why))
    await store.call(store.audit_sync, "t1", "alice", "note", {"n": 1})

    await proxy.stop()
    with pytest.raises(StoreError, match="cannot be reached.*nothing was written"):
        await store.call(store.audit_sync, "t2", "alice", "review.approved", {"n": 2})
    with pytest.raises(StoreError, match="cannot be reached"):
        await store.call(store.audit_sync, "t3", "alice", "review.approved", {"n": 3})
    assert [online for online, _ in links] == [False] and not store.online
    assert not await store.call(store.reach)

    await proxy.start()
    assert await store.call(store.reach)
    assert [online for online, _ in links] == [False, True] and store.online
    await store.call(store.audit_sync, "t4", "alice", "note", {"n": 4})
    rows = await AuditLog(store).query()
    assert [r.trace_id for r in rows] == ["t4", "t1"]       # the refused decisions are nowhere, not queued
    assert (await AuditLog(store).verify()).intact
    await store.aclose()


async def test_the_change_feed_hears_the_server_go_and_come_back(proxied):
    url, proxy = proxied
    store = Store(url, MIGRATIONS)
    await store.open()
    links: asyncio.Queue[bool] = asyncio.Queue()
    changes: asyncio.Queue[frozenset[str]] = asyncio.Queue()
    watch = ChangeWatch(store, changes.put_nowait, retry_s=0.2, on_link=lambda online, why: links.put_nowait(online))
    await watch.start()
    try:
        await proxy.stop()
        assert await asyncio.wait_for(links.get(), BOUND_S) is False
        await proxy.start()
        assert await asyncio.wait_for(links.get(), BOUND_S) is True
        assert await asyncio.wait_for(changes.get(), BOUND_S) == frozenset({"*"})   # read everything again
    finally:
        await watch.aclose()
        await store.aclose()


# --- the server ends the engine's own connection in the middle of its decisions --------------------------------------
@pytest.fixture
async def team_engine(postgres_schema, tmp_path):
    """An engine on the test's own schema; no agents are launched: the test puts answers in its queue itself."""
    engine = Engine(load_fleet(write_fleet(tmp_path)), load_settings(FAST_SETTINGS), db_path=postgres_schema,
                    cache_dir=tmp_path / "cache", launch=False)
    async with engine:
        yield engine


async def waiting_items(engine: Engine, count: int) -> list[int]:
    """Medium-risk answers that wait for one operator's decision each (a question each, so that none joins another)."""
    return [await engine.parts.review.enqueue(make_answer(f"t-wait-{n}", RiskTier.MEDIUM, Verdict.ABSTAINED,
                                                          question=f"Drill question {n}?"), "no consistent conclusion")
            for n in range(count)]


def backend_pid(store: Store) -> int:
    """The server process behind the store's own connection, as pg_stat_activity names it."""
    return int(store.execute("SELECT pg_backend_pid()").scalar_one())


def terminate(admin: psycopg.Connection, pid: int) -> None:
    assert admin.execute("SELECT pg_terminate_backend(%s)", [pid]).fetchone() == (True,)


async def until(condition: Callable[[], bool], what: str, seen: Callable[[], object] = lambda: "") -> None:
    deadline = asyncio.get_running_loop().time() + BOUND_S
    while not condition():
        assert asyncio.get_running_loop().time() < deadline, f"not within {BOUND_S} s: {what} {seen()}"
        await asyncio.sleep(0.02)


async def killed_mid_write(engine: Engine, admin: psycopg.Connection, write: Awaitable) -> StoreError:
    """Starts `write` while `admin` holds the audit chain's lock, so that the write waits inside its transaction
    (its rows already written there, its audit event not yet); ends the engine's connection there and returns
    the error the write raised."""
    store = engine.parts.store
    pid = await store.call(backend_pid, store)
    admin.execute("SELECT pg_advisory_lock(%s, %s)", store.lock_keys(AUDIT_LOCK))
    try:
        in_flight = asyncio.ensure_future(write)

        def waits_for_the_chain() -> bool:
            return admin.execute("SELECT wait_event FROM pg_stat_activity WHERE pid = %s", [pid]).fetchone() \
                == ("advisory",)
        await until(waits_for_the_chain, "the write waits for the audit chain's lock")
        terminate(admin, pid)
    finally:
        admin.execute("SELECT pg_advisory_unlock(%s, %s)", store.lock_keys(AUDIT_LOCK))
    with pytest.raises(StoreError) as refused:
        await asyncio.wait_for(in_flight, BOUND_S)
    assert UNREACHABLE.search(str(refused.value)), refused.value
    return refused.value


async def audit_events(store: Store, kind: str) -> list[dict]:
    return await store.call(store.query, "SELECT trace_id, actor, payload FROM audit WHERE type = ? ORDER BY seq",
                            [kind])


async def standing(engine: Engine, agent_id: str) -> str:
    """The agent's standing as the store has it now (read afresh, not the engine's own book)."""
    return next(row["state"] for row in await engine.parts.reputation.tables.standings() if row["agent_id"] == agent_id)


async def test_a_write_in_flight_when_the_server_ends_the_engine_connection_is_refused_whole_and_the_engine_reconnects(
        team_engine):
    engine, store = team_engine, team_engine.parts.store
    links: list[bool] = []
    engine.subscribe(lambda event: links.append(event.online) if isinstance(event, StoreLink) else None)
    [item] = await waiting_items(engine, 1)
    killed = await store.call(backend_pid, store)
    with psycopg.connect(TEST_PG, autocommit=True) as admin:
        await killed_mid_write(engine, admin, engine.reviews.decide(item, True, "alice", REASONS[True]))
        assert not store.online
        # The item's row was changed in the transaction that died with the connection: it is as it was.
        pending = await engine.reviews.get(item)                 # the next call connects again, by itself
        assert pending.pending and not pending.decided_by
        assert store.online and await store.call(backend_pid, store) != killed
        await until(lambda: links == [False, True], "the engine says the store went away and came back")
        assert await audit_events(store, "review.approved") == []
        decided = await engine.reviews.decide(item, True, "alice", REASONS[True])
        assert decided.status.value == "approved" and decided.decided_by == "alice"
        assert [e["actor"] for e in await audit_events(store, "review.approved")] == ["alice"]

        # An operator's hand on the reputation book: the quarantine in flight is refused whole, in the store and in
        # the engine's own book, so the same quarantine goes through once asked again.
        await killed_mid_write(engine, admin, engine.reputation.quarantine("gen-b", "drill", "bob"))
    assert await standing(engine, "gen-b") != "quarantined"
    assert await audit_events(store, "reputation.quarantined") == []
    await engine.reputation.quarantine("gen-b", "drill", "bob")
    assert await standing(engine, "gen-b") == "quarantined"
    assert [e["actor"] for e in await audit_events(store, "reputation.quarantined")] == ["bob"]
    assert (await AuditLog(store).verify()).intact


async def test_ending_the_engine_connection_during_a_burst_of_decisions_loses_nothing_acknowledged(team_engine):
    """The server ends the connection three times while decisions, quarantines and releases run at once, wherever
    they are: each call either returns, and its write is in the store, or is refused whole (or, for a decision,
    says that the decision is saved and only the reputation step after it was refused)."""
    engine, store = team_engine, team_engine.parts.store
    items = await waiting_items(engine, 40)
    decided: dict[int, str] = {}        # item -> the status its acknowledged decision returned
    refused: list[int] = []             # items whose decision was refused (not asked again)
    saved_unmoved: list[int] = []       # decisions saved whose reputation step was refused
    hand: list[str] = []                # acknowledged quarantines and releases of gen-b, in order
    hand_refused: list[str] = []
    links: list[bool] = []
    engine.subscribe(lambda event: links.append(event.online) if isinstance(event, StoreLink) else None)
    done = asyncio.Event()

    async def decide_each() -> None:
        approve = True
        for item in items:
            if done.is_set():
                return
            try:
                decided[item] = (await engine.reviews.decide(item, approve, "alice", REASONS[approve])).status.value
            except StoreError as exc:
                if SAVED_UNMOVED.search(str(exc)):
                    decided[item] = "approved" if approve else "rejected"
                    saved_unmoved.append(item)
                else:
                    assert UNREACHABLE.search(str(exc)), exc
                    refused.append(item)
            approve = not approve

    async def quarantine_and_release() -> None:
        while not done.is_set():
            act = "released" if hand and hand[-1] == "quarantined" else "quarantined"
            try:
                if act == "quarantined":
                    await engine.reputation.quarantine("gen-b", "drill", "bob")
                else:
                    await engine.reputation.release("gen-b", "repaired", "bob")
            except StoreError as exc:
                assert UNREACHABLE.search(str(exc)), exc
                hand_refused.append(act)
                continue
            hand.append(act)

    burst = asyncio.gather(decide_each(), quarantine_and_release())

    async def while_bursting(condition: Callable[[], bool], what: str) -> None:
        await until(lambda: burst.done() or condition(), what,
                    lambda: dict(decided=decided, refused=refused, hand=hand, links=links))
        if burst.done():
            burst.result()          # a loop that failed says why, rather than a timeout
            pytest.fail(f"the burst ended before {what}")
    try:
        with psycopg.connect(TEST_PG, autocommit=True) as admin:
            for kill in range(3):
                await while_bursting(lambda: len(decided) >= 4 * (kill + 1) and len(hand) >= 2 * (kill + 1),
                                     "decisions and quarantines are acknowledged")
                terminate(admin, await store.call(backend_pid, store))
                # Some call meets the ended connection (it may be one that ends a turn, which the lost lock
                # ended already: then nothing is refused), and a later one makes a new connection.
                await while_bursting(lambda: links == [False, True] * (kill + 1),
                                     "the engine loses its connection and makes a new one")
    finally:
        done.set()
        await asyncio.wait_for(burst, BOUND_S)

    rows = {r["id"]: (r["status"], r["decided_by"])          # this read connects again if the last kill left it out
            for r in await store.call(store.query, "SELECT id, status, decided_by FROM approvals")}
    assert store.online
    decisions = {json.loads(r["payload"])["id"]: (r["type"], r["actor"]) for r in await store.call(
        store.query, "SELECT type, actor, payload FROM audit WHERE type IN ('review.approved', 'review.rejected')")}
    for item, status in decided.items():
        assert rows[item] == (status, "alice") and decisions[item] == (f"review.{status}", "alice"), item
    for item in refused:
        assert rows[item] == ("pending", None) and item not in decisions, item
    assert set(decisions) == set(decided)           # no refused decision landed after all
    hand_events = await store.call(store.query, "SELECT type FROM audit WHERE type IN "
                                   "('reputation.quarantined', 'reputation.released') ORDER BY seq")
    assert [r["type"] for r in hand_events] == [f"reputation.{act}" for act in hand]
    assert await standing(engine, "gen-b") == ("quarantined" if hand[-1] == "quarantined" else "probation")
    assert (await AuditLog(store).verify()).intact
