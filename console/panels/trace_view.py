"""Trace view: the whole chain of one question or message, as `main.py trace` prints it — every message
with its trust level (and what the gateway did with it), tool calls, memory reads and writes, model
outputs, the engine's decisions and the audit events — as a tree, each line under its parent.

A window of its own, not modal: it stays open beside the console. Any trace id can be typed or pasted
and opened; "Copy trace id" puts the shown one on the clipboard; a double-click on a message opens that
message's own trace (on a "part of trace …" line, the parent's). The main window owns one and feeds it
the service's sig_trace_loaded / sig_trace_failed.

Summaries and data quote what agents said: cells are plain item text, the details pane is a read-only
plain-text editor with hidden characters named, tooltips are escaped. Nothing is rendered as rich text.
"""
from __future__ import annotations

import datetime
import json
from typing import Sequence

from PySide6.QtCore import Qt
from PySide6.QtGui import QBrush, QFont
from PySide6.QtWidgets import (QAbstractItemView, QApplication, QCheckBox, QDialog, QHBoxLayout, QHeaderView, QLabel,
                               QLineEdit, QPushButton, QTreeWidget, QTreeWidgetItem, QVBoxLayout,
                               QWidget)

from engine import TraceLine

from .. import style, untrusted
from ..layout import splitter
from ..untrusted import PlainLabel, PlainPane, cell, visible
from .gateway_model import action_colour, action_label

TITLE = "Trace"
COLUMNS = ("Time", "Kind", "From → to", "Trust", "Summary")     # the tree's branches are drawn in Kind
TIME_COLUMN, KIND_COLUMN, WHO_COLUMN, TRUST_COLUMN, SUMMARY_COLUMN = range(len(COLUMNS))
LINE_ROLE = Qt.ItemDataRole.UserRole          # the TraceLine behind a tree item
SUMMARY_CHARS = 240
FLAGGED_ACTIONS = ("block", "escalate", "sanitise")


def when(at: float) -> str:
    return datetime.datetime.fromtimestamp(at).strftime("%H:%M:%S.%f")[:-3] if at else ""


def who(line: TraceLine) -> str:
    return f"{line.source} → {line.target}" if line.target else line.source


def line_action(line: TraceLine) -> str:
    """What the gateway did with a message line ("" when it let it pass or the line is no message)."""
    action = str((line.data or {}).get("action", "")) if isinstance(line.data, dict) else ""
    return action if action in FLAGGED_ACTIONS else ""


def line_details(line: TraceLine) -> str:
    """One line spelled out, for the plain-text details pane."""
    head = [f"{line.kind} · {who(line)}" + (f" · trust {line.trust}" if line.trust else "")
            + (f" · {when(line.at)}" if line.at else ""),
            f"Trace id {line.trace_id}" + (f" · parent {line.parent_trace_id}" if line.parent_trace_id else ""),
            "", line.summary]
    if line.data:
        head += ["", "Data:", json.dumps(line.data, ensure_ascii=False, indent=1, default=str)]
    return visible("\n".join(head))


