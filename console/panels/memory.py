"""Memory panel: every agent's own memory as the store has it, and the operator's hand on it.

Left, the namespaces (one per agent: its active, superseded, quarantined and rolled-back versions counted)
and the selected namespace's snapshots; right, every version of that namespace's entries (key, version,
status, author, the trace that wrote it, when, the gateway's score, the content) and, below, the selected
entry spelled out beside "Who read it?" (the spread: every read of the entry since it was written, and
what its readers wrote next in those traces; a double-click or "Open trace" shows a trace whole).

Operator actions, each through the service and each recorded under the operator's name: "Snapshot now"
(the namespace, or every namespace from the button's menu), "Roll back…" (to one of the namespace's
snapshots, or to just before a trace's first write, with a reason), "Quarantine…" and "Release…" (an
entry, with a reason). The store is read again after each change, after every answered question, and on
"Refresh".

ReasonDialog (an action's consequence and a required reason) and the small layout helpers here serve the
Tools panel too.

Entry content was written by an agent and may be an attack: cells are one line of printable characters,
the details and spread panes are plain text with hidden characters named, tooltips are escaped. Nothing
is rendered as rich text or a link.
"""
from __future__ import annotations

from typing import Sequence

from PySide6.QtCore import QModelIndex, Qt, Signal
from PySide6.QtGui import QAction
from PySide6.QtWidgets import (QButtonGroup, QComboBox, QDialog, QDialogButtonBox, QFrame, QGridLayout, QHBoxLayout,
                               QHeaderView, QLabel, QLayout, QLineEdit, QPushButton, QRadioButton,
                               QSizePolicy, QTableView, QToolButton, QVBoxLayout, QWidget)

from engine import EntryStatus, MemoryEntry, Snapshot, Spread

from .. import style, untrusted
from ..layout import list_table, splitter
from ..service import EngineService, MemoryState
from ..untrusted import PlainPane, cell
from .base import EnginePanel
from .memory_model import (CONTENT_COLUMN, KEY_COLUMN, EntryModel, NamespaceModel, SnapshotModel, SpreadModel,
                           entry_details, first_write_of, result_text, rolled_back_by, snapshot_choice,
                           spread_lines, spread_summary, traces_of)
from .trust_dialog import plain_label

EMPTY_TEXT = ("No agent has written memory yet. An agent with memory_access = \"own\" writes its own namespace "
              "through the memory.write tool; every write is screened by the gateway first.")
KEY_WIDTH = 160               # pixels the key column starts at at most
LEFT_WIDTH = 454              # pixels the namespaces and snapshots start at: every count column fits
DIALOG_WIDTH = 520


def clip(label: QLabel) -> None:
    """A one-line label that may be cut by its pane rather than widen it (its tooltip has it whole)."""
    label.setMinimumWidth(1)
    label.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)


def separator() -> QFrame:
    line = QFrame()
    line.setFrameShape(QFrame.Shape.VLine)
    line.setFrameShadow(QFrame.Shadow.Sunken)
    return line


def hbox(*widgets: QWidget) -> QHBoxLayout:
    line = QHBoxLayout()
    line.setContentsMargins(0, 0, 0, 0)
    for widget in widgets:
        line.addWidget(widget)
    return line


def titled(title: QWidget | QLayout, body: QWidget, *below: QWidget | QLayout) -> QWidget:
    """`title` above `body` (which takes the spare height) above `below`, without margins."""
    holder = QWidget()
    layout = QVBoxLayout(holder)
    layout.setContentsMargins(0, 0, 0, 0)
    layout.setSpacing(3)
    for part, stretch in ((title, 0), (body, 1), *((b, 0) for b in below)):
        if isinstance(part, QLayout):
            layout.addLayout(part, stretch)
        else:
            layout.addWidget(part, stretch)
    return holder


def say(label: QLabel, text: str, colour=None) -> None:
    """An outcome in a plain-text label, in a colour, whole in its tooltip (the label may be cut)."""
    label.setText(text)
    label.setToolTip(untrusted.tooltip(text))
    label.setStyleSheet(f"color: {colour.name()};" if colour is not None else "")


