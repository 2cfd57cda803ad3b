"""Small layout helpers the panels share."""
from __future__ import annotations

from PySide6.QtWidgets import QVBoxLayout, QWidget


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
