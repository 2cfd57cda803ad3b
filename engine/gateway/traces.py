"""The gateway's rows in the store: every message of a trace (trace_events) and every decision that
stopped or changed a message (gateway_decisions, with an audit event each), and the reads the trace
view and the Gateway panel make. Writes run on the store's thread inside the caller's transaction."""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from ..store.db import Store
from .report import GatewayReport

AUDIT_TYPES = {"block": "gateway.blocked", "sanitise": "gateway.sanitised", "escalate": "gateway.escalated"}


def write_report(store: Store, report: GatewayReport) -> None:
    """Inside store.transaction(): the trace's events and flags, and an audit event per flag."""
    store.executemany(
        "INSERT INTO trace_events (trace_id, parent_trace_id, kind, source, target, trust, summary, data, at) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [(e.trace_id, e.parent_trace_id, e.kind.value, e.source, e.target, e.trust, e.summary,
          json.dumps(dict(e.data), ensure_ascii=False, default=str), e.at) for e in report.events])
    for f in report.flags:
        store.execute(
            "INSERT INTO gateway_decisions (trace_id, parent_trace_id, source, target, kind, trust, channel, action, "
            "score, evidence, excerpt, at, item) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (f.trace_id, f.parent_trace_id, f.source, f.target, f.kind, f.trust.value, f.channel, f.action.value,
             f.score, json.dumps(list(f.evidence), ensure_ascii=False), f.excerpt, f.at, f.item))
        store.append_audit(f.parent_trace_id or f.trace_id, f.source, AUDIT_TYPES[f.action.value],
                           {"message": f.trace_id, "kind": f.kind, "item": f.item, "target": f.target,
                            "trust": f.trust.value, "channel": f.channel, "score": f.score,
                            "evidence": list(f.evidence), "excerpt": f.excerpt})


@dataclass(frozen=True)
class TraceLine:
    """One line of `main.py trace` and the console's trace view."""
    depth: int
    trace_id: str
    parent_trace_id: str
    kind: str
    source: str
    target: str
    trust: str
    summary: str
    at: float
    data: dict[str, Any]


@dataclass(frozen=True)
class DecisionRow:
    id: int
    trace_id: str
    parent_trace_id: str
    source: str
    target: str
    kind: str
    trust: str
    channel: str
    action: str
    score: float
    evidence: tuple[str, ...]
    excerpt: str
    at: float
    item: str = ""               # what it was: a chunk id, a memory key, a stage


_EVENT_COLUMNS = "trace_id, parent_trace_id, kind, source, target, trust, summary, at, data"


def _line(depth: int, row) -> TraceLine:
    return TraceLine(depth, *row[:8], json.loads(row[8]))


def _walk(store: Store, parent: str, depth: int, seen: set[str], out: list[TraceLine]) -> None:
    """The messages whose parent is `parent`, each followed by its own descendants."""
    rows = store.execute(f"SELECT {_EVENT_COLUMNS} FROM trace_events WHERE parent_trace_id = ? ORDER BY at, id",
                        (parent,)).fetchall()
    for row in rows:
        out.append(_line(depth, row))
        if row[0] not in seen:
            seen.add(row[0])
            _walk(store, row[0], depth + 1, seen, out)


def trace_sync(store: Store, trace_id: str) -> tuple[TraceLine, ...]:
    """Every event of a trace and of its descendants (messages whose parent it is), in time order,
    each with its depth under the root. Audit events of the trace come too, as lines of kind 'audit'."""
    out = [_line(0, row) for row in store.execute(
        f"SELECT {_EVENT_COLUMNS} FROM trace_events WHERE trace_id = ? ORDER BY at, id", (trace_id,))]
    _walk(store, trace_id, 1, {trace_id}, out)
    for seq, actor, type_, payload, at in store.execute(
            "SELECT seq, actor, type, payload, at FROM audit WHERE trace_id = ? ORDER BY seq", (trace_id,)):
        out.append(TraceLine(1, trace_id, "", "audit", actor, "", "", f"{type_} (audit #{seq})", at,
                             json.loads(payload)))
    question = store.execute("SELECT question, verdict, answer, asked_at FROM questions WHERE trace_id = ?",
                            (trace_id,)).fetchone()
    if question:
        out.append(TraceLine(0, trace_id, "", "question", "operator", "engine", "USER",
                             f"{question[0]} → {question[1]}: {question[2]}", question[3], {}))
    parent = store.execute("SELECT parent_trace_id FROM trace_events WHERE trace_id = ? AND parent_trace_id != '' "
                          "LIMIT 1", (trace_id,)).fetchone()
    lines = sorted(out, key=lambda line: line.at)   # stable: a message stays before its descendants
    if parent:   # a message's trace names its parent first, so the chain can be walked up
        lines.insert(0, TraceLine(0, parent[0], "", "parent", "", "", "", f"part of trace {parent[0]}", 0.0, {}))
    return tuple(lines)


def recent_decisions_sync(store: Store, limit: int = 200, action: str | None = None) -> tuple[DecisionRow, ...]:
    sql = ("SELECT id, trace_id, parent_trace_id, source, target, kind, trust, channel, action, score, evidence, "
           "excerpt, at, item FROM gateway_decisions")
    args: list[Any] = []
    if action:
        sql += " WHERE action = ?"
        args.append(action)
    sql += " ORDER BY at DESC, id DESC LIMIT ?"
    args.append(limit)
    return tuple(DecisionRow(*row[:10], tuple(json.loads(row[10])), row[11], row[12], row[13])
                 for row in store.execute(sql, args))
