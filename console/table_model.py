"""A read-only table model over a list of records, described by a list of columns.

Panels declare what each column shows (text, alignment, colour, icon, tooltip, raw value for a
delegate) instead of writing one `data()` per table; the fleet, outcome, passage, generator and
claim-check tables all use it.

Columns give plain text: the model shows a cell as one line with hidden characters named and a tooltip as its
literal text (console.untrusted), so no column can let an agent's words act as markup or reorder a row.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Generic, Sequence, TypeVar

from PySide6.QtCore import QAbstractTableModel, QModelIndex, QPersistentModelIndex, Qt
from PySide6.QtGui import QColor, QFont, QIcon

from .untrusted import cell, tooltip

R = TypeVar("R")
Index = QModelIndex | QPersistentModelIndex

LEFT = Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter
RIGHT = Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter
CENTER = Qt.AlignmentFlag.AlignCenter

# Raw value behind a cell (e.g. a tuple of flags), for delegates that draw it their own way.
VALUE_ROLE = Qt.ItemDataRole.UserRole


@dataclass(frozen=True)
class Column(Generic[R]):
    title: str
    text: Callable[[R], str]
    align: Qt.AlignmentFlag = LEFT
    foreground: Callable[[R], QColor | None] | None = None
    background: Callable[[R], QColor | None] | None = None
    bold: Callable[[R], bool] | None = None
    tooltip: Callable[[R], str] | None = None
    icon: Callable[[R], QIcon | None] | None = None
    value: Callable[[R], Any] | None = None       # served under VALUE_ROLE
    header_tooltip: str = ""


class RecordTableModel(QAbstractTableModel, Generic[R]):
    """`row_background` tints a whole row (a column's own background wins over it)."""

    def __init__(self, columns: Sequence[Column[R]], parent=None, *,
                 row_background: Callable[[R], QColor | None] | None = None) -> None:
        super().__init__(parent)
        self._columns = tuple(columns)
        self._records: list[R] = []
        self._row_background = row_background

    # --- Qt model interface ----------------------------------------------------------------
    def rowCount(self, parent: Index = QModelIndex()) -> int:
        return 0 if parent.isValid() else len(self._records)

    def columnCount(self, parent: Index = QModelIndex()) -> int:
        return 0 if parent.isValid() else len(self._columns)

    def headerData(self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if orientation is Qt.Orientation.Horizontal and 0 <= section < len(self._columns):
            column = self._columns[section]
            if role == Qt.ItemDataRole.DisplayRole:
                return column.title
            if role == Qt.ItemDataRole.TextAlignmentRole:
                return int(column.align)
            if role == Qt.ItemDataRole.ToolTipRole and column.header_tooltip:
                return column.header_tooltip
        return None

    def data(self, index: Index, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid() or index.row() >= len(self._records) or index.column() >= len(self._columns):
            return None
        record, column = self._records[index.row()], self._columns[index.column()]
        if role == Qt.ItemDataRole.DisplayRole:
            return cell(column.text(record))
        if role == Qt.ItemDataRole.TextAlignmentRole:
            return int(column.align)
        if role == Qt.ItemDataRole.ForegroundRole and column.foreground:
            return column.foreground(record)
        if role == Qt.ItemDataRole.BackgroundRole:
            colour = column.background(record) if column.background else None
            if colour is None and self._row_background:
                colour = self._row_background(record)
            return colour
        if role == Qt.ItemDataRole.FontRole and column.bold and column.bold(record):
            font = QFont()
            font.setBold(True)
            return font
        if role == Qt.ItemDataRole.ToolTipRole and column.tooltip:
            return tooltip(column.tooltip(record)) or None
        if role == Qt.ItemDataRole.DecorationRole and column.icon:
            return column.icon(record)
        if role == VALUE_ROLE and column.value:
            return column.value(record)
        return None

    # --- records ---------------------------------------------------------------------------
    def set_records(self, records: Sequence[R]) -> None:
        self.beginResetModel()
        self._records = list(records)
        self.endResetModel()

    def records(self) -> tuple[R, ...]:
        return tuple(self._records)

    def record(self, row: int) -> R:
        return self._records[row]

    def append_record(self, record: R) -> int:
        row = len(self._records)
        self.beginInsertRows(QModelIndex(), row, row)
        self._records.append(record)
        self.endInsertRows()
        return row

    def insert_record(self, row: int, record: R) -> None:
        """Inserts without a reset, so views keep their selection (it moves with its row)."""
        self.beginInsertRows(QModelIndex(), row, row)
        self._records.insert(row, record)
        self.endInsertRows()

    def remove_record(self, row: int) -> R:
        self.beginRemoveRows(QModelIndex(), row, row)
        record = self._records.pop(row)
        self.endRemoveRows()
        return record

    def replace_record(self, row: int, record: R) -> None:
        """Swaps one record and tells views that only this row changed."""
        self._records[row] = record
        self.refresh_row(row)

    def refresh_row(self, row: int) -> None:
        """Tells views that what row `row` shows changed (its record or something its columns read)."""
        self.dataChanged.emit(self.index(row, 0), self.index(row, len(self._columns) - 1))
