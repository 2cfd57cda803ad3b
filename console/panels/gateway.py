"""Gateway panel: every message the thought-virus gateway blocked, sanitised or escalated, newest first —
when, what it did, which agent carried the message, what kind of message it was (a passage, a generation,
a stage's output, the operator's question, a memory write, a tool call), its trust level and injection
score, the evidence and the start of the message.

Rows arrive live with each question (sig_gateway_flagged) and from the store when the engine is ready
(sig_gateway_loaded). A filter keeps one action (and, optionally, rows containing some text). The selected
message is spelled out below the table as plain text; "Open trace…" (or a double-click) asks the service
for its question's whole trace, which the main window's trace view shows.

What a message says is untrusted: it is shown as plain model data, in a read-only plain-text pane and in
escaped tooltips, never as rich text or a link.
"""
from __future__ import annotations

from typing import Iterable

from PySide6.QtCore import QModelIndex, Qt, Signal
from PySide6.QtWidgets import (QComboBox, QHBoxLayout, QHeaderView, QLineEdit, QPushButton,
                               QVBoxLayout, QWidget)

from engine import DecisionRow, GatewayFlagged

from .. import style
from ..layout import read_only_table, splitter
from ..service import EngineService
from ..untrusted import PlainLabel, PlainPane
from .gateway_model import (ACTION_ORDER, ACTIONS, EVIDENCE_COLUMN, EXCERPT_COLUMN, GatewayFilter, GatewayModel,
                            GatewayRow, details_text)

ALL_ACTIONS = ""
EMPTY_TEXT = ("Nothing stopped yet: a passage, an agent's reply, a stage's output, a memory write or a question "
              "that carries instructions shows here when the gateway blocks, sanitises or escalates it.")
EVIDENCE_WIDTH = 420          # pixels the evidence column starts at; the excerpt takes the rest