class TraceView(QDialog):
    """`open_trace(id)` asks the service for a trace; `show_trace(id, lines)` shows it (and the window)."""

    def __init__(self, service=None, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._service = service
        self.trace_id = ""                       # the trace shown
        self.lines: tuple[TraceLine, ...] = ()
        self.setWindowTitle(TITLE)
        self.setModal(False)
        self.setWindowFlag(Qt.WindowType.WindowContextHelpButtonHint, False)
        self.resize(1180, 640)

        self.id_edit = QLineEdit()
        self.id_edit.setPlaceholderText("Type or paste a trace id (a question's or a message's)")
        self.id_edit.setFont(style.monospace_font())
        self.open_button = QPushButton("Open")
        self.open_button.setDefault(False)
        self.open_button.setAutoDefault(False)
        self.copy_button = QPushButton("Copy trace id")
        self.copy_button.setAutoDefault(False)
        self.copy_button.setToolTip("Copy the shown trace's id to the clipboard")
        self.flagged_only = QCheckBox("Only messages the gateway stopped or changed")
        self.flagged_only.setToolTip("Hide the messages the gateway let pass unchanged (decisions and audit "
                                     "events stay)")
        self.status = PlainLabel("No trace shown yet.")
        self.status.setWordWrap(True)
        self.status.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)

        self.tree = QTreeWidget()
        self.tree.setColumnCount(len(COLUMNS))
        self.tree.setHeaderLabels(list(COLUMNS))
        self.tree.setUniformRowHeights(True)
        self.tree.setAlternatingRowColors(True)
        self.tree.setWordWrap(False)
        self.tree.setTextElideMode(Qt.TextElideMode.ElideRight)
        self.tree.setIndentation(18)
        self.tree.setTreePosition(KIND_COLUMN)         # times stay in one column; kinds indent under their parents
        header = self.tree.header()
        header.setStretchLastSection(True)
        header.setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        self.details = PlainPane()
        self.details.setPlaceholderText("Select a line to read it whole, with its data.")

        top = QHBoxLayout()
        top.addWidget(QLabel("Trace id:"))
        top.addWidget(self.id_edit, 1)
        top.addWidget(self.open_button)
        top.addWidget(self.copy_button)
        layout = QVBoxLayout(self)
        layout.addLayout(top)
        status_row = QHBoxLayout()
        status_row.addWidget(self.status, 1)
        status_row.addWidget(self.flagged_only)
        layout.addLayout(status_row)
        layout.addWidget(splitter(Qt.Orientation.Vertical, (self.tree, 3), (self.details, 1), sizes=[440, 150]), 1)

        self.open_button.clicked.connect(self.open_typed)
        self.id_edit.returnPressed.connect(self.open_typed)
        self.copy_button.clicked.connect(self.copy_trace_id)
        self.flagged_only.toggled.connect(self._apply_filter)
        self.tree.currentItemChanged.connect(self._on_current_changed)
        self.tree.itemDoubleClicked.connect(self._on_double_clicked)
        self._refresh_buttons()

    # --- asking ----------------------------------------------------------------------------
    def open_typed(self) -> None:
        self.open_trace(self.id_edit.text())

    def open_trace(self, trace_id: str):
        """Asks the service for a trace; it is shown when sig_trace_loaded brings it. Returns the service's
        task, or None when the request was refused at once (sig_trace_failed says why)."""
        trace_id = (trace_id or "").strip()
        self.id_edit.setText(trace_id)
        if self._service is None:
            return None
        if trace_id:
            self.status.setText(f"Reading trace {trace_id}…")
            self.status.setStyleSheet("")
        return self._service.traces.open(trace_id)

    def copy_trace_id(self) -> None:
        if self.trace_id:
            QApplication.clipboard().setText(self.trace_id)
            self.status.setText(f"Copied trace id {self.trace_id}.")

    # --- showing ---------------------------------------------------------------------------
    def show_trace(self, trace_id: str, lines: Sequence[TraceLine]) -> None:
        self.trace_id = trace_id
        self.lines = tuple(lines)
        self.id_edit.setText(trace_id)
        self.setWindowTitle(f"{TITLE} {trace_id}")
        self._fill(self.lines)
        flagged = [line_action(line) for line in self.lines if line_action(line)]
        counts = " · ".join(f"{flagged.count(a)} {action_label(a)}" for a in FLAGGED_ACTIONS if flagged.count(a))
        self.status.setText(f"Trace {trace_id}: {len(self.lines)} line(s)"
                            + (f" · gateway: {counts}" if counts else " · the gateway stopped nothing"))
        self.status.setStyleSheet("")
        self._refresh_buttons()
        if self.isVisible():
            self.raise_()            # already open, maybe behind the console: bring it forward
        else:
            self.show()
        self.activateWindow()

    def show_failure(self, trace_id: str, message: str) -> None:
        """The service could not show a trace: said in the window (when it is open)."""
        self.status.setText(message)
        self.status.setStyleSheet(f"color: {style.tones().bad.name()};")

    def _fill(self, lines: Sequence[TraceLine]) -> None:
        self.tree.clear()
        stack: list[tuple[int, QTreeWidgetItem]] = []       # (depth, item) of the open ancestors
        first = None
        for line in lines:
            while stack and stack[-1][0] >= line.depth:
                stack.pop()
            item = self._item(line)
            if stack:
                stack[-1][1].addChild(item)
            else:
                self.tree.addTopLevelItem(item)
            stack.append((line.depth, item))
            first = first or item
        self.tree.expandAll()
        for column in range(SUMMARY_COLUMN):
            self.tree.resizeColumnToContents(column)
            self.tree.setColumnWidth(column, min(self.tree.columnWidth(column) + 12, 320))
        self._apply_filter()
        current = self._first_flagged() or first
        if current is not None:
            self.tree.setCurrentItem(current)
            self.tree.scrollToItem(current, QAbstractItemView.ScrollHint.PositionAtCenter)

    def _item(self, line: TraceLine) -> QTreeWidgetItem:
        item = QTreeWidgetItem([when(line.at), line.kind, cell(who(line), 80), line.trust,
                                cell(line.summary, SUMMARY_CHARS)])
        item.setData(0, LINE_ROLE, line)
        item.setToolTip(SUMMARY_COLUMN, untrusted.tooltip(line.summary))
        item.setToolTip(WHO_COLUMN, untrusted.tooltip(who(line)))
        action = line_action(line)
        if action:
            colour = QBrush(action_colour(action))
            for column in (KIND_COLUMN, SUMMARY_COLUMN):
                item.setForeground(column, colour)
            bold = QFont(item.font(SUMMARY_COLUMN))
            bold.setBold(True)
            item.setFont(SUMMARY_COLUMN, bold)
        elif line.kind in ("audit", "parent"):
            for column in range(len(COLUMNS)):
                item.setForeground(column, QBrush(style.tones().muted))
        if line.kind == "question":
            bold = QFont(item.font(SUMMARY_COLUMN))
            bold.setBold(True)
            for column in range(len(COLUMNS)):
                item.setFont(column, bold)
        return item

    def _apply_filter(self, *_args) -> None:
        only = self.flagged_only.isChecked()
        for item in self.items():
            line: TraceLine = item.data(0, LINE_ROLE)
            item.setHidden(only and line.kind == "message" and not line_action(line))

    def _first_flagged(self) -> QTreeWidgetItem | None:
        for item in self.items():
            if line_action(item.data(0, LINE_ROLE)):
                return item
        return None

    def items(self) -> list[QTreeWidgetItem]:
        """Every item, depth first (the order of the lines)."""
        out: list[QTreeWidgetItem] = []

        def walk(item: QTreeWidgetItem) -> None:
            out.append(item)
            for n in range(item.childCount()):
                walk(item.child(n))

        for n in range(self.tree.topLevelItemCount()):
            walk(self.tree.topLevelItem(n))
        return out

    def current_line(self) -> TraceLine | None:
        item = self.tree.currentItem()
        return item.data(0, LINE_ROLE) if item is not None else None

    def _on_current_changed(self, current: QTreeWidgetItem | None, _previous) -> None:
        line = current.data(0, LINE_ROLE) if current is not None else None
        if line is None:
            self.details.clear()
        else:
            self.details.setPlainText(line_details(line))

    def _on_double_clicked(self, item: QTreeWidgetItem, _column: int) -> None:
        """A message opens its own trace; a 'part of trace …' line opens the parent's."""
        line: TraceLine = item.data(0, LINE_ROLE)
        if line is not None and line.trace_id and line.trace_id != self.trace_id:
            self.open_trace(line.trace_id)

    def _refresh_buttons(self) -> None:
        self.copy_button.setEnabled(bool(self.trace_id))
