"""Alerts panel: what the engine raised for an operator, newest first — its severity, when, what kind, which
agent, the message, the question's trace and where it stands (open, acknowledged by whom and why, or muted
by a silence) — with filters, the selected alert in full, and the operator's two answers to it:

- Acknowledge… (one alert or several selected): an inline form with an optional comment, Enter confirms,
  Escape cancels. A refusal for some of them keeps the form open on those, saying why.
- Silence…: an inline form muting a kind, an agent or both (the selected alert's, preselected) for 15m, 1h,
  4h, 1d or a typed duration, with a required comment. Active silences are listed (who, what, until when,
  why) with "End now". A silence mutes notification, never detection: muted alerts are still listed,
  greyed, "muted by silence #n"; they do not count in the tab title and do not notify.

Alerts come from the alerts adapter: loaded when the engine is ready (sig_loaded), then live (sig_raised,
sig_changed), batched by a Coalescer because demo traffic raises many a second. Silences change through
sig_silences; one expiring sends no event, so a timer set at the next Silence.ends_at re-marks the rows
(the clock is injectable so tests can move time). Agents' text is plain text everywhere (model data, a
plain-text detail label, escaped tooltips).
"""
from __future__ import annotations

import time
from typing import Callable, Iterable, Sequence

from PySide6.QtCore import QItemSelectionModel, QModelIndex, Qt, QTimer, Signal
from PySide6.QtWidgets import (QAbstractItemView, QCheckBox, QComboBox, QHBoxLayout, QHeaderView,
                               QPushButton, QVBoxLayout, QWidget)

from engine import AlertRow, KINDS, Severity, Silence, alert_plain

from .. import style
from ..batch import Coalescer
from ..layout import column, list_table, splitter
from ..service import EngineService
from ..service.alerts import NEW_SILENCE
from ..untrusted import PlainLabel
from .alerts_forms import AcknowledgeForm, SilenceForm, ids_text
from .alerts_model import (AGENT_COLUMN, ENGINE_AGENT, KIND_COLUMN, MESSAGE_COLUMN, SEVERITY_COLUMN,
                           SILENCE_WHY_COLUMN, STATUS_COLUMN, TIME_COLUMN, TRACE_COLUMN, AlertsFilter, AlertsModel,
                           SilencesModel, detail_text, silence_target, status_text, until_text)
from .base import EnginePanel

__all__ = ["AGENT_COLUMN", "KIND_COLUMN", "MESSAGE_COLUMN", "SEVERITY_COLUMN", "STATUS_COLUMN", "TIME_COLUMN",
           "TRACE_COLUMN", "AlertsModel", "AlertsPanel", "status_text"]

MAX_TIMER_MS = 3_600_000        # a timer waits at most an hour, then looks again (silences last up to 30 days)
RESET_BATCH = 50                # more new rows than this at once: one model reset, not one insert each
EXPIRY_SLACK_MS = 50            # wake just after the end, never just before it
EMPTY_TEXT = ("No alerts. The engine raises one when an agent is quarantined or goes down, the gateway blocks "
              "an injection, the cascade monitor fires, the agents cannot agree, or a score drops sharply.")
STATUS_WIDTH = 220              # pixels the status column starts at (the detail has it whole)
SEVERITY_CHOICES = (("Any severity", None), *((s.value.capitalize(), s.value) for s in Severity))   # critical first


def _severity(value: str | None) -> Severity | None:
    return Severity(value) if value else None


def _combo(tip: str) -> QComboBox:
    combo = QComboBox()
    combo.setToolTip(tip)
    combo.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToContents)
    return combo


