"""Alerts panel: what the reputation book raised for an operator (automatic quarantine, score drop, agent
down, behaviour shift), newest first, each acknowledged by hand.

Open alerts are tinted and counted (the tab title and the status bar show the count); acknowledged
ones are greyed and say who acknowledged them. A message names agents and repeats what they did, so
it is shown as plain text only: model data in the table, a plain-text label below it, and an
escaped tooltip. Alerts fill from the store when the engine is ready (sig_trust_loaded) and arrive
live with every question (sig_trust_updated). "Open trace…" asks for the trace of the question that
raised the selected alert.
"""
from __future__ import annotations

import html
from typing import Iterable

from PySide6.QtCore import QModelIndex, Qt, Signal
from PySide6.QtGui import QColor, QIcon
from PySide6.QtWidgets import (QAbstractItemView, QApplication, QHBoxLayout, QHeaderView, QLabel, QPushButton, QStyle,
                               QTableView, QVBoxLayout, QWidget)

from engine.store.trust import AlertRow

from .. import style
from ..service import EngineService
from ..table_model import RIGHT, Column, RecordTableModel
from .approvals import when_text

# kind -> (label, colour, critical?): critical kinds get the red icon, the others the warning one.
ALERT_KINDS = {
    "auto_quarantine": ("quarantined", style.tones().bad, True),
    "agent_down": ("agent down", style.tones().bad, True),
    "score_drop": ("score drop", style.tones().warn, False),
    "behaviour_shift": ("behaviour shift", style.tones().warn, False),
}
KIND_MEANINGS = {
    "auto_quarantine": "The agent's score fell below the quarantine floor: it gets no work until an operator "
                       "releases it (Fleet tab, Release…).",
    "agent_down": "The agent failed several calls in a row.",
    "score_drop": "The agent lost much of its score on one question.",
    "behaviour_shift": "The agent's latency, reply size, error or agreement rate changed against its own history.",
}


def kind_label(kind: str) -> str:
    return ALERT_KINDS.get(kind, (kind.replace("_", " "), style.tones().warn, False))[0]


def kind_colour(kind: str) -> QColor:
    return ALERT_KINDS.get(kind, ("", style.tones().warn, False))[1]


def status_text(alert: AlertRow) -> str:
    if alert.open:
        return "open"
    return f"acknowledged by {alert.acknowledged_by} at {when_text(alert.acknowledged_at)}"


def escaped_tooltip(text: str) -> str:
    """Tooltips guess rich text from the content: wrap it escaped so an agent's '<b>' stays text."""
    return f"<p style='white-space:pre-wrap'>{html.escape(text)}</p>" if text else ""


def alert_order(alert: AlertRow) -> tuple:
    """Newest first (as the store lists them)."""
    return (-alert.at, -alert.id)


def alert_columns(icon) -> tuple[Column[AlertRow], ...]:
    def grey_unless_open(colour):
        return lambda a: colour(a) if a.open else style.tones().muted

    return (
        Column("Kind", lambda a: kind_label(a.kind), icon=icon, bold=lambda a: a.open,
               foreground=grey_unless_open(lambda a: kind_colour(a.kind)),
               tooltip=lambda a: KIND_MEANINGS.get(a.kind, "")),
        Column("Agent", lambda a: a.agent_id, bold=lambda a: a.open, foreground=grey_unless_open(lambda a: None)),
        Column("Message", lambda a: a.message, foreground=grey_unless_open(lambda a: None),
               tooltip=lambda a: escaped_tooltip(a.message)),
        Column("Raised", lambda a: when_text(a.at), align=RIGHT, foreground=grey_unless_open(lambda a: None)),
        Column("Status", status_text, bold=lambda a: a.open,
               foreground=lambda a: style.tones().bad if a.open else style.tones().muted),
    )


KIND_COLUMN, AGENT_COLUMN, MESSAGE_COLUMN, RAISED_COLUMN, STATUS_COLUMN = range(5)


