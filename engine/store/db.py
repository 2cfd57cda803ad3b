"""The store: a desk's own SQLite file, or a team's PostgreSQL database (engine.store.target).

The store keeps the questions, their agent calls and the audit chain; every other table belongs to the
package that writes it (the approval queue, reputation, alerts and silences, agents' memory, the gateway's
traces and tool calls), which declares its own schema steps (engine.store.migrations).

One SQL layer for both: every statement goes through SQLAlchemy Core (`text()` with bound parameters) on
one connection, owned by one dedicated thread; the asyncio loop awaits it through that thread's executor.
Statements are written once, in the SQL both servers speak; `?` marks a parameter. The connection runs in
autocommit and the store opens each transaction itself (BEGIN IMMEDIATE on SQLite, so a writer takes the
file's lock up front). SQLite runs WAL with synchronous=FULL: a write that was reported is on disk. A
decision and its audit events commit in one transaction; on PostgreSQL every append to the audit chain
holds a transaction-scoped advisory lock, so many desks writing at once still make one chain.
"""
from __future__ import annotations

import asyncio
import functools
import json
import logging
import re
import time
import uuid
import zlib
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence, TypeVar

from sqlalchemy import create_engine, text
from sqlalchemy.engine import Connection, CursorResult, Engine as SqlEngine
from sqlalchemy.exc import DBAPIError, SQLAlchemyError
from sqlalchemy.pool import NullPool
from sqlalchemy.sql.elements import TextClause

from ..errors import StoreError, StoreRefused
from .audit import GENESIS, canonical, event_hash, verify_chain
from .migrations import Migration, postgres_ddl
from .refusals import RECORD, refusal_function
from .roles import TEAM_ROLES, team_grants
from .target import Backend, StoreTarget, store_target

log = logging.getLogger(__name__)
T = TypeVar("T")
Params = Sequence[Any] | Mapping[str, Any]

# LIMIT for "no limit": both servers take a 64-bit count (SQLite's -1 and PostgreSQL's ALL are not shared).
NO_LIMIT = 2 ** 62
# The advisory lock every audit append takes on PostgreSQL (one chain, one lock; the number is arbitrary).
AUDIT_LOCK = 0x5155_4f52        # "QUOR"
SCHEMA_LOCK = 0x5155_4f53
REPUTATION_LOCK = 0x5155_4f54   # many desks' reputation books take turns (engine.reputation.keeper)
_QMARK = re.compile(r"'(?:[^']|'')*'|\?")
_WRITES = re.compile(r"^\s*(?:INSERT\s+INTO|UPDATE|DELETE\s+FROM)\s+(\w+)", re.IGNORECASE)
# Advisory locks by two int4 keys (Store.lock_keys): the store's schema, then the lock.
_XACT_LOCK = "SELECT pg_advisory_xact_lock(CAST(? AS INTEGER), CAST(? AS INTEGER))"
_SESSION_LOCK = "SELECT pg_advisory_lock(CAST(? AS INTEGER), CAST(? AS INTEGER))"
_SESSION_UNLOCK = "SELECT pg_advisory_unlock(CAST(? AS INTEGER), CAST(? AS INTEGER))"
# The channel every desk on one PostgreSQL store listens on (engine.store.changes): which tables a commit changed.
CHANGES_CHANNEL = "quorum_changes"


@functools.lru_cache(maxsize=1024)
def _statement(sql: str) -> TextClause:
    """The statement with each `?` (outside quoted text) bound by position as :p1, :p2, ...; a colon in quoted
    text stays text (escaped from text()'s :name binds)."""
    count = 0

    def number(match: re.Match[str]) -> str:
        nonlocal count
        if match.group(0) != "?":
            return match.group(0).replace(":", "\\:")
        count += 1
        return f":p{count}"
    return text(_QMARK.sub(number, sql))


def _bind(params: Params) -> Mapping[str, Any]:
    if isinstance(params, Mapping):
        return params
    return {f"p{i}": value for i, value in enumerate(params, 1)}


def _reason(exc: Exception) -> str:
    said = str(getattr(exc, "orig", None) or exc).strip()
    return said.splitlines()[0] if said else type(exc).__name__


def _is_disconnect(exc: DBAPIError) -> bool:
    """psycopg's word for a connection that failed or was closed under us (not a refused statement)."""
    try:
        import psycopg
    except ImportError:         # pragma: no cover - psycopg is a dependency
        return False
    return isinstance(exc.orig, psycopg.OperationalError) and not isinstance(exc.orig, psycopg.errors.QueryCanceled)


