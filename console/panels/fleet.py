"""Fleet panel: one row per agent, updated row by row as the engine reports each agent.

An agent the latest answer names as a suspect carries a warning icon and a "suspected: …" detail
until an answer no longer names it; only the rows whose mark changes are redrawn. Each row shows the
agent's trust score and standing in the reputation book (quarantined in red, probation in amber);
"Quarantine…" and "Release…" (buttons above the table, or its context menu) open a reason dialog
for the selected agent.
"""
from __future__ import annotations

import dataclasses
from collections import defaultdict
from typing import Iterable

from PySide6.QtCore import QModelIndex, QPoint, Qt, Signal
from PySide6.QtGui import QIcon
from PySide6.QtWidgets import (QAbstractItemView, QApplication, QHBoxLayout, QHeaderView, QLabel, QMenu, QPushButton,
                               QSizePolicy, QStyle, QTableView, QVBoxLayout, QWidget)

from engine import AgentState, AgentView, Answer, FaultKind

from .. import style
from ..service import EngineService
from ..table_model import RIGHT, Column, RecordTableModel
from .trust_dialog import TrustAction, TrustActionDialog


def kind_text(view: AgentView) -> str:
    spec = view.spec
    detail = spec.backend or spec.model or "external"
    return f"{spec.kind.value} · {detail}"


def latency_text(view: AgentView) -> str:
    return "—" if view.last_latency_ms is None else f"{view.last_latency_ms:,.0f}"


def reliability_text(view: AgentView) -> str:
    reliability = view.reliability
    return "—" if reliability is None else f"{reliability:.0%} ({view.ok_calls}/{view.calls})"


def score_text(view: AgentView) -> str:
    return "—" if view.trust_score is None else f"{view.trust_score:.2f}"


def standing_tooltip(view: AgentView) -> str:
    return f"{view.trust_state}: {style.TRUST_STATE_MEANINGS.get(view.trust_state, '')}".rstrip(": ")


def status_tooltip(view: AgentView) -> str:
    parts = [p for p in (view.url, view.detail) if p]
    if view.last_status is not None:
        parts.append(f"last call: {view.last_status.value}")
    return "\n".join(parts)


def fault_tooltip(view: AgentView) -> str:
    fault = view.spec.fault
    if fault.kind is FaultKind.NONE:
        return "behaves honestly"
    return f"Byzantine on purpose: {fault.kind.value} on {fault.rate:.0%} of requests"


def warning_icon() -> QIcon | None:
    app = QApplication.instance()
    return app.style().standardIcon(QStyle.StandardPixmap.SP_MessageBoxWarning) if app is not None else None


SUSPECT_PREFIX = "⚠ suspected: "

FLEET_COLUMNS: tuple[Column[AgentView], ...] = (
    Column("Agent", lambda v: v.spec.id, bold=lambda v: True, tooltip=lambda v: v.url),
    Column("Role", lambda v: v.spec.role.value),
    Column("Kind / backend", kind_text),
    Column("Fault profile", lambda v: v.spec.fault.kind.value,
           foreground=lambda v: style.fault_colour(v.spec.fault.kind),
           background=lambda v: None if v.spec.fault.kind is FaultKind.NONE else style.tones().bad_tint,
           bold=lambda v: v.spec.fault.kind is not FaultKind.NONE, tooltip=fault_tooltip),
    Column("Status", lambda v: v.state.value, foreground=lambda v: style.agent_state_colour(v.state),
           bold=lambda v: v.state in (AgentState.UP, AgentState.DOWN), tooltip=status_tooltip),
    Column("Score", score_text, align=RIGHT, foreground=lambda v: style.trust_state_colour(v.trust_state),
           bold=lambda v: v.trust_state != "active", tooltip=standing_tooltip,
           header_tooltip="Trust score in the reputation book, 0 to 1: evidence from every question moves it"),
    Column("Standing", lambda v: v.trust_state, foreground=lambda v: style.trust_state_colour(v.trust_state),
           background=lambda v: style.trust_state_background(v.trust_state),
           bold=lambda v: v.trust_state != "active", tooltip=standing_tooltip,
           header_tooltip="active, probation (low-risk work only) or quarantined (no work)"),
    Column("Latency (ms)", latency_text, align=RIGHT, header_tooltip="The agent's last call"),
    Column("Trust level", lambda v: v.spec.trust.value, header_tooltip="The trust level the fleet file declares"),
    Column("Reliability", reliability_text, align=RIGHT,
           foreground=lambda v: style.tones().bad if (v.reliability is not None and v.reliability < 0.5) else None),
    Column("Detail", lambda v: v.detail or v.url, tooltip=lambda v: v.detail,
           foreground=lambda v: style.tones().bad if v.state is AgentState.DOWN else style.tones().muted),
)
STATUS_COLUMN, SCORE_COLUMN, STANDING_COLUMN = 4, 5, 6
AGENT_COLUMN, DETAIL_COLUMN = 0, len(FLEET_COLUMNS) - 1


