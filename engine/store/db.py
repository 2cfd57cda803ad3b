"""The one SQLite file: questions, agent calls, the audit chain, the approval queue, alerts and silences.

One dedicated thread owns the sqlite-utils Database; the asyncio loop awaits it through that
thread's executor. WAL with synchronous=FULL: a write that was reported is on disk. A decision
and its audit events commit in one transaction.
"""
from __future__ import annotations

import asyncio
import json
import sqlite3
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Callable, Mapping, TypeVar

import sqlite_utils

from ..errors import StoreError
from ..types import Answer, to_jsonable
from .audit import GENESIS, canonical, event_hash, verify_chain

T = TypeVar("T")

MIGRATIONS: list[str] = [
    # 1: questions, agent calls, audit chain
    """
    CREATE TABLE questions (trace_id TEXT PRIMARY KEY, question TEXT NOT NULL, tier TEXT NOT NULL,
        verdict TEXT NOT NULL, answer TEXT NOT NULL, asked_at REAL NOT NULL, answer_json TEXT NOT NULL);
    CREATE TABLE agent_calls (id INTEGER PRIMARY KEY, trace_id TEXT NOT NULL, agent_id TEXT NOT NULL,
        role TEXT NOT NULL, status TEXT NOT NULL, latency_ms REAL NOT NULL, error TEXT NOT NULL, at REAL NOT NULL);
    CREATE INDEX agent_calls_agent ON agent_calls(agent_id, at);
    CREATE TABLE audit (seq INTEGER PRIMARY KEY, trace_id TEXT NOT NULL, actor TEXT NOT NULL, type TEXT NOT NULL,
        payload TEXT NOT NULL, at REAL NOT NULL, prev_hash TEXT NOT NULL, hash TEXT NOT NULL);
    CREATE INDEX audit_trace ON audit(trace_id);
    """,
    # 2: the approval queue (engine.review): answers that wait for an operator, and the decision.
    # payload is the whole Answer as JSON (engine.types.to_jsonable), so nothing is lost.
    """
    CREATE TABLE approvals (id INTEGER PRIMARY KEY, trace_id TEXT UNIQUE NOT NULL, question TEXT NOT NULL,
        tier TEXT NOT NULL, verdict TEXT NOT NULL,
        status TEXT NOT NULL DEFAULT 'pending' CHECK(status IN ('pending','approved','rejected')),
        why TEXT NOT NULL, created_at REAL NOT NULL, payload TEXT NOT NULL,
        decided_by TEXT, reason TEXT, note TEXT, decided_at REAL,
        CHECK((status = 'pending') = (decided_at IS NULL)));
    CREATE INDEX approvals_status ON approvals(status, created_at);
    """,
    # 3: reputation (engine.reputation): each agent's standing, every score it has had (the Trust plot
    # survives a restart), and the alerts an operator acknowledges.
    """
    CREATE TABLE trust (agent_id TEXT PRIMARY KEY, role TEXT NOT NULL, log_odds REAL NOT NULL,
        state TEXT NOT NULL CHECK(state IN ('active','probation','quarantined')), first_seen REAL NOT NULL,
        last_change_at REAL, last_change_why TEXT NOT NULL DEFAULT '', good_streak INTEGER NOT NULL DEFAULT 0);
    CREATE TABLE trust_history (id INTEGER PRIMARY KEY, agent_id TEXT NOT NULL, score REAL NOT NULL,
        state TEXT NOT NULL, trace_id TEXT NOT NULL, why TEXT NOT NULL, at REAL NOT NULL);
    CREATE INDEX trust_history_agent ON trust_history(agent_id, at);
    CREATE TABLE alerts (id INTEGER PRIMARY KEY, kind TEXT NOT NULL, agent_id TEXT NOT NULL, message TEXT NOT NULL,
        trace_id TEXT NOT NULL, at REAL NOT NULL, acknowledged_by TEXT, acknowledged_at REAL,
        CHECK((acknowledged_by IS NULL) = (acknowledged_at IS NULL)));
    CREATE INDEX alerts_open ON alerts(acknowledged_at, at);
    """,
    # 4: per-agent memory (engine.memory): every write versioned with its trace id, snapshots to roll
    # back to, and every read, so the spread of a tainted entry can be traced.
    """
    CREATE TABLE memory_entries (id INTEGER PRIMARY KEY, namespace TEXT NOT NULL, key TEXT NOT NULL,
        content TEXT NOT NULL, version INTEGER NOT NULL, author TEXT NOT NULL, trace_id TEXT NOT NULL,
        written_at REAL NOT NULL, screen_score REAL NOT NULL DEFAULT 0,
        status TEXT NOT NULL DEFAULT 'active' CHECK(status IN ('active','superseded','quarantined','rolled_back')),
        status_why TEXT NOT NULL DEFAULT '', UNIQUE(namespace, key, version));
    CREATE INDEX memory_entries_ns ON memory_entries(namespace, key, status);
    CREATE UNIQUE INDEX memory_entries_one_active ON memory_entries(namespace, key) WHERE status = 'active';
    CREATE INDEX memory_entries_trace ON memory_entries(trace_id);
    CREATE TABLE memory_reads (id INTEGER PRIMARY KEY, entry_id INTEGER NOT NULL REFERENCES memory_entries(id),
        reader TEXT NOT NULL, trace_id TEXT NOT NULL, at REAL NOT NULL);
    CREATE INDEX memory_reads_entry ON memory_reads(entry_id, at);
    CREATE TABLE memory_snapshots (id INTEGER PRIMARY KEY, namespace TEXT NOT NULL, label TEXT NOT NULL,
        at REAL NOT NULL, last_entry_id INTEGER NOT NULL, created_by TEXT NOT NULL);
    CREATE INDEX memory_snapshots_ns ON memory_snapshots(namespace, at);
    """,
    # 5: the gateway (engine.gateway): every message of a trace, with its parent, and each decision
    # that stopped or changed a message, with the scanners' evidence.
    """
    CREATE TABLE trace_events (id INTEGER PRIMARY KEY, trace_id TEXT NOT NULL, parent_trace_id TEXT NOT NULL,
        kind TEXT NOT NULL, source TEXT NOT NULL, target TEXT NOT NULL, trust TEXT NOT NULL,
        summary TEXT NOT NULL, data TEXT NOT NULL, at REAL NOT NULL);
    CREATE INDEX trace_events_trace ON trace_events(trace_id, id);
    CREATE INDEX trace_events_parent ON trace_events(parent_trace_id, id);
    CREATE TABLE gateway_decisions (id INTEGER PRIMARY KEY, trace_id TEXT NOT NULL, parent_trace_id TEXT NOT NULL,
        source TEXT NOT NULL, target TEXT NOT NULL, kind TEXT NOT NULL, trust TEXT NOT NULL, channel TEXT NOT NULL,
        action TEXT NOT NULL, score REAL NOT NULL, evidence TEXT NOT NULL, excerpt TEXT NOT NULL, at REAL NOT NULL,
        item TEXT NOT NULL DEFAULT '');
    CREATE INDEX gateway_decisions_at ON gateway_decisions(at);
    """,
    # 6: agents' tool calls (engine.gateway.tools): each call with its decision; outward actions wait
    # here for an operator when the agent is in approval mode; the outbox holds what was "sent".
    """
    CREATE TABLE tool_calls (id INTEGER PRIMARY KEY, trace_id TEXT NOT NULL, agent_id TEXT NOT NULL,
        tool TEXT NOT NULL, params TEXT NOT NULL,
        status TEXT NOT NULL CHECK(status IN ('done','refused','failed','pending','approved','rejected')),
        why TEXT NOT NULL, result TEXT NOT NULL DEFAULT '', at REAL NOT NULL, decided_by TEXT, decided_at REAL,
        reason TEXT, CHECK((decided_by IS NULL) = (decided_at IS NULL)));
    CREATE INDEX tool_calls_status ON tool_calls(status, at);
    CREATE INDEX tool_calls_trace ON tool_calls(trace_id);
    CREATE TABLE outbox (id INTEGER PRIMARY KEY, tool_call_id INTEGER NOT NULL REFERENCES tool_calls(id),
        recipient TEXT NOT NULL, subject TEXT NOT NULL, body TEXT NOT NULL, at REAL NOT NULL);
    """,
    # 7: the audit trail's filters (engine.store.audit_log): by actor, by type (exact or a prefix) and by
    # time, and the actor / type dropdowns (DISTINCT on a covering index), without scanning the chain.
    """
    CREATE INDEX audit_actor ON audit(actor);
    CREATE INDEX audit_type ON audit(type);
    CREATE INDEX audit_at ON audit(at);
    """,
    # 8: operator alerts (engine.alerts): each alert's severity (older rows get their kind's, as the
    # kinds table had it then), the acknowledgement's comment, and silences: a kind and/or an agent muted
    # until expires_at (or until an operator ends it). Silences mute notification; alerts are still kept.
    """
    ALTER TABLE alerts ADD COLUMN severity TEXT NOT NULL DEFAULT 'warning'
        CHECK(severity IN ('critical','warning','info'));
    UPDATE alerts SET severity = 'critical' WHERE kind IN ('auto_quarantine','agent_down','injection_blocked');
    ALTER TABLE alerts ADD COLUMN ack_comment TEXT;
    CREATE TABLE silences (id INTEGER PRIMARY KEY, kind TEXT, agent_id TEXT, created_by TEXT NOT NULL,
        comment TEXT NOT NULL, created_at REAL NOT NULL, expires_at REAL NOT NULL, ended_at REAL, ended_by TEXT,
        CHECK(kind IS NOT NULL OR agent_id IS NOT NULL), CHECK(expires_at > created_at),
        CHECK((ended_at IS NULL) = (ended_by IS NULL)));
    CREATE INDEX silences_expiry ON silences(expires_at);
    """,
]


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
    def __init__(self, path: Path, clock: Callable[[], float] = time.time) -> None:
        self.path = Path(path)
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
        if version > len(MIGRATIONS):
            raise StoreError(f"{self.path}: database schema {version} is newer than this Quorum ({len(MIGRATIONS)})")
        for number, script in enumerate(MIGRATIONS[version:], start=version + 1):
            conn.executescript(f"BEGIN; {script} PRAGMA user_version={number}; COMMIT;")

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

    def record_answer_sync(self, answer: Answer, also: Callable[[], T] | None = None) -> T | None:
        """Writes the answer, its agent calls and their audit events in one transaction; `also`, if
        given, runs inside that same transaction (the review queue's insert), so a crash can never
        leave a recorded answer without the queue item it needed."""
        data = to_jsonable(answer)

        def write() -> T | None:
            conn = self.db.conn
            conn.execute("INSERT INTO questions VALUES (?, ?, ?, ?, ?, ?, ?)",
                         (answer.trace_id, answer.question, answer.tier.value, answer.verdict.value, answer.answer,
                          answer.asked_at, json.dumps(data, ensure_ascii=False)))
            now = self.clock()
            for call in answer.agents:
                conn.execute("INSERT INTO agent_calls (trace_id, agent_id, role, status, latency_ms, error, at) "
                             "VALUES (?, ?, ?, ?, ?, ?, ?)",
                             (answer.trace_id, call.agent_id, call.role.value, call.status.value, call.latency_ms,
                              call.error, now))
                self._append_audit(answer.trace_id, call.agent_id, f"agent.{call.role.value}",
                                   {"status": call.status.value, "latency_ms": call.latency_ms, "error": call.error,
                                    "items": call.n_items})
            self._append_audit(answer.trace_id, "engine", "question.decided",
                               {"question": answer.question, "tier": answer.tier.value, "tier_reason": answer.tier_reason,
                                "verdict": answer.verdict.value,
                                "answer": answer.answer, "reason": answer.reason,
                                "citations": [c.chunk_id for c in answer.citations],
                                "kept_out": [c.chunk.id for c in answer.excluded
                                             if c.explanation and c.explanation.flags],
                                "suspects": [s.agent_id for s in answer.suspects],
                                "challenges": {c.agent_id: c.challenge for c in answer.candidates if c.challenge},
                                "stages": [s.kind.value for s in answer.stages]})
            cascade = answer.cascade
            if cascade is not None and cascade.fired:
                self._append_audit(answer.trace_id, "charm", "cascade.fired",
                                   {"stage": cascade.stage, "type": cascade.cascade_type.value if cascade.cascade_type
                                    else None, "mitigation": cascade.mitigation.value, "resolved": cascade.resolved,
                                    "reason": cascade.reason,
                                    "scores": [{"index": x.index, "stage": x.stage.value, "attempt": x.attempt,
                                                "sfv": x.a_sfv, "csct": x.a_csct, "cpm": x.a_cpm, "p": x.p,
                                                "fired": x.fired, "suspect_passages": list(x.suspect_passages),
                                                "suspect_agents": list(x.suspect_agents)} for x in cascade.scores]})
            if answer.gateway is not None:
                from .traces import write_report   # the gateway's trace and decisions, same transaction
                write_report(self, answer.gateway)
            return also() if also else None
        return self._transaction(write)

    async def record_answer(self, answer: Answer, also: Callable[[], T] | None = None) -> T | None:
        return await self._run(self.record_answer_sync, answer, also)

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