class ReasonDialog(QDialog):
    """Says what an action will do and asks why: confirming needs a reason (it goes into the audit trail
    under the operator's name). Opened with `open()` (window-modal, no nested event loop); emits
    sig_confirmed(reason) and closes; the service reports what the engine did."""

    sig_confirmed = Signal(str)

    def __init__(self, title: str, consequence: str, confirm: str, placeholder: str, operator: str,
                 parent: QWidget | None = None, *, danger: bool = True) -> None:
        super().__init__(parent)
        self.setWindowTitle(title)
        self.setWindowModality(Qt.WindowModality.WindowModal)
        self.heading = plain_label(title)
        self.heading.setFont(style.scaled_font(self.font(), 1.1, bold=True))
        self.consequence = plain_label(consequence)
        self.consequence.setMinimumWidth(DIALOG_WIDTH)
        frame = style.tones().bad if danger else style.tones().good
        self.consequence.setStyleSheet(f"QLabel {{ border-left: 4px solid {frame.name()}; padding: 4px 8px; "
                                       f"{style.bg('neutral_tint')}; }}")
        self.reason = QLineEdit()
        self.reason.setPlaceholderText(placeholder)
        self.reason.setClearButtonEnabled(True)
        reason_label = QLabel("&Reason (required):")
        reason_label.setBuddy(self.reason)
        self.hint = plain_label()
        self.hint.setStyleSheet(f"color: {style.tones().muted.name()}")
        self._operator = operator
        self.buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel)
        self.ok_button = self.buttons.button(QDialogButtonBox.StandardButton.Ok)
        self.ok_button.setText(confirm)
        self.body = QVBoxLayout()            # subclasses put their own choices here
        self.body.setContentsMargins(0, 0, 0, 0)
        layout = QVBoxLayout(self)
        layout.setSpacing(8)
        layout.addWidget(self.heading)
        layout.addWidget(self.consequence)
        layout.addLayout(self.body)
        layout.addWidget(reason_label)
        layout.addWidget(self.reason)
        layout.addWidget(self.hint)
        layout.addWidget(self.buttons)
        layout.setSizeConstraint(QLayout.SizeConstraint.SetFixedSize)
        self.reason.textChanged.connect(self._refresh)
        self.buttons.accepted.connect(self.accept)
        self.buttons.rejected.connect(self.reject)
        self._refresh()
        self.reason.setFocus()

    def reason_text(self) -> str:
        return " ".join(self.reason.text().split())

    def choice_problem(self) -> str:
        """What is missing besides the reason ("" when nothing): subclasses check their own choices."""
        return ""

    def ready_to_confirm(self) -> bool:
        return bool(self.reason_text()) and not self.choice_problem()

    def accept(self) -> None:
        if not self.ready_to_confirm():
            return
        self.confirm()
        super().accept()

    def confirm(self) -> None:
        self.sig_confirmed.emit(self.reason_text())

    def _refresh(self, *_args) -> None:
        self.ok_button.setEnabled(self.ready_to_confirm())
        problem = self.choice_problem()
        if problem:
            self.hint.setText(problem)
        elif not self.reason_text():
            self.hint.setText("A reason is required: it goes into the audit trail with your name.")
        else:
            self.hint.setText(f"Recorded as {self._operator}.")


