"""Small layout helpers the panels share."""
from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QAbstractItemView, QHBoxLayout, QSplitter, QTableView, QVBoxLayout, QWidget

from . import style


def column(first: QWidget, *rest: QWidget, spacing: int = 2) -> QWidget:
    """A widget holding `first` (which takes the spare height) above `rest`, without margins."""
    holder = QWidget()
    layout = QVBoxLayout(holder)
    layout.setContentsMargins(0, 0, 0, 0)
    layout.setSpacing(spacing)
    layout.addWidget(first, 1)
    for widget in rest:
        layout.addWidget(widget)
    return holder


def read_only_table(model) -> QTableView:
    """A table of records: not editable, one whole row selected at a time, no row numbers, no wrapping."""
    table = QTableView()
    table.setModel(model)
    table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
    table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
    table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
    table.setWordWrap(False)
    table.verticalHeader().setVisible(False)
    return table


def list_table(model) -> QTableView:
    """A read-only table of many short rows: no grid, alternating rows, compact, long text elided."""
    table = read_only_table(model)
    table.setShowGrid(False)
    table.setAlternatingRowColors(True)
    table.setTextElideMode(Qt.TextElideMode.ElideRight)
    style.compact_rows(table)
    return table


def hbox(*parts: QWidget | tuple[QWidget, int]) -> QHBoxLayout:
    """A row without margins; a (widget, stretch) pair takes that share of the spare width."""
    row = QHBoxLayout()
    row.setContentsMargins(0, 0, 0, 0)
    for part in parts:
        widget, stretch = part if isinstance(part, tuple) else (part, 0)
        row.addWidget(widget, stretch)
    return row


def inline_form_layout(form: QWidget, *rows: QHBoxLayout | QWidget) -> QVBoxLayout:
    """The layout every inline form (decide, acknowledge, silence) shares: its rows, tight in a thin frame."""
    layout = QVBoxLayout(form)
    layout.setContentsMargins(6, 4, 6, 4)
    layout.setSpacing(3)
    for row in rows:
        if isinstance(row, QWidget):
            layout.addWidget(row)
        else:
            layout.addLayout(row)
    return layout


def splitter(orientation: Qt.Orientation, *parts: tuple[QWidget, int], sizes: list[int]) -> QSplitter:
    """Panes side by side (or stacked), each with its stretch factor, starting at `sizes`; none can be
    collapsed to nothing by dragging."""
    split = QSplitter(orientation)
    for at, (widget, stretch) in enumerate(parts):
        split.addWidget(widget)
        split.setStretchFactor(at, stretch)
    split.setSizes(sizes)
    split.setChildrenCollapsible(False)
    return split