class AlertsModel(RecordTableModel[AlertRow]):
    """Alerts keyed by id, newest first; an acknowledgement replaces its row in place."""

    def __init__(self, parent=None) -> None:
        self._icons: dict[bool, QIcon | None] = {}
        super().__init__(alert_columns(self._icon), parent,
                         row_background=lambda a: style.tones().warn_tint if a.open else None)

    def _icon(self, alert: AlertRow) -> QIcon | None:
        critical = ALERT_KINDS.get(alert.kind, ("", None, False))[2]
        if critical not in self._icons:
            app = QApplication.instance()
            pixmap = QStyle.StandardPixmap.SP_MessageBoxCritical if critical else QStyle.StandardPixmap.SP_MessageBoxWarning
            self._icons[critical] = app.style().standardIcon(pixmap) if app is not None else None
        return self._icons[critical]

    def set_alerts(self, alerts: Iterable[AlertRow]) -> None:
        """The alerts as stored; one this model already knows acknowledged stays acknowledged."""
        merged = {a.id: a for a in self.records()}
        for alert in alerts:
            known = merged.get(alert.id)
            if known is None or known.open or not alert.open:
                merged[alert.id] = alert
        self.set_records(sorted(merged.values(), key=alert_order))

    def upsert(self, alert: AlertRow) -> int:
        row = self.row_of(alert.id)
        if row >= 0:
            if self.record(row).open or not alert.open:      # never un-acknowledge
                self.replace_record(row, alert)
            return row
        row = next((r for r, known in enumerate(self.records()) if alert_order(alert) < alert_order(known)),
                   self.rowCount())
        self.beginInsertRows(QModelIndex(), row, row)
        self._records.insert(row, alert)
        self.endInsertRows()
        return row

    def row_of(self, alert_id: int) -> int:
        return next((row for row, alert in enumerate(self.records()) if alert.id == alert_id), -1)

    def open_count(self) -> int:
        return sum(alert.open for alert in self.records())

    def open_ids(self) -> list[int]:
        return [alert.id for alert in self.records() if alert.open]


