"""What every widget of a window shows, as the operator reads it: for the untrusted-text tests (issue #15).

`shown(window)` walks every widget (the window's own and its dialogs and docks): labels, buttons, line edits,
combo boxes, text views, tab bars, tooltips, and every cell and tooltip of every item view (tables, lists,
trees). Each piece comes back as it renders: a rich-text label or tooltip through QTextDocument, a plain one
as its text. A label or text view in rich-text mode is recorded as such, so a test can fail on any that shows
untrusted text unescaped.
"""
from __future__ import annotations

from dataclasses import dataclass

from PySide6.QtCore import QModelIndex, Qt
from PySide6.QtGui import QTextDocument
from PySide6.QtGui import Qt as GuiQt
from PySide6.QtWidgets import (QAbstractButton, QAbstractItemView, QComboBox, QLabel, QLineEdit, QPlainTextEdit,
                               QTabBar, QTextEdit, QWidget)

ROLES = ((Qt.ItemDataRole.DisplayRole, "cell"), (Qt.ItemDataRole.ToolTipRole, "tooltip"))


@dataclass(frozen=True)
class Shown:
    where: str           # the widget's class and object path, and the cell for item views
    kind: str            # label, rich-label, auto-label, pane, rich-view, tooltip, cell, button, ...
    source: str          # what the widget was given
    text: str            # what it renders: the characters the operator reads


def rendered(source: str, rich: bool) -> str:
    if not rich:
        return source
    document = QTextDocument()
    document.setHtml(source)
    return document.toPlainText()


def _name(widget: QWidget) -> str:
    parts, w = [], widget
    while w is not None and len(parts) < 8:
        parts.append(w.objectName() or type(w).__name__)
        w = w.parentWidget()
    return "/".join(reversed(parts))


def _tooltip(where: str, tip: str) -> Shown:
    return Shown(where, "tooltip", tip, rendered(tip, GuiQt.mightBeRichText(tip)))


def _label(widget: QLabel, where: str) -> Shown:
    text, fmt = widget.text(), widget.textFormat()
    if fmt == Qt.TextFormat.PlainText:
        return Shown(where, "label", text, text)
    if fmt == Qt.TextFormat.RichText:
        return Shown(where, "rich-label", text, rendered(text, True))
    return Shown(where, "auto-label", text, rendered(text, GuiQt.mightBeRichText(text)))


def _columns(model, parent: QModelIndex) -> int:
    try:
        return max(1, model.columnCount(parent))
    except TypeError:          # a list model keeps columnCount private: one column
        return 1


def _children(model, index: QModelIndex) -> bool:
    try:
        return model.rowCount(index) > 0
    except TypeError:
        return False


def _item_view(view: QAbstractItemView, where: str) -> list[Shown]:
    model, out = view.model(), []
    if model is None:
        return out

    def rows(parent: QModelIndex) -> None:
        for row in range(model.rowCount(parent)):
            for col in range(_columns(model, parent)):
                index = model.index(row, col, parent)
                for role, kind in ROLES:
                    value = model.data(index, role)
                    if isinstance(value, str) and value:
                        place = f"{where}[{row},{col}]"
                        out.append(_tooltip(place, value) if kind == "tooltip" else Shown(place, kind, value, value))
            first = model.index(row, 0, parent)
            if first.isValid() and _children(model, first):
                rows(first)
    rows(QModelIndex())
    return out


def _widget(widget: QWidget) -> list[Shown]:
    where = f"{type(widget).__name__} {_name(widget)}"
    out = [_tooltip(where, widget.toolTip())] if widget.toolTip() else []
    if isinstance(widget, QLabel):
        out.append(_label(widget, where))
    elif isinstance(widget, QPlainTextEdit):
        out.append(Shown(where, "pane", widget.toPlainText(), widget.toPlainText()))
    elif isinstance(widget, QTextEdit):
        out.append(Shown(where, "rich-view", widget.toHtml(), widget.toPlainText()))
    elif isinstance(widget, QAbstractButton):
        out.append(Shown(where, "button", widget.text(), widget.text()))
    elif isinstance(widget, QLineEdit):
        out.append(Shown(where, "line-edit", widget.text(), widget.text()))
    elif isinstance(widget, QComboBox):
        out += [Shown(f"{where}[{i}]", "combo", widget.itemText(i), widget.itemText(i)) for i in range(widget.count())]
    elif isinstance(widget, QTabBar):
        out += [Shown(f"{where}[{i}]", "tab", widget.tabText(i), widget.tabText(i)) for i in range(widget.count())]
    if isinstance(widget, QAbstractItemView):
        out += _item_view(widget, where)
    if widget.isWindow() and widget.windowTitle():
        out.append(Shown(where, "title", widget.windowTitle(), widget.windowTitle()))
    return out


def shown(*roots: QWidget) -> list[Shown]:
    """Everything the roots and all their descendant widgets show."""
    out: list[Shown] = []
    for root in roots:
        for widget in [root, *root.findChildren(QWidget)]:
            out += _widget(widget)
    return out
