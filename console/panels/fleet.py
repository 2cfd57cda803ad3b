"""Fleet panel: one row per agent, updated row by row as the engine reports each agent.

An agent the latest answer names as a suspect carries a warning icon and a "suspected: …" detail
until an answer no longer names it; only the rows whose mark changes are redrawn.
"""
from __future__ import annotations

import dataclasses
from collections import defaultdict
from typing import Iterable

from PySide6.QtCore import Signal
from PySide6.QtGui import QIcon
from PySide6.QtWidgets import (QAbstractItemView, QApplication, QHeaderView, QLabel, QStyle, QTableView, QVBoxLayout,
                               QWidget)

from engine import AgentState, AgentView, Answer, FaultKind

from .. import style
from ..service import EngineService
from ..table_model import RIGHT, Column, RecordTableModel


def kind_text(view: AgentView) -> str:
    spec = view.spec
    detail = spec.backend or spec.model or "external"
    return f"{spec.kind.value} · {detail}"


def latency_text(view: AgentView) -> str:
    return "—" if view.last_latency_ms is None else f"{view.last_latency_ms:,.0f}"


def reliability_text(view: AgentView) -> str:
    reliability = view.reliability
    return "—" if reliability is None else f"{reliability:.0%} ({view.ok_calls}/{view.calls})"


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
           background=lambda v: None if v.spec.fault.kind is FaultKind.NONE else style.FAULT_BACKGROUND,
           bold=lambda v: v.spec.fault.kind is not FaultKind.NONE, tooltip=fault_tooltip),
    Column("Status", lambda v: v.state.value, foreground=lambda v: style.agent_state_colour(v.state),
           bold=lambda v: v.state in (AgentState.UP, AgentState.DOWN), tooltip=status_tooltip),
    Column("Last latency (ms)", latency_text, align=RIGHT),
    Column("Trust", lambda v: v.spec.trust.value),
    Column("Reliability", reliability_text, align=RIGHT,
           foreground=lambda v: style.RED if (v.reliability is not None and v.reliability < 0.5) else None),
    Column("Detail", lambda v: v.detail or v.url, tooltip=lambda v: v.detail,
           foreground=lambda v: style.RED if v.state is AgentState.DOWN else style.GREY),
)
STATUS_COLUMN = 4
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
        foreground=lambda v: style.RED if suspect(v) else detail.foreground(v),
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

    def count(self, state: AgentState) -> int:
        return sum(view.state is state for view in self.records())


class FleetPanel(QWidget):
    sig_summary_changed = Signal(str)

    def __init__(self, service: EngineService, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.model = FleetModel(self)
        self.model.set_agents(service.agents())

        self.title = QLabel()
        self.title.setFont(style.scaled_font(self.font(), 1.15, bold=True))
        self.table = QTableView()
        self.table.setModel(self.model)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.setAlternatingRowColors(True)
        self.table.verticalHeader().setVisible(False)
        style.compact_rows(self.table)
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        header.setStretchLastSection(True)     # Detail (URL or last error) takes the slack

        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.title)
        layout.addWidget(self.table)

        service.sig_agent_changed.connect(self.model.update_agent)
        service.sig_answer.connect(self.show_suspects)
        self.model.dataChanged.connect(self._update_title)
        self.model.modelReset.connect(self._update_title)
        self.model.rowsInserted.connect(self._update_title)
        self._update_title()

    def fitting_height(self, max_rows: int = 12) -> int:
        """Height that shows every agent (up to max_rows) without a scroll bar."""
        rows = min(self.model.rowCount(), max_rows)
        table = self.table
        return (self.title.sizeHint().height() + self.layout().spacing() + table.horizontalHeader().sizeHint().height()
                + rows * table.verticalHeader().defaultSectionSize() + 2 * table.frameWidth() + 2)

    def show_suspects(self, answer: Answer) -> None:
        """The latest answer decides who is suspected: earlier marks it does not repeat are cleared."""
        if self.model.set_suspects(answer.suspects):
            self._update_title()

    def summary(self) -> str:
        """'5 of 6 agents up · 1 down · 1 suspected': the fleet's health in one phrase (disabled agents not counted)."""
        up, down = self.model.count(AgentState.UP), self.model.count(AgentState.DOWN)
        total = self.model.rowCount() - self.model.count(AgentState.DISABLED)
        suspected = len(self.model.suspects())
        text = f"all {total} agents up" if up == total else f"{up} of {total} agents up" + (f" · {down} down" if down else "")
        return text + (f" · {suspected} suspected" if suspected else "")

    def _update_title(self, *_args) -> None:
        self.title.setText(f"Fleet — {self.summary()}")
        self.sig_summary_changed.emit(self.summary())
