"""Fleet panel: one row per agent, updated row by row as the engine reports each agent."""
from __future__ import annotations

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QAbstractItemView, QHeaderView, QLabel, QTableView, QVBoxLayout, QWidget

from engine import AgentState, AgentView, FaultKind

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


class FleetModel(RecordTableModel[AgentView]):
    """Agents keyed by id; an update touches that agent's row only."""

    def __init__(self, parent=None) -> None:
        super().__init__(FLEET_COLUMNS, parent)
        self._rows: dict[str, int] = {}

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

    def summary(self) -> str:
        """'5 of 6 agents up · 1 down': the fleet's health in one phrase (disabled agents not counted)."""
        up, down = self.model.count(AgentState.UP), self.model.count(AgentState.DOWN)
        total = self.model.rowCount() - self.model.count(AgentState.DISABLED)
        if up == total:
            return f"all {total} agents up"
        return f"{up} of {total} agents up" + (f" · {down} down" if down else "")

    def _update_title(self, *_args) -> None:
        self.title.setText(f"Fleet — {self.summary()}")
        self.sig_summary_changed.emit(self.summary())
