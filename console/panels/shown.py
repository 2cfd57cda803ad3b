"""Whether the operator can see a panel now.

Qt keeps a dock that sits behind another tab "visible" (isVisible() stays True; only its tab changed), so a
panel that skips work while nobody looks at it cannot ask isVisible(). MainWindow tells it instead
(`set_shown`, from the dock's visibilityChanged); show and hide events count too, for a panel on its own.
A panel overrides on_shown / on_hidden to start and stop what only matters on screen (timers, reloads).
"""
from __future__ import annotations


class ShownMixin:
    """Mix into a QWidget subclass, before QWidget."""

    _behind = False

    def set_shown(self, shown: bool) -> None:
        was = self.is_shown()
        self._behind = not shown
        self._shown_changed(was)

    def is_shown(self) -> bool:
        return self.isVisible() and not self._behind     # type: ignore[attr-defined]

    def showEvent(self, event) -> None:                  # noqa: N802 - Qt's name
        super().showEvent(event)                         # type: ignore[misc]
        self._shown_changed(False)                       # a show event comes only to a hidden widget

    def hideEvent(self, event) -> None:                  # noqa: N802
        super().hideEvent(event)                         # type: ignore[misc]
        if not self._behind:
            self.on_hidden()

    def _shown_changed(self, was: bool) -> None:
        now = self.is_shown()
        if now and not was:
            self.on_shown()
        elif was and not now:
            self.on_hidden()

    def on_shown(self) -> None:
        """The panel came on screen."""

    def on_hidden(self) -> None:
        """The panel went off screen (behind another tab, or closed)."""
