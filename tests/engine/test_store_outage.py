"""When the team store's server goes away: every write is refused with a clear error and nothing is half-written or
queued, whoever watches hears it (the store's own connection, the change feed), and the desk reaches the server
again by itself once it is back. The outage is real: the desk reaches PostgreSQL through a loopback proxy that the
test takes down and brings back."""
from __future__ import annotations

import asyncio
import os

import psycopg
import pytest

from engine import StoreError
from engine.schema import MIGRATIONS
from engine.store.changes import ChangeWatch
from engine.store.db import Store
from engine.store.audit_log import AuditLog
from tests.conftest import TEST_PG

BOUND_S = 20.0


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
