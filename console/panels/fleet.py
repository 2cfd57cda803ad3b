"""Fleet panel: one row per agent, updated in batches as the engine reports agents.

Each row says who the agent is (id, role, kind, fault profile), its state in one word (up, slow, down,
starting, stopped, disabled, or its standing in the reputation book: quarantined, probation), its trust
score, how long it has been at work on the calls under way ("4.2 s"), and how it has answered lately: the
median latency and the error rate of its last calls and when it last gave a usable reply ("12 s ago"); both
times are refreshed every second while the panel is visible.

An agent the latest answer names as a suspect carries a warning icon and a "suspected: …" detail until
an answer no longer names it; only the rows whose mark changes are redrawn. "Quarantine…" and
"Release…" (buttons, or the table's context menu) open a reason dialog for the selected agent; "Start
fleet" and "Stop fleet…" (after an inline confirmation) start and stop the built-in agents' processes.
"""
from __future__ import annotations

import dataclasses
import time
from collections import defaultdict
from typing import Callable, Iterable

from PySide6.QtCore import QModelIndex, QPoint, Qt, QTimer, Signal
from PySide6.QtGui import QIcon, QKeyEvent
from PySide6.QtWidgets import (QAbstractItemView, QApplication, QFrame, QHBoxLayout, QHeaderView, QMenu,
                               QPushButton, QSizePolicy, QStyle, QTableView, QVBoxLayout, QWidget)

from engine import AgentState, AgentView, Answer, FaultKind, FleetState

from .. import style, untrusted
from ..service import EngineService
from ..service.fleet import FleetAction
from ..table_model import RIGHT, Column, RecordTableModel
from ..untrusted import PlainLabel
from .base import EnginePanel
from .trust import ElidedLabel
from .shown import ShownMixin
from .trust_dialog import TrustAction, TrustActionDialog

Clock = Callable[[], float]
ROW_PADDING = 5          # px above and below one line of text in a row
FIT_EVERY_MS = 3000           # the columns follow widened contents this often at most

# The tone of each state (style.tones() field names): read at draw time, so light and dark both hold.
STATE_TONES = {
    FleetState.UP: "good", FleetState.SLOW: "warn", FleetState.DOWN: "bad", FleetState.STARTING: "info",
    FleetState.STOPPED: "muted", FleetState.DISABLED: "muted", FleetState.QUARANTINED: "bad",
    FleetState.PROBATION: "warn", FleetState.MISREADS: "bad", FleetState.CHECKING: "info",
}
STATE_TINTS = {FleetState.DOWN: "bad_tint", FleetState.QUARANTINED: "bad_tint", FleetState.SLOW: "warn_tint",
               FleetState.PROBATION: "warn_tint", FleetState.MISREADS: "bad_tint"}
STATE_MEANINGS = {
    FleetState.UP: "answers in time",
    FleetState.SLOW: "up, but answers slowly",
    FleetState.DOWN: "its process or endpoint does not answer",
    FleetState.STARTING: "its process is starting",
    FleetState.STOPPED: "the operator stopped the built-in fleet; Start fleet brings it back",
    FleetState.DISABLED: "enabled = false in the fleet file",
    FleetState.QUARANTINED: style.TRUST_STATE_MEANINGS["quarantined"],
    FleetState.PROBATION: style.TRUST_STATE_MEANINGS["probation"],
    FleetState.MISREADS: "a judge that misread its canaries (known pairs) or could not answer them: not asked",
    FleetState.CHECKING: "a judge answering its canaries (known pairs): asked once it reads them right",
}


def kind_text(view: AgentView) -> str:
    spec = view.spec
    detail = spec.backend or spec.model or "external"
    return f"{spec.kind.value} · {detail}"


def kind_tooltip(view: AgentView) -> str:
    spec = view.spec
    where = "built-in (started by the console)" if spec.builtin else "external (not the console's to start or stop)"
    return f"{where}; trust level {spec.trust.value}, as the fleet file declares"


def state_colour(view: AgentView):
    return style.tone(STATE_TONES[view.status])


def state_tint(view: AgentView):
    tint = STATE_TINTS.get(view.status)
    return style.tone(tint) if tint else None


