"""The one SQLite file. The store keeps the questions, their agent calls and the audit chain; every other
table belongs to the package that writes it (the approval queue, reputation, alerts and silences, agents'
memory, the gateway's traces and tool calls), which declares its own schema steps (engine.store.migrations).

One dedicated thread owns the sqlite-utils Database; the asyncio loop awaits it through that
thread's executor. WAL with synchronous=FULL: a write that was reported is on disk. A decision
and its audit events commit in one transaction.
"""
from __future__ import annotations

import asyncio
import sqlite3
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence, TypeVar

import sqlite_utils

from ..errors import StoreError
from .audit import GENESIS, canonical, event_hash, verify_chain
from .migrations import Migration

T = TypeVar("T")


def _wrap(path: Path, exc: Exception) -> StoreError:
    text = str(exc)
    if "disk is full" in text or "disk I/O" in text:
        return StoreError(f"{path}: the disk is full or failing ({text}); nothing after the last reported write was saved")
    if "readonly" in text:
        return StoreError(f"{path}: the database is read-only ({text}); this write was not saved, what was saved "
                          "before is intact")
    if "unable to open" in text:
        return StoreError(f"{path}: cannot open the database ({text}): its folder may be read-only, missing or "
                          "not writable by this user")
    return StoreError(f"{path}: {text}")


class Store:
    def __init__(self, path: Path, migrations: Sequence[Migration], clock: Callable[[], float] = time.time) -> None:
        """migrations: the schema's steps in version order, from every package that owns tables here
        (engine.schema.MIGRATIONS); the store runs those the file has not had yet when it opens."""
        self.path = Path(path)
        self.migrations = tuple(migrations)
        self.clock = clock
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="quorum-store")
        self._db: sqlite_utils.Database | None = None

    # --- lifecycle -------------------------------------------------------------------------
    def open_sync(self) -> None:
        conn = None
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=FULL")
            conn.execute("PRAGMA busy_timeout=5000")
            self._db = sqlite_utils.Database(conn)
            self._migrate()
        except (sqlite3.Error, OSError) as exc:
            if conn is not None:        # a store that failed to open holds no file open
                conn.close()
                self._db = None
            raise _wrap(self.path, exc) from exc

    async def open(self) -> None:
        await self._run(self.open_sync)

    async def aclose(self) -> None:
        await self._run(self.close_sync)
        self._executor.shutdown(wait=True)

    def close_sync(self) -> None:
        if self._db is not None:
            self._db.conn.close()
            self._db = None

    def _migrate(self) -> None:
        conn = self.db.conn
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        latest = len(self.migrations)
        if version > latest:
            raise StoreError(f"{self.path}: database schema {version} is newer than this Quorum ({latest})")
        for step in self.migrations[version:]:
            conn.executescript(f"BEGIN; {step.script} PRAGMA user_version={step.version}; COMMIT;")

    @property
    def db(self) -> sqlite_utils.Database:
        if self._db is None:
            raise StoreError(f"{self.path}: store is not open")
        return self._db

    async def _run(self, fn: Callable[..., T], *args: Any) -> T:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executor, fn, *args)

    # --- for engine packages that own a table (engine.review) -------------------------------
    async def call(self, fn: Callable[..., T], *args: Any) -> T:
        """Runs fn(*args) on the store's own thread (the only thread that touches the connection)."""
        return await self._run(fn, *args)

    def transaction(self, fn: Callable[[], T]) -> T:
        """On the store's thread: fn runs inside BEGIN IMMEDIATE ... COMMIT, rolled back if it raises."""
        return self._transaction(fn)

    def append_audit(self, trace_id: str, actor: str, type_: str, payload: Mapping[str, Any]) -> int:
        """On the store's thread and inside transaction(): appends one audit event to the chain, so a
        row change and its audit event commit together."""
        if not self.db.conn.in_transaction:
            raise StoreError(f"{self.path}: an audit event must be appended inside a transaction")
        return self._append_audit(trace_id, actor, type_, payload)

    # --- writes ----------------------------------------------------------------------------
    def _append_audit(self, trace_id: str, actor: str, type_: str, payload: Mapping[str, Any]) -> int:
        conn = self.db.conn
        last = conn.execute("SELECT seq, hash FROM audit ORDER BY seq DESC LIMIT 1").fetchone()
        seq, prev = (last[0] + 1, last[1]) if last else (1, GENESIS)
        at = self.clock()
        payload_json = canonical(payload)
        digest = event_hash(prev, seq, trace_id, actor, type_, payload_json, at)
        conn.execute("INSERT INTO audit VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                     (seq, trace_id, actor, type_, payload_json, at, prev, digest))
        return seq

    def _transaction(self, fn: Callable[[], T]) -> T:
        conn = self.db.conn
        try:
            conn.execute("BEGIN IMMEDIATE")
            try:
                result = fn()
            except BaseException:
                if conn.in_transaction:     # SQLite rolls back by itself on some errors (SQLITE_FULL): keep that error
                    conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")
            return result
        except sqlite3.Error as exc:
            raise _wrap(self.path, exc) from exc

    def audit_sync(self, trace_id: str, actor: str, type_: str, payload: Mapping[str, Any]) -> int:
        return self._transaction(lambda: self._append_audit(trace_id, actor, type_, payload))

    async def audit(self, trace_id: str, actor: str, type_: str, payload: Mapping[str, Any]) -> int:
        return await self._run(self.audit_sync, trace_id, actor, type_, payload)

    # --- reads -----------------------------------------------------------------------------
    def agent_stats_sync(self) -> dict[str, dict[str, float]]:
        rows = self.db.conn.execute(
            "SELECT agent_id, COUNT(*), SUM(status = 'ok') FROM agent_calls GROUP BY agent_id").fetchall()
        return {agent_id: {"calls": calls, "ok": ok or 0} for agent_id, calls, ok in rows}

    async def agent_stats(self) -> dict[str, dict[str, float]]:
        return await self._run(self.agent_stats_sync)

    def recent_questions_sync(self, limit: int = 50) -> list[dict[str, Any]]:
        return list(self.db.query("SELECT trace_id, question, tier, verdict, answer, asked_at FROM questions "
                                  "ORDER BY asked_at DESC LIMIT ?", [limit]))

    async def recent_questions(self, limit: int = 50) -> list[dict[str, Any]]:
        return await self._run(self.recent_questions_sync, limit)

    def verify_audit_sync(self) -> int:
        rows = self.db.query("SELECT * FROM audit ORDER BY seq")
        return verify_chain(rows)
