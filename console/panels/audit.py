"""Audit panel: the hash-chained audit trail, filtered, verified and exported.

The filter bar narrows the events by trace id, actor, kind (an exact type, or a family such as "review."
for every review.* event) and time (the last hour, 24 hours, 7 days, or a custom from/to); the table lists
the newest LIMIT matches (seq, time, actor, type, trace, a one-line payload) and says when more match. The
selected event is spelled out beside it: its payload pretty-printed, its hash and the hash before it.
"Open trace" (Enter, a double-click) asks for the event's whole trace (sig_open_trace: the main window's
trace view); "Only this trace" narrows the table to it.

The chain is verified when the engine is ready and on "Verify": intact with N events, or broken at which
event and why (in the bad tone, the event tinted, the tab titled "Audit (chain broken)"). "Export…" writes
every event the filter matches (not only the LIMIT shown) to CSV or JSON Lines through a non-modal file
dialog; the engine records the export itself as an "audit.exported" event.

The trail grows with every question: the service's sig_changed (coalesced) reloads the table while the
panel is shown; a hidden panel only notes that it is stale and reloads when it is shown again.

Actors, types, trace ids and payloads may hold what an agent or a document wrote: plain model data, a
plain-text details pane with hidden characters named, escaped tooltips; never rich text or a link.
"""
from __future__ import annotations

import datetime
import time
from pathlib import Path
from typing import Callable, Iterable

from PySide6.QtCore import QDateTime, QEvent, QModelIndex, QObject, Qt, QTimer, Signal
from PySide6.QtGui import QKeyEvent
from PySide6.QtWidgets import (QComboBox, QDateTimeEdit, QFileDialog, QHBoxLayout, QHeaderView, QLabel, QLineEdit,
                               QPushButton, QVBoxLayout, QWidget)

from engine import AuditFilter, AuditRow, ChainStatus, InputError

from .. import style, untrusted
from ..layout import list_table, splitter
from ..service import EngineService
from ..untrusted import PlainLabel, PlainPane, cell
from .audit_model import (ACTOR_COLUMN, ANY, PAYLOAD_COLUMN, SEQ_COLUMN, TIME_COLUMN, TRACE_COLUMN, TYPE_COLUMN,
                          AuditModel, details_text, kind_choices)
from .base import EnginePanel
from .memory import titled
from .shown import ShownMixin

LIMIT = 1000                  # the newest events the table lists; an export writes every match
FILTER_DELAY_MS = 300         # typing a trace id reloads once the typing pauses
CUSTOM = "custom"
TIME_CHOICES = (("Any time", None), ("Last hour", 3600), ("Last 24 h", 86_400), ("Last 7 days", 7 * 86_400),
                ("Custom…", CUSTOM))
CSV_FILTER, JSONL_FILTER = "CSV (*.csv)", "JSON Lines (*.jsonl)"
EXPORT_FORMATS = {CSV_FILTER: "csv", JSONL_FILTER: "jsonl"}
DETAILS_WIDTH = 500           # pixels the details pane starts at; the table takes the rest
CHAIN_MEANING = ("Each event's hash covers its content and the hash of the event before it, so an event edited, "
                 "deleted or reordered outside Quorum breaks the chain from there on.")


def _clock_text(at: float) -> str:
    return datetime.datetime.fromtimestamp(at).strftime("%H:%M:%S")