def state_tooltip(view: AgentView) -> str:
    status = view.status
    lines = [f"{status.value}: {STATE_MEANINGS[status]}"]
    if status is FleetState.SLOW:
        lines.append(view.slow_reason)
    if view.canary_detail:
        lines.append(f"canaries: {view.canary_detail}")
    if view.trust_state != "active" and status.value != view.trust_state:
        lines.append(f"standing: {standing_tooltip(view)}")
    lines += [p for p in (view.url, view.detail) if p]
    if view.last_status is not None:
        lines.append(f"last call: {view.last_status.value}")
    return "\n".join(lines)


def latency_text(view: AgentView) -> str:
    return "—" if view.latency_p50_ms is None else f"{view.latency_p50_ms:,.0f}"


def latency_tooltip(view: AgentView) -> str:
    if view.latency_p50_ms is None:
        return "No reply timed yet"
    text = f"Median of its last {view.recent_calls} call{'s' if view.recent_calls != 1 else ''}"
    if view.last_latency_ms is not None:
        text += f"; the last one took {view.last_latency_ms:,.0f} ms"
    return text + (f"\nslow: {view.slow_reason}" if view.slow_reason else "")


def error_rate_text(view: AgentView) -> str:
    return "—" if view.error_rate is None else f"{view.error_rate:.0%}"


def error_rate_colour(view: AgentView):
    rate = view.error_rate
    if rate is None or rate == 0:
        return style.tones().muted          # nothing to see: the rows with errors stand out
    return style.tones().bad if rate >= 0.5 else style.tones().warn


def error_rate_tooltip(view: AgentView) -> str:
    if view.error_rate is None:
        return "No call yet"
    errors = round(view.error_rate * view.recent_calls)
    text = f"{errors} of its last {view.recent_calls} calls gave no usable reply"
    if view.reliability is not None:
        text += f"\n{view.reliability:.0%} usable over all {view.calls} calls ({view.ok_calls} ok)"
    return text


def age_text(seconds: float) -> str:
    """'just now', '12 s ago', '4 min ago', '3 h ago', '2 d ago'."""
    if seconds < 1:
        return "just now"
    for unit, size in (("d", 86_400), ("h", 3_600), ("min", 60)):
        if seconds >= size:
            return f"{int(seconds // size)} {unit} ago"
    return f"{int(seconds)} s ago"


def last_seen_tooltip(view: AgentView) -> str:
    if view.last_seen is None:
        return "No usable reply from it yet (in this run of the engine)"
    return f"Last usable reply at {time.strftime('%Y-%m-%d %H:%M:%S', time.localtime(view.last_seen))}"


def score_text(view: AgentView) -> str:
    return "—" if view.trust_score is None else f"{view.trust_score:.2f}"


def standing_tooltip(view: AgentView) -> str:
    return f"{view.trust_state}: {style.TRUST_STATE_MEANINGS.get(view.trust_state, '')}".rstrip(": ")


def fault_tooltip(view: AgentView) -> str:
    fault = view.spec.fault
    if fault.kind is FaultKind.NONE:
        return "behaves honestly"
    return f"Byzantine on purpose: {fault.kind.value} on {fault.rate:.0%} of requests"


def warning_icon() -> QIcon | None:
    app = QApplication.instance()
    return app.style().standardIcon(QStyle.StandardPixmap.SP_MessageBoxWarning) if app is not None else None


SUSPECT_PREFIX = "⚠ suspected: "


def at_work_text(view: AgentView, now: float) -> str:
    """'4.2 s' on its oldest call under way ('2 calls · 4.2 s' for more), '' when it is idle."""
    seconds = view.at_work_s(now)
    if seconds is None:
        return ""
    elapsed = f"{seconds:.1f} s" if seconds < 60 else f"{int(seconds // 60)} min {int(seconds % 60)} s"
    return elapsed if view.at_work == 1 else f"{view.at_work} calls · {elapsed}"


def at_work_tooltip(view: AgentView) -> str:
    if view.at_work_since is None:
        return "Idle: no call to it under way"
    return (f"{view.at_work} call(s) under way, the oldest sent at "
            f"{time.strftime('%H:%M:%S', time.localtime(view.at_work_since))}; each ends at its timeout_s "
            f"({view.spec.timeout_s:g} s), and a question past its tier's deadline is decided without it")