class AlertsPanel(EnginePanel):
    sig_open_changed = Signal(int)          # unacknowledged alerts listed (muted ones included)
    sig_loud_changed = Signal(int)          # unacknowledged and not muted: what should get a person's attention
    sig_agent_selected = Signal(str)        # the agent of the alert the operator picked

    def __init__(self, service: EngineService, parent: QWidget | None = None, *,
                 clock: Callable[[], float] = time.time) -> None:
        super().__init__(service, parent)
        self._clock = clock
        self._programmatic = False      # a selection the panel made itself is not the operator's choice of agent
        self._batching = False          # rows going in one by one: count them once, at the end
        self._silences: tuple[Silence, ...] = ()      # active as last known
        self._counts = (-1, -1)
        self.model = AlertsModel(self)
        self.proxy = AlertsFilter(self)
        self.proxy.setSourceModel(self.model)
        self.silences_model = SilencesModel(self)
        self._incoming: Coalescer[AlertRow] = Coalescer(self._flush_incoming, parent=self)
        self.silence_timer = QTimer(self)
        self.silence_timer.setSingleShot(True)
        self.silence_timer.setTimerType(Qt.TimerType.PreciseTimer)
        self.silence_timer.timeout.connect(self.refresh_muting)

        # --- the filter bar ---
        self.summary = PlainLabel()
        self.open_only = QCheckBox("Open only")
        self.open_only.setToolTip("Hide acknowledged alerts")
        self.severity_filter = _combo("Show one severity only")
        for text, severity in SEVERITY_CHOICES:
            self.severity_filter.addItem(text, severity)
        self.kind_filter = _combo("Show one kind of alert only")
        self.kind_filter.addItem("Any kind", None)
        for kind, info in KINDS.items():
            self.kind_filter.addItem(info.label, kind.value)
        self.agent_filter = _combo("Show one agent's alerts only")
        self.agent_filter.addItem("Any agent", None)
        self.critical_first = QCheckBox("Critical first")
        self.critical_first.setToolTip("Sort by severity, then newest first")
        self.refresh_button = QPushButton("Refresh")
        self.refresh_button.setToolTip("Read the alerts and silences again (`main.py alerts` may have changed them)")

        # --- the table ---
        self.table = list_table(self.proxy)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.ExtendedSelection)
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(MESSAGE_COLUMN, QHeaderView.ResizeMode.Stretch)
        header.setSectionResizeMode(STATUS_COLUMN, QHeaderView.ResizeMode.Interactive)
        header.resizeSection(STATUS_COLUMN, STATUS_WIDTH)

        # --- the detail, the buttons and the forms ---
        self.detail = PlainLabel()
        self.detail.setWordWrap(True)
        self.detail.setAlignment(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignTop)
        self.detail.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.detail.setMinimumHeight(self.fontMetrics().lineSpacing() * 5)
        self.acknowledge_button = QPushButton("Acknowledge…")
        self.silence_button = QPushButton("Silence…")
        self.trace_button = QPushButton("Open trace")
        self.message = PlainLabel()
        self.message.setWordWrap(True)
        self._message_tone: str | None = None
        style.theme_signals().sig_changed.connect(self._restyle_message)
        self.ack_form = AcknowledgeForm(service.operator)
        self.silence_form = SilenceForm(clock)
        self.action_row = QWidget()             # the buttons; a form takes their place while it is open
        buttons = QHBoxLayout(self.action_row)
        buttons.setContentsMargins(0, 0, 0, 0)
        for button in (self.acknowledge_button, self.silence_button, self.trace_button):
            buttons.addWidget(button)
        buttons.addStretch(1)

        # --- the active silences ---
        self.silences_title = PlainLabel()
        self.silences_title.setFont(style.scaled_font(self.font(), 1.0, bold=True))
        self.silences_table = list_table(self.silences_model)
        silences_header = self.silences_table.horizontalHeader()
        silences_header.setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        silences_header.setSectionResizeMode(SILENCE_WHY_COLUMN, QHeaderView.ResizeMode.Stretch)
        self.end_silence_button = QPushButton("End now")
        self.end_silence_button.setToolTip("End the selected silence: its alerts notify again")
        silences_bar = QHBoxLayout()
        silences_bar.setContentsMargins(0, 0, 0, 0)
        silences_bar.addWidget(self.silences_title, 1)
        silences_bar.addWidget(self.end_silence_button)
        silences_box = QWidget()
        silences_layout = QVBoxLayout(silences_box)
        silences_layout.setContentsMargins(0, 4, 0, 0)
        silences_layout.setSpacing(2)
        silences_layout.addLayout(silences_bar)
        silences_layout.addWidget(self.silences_table, 1)

        top = QHBoxLayout()
        top.setContentsMargins(0, 0, 0, 0)
        top.addWidget(self.summary, 1)
        for widget in (self.open_only, self.severity_filter, self.kind_filter, self.agent_filter,
                       self.critical_first, self.refresh_button):
            top.addWidget(widget)
        # The list takes the whole width; below it the selected alert and its forms, beside the silences.
        side = column(self.detail, self.action_row, self.message, self.ack_form, self.silence_form, spacing=4)
        below = splitter(Qt.Orientation.Horizontal, (side, 3), (silences_box, 2), sizes=[760, 520])
        self.body = splitter(Qt.Orientation.Vertical, (self.table, 3), (below, 2), sizes=[230, 160])
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 4, 0, 0)
        layout.setSpacing(4)
        layout.addLayout(top)
        layout.addWidget(self.body, 1)

        # --- wiring ---
        self.open_only.toggled.connect(lambda on: self._filter(open_only=on))
        self.severity_filter.currentIndexChanged.connect(
            lambda _i: self._filter(severity=_severity(self.severity_filter.currentData())))
        self.kind_filter.currentIndexChanged.connect(lambda _i: self._filter(kind=self.kind_filter.currentData()))
        self.agent_filter.currentIndexChanged.connect(lambda _i: self._filter(agent=self.agent_filter.currentData()))
        self.critical_first.toggled.connect(self._sort_critical_first)
        self.refresh_button.clicked.connect(self.reload)
        self.table.selectionModel().currentRowChanged.connect(self._on_current_changed)
        self.table.selectionModel().selectionChanged.connect(self._on_selection_changed)
        self.table.clicked.connect(self._on_clicked)        # a click on the row already current still picks its agent
        self.table.doubleClicked.connect(lambda _index: self.open_selected_trace())
        self.silences_table.selectionModel().currentRowChanged.connect(self.refresh_buttons)
        self.acknowledge_button.clicked.connect(self.acknowledge_selected)
        self.silence_button.clicked.connect(self.silence_selected)
        self.trace_button.clicked.connect(self.open_selected_trace)
        self.end_silence_button.clicked.connect(self.end_selected_silence)
        self.ack_form.sig_confirmed.connect(self._on_ack_confirmed)
        self.ack_form.sig_cancelled.connect(self._form_closed)
        self.silence_form.sig_confirmed.connect(self._on_silence_confirmed)
        self.silence_form.sig_cancelled.connect(self._form_closed)
        alerts = service.alerts
        alerts.sig_loaded.connect(self._on_loaded)
        alerts.sig_raised.connect(self._on_raised)
        alerts.sig_changed.connect(lambda row: self._incoming.put(row.id, row))
        alerts.sig_silences.connect(self.show_silences)
        alerts.sig_acknowledge_done.connect(self._on_acknowledge_done)
        alerts.sig_silence_failed.connect(self._on_silence_failed)
        for signal in (self.model.modelReset, self.model.rowsInserted, self.model.rowsRemoved, self.model.dataChanged):
            signal.connect(self._on_model_changed)
        for signal in (self.proxy.modelReset, self.proxy.rowsInserted, self.proxy.rowsRemoved,
                       self.proxy.layoutChanged):
            signal.connect(self._after_filter)
        self.silences_model.modelReset.connect(self._on_silences_model_changed)
        self._on_model_changed()
        self._on_silences_model_changed()
        if self._accepting:
            self.reload()

    # --- alerts in -------------------------------------------------------------------------
    def reload(self) -> None:
        if self._accepting:
            self._service.alerts.load()

    def _on_loaded(self, alerts: Sequence[AlertRow], silences: Sequence[Silence]) -> None:
        self._incoming.flush_now()         # what arrived live before the read is merged with it, not after
        self.show_alerts(alerts)
        self._set_silences(silences)

    def _on_raised(self, alerts: Sequence[AlertRow]) -> None:
        known = {s.id for s in self._silences}
        for alert in alerts:
            self._incoming.put(alert.id, alert)
        if any(a.silenced_by is not None and a.silenced_by not in known for a in alerts):
            self.reload()                  # muted by a silence made elsewhere (`main.py alerts silence`)

    def _flush_incoming(self, alerts: list[AlertRow]) -> None:
        self.add_alerts(alerts)

    def show_alerts(self, alerts: Iterable[AlertRow]) -> None:
        """The alerts as stored; the selection stays on its alert (or goes to the newest)."""
        selected = [a.id for a in self.selected_alerts()]
        current = self.current_alert()
        self._programmatic = True
        try:
            self.model.set_alerts(alerts)
        finally:
            self._programmatic = False
        self._restore_selection(current.id if current is not None else None, selected)
        self._show_detail()

    def add_alerts(self, alerts: Iterable[AlertRow]) -> None:
        """New alerts or new states of known ones, each in its place (views keep their selection); a big
        batch is merged in one reset instead. Counts and titles are updated once per batch."""
        alerts = list(alerts)
        if len(alerts) > RESET_BATCH:
            self.show_alerts(alerts)
            return
        had_selection = self.current_alert() is not None
        self._programmatic = self._batching = True
        try:
            self.model.add_alerts(alerts)
        finally:
            self._programmatic = self._batching = False
        self._on_model_changed()
        if not had_selection:
            self.select_row(0)
        self._show_detail()
        self.refresh_buttons()

    def show_alert(self, alert: AlertRow) -> None:
        self.add_alerts([alert])

    # --- silences --------------------------------------------------------------------------
    def show_silences(self, silences: Sequence[Silence]) -> None:
        """The silences active now (the engine's SilencesChanged): rows re-marked at once."""
        self._incoming.flush_now()         # rows waiting were marked before this change
        previous = {s.id for s in self._silences}
        self._set_silences(silences)
        self.refresh_muting()
        if self.silence_form.is_open() and self.silence_form.saving:
            added = [s for s in silences if s.id not in previous]
            self.silence_form.finish()
            self._form_closed()
            if added:
                silence = added[0]
                self._say(f"Silence #{silence.id} mutes {silence_target(silence)} until {until_text(silence)}.")

    def _set_silences(self, silences: Sequence[Silence]) -> None:
        self._silences = tuple(silences)
        current = self.current_silence()
        self.silences_model.set_silences(s for s in self._silences if s.active(self._clock()))
        row = self.silences_model.row_of(current.id) if current is not None else -1
        if row >= 0:
            self.silences_table.setCurrentIndex(self.silences_model.index(row, 0))
        self._schedule_expiry()

    def refresh_muting(self) -> None:
        """Re-marks the alerts with the silences active now and forgets those that ended (the timer calls
        it at the next end; so does a change of silences)."""
        now = self._clock()
        active = tuple(s for s in self._silences if s.active(now))
        if len(active) != self.silences_model.rowCount():
            self._set_silences(active)
        else:
            self._silences = active
            self._schedule_expiry()
        self.model.remark(active, now)
        self._show_detail()

    def next_silence_end(self) -> float | None:
        """When the next active silence stops muting (the timer is set for it), or None."""
        return self.silences_model.next_end()

    def _schedule_expiry(self) -> None:
        end = self.next_silence_end()
        if end is None:
            self.silence_timer.stop()
            return
        wait_ms = max(0.0, (end - self._clock()) * 1000) + EXPIRY_SLACK_MS
        self.silence_timer.start(int(min(wait_ms, MAX_TIMER_MS)))

    def current_silence(self) -> Silence | None:
        index = self.silences_table.currentIndex()
        rows = self.silences_model.rowCount()
        return self.silences_model.record(index.row()) if index.isValid() and index.row() < rows else None

    def end_selected_silence(self) -> None:
        silence = self.current_silence()
        if silence is not None and self._accepting:
            self._service.alerts.end_silence(silence.id)

    def _on_silence_failed(self, silence_id: int, message: str) -> None:
        if silence_id == NEW_SILENCE and self.silence_form.is_open():
            self.silence_form.failed(message)
        else:
            self._say(f"Silence #{silence_id}: {message}" if silence_id else message, "bad")

    # --- selection -------------------------------------------------------------------------
    def current_alert(self) -> AlertRow | None:
        return self._alert_at(self.table.currentIndex())

    def selected_alerts(self) -> list[AlertRow]:
        """The selected rows' alerts in table order (the current one when no row is selected)."""
        rows = sorted({index.row() for index in self.table.selectionModel().selectedRows()})
        alerts = [a for a in (self._alert_at(self.proxy.index(r, 0)) for r in rows) if a is not None]
        if not alerts and self.current_alert() is not None:
            alerts = [self.current_alert()]
        return alerts

    def visible_alerts(self) -> list[AlertRow]:
        """The alerts the filters let through, in table order."""
        return [self.model.record(self.proxy.mapToSource(self.proxy.index(r, 0)).row())
                for r in range(self.proxy.rowCount())]

    def _alert_at(self, index: QModelIndex) -> AlertRow | None:
        if not index.isValid():
            return None
        source = self.proxy.mapToSource(index)
        return self.model.record(source.row()) if source.isValid() and source.row() < self.model.rowCount() else None

    def select_row(self, row: int) -> None:
        """Selects the table's row `row` (after filtering) alone."""
        if 0 <= row < self.proxy.rowCount():
            index = self.proxy.index(row, 0)
            self._programmatic = True
            try:
                self.table.selectionModel().setCurrentIndex(
                    index, QItemSelectionModel.SelectionFlag.ClearAndSelect | QItemSelectionModel.SelectionFlag.Rows)
            finally:
                self._programmatic = False
            self.table.scrollTo(index)
        self._show_detail()

    def select_alert(self, alert_id: int) -> bool:
        source = self.model.row_of(alert_id)
        row = self.proxy.mapFromSource(self.model.index(source, 0)).row() if source >= 0 else -1
        self.select_row(row)
        return row >= 0

    def select_alerts(self, alert_ids: Iterable[int]) -> None:
        """Selects several alerts (the first one current), as a shift-click would."""
        ids = list(alert_ids)
        if not ids:
            return
        self.select_alert(ids[0])
        flags = QItemSelectionModel.SelectionFlag.Select | QItemSelectionModel.SelectionFlag.Rows
        for alert_id in ids[1:]:
            source = self.model.row_of(alert_id)
            if source >= 0:
                index = self.proxy.mapFromSource(self.model.index(source, 0))
                if index.isValid():
                    self.table.selectionModel().select(index, flags)

    def _restore_selection(self, current_id: int | None, selected_ids: Sequence[int]) -> None:
        if current_id is not None and self.model.row_of(current_id) >= 0:
            self.select_alerts([current_id, *(i for i in selected_ids if i != current_id)])
        elif self.proxy.rowCount():
            self.select_row(0)

    def select_next(self) -> None:
        self._step(+1)

    def select_previous(self) -> None:
        self._step(-1)

    def _step(self, delta: int) -> None:
        row = self.table.currentIndex().row()
        self.select_row(min(max(row + delta, 0), self.proxy.rowCount() - 1) if row >= 0 else 0)
        self._pick_agent(self.current_alert())          # the operator moved: the fleet follows

    def select_first_open(self) -> None:
        """Unless an open alert is selected already, selects the newest loud one (else the newest open one);
        filters that hide every open alert are cleared first (the status bar's link lands on something)."""
        current = self.current_alert()
        if current is not None and current.open:
            return
        if not any(a.open for a in self.visible_alerts()) and self.model.open_count():
            self.clear_filters()
        visible = self.visible_alerts()
        row = next((r for r, a in enumerate(visible) if a.loud), next((r for r, a in enumerate(visible) if a.open), -1))
        if row >= 0:
            self.select_row(row)

    def _filter(self, **changes) -> None:
        self._programmatic = True        # rows the filter hides move the selection: not the operator's pick
        try:
            self.proxy.set_filter(**changes)
        finally:
            self._programmatic = False
        self._after_filter()

    def _sort_critical_first(self, on: bool) -> None:
        self._programmatic = True
        try:
            self.proxy.set_critical_first(on)
        finally:
            self._programmatic = False

    def clear_filters(self) -> None:
        self.open_only.setChecked(False)
        for combo in (self.severity_filter, self.kind_filter, self.agent_filter):
            combo.setCurrentIndex(0)

    def focus_target(self) -> QWidget:
        return self.table

    def _on_current_changed(self, current: QModelIndex, _previous: QModelIndex) -> None:
        if not self._programmatic:
            self._pick_agent(self._alert_at(current))

    def _pick_agent(self, alert: AlertRow | None) -> None:
        if alert is not None and alert.agent_id:        # "" is the engine's own work: no agent to show
            self.sig_agent_selected.emit(alert.agent_id)

    def _on_selection_changed(self, *_args) -> None:
        self._show_detail()
        form_ids = set(self.ack_form.ids)
        if self.ack_form.is_open() and not self.ack_form.saving and form_ids != self._open_selected_ids_set():
            self.ack_form.close_form()              # the form is about the alerts it names, not a new selection
        self.refresh_buttons()

    def _open_selected_ids_set(self) -> set[int]:
        return {a.id for a in self.selected_alerts() if a.open}

    def _on_clicked(self, index: QModelIndex) -> None:
        self._pick_agent(self._alert_at(index))

    def _after_filter(self, *_args) -> None:
        """A row is always current while one is shown, so the detail is never stale."""
        if self.current_alert() is None and self.proxy.rowCount():
            self.select_row(0)
        self._show_detail()
        self.refresh_buttons()

    # --- acknowledging ---------------------------------------------------------------------
    def acknowledge_selected(self) -> None:
        """Opens the acknowledge form for the selected open alerts."""
        ids = [a.id for a in self.selected_alerts() if a.open]
        if not ids or not self._accepting or self.silence_form.saving:
            return
        self.silence_form.hide()
        self._say("")
        self.action_row.hide()
        self.ack_form.open_for(ids)
        self.refresh_buttons()

    def _on_ack_confirmed(self, ids: tuple[int, ...], comment: str) -> None:
        self._service.alerts.acknowledge(ids, comment)

    def _on_acknowledge_done(self, done: tuple[int, ...], failed: dict[int, str]) -> None:
        self._incoming.flush_now()         # the acknowledged rows, before the form says they are
        form = self.ack_form
        if not (form.is_open() and form.saving and set(form.ids) == set(done) | set(failed)):
            if failed:
                self._say("Not acknowledged: " + "; ".join(f"#{i}: {why}" for i, why in failed.items()), "bad")
            return
        if failed:
            form.failed_some(failed, len(done))
            return
        form.finish()
        self._form_closed()
        self._say(f"Acknowledged {ids_text(done)} as {self._service.operator}.")

    # --- silencing -------------------------------------------------------------------------
    def silence_selected(self) -> None:
        """Opens the silence form, the selected alert's kind and agent preselected."""
        if not self._accepting or self.ack_form.saving:
            return
        alert = self.current_alert()
        self.ack_form.hide()
        self._say("")
        self.action_row.hide()
        self.silence_form.open_for(alert.kind if alert is not None else None,
                                   alert.agent_id or None if alert is not None else None, self._agents())
        self.refresh_buttons()

    def _agents(self) -> list[str]:
        """Agents a silence may name: the fleet's, and any an alert named."""
        fleet = {view.spec.id for view in self._service.fleet.agents()}
        return sorted(fleet | {a.agent_id for a in self.model.records() if a.agent_id})

    def _on_silence_confirmed(self, kind: str | None, agent_id: str | None, duration_s: float, comment: str) -> None:
        self._service.alerts.silence(kind, agent_id, duration_s, comment)

    # --- trace -------------------------------------------------------------------------------
    def open_selected_trace(self) -> None:
        alert = self.current_alert()
        if alert is None:
            return
        if alert.trace_id:
            self._service.traces.open(alert.trace_id)
        else:
            self._say(f"Alert #{alert.id} names no trace: no question raised it.", "muted")

    # --- state -------------------------------------------------------------------------------
    def on_engine_ready(self) -> None:
        self.reload()

    def on_engine_stopping(self) -> None:
        self.silence_timer.stop()

    def _form_closed(self) -> None:
        self.action_row.show()
        self.refresh_buttons()

    def _say(self, text: str, tone: str | None = None) -> None:
        self._message_tone = tone
        self.message.setText(text)
        self._restyle_message()

    def _restyle_message(self, *_args) -> None:
        tone = self._message_tone
        self.message.setStyleSheet(f"QLabel {{ {style.fg(tone)}; }}" if tone else "")

    def _show_detail(self) -> None:
        selected = self.selected_alerts()
        if len(selected) > 1:
            open_ids = [a.id for a in selected if a.open]
            self.detail.setText(f"{len(selected)} alerts selected, {len(open_ids)} open"
                                + (f" ({ids_text(open_ids)}): Acknowledge… acknowledges those." if open_ids else "."))
        elif selected:
            self.detail.setText(detail_text(selected[0]))
        elif self.model.rowCount():
            self.detail.setText("No alert matches the filters." if not self.proxy.rowCount() else "No alert selected.")
        else:
            self.detail.setText(EMPTY_TEXT)

    def refresh_buttons(self, *_args) -> None:
        alert = self.current_alert()
        open_selected = [a for a in self.selected_alerts() if a.open]
        forms_closed = not self.ack_form.is_open() and not self.silence_form.is_open()
        self.acknowledge_button.setEnabled(self._accepting and bool(open_selected) and forms_closed)
        self.acknowledge_button.setText(f"Acknowledge {len(open_selected)}…" if len(open_selected) > 1
                                        else "Acknowledge…")
        self.silence_button.setEnabled(self._accepting and forms_closed)
        self.trace_button.setEnabled(alert is not None and bool(alert.trace_id))
        self.trace_button.setToolTip("Show the trace of the question that raised the selected alert"
                                     if alert is not None and alert.trace_id else "The selected alert names no trace")
        self.end_silence_button.setEnabled(self._accepting and self.current_silence() is not None)
        if not self._accepting:
            self.acknowledge_button.setToolTip("Waiting for the engine")
        elif alert is not None and not open_selected:
            self.acknowledge_button.setToolTip(status_text(alert))
        else:
            self.acknowledge_button.setToolTip(f"Acknowledge the selected alert(s) as {self._service.operator}, "
                                               "with a comment")

    def _on_model_changed(self, *_args) -> None:
        if self._batching:
            return
        self._refresh_agent_filter()
        open_count, loud = self.model.open_count(), self.model.loud_count()
        muted, done = open_count - loud, self.model.rowCount() - open_count
        if self.model.rowCount():
            self.summary.setText(f"{loud} open · {muted} muted · {done} acknowledged · "
                                 f"acknowledging as {self._service.operator}")
        else:
            self.summary.setText("No alerts yet")
        self.refresh_buttons()
        if (open_count, loud) != self._counts:
            self._counts = (open_count, loud)
            self.sig_open_changed.emit(open_count)
            self.sig_loud_changed.emit(loud)

    def _refresh_agent_filter(self) -> None:
        """The agent filter offers every agent an alert named (the engine's own work as "engine")."""
        known = {self.agent_filter.itemData(i) for i in range(1, self.agent_filter.count())}
        for agent in sorted({a.agent_id for a in self.model.records()} - known):
            self.agent_filter.addItem(alert_plain(agent, 40) or ENGINE_AGENT, agent)

    def _on_silences_model_changed(self, *_args) -> None:
        count = self.silences_model.rowCount()
        self.silences_title.setText(f"Active silences ({count})" if count else
                                    "No active silence: every alert notifies")
        self.refresh_buttons()

    # --- what MainWindow reads -----------------------------------------------------------------
    def needs_attention(self) -> bool:
        return self.model.loud_count() > 0

    def tab_title(self) -> str:
        """Muted alerts are not counted: a silence mutes notification, and the title is one."""
        loud = self.model.loud_count()
        return f"Alerts ({loud} open)" if loud else "Alerts"

