"""The engine's lifecycle as a panel sees it, in one place.

A panel takes work (`_accepting`) from the service's sig_ready until shutdown starts (sig_stopping). EnginePanel
follows both signals once; a panel overrides `on_engine_ready` (read its data again), `on_engine_stopping` (close a
form that could no longer be saved) and `refresh_buttons` (what the operator may press now), which the base calls
after each of the two.
"""
from __future__ import annotations

from PySide6.QtWidgets import QWidget

from ..service import EngineService


class EnginePanel(QWidget):
    """A panel over EngineService. Mix ShownMixin in before it."""

    def __init__(self, service: EngineService, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._service = service
        self._accepting = service.ready    # False until sig_ready, and again once shutdown starts
        service.sig_ready.connect(self._engine_ready)
        service.sig_stopping.connect(self._engine_stopping)

    def on_engine_ready(self) -> None:
        """The engine takes work now (`_accepting` is already True)."""

    def on_engine_stopping(self) -> None:
        """Shutdown has started (`_accepting` is already False)."""

    def refresh_buttons(self, *_args) -> None:
        """Enables what the operator may do now; also a slot for selection and model signals."""

    def _engine_ready(self, _agents_up: int) -> None:
        self._accepting = True
        self.on_engine_ready()
        self.refresh_buttons()

    def _engine_stopping(self) -> None:
        self._accepting = False
        self.on_engine_stopping()
        self.refresh_buttons()