def fleet_columns(clock: Clock = time.time) -> tuple[Column[AgentView], ...]:
    """The table's columns; Last seen and At work count from `clock` (injected in tests)."""
    def last_seen(view: AgentView) -> str:
        return "—" if view.last_seen is None else age_text(clock() - view.last_seen)

    return (
        Column("Agent", lambda v: v.spec.id, bold=lambda v: True, tooltip=lambda v: v.url),
        Column("Role", lambda v: v.spec.role.value),
        Column("Kind", kind_text, tooltip=kind_tooltip,
               header_tooltip="Protocol · built-in backend (or model, or external)"),
        Column("Fault profile", lambda v: v.spec.fault.kind.value,
               foreground=lambda v: style.fault_colour(v.spec.fault.kind),
               background=lambda v: None if v.spec.fault.kind is FaultKind.NONE else style.tones().bad_tint,
               bold=lambda v: v.spec.fault.kind is not FaultKind.NONE, tooltip=fault_tooltip,
               header_tooltip="How the agent misbehaves on purpose (the fleet file's fault profile)"),
        Column("State", lambda v: v.status.value, foreground=state_colour, background=state_tint,
               bold=lambda v: v.status is not FleetState.UP, tooltip=state_tooltip,
               header_tooltip="up, slow, down, starting, stopped, disabled; or its standing in the reputation "
                              "book (quarantined: no work; probation: low-risk work only)"),
        Column("Score", score_text, align=RIGHT, foreground=lambda v: style.trust_state_colour(v.trust_state),
               bold=lambda v: v.trust_state != "active", tooltip=standing_tooltip,
               header_tooltip="Trust score in the reputation book, 0 to 1: evidence from every question moves it"),
        Column("At work", lambda v: at_work_text(v, clock()), align=RIGHT, tooltip=at_work_tooltip,
               foreground=lambda v: style.tones().info if v.at_work else None,
               header_tooltip="How long it has been working on the call it was sent first, while calls are under way"),
        Column("Latency p50 (ms)", latency_text, align=RIGHT,
               foreground=lambda v: style.tones().warn if v.slow_reason and v.state is AgentState.UP else None,
               tooltip=latency_tooltip,
               header_tooltip="Median latency of its last 50 calls"),
        Column("Error rate", error_rate_text, align=RIGHT, foreground=error_rate_colour, tooltip=error_rate_tooltip,
               header_tooltip="Share of its last 50 calls without a usable reply"),
        Column("Last seen", last_seen, align=RIGHT, tooltip=last_seen_tooltip,
               header_tooltip="Its last usable reply"),
        Column("Detail", lambda v: v.detail or v.url, tooltip=lambda v: v.detail,
               foreground=lambda v: style.tones().bad if v.state is AgentState.DOWN and not v.stopped
               else style.tones().muted),
    )


FLEET_COLUMNS = fleet_columns()
COLUMN_INDEX = {column.title: position for position, column in enumerate(FLEET_COLUMNS)}
AGENT_COLUMN, STATE_COLUMN, SCORE_COLUMN = COLUMN_INDEX["Agent"], COLUMN_INDEX["State"], COLUMN_INDEX["Score"]
LAST_SEEN_COLUMN, DETAIL_COLUMN = COLUMN_INDEX["Last seen"], COLUMN_INDEX["Detail"]
AT_WORK_COLUMN = COLUMN_INDEX["At work"]


def columns_with_suspects(suspects: dict[str, str], icon, clock: Clock = time.time) -> tuple[Column[AgentView], ...]:
    """The fleet columns, with a warning icon on a suspect's id and why it is suspected in its Detail."""
    columns = list(fleet_columns(clock))
    agent, detail = columns[AGENT_COLUMN], columns[DETAIL_COLUMN]

    def suspect(view: AgentView) -> bool:
        return view.spec.id in suspects

    columns[AGENT_COLUMN] = dataclasses.replace(
        agent, icon=lambda v: icon() if suspect(v) else None,
        tooltip=lambda v: f"suspected: {suspects[v.spec.id]}" if suspect(v) else agent.tooltip(v))
    columns[DETAIL_COLUMN] = dataclasses.replace(
        detail, text=lambda v: f"{SUSPECT_PREFIX}{suspects[v.spec.id]}" if suspect(v) else detail.text(v),
        foreground=lambda v: style.tones().bad if suspect(v) else detail.foreground(v),
        bold=suspect,
        tooltip=lambda v: (f"Named as a suspect by the latest answer: {suspects[v.spec.id]}"
                           + (f"\n{v.detail}" if v.detail else "")) if suspect(v) else detail.tooltip(v))
    return tuple(columns)


