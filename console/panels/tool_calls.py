"""Tools panel: agents' tool calls as the broker recorded them, and the operator's decision on the ones that wait.

The table lists the calls waiting for an operator first (oldest first: a queue), then every other call,
newest first: when, which agent, which tool, its status (refused and failed red, pending amber, done and
approved green, rejected grey), why the broker decided so, and its parameters on one line. The selected call
is spelled out below (parameters as indented JSON, plain text) beside the outbox: what approved e-mails
"sent" (the product never sends mail; send_email writes a row of the outbox table).

"Approve…" and "Reject…" need a reason; an approval runs the call (the matrix is checked again), a rejection
drops it, and both are final and audited under the operator's name. "Permissions…" shows the permission
matrix read-only (it is a config file: config/permissions.toml). The tab title counts the pending calls.

Parameters, results and reasons quote what an agent asked for: cells are one line of printable characters,
the details pane is plain text with hidden characters named, tooltips are escaped. Nothing is rendered as
rich text or a link.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Iterable

from PySide6.QtCore import QModelIndex, Qt, Signal
from PySide6.QtGui import QColor
from PySide6.QtWidgets import (QDialog, QDialogButtonBox, QHeaderView, QPushButton, QVBoxLayout,
                               QWidget)

from engine import OUTWARD_TOOLS, OutboxMail, SEND_EMAIL, ToolCall, ToolCallResult, ToolStatus, expand_targets

from .. import style
from ..layout import list_table, read_only_table, splitter
from ..service import EngineService, PermissionsView, ToolCallsState
from ..table_model import RIGHT, Column, RecordTableModel
from ..untrusted import PlainPane, cell, visible
from .approvals import when_text
from .base import EnginePanel
from .memory import ReasonDialog, hbox, say, titled
from .memory_model import full_time
from .trust_dialog import plain_label

PARAMS_CHARS = 200
WHY_WIDTH = 380               # pixels the why column starts at at most

# status -> (colour, what it means)
STATUSES = {
    ToolStatus.REFUSED: ("bad", "Refused: the matrix, the parameters or the gateway said no; nothing ran."),
    ToolStatus.FAILED: ("bad", "Allowed, but running it failed; nothing was done."),
    ToolStatus.PENDING: ("warn", "Waits for an operator: an outward action of an agent in approval mode, or "
                                      "held by the gateway."),
    ToolStatus.DONE: ("good", "Ran."),
    ToolStatus.APPROVED: ("good", "An operator approved it, and it ran."),
    ToolStatus.REJECTED: ("muted", "An operator rejected it; nothing ran."),
}


SUMMARY_ORDER = (ToolStatus.PENDING, ToolStatus.APPROVED, ToolStatus.DONE, ToolStatus.REJECTED, ToolStatus.REFUSED,
                 ToolStatus.FAILED)


def status_colour(status: ToolStatus) -> QColor:
    return style.tone(STATUSES[status][0])


def params_text(params: Any, indent: int | None = None) -> str:
    """Parameters as JSON text (plain text: never markup)."""
    return json.dumps(params, ensure_ascii=False, sort_keys=True, indent=indent, default=str)


def call_order(call: ToolCall) -> tuple:
    """Pending first, oldest first (a queue); then the rest, newest first."""
    if call.status is ToolStatus.PENDING:
        return (0, call.at, call.id)
    return (1, -call.at, -call.id)


def decision_text(call: ToolCall) -> str:
    if call.status is ToolStatus.PENDING:
        return "waiting for an operator"
    if call.decided_by:
        return f"{call.status.value} by {call.decided_by} at {full_time(call.decided_at)}: {call.reason}"
    return ""


def call_details(call: ToolCall) -> str:
    """One call spelled out, for a plain-text pane."""
    lines = [f"#{call.id} · {call.tool} asked by {call.agent_id} · {call.status.value.upper()} · {full_time(call.at)}",
             f"Trace {call.trace_id}",
             f"Why: {call.why}"]
    decision = decision_text(call)
    if decision:
        lines.append(f"Decision: {decision}")
    lines += ["", "Parameters (as the agent asked, screened):", params_text(call.params, indent=2)]
    if call.result:
        lines += ["", "Result:", call.result]
    return visible("\n".join(lines))


TOOL_COLUMNS: tuple[Column[ToolCall], ...] = (
    Column("#", lambda c: str(c.id), align=RIGHT, foreground=lambda c: style.tones().muted),
    Column("Time", lambda c: when_text(c.at), align=RIGHT, tooltip=lambda c: full_time(c.at)),
    Column("Agent", lambda c: cell(c.agent_id, 40), bold=lambda c: True, tooltip=lambda c: c.agent_id),
    Column("Tool", lambda c: cell(c.tool, 40),
           tooltip=lambda c: c.tool + (" — acts outside the system" if c.tool in OUTWARD_TOOLS else "")),
    Column("Status", lambda c: c.status.value, foreground=lambda c: status_colour(c.status), bold=lambda c: True,
           tooltip=lambda c: decision_text(c) or STATUSES[c.status][1]),
    Column("Why", lambda c: cell(c.why, PARAMS_CHARS), tooltip=lambda c: c.why),
    Column("Params", lambda c: cell(params_text(c.params), PARAMS_CHARS),
           tooltip=lambda c: params_text(c.params, indent=2)),
)
ID_COLUMN, TIME_COLUMN, AGENT_COLUMN, TOOL_COLUMN, STATUS_COLUMN, WHY_COLUMN, PARAMS_COLUMN = range(len(TOOL_COLUMNS))


class ToolCallsModel(RecordTableModel[ToolCall]):
    def __init__(self, parent=None) -> None:
        super().__init__(TOOL_COLUMNS, parent,
                         row_background=lambda c: style.tones().warn_tint if c.status is ToolStatus.PENDING else None)

    def set_calls(self, pending: Iterable[ToolCall], calls: Iterable[ToolCall]) -> None:
        merged = {c.id: c for c in calls}
        merged.update({c.id: c for c in pending})     # every pending call, even beyond the latest shown
        self.set_records(sorted(merged.values(), key=call_order))

    def row_of(self, call_id: int) -> int:
        return next((at for at, c in enumerate(self.records()) if c.id == call_id), -1)

    def count(self, status: ToolStatus) -> int:
        return sum(c.status is status for c in self.records())


OUTBOX_COLUMNS: tuple[Column[OutboxMail], ...] = (
    Column("Time", lambda m: when_text(m.at), align=RIGHT, tooltip=lambda m: full_time(m.at)),
    Column("To", lambda m: cell(m.recipient, 80), tooltip=lambda m: m.recipient),
    Column("Subject", lambda m: cell(m.subject, 120), tooltip=lambda m: m.subject),
    Column("Body", lambda m: cell(m.body, 160), tooltip=lambda m: m.body),
    Column("Call", lambda m: f"#{m.tool_call_id}", align=RIGHT, foreground=lambda m: style.tones().muted,
           header_tooltip="The tool call whose approval wrote it"),
)


class OutboxModel(RecordTableModel[OutboxMail]):
    def __init__(self, parent=None) -> None:
        super().__init__(OUTBOX_COLUMNS, parent)


# --- the permission matrix ------------------------------------------------------------------------
@dataclass(frozen=True)
class PermissionRow:
    agent: str
    role: str
    tools: str
    memory: str
    approval: bool
    can_send_to: str
    sends_to: str          # what role groups stand for in this fleet


def permission_rows(view: PermissionsView) -> list[PermissionRow]:
    rows = []
    for agent in view.matrix.agents:
        role = view.roles.get(agent.agent_id)
        targets = ", ".join(agent.can_send_to) or "—"
        expanded = ", ".join(expand_targets(agent.can_send_to, view.roles)) or "—"
        rows.append(PermissionRow(agent.agent_id, role.value if role is not None else "not in the fleet",
                                  ", ".join(agent.allowed_tools) or "—", agent.memory_access.value,
                                  agent.approval_mode, targets, expanded))
    return rows


def _yes_no(flag: bool) -> str:
    return "yes" if flag else "no"


PERMISSION_COLUMNS: tuple[Column[PermissionRow], ...] = (
    Column("Agent", lambda r: r.agent, bold=lambda r: True),
    Column("Role", lambda r: r.role, foreground=lambda r: style.tones().bad if r.role == "not in the fleet" else None),
    Column("Tools", lambda r: r.tools, foreground=lambda r: style.tones().muted if r.tools == "—" else None,
           header_tooltip="allowed_tools: what it may ask for (messages are governed by can_send_to)"),
    Column("Memory", lambda r: r.memory, foreground=lambda r: style.tones().muted if r.memory == "none" else None,
           header_tooltip="own: its own namespace only (there is no shared pool); none: no memory"),
    Column("Approval mode", lambda r: _yes_no(r.approval),
           foreground=lambda r: style.tones().good if r.approval else style.tones().warn,
           header_tooltip="yes: its outward actions (send_email) wait for an operator"),
    Column("Can send to", lambda r: r.can_send_to, tooltip=lambda r: f"in this fleet: {r.sends_to}",
           header_tooltip="Agent ids and role groups it may message (hover a cell: the agents they stand for)"),
)


def policies_text(view: PermissionsView) -> str:
    t, x, matrix = view.matrix.tools, view.matrix.external_input, view.matrix
    missing = [a for a in view.roles if matrix.get(a) is None]
    lines = [f"Source: {matrix.source} — default deny: an agent, tool or target not listed is refused.",
             f"send_email: domains {', '.join(t.send_email.allowed_domains) or 'none'}; outward (written to the "
             f"outbox, never sent). sql_query: read-only, tables {', '.join(t.sql_query.tables) or 'none'}. "
             f"memory: own namespace only. External input: trust {x.trust.value}, "
             f"sanitise {'on' if x.sanitise else 'off'}, cut at {x.max_length} characters."]
    if missing:
        lines.append(f"Not in the matrix (may do nothing): {', '.join(missing)}")
    return "\n".join(lines)


class PermissionsDialog(QDialog):
    """The permission matrix as a read-only table (not modal: it can stay open beside the console)."""

    def __init__(self, view: PermissionsView, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Permission matrix")
        self.setModal(False)
        self.model = RecordTableModel(PERMISSION_COLUMNS, self)
        self.model.set_records(permission_rows(view))
        self.table = read_only_table(self.model)
        self.table.setAlternatingRowColors(True)
        self.table.setShowGrid(False)
        style.compact_rows(self.table)
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        header.setStretchLastSection(True)
        self.policies = plain_label(policies_text(view))
        self.policies.setStyleSheet(f"color: {style.tones().muted.name()}")
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        buttons.rejected.connect(self.close)
        layout = QVBoxLayout(self)
        layout.addWidget(self.table, 1)
        layout.addWidget(self.policies)
        layout.addWidget(buttons)
        # As wide as the table's columns want (within reason), as tall as its rows: no scrolling for a fleet.
        self.table.resizeColumnsToContents()
        columns = sum(self.table.horizontalHeader().sectionSize(c) for c in range(self.model.columnCount()))
        rows = self.table.verticalHeader().defaultSectionSize() * self.model.rowCount()
        self.resize(min(max(columns + 60, 700), 1400),
                    min(rows + self.table.horizontalHeader().sizeHint().height() + 120, 900))


# --- the panel ------------------------------------------------------------------------------------
def consequence(call: ToolCall, approve: bool) -> str:
    what = f"#{call.id} {call.tool} asked by {call.agent_id}"
    if not approve:
        return (f"{what} is dropped: nothing runs, and the agent is not told otherwise. The rejection is final "
                f"and goes into the audit trail with your name and reason.")
    if call.tool == SEND_EMAIL:
        to, subject = call.params.get("to", "?"), call.params.get("subject", "")
        return (f"The e-mail to {cell(str(to), 80)} (“{cell(str(subject), 80)}”) is written to the outbox "
                f"table. The product never sends mail. The matrix is checked again first; the approval is final and "
                f"goes into the audit trail with your name and reason.")
    return (f"{what} runs now (the matrix is checked again first). The approval is final and goes into the audit "
            f"trail with your name and reason.")


class ToolCallsPanel(EnginePanel):
    sig_pending_changed = Signal(int)       # how many calls wait for an operator
    sig_open_trace = Signal(str)            # a trace id the operator wants to see whole

    def __init__(self, service: EngineService, parent: QWidget | None = None) -> None:
        super().__init__(service, parent)
        self.dialog: ReasonDialog | None = None
        self.permissions_dialog: PermissionsDialog | None = None
        self.model = ToolCallsModel(self)
        self.outbox = OutboxModel(self)

        self.summary = plain_label()
        self.summary.setWordWrap(False)
        self.approve_button = QPushButton("Approve…")
        self.reject_button = QPushButton("Reject…")
        self.trace_button = QPushButton("Open trace…")
        self.trace_button.setToolTip("Show the whole trace of the selected call's question")
        self.permissions_button = QPushButton("Permissions…")
        self.permissions_button.setToolTip("The permission matrix: what each agent may do (read-only)")
        self.refresh_button = QPushButton("Refresh")
        self.refresh_button.setToolTip("Read the tool calls and the outbox again from the store "
                                       "(decisions made with `main.py tools` show up)")
        self.message = plain_label()               # the last decision's outcome; hidden while there is none
        self.message.setWordWrap(False)
        self.message.hide()

        self.table = list_table(self.model)
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(WHY_COLUMN, QHeaderView.ResizeMode.Interactive)
        header.setSectionResizeMode(PARAMS_COLUMN, QHeaderView.ResizeMode.Stretch)
        header.resizeSection(WHY_COLUMN, WHY_WIDTH)
        self.details = PlainPane()
        self.details.setPlaceholderText("No tool call yet: agents ask for tools (memory, sql_query, send_email, "
                                        "messages) in their replies; every call, refused ones included, shows here.")
        self.outbox_title = plain_label("Outbox")
        self.outbox_title.setToolTip("What approved e-mails “sent”: the product writes them here and never sends mail")
        self.outbox_table = list_table(self.outbox)
        outbox_header = self.outbox_table.horizontalHeader()
        outbox_header.setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        outbox_header.setSectionResizeMode(3, QHeaderView.ResizeMode.Stretch)

        top = hbox(self.summary)
        top.setStretch(0, 1)
        for button in (self.approve_button, self.reject_button, self.trace_button, self.permissions_button,
                       self.refresh_button):
            top.addWidget(button)
        lower = splitter(Qt.Orientation.Horizontal, (self.details, 1), (titled(self.outbox_title, self.outbox_table), 1),
                         sizes=[560, 560])
        self.body = splitter(Qt.Orientation.Vertical, (self.table, 3), (lower, 2), sizes=[220, 150])
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 4, 0, 0)
        layout.setSpacing(4)
        layout.addLayout(top)
        layout.addWidget(self.message)
        layout.addWidget(self.body, 1)

        self.table.selectionModel().currentRowChanged.connect(self._on_current_changed)
        self.table.doubleClicked.connect(lambda _index: self.open_trace())
        self.approve_button.clicked.connect(lambda: self.open_decision(approve=True))
        self.reject_button.clicked.connect(lambda: self.open_decision(approve=False))
        self.trace_button.clicked.connect(self.open_trace)
        self.permissions_button.clicked.connect(self.show_permissions)
        self.refresh_button.clicked.connect(self.reload)
        service.tools.sig_loaded.connect(self.show_state)
        service.tools.sig_changed.connect(self._on_changed)
        service.tools.sig_failed.connect(self._on_failed)
        self._on_model_changed()

    # --- calls in --------------------------------------------------------------------------
    def reload(self) -> None:
        if self._accepting:
            self._service.tools.load()

    def show_state(self, state: ToolCallsState) -> None:
        """The calls and the outbox as stored; the selected call stays selected (else the first pending one)."""
        current = self.current_call()
        self.model.set_calls(state.pending, state.calls)
        self.outbox.set_records(state.outbox)
        at = self.model.row_of(current.id) if current is not None else -1
        self.select_row(at if at >= 0 else 0)
        count = self.outbox.rowCount()
        self.outbox_title.setText(f"Outbox — {count} e-mail(s) written, never sent" if count
                                  else "Outbox — empty (an approved send_email writes here; nothing is ever sent)")
        self._on_model_changed()

    # --- selection -------------------------------------------------------------------------
    def current_call(self) -> ToolCall | None:
        index = self.table.currentIndex()
        return self.model.record(index.row()) if index.isValid() and index.row() < self.model.rowCount() else None

    def select_row(self, at: int) -> None:
        if 0 <= at < self.model.rowCount():
            self.table.setCurrentIndex(self.model.index(at, 0))
            self.table.scrollTo(self.model.index(at, 0))
        else:
            self._show_details()

    def select_call(self, call_id: int) -> bool:
        at = self.model.row_of(call_id)
        self.select_row(at)
        return at >= 0

    def _on_current_changed(self, _current: QModelIndex, _previous: QModelIndex) -> None:
        self._show_details()

    def _show_details(self) -> None:
        call = self.current_call()
        if call is None:
            self.details.clear()
        else:
            self.details.setPlainText(call_details(call))
        self.refresh_buttons()

    # --- deciding --------------------------------------------------------------------------
    def open_decision(self, approve: bool) -> ReasonDialog | None:
        call = self.current_call()
        if call is None or call.status is not ToolStatus.PENDING or not self._accepting:
            return None
        verb = "Approve" if approve else "Reject"
        placeholder = ("why, e.g. “checked the recipient and the text”" if approve
                       else "why, e.g. “not a recipient this agent should write to”")
        dialog = ReasonDialog(f"{verb} tool call #{call.id} ({call.tool} by {call.agent_id})", consequence(call, approve),
                              verb, placeholder, self._service.operator, self, danger=not approve)
        dialog.sig_confirmed.connect(lambda reason: self.decide(call.id, approve, reason))
        if self.dialog is not None:
            self.dialog.close()
        self.dialog = dialog
        dialog.finished.connect(lambda _result: self._dialog_closed(dialog))
        dialog.open()
        self.refresh_buttons()
        return dialog

    def decide(self, call_id: int, approve: bool, reason: str) -> None:
        self._say(f"{'Approving' if approve else 'Rejecting'} #{call_id}…", style.tones().muted)
        self._service.tools.decide(call_id, approve, reason)

    def _dialog_closed(self, dialog: ReasonDialog) -> None:
        if self.dialog is dialog:
            self.dialog = None
        dialog.deleteLater()
        self.refresh_buttons()

    def _say(self, text: str, colour) -> None:
        say(self.message, text, colour)
        self.message.setVisible(bool(text))

    def _on_changed(self, result: ToolCallResult) -> None:
        done = f" — {result.result}" if result.result else ""
        colour = style.tones().good if result.status is ToolStatus.APPROVED else style.tones().muted
        self._say(f"#{result.call_id} {result.tool} by {result.agent_id}: {result.why}{done}", colour)

    def _on_failed(self, call_id: int, message: str) -> None:
        self._say(f"#{call_id}: {message}", style.tones().bad)

    def open_trace(self) -> None:
        call = self.current_call()
        if call is not None and call.trace_id:
            self.sig_open_trace.emit(call.trace_id)

    def show_permissions(self) -> PermissionsDialog:
        if self.permissions_dialog is None:
            self.permissions_dialog = PermissionsDialog(self._service.tools.permissions(), self)
        if self.permissions_dialog.isVisible():
            self.permissions_dialog.raise_()       # already open, maybe behind the console
        else:
            self.permissions_dialog.show()
        return self.permissions_dialog

    # --- state -----------------------------------------------------------------------------
    def on_engine_ready(self) -> None:
        self.reload()

    def on_engine_stopping(self) -> None:
        if self.dialog is not None:
            self.dialog.reject()

    def refresh_buttons(self, *_args) -> None:
        call = self.current_call()
        can = (self._accepting and self.dialog is None and call is not None and call.status is ToolStatus.PENDING)
        self.approve_button.setEnabled(can)
        self.reject_button.setEnabled(can)
        self.trace_button.setEnabled(call is not None and bool(call.trace_id))
        self.refresh_button.setEnabled(self._accepting)
        if call is not None and call.status is not ToolStatus.PENDING:
            tip = f"Only a pending call can be decided; #{call.id} is {call.status.value}"
        elif not self._accepting:
            tip = "Waiting for the engine"
        else:
            tip = f"Decide as {self._service.operator}, with a reason"
        self.approve_button.setToolTip(tip)
        self.reject_button.setToolTip(tip)

    def pending_count(self) -> int:
        return self.model.count(ToolStatus.PENDING)

    def _on_model_changed(self) -> None:
        pending, total = self.pending_count(), self.model.rowCount()
        if total:
            parts = [f"{self.model.count(s)} {s.value}" for s in SUMMARY_ORDER if self.model.count(s)]
            self.summary.setText(f"{total} call(s): {' · '.join(parts)} · deciding as {self._service.operator}")
        else:
            self.summary.setText(f"No tool call yet · deciding as {self._service.operator}")
        self._show_details()
        self.sig_pending_changed.emit(pending)

    def needs_attention(self) -> bool:
        return self.pending_count() > 0

    def tab_title(self) -> str:
        pending = self.pending_count()
        return f"Tools ({pending} pending)" if pending else "Tools"