class RollbackDialog(ReasonDialog):
    """"Roll back…": to one of the namespace's snapshots, or to just before the first entry a trace wrote in
    it; says which entries would go (out for good). Emits sig_rollback(snapshot id or None, trace id or "",
    reason)."""

    sig_rollback = Signal(object, str, str)

    def __init__(self, namespace: str, snapshots: Sequence[Snapshot], entries: Sequence[MemoryEntry], operator: str,
                 parent: QWidget | None = None) -> None:
        super().__init__(f"Roll back {namespace}'s memory", (
            f"Every entry of {namespace} written after the point you choose is rolled back: out of memory for good "
            f"(a rolled-back entry can never be released). Each key's newest remaining version becomes active "
            f"again. No other agent's memory changes."), "Roll back", "why, e.g. “poisoned in trace 3f2a…”",
            operator, parent)
        self.namespace = namespace
        self._entries = tuple(entries)
        self._keeps = {s.id: s.last_entry_id for s in snapshots}
        self.to_snapshot = QRadioButton("To a &snapshot:")
        self.before_trace = QRadioButton("Before a &trace (its first write here, and everything later):")
        group = QButtonGroup(self)
        group.addButton(self.to_snapshot)
        group.addButton(self.before_trace)
        self.snapshot = QComboBox()
        for snap in snapshots:
            self.snapshot.addItem(snapshot_choice(snap, self._entries), snap.id)
        if not snapshots:
            self.snapshot.addItem("(no snapshot of this namespace yet: “Snapshot now” takes one)")
        self.trace = QComboBox()
        self.trace.setEditable(True)
        self.trace.setInsertPolicy(QComboBox.InsertPolicy.NoInsert)
        self.trace.addItems(traces_of(self._entries))
        self.trace.setCurrentIndex(-1)
        self.trace.lineEdit().setPlaceholderText("a trace id that wrote in this namespace")
        self.trace.setFont(style.monospace_font())
        self.preview = plain_label()
        grid = QGridLayout()
        grid.setContentsMargins(0, 0, 0, 0)
        grid.addWidget(self.to_snapshot, 0, 0, 1, 2)
        grid.addWidget(self.snapshot, 1, 1)
        grid.addWidget(self.before_trace, 2, 0, 1, 2)
        grid.addWidget(self.trace, 3, 1)
        grid.setColumnMinimumWidth(0, 16)
        self.body.addLayout(grid)
        self.body.addWidget(self.preview)
        self.to_snapshot.setEnabled(bool(snapshots))
        (self.to_snapshot if snapshots else self.before_trace).setChecked(True)
        for signal in (self.to_snapshot.toggled, self.snapshot.currentIndexChanged, self.trace.currentTextChanged):
            signal.connect(self._refresh)
        self._ready = True
        self._refresh()

    def snapshot_id(self) -> int | None:
        return self.snapshot.currentData() if self.to_snapshot.isChecked() else None

    def trace_id(self) -> str:
        return "" if self.to_snapshot.isChecked() else self.trace.currentText().strip()

    def keeps_up_to(self) -> int | None:
        """The last entry id the chosen point keeps (None: no valid point chosen)."""
        if self.to_snapshot.isChecked():
            return self._keeps.get(self.snapshot.currentData())
        first = first_write_of(self._entries, self.trace_id()) if self.trace_id() else None
        return None if first is None else first - 1

    def choice_problem(self) -> str:
        if not getattr(self, "_ready", False):        # the base class refreshes before the choices exist
            return ""
        if self.to_snapshot.isChecked():
            return "" if self.snapshot.currentData() is not None else "Choose a snapshot."
        trace = self.trace_id()
        if not trace:
            return "Choose or paste a trace id."
        if first_write_of(self._entries, trace) is None:
            return f"Trace {cell(trace, 40)} wrote nothing in {self.namespace}'s memory."
        return ""

    def _refresh(self, *_args) -> None:
        super()._refresh()
        if not getattr(self, "_ready", False):
            return
        after = self.keeps_up_to()
        if after is None:
            self.preview.setText("")
            return
        going = rolled_back_by(self._entries, after)
        names = ", ".join(f"#{e.id} {cell(e.key, 30)} v{e.version}" for e in going[:6])
        more = f" and {len(going) - 6} more" if len(going) > 6 else ""
        self.preview.setText(f"Rolls back {len(going)} entr{'y' if len(going) == 1 else 'ies'}"
                             + (f": {names}{more}." if going else " (nothing was written after that point)."))
        self.preview.setStyleSheet(f"color: {(style.tones().bad if going else style.tones().muted).name()}")

    def confirm(self) -> None:
        self.sig_rollback.emit(self.snapshot_id(), self.trace_id(), self.reason_text())