class FleetModel(RecordTableModel[AgentView]):
    """Agents keyed by id; a batch of updates redraws the rows it touches, once. Suspects (from the latest
    answer) change the Agent and Detail columns of their rows."""

    def __init__(self, parent=None, *, clock: Clock = time.time) -> None:
        self._suspects: dict[str, str] = {}       # agent id -> why; the columns read it, so it is only mutated
        super().__init__(columns_with_suspects(self._suspects, self._warning_icon, clock), parent)
        self._rows: dict[str, int] = {}
        self._icon: QIcon | None = None

    def _warning_icon(self) -> QIcon | None:
        if self._icon is None:
            self._icon = warning_icon()
        return self._icon

    def set_suspects(self, suspects: Iterable[tuple[str, str]]) -> list[int]:
        """Marks the agents named in (agent_id, reason) pairs and clears the others; returns the rows
        that changed (only those are redrawn)."""
        reasons: dict[str, list[str]] = defaultdict(list)
        for agent_id, reason in suspects:
            reasons[agent_id].append(reason)
        new = {agent_id: "; ".join(r for r in why if r) or "reported by secure retrieval"
               for agent_id, why in reasons.items()}
        changed = {a for a in new.keys() | self._suspects.keys() if new.get(a) != self._suspects.get(a)}
        self._suspects.clear()
        self._suspects.update(new)
        rows = sorted(self._rows[a] for a in changed if a in self._rows)
        for row in rows:
            self.refresh_row(row)
        return rows

    def suspects(self) -> dict[str, str]:
        return dict(self._suspects)

    def set_agents(self, views: tuple[AgentView, ...] | list[AgentView]) -> None:
        self._rows = {view.spec.id: row for row, view in enumerate(views)}
        self.set_records(views)

    def update_agent(self, view: AgentView) -> int:
        row = self._rows.get(view.spec.id)
        if row is None:
            row = self.append_record(view)
            self._rows[view.spec.id] = row
        else:
            self.replace_record(row, view)
        return row

    def update_agents(self, views: Iterable[AgentView]) -> list[int]:
        """A batch: known agents' rows are replaced and redrawn in one dataChanged (first to last changed
        row), new agents appended; returns the rows replaced."""
        replaced: list[int] = []
        for view in views:
            row = self._rows.get(view.spec.id)
            if row is None:
                self._rows[view.spec.id] = self.append_record(view)
            else:
                self._records[row] = view
                replaced.append(row)
        if replaced:
            self.dataChanged.emit(self.index(min(replaced), 0), self.index(max(replaced), self.columnCount() - 1))
        return sorted(set(replaced))

    def refresh_column(self, column: int) -> None:
        """Tells views that one column changed in every row (Last seen, as time passes)."""
        if self.rowCount():
            self.dataChanged.emit(self.index(0, column), self.index(self.rowCount() - 1, column))

    def row_of(self, agent_id: str) -> int:
        return self._rows[agent_id]

    def view(self, agent_id: str) -> AgentView | None:
        row = self._rows.get(agent_id)
        return None if row is None else self.record(row)

    def count_standing(self, standing: str) -> int:
        return sum(view.trust_state == standing for view in self.records())

    def count(self, state: AgentState) -> int:
        return sum(view.state is state for view in self.records())

    def count_status(self, status: FleetState) -> int:
        return sum(view.status is status for view in self.records())


