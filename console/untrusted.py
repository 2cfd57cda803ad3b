"""The one place the console turns untrusted text into what a widget shows.

Anything an agent or a document wrote (answers, claims, reasons, passages, titles, file names, errors, tool
parameters, memory) is data: it is shown as its own characters, never as markup, a link to follow, an image to
fetch or a character that reorders the text around it (engine/untrusted.py says how each character is made
visible). Widgets that show such text are built here:

- PlainLabel and PlainPane: plain-text widgets whose setText / setPlainText show visible() text;
- RichLabel: a label for a line of HTML the console builds (bold, a tone), every untrusted piece through html_text;
- SafeBrowser: a rich-text view for HTML the console builds itself; it follows no link and loads no resource,
  so even a tag that slipped through could not reach a file or the network;
- html_text(): untrusted text escaped for a piece of HTML the console builds (SafeBrowser, rich labels);
- tooltip(): a tooltip that shows its text literally (Qt renders any tooltip that looks like HTML as HTML);
- cell(): a table cell's one line (table_model.RecordTableModel applies it and tooltip() to every column).
"""
from __future__ import annotations

import html
from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLabel, QPlainTextEdit, QTextBrowser, QWidget

from engine import LINE_BREAK_MARK, one_line, visible

__all__ = ["LINE_BREAK_MARK", "PlainLabel", "PlainPane", "RichLabel", "SafeBrowser", "cell", "html_text", "tooltip",
           "visible"]


def html_text(text: str) -> str:
    """`text` as a piece of HTML that shows exactly its characters (markup escaped, hidden ones named)."""
    return html.escape(visible(text))


def tooltip(text: str) -> str:
    """A tooltip that shows `text` literally, line breaks kept: escaped inside a paragraph of its own."""
    if not text:
        return ""
    return f"<p style='white-space:pre-wrap'>{html_text(text)}</p>"


def cell(text: str, limit: int | None = None) -> str:
    """One line for a table cell or an item: hidden characters named, a line break shown as ↵."""
    return one_line(text, limit)


class PlainLabel(QLabel):
    """A label that never reads its text as markup: Qt's AutoText guess would render a reply that starts
    with a tag as rich text."""

    def __init__(self, text: str = "", parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setTextFormat(Qt.TextFormat.PlainText)
        self.setText(text)

    def setText(self, text: str) -> None:             # noqa: N802 (Qt's name)
        super().setText(visible(text))


class RichLabel(QLabel):
    """A label whose text is HTML the console builds: rich text by choice, never by Qt's AutoText guess, and
    every agent's or document's word in it escaped with html_text. A link in it is the console's own; it is
    never opened by Qt (the owner connects linkActivated)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setTextFormat(Qt.TextFormat.RichText)
        self.setOpenExternalLinks(False)


class PlainPane(QPlainTextEdit):
    """A read-only, selectable plain-text pane for a whole message, passage or event."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setReadOnly(True)
        self.setLineWrapMode(QPlainTextEdit.LineWrapMode.WidgetWidth)

    def setPlainText(self, text: str) -> None:        # noqa: N802 (Qt's name)
        super().setPlainText(visible(text))


class SafeBrowser(QTextBrowser):
    """A rich-text view for HTML the console builds (every untrusted piece through html_text). Links are shown,
    never followed by a click; no image, stylesheet or file is ever loaded, from disk or the network."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setOpenLinks(False)
        self.setOpenExternalLinks(False)

    def loadResource(self, kind: int, name: Any) -> Any:   # noqa: N802 (Qt's name)
        return None
