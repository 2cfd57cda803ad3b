"""The alerts and silences tables of the one SQLite file (their schema steps: engine.alerts.migrations).

Plain functions on the store's thread. Writes run inside the caller's transaction and append their
audit event there, so an acknowledgement or a silence is never on disk without the event that says
who did it and why (and the other way round).
"""
from __future__ import annotations

from typing import Any, Sequence

from ..errors import InputError
from ..store.db import Store
from .kinds import kind_of, severity_of
from .row import AlertRow, NewAlert
from .silences import Silence, SilenceRequest

ALERT_COLUMNS = ("id", "kind", "agent_id", "message", "trace_id", "at", "acknowledged_by", "acknowledged_at",
                 "severity", "ack_comment")
SILENCE_COLUMNS = ("id", "kind", "agent_id", "created_by", "comment", "created_at", "expires_at", "ended_at",
                   "ended_by")
_ALERTS = f"SELECT {', '.join(ALERT_COLUMNS)} FROM alerts"
_SILENCES = f"SELECT {', '.join(SILENCE_COLUMNS)} FROM silences"


# --- alerts ------------------------------------------------------------------------------------
def insert_alert(store: Store, alert: NewAlert) -> int:
    return store.insert(
        "INSERT INTO alerts (kind, agent_id, message, trace_id, at, severity) VALUES (?, ?, ?, ?, ?, ?)",
        (alert.kind, alert.agent_id, alert.message, alert.trace_id, alert.at, severity_of(alert.kind).value))


def get_alert(store: Store, alert_id: int) -> AlertRow | None:
    row = store.execute(f"{_ALERTS} WHERE id = ?", [alert_id]).fetchone()
    return _alert(row) if row is not None else None


def list_alerts(store: Store, open_only: bool = False, limit: int = 200) -> list[AlertRow]:
    where = "WHERE acknowledged_at IS NULL " if open_only else ""
    rows = store.execute(f"{_ALERTS} {where}ORDER BY at DESC, id DESC LIMIT ?", [limit]).fetchall()
    return [_alert(r) for r in rows]


def open_groups(store: Store) -> list[tuple[str, str, int]]:
    """(kind, agent_id, count) of unacknowledged alerts: muting depends on nothing else."""
    return store.execute("SELECT kind, agent_id, COUNT(*) FROM alerts WHERE acknowledged_at IS NULL "
                                 "GROUP BY kind, agent_id").fetchall()


def acknowledge(store: Store, alert_id: int, by: str, comment: str, now: float) -> AlertRow:
    """Inside a transaction. The first acknowledgement stands: a second one changes nothing."""
    alert = get_alert(store, alert_id)
    if alert is None:
        raise InputError(f"no alert #{alert_id}")
    if alert.open:
        store.execute("UPDATE alerts SET acknowledged_by = ?, acknowledged_at = ?, ack_comment = ? "
                              "WHERE id = ?", (by, now, comment, alert_id))
        store.append_audit(alert.trace_id, by, "alert.acknowledged",
                           {"alert": alert_id, "kind": alert.kind, "agent": alert.agent_id, "comment": comment})
    return get_alert(store, alert_id)


def _alert(row: Sequence[Any]) -> AlertRow:
    values = dict(zip(ALERT_COLUMNS, row))
    return AlertRow(**values)


# --- silences ----------------------------------------------------------------------------------
def insert_silence(store: Store, request: SilenceRequest, now: float) -> Silence:
    kind = request.kind.value if request.kind else None
    silence_id = store.insert(
        "INSERT INTO silences (kind, agent_id, created_by, comment, created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?)",
        (kind, request.agent_id, request.created_by, request.comment, now, now + request.duration_s))
    silence = get_silence(store, silence_id)
    store.append_audit("", request.created_by, "alert.silenced",
                       {"silence": silence.id, "kind": kind, "agent": request.agent_id, "comment": request.comment,
                        "duration_s": request.duration_s, "expires_at": silence.expires_at})
    return silence


def get_silence(store: Store, silence_id: int) -> Silence | None:
    row = store.execute(f"{_SILENCES} WHERE id = ?", [silence_id]).fetchone()
    return _silence(row) if row is not None else None


def list_silences(store: Store) -> list[Silence]:
    """Every silence, newest first."""
    rows = store.execute(f"{_SILENCES} ORDER BY created_at DESC, id DESC").fetchall()
    return [s for s in map(_silence, rows) if s is not None]


def end_silence(store: Store, silence_id: int, by: str, now: float) -> Silence:
    """Inside a transaction. Only an active silence can be ended; the end is audited."""
    silence = get_silence(store, silence_id)
    if silence is None:
        raise InputError(f"no silence #{silence_id}")
    if silence.ended_at is not None and silence.ended_at <= now:
        raise InputError(f"silence #{silence_id} was already ended by {silence.ended_by}")
    if silence.expires_at <= now:
        raise InputError(f"silence #{silence_id} has already expired")
    if silence.created_at > now:
        raise InputError(f"silence #{silence_id} has not started yet")
    store.execute("UPDATE silences SET ended_at = ?, ended_by = ? WHERE id = ?", (now, by, silence_id))
    store.append_audit("", by, "alert.silence_ended",
                       {"silence": silence_id, "kind": silence.kind.value if silence.kind else None,
                        "agent": silence.agent_id, "expires_at": silence.expires_at})
    return get_silence(store, silence_id)


def _silence(row: Sequence[Any]) -> Silence | None:
    """None for a silence of a kind this version does not know (only a newer Quorum could write one): it
    could mute none of the alerts this version raises, so it is left out rather than misread."""
    values = dict(zip(SILENCE_COLUMNS, row))
    if values["kind"] is not None:
        values["kind"] = kind_of(values["kind"])
        if values["kind"] is None:
            return None
    return Silence(**values)