class StopConfirmation(QFrame):
    """The inline "Stop the built-in fleet?" question, in the panel's header row: Enter answers with the focused
    button (Stop them, at first), Escape cancels."""
    sig_confirmed = Signal()
    sig_cancelled = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("stopConfirmation")
        self.question = PlainLabel()
        self.question.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.confirm_button = QPushButton("Stop them")
        self.cancel_button = QPushButton("Cancel")
        row = QHBoxLayout(self)
        row.setContentsMargins(6, 0, 0, 0)
        row.addWidget(self.question, 1)
        row.addWidget(self.confirm_button)
        row.addWidget(self.cancel_button)
        self.confirm_button.clicked.connect(self.sig_confirmed)
        self.cancel_button.clicked.connect(self.sig_cancelled)
        self._restyle()
        style.theme_signals().sig_changed.connect(self._restyle)

    def ask(self, agents: int, external: int) -> None:
        others = f"; the {external} external agent{'s' if external != 1 else ''} stay as they are" if external else ""
        self.question.setText(f"Stop all {agents} built-in agents? Questions get no answer from them until you "
                              f"start the fleet again{others}.")
        self.question.setToolTip(self.question.text() + "\nThe stop goes into the audit trail under your name.")
        self.show()
        self.confirm_button.setFocus()

    def keyPressEvent(self, event: QKeyEvent) -> None:
        if event.key() == Qt.Key.Key_Escape:
            self.sig_cancelled.emit()
        elif event.key() in (Qt.Key.Key_Return, Qt.Key.Key_Enter):     # the focused button's answer
            (self.sig_cancelled if self.focusWidget() is self.cancel_button else self.sig_confirmed).emit()
        else:
            super().keyPressEvent(event)

    def _restyle(self, *_args) -> None:
        self.setStyleSheet(f"#stopConfirmation {{ {style.bg('warn_tint')}; border-radius: 3px; }}")
        self.question.setStyleSheet(f"{style.fg('warn')}; font-weight: bold;")


