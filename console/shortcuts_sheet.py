"""The cheat sheet the `?` key opens: every action of console/actions.py with its shortcut and where it
works, by group. Non-modal, so the operator can keep it open beside the panel they are learning."""
from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QKeySequence
from PySide6.QtWidgets import QDialog, QDialogButtonBox, QHeaderView, QLabel, QTableWidget, QTableWidgetItem, QVBoxLayout, QWidget

from . import style
from .actions import ACTIONS, GROUPS, ActionBook, scope_text

COLUMNS = ("Key", "Action", "Where", "What it does")


def key_text(shortcut: str) -> str:
    return QKeySequence(shortcut).toString(QKeySequence.SequenceFormat.NativeText) if shortcut else "—"


class ShortcutsSheet(QDialog):
    def __init__(self, book: ActionBook, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Keyboard shortcuts")
        self.setModal(False)
        self.table = QTableWidget(0, len(COLUMNS))
        self.table.setHorizontalHeaderLabels(COLUMNS)
        self.table.verticalHeader().setVisible(False)
        self.table.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        self.table.setSelectionMode(QTableWidget.SelectionMode.NoSelection)
        self.table.setWordWrap(False)
        self.table.setFocusPolicy(Qt.FocusPolicy.NoFocus)       # Close has the focus: Escape or Enter closes
        bold = style.scaled_font(self.font(), 1.0, bold=True)
        for group in GROUPS:
            row = self.table.rowCount()
            self.table.insertRow(row)
            heading = QTableWidgetItem(group)
            heading.setFont(bold)
            self.table.setItem(row, 0, heading)
            self.table.setSpan(row, 0, 1, len(COLUMNS))
            for spec in (s for s in ACTIONS if s.group == group):
                row = self.table.rowCount()
                self.table.insertRow(row)
                # The primary key, and other keys a person would press (Shift+? is "?" on most layouts).
                keys = [spec.shortcut, *(k for k in spec.also if not k.startswith("Shift+"))]
                key = QTableWidgetItem("  ".join(key_text(k) for k in keys if k) or key_text(""))
                key.setFont(style.monospace_font())
                key.setTextAlignment(Qt.AlignmentFlag.AlignCenter)
                cells = (key, QTableWidgetItem(book[spec.id].text().replace("&", "")),
                         QTableWidgetItem(scope_text(spec)), QTableWidgetItem(spec.tip))
                for column, cell in enumerate(cells):
                    self.table.setItem(row, column, cell)
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        header.setStretchLastSection(True)
        style.compact_rows(self.table)
        hint = QLabel("Letters work while the focus is in their panel (Alt+number shows a panel and puts the focus "
                      "there); in a text box they type.")
        hint.setWordWrap(True)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        buttons.rejected.connect(self.close)
        layout = QVBoxLayout(self)
        layout.addWidget(self.table, 1)
        layout.addWidget(hint)
        layout.addWidget(buttons)
        self.resize(760, 620)

    def rows(self) -> list[tuple[str, ...]]:
        """The sheet as text, row by row (group headings are one-cell rows)."""
        out = []
        for row in range(self.table.rowCount()):
            cells = [self.table.item(row, c) for c in range(len(COLUMNS))]
            out.append(tuple(c.text() for c in cells if c is not None))
        return out
