"""What the Gateway panel shows: one row per message the thought-virus gateway blocked, sanitised or
escalated, whether it arrived live (a GatewayFlag of a GatewayFlagged event) or was read from the store
(a DecisionRow). Both become a GatewayRow; the model keeps them newest first, one row per message and
action, so a stored row and the live flag it was written from do not show twice.

Every field but the numbers comes from an agent or a document (or the operator's question): cells show
it as one line of printable characters, the details pane spells it out with hidden characters named
(`visible`), and tooltips are escaped. Nothing is ever rendered as rich text or a link.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Iterable

from PySide6.QtCore import QModelIndex, QSortFilterProxyModel
from PySide6.QtGui import QColor

from engine import DecisionRow, GatewayFlag

from .. import style
from ..table_model import RIGHT, Column, RecordTableModel
from ..untrusted import cell, visible
from .approvals import when_text

MAX_ROWS = 1000               # live rows the panel keeps; the oldest drop off the bottom
CELL_CHARS = 160              # a cell's text is cut here (the details pane has it whole)

# action -> (label, colour, what it means)
ACTIONS = {
    "block": ("blocked", style.tones().bad, "Stopped: the message never reached its target. Audited, and counted against "
                                    "the agent that carried it."),
    "escalate": ("escalated", style.tones().warn, "Held for a person: it passes only after an operator approves "
                                           "(Approvals tab)."),
    "sanitise": ("sanitised", style.tones().info, "Passed with hidden characters and markup removed."),
}
ACTION_ORDER = ("block", "escalate", "sanitise")


def action_label(action: str) -> str:
    return ACTIONS.get(action, (action, style.tones().muted, ""))[0]


def action_colour(action: str) -> QColor:
    return ACTIONS.get(action, ("", style.tones().muted, ""))[1]


def action_meaning(action: str) -> str:
    return ACTIONS.get(action, ("", style.tones().muted, ""))[2]


@dataclass(frozen=True)
class GatewayRow:
    trace_id: str                # the message's own trace id
    parent_trace_id: str         # the question's ("" for the question itself)
    source: str                  # the agent (or operator) that carried it
    target: str
    kind: str                    # MessageKind value: passage, generation, stage_output, question, ...
    trust: str                   # TrustLevel value
    channel: str
    action: str                  # Action value: block, escalate, sanitise
    score: float
    evidence: tuple[str, ...]
    excerpt: str
    at: float
    item: str = ""               # a chunk id, a memory key, a tool name ("" when unknown)
    stored_id: int | None = None     # the gateway_decisions row, when read from the store

    @property
    def key(self) -> tuple[str, str]:
        return (self.trace_id, self.action)

    @property
    def question_trace_id(self) -> str:
        """The trace to open for this message: its question's, or its own when it is the question."""
        return self.parent_trace_id or self.trace_id

    @property
    def first_evidence(self) -> str:
        return self.evidence[0] if self.evidence else ""

    @classmethod
    def of_flag(cls, flag: GatewayFlag) -> "GatewayRow":
        return cls(flag.trace_id, flag.parent_trace_id, flag.source, flag.target, flag.kind,
                   getattr(flag.trust, "value", str(flag.trust)), flag.channel,
                   getattr(flag.action, "value", str(flag.action)), float(flag.score), tuple(flag.evidence),
                   flag.excerpt, flag.at, flag.item)

    @classmethod
    def of_decision(cls, row: DecisionRow) -> "GatewayRow":
        return cls(row.trace_id, row.parent_trace_id, row.source, row.target, row.kind, row.trust, row.channel,
                   row.action, float(row.score), tuple(row.evidence), row.excerpt, row.at, row.item, row.id)


def row_order(row: GatewayRow) -> tuple:
    return (-row.at, row.trace_id)


def details_text(row: GatewayRow) -> str:
    """The selected message spelled out, for a plain-text pane."""
    item = f" {row.item}" if row.item else ""
    lines = [f"{action_label(row.action).upper()} · {row.kind}{item} · score {row.score:.2f} · carried by "
             f"{row.source} → {row.target} · trust {row.trust} · {row.channel} channel · {when_text(row.at)}",
             f"Message {row.trace_id}" + (f" · question {row.parent_trace_id}" if row.parent_trace_id else ""),
             f"Evidence ({len(row.evidence)}):"]
    lines += [f"  • {line}" for line in row.evidence] or ["  (none recorded)"]
    lines += ["Excerpt (the start and, for a long message, the end, as the gateway saw it):", row.excerpt]
    return visible("\n".join(lines))


