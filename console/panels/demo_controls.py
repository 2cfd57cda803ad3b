"""Demo traffic controls, for the toolbar or the status bar: a switch, the rate and a live count.

    [Demo traffic] [ 1.00 q/s ]  12 asked · 11 answered · 1 in flight · 0 skipped

The switch starts and stops the engine's demo traffic (engine/demo.py: the demo questions round-robin, each
at its own tier); the rate applies at once. The count follows the engine's DemoTrafficChanged events (at most
one a second), so the widget costs the UI thread nothing between them. The switch waits for the fleet: it is
enabled from sig_ready until shutdown.

MainWindow binds the `demo.toggle` action to set_running and keeps the action checked from
sig_running_changed; sig_switched says the operator flipped it (to remember the choice), which a stop at
shutdown is not.
"""
from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QDoubleSpinBox, QHBoxLayout, QToolButton, QWidget

from .. import style, untrusted
from ..service import EngineService
from ..service.demo import DEFAULT_RATE, RATE_MAX, RATE_MIN, DemoStats
from ..untrusted import PlainLabel
from .base import EnginePanel

OFF_TEXT = "off"
WIDEST_LINE = "9999 asked · 9999 answered · 99 in flight · 9999 skipped"
WAITING_TIP = "Demo traffic can start once the fleet is ready"
SWITCH_TIP = ("Feed the demo questions to the fleet at the chosen rate, each at its own risk tier: trust moves, "
              "liars get quarantined, high-risk answers wait for approval")


class DemoControls(EnginePanel):
    sig_running_changed = Signal(bool)        # demo traffic started or stopped (by anyone, shutdown included)
    sig_switched = Signal(bool)               # the operator turned it on or off (the switch, set_running)
    sig_rate_chosen = Signal(float)           # the operator chose a rate (questions a second)

    def __init__(self, service: EngineService, rate: float = DEFAULT_RATE, parent: QWidget | None = None) -> None:
        super().__init__(service, parent)
        self._running = False

        self.switch = QToolButton()
        self.switch.setText("Demo traffic")
        self.switch.setCheckable(True)
        self.switch.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextOnly)
        self.rate = QDoubleSpinBox()
        self.rate.setRange(RATE_MIN, RATE_MAX)
        self.rate.setDecimals(2)
        self.rate.setSingleStep(0.25)
        self.rate.setSuffix(" q/s")
        self.rate.setKeyboardTracking(False)          # a rate per finished edit, not per keystroke
        self.rate.setValue(min(max(rate, RATE_MIN), RATE_MAX))
        self.rate.setToolTip(f"Demo questions a second ({RATE_MIN:g} to {RATE_MAX:g}); a tick that finds the "
                             "fleet still busy with earlier ones is skipped, and counted")
        self.line = PlainLabel(OFF_TEXT)
        # Room for a long count from the start, so the status bar does not shift as the numbers grow.
        self.line.setMinimumWidth(self.line.fontMetrics().horizontalAdvance(WIDEST_LINE))

        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(6)
        layout.addWidget(self.switch)
        layout.addWidget(self.rate)
        layout.addWidget(self.line)

        self.switch.toggled.connect(self._on_switch)
        self.rate.valueChanged.connect(self._on_rate)
        service.demo.sig_changed.connect(self.show_stats)
        style.theme_signals().sig_changed.connect(self._restyle)
        self.refresh_buttons()
        self._restyle()

    # --- the operator's hand -------------------------------------------------------------
    def set_running(self, running: bool) -> None:
        """On or off, as the switch does (the demo.toggle action binds here); the same state again is a no-op."""
        if bool(running) != self.switch.isChecked():
            self.switch.setChecked(bool(running))

    def is_running(self) -> bool:
        return self._running

    def rate_value(self) -> float:
        return float(self.rate.value())

    def _on_switch(self, checked: bool) -> None:
        demo = self._service.demo
        if checked:
            if not demo.start(self.rate_value()):      # not ready, or a refusal: sig_error said why
                self._show_switch(False)
                return
        else:
            demo.stop()
        self.sig_switched.emit(checked)

    def _on_rate(self, value: float) -> None:
        if self._running:
            self._service.demo.set_rate(value)
        self.sig_rate_chosen.emit(float(value))

    # --- what the engine says --------------------------------------------------------------
    def show_stats(self, stats: DemoStats) -> None:
        """The engine's counts (sig_changed): the line, the switch and, when another hand changed it, the rate."""
        self.line.setText(stats.line() if stats.running or stats.asked else OFF_TEXT)
        tip = f"Last failure: {stats.last_error}" if stats.last_error else ""
        self.line.setToolTip(untrusted.tooltip(tip) if tip else "")
        if stats.running and abs(stats.rate - self.rate_value()) > 1e-9:
            self.rate.blockSignals(True)
            self.rate.setValue(stats.rate)
            self.rate.blockSignals(False)
        self._show_switch(stats.running)
        if stats.running != self._running:
            self._running = stats.running
            self._restyle()
            self.sig_running_changed.emit(stats.running)

    def _show_switch(self, checked: bool) -> None:
        self.switch.blockSignals(True)
        self.switch.setChecked(checked)
        self.switch.blockSignals(False)

    def refresh_buttons(self, *_args) -> None:
        self.switch.setEnabled(self._accepting and not self._service.reads_only)
        if self._service.reads_only:
            self.switch.setToolTip(untrusted.tooltip(self._service.viewer_text()))
        else:
            self.switch.setToolTip(SWITCH_TIP if self._accepting else WAITING_TIP)

    def _restyle(self, *_args) -> None:
        # On reads as on at a glance (bold, the good tone); the count is muted while the traffic is off.
        self.switch.setStyleSheet(f"QToolButton:checked {{ {style.fg('good')}; font-weight: bold; }}")
        self.line.setStyleSheet(f"QLabel {{ {style.fg('text' if self._running else 'muted')} }}")