class AuditPanel(ShownMixin, EnginePanel):
    sig_open_trace = Signal(str)            # a trace id the operator wants to see whole (the main window's trace view)
    sig_chain_checked = Signal(bool)        # the chain was verified (intact?): the dock title may change

    def __init__(self, service: EngineService, parent: QWidget | None = None, *,
                 clock: Callable[[], float] = time.time) -> None:
        super().__init__(service, parent)
        self._clock = clock
        self.limit = LIMIT
        self._asked: AuditFilter | None = None      # the filter of the last load: older answers are dropped
        self._stale = True                          # the table no longer shows the trail: reload when shown
        self._chain: ChainStatus | None = None
        self._chain_at = ""                 # when it was verified (clock text)
        self._newest_seq = 0                # the newest event the table has shown: what a verification may miss
        self._tones: dict[QLabel, str | None] = {}
        self._export_dir = Path.home()
        self.export_file_dialog: QFileDialog | None = None
        self.model = AuditModel(self)

        # --- the filter bar ---
        self.trace_filter = QLineEdit()
        self.trace_filter.setPlaceholderText("Trace id")
        self.trace_filter.setClearButtonEnabled(True)
        self.trace_filter.setMinimumWidth(250)
        self.trace_filter.setToolTip("Only the events of this question or message (its 32-hex trace id)")
        self.actor_filter = self._dropdown("Only the events written by this actor")
        self.kind_filter = self._dropdown("Only this event type, or a family of types (review.* is every review event)")
        self._fill(self.actor_filter, "Any actor", [])
        self._fill(self.kind_filter, "Any kind", [])
        self.time_filter = QComboBox()
        for label, value in TIME_CHOICES:
            self.time_filter.addItem(label, value)
        self.time_filter.setToolTip("Only the events of this time window (a custom window: from, to)")
        self.since_edit, self.until_edit = self._moment_edit("From (inclusive)"), self._moment_edit("To (exclusive)")
        self.since_label, self.until_label = PlainLabel("from"), PlainLabel("to")
        self._show_custom(False)
        self.refresh_button = QPushButton("Refresh")
        self.refresh_button.setToolTip("Read the audit trail again now (it also refreshes by itself as events arrive)")

        # --- status: what is listed, the chain, the actions ---
        self.summary = PlainLabel()
        self.chain_status = PlainLabel()
        self.verify_button = QPushButton("Verify")
        self.verify_button.setToolTip("Check every event against its hash and the event before it")
        self.export_button = QPushButton("Export…")
        self.export_button.setToolTip("Write every event the filter matches to CSV or JSON Lines "
                                      "(the export is itself an audit event)")

        # --- the events and the selected one ---
        self.table = list_table(self.model)
        header = self.table.horizontalHeader()
        for column in (SEQ_COLUMN, TIME_COLUMN, ACTOR_COLUMN, TYPE_COLUMN, TRACE_COLUMN):
            header.setSectionResizeMode(column, QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(PAYLOAD_COLUMN, QHeaderView.ResizeMode.Stretch)
        self.table.installEventFilter(self)
        self.details_title = PlainLabel("Selected event")
        self.details_title.setFont(style.scaled_font(self.font(), 1.0, bold=True))
        self.trace_button = QPushButton("Open trace")
        self.trace_button.setToolTip("Show the whole trace of the selected event's question or message "
                                     "(Enter or a double-click on the row)")
        self.only_trace_button = QPushButton("Only this trace")
        self.only_trace_button.setToolTip("Filter the table to the selected event's trace")
        self.details = PlainPane()         # the selected event in full: plain text only
        self.details.setFont(style.scaled_font(style.monospace_font(), 0.92))   # a 64-hex hash fits a line
        self.export_result = PlainLabel()

        filters = QHBoxLayout()
        filters.setContentsMargins(0, 0, 0, 0)
        for widget in (self.trace_filter, self.actor_filter, self.kind_filter, self.time_filter, self.since_label,
                       self.since_edit, self.until_label, self.until_edit):
            filters.addWidget(widget)
        filters.addStretch(1)
        filters.addWidget(self.refresh_button)
        status = QHBoxLayout()
        status.setContentsMargins(0, 0, 0, 0)
        status.addWidget(self.summary, 1)
        status.addWidget(self.chain_status)
        status.addWidget(self.verify_button)
        status.addWidget(self.export_button)
        details_head = QHBoxLayout()
        details_head.setContentsMargins(0, 0, 0, 0)
        details_head.addWidget(self.details_title, 1)
        details_head.addWidget(self.only_trace_button)
        details_head.addWidget(self.trace_button)
        self.body = splitter(Qt.Orientation.Horizontal, (self.table, 3), (titled(details_head, self.details), 2),
                             sizes=[780, DETAILS_WIDTH])
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 4, 0, 0)
        layout.setSpacing(4)
        layout.addLayout(filters)
        layout.addLayout(status)
        layout.addWidget(self.body, 1)
        layout.addWidget(self.export_result)

        self._typing = QTimer(self)              # debounce: one reload once the trace id is typed
        self._typing.setSingleShot(True)
        self._typing.setInterval(FILTER_DELAY_MS)
        self._typing.timeout.connect(self.reload)
        self.trace_filter.textChanged.connect(lambda _text: self._typing.start())
        self.trace_filter.returnPressed.connect(self.reload)
        for combo in (self.actor_filter, self.kind_filter):
            combo.currentIndexChanged.connect(lambda _at: self.reload())
        self.time_filter.currentIndexChanged.connect(self._on_time_choice)
        for edit in (self.since_edit, self.until_edit):
            edit.dateTimeChanged.connect(lambda _moment: self._typing.start())
        self.refresh_button.clicked.connect(self.reload)
        self.verify_button.clicked.connect(self.verify_chain)
        self.export_button.clicked.connect(self.export_dialog)
        self.trace_button.clicked.connect(self.open_selected_trace)
        self.only_trace_button.clicked.connect(self.only_selected_trace)
        self.table.doubleClicked.connect(self._on_double_clicked)
        self.table.selectionModel().currentRowChanged.connect(lambda _now, _before: self._show_details())

        audit = service.audit
        audit.sig_loaded.connect(self._on_loaded)
        audit.sig_facets.connect(self._on_facets)
        audit.sig_verified.connect(self._on_verified)
        audit.sig_verify_failed.connect(self._on_verify_failed)
        audit.sig_exported.connect(self._on_exported)
        audit.sig_export_failed.connect(self._on_export_failed)
        audit.sig_changed.connect(self._on_trail_changed)
        style.theme_signals().sig_changed.connect(self._repaint_labels)

        self._say(self.summary, "The audit trail is read when the engine is ready.", "muted")
        self._say(self.chain_status, "Chain not verified yet", "muted")
        self._show_details()

    # --- construction helpers ----------------------------------------------------------------
    @staticmethod
    def _dropdown(tip: str) -> QComboBox:
        combo = QComboBox()
        combo.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        combo.setMinimumContentsLength(14)         # a long actor or type name does not widen the bar
        combo.setToolTip(tip)
        return combo

    def _moment_edit(self, tip: str) -> QDateTimeEdit:
        edit = QDateTimeEdit()
        edit.setCalendarPopup(True)
        edit.setDisplayFormat("yyyy-MM-dd HH:mm")
        edit.setToolTip(tip)
        return edit

    @staticmethod
    def _fill(combo: QComboBox, any_label: str, choices: Iterable[tuple[str, str]]) -> None:
        """Replaces a dropdown's choices, keeping what was chosen (added back if the trail no longer has it),
        without announcing a change."""
        kept = combo.currentData() or ANY
        combo.blockSignals(True)
        try:
            combo.clear()
            combo.addItem(any_label, ANY)
            for label, value in choices:
                combo.addItem(label, value)
            if kept and combo.findData(kept) < 0:
                combo.addItem(cell(kept, 60), kept)
            combo.setCurrentIndex(max(combo.findData(kept), 0))
        finally:
            combo.blockSignals(False)

    # --- the filter ----------------------------------------------------------------------------
    def current_filter(self, *, every_match: bool = False) -> AuditFilter:
        """The filter bar as an AuditFilter, for the newest `limit` matches (or every match, for an export);
        InputError when the custom window makes no sense."""
        since, until = self._time_bounds()
        return AuditFilter(trace_id=self.trace_filter.text(), actor=self.actor_filter.currentData() or ANY,
                           kind=self.kind_filter.currentData() or ANY, since=since, until=until,
                           limit=None if every_match else self.limit)

    def _time_bounds(self) -> tuple[float | None, float | None]:
        choice = self.time_filter.currentData()
        if choice == CUSTOM:
            return (self.since_edit.dateTime().toMSecsSinceEpoch() / 1000,
                    self.until_edit.dateTime().toMSecsSinceEpoch() / 1000)
        if choice:
            return self._clock() - choice, None
        return None, None

    def set_trace_filter(self, trace_id: str) -> None:
        self.trace_filter.setText(trace_id)
        self.reload()

    def set_actor_filter(self, actor: str) -> None:
        self._choose(self.actor_filter, actor)

    def set_kind_filter(self, kind: str) -> None:
        """An exact type, or a family ending in "." ("review.")."""
        self._choose(self.kind_filter, kind)

    def set_time_window(self, seconds: int | None) -> None:
        """The last `seconds` (3600, 86400, 604800), or None for any time."""
        self.time_filter.setCurrentIndex(max(self.time_filter.findData(seconds), 0))

    def set_custom_window(self, since: float, until: float) -> None:
        """From `since` (inclusive) to `until` (exclusive), epoch seconds (the edits keep whole minutes)."""
        self.time_filter.blockSignals(True)
        self.time_filter.setCurrentIndex(self.time_filter.findData(CUSTOM))
        self.time_filter.blockSignals(False)
        self._set_moments(QDateTime.fromMSecsSinceEpoch(int(since * 1000)),
                          QDateTime.fromMSecsSinceEpoch(int(until * 1000)))
        self._show_custom(True)
        self.reload()

    def _set_moments(self, since: QDateTime, until: QDateTime) -> None:
        for edit, moment in ((self.since_edit, since), (self.until_edit, until)):
            edit.blockSignals(True)
            edit.setDateTime(moment)
            edit.blockSignals(False)

    def _choose(self, combo: QComboBox, value: str) -> None:
        if value and combo.findData(value) < 0:
            combo.addItem(cell(value, 60), value)
        combo.setCurrentIndex(max(combo.findData(value or ANY), 0))

    def _on_time_choice(self, _at: int) -> None:
        custom = self.time_filter.currentData() == CUSTOM
        if custom and self.since_edit.isHidden():            # a window that holds the last day, to start with
            now = QDateTime.fromMSecsSinceEpoch(int(self._clock() * 1000))
            self._set_moments(now.addDays(-1), now.addSecs(60))
        self._show_custom(custom)
        self.reload()

    def _show_custom(self, shown: bool) -> None:
        for widget in (self.since_label, self.since_edit, self.until_label, self.until_edit):
            widget.setVisible(shown)

    # --- loading -------------------------------------------------------------------------------
    def reload(self) -> None:
        """Reads the events the filter bar asks for (and the dropdowns' choices) from the store."""
        self._typing.stop()
        try:
            wanted = self.current_filter()
        except InputError as exc:
            self._say(self.summary, f"Not reloaded: {exc}", "warn")
            return
        self._asked = wanted
        if self._service.audit.load(wanted) is not None:
            self._stale = False
            self._service.audit.facets()

    def is_stale(self) -> bool:
        """The trail has grown (or the engine was not ready) since the table was read."""
        return self._stale

    def on_engine_ready(self) -> None:
        self.verify_chain()
        self._on_trail_changed()

    def _on_trail_changed(self) -> None:
        if self.is_shown():
            self.reload()
        else:
            self._stale = True

    def on_shown(self) -> None:
        if self._stale:
            self.reload()

    def _on_loaded(self, filter_: AuditFilter, rows: tuple[AuditRow, ...], more: bool) -> None:
        if filter_ != self._asked:
            return                               # an answer to a filter the bar no longer shows
        selected = self.current_event()
        self.model.set_records(rows)
        self._newest_seq = max(self._newest_seq, max((r.seq for r in rows), default=0))
        if self._chain is not None and self._chain.intact:
            self._show_intact()
        at = self.model.row_of(selected.seq) if selected is not None else -1
        if at < 0 and rows:
            at = 0
        if at >= 0:
            self.table.setCurrentIndex(self.model.index(at, 0))
        self._show_details()
        self._say(self.summary, self._summary_text(filter_, len(rows), more), "warn" if more else None)

    @staticmethod
    def _summary_text(filter_: AuditFilter, count: int, more: bool) -> str:
        narrowed = any(v is not None for k, v in filter_.as_payload().items() if k != "limit")
        if more:
            return (f"The newest {count} matching events, newest first; more match: narrow the filter "
                    f"(Export… writes every match)")
        if not count:
            return "No event matches the filter" if narrowed else "The audit trail is empty"
        noun = "event" if count == 1 else "events"
        return f"{count} {noun} {'match' if narrowed else 'in the trail'}, newest first"

    def _on_facets(self, actors: tuple[str, ...], kinds: tuple[str, ...]) -> None:
        self._fill(self.actor_filter, "Any actor", [(cell(a, 60), a) for a in actors])
        self._fill(self.kind_filter, "Any kind", kind_choices(kinds))

    # --- selection -----------------------------------------------------------------------------
    def current_event(self) -> AuditRow | None:
        index = self.table.currentIndex()
        if not index.isValid() or index.row() >= self.model.rowCount():
            return None
        return self.model.record(index.row())

    def select_event(self, seq: int) -> bool:
        at = self.model.row_of(seq)
        if at >= 0:
            self.table.setCurrentIndex(self.model.index(at, 0))
        return at >= 0

    def visible_events(self) -> list[AuditRow]:
        return list(self.model.records())

    def _show_details(self) -> None:
        row = self.current_event()
        has_trace = row is not None and bool(row.trace_id)
        self.trace_button.setEnabled(has_trace)
        self.only_trace_button.setEnabled(has_trace)
        if row is None:
            self.details.clear()
            self.details.setPlaceholderText("Select an event to read its payload and hashes.")
            return
        self.details.setPlainText(details_text(row))

    def open_selected_trace(self) -> None:
        row = self.current_event()
        if row is not None and row.trace_id:
            self.sig_open_trace.emit(row.trace_id)

    def only_selected_trace(self) -> None:
        row = self.current_event()
        if row is not None and row.trace_id:
            self.set_trace_filter(row.trace_id)

    def _on_double_clicked(self, index: QModelIndex) -> None:
        if index.isValid():
            self.table.setCurrentIndex(index)
            self.open_selected_trace()

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        # Enter on a row opens its trace, as a double-click does (the same on every platform).
        if (watched is self.table and event.type() == QEvent.Type.KeyPress and isinstance(event, QKeyEvent)
                and event.key() in (Qt.Key.Key_Return, Qt.Key.Key_Enter)):
            self.open_selected_trace()
            return True
        return super().eventFilter(watched, event)

    # --- the chain -----------------------------------------------------------------------------
    def verify_chain(self) -> None:
        """Checks the whole chain (action audit.verify); the status line says how it stands."""
        self._say(self.chain_status, "Verifying the chain…", "muted")
        self.verify_button.setEnabled(False)
        if self._service.audit.verify() is None:
            self.verify_button.setEnabled(True)

    def _on_verified(self, status: ChainStatus) -> None:
        self._chain = status
        self._chain_at = _clock_text(self._clock())
        self.verify_button.setEnabled(True)
        at = self._chain_at
        if status.intact:
            self._show_intact()
        else:
            self._say(self.chain_status, f"✗ Chain broken at seq {status.broken_at}: {status.reason} · "
                                         f"verified at {at}", "bad",
                      tip=f"{status.checked} event(s) before seq {status.broken_at} check out; from that event on "
                          f"the trail cannot be trusted. {CHAIN_MEANING}")
        self.model.set_broken_at(None if status.intact else status.broken_at)
        self.sig_chain_checked.emit(status.intact)

    def _show_intact(self) -> None:
        """'✓ Chain intact: events 1 to 7, verified at 20:33:02', and how many came since, which no
        verification has covered yet (the trail grows with every question)."""
        status, newer = self._chain, max(self._newest_seq - self._chain.checked, 0)
        events = f"events 1 to {status.checked}" if status.checked else "no events yet"
        since = f" · {newer} newer not verified yet" if newer else ""
        self._say(self.chain_status, f"✓ Chain intact: {events}, verified at {self._chain_at}{since}",
                  "good" if not newer else "muted", tip=f"{status.reason}. {CHAIN_MEANING}")

    def _on_verify_failed(self, why: str) -> None:
        self.verify_button.setEnabled(True)
        self._say(self.chain_status, f"✗ Not verified: {why}", "bad")

    def chain_status_value(self) -> ChainStatus | None:
        """The last verification's result (None before the first)."""
        return self._chain

    # --- export --------------------------------------------------------------------------------
    def default_export_name(self, fmt: str = "csv") -> str:
        return datetime.datetime.fromtimestamp(self._clock()).strftime(f"audit-%Y%m%d-%H%M.{fmt}")

    def export_dialog(self) -> QFileDialog:
        """Asks where to write the export (action audit.export), without a nested event loop: the dialog
        opens with open() and the export starts from its fileSelected signal."""
        dialog = self.export_file_dialog
        if dialog is None:
            dialog = self.export_file_dialog = QFileDialog(self, "Export the audit trail")
            dialog.setAcceptMode(QFileDialog.AcceptMode.AcceptSave)
            dialog.setFileMode(QFileDialog.FileMode.AnyFile)
            dialog.setNameFilters([CSV_FILTER, JSONL_FILTER])
            dialog.filterSelected.connect(self._on_export_filter)
            dialog.fileSelected.connect(self._on_export_file)
        dialog.selectNameFilter(CSV_FILTER)
        dialog.setDefaultSuffix("csv")
        dialog.setDirectory(str(self._export_dir))
        dialog.selectFile(self.default_export_name("csv"))
        dialog.open()
        return dialog

    def _on_export_filter(self, name_filter: str) -> None:
        """The chosen format's extension follows the filter, on a name the operator left as it was."""
        dialog, fmt = self.export_file_dialog, EXPORT_FORMATS.get(name_filter, "csv")
        if dialog is None:
            return
        dialog.setDefaultSuffix(fmt)
        chosen = dialog.selectedFiles()
        if chosen:
            path = Path(chosen[0])
            if path.suffix.lstrip(".") in EXPORT_FORMATS.values() and path.suffix.lstrip(".") != fmt:
                dialog.selectFile(path.with_suffix(f".{fmt}").name)

    def _on_export_file(self, path: str) -> None:
        dialog = self.export_file_dialog
        fmt = EXPORT_FORMATS.get(dialog.selectedNameFilter(), "csv") if dialog is not None else "csv"
        self.export_to(path, fmt)

    def export_to(self, path: str | Path, fmt: str) -> None:
        """Writes every event the filter bar matches (not only the LIMIT listed) to `path` as csv or jsonl."""
        path = str(path)
        try:
            wanted = self.current_filter(every_match=True)
        except InputError as exc:
            self._say(self.export_result, f"Not exported: {exc}", "bad")
            return
        self._export_dir = Path(path).expanduser().parent
        self._say(self.export_result, f"Exporting to {path}…", "muted")
        self.export_button.setEnabled(False)
        if self._service.audit.export(wanted, path, fmt) is None:
            self.export_button.setEnabled(True)

    def _on_exported(self, path: str, count: int) -> None:
        self.export_button.setEnabled(True)
        self._say(self.export_result, f"Wrote {count} event{'' if count == 1 else 's'} to {path} "
                                      f"(recorded in the trail as audit.exported)", "good")

    def _on_export_failed(self, path: str, why: str) -> None:
        self.export_button.setEnabled(True)
        self._say(self.export_result, f"Not exported: {why}", "bad")

    # --- labels --------------------------------------------------------------------------------
    def _say(self, label: QLabel, text: str, tone: str | None, tip: str = "") -> None:
        """An outcome in a plain-text label, in a tone read now and again when the theme changes."""
        label.setText(text)
        label.setToolTip(untrusted.tooltip(tip or text))
        self._tones[label] = tone
        self._paint(label)

    def _paint(self, label: QLabel) -> None:
        tone = self._tones.get(label)
        bold = "font-weight: bold;" if label is self.chain_status and tone in ("good", "bad") else ""
        label.setStyleSheet(f"QLabel {{ {style.fg(tone)}; {bold} }}" if tone else "")

    def _repaint_labels(self, *_args) -> None:
        for label in self._tones:
            self._paint(label)

    # --- what the main window asks -------------------------------------------------------------
    def focus_target(self) -> QWidget:
        return self.table

    def chain_broken(self) -> bool:
        return self._chain is not None and not self._chain.intact

    def needs_attention(self) -> bool:
        return self.chain_broken()

    def tab_title(self) -> str:
        return "Audit (chain broken)" if self.chain_broken() else "Audit"
