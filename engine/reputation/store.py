"""The reputation book's tables in the one SQLite file: standing, score history and alerts.

The alerts table is shared with the alert book (engine.alerts): its SQL lives in engine.alerts.table.

Every write runs on the store's thread inside one transaction with its audit events, so a score
change is never on disk without the event that explains it (and the other way round).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from ..alerts import table as alert_table
from ..alerts.book import AlertBook
from ..alerts.row import AlertRow, NewAlert
from ..store.db import Store
from .identity import BookNames

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


# One agent's standing, inserted or replaced whole (ON CONFLICT: both stores' upsert).
_UPSERT_TRUST = (f"INSERT INTO trust ({', '.join(TRUST_COLUMNS)}) VALUES ({', '.join('?' for _ in TRUST_COLUMNS)}) "
                 f"ON CONFLICT (agent_id) DO UPDATE SET "
                 f"{', '.join(f'{c} = excluded.{c}' for c in TRUST_COLUMNS if c != 'agent_id')}")


class ReputationTables:
    def __init__(self, store: Store) -> None:
        self.store = store
        self.names = BookNames()        # how rows name agents: by id, or on a team store by identity (identity.py)

    # --- writes ----------------------------------------------------------------------------
    async def save(self, standings: Sequence[Mapping[str, Any]], points: Sequence[ScorePoint] = (),
                   alerts: Sequence[NewAlert] = (), audit: Sequence[AuditEntry] = ()) -> list[int]:
        """Upserts standings, appends score points, alerts and audit events in one transaction;
        returns the new alerts' ids."""
        return await self.store.call(self.save_sync, standings, points, alerts, audit)

    def save_sync(self, standings, points=(), alerts=(), audit=()) -> list[int]:
        def write() -> list[int]:
            for row in standings:
                self.store.execute(_UPSERT_TRUST, [self.names.stored(row[c]) if c == "agent_id" else row[c]
                                                   for c in TRUST_COLUMNS])
            for p in points:
                self.store.execute("INSERT INTO trust_history (agent_id, score, state, trace_id, why, at) "
                                   "VALUES (?, ?, ?, ?, ?, ?)",
                                   (self.names.stored(p.agent_id), p.score, p.state, p.trace_id, p.why, p.at))
            ids = [alert_table.insert_alert(self.store, a) for a in alerts]
            for entry in audit:
                self.store.append_audit(entry.trace_id, entry.actor, entry.type, entry.payload)
            return ids
        return self.store.transaction(write)

    async def acknowledge(self, alert_id: int, by: str, comment: str = "") -> AlertRow:
        return await self.store.call(self.acknowledge_sync, alert_id, by, comment)

    def acknowledge_sync(self, alert_id: int, by: str, comment: str = "") -> AlertRow:
        """The alert book's acknowledgement (engine.alerts.book), audited with its comment."""
        return AlertBook(self.store).acknowledge_sync(alert_id, by, comment)

    # --- reads -----------------------------------------------------------------------------
    async def standings(self) -> list[dict[str, Any]]:
        return await self.store.call(self.standings_sync)

    def standings_sync(self) -> list[dict[str, Any]]:
        rows = self.store.query(f"SELECT {', '.join(TRUST_COLUMNS)} FROM trust ORDER BY agent_id")
        return [row | {"agent_id": agent_id} for row in rows if (agent_id := self.names.local(row["agent_id"]))]

    async def history(self, since: float = 0.0) -> list[ScorePoint]:
        return await self.store.call(self.history_sync, since)

    def history_sync(self, since: float = 0.0) -> list[ScorePoint]:
        rows = self.store.execute("SELECT agent_id, score, state, trace_id, why, at FROM trust_history "
                                          "WHERE at >= ? ORDER BY at, id", [since]).fetchall()
        return [ScorePoint(agent_id, *r[1:]) for r in rows if (agent_id := self.names.local(r[0]))]

    async def alerts(self, open_only: bool = False, limit: int = 200) -> list[AlertRow]:
        return await self.store.call(self.alerts_sync, open_only, limit)

    def alerts_sync(self, open_only: bool = False, limit: int = 200) -> list[AlertRow]:
        """Newest first, as stored (not marked muted: the alert book does that)."""
        return alert_table.list_alerts(self.store, open_only, limit)