class FleetPanel(ShownMixin, EnginePanel):
    sig_summary_changed = Signal(str)
    sig_agent_selected = Signal(str)        # agent id: the operator selected its row

    def __init__(self, service: EngineService, parent: QWidget | None = None, *, clock: Clock = time.time) -> None:
        super().__init__(service, parent)
        self.dialog: TrustActionDialog | None = None
        self.model = FleetModel(self, clock=clock)
        self.model.set_agents(service.fleet.agents())

        self.title = PlainLabel()
        self.title.setFont(style.scaled_font(self.font(), 1.15, bold=True))
        self.title.setMinimumWidth(160)       # cut short rather than widen the window (the status bar has it too)
        # The last quarantine, release, start or stop, its progress, or why it was refused: cut short with "…"
        # (the whole of it in the tooltip) rather than widen the window.
        self.message = ElidedLabel()
        self.message.setAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        self._message_tone = "muted"
        self.quarantine_button = QPushButton("Quarantine…")
        self.release_button = QPushButton("Release…")
        self.start_button = QPushButton("Start fleet")
        self.stop_button = QPushButton("Stop fleet…")
        self.stop_confirmation = StopConfirmation()
        self.stop_confirmation.hide()
        self.table = QTableView()
        self.table.setModel(self.model)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.setAlternatingRowColors(True)
        self.table.setWordWrap(False)
        self.table.verticalHeader().setVisible(False)
        self.table.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        style.compact_rows(self.table)
        # Tighter still than other tables: ten agents and the header row fit the ~280 px top dock at 1280x800.
        rows = self.table.verticalHeader()
        rows.setMinimumSectionSize(self.table.fontMetrics().height() + ROW_PADDING)
        rows.setDefaultSectionSize(self.table.fontMetrics().height() + ROW_PADDING)
        header = self.table.horizontalHeader()
        # Fitted to the contents when agents come and at most every FIT_EVERY_MS after: measuring every cell
        # on every change (ResizeToContents) costs the UI thread milliseconds per agent call under demo traffic.
        header.setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        header.setStretchLastSection(True)     # Detail (URL or last error) takes the slack
        self._fit_timer = QTimer(self)
        self._fit_timer.setSingleShot(True)
        self._fit_timer.setInterval(FIT_EVERY_MS)
        self._fit_timer.timeout.connect(self.fit_columns)
        self.model.modelReset.connect(self.fit_columns)
        self.model.rowsInserted.connect(self.fit_columns)
        self.model.dataChanged.connect(lambda *_a: self._fit_timer.isActive() or self._fit_timer.start())

        self.header_row = QWidget()
        top = QHBoxLayout(self.header_row)
        top.setContentsMargins(0, 0, 0, 0)
        top.addWidget(self.title)
        top.addWidget(self.message, 1)
        top.addWidget(self.stop_confirmation, 1)
        for button in (self.quarantine_button, self.release_button, self.start_button, self.stop_button):
            top.addWidget(button)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.header_row)
        layout.addWidget(self.table)

        # Last seen says "12 s ago" and At work "4.2 s": redrawn every second, only while someone can see it.
        self.age_timer = QTimer(self)
        self.age_timer.setInterval(1000)
        self.age_timer.timeout.connect(lambda: self.model.refresh_column(LAST_SEEN_COLUMN))
        self.age_timer.timeout.connect(lambda: self.model.refresh_column(AT_WORK_COLUMN))

        fleet = service.fleet
        fleet.sig_agents_changed.connect(self.update_agents)
        fleet.sig_fleet_progress.connect(self._on_fleet_progress)
        fleet.sig_fleet_done.connect(self._on_fleet_done)
        fleet.sig_fleet_failed.connect(self._on_fleet_failed)
        service.questions.sig_answer.connect(self.show_suspects)
        service.trust.sig_failed.connect(self._on_trust_failed)
        self.model.dataChanged.connect(self._update_title)
        self.model.modelReset.connect(self._update_title)
        self.model.rowsInserted.connect(self._update_title)
        self.model.dataChanged.connect(self.refresh_buttons)
        self.table.selectionModel().currentRowChanged.connect(self._on_current_changed)
        self.table.customContextMenuRequested.connect(self._show_context_menu)
        self.quarantine_button.clicked.connect(lambda: self.open_dialog(TrustAction.QUARANTINE))
        self.release_button.clicked.connect(lambda: self.open_dialog(TrustAction.RELEASE))
        self.start_button.clicked.connect(self.start_fleet)
        self.stop_button.clicked.connect(self.stop_fleet)
        self.stop_confirmation.sig_confirmed.connect(self.confirm_stop)
        self.stop_confirmation.sig_cancelled.connect(self.cancel_stop)
        style.theme_signals().sig_changed.connect(self._restyle_message)
        self._update_title()
        self.refresh_buttons()

    def fitting_height(self, max_rows: int = 12) -> int:
        """Height that shows every agent (up to max_rows) without a scroll bar."""
        rows = min(self.model.rowCount(), max_rows)
        table = self.table
        return (self.header_row.sizeHint().height() + self.layout().spacing()
                + table.horizontalHeader().sizeHint().height()
                + rows * table.verticalHeader().defaultSectionSize() + 2 * table.frameWidth() + 2)

    def update_agents(self, views: list[AgentView]) -> None:
        """A batch of changed agents (FleetAdapter.sig_agents_changed): one redraw."""
        self.model.update_agents(views)

    def fit_columns(self, *_args) -> None:
        self.table.resizeColumnsToContents()
    def show_suspects(self, answer: Answer) -> None:
        """The latest answer decides who is suspected: earlier marks it does not repeat are cleared. The
        agents' own changes from that question are shown with it, not a batch later."""
        self._service.fleet.flush()
        if self.model.set_suspects((s.agent_id, s.reason) for s in answer.suspects):
            self._update_title()

    def summary(self) -> str:
        """'5 of 6 agents up · 1 down · 1 slow · 1 suspected · 1 quarantined': the fleet's health in one
        phrase (disabled agents not counted)."""
        model = self.model
        up = model.count(AgentState.UP)
        down, stopped = model.count_status(FleetState.DOWN), model.count_status(FleetState.STOPPED)
        total = model.rowCount() - model.count(AgentState.DISABLED)
        text = f"all {total} agents up" if up == total else f"{up} of {total} agents up"
        counts = ((down, "down"), (stopped, "stopped"), (model.count_status(FleetState.SLOW), "slow"),
                  (len(model.suspects()), "suspected"), (model.count_standing("quarantined"), "quarantined"),
                  (model.count_standing("probation"), "on probation"))
        return text + "".join(f" · {n} {what}" for n, what in counts if n)

    def tab_title(self) -> str:
        """'Fleet', or 'Fleet (2 down)' when agents are down that nobody stopped on purpose."""
        down = self.model.count_status(FleetState.DOWN)
        return f"Fleet ({down} down)" if down else "Fleet"

    def needs_attention(self) -> bool:
        return self.model.count_status(FleetState.DOWN) > 0

    def _update_title(self, *_args) -> None:
        self.title.setText(f"Fleet — {self.summary()}")
        self.sig_summary_changed.emit(self.summary())

    def on_shown(self) -> None:
        self.model.refresh_column(LAST_SEEN_COLUMN)
        self.age_timer.start()

    def on_hidden(self) -> None:
        self.age_timer.stop()

    # --- selection -------------------------------------------------------------------------
    def current_view(self) -> AgentView | None:
        index = self.table.currentIndex()
        return self.model.record(index.row()) if index.isValid() and index.row() < self.model.rowCount() else None

    def select_agent(self, agent_id: str) -> bool:
        """Selects the agent's row (the Trust plot's click lands here); False for an unknown id."""
        try:
            row = self.model.row_of(agent_id)
        except KeyError:
            return False
        current = self.current_view()
        if current is None or current.spec.id != agent_id:
            self.table.setCurrentIndex(self.model.index(row, 0))
        self.table.scrollTo(self.model.index(row, 0))
        return True

    def _on_current_changed(self, current: QModelIndex, _previous: QModelIndex) -> None:
        self.refresh_buttons()
        if current.isValid():
            self.sig_agent_selected.emit(self.model.record(current.row()).spec.id)

    # --- quarantine and release ------------------------------------------------------------
    def can(self, action: TrustAction, view: AgentView | None) -> tuple[bool, str]:
        """May the operator start this action on this agent now, and if not, why not (for the tooltip)."""
        if view is None:
            return False, "Select an agent first"
        if not self._accepting:
            return False, "Waiting for the engine"
        if self._service.reads_only:
            return False, self._service.viewer_text()
        agent = view.spec.id
        if action is TrustAction.QUARANTINE:
            if view.trust_state == "quarantined":
                return False, f"{agent} is already quarantined"
            return True, f"Take {agent} off all work until an operator releases it"
        if view.trust_state != "quarantined":
            return False, f"{agent} is not quarantined (it is {view.trust_state})"
        return True, f"Let {agent} back on probation: low-risk work only and a capped vote"

    def open_dialog(self, action: TrustAction) -> TrustActionDialog | None:
        """Opens the reason dialog for the selected agent (window-modal, without a nested event loop)."""
        view = self.current_view()
        allowed, _why = self.can(action, view)
        if not allowed or view is None:
            return None
        if self.dialog is not None:
            self.dialog.deleteLater()
        self.dialog = TrustActionDialog(self._service, view, action, self)
        self.dialog.sig_saved.connect(self._on_saved)
        self.message.clear()
        self.dialog.open()
        return self.dialog

    def quarantine_selected(self) -> TrustActionDialog | None:
        return self.open_dialog(TrustAction.QUARANTINE)

    def release_selected(self) -> TrustActionDialog | None:
        return self.open_dialog(TrustAction.RELEASE)

    def focus_target(self) -> QWidget:
        return self.table

    def context_menu(self, row: int) -> QMenu:
        """'Quarantine ID…' and 'Release ID…' for the agent on this row (selecting it), each enabled if it applies."""
        self.table.setCurrentIndex(self.model.index(row, 0))
        view = self.model.record(row)
        menu = QMenu(self)
        menu.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        menu.setToolTipsVisible(True)
        for action in TrustAction:
            allowed, why = self.can(action, view)
            item = menu.addAction(f"{action.verb} {view.spec.id}…")
            item.triggered.connect(lambda _checked=False, a=action: self.open_dialog(a))
            item.setEnabled(allowed)
            item.setToolTip(untrusted.tooltip(why))
        return menu

    def _show_context_menu(self, pos: QPoint) -> None:
        index = self.table.indexAt(pos)
        if index.isValid():
            self.context_menu(index.row()).popup(self.table.viewport().mapToGlobal(pos))

    def _on_saved(self, agent_id: str, action: str) -> None:
        self._service.fleet.flush()          # the row shows the new standing as the dialog closes
        self._show_message(f"{agent_id} {TrustAction(action).done} by {self._service.operator}",
                           "bad" if action == "quarantine" else "warn")
        self.refresh_buttons()

    def _on_trust_failed(self, agent_id: str, why: str) -> None:
        if self.dialog is None or not self.dialog.isVisible():      # the dialog shows its own failures
            self._show_message(f"{agent_id}: {why}", "bad")

    # --- start and stop the built-in fleet ---------------------------------------------------
    def can_control_fleet(self, action: FleetAction) -> tuple[bool, str]:
        """May the operator start (or stop) the built-in fleet now, and if not, why not (for the tooltip)."""
        fleet = self._service.fleet
        agents = len(fleet.builtin_agents())
        if not self._accepting:
            return False, "Waiting for the engine"
        if self._service.reads_only:
            return False, self._service.viewer_text()
        if not agents:
            return False, "This fleet has no built-in agents to start or stop"
        if fleet.running is not None:
            return False, f"{fleet.running.doing} the fleet…"
        if action is FleetAction.STOP:
            if fleet.stopped:
                return False, "The built-in fleet is stopped"
            return True, f"Stop the processes of all {agents} built-in agents (external agents stay as they are)"
        if not fleet.stopped:
            return False, "The built-in fleet is running"
        return True, f"Start all {agents} built-in agents again, on new ports"

    def stop_fleet(self) -> bool:
        """Asks first, inline: the question takes the header row until confirm_stop or cancel_stop. False if
        a stop is not allowed now."""
        if not self.can_control_fleet(FleetAction.STOP)[0]:
            return False
        builtin = len(self._service.fleet.builtin_agents())
        external = sum(not v.spec.builtin and v.spec.enabled for v in self.model.records())
        self._show_header(asking=True)
        self.stop_confirmation.ask(builtin, external)
        self.refresh_buttons()
        return True

    def asking_to_stop(self) -> bool:
        return not self.stop_confirmation.isHidden()

    def confirm_stop(self) -> None:
        self._show_header(asking=False)
        if self.can_control_fleet(FleetAction.STOP)[0]:
            self._service.fleet.stop_fleet()
        self.refresh_buttons()

    def cancel_stop(self) -> None:
        self._show_header(asking=False)
        self.refresh_buttons()
        self.table.setFocus()

    def _show_header(self, asking: bool) -> None:
        for widget in (self.title, self.message, self.quarantine_button, self.release_button, self.start_button,
                       self.stop_button):
            widget.setVisible(not asking)
        self.stop_confirmation.setVisible(asking)

    def start_fleet(self) -> bool:
        """Starts the built-in agents again (no question asked: starting loses nothing). False if not allowed."""
        if not self.can_control_fleet(FleetAction.START)[0]:
            return False
        self._service.fleet.start_fleet()
        self.refresh_buttons()
        return True

    def _on_fleet_progress(self, action: str, done: int, total: int) -> None:
        self._show_message(f"{FleetAction(action).doing} {done}/{total}…", "info")
        self.refresh_buttons()

    def _on_fleet_done(self, action: str) -> None:
        fleet_action = FleetAction(action)
        if fleet_action is FleetAction.STOP:
            self._show_message(f"Fleet stopped by {self._service.operator}", "muted")
        else:
            views = self._service.fleet.builtin_agents()
            up = sum(v.state is AgentState.UP for v in views)
            self._show_message(f"Fleet started: {up} of {len(views)} up", "good" if up == len(views) else "warn")
        self.refresh_buttons()

    def _on_fleet_failed(self, action: str, why: str) -> None:
        self._show_message(f"The fleet was not {FleetAction(action).done}: {why}", "bad")
        self.refresh_buttons()

    # --- engine phase, message, buttons --------------------------------------------------------
    def on_engine_stopping(self) -> None:
        if self.dialog is not None and self.dialog.isVisible():
            self.dialog.reject()
        if self.asking_to_stop():
            self.cancel_stop()

    def _show_message(self, text: str, tone: str) -> None:
        self._message_tone = tone
        self.message.set_full_text(text)
        self._restyle_message()

    def _restyle_message(self, *_args) -> None:
        self.message.setStyleSheet(style.fg(self._message_tone))

    def refresh_buttons(self, *_args) -> None:
        view = self.current_view()
        for action, button in ((TrustAction.QUARANTINE, self.quarantine_button),
                               (TrustAction.RELEASE, self.release_button)):
            allowed, why = self.can(action, view)
            button.setEnabled(allowed)
            button.setToolTip(why)
        asking = self.asking_to_stop()
        for action, button in ((FleetAction.START, self.start_button), (FleetAction.STOP, self.stop_button)):
            allowed, why = self.can_control_fleet(action)
            button.setEnabled(allowed and not asking)
            button.setToolTip(why)
