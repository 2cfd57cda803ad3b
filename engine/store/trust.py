"""The reputation book's tables in the one SQLite file: standing, score history and alerts.

Every write runs on the store's thread inside one transaction with its audit events, so a score
change is never on disk without the event that explains it (and the other way round).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Sequence

from ..errors import InputError
from .db import Store

TRUST_COLUMNS = ("agent_id", "role", "log_odds", "state", "first_seen", "last_change_at", "last_change_why",
                 "good_streak")


@dataclass(frozen=True)
class ScorePoint:
    agent_id: str
    score: float
    state: str
    trace_id: str
    why: str
    at: float


@dataclass(frozen=True)
class AuditEntry:
    trace_id: str
    actor: str
    type: str
    payload: Mapping[str, Any]


@dataclass(frozen=True)
class AlertRow:
    id: int
    kind: str
    agent_id: str
    message: str
    trace_id: str
    at: float
    acknowledged_by: str | None = None
    acknowledged_at: float | None = None

    @property
    def open(self) -> bool:
        return self.acknowledged_at is None


@dataclass(frozen=True)
class NewAlert:
    kind: str
    agent_id: str
    message: str
    trace_id: str
    at: float


class TrustTables:
    def __init__(self, store: Store) -> None:
        self.store = store

    # --- writes ----------------------------------------------------------------------------
    async def save(self, standings: Sequence[Mapping[str, Any]], points: Sequence[ScorePoint] = (),
                   alerts: Sequence[NewAlert] = (), audit: Sequence[AuditEntry] = ()) -> list[int]:
        """Upserts standings, appends score points, alerts and audit events in one transaction;
        returns the new alerts' ids."""
        return await self.store.call(self.save_sync, standings, points, alerts, audit)

    def save_sync(self, standings, points=(), alerts=(), audit=()) -> list[int]:
        def write() -> list[int]:
            conn = self.store.db.conn
            for row in standings:
                conn.execute(f"INSERT OR REPLACE INTO trust ({', '.join(TRUST_COLUMNS)}) VALUES "
                             f"({', '.join('?' for _ in TRUST_COLUMNS)})", [row[c] for c in TRUST_COLUMNS])
            for p in points:
                conn.execute("INSERT INTO trust_history (agent_id, score, state, trace_id, why, at) "
                             "VALUES (?, ?, ?, ?, ?, ?)", (p.agent_id, p.score, p.state, p.trace_id, p.why, p.at))
            ids = []
            for a in alerts:
                cursor = conn.execute("INSERT INTO alerts (kind, agent_id, message, trace_id, at) VALUES (?, ?, ?, ?, ?)",
                                      (a.kind, a.agent_id, a.message, a.trace_id, a.at))
                ids.append(cursor.lastrowid)
            for entry in audit:
                self.store.append_audit(entry.trace_id, entry.actor, entry.type, entry.payload)
            return ids
        return self.store.transaction(write)

    async def acknowledge(self, alert_id: int, by: str) -> AlertRow:
        return await self.store.call(self.acknowledge_sync, alert_id, by)

    def acknowledge_sync(self, alert_id: int, by: str) -> AlertRow:
        def write() -> AlertRow:
            conn = self.store.db.conn
            row = conn.execute("SELECT * FROM alerts WHERE id = ?", [alert_id]).fetchone()
            if row is None:
                raise InputError(f"no alert #{alert_id}")
            if row[7] is None:
                now = self.store.clock()
                conn.execute("UPDATE alerts SET acknowledged_by = ?, acknowledged_at = ? WHERE id = ?",
                             (by, now, alert_id))
                self.store.append_audit(row[4], by, "alert.acknowledged", {"alert": alert_id, "kind": row[1],
                                                                           "agent": row[2]})
            return _alert(conn.execute("SELECT * FROM alerts WHERE id = ?", [alert_id]).fetchone())
        return self.store.transaction(write)

    # --- reads -----------------------------------------------------------------------------
    async def standings(self) -> list[dict[str, Any]]:
        return await self.store.call(self.standings_sync)

    def standings_sync(self) -> list[dict[str, Any]]:
        return [dict(r) for r in self.store.db.query(f"SELECT {', '.join(TRUST_COLUMNS)} FROM trust ORDER BY agent_id")]

    async def history(self, since: float = 0.0) -> list[ScorePoint]:
        return await self.store.call(self.history_sync, since)

    def history_sync(self, since: float = 0.0) -> list[ScorePoint]:
        rows = self.store.db.conn.execute("SELECT agent_id, score, state, trace_id, why, at FROM trust_history "
                                          "WHERE at >= ? ORDER BY at, id", [since]).fetchall()
        return [ScorePoint(*r) for r in rows]

    async def alerts(self, open_only: bool = False, limit: int = 200) -> list[AlertRow]:
        return await self.store.call(self.alerts_sync, open_only, limit)

    def alerts_sync(self, open_only: bool = False, limit: int = 200) -> list[AlertRow]:
        where = "WHERE acknowledged_at IS NULL " if open_only else ""
        rows = self.store.db.conn.execute(f"SELECT * FROM alerts {where}ORDER BY at DESC, id DESC LIMIT ?",
                                          [limit]).fetchall()
        return [_alert(r) for r in rows]


def _alert(row: Iterable[Any]) -> AlertRow:
    return AlertRow(*row)