def _wrap(where: Path | str, exc: Exception) -> StoreError:
    text_ = _reason(exc)
    if isinstance(exc, DBAPIError) and _is_disconnect(exc):
        return StoreError(f"{where}: the database server cannot be reached ({text_}); nothing was written, and this "
                          "desk tries again on its next read or write")
    if "disk is full" in text_ or "disk I/O" in text_ or "No space left" in text_:
        return StoreError(f"{where}: the disk is full or failing ({text_}); nothing after the last reported write "
                          "was saved")
    if "readonly" in text_ or "read-only transaction" in text_:
        return StoreError(f"{where}: the database is read-only ({text_}); this write was not saved, what was saved "
                          "before is intact")
    if "permission denied" in text_:
        statement = _WRITES.match(str(getattr(exc, "statement", "") or ""))
        action = f"{statement.group(0).split()[0].upper()} {statement.group(1)}" if statement else "read"
        return StoreRefused(f"{where}: this role may not do that ({text_}); nothing was written, and the refusal "
                            "is kept for the audit trail", action, text_)
    if "unable to open" in text_:
        return StoreError(f"{where}: cannot open the database ({text_}): its folder may be read-only, missing or "
                          "not writable by this user")
    return StoreError(f"{where}: {text_}")


class Store:
    def __init__(self, target: Path | str | StoreTarget, migrations: Sequence[Migration],
                 clock: Callable[[], float] = time.time) -> None:
        """target: a SQLite file or a postgresql:// URL (engine.store.target). migrations: the schema's steps
        in version order, from every package that owns tables here (engine.schema.MIGRATIONS); the store runs
        those the database has not had yet when it opens. clock: the times the store writes (the audit's
        among them); the default, time.time, is set to the server's clock on a team store, so that desks whose
        clocks drift still write one timeline."""
        self.target = store_target(target)
        self.path: Path | str = self.target.path if self.target.path is not None else self.target.shown
        self.migrations = tuple(migrations)
        self.clock = clock
        self._server_time = clock is time.time and not self.sqlite
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="quorum-store")
        self._engine: SqlEngine | None = None
        self._conn: Connection | None = None
        self._in_transaction = False
        self.signed_in: str | None = None       # the PostgreSQL role this store signed in as (None on SQLite)
        self.may_write = True                   # False for a role not granted the audit chain (a viewer)
        self.schema = ""                        # PostgreSQL: the schema the store's tables are in (one per store)
        self.online = True                      # False from a lost server connection until one is made again
        # Told when the server is lost or reached again (online, why), on the store's thread.
        self.on_link: Callable[[bool, str], None] = lambda online, why: None
        self._touched: set[str] = set()         # tables this transaction wrote: announced at its commit
        self.desk = uuid.uuid4().hex            # this store's connection among the team's: its own changes are not news

    @property
    def backend(self) -> Backend:
        return self.target.backend

    @property
    def sqlite(self) -> bool:
        return self.target.backend is Backend.SQLITE

    # --- lifecycle -------------------------------------------------------------------------
    def open_sync(self) -> None:
        try:
            if self.sqlite:
                assert self.target.path is not None
                self.target.path.parent.mkdir(parents=True, exist_ok=True)
                engine = create_engine(f"sqlite:///{self.target.path}", poolclass=NullPool,
                                       connect_args={"check_same_thread": False})
            else:
                engine = create_engine(self.target.url, poolclass=NullPool,
                                       connect_args={"connect_timeout": 5, "application_name": "quorum"})
            self._engine = engine.execution_options(isolation_level="AUTOCOMMIT")
            self._conn = self._engine.connect()
            if self.sqlite:
                for pragma in ("PRAGMA journal_mode=WAL", "PRAGMA synchronous=FULL", "PRAGMA busy_timeout=5000"):
                    self._conn.exec_driver_sql(pragma)
            self._migrate()
            if self._server_time:
                self.clock = self._server_clock()
        except (SQLAlchemyError, OSError) as exc:
            self.close_sync()           # a store that failed to open holds no file or connection open
            raise _wrap(self.path, exc) from exc

    async def open(self) -> None:
        await self._run(self.open_sync)

    async def aclose(self) -> None:
        await self._run(self.close_sync)
        self._executor.shutdown(wait=True)

    def close_sync(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None
        if self._engine is not None:
            self._engine.dispose()
            self._engine = None

    def _server_clock(self) -> Callable[[], float]:
        """This machine's clock, set to the database server's: the offset is read once, at open, halfway through
        the round trip that reads it."""
        before = time.time()
        server = float(self.execute("SELECT extract(epoch FROM clock_timestamp())").scalar_one())
        offset = server - (before + time.time()) / 2
        return lambda: time.time() + offset

    def _schema_version(self) -> int:
        if self.sqlite:
            return int(self.execute("PRAGMA user_version").scalar_one())
        if self.execute("SELECT to_regclass('schema_version')").scalar() is None:   # a new, empty store
            self.execute("CREATE TABLE schema_version (version BIGINT NOT NULL)")
        found = self.execute("SELECT max(version) FROM schema_version").scalar_one()
        return int(found or 0)

    def _migrate(self) -> None:
        driver = self.conn.connection.driver_connection
        latest = len(self.migrations)
        if self.sqlite:
            version = self._schema_version()
            if version > latest:
                raise StoreError(f"{self.path}: database schema {version} is newer than this Quorum ({latest})")
            for step in self.migrations[version:]:
                driver.executescript(f"BEGIN; {step.script} PRAGMA user_version={step.version}; COMMIT;")
            return

        self.schema = str(self.execute("SELECT current_schema()").scalar() or "")

        def steps() -> None:
            # Desks that open a new team store together: one runs the steps, the others wait and find them run.
            self.execute(_XACT_LOCK, self.lock_keys(SCHEMA_LOCK))
            version = self._schema_version()
            if version > latest:
                raise StoreError(f"{self.path}: database schema {version} is newer than this Quorum ({latest})")
            for step in self.migrations[version:]:
                driver.execute(postgres_ddl(step.script))
                self.execute("INSERT INTO schema_version (version) VALUES (?)", [step.version])
            self._grant()
        self._transaction(steps)
        self.signed_in = str(self.execute("SELECT session_user").scalar_one())
        self.may_write = bool(self.execute("SELECT has_table_privilege('audit', 'INSERT')").scalar())

    def _grant(self) -> None:
        """The schema owner's own functions (engine.store.refusals) and the team roles' grants
        (engine.store.roles), applied by the owner, the grants where the roles exist."""
        owner = self.execute("SELECT pg_get_userbyid(nspowner) = current_user FROM pg_namespace "
                             "WHERE nspname = current_schema()").scalar()
        if not owner:
            return
        schema = self.schema
        for statement in refusal_function(schema):
            self.execute(statement)
        roles = self.execute("SELECT count(*) FROM pg_roles WHERE rolname IN (?, ?, ?)", TEAM_ROLES).scalar_one()
        if roles != len(TEAM_ROLES):
            return
        tables = {r[0] for r in self.execute("SELECT tablename FROM pg_tables WHERE schemaname = ?", [schema])}
        for statement in team_grants(schema, tables):
            self.execute(statement)

    @property
    def conn(self) -> Connection:
        if self._conn is None:
            if self._engine is None:
                raise StoreError(f"{self.path}: store is not open")
            self._reconnect()
        assert self._conn is not None
        return self._conn

    def _reconnect(self) -> None:
        """A team store whose server went away: one try to reach it again, on the caller's own call (nothing
        waits in a queue for it); a StoreError says it is still away."""
        assert self._engine is not None
        try:
            self._conn = self._engine.connect()
        except DBAPIError as exc:
            raise StoreError(f"{self.path}: the database server cannot be reached ({_reason(exc)}); nothing was "
                             "written, and this desk tries again on its next read or write") from exc
        self._link(True, "reached again")

    def _link(self, online: bool, why: str) -> None:
        if online != self.online:
            self.online = online
            self.on_link(online, why)

    def _lost(self, exc: DBAPIError) -> None:
        """A failure that took the server's connection with it: the connection is dropped (the next call makes a
        new one), and whoever watches hears that the store is offline."""
        if self.sqlite or not (exc.connection_invalidated or _is_disconnect(exc)):
            return
        conn, self._conn = self._conn, None
        if conn is not None:
            try:
                conn.invalidate()
            except SQLAlchemyError:
                pass
        self._in_transaction = False
        self._link(False, _reason(exc))

    def reach(self) -> bool:
        """On the store's thread: whether the server answers now (reconnecting if the store had lost it)."""
        try:
            self.execute("SELECT 1")
        except StoreError:
            return False
        return True

    async def _run(self, fn: Callable[..., T], *args: Any) -> T:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executor, fn, *args)

    # --- SQL, on the store's thread --------------------------------------------------------
    def execute(self, sql: str, params: Params = ()) -> CursorResult[Any]:
        """One statement; `?` marks each parameter, in order (or :name with a mapping)."""
        try:
            result = self.conn.execute(_statement(sql), _bind(params))
        except DBAPIError as exc:
            self._lost(exc)
            raise self._refused(_wrap(self.path, exc)) from exc
        self._wrote(sql)
        return result

    def executemany(self, sql: str, rows: Iterable[Params]) -> None:
        batch = [_bind(r) for r in rows]
        if not batch:
            return
        try:
            self.conn.execute(_statement(sql), batch)
        except DBAPIError as exc:
            self._lost(exc)
            raise self._refused(_wrap(self.path, exc)) from exc
        self._wrote(sql)

    def _wrote(self, sql: str) -> None:
        """Notes the table a write changed; outside a transaction the write has committed: announce it now."""
        written = _WRITES.match(sql)
        if written is None:
            return
        self._touched.add(written.group(1).lower())
        if not self._in_transaction:
            self._announce()

    def _refused(self, error: StoreError) -> StoreError:
        """A write the server refused this role is kept for the audit trail (engine.store.refusals): at once
        outside a transaction, or once the transaction that tried it has rolled back (_transaction)."""
        if isinstance(error, StoreRefused) and not self._in_transaction:
            self._keep_refusal(error)
        return error

    def _keep_refusal(self, error: StoreRefused) -> None:
        try:
            self.conn.execute(_statement(RECORD), _bind([error.action, error.reason]))
        except DBAPIError as exc:       # an older store without the function: the refusal is still said
            self._lost(exc)
            log.warning("a refused write was not kept for the audit trail: %s", _reason(exc))

    def _announce(self) -> None:
        """On PostgreSQL, tells the other desks which tables changed (NOTIFY: delivered when the transaction
        commits, and never if it rolls back). SQLite's desks see a change by PRAGMA data_version instead."""
        touched, self._touched = self._touched, set()
        if touched and not self.sqlite:
            # The channel is the database's: the schema says which store of the database changed.
            message = json.dumps({"desk": self.desk, "schema": self.schema, "tables": sorted(touched)},
                                 separators=(",", ":"))
            self.conn.execute(_statement("SELECT pg_notify(?, ?)"), _bind([CHANGES_CHANNEL, message]))

    def insert(self, sql: str, params: Params = ()) -> int:
        """One INSERT into a table numbered by its `id`; returns the new row's id."""
        return int(self.execute(f"{sql} RETURNING id", params).scalar_one())

    def query(self, sql: str, params: Params = ()) -> list[dict[str, Any]]:
        """The rows as dicts by column name."""
        return [dict(row._mapping) for row in self.execute(sql, params)]

    def take_turn(self, lock: int) -> None:
        """PostgreSQL: waits for, then holds, a session-wide advisory lock that other desks' stores take too (held
        again by this store, it counts up). SQLite: nothing, a file's desks share the one write lock instead."""
        if not self.sqlite:
            self.execute(_SESSION_LOCK, self.lock_keys(lock))

    def end_turn(self, lock: int) -> None:
        if not self.sqlite:
            self.execute(_SESSION_UNLOCK, self.lock_keys(lock))

    def lock_keys(self, lock: int) -> tuple[int, int]:
        """An advisory lock's two keys on PostgreSQL: this store's schema, then the lock. Advisory locks are the
        whole database's, so two team stores in one database (two schemas) never wait on each other's."""
        return zlib.crc32(self.schema.encode("utf-8")) - 2 ** 31, lock

    def indexed_by(self, index: str) -> str:
        """SQLite's hint to use one index ("" on PostgreSQL, whose planner takes no hints)."""
        return f" INDEXED BY {index}" if self.sqlite else ""

    # --- for engine packages that own a table (engine.review) -------------------------------
    async def call(self, fn: Callable[..., T], *args: Any) -> T:
        """Runs fn(*args) on the store's own thread (the only thread that touches the connection)."""
        return await self._run(fn, *args)

    def submit(self, fn: Callable[[], T]) -> "asyncio.Future[T]":
        """fn on the store's thread, as a future of the running loop (no task: for a timer's callback)."""
        return asyncio.get_running_loop().run_in_executor(self._executor, fn)

    def transaction(self, fn: Callable[[], T]) -> T:
        """On the store's thread: fn runs inside one transaction, rolled back if it raises."""
        return self._transaction(fn)

    @property
    def in_transaction(self) -> bool:
        return self._in_transaction

    def append_audit(self, trace_id: str, actor: str, type_: str, payload: Mapping[str, Any]) -> int:
        """On the store's thread and inside transaction(): appends one audit event to the chain, so a
        row change and its audit event commit together."""
        if not self._in_transaction:
            raise StoreError(f"{self.path}: an audit event must be appended inside a transaction")
        return self._append_audit(trace_id, actor, type_, payload)

    # --- writes ----------------------------------------------------------------------------
    def _append_audit(self, trace_id: str, actor: str, type_: str, payload: Mapping[str, Any]) -> int:
        self.take_audit_turn()
        last = self.execute("SELECT seq, hash FROM audit ORDER BY seq DESC LIMIT 1").fetchone()
        seq, prev = (last[0] + 1, last[1]) if last else (1, GENESIS)
        at = self.clock()
        payload_json = canonical(payload)
        digest = event_hash(prev, seq, trace_id, actor, type_, payload_json, at)
        self.execute("INSERT INTO audit (seq, trace_id, actor, type, payload, at, prev_hash, hash) "
                     "VALUES (?, ?, ?, ?, ?, ?, ?, ?)", (seq, trace_id, actor, type_, payload_json, at, prev, digest))
        return seq

    def take_audit_turn(self) -> None:
        """Inside a transaction: the audit chain's turn, held until it ends (SQLite's BEGIN IMMEDIATE already
        holds the file's one write lock)."""
        if not self.sqlite:
            self.execute(_XACT_LOCK, self.lock_keys(AUDIT_LOCK))

    def _driver_in_transaction(self) -> bool:
        driver = self.conn.connection.driver_connection
        if self.sqlite:
            return bool(driver.in_transaction)
        return driver.info.transaction_status != 0      # psycopg.pq.TransactionStatus.IDLE

    def _transaction(self, fn: Callable[[], T]) -> T:
        if self._in_transaction:
            raise StoreError(f"{self.path}: a transaction is already open on the store's thread")
        conn = self.conn
        try:
            conn.exec_driver_sql("BEGIN IMMEDIATE" if self.sqlite else "BEGIN")
            self._in_transaction = True
            self._touched.clear()
            try:
                result = fn()
                self._announce()
            except BaseException as exc_:
                self._touched.clear()
                # SQLite rolls back by itself on some errors (SQLITE_FULL): keep that error. A lost server
                # connection took its transaction with it.
                if self._conn is conn and self._driver_in_transaction():
                    conn.exec_driver_sql("ROLLBACK")
                if isinstance(exc_, StoreRefused):
                    self._keep_refusal(exc_)
                raise
            finally:
                self._in_transaction = False
            conn.exec_driver_sql("COMMIT")
            return result
        except DBAPIError as exc:
            self._lost(exc)
            raise _wrap(self.path, exc) from exc

    def audit_sync(self, trace_id: str, actor: str, type_: str, payload: Mapping[str, Any]) -> int:
        return self._transaction(lambda: self._append_audit(trace_id, actor, type_, payload))

    async def audit(self, trace_id: str, actor: str, type_: str, payload: Mapping[str, Any]) -> int:
        return await self._run(self.audit_sync, trace_id, actor, type_, payload)

    # --- reads -----------------------------------------------------------------------------
    def agent_stats_sync(self) -> dict[str, dict[str, float]]:
        rows = self.execute("SELECT agent_id, COUNT(*), COUNT(CASE WHEN status = 'ok' THEN 1 END) FROM agent_calls "
                            "GROUP BY agent_id").fetchall()
        return {agent_id: {"calls": calls, "ok": ok or 0} for agent_id, calls, ok in rows}

    async def agent_stats(self) -> dict[str, dict[str, float]]:
        return await self._run(self.agent_stats_sync)

    def recent_questions_sync(self, limit: int = 50) -> list[dict[str, Any]]:
        return self.query("SELECT trace_id, question, tier, verdict, answer, asked_at FROM questions "
                          "ORDER BY asked_at DESC LIMIT ?", [limit])

    async def recent_questions(self, limit: int = 50) -> list[dict[str, Any]]:
        return await self._run(self.recent_questions_sync, limit)

    def verify_audit_sync(self) -> int:
        rows = self.query("SELECT * FROM audit ORDER BY seq")
        return verify_chain(rows)