class MemoryPanel(EnginePanel):
    sig_open_trace = Signal(str)            # a trace id the operator wants to see whole (the main window's trace view)
    sig_counts_changed = Signal(int)        # how many entry versions are quarantined

    def __init__(self, service: EngineService, parent: QWidget | None = None) -> None:
        super().__init__(service, parent)
        self.state = MemoryState((), (), ())
        self.dialog: ReasonDialog | None = None       # the open reason or rollback dialog, if any
        self.spread: Spread | None = None             # the last "Who read it?" answer
        self.namespaces = NamespaceModel(self)
        self.entries = EntryModel(self)
        self.snapshots = SnapshotModel(self)
        self.spread_model = SpreadModel(self)

        self.summary = plain_label()                   # totals, under the snapshots
        self.summary.setStyleSheet(f"color: {style.tones().muted.name()}")
        self.snapshot_button = QToolButton()
        self.snapshot_button.setPopupMode(QToolButton.ToolButtonPopupMode.MenuButtonPopup)
        self.snapshot_action = QAction("Snapshot now", self)
        self.snapshot_action.setToolTip("Mark the selected namespace's state, to roll back to later")
        self.snapshot_all_action = QAction("Snapshot every namespace", self)
        self.snapshot_button.setDefaultAction(self.snapshot_action)
        self.snapshot_button.addAction(self.snapshot_all_action)
        self.snapshot_button.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextOnly)
        self.rollback_button = QPushButton("Roll back…")
        self.rollback_button.setToolTip("Roll the selected namespace back to a snapshot, or to before a trace")
        self.refresh_button = QPushButton("Refresh")
        self.refresh_button.setToolTip("Read agents' memory again from the store")

        self.namespace_table = list_table(self.namespaces)
        self.namespace_table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        # Narrower padding than the other tables: the agent and all four counts fit in the left pane.
        self.namespace_table.setStyleSheet(self.namespace_table.styleSheet().replace("0px 6px", "0px 3px")
                                           .replace("3px 6px", "3px 4px"))
        self.snapshot_table = list_table(self.snapshots)
        self.snapshot_table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        self.snapshot_table.horizontalHeader().setSectionResizeMode(1, QHeaderView.ResizeMode.Stretch)
        self.snapshot_title = plain_label("Snapshots")
        self.entry_table = list_table(self.entries)
        header = self.entry_table.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(CONTENT_COLUMN, QHeaderView.ResizeMode.Stretch)

        self.quarantine_button = QPushButton("Quarantine…")
        self.quarantine_button.setToolTip("Take the selected entry out of memory until it is released")
        self.release_button = QPushButton("Release…")
        self.release_button.setToolTip("Put the selected quarantined entry back in play")
        self.spread_button = QPushButton("Who read it?")
        self.spread_button.setToolTip("Every read of the selected entry since it was written, and what the readers "
                                      "wrote next in those traces")
        self.trace_button = QPushButton("Open trace…")
        self.trace_button.setToolTip("Show the whole trace that wrote the selected entry")
        self.message = plain_label()
        self.message.setWordWrap(False)
        clip(self.message)

        self.details = PlainPane()               # the selected entry in full: plain text only
        self.details.setPlaceholderText(EMPTY_TEXT)
        self.spread_title = plain_label("Who read it? Select an entry and ask.")
        self.spread_table = list_table(self.spread_model)
        spread_header = self.spread_table.horizontalHeader()
        spread_header.setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        spread_header.setStretchLastSection(True)
        self.spread_trace_button = QPushButton("Open trace")
        self.spread_trace_button.setToolTip("Show the selected read's trace whole")

        # Layout (it must read well in the ~320 pixels the tab gets beside an answer): every action and the last
        # one's outcome in one row on top; namespaces, snapshots and totals left; right, the entries, and below
        # them the selected entry's details beside its readers.
        top = hbox(self.snapshot_button, self.rollback_button, separator(), self.quarantine_button,
                  self.release_button, self.spread_button, self.trace_button)
        top.addSpacing(6)
        top.addWidget(self.message, 1)
        top.addWidget(self.refresh_button)
        left = splitter(Qt.Orientation.Vertical, (self.namespace_table, 3),
                        (titled(self.snapshot_title, self.snapshot_table, self.summary), 2), sizes=[130, 150])
        spread_head = hbox(self.spread_title)
        spread_head.setStretch(0, 1)
        spread_head.addWidget(self.spread_trace_button, 0, Qt.AlignmentFlag.AlignTop)
        spread_box = titled(spread_head, self.spread_table)
        lower = splitter(Qt.Orientation.Horizontal, (self.details, 4), (spread_box, 5), sizes=[350, 444])
        right = splitter(Qt.Orientation.Vertical, (self.entry_table, 3), (lower, 2), sizes=[140, 145])
        self.body = splitter(Qt.Orientation.Horizontal, (left, 0), (right, 1), sizes=[LEFT_WIDTH, 1264 - LEFT_WIDTH])
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 4, 0, 0)
        layout.setSpacing(4)
        layout.addLayout(top)
        layout.addWidget(self.body, 1)

        self.namespace_table.selectionModel().currentRowChanged.connect(self._on_namespace_changed)
        self.entry_table.selectionModel().currentRowChanged.connect(self._on_entry_changed)
        self.spread_table.selectionModel().currentRowChanged.connect(lambda *_: self.refresh_buttons())
        self.spread_table.doubleClicked.connect(self._on_spread_double_clicked)
        self.entry_table.doubleClicked.connect(lambda _index: self.open_entry_trace())
        self.snapshot_action.triggered.connect(self.snapshot_selected)
        self.snapshot_all_action.triggered.connect(self.snapshot_all)
        self.rollback_button.clicked.connect(self.open_rollback)
        self.refresh_button.clicked.connect(self.reload)
        self.quarantine_button.clicked.connect(lambda: self.open_status_dialog(quarantine=True))
        self.release_button.clicked.connect(lambda: self.open_status_dialog(quarantine=False))
        self.spread_button.clicked.connect(self.ask_spread)
        self.trace_button.clicked.connect(self.open_entry_trace)
        self.spread_trace_button.clicked.connect(self.open_spread_trace)
        service.memory.sig_loaded.connect(self.show_state)
        service.memory.sig_changed.connect(self._on_changed)
        service.memory.sig_failed.connect(self._on_failed)
        service.memory.sig_spread.connect(self.show_spread)
        self._show_summary()
        self.refresh_buttons()

    # --- state in --------------------------------------------------------------------------
    def reload(self) -> None:
        if self._accepting:
            self._service.memory.load()

    def show_state(self, state: MemoryState) -> None:
        """Memory as the store has it; the namespace and entry the operator selected stay selected."""
        namespace, entry = self.current_namespace(), self.current_entry()
        self.state = state
        self.namespaces.set_records(state.namespaces)
        row = self.namespaces.row_of(namespace) if namespace else -1
        self._select(self.namespace_table, row if row >= 0 else 0, self.namespaces)
        self._fill_namespace(entry.id if entry is not None else None)
        if self.spread is not None:          # the spread pane shows the entry as it now is
            now = next((e for e in state.entries if e.id == self.spread.entry.id), None)
            if now is None or now.namespace != self.current_namespace():
                self._clear_spread()
        self._show_summary()
        self.sig_counts_changed.emit(self.quarantined_count())

    def _fill_namespace(self, keep_entry: int | None = None) -> None:
        namespace = self.current_namespace()
        self.entries.set_entries(e for e in self.state.entries if e.namespace == namespace)
        self.snapshots.set_records([s for s in self.state.snapshots if s.namespace == namespace])
        self._fit_key_column()
        if namespace:
            count = self.snapshots.rowCount()
            self.snapshot_title.setText(f"Snapshots of {cell(namespace, 40)} ({count})" if count
                                        else f"No snapshot of {cell(namespace, 40)} yet")
        else:
            self.snapshot_title.setText("Snapshots")
        row = self.entries.row_of(keep_entry) if keep_entry is not None else -1
        self._select(self.entry_table, row if row >= 0 else 0, self.entries)
        self._show_details()

    def _fit_key_column(self) -> None:
        header = self.entry_table.horizontalHeader()
        self.entry_table.resizeColumnToContents(KEY_COLUMN)
        if header.sectionSize(KEY_COLUMN) > KEY_WIDTH:
            header.setSectionResizeMode(KEY_COLUMN, QHeaderView.ResizeMode.Interactive)
            header.resizeSection(KEY_COLUMN, KEY_WIDTH)
        else:
            header.setSectionResizeMode(KEY_COLUMN, QHeaderView.ResizeMode.ResizeToContents)

    # --- selection -------------------------------------------------------------------------
    def current_namespace(self) -> str:
        index = self.namespace_table.currentIndex()
        return self.namespaces.record(index.row()).namespace if index.isValid() else ""

    def current_entry(self) -> MemoryEntry | None:
        index = self.entry_table.currentIndex()
        return self.entries.record(index.row()) if index.isValid() else None

    def select_namespace(self, namespace: str) -> bool:
        row = self.namespaces.row_of(namespace)
        self._select(self.namespace_table, row, self.namespaces)
        return row >= 0

    def select_entry(self, entry_id: int) -> bool:
        """Selects an entry by id (in its namespace)."""
        entry = next((e for e in self.state.entries if e.id == entry_id), None)
        if entry is None:
            return False
        if entry.namespace != self.current_namespace():
            self.select_namespace(entry.namespace)
        row = self.entries.row_of(entry_id)
        self._select(self.entry_table, row, self.entries)
        return row >= 0

    def visible_entries(self) -> list[MemoryEntry]:
        return list(self.entries.records())

    @staticmethod
    def _select(table: QTableView, row: int, model) -> None:
        if 0 <= row < model.rowCount():
            table.setCurrentIndex(model.index(row, 0))
            table.scrollTo(model.index(row, 0))

    def _on_namespace_changed(self, _current: QModelIndex, _previous: QModelIndex) -> None:
        self._fill_namespace()
        if self.spread is not None and self.spread.entry.namespace != self.current_namespace():
            self._clear_spread()
        self.refresh_buttons()

    def _on_entry_changed(self, _current: QModelIndex, _previous: QModelIndex) -> None:
        self._show_details()
        self.refresh_buttons()

    def _show_details(self) -> None:
        entry = self.current_entry()
        if entry is None:
            self.details.clear()
            self.details.setPlaceholderText(EMPTY_TEXT if not self.namespaces.rowCount()
                                            else "Select an entry to read it whole.")
        else:
            self.details.setPlainText(entry_details(entry))
        self.refresh_buttons()

    # --- actions ---------------------------------------------------------------------------
    def snapshot_selected(self) -> None:
        namespace = self.current_namespace()
        if namespace and self._accepting:
            self._service.memory.snapshot(namespace)

    def snapshot_all(self) -> None:
        if self._accepting:
            self._service.memory.snapshot(None)

    def open_rollback(self) -> RollbackDialog | None:
        namespace = self.current_namespace()
        if not namespace or not self._accepting:
            return None
        dialog = RollbackDialog(namespace, self.snapshots.records(), self.entries.records(), self._service.operator,
                                self)
        dialog.sig_rollback.connect(lambda snapshot_id, trace, reason: self.rollback(namespace, snapshot_id, trace,
                                                                                    reason))
        return self._open(dialog)

    def rollback(self, namespace: str, snapshot_id: int | None, trace_id: str, reason: str) -> None:
        say(self.message, f"Rolling {namespace} back…", style.tones().muted)
        self._service.memory.rollback(namespace, snapshot_id=snapshot_id, before_trace=trace_id or None, reason=reason)

    def open_status_dialog(self, quarantine: bool) -> ReasonDialog | None:
        entry = self.current_entry()
        if entry is None or not self._accepting:
            return None
        where = f"#{entry.id} {cell(entry.namespace, 40)}/{cell(entry.key, 60)} v{entry.version}"
        if quarantine:
            dialog = ReasonDialog(
                f"Quarantine entry {where}",
                f"{where} is taken out of memory: no agent reads it until an operator releases it. If it is the "
                f"active version, the key's previous version in play becomes active again. The quarantine and your "
                f"reason go into the audit trail, under the trace that wrote the entry.",
                "Quarantine", "why, e.g. “contradicts the corpus; written in a poisoned trace”",
                self._service.operator, self)
            dialog.sig_confirmed.connect(lambda reason: self.quarantine(entry.id, reason))
        else:
            dialog = ReasonDialog(
                f"Release entry {where}",
                f"{where} is put back in play: agents read it again if it is its key's newest version. The release "
                f"and your reason go into the audit trail.",
                "Release", "why, e.g. “checked: the entry is correct”", self._service.operator, self, danger=False)
            dialog.sig_confirmed.connect(lambda reason: self.release(entry.id, reason))
        return self._open(dialog)

    def quarantine(self, entry_id: int, reason: str) -> None:
        say(self.message, f"Quarantining #{entry_id}…", style.tones().muted)
        self._service.memory.quarantine(entry_id, reason)

    def release(self, entry_id: int, reason: str) -> None:
        say(self.message, f"Releasing #{entry_id}…", style.tones().muted)
        self._service.memory.release(entry_id, reason)

    def _open(self, dialog: ReasonDialog) -> ReasonDialog:
        if self.dialog is not None:
            self.dialog.close()
        self.dialog = dialog
        dialog.finished.connect(lambda _result: self._dialog_closed(dialog))
        dialog.open()
        self.refresh_buttons()
        return dialog

    def _dialog_closed(self, dialog: ReasonDialog) -> None:
        if self.dialog is dialog:
            self.dialog = None
        dialog.deleteLater()
        self.refresh_buttons()

    def ask_spread(self) -> None:
        entry = self.current_entry()
        if entry is not None and self._accepting:
            self.spread_title.setText(f"Who read #{entry.id}? Reading…")
            self._service.memory.spread(entry.id)

    def show_spread(self, spread: Spread) -> None:
        self.spread = spread
        self.spread_model.set_records(spread_lines(spread))
        self.spread_title.setText(spread_summary(spread))
        self.spread_title.setToolTip(untrusted.tooltip(spread_summary(spread)))
        if self.spread_model.rowCount():
            self._select(self.spread_table, 0, self.spread_model)
        self.refresh_buttons()

    def _clear_spread(self) -> None:
        self.spread = None
        self.spread_model.set_records([])
        self.spread_title.setText("Who read it? Select an entry and ask.")
        self.spread_title.setToolTip("")
        self.refresh_buttons()

    def spread_text(self) -> str:
        """The "Who read it?" pane as plain text (its summary, then one line per read or later write)."""
        lines = [self.spread_title.text()]
        for r in range(self.spread_model.rowCount()):
            lines.append("  ".join(str(self.spread_model.data(self.spread_model.index(r, c)) or "")
                                   for c in range(self.spread_model.columnCount())).rstrip())
        return "\n".join(lines)

    def open_entry_trace(self) -> None:
        entry = self.current_entry()
        if entry is not None:
            self.sig_open_trace.emit(entry.trace_id)

    def open_spread_trace(self) -> None:
        index = self.spread_table.currentIndex()
        if index.isValid():
            self.sig_open_trace.emit(self.spread_model.record(index.row()).trace_id)

    def _on_spread_double_clicked(self, index: QModelIndex) -> None:
        if index.isValid():
            self.spread_table.setCurrentIndex(index)
            self.open_spread_trace()

    # --- results ---------------------------------------------------------------------------
    def _on_changed(self, result: object) -> None:
        say(self.message, result_text(result), style.tones().good)

    def _on_failed(self, action: str, message: str) -> None:
        say(self.message, message, style.tones().bad)
        if action == "spread":
            self.spread_title.setText("Who read it? " + message)

    def on_engine_ready(self) -> None:
        self.reload()

    def on_engine_stopping(self) -> None:
        if self.dialog is not None:
            self.dialog.reject()

    # --- counts and buttons ----------------------------------------------------------------
    def quarantined_count(self) -> int:
        return self.namespaces.total(EntryStatus.QUARANTINED)

    def _show_summary(self) -> None:
        n = self.namespaces
        if not n.rowCount():
            text = f"No agent memory yet · acting as {self._service.operator}"
        else:
            text = (f"{n.rowCount()} namespace(s) · {n.total(EntryStatus.ACTIVE)} active · "
                    f"{n.total(EntryStatus.QUARANTINED)} quarantined · {n.total(EntryStatus.ROLLED_BACK)} rolled back · "
                    f"{len(self.state.snapshots)} snapshot(s) in all · acting as {self._service.operator}")
        self.summary.setText(text)
        self.summary.setToolTip(untrusted.tooltip(text))

    def refresh_buttons(self, *_args) -> None:
        ok = self._accepting and self.dialog is None
        entry = self.current_entry()
        namespace = bool(self.current_namespace())
        self.snapshot_button.setEnabled(ok and namespace)
        self.snapshot_action.setEnabled(ok and namespace)
        self.snapshot_all_action.setEnabled(ok and namespace)
        self.rollback_button.setEnabled(ok and namespace)
        self.refresh_button.setEnabled(self._accepting)
        self.quarantine_button.setEnabled(ok and entry is not None and entry.status.in_play)
        self.release_button.setEnabled(ok and entry is not None and entry.status is EntryStatus.QUARANTINED)
        self.spread_button.setEnabled(self._accepting and entry is not None)
        self.trace_button.setEnabled(entry is not None)
        self.spread_trace_button.setEnabled(self.spread_table.currentIndex().isValid())

    def tab_title(self) -> str:
        quarantined = self.quarantined_count()
        return f"Memory ({quarantined} quarantined)" if quarantined else "Memory"
