"""What the Audit panel shows: one row per event of the hash-chained audit trail (engine AuditRow), the
text of its cells, the selected event spelled out, and what the filter bar's dropdowns offer.

Actors, types, trace ids and payloads may carry what an agent, a document or an operator wrote: cells are
one line of printable characters, the details pane is plain text with hidden characters named
(`gateway_model.visible`), tooltips are escaped. Nothing is rendered as rich text or a link.
"""
from __future__ import annotations

import datetime
import json
import math
from typing import Any, Iterable, Mapping

from PySide6.QtGui import QColor

from engine import AuditRow

from .. import style
from ..table_model import RIGHT, Column, RecordTableModel
from ..untrusted import cell, visible

SUMMARY_CHARS = 240           # a payload summary is cut here (the details pane has it whole)
TRACE_CHARS = 8              # a trace id cell shows its start (its tooltip and the details have it whole)
ANY = ""                      # a dropdown's "any": AuditFilter reads "" as no filter

# The last word of an event type says how it went; the type column takes that word's tone.
_TONE_OF_OUTCOME = {
    "blocked": "bad", "rejected": "bad", "quarantined": "bad", "fired": "bad", "down": "bad", "refused": "bad",
    "escalated": "warn", "sanitised": "warn", "behaviour_shift": "warn", "raised": "warn", "enqueued": "warn",
    "approved": "good", "released": "good", "up": "good", "acknowledged": "good", "probation_ended": "good",
}


def when_text(at: float) -> str:
    """Local date and time to the second; "?" for a time a tampered row no longer has."""
    try:
        return datetime.datetime.fromtimestamp(at).strftime("%Y-%m-%d %H:%M:%S")
    except (ValueError, OverflowError, OSError):
        return "?"


def iso_text(at: float) -> str:
    if not math.isfinite(at):
        return "unreadable time"
    moment = datetime.datetime.fromtimestamp(at, datetime.timezone.utc)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def short_trace(trace_id: str) -> str:
    text = cell(trace_id, 200)
    return text if len(text) <= TRACE_CHARS else text[:TRACE_CHARS] + "…"


def _value_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, list) and all(not isinstance(v, (dict, list)) for v in value):
        return ", ".join(_value_text(v) for v in value)
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)


def payload_summary(payload: Mapping[str, Any]) -> str:
    """One line: "key: value · key: value", empty values left out, cut at SUMMARY_CHARS."""
    parts = [f"{key}: {_value_text(value)}" for key, value in payload.items()
             if value is not None and value != "" and value != [] and value != {}]
    return cell(" · ".join(parts), SUMMARY_CHARS)


def pretty_payload(payload: Mapping[str, Any]) -> str:
    return json.dumps(payload, indent=2, ensure_ascii=False, default=str)


def details_text(row: AuditRow) -> str:
    """The selected event spelled out, for a plain-text pane."""
    # Each hash on a line of its own: 64 characters fit the pane's width unbroken, ready to compare.
    lines = [f"Event {row.seq} · {row.type} · by {row.actor}",
             f"At     {when_text(row.at)} local ({iso_text(row.at)})",
             f"Trace  {row.trace_id or '(none: not part of a question)'}",
             "",
             "Payload:",
             pretty_payload(row.payload),
             "",
             "Hash:",
             row.hash,
             "Hash of the event before:",
             row.prev_hash]
    return visible("\n".join(lines))


def type_tone(type_: str) -> QColor | None:
    name = _TONE_OF_OUTCOME.get(type_.rsplit(".", 1)[-1])
    return style.tone(name) if name else None


def kind_choices(kinds: Iterable[str]) -> list[tuple[str, str]]:
    """(label, filter value) for the kind dropdown: each family of types ("review.") before its members,
    then the types without a family; a family matches all of its members."""
    families: dict[str, list[str]] = {}
    loose: list[str] = []
    for kind in sorted(set(kinds)):
        head, dot, rest = kind.partition(".")
        if head and dot and rest:
            families.setdefault(head + ".", []).append(kind)
        else:
            loose.append(kind)
    choices: list[tuple[str, str]] = []
    for family, members in sorted(families.items()):
        choices.append((f"{family}*  (all {len(members)})", family))
        choices += [(f"    {cell(kind, 60)}", kind) for kind in members]
    choices += [(cell(kind, 60), kind) for kind in loose]
    return choices


AUDIT_COLUMNS: tuple[Column[AuditRow], ...] = (
    Column("Seq", lambda r: str(r.seq), align=RIGHT, header_tooltip="Position in the hash chain"),
    Column("Time", lambda r: when_text(r.at), align=RIGHT),
    Column("Actor", lambda r: cell(r.actor, 24), tooltip=lambda r: r.actor,
           header_tooltip="Who wrote the event: an agent, an operator, the engine, the gateway, …"),
    Column("Type", lambda r: cell(r.type, 32), foreground=lambda r: type_tone(r.type),
           tooltip=lambda r: r.type),
    Column("Trace", lambda r: short_trace(r.trace_id), tooltip=lambda r: r.trace_id,
           header_tooltip="The question or message the event belongs to (Enter or a double-click opens it)"),
    Column("Payload", lambda r: payload_summary(r.payload),
           tooltip=lambda r: cell(r.payload_json, 2000),
           header_tooltip="What the event recorded, in one line (the pane beside has it whole)"),
)
SEQ_COLUMN, TIME_COLUMN, ACTOR_COLUMN, TYPE_COLUMN, TRACE_COLUMN, PAYLOAD_COLUMN = range(len(AUDIT_COLUMNS))


class AuditModel(RecordTableModel[AuditRow]):
    """Events newest first, as the store returned them; the event where the chain broke is tinted."""

    def __init__(self, parent=None) -> None:
        super().__init__(AUDIT_COLUMNS, parent, row_background=self._background)
        self._broken_at: int | None = None

    def _background(self, row: AuditRow) -> QColor | None:
        return style.tones().bad_tint if row.seq == self._broken_at else None

    def set_broken_at(self, seq: int | None) -> None:
        if seq != self._broken_at:
            self._broken_at = seq
            if self.rowCount():
                self.dataChanged.emit(self.index(0, 0), self.index(self.rowCount() - 1, self.columnCount() - 1))

    def row_of(self, seq: int) -> int:
        return next((at for at, row in enumerate(self.records()) if row.seq == seq), -1)
