"""What other desks changed in the store, as it happens.

On PostgreSQL every commit that wrote something announces its tables on one channel (engine.store.db,
pg_notify inside the transaction: delivered at commit, never for a rollback). `ChangeWatch` listens on a
connection of its own, in a thread of its own, and hands each other desk's announcement to `on_change` on the
asyncio loop. The channel is the whole database's, so an announcement names its schema, and a store hears only
its own schema's. The connection comes back by itself after the server went away (every `retry_s`), and the first
thing it reports then is "everything may have changed".

On SQLite, where desks share one file, a commit by another connection moves the file's PRAGMA data_version:
the watch reads it every `poll_s` on the store's own thread and reports "everything may have changed".
"""
from __future__ import annotations

import asyncio
import json
import logging
import threading
from typing import Callable

from .db import CHANGES_CHANNEL, Store

log = logging.getLogger(__name__)

EVERYTHING: frozenset[str] = frozenset({"*"})   # which tables: unknown, read every view again


class ChangeWatch:
    def __init__(self, store: Store, on_change: Callable[[frozenset[str]], None], *, poll_s: float = 0.5,
                 retry_s: float = 2.0, on_link: Callable[[bool, str], None] = lambda online, why: None) -> None:
        """on_link(online, why): the feed's connection to the server was lost, or made again (PostgreSQL; on the
        loop): the first word that the server went away or came back, even while the desk writes nothing."""
        self.store = store
        self.on_change = on_change
        self.on_link = on_link
        self.poll_s = poll_s
        self.retry_s = retry_s
        self._stop = threading.Event()
        self._listening = threading.Event()     # the feed's connection is LISTENing (PostgreSQL)
        self._thread: threading.Thread | None = None
        self._timer: asyncio.TimerHandle | None = None       # the next read of data_version (SQLite)
        self._reading: asyncio.Future | None = None
        self._seen: int | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    async def start(self, ready_s: float = 5.0) -> None:
        """Returns once the watch knows where the store stands (SQLite: its first data_version) or listens
        (PostgreSQL; if the server does not answer within ready_s, the thread goes on trying by itself)."""
        self._loop = asyncio.get_running_loop()
        if self.store.sqlite:
            self._seen = await self._data_version()
            self._timer = self._loop.call_later(self.poll_s, self._read_version)
        else:
            self._thread = threading.Thread(target=self._listen, name="quorum-store-changes", daemon=True)
            self._thread.start()
            await self._loop.run_in_executor(None, self._listening.wait, ready_s)

    async def aclose(self) -> None:
        self._stop.set()
        if self._timer is not None:
            self._timer.cancel()
        if self._reading is not None:
            await asyncio.gather(self._reading, return_exceptions=True)
        if self._thread is not None:
            await asyncio.get_running_loop().run_in_executor(None, self._thread.join, 5.0)

    # --- SQLite: a timer, not a task (the engine keeps no task of its own running between questions) ---------
    def _version_now(self) -> int:
        return int(self.store.execute("PRAGMA data_version").scalar_one())

    async def _data_version(self) -> int | None:
        try:
            return await self.store.call(self._version_now)
        except Exception as exc:            # noqa: BLE001 - a store that went away is reported by its writers
            log.debug("data_version not read: %s", exc)
            return None

    def _read_version(self) -> None:
        if self._stop.is_set():
            return
        self._reading = self.store.submit(self._version_now)
        self._reading.add_done_callback(self._version_read)

    def _version_read(self, reading: asyncio.Future) -> None:
        self._reading = None
        if self._stop.is_set() or reading.cancelled():
            return
        if reading.exception() is not None:
            log.debug("data_version not read: %s", reading.exception())
        else:
            version = reading.result()
            if self._seen is not None and version != self._seen:
                self.on_change(EVERYTHING)
            self._seen = version
        self._timer = asyncio.get_running_loop().call_later(self.poll_s, self._read_version)

    # --- PostgreSQL ---------------------------------------------------------------------------
    def _deliver(self, tables: frozenset[str]) -> None:
        if self._loop is not None and not self._stop.is_set():
            self._loop.call_soon_threadsafe(self.on_change, tables)

    def _listen(self) -> None:
        import psycopg
        url = self.store.target.libpq_url
        lost = False
        while not self._stop.is_set():
            try:
                with psycopg.connect(url, autocommit=True, connect_timeout=5,
                                     application_name="quorum-changes") as conn:
                    conn.execute(f"LISTEN {CHANGES_CHANNEL}")
                    self._listening.set()
                    if lost:        # whatever happened while we were away is unknown: read everything again
                        self._tell_link(True, "the change feed reached the server again")
                        self._deliver(EVERYTHING)
                        lost = False
                    while not self._stop.is_set():
                        for note in conn.notifies(timeout=0.5):
                            self._note(note.payload)
            except psycopg.Error as exc:
                self._listening.clear()
                if self._stop.is_set():
                    return
                if not lost:
                    self._tell_link(False, str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__)
                lost = True
                log.warning("the store's change feed is down, trying again in %.0f s: %s", self.retry_s,
                            str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__)
                self._stop.wait(self.retry_s)

    def _tell_link(self, online: bool, why: str) -> None:
        if self._loop is not None and not self._stop.is_set():
            self._loop.call_soon_threadsafe(self.on_link, online, why)

    def _note(self, payload: str) -> None:
        try:
            message = json.loads(payload)
            desk, tables = str(message["desk"]), frozenset(str(t) for t in message["tables"])
            schema = str(message.get("schema", self.store.schema))
        except (ValueError, KeyError, TypeError, AttributeError):
            self._deliver(EVERYTHING)       # not ours to read: say that something changed
            return
        if desk != self.store.desk and schema == self.store.schema:    # another store in this database: not news
            self._deliver(tables)