GATEWAY_COLUMNS: tuple[Column[GatewayRow], ...] = (
    Column("Time", lambda r: when_text(r.at), align=RIGHT),
    Column("Action", lambda r: action_label(r.action), foreground=lambda r: action_colour(r.action),
           bold=lambda r: True, tooltip=lambda r: action_meaning(r.action)),
    Column("Carrier", lambda r: cell(r.source, 60), bold=lambda r: True,
           tooltip=lambda r: f"{r.source} → {r.target}",
           header_tooltip="The agent (or operator) that carried the message"),
    Column("Kind", lambda r: r.kind.replace("_", " "),
           tooltip=lambda r: f"{r.kind} {r.item}".strip()),
    Column("Trust", lambda r: r.trust, header_tooltip="The message's trust level: where it came from, "
                                                      "never what it says about itself"),
    Column("Score", lambda r: f"{r.score:.2f}", align=RIGHT, header_tooltip="Combined injection score, 0 to 1"),
    Column("Evidence", lambda r: cell(r.first_evidence, CELL_CHARS), tooltip=lambda r: "\n".join(r.evidence),
           header_tooltip="The first finding (the details below list them all)"),
    Column("Excerpt", lambda r: cell(r.excerpt, CELL_CHARS), tooltip=lambda r: r.excerpt),
)
(TIME_COLUMN, ACTION_COLUMN, CARRIER_COLUMN, KIND_COLUMN, TRUST_COLUMN, SCORE_COLUMN, EVIDENCE_COLUMN,
 EXCERPT_COLUMN) = range(len(GATEWAY_COLUMNS))


class GatewayModel(RecordTableModel[GatewayRow]):
    """Rows keyed by (message, action), newest first; at most MAX_ROWS."""

    def __init__(self, parent=None) -> None:
        super().__init__(GATEWAY_COLUMNS, parent)

    def add_rows(self, rows: Iterable[GatewayRow]) -> None:
        """Merges rows in, live or stored, each inserted at its place (so views keep their selection): a
        message already shown keeps its row, which takes the stored id or the item it lacked."""
        for row in rows:
            at = self.row_of(row.key)
            if at >= 0:
                known = self.record(at)
                merged = replace(known, item=known.item or row.item,
                                 stored_id=known.stored_id if known.stored_id is not None else row.stored_id)
                if merged != known:
                    self.replace_record(at, merged)
                continue
            order = row_order(row)
            at = next((r for r, known in enumerate(self.records()) if order < row_order(known)), self.rowCount())
            if at >= MAX_ROWS:
                continue
            self.insert_record(at, row)
            if self.rowCount() > MAX_ROWS:
                self.remove_record(self.rowCount() - 1)

    def row_of(self, key: tuple[str, str]) -> int:
        return next((at for at, row in enumerate(self.records()) if row.key == key), -1)

    def count(self, action: str) -> int:
        return sum(row.action == action for row in self.records())


class GatewayFilter(QSortFilterProxyModel):
    """Rows of one action (or all), whose carrier, kind, evidence or excerpt contains the search text."""

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self._action = ""
        self._text = ""

    def set_action(self, action: str) -> None:
        self.beginFilterChange()
        self._action = action
        self.endFilterChange(QSortFilterProxyModel.Direction.Rows)

    def set_text(self, text: str) -> None:
        self.beginFilterChange()
        self._text = text.strip().casefold()
        self.endFilterChange(QSortFilterProxyModel.Direction.Rows)

    def filterAcceptsRow(self, source_row: int, source_parent: QModelIndex) -> bool:
        model = self.sourceModel()
        if not isinstance(model, GatewayModel) or source_row >= model.rowCount():
            return True
        row = model.record(source_row)
        if self._action and row.action != self._action:
            return False
        if self._text:
            haystack = " ".join((row.source, row.target, row.kind, row.item, row.trust, *row.evidence, row.excerpt,
                                 row.trace_id, row.parent_trace_id)).casefold()
            return self._text in haystack
        return True
