"""Hash-chained audit events: each row's hash covers its content and the previous row's hash,
so editing, deleting or reordering any row breaks the chain from that row on."""
from __future__ import annotations

import hashlib
import json
from typing import Any, Iterable, Mapping

from ..errors import AuditChainBroken

GENESIS = "0" * 64


def event_hash(prev_hash: str, seq: int, trace_id: str, actor: str, type_: str, payload_json: str, at: float) -> str:
    body = json.dumps([seq, trace_id, actor, type_, payload_json, repr(float(at))], separators=(",", ":"))
    return hashlib.sha256((prev_hash + body).encode("utf-8")).hexdigest()


def canonical(payload: Mapping[str, Any]) -> str:
    return json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def verify_chain(rows: Iterable[Mapping[str, Any]]) -> int:
    """Checks rows in seq order; returns how many were checked, raises AuditChainBroken."""
    prev, expected_seq, count = GENESIS, 1, 0
    for row in rows:
        seq = row["seq"]
        if seq != expected_seq:
            raise AuditChainBroken(seq, f"expected event {expected_seq} (a row is missing or reordered)")
        if row["prev_hash"] != prev:
            raise AuditChainBroken(seq, "prev_hash does not match the previous event")
        recomputed = event_hash(prev, seq, row["trace_id"], row["actor"], row["type"], row["payload"], row["at"])
        if recomputed != row["hash"]:
            raise AuditChainBroken(seq, "content does not match its hash (edited)")
        prev, expected_seq, count = row["hash"], seq + 1, count + 1
    return count
