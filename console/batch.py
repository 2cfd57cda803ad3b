"""Batching for panel updates: many engine events a second, one redraw per interval.

Under demo traffic the engine reports every agent call, stage score and score point as it happens
(hundreds of events a second); redrawing a table or a plot for each would stall the UI thread. A
Coalescer keeps what arrived since the last flush (the latest value per key, or every value in order)
and hands it over once per interval, from a single-shot Qt timer on the UI thread. The first item of a
quiet spell starts the timer, so a lone event is shown within one interval and never waits for more.
"""
from __future__ import annotations

from typing import Callable, Generic, Hashable, TypeVar

from PySide6.QtCore import QObject, QTimer

T = TypeVar("T")
FLUSH_MS = 100          # 10 redraws a second at most: smooth to the eye, cheap for the loop


class Coalescer(QObject, Generic[T]):
    """add(item) or put(key, item); flush(items) runs at most once per interval with what came meanwhile
    (put keeps only the latest item per key, in the order keys first arrived)."""

    def __init__(self, flush: Callable[[list[T]], None], interval_ms: int = FLUSH_MS,
                 parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._flush = flush
        self._items: list[T] = []
        self._keyed: dict[Hashable, T] = {}
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(interval_ms)
        self._timer.timeout.connect(self.flush_now)

    def add(self, item: T) -> None:
        self._items.append(item)
        self._arm()

    def put(self, key: Hashable, item: T) -> None:
        self._keyed[key] = item             # a newer item replaces the waiting one, in its place
        self._arm()

    def pending(self) -> int:
        return len(self._items) + len(self._keyed)

    def flush_now(self) -> None:
        """Hands over what is waiting at once (also what the timer calls); nothing waiting, no call."""
        self._timer.stop()
        items = self._items + list(self._keyed.values())
        self._items, self._keyed = [], {}
        if items:
            self._flush(items)

    def _arm(self) -> None:
        if not self._timer.isActive():
            self._timer.start()