class GatewayPanel(QWidget):
    sig_counts_changed = Signal(int)        # how many blocked messages the panel lists

    def __init__(self, service: EngineService, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._service = service
        self._adding = False           # True while a batch of rows goes in: select once it is in
        self.model = GatewayModel(self)
        self.proxy = GatewayFilter(self)
        self.proxy.setSourceModel(self.model)

        self.summary = PlainLabel()
        self.action_filter = QComboBox()
        self.action_filter.addItem("All actions", ALL_ACTIONS)
        for action in ACTION_ORDER:
            self.action_filter.addItem(ACTIONS[action][0].capitalize(), action)
        self.action_filter.setToolTip("Show one action only")
        self.text_filter = QLineEdit()
        self.text_filter.setPlaceholderText("Filter: agent, kind, evidence or text…")
        self.text_filter.setClearButtonEnabled(True)
        self.text_filter.setMinimumWidth(220)
        self.refresh_button = QPushButton("Refresh")
        self.refresh_button.setToolTip("Read the gateway's decisions again from the store")
        self.trace_button = QPushButton("Open trace…")
        self.trace_button.setToolTip("Show the whole trace of the selected message's question")

        self.table = read_only_table(self.proxy)
        self.table.setShowGrid(False)
        self.table.setAlternatingRowColors(True)
        self.table.setTextElideMode(Qt.TextElideMode.ElideRight)
        style.compact_rows(self.table)
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(EVIDENCE_COLUMN, QHeaderView.ResizeMode.Interactive)
        header.setSectionResizeMode(EXCERPT_COLUMN, QHeaderView.ResizeMode.Stretch)
        header.resizeSection(EVIDENCE_COLUMN, EVIDENCE_WIDTH)
        self.details = PlainPane()          # the selected message in full: plain text only
        self.details.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.details.setPlaceholderText("Select a message to read its evidence and excerpt.")

        top = QHBoxLayout()
        top.setContentsMargins(0, 0, 0, 0)
        top.addWidget(self.summary, 1)
        top.addWidget(self.action_filter)
        top.addWidget(self.text_filter)
        top.addWidget(self.refresh_button)
        top.addWidget(self.trace_button)
        self.body = splitter(Qt.Orientation.Vertical, (self.table, 3), (self.details, 2), sizes=[180, 160])
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 4, 0, 0)
        layout.setSpacing(4)
        layout.addLayout(top)
        layout.addWidget(self.body, 1)

        self.action_filter.currentIndexChanged.connect(self._on_action_filter)
        self.text_filter.textChanged.connect(self._on_text_filter)
        self.table.selectionModel().currentRowChanged.connect(self._on_current_changed)
        self.table.doubleClicked.connect(self._on_double_clicked)
        self.trace_button.clicked.connect(self.open_selected_trace)
        self.refresh_button.clicked.connect(lambda: self._service.gateway.load())
        service.gateway.sig_flagged.connect(self._on_flagged)
        service.gateway.sig_loaded.connect(self._on_loaded)
        for signal in (self.model.modelReset, self.model.rowsInserted, self.model.rowsRemoved, self.model.dataChanged):
            signal.connect(self._on_model_changed)
        for signal in (self.proxy.modelReset, self.proxy.rowsInserted, self.proxy.rowsRemoved,
                       self.proxy.layoutChanged):
            signal.connect(self._after_filter)
        self._on_model_changed()

    # --- rows in ---------------------------------------------------------------------------
    def _on_flagged(self, event: GatewayFlagged) -> None:
        self.add_flags(event.flags)

    def _on_loaded(self, rows: Iterable[DecisionRow]) -> None:
        self.add_rows(GatewayRow.of_decision(row) for row in rows)

    def add_flags(self, flags) -> None:
        self.add_rows(GatewayRow.of_flag(flag) for flag in flags)

    def add_rows(self, rows: Iterable[GatewayRow]) -> None:
        """New rows take their place; the selection stays where the operator put it (on the newest row
        when nothing was selected)."""
        self._adding = True
        try:
            self.model.add_rows(rows)
        finally:
            self._adding = False
        self._after_filter()

    # --- selection -------------------------------------------------------------------------
    def current_row(self) -> GatewayRow | None:
        index = self.table.currentIndex()
        if not index.isValid():
            return None
        source = self.proxy.mapToSource(index)
        return self.model.record(source.row()) if source.isValid() and source.row() < self.model.rowCount() else None

    def visible_rows(self) -> list[GatewayRow]:
        """The rows the filter lets through, in table order."""
        return [self.model.record(self.proxy.mapToSource(self.proxy.index(r, 0)).row())
                for r in range(self.proxy.rowCount())]

    def select_row(self, row: int) -> None:
        """Selects the table's row `row` (after filtering)."""
        if 0 <= row < self.proxy.rowCount():
            self.table.setCurrentIndex(self.proxy.index(row, 0))
            self.table.scrollTo(self.proxy.index(row, 0))

    def open_selected_trace(self) -> None:
        row = self.current_row()
        if row is not None:
            self._service.traces.open(row.question_trace_id)

    def _on_double_clicked(self, index: QModelIndex) -> None:
        if index.isValid():
            self.table.setCurrentIndex(index)
            self.open_selected_trace()

    def _on_current_changed(self, _current: QModelIndex, _previous: QModelIndex) -> None:
        self._show_details()

    def _show_details(self) -> None:
        row = self.current_row()
        self.trace_button.setEnabled(row is not None)
        if row is None:
            self.details.clear()
            self.details.setPlaceholderText("Select a message to read its evidence and excerpt."
                                            if self.proxy.rowCount() else
                                            (EMPTY_TEXT if not self.model.rowCount()
                                             else "No message matches the filter."))
            return
        self.details.setPlainText(details_text(row))

    # --- filter ----------------------------------------------------------------------------
    def set_action_filter(self, action: str) -> None:
        """"" for every action, or block, escalate, sanitise."""
        at = self.action_filter.findData(action)
        self.action_filter.setCurrentIndex(max(at, 0))

    def _on_action_filter(self, _at: int) -> None:
        self.proxy.set_action(self.action_filter.currentData() or ALL_ACTIONS)

    def _on_text_filter(self, text: str) -> None:
        self.proxy.set_text(text)

    def _after_filter(self, *_args) -> None:
        """Something is always selected while a row is shown, so the details pane is never stale."""
        if self._adding:
            return
        if self.current_row() is None and self.proxy.rowCount():
            self.select_row(0)
        self._show_details()

    # --- counts ----------------------------------------------------------------------------
    def blocked_count(self) -> int:
        return self.model.count("block")

    def _on_model_changed(self, *_args) -> None:
        total = self.model.rowCount()
        if total:
            parts = [f"{self.model.count(a)} {ACTIONS[a][0]}" for a in ACTION_ORDER]
            self.summary.setText(f"{total} message(s) stopped or changed: {' · '.join(parts)} · newest first")
        else:
            self.summary.setText("No message blocked, sanitised or escalated yet")
        self._show_details()
        self.sig_counts_changed.emit(self.blocked_count())

    def needs_attention(self) -> bool:
        return self.blocked_count() > 0

    def tab_title(self) -> str:
        blocked = self.blocked_count()
        return f"Gateway ({blocked} blocked)" if blocked else "Gateway"
