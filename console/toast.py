"""A non-modal message over the bottom of a window that goes away by itself (or on click).

Errors from async code are shown here instead of in an exec() dialog, which would spin a nested
event loop inside a coroutine.
"""
from __future__ import annotations

from PySide6.QtCore import QEvent, QObject, Qt, QTimer
from PySide6.QtWidgets import QWidget

from . import style
from .untrusted import PlainLabel

SHOW_MS_PER_CHAR = 60
MIN_SHOW_MS, MAX_SHOW_MS = 5000, 15000


class Toast(PlainLabel):
    """Plain text: errors and notifications quote agents, never markup."""

    def __init__(self, parent: QWidget) -> None:
        super().__init__(parent=parent)
        self.setWordWrap(True)
        self.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        background, text = style.tones().toast
        self.setStyleSheet(f"QLabel {{ background: {background.name()}; color: {text.name()}; border-radius: 6px;"
                           " padding: 8px 12px; }")
        self.setCursor(Qt.CursorShape.PointingHandCursor)
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.timeout.connect(self.hide)
        parent.installEventFilter(self)     # follow the window when it is resized
        self.hide()

    def show_message(self, message: str) -> None:
        self.setText(message)
        self.setToolTip("Click to dismiss")
        self._place()
        self.show()
        self.raise_()
        self._timer.start(max(MIN_SHOW_MS, min(MAX_SHOW_MS, SHOW_MS_PER_CHAR * len(message))))

    def mousePressEvent(self, event) -> None:
        self.hide()
        super().mousePressEvent(event)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if watched is self.parent() and event.type() == QEvent.Type.Resize and self.isVisible():
            self._place()
        return False

    def _place(self) -> None:
        parent = self.parentWidget()
        width = min(560, parent.width() - 40)
        self.setFixedWidth(width)
        self.adjustSize()
        self.move(parent.width() - width - 20, parent.height() - self.height() - 40)