def columns_with_suspects(suspects: dict[str, str], icon) -> tuple[Column[AgentView], ...]:
    """FLEET_COLUMNS, with a warning icon on a suspect's id and why it is suspected in its Detail."""
    agent, detail = FLEET_COLUMNS[AGENT_COLUMN], FLEET_COLUMNS[DETAIL_COLUMN]

    def suspect(view: AgentView) -> bool:
        return view.spec.id in suspects

    columns = list(FLEET_COLUMNS)
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
    """Agents keyed by id; an update touches that agent's row only. Suspects (from the latest answer)
    change the Agent and Detail columns of their rows."""

    def __init__(self, parent=None) -> None:
        self._suspects: dict[str, str] = {}       # agent id -> why; the columns read it, so it is only mutated
        super().__init__(columns_with_suspects(self._suspects, self._warning_icon), parent)
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

    def row_of(self, agent_id: str) -> int:
        return self._rows[agent_id]

    def view(self, agent_id: str) -> AgentView | None:
        row = self._rows.get(agent_id)
        return None if row is None else self.record(row)

    def count_standing(self, standing: str) -> int:
        return sum(view.trust_state == standing for view in self.records())

    def count(self, state: AgentState) -> int:
        return sum(view.state is state for view in self.records())


class FleetPanel(QWidget):
    sig_summary_changed = Signal(str)
    sig_agent_selected = Signal(str)        # agent id: the operator selected its row

    def __init__(self, service: EngineService, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._service = service
        self._accepting = service.ready
        self.dialog: TrustActionDialog | None = None
        self.model = FleetModel(self)
        self.model.set_agents(service.fleet.agents())

        self.title = QLabel()
        self.title.setFont(style.scaled_font(self.font(), 1.15, bold=True))
        self.message = QLabel()                 # the last quarantine or release, or why it was refused
        self.message.setTextFormat(Qt.TextFormat.PlainText)
        self.message.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)   # never widens the window
        self.message.setAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        self.quarantine_button = QPushButton("Quarantine…")
        self.release_button = QPushButton("Release…")
        self.table = QTableView()
        self.table.setModel(self.model)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.setAlternatingRowColors(True)
        self.table.verticalHeader().setVisible(False)
        self.table.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        style.compact_rows(self.table)
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        header.setStretchLastSection(True)     # Detail (URL or last error) takes the slack

        self.header_row = QWidget()
        top = QHBoxLayout(self.header_row)
        top.setContentsMargins(0, 0, 0, 0)
        top.addWidget(self.title)
        top.addWidget(self.message, 1)
        top.addWidget(self.quarantine_button)
        top.addWidget(self.release_button)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.header_row)
        layout.addWidget(self.table)

        service.fleet.sig_agent_changed.connect(self.model.update_agent)
        service.questions.sig_answer.connect(self.show_suspects)
        service.sig_ready.connect(self._on_ready)
        service.sig_stopping.connect(self._on_stopping)
        service.trust.sig_failed.connect(self._on_trust_failed)
        self.model.dataChanged.connect(self._update_title)
        self.model.modelReset.connect(self._update_title)
        self.model.rowsInserted.connect(self._update_title)
        self.model.dataChanged.connect(self._refresh_buttons)
        self.table.selectionModel().currentRowChanged.connect(self._on_current_changed)
        self.table.customContextMenuRequested.connect(self._show_context_menu)
        self.quarantine_button.clicked.connect(lambda: self.open_dialog(TrustAction.QUARANTINE))
        self.release_button.clicked.connect(lambda: self.open_dialog(TrustAction.RELEASE))
        self._update_title()
        self._refresh_buttons()

    def fitting_height(self, max_rows: int = 12) -> int:
        """Height that shows every agent (up to max_rows) without a scroll bar."""
        rows = min(self.model.rowCount(), max_rows)
        table = self.table
        return (self.header_row.sizeHint().height() + self.layout().spacing()
                + table.horizontalHeader().sizeHint().height()
                + rows * table.verticalHeader().defaultSectionSize() + 2 * table.frameWidth() + 2)

    def show_suspects(self, answer: Answer) -> None:
        """The latest answer decides who is suspected: earlier marks it does not repeat are cleared."""
        if self.model.set_suspects((s.agent_id, s.reason) for s in answer.suspects):
            self._update_title()

    def summary(self) -> str:
        """'5 of 6 agents up · 1 down · 1 suspected · 1 quarantined': the fleet's health in one phrase
        (disabled agents not counted)."""
        up, down = self.model.count(AgentState.UP), self.model.count(AgentState.DOWN)
        total = self.model.rowCount() - self.model.count(AgentState.DISABLED)
        suspected = len(self.model.suspects())
        quarantined, probation = self.model.count_standing("quarantined"), self.model.count_standing("probation")
        text = f"all {total} agents up" if up == total else f"{up} of {total} agents up" + (f" · {down} down" if down else "")
        return (text + (f" · {suspected} suspected" if suspected else "")
                + (f" · {quarantined} quarantined" if quarantined else "")
                + (f" · {probation} on probation" if probation else ""))

    def _update_title(self, *_args) -> None:
        self.title.setText(f"Fleet — {self.summary()}")
        self.sig_summary_changed.emit(self.summary())

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
        self._refresh_buttons()
        if current.isValid():
            self.sig_agent_selected.emit(self.model.record(current.row()).spec.id)

    # --- quarantine and release ------------------------------------------------------------
    def can(self, action: TrustAction, view: AgentView | None) -> tuple[bool, str]:
        """May the operator start this action on this agent now, and if not, why not (for the tooltip)."""
        if view is None:
            return False, "Select an agent first"
        if not self._accepting:
            return False, "Waiting for the engine"
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
            item.setToolTip(why)
        return menu

    def _show_context_menu(self, pos: QPoint) -> None:
        index = self.table.indexAt(pos)
        if index.isValid():
            self.context_menu(index.row()).popup(self.table.viewport().mapToGlobal(pos))

    def _on_saved(self, agent_id: str, action: str) -> None:
        done = TrustAction(action).done
        self.message.setStyleSheet(f"color: {(style.tones().bad if action == 'quarantine' else style.tones().warn).name()}")
        self.message.setText(f"{agent_id} {done} by {self._service.operator}")
        self.message.setToolTip(self.message.text())
        self._refresh_buttons()

    def _on_trust_failed(self, agent_id: str, why: str) -> None:
        if self.dialog is None or not self.dialog.isVisible():      # the dialog shows its own failures
            self.message.setStyleSheet(f"color: {style.tones().bad.name()}")
            self.message.setText(f"{agent_id}: {why}")
            self.message.setToolTip(self.message.text())

    def _on_ready(self, _agents_up: int) -> None:
        self._accepting = True
        self._refresh_buttons()

    def _on_stopping(self) -> None:
        self._accepting = False
        if self.dialog is not None and self.dialog.isVisible():
            self.dialog.reject()
        self._refresh_buttons()

    def _refresh_buttons(self, *_args) -> None:
        view = self.current_view()
        for action, button in ((TrustAction.QUARANTINE, self.quarantine_button),
                               (TrustAction.RELEASE, self.release_button)):
            allowed, why = self.can(action, view)
            button.setEnabled(allowed)
            button.setToolTip(why)