class AlertsPanel(QWidget):
    sig_open_changed = Signal(int)          # how many alerts wait for an acknowledgement
    sig_agent_selected = Signal(str)        # the selected alert's agent

    def __init__(self, service: EngineService, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._service = service
        self._accepting = service.ready
        self._programmatic = False     # a selection the panel made itself is not the operator's choice of agent
        self.model = AlertsModel(self)

        self.summary = QLabel()
        self.acknowledge_button = QPushButton("Acknowledge")
        self.acknowledge_all_button = QPushButton("Acknowledge all")
        self.trace_button = QPushButton("Open trace…")
        self.table = QTableView()
        self.table.setModel(self.model)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.setWordWrap(False)
        self.table.verticalHeader().setVisible(False)
        style.compact_rows(self.table)
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(MESSAGE_COLUMN, QHeaderView.ResizeMode.Stretch)
        self.detail = QLabel()                   # the selected alert in full, as plain text
        self.detail.setTextFormat(Qt.TextFormat.PlainText)
        self.detail.setWordWrap(True)
        self.detail.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.detail.setStyleSheet("QLabel { padding: 2px 4px; }")

        top = QHBoxLayout()
        top.setContentsMargins(0, 0, 0, 0)
        top.addWidget(self.summary, 1)
        top.addWidget(self.acknowledge_button)
        top.addWidget(self.acknowledge_all_button)
        top.addWidget(self.trace_button)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 4, 0, 0)
        layout.setSpacing(4)
        layout.addLayout(top)
        layout.addWidget(self.table, 1)
        layout.addWidget(self.detail)

        self.table.selectionModel().currentRowChanged.connect(self._on_current_changed)
        self.table.clicked.connect(self._on_clicked)       # a click on the row already current still picks its agent
        self.acknowledge_button.clicked.connect(self.acknowledge_selected)
        self.acknowledge_all_button.clicked.connect(self.acknowledge_all)
        self.trace_button.clicked.connect(self.open_selected_trace)
        service.sig_ready.connect(self._on_ready)
        service.sig_stopping.connect(self._on_stopping)
        service.trust.sig_updated.connect(self._on_trust_updated)
        service.trust.sig_loaded.connect(self._on_trust_loaded)
        service.alerts.sig_acknowledged.connect(self.show_alert)
        for signal in (self.model.modelReset, self.model.rowsInserted, self.model.dataChanged):
            signal.connect(self._on_model_changed)
        self._on_model_changed()

    # --- alerts in -------------------------------------------------------------------------
    def _on_trust_updated(self, update) -> None:
        self.add_alerts(update.alerts)

    def _on_trust_loaded(self, _history, alerts: list[AlertRow]) -> None:
        self.show_alerts(alerts)

    def show_alerts(self, alerts: Iterable[AlertRow]) -> None:
        current = self.current_alert()
        self._programmatic = True
        try:
            self.model.set_alerts(alerts)
        finally:
            self._programmatic = False
        row = self.model.row_of(current.id) if current is not None else -1
        self._select(row if row >= 0 else (0 if self.model.rowCount() else -1))

    def add_alerts(self, alerts: Iterable[AlertRow]) -> None:
        for alert in alerts:
            self.show_alert(alert)

    def show_alert(self, alert: AlertRow) -> None:
        """A new alert, or one acknowledged: replaced in place; the first one is selected."""
        had_selection = self.current_alert() is not None
        self._programmatic = True
        try:
            self.model.upsert(alert)
        finally:
            self._programmatic = False
        if not had_selection:
            self._select(0)
        else:
            self._show_detail(self.current_alert())
        self._refresh_buttons()

    def current_alert(self) -> AlertRow | None:
        index = self.table.currentIndex()
        return self.model.record(index.row()) if index.isValid() and index.row() < self.model.rowCount() else None

    def select_first_open(self) -> None:
        """Unless an open alert is selected already, selects the newest open one (the status bar's link)."""
        current = self.current_alert()
        if current is not None and current.open:
            return
        row = next((r for r, alert in enumerate(self.model.records()) if alert.open), -1)
        if row >= 0:
            self._select(row)

    def select_next(self) -> None:
        self._step(+1)

    def select_previous(self) -> None:
        self._step(-1)

    def _step(self, delta: int) -> None:
        row = self.table.currentIndex().row()
        self._select(min(max(row + delta, 0), self.model.rowCount() - 1) if row >= 0 else 0)

    def focus_target(self) -> QWidget:
        return self.table

    def select_alert(self, alert_id: int) -> bool:
        row = self.model.row_of(alert_id)
        self._select(row)
        return row >= 0

    # --- acknowledging ---------------------------------------------------------------------
    def acknowledge_selected(self) -> None:
        alert = self.current_alert()
        if alert is not None and alert.open and self._accepting:
            self._service.alerts.acknowledge(alert.id)

    def acknowledge_all(self) -> None:
        if self._accepting:
            for alert_id in self.model.open_ids():
                self._service.alerts.acknowledge(alert_id)

    def open_selected_trace(self) -> None:
        alert = self.current_alert()
        if alert is not None and alert.trace_id:
            self._service.traces.open(alert.trace_id)

    # --- state -----------------------------------------------------------------------------
    def _on_ready(self, _agents_up: int) -> None:
        self._accepting = True
        self._refresh_buttons()

    def _on_stopping(self) -> None:
        self._accepting = False
        self._refresh_buttons()

    def _on_current_changed(self, current: QModelIndex, _previous: QModelIndex) -> None:
        alert = self.model.record(current.row()) if current.isValid() else None
        self._show_detail(alert)
        self._refresh_buttons()
        if alert is not None and not self._programmatic:
            self.sig_agent_selected.emit(alert.agent_id)

    def _on_clicked(self, index: QModelIndex) -> None:
        if index.isValid():
            self.sig_agent_selected.emit(self.model.record(index.row()).agent_id)

    def _show_detail(self, alert: AlertRow | None) -> None:
        if alert is None:
            self.detail.setText("No alert selected." if self.model.rowCount() else
                                "No alerts: the reputation book raises one when it quarantines an agent, "
                                "an agent's score drops sharply, or an agent goes down.")
            return
        trace = f" · trace_id {alert.trace_id}" if alert.trace_id else ""
        self.detail.setText(f"#{alert.id} {kind_label(alert.kind)} · {alert.agent_id} · raised {when_text(alert.at)}"
                            f"{trace}\n{alert.message}\n{status_text(alert)}")

    def _select(self, row: int) -> None:
        if 0 <= row < self.model.rowCount():
            self._programmatic = True
            try:
                self.table.setCurrentIndex(self.model.index(row, 0))
            finally:
                self._programmatic = False
            self.table.scrollTo(self.model.index(row, 0))
        else:
            self._show_detail(None)

    def _refresh_buttons(self, *_args) -> None:
        alert = self.current_alert()
        open_count = self.model.open_count()
        self.acknowledge_button.setEnabled(self._accepting and alert is not None and alert.open)
        self.acknowledge_all_button.setEnabled(self._accepting and open_count > 0)
        self.acknowledge_all_button.setText(f"Acknowledge all ({open_count})" if open_count else "Acknowledge all")
        self.trace_button.setEnabled(alert is not None and bool(alert.trace_id))
        self.trace_button.setToolTip("Show the trace of the question that raised the selected alert"
                                     if alert is not None and alert.trace_id else "The selected alert names no trace")
        if alert is not None and not alert.open:
            self.acknowledge_button.setToolTip(status_text(alert))
        elif not self._accepting:
            self.acknowledge_button.setToolTip("Waiting for the engine")
        else:
            self.acknowledge_button.setToolTip(f"Acknowledge the selected alert as {self._service.operator}")

    def _on_model_changed(self, *_args) -> None:
        open_count = self.model.open_count()
        done = self.model.rowCount() - open_count
        self.summary.setText(f"<b>{open_count} open</b> · {done} acknowledged · newest first" if self.model.rowCount()
                             else "No alerts yet")
        self._refresh_buttons()
        if self.current_alert() is None:
            self._show_detail(None)
        self.sig_open_changed.emit(open_count)

    def needs_attention(self) -> bool:
        return self.model.open_count() > 0

    def tab_title(self) -> str:
        open_count = self.model.open_count()
        return f"Alerts ({open_count} open)" if open_count else "Alerts"
