"""The main window: fleet, approval queue, trust plot, alerts and the cascade monitor (tabs) above,
question and answer below, start-up progress in the status bar. The Approvals tab title counts the
answers waiting for an operator; the Alerts tab title and a button in the status bar count the alerts
nobody acknowledged yet (the button opens the Alerts tab); the Cascade tab title counts the answers the
cascade monitor halted for review, and the answer view's "Stage scores…" opens an answer's stages there.
The Gateway tab lists the messages the thought-virus gateway blocked, sanitised or escalated (its title
counts the blocked ones); its "Open trace…", the answer view's and the Alerts tab's open a question's whole
trace in the one trace view the window owns (a window of its own). The Memory tab shows every agent's
own memory (snapshot, roll back, quarantine, release, who read an entry); the Tools tab shows agents' tool
calls, pending ones first (its title counts them), with Approve / Reject, the outbox and the permission matrix.
Selecting an agent in the fleet table, on the trust plot or through an alert selects it in the others.
When the engine is ready the stored score history and alerts are read once (load_trust), and the gateway's
stored decisions (load_gateway), agents' memory (load_memory) and tool calls (load_tool_calls); from then
on the panels grow live (memory and tool calls are read again after each answer).

Closing is two-step: the first close request is refused and announced with sig_close_requested,
so the app can shut the engine down while the window still says what is happening; the app then
calls allow_close() and closes it for real.
"""
from __future__ import annotations

from PySide6.QtCore import QSize, Qt, Signal
from PySide6.QtGui import QCloseEvent
from PySide6.QtWidgets import QLabel, QMainWindow, QProgressBar, QSplitter, QStyle, QTabWidget, QToolButton, QWidget

from engine import Answer

from . import style
from .panels.alerts import AlertsPanel
from .panels.approvals import ApprovalsPanel
from .panels.ask import AskPanel
from .panels.cascade import CascadePanel
from .panels.fleet import FleetPanel
from .panels.gateway import GatewayPanel
from .panels.memory import MemoryPanel
from .panels.tool_calls import ToolCallsPanel
from .panels.trace_view import TraceView
from .panels.trust import TrustPanel
from .service import EngineService
from .toast import Toast

TITLE = "Quorum — operations console"
DEFAULT_SIZE = QSize(1280, 800)
FLEET_TAB, APPROVALS_TAB, TRUST_TAB, ALERTS_TAB, CASCADE_TAB, GATEWAY_TAB, MEMORY_TAB, TOOLS_TAB = range(8)
APPROVALS_HEIGHT = 360       # pixels the top area takes while the approval queue is shown
TRUST_HEIGHT = 430           # ... the trust plot
ALERTS_HEIGHT = 320          # ... the alerts list
CASCADE_HEIGHT = 520         # ... the stage scores and the strip of recent questions
GATEWAY_HEIGHT = 420         # ... the stopped messages and the selected one's evidence
MEMORY_HEIGHT = 470          # ... namespaces, entries, the selected entry and its readers
TOOLS_HEIGHT = 440           # ... tool calls, the selected one and the outbox


class MainWindow(QMainWindow):
    sig_close_requested = Signal()

    def __init__(self, service: EngineService, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle(TITLE)
        self.resize(DEFAULT_SIZE)
        self._may_close = False
        self._close_requested = False

        self.fleet_panel = FleetPanel(service)
        self.approvals_panel = ApprovalsPanel(service)
        self.trust_panel = TrustPanel(service)
        self.alerts_panel = AlertsPanel(service)
        self.cascade_panel = CascadePanel(theta=service.cascade.threshold)
        self.gateway_panel = GatewayPanel(service)
        self.memory_panel = MemoryPanel(service)
        self.tools_panel = ToolCallsPanel(service)
        self.ask_panel = AskPanel(service)
        self.trace_view = TraceView(service, self)
        self._service = service
        self.top_tabs = QTabWidget()
        self.top_tabs.setDocumentMode(True)
        self.top_tabs.addTab(self.fleet_panel, "Fleet")
        self.top_tabs.addTab(self.approvals_panel, self.approvals_panel.tab_title())
        self.top_tabs.addTab(self.trust_panel, self.trust_panel.tab_title())
        self.top_tabs.addTab(self.alerts_panel, self.alerts_panel.tab_title())
        self.top_tabs.addTab(self.cascade_panel, self.cascade_panel.tab_title())
        self.top_tabs.addTab(self.gateway_panel, self.gateway_panel.tab_title())
        self.top_tabs.addTab(self.memory_panel, self.memory_panel.tab_title())
        self.top_tabs.addTab(self.tools_panel, self.tools_panel.tab_title())
        self.top_tabs.setTabToolTip(TRUST_TAB, "Every agent's trust score over time, and the quarantine floor")
        self.top_tabs.setTabToolTip(CASCADE_TAB, "Each question's stages as the cascade monitor scored them")
        self.top_tabs.setTabToolTip(GATEWAY_TAB, "Messages the gateway blocked, sanitised or escalated")
        self.top_tabs.setTabToolTip(MEMORY_TAB, "Every agent's own memory: versions, snapshots, rollback, quarantine")
        self.top_tabs.setTabToolTip(TOOLS_TAB, "Agents' tool calls, the ones waiting for an operator first")
        self.splitter = splitter = QSplitter(Qt.Orientation.Vertical)
        splitter.addWidget(self.top_tabs)
        splitter.addWidget(self.ask_panel)
        splitter.setStretchFactor(0, 0)
        splitter.setStretchFactor(1, 1)
        tabs_height = self.top_tabs.tabBar().sizeHint().height()
        fleet_height = self.fleet_panel.fitting_height() + tabs_height
        # Each tab keeps its own height: the queue needs room for an item's candidates and the decision form.
        self._top_heights = {FLEET_TAB: fleet_height, APPROVALS_TAB: max(fleet_height, APPROVALS_HEIGHT),
                             TRUST_TAB: max(fleet_height, TRUST_HEIGHT), ALERTS_TAB: max(fleet_height, ALERTS_HEIGHT),
                             CASCADE_TAB: max(fleet_height, CASCADE_HEIGHT),
                             GATEWAY_TAB: max(fleet_height, GATEWAY_HEIGHT),
                             MEMORY_TAB: max(fleet_height, MEMORY_HEIGHT), TOOLS_TAB: max(fleet_height, TOOLS_HEIGHT)}
        splitter.setSizes([fleet_height, DEFAULT_SIZE.height() - fleet_height])
        splitter.setContentsMargins(8, 8, 8, 0)
        self.setCentralWidget(splitter)
        self._top_tab = FLEET_TAB
        self.top_tabs.currentChanged.connect(self._on_top_tab_changed)
        self.approvals_panel.sig_pending_changed.connect(self._on_pending_changed)
        self.alerts_panel.sig_open_changed.connect(self._on_open_alerts_changed)
        # One agent selected everywhere: the fleet row, the trust line, the alert's agent.
        self.trust_panel.sig_agent_selected.connect(self.fleet_panel.select_agent)
        self.fleet_panel.sig_agent_selected.connect(self.trust_panel.select_agent)
        self.alerts_panel.sig_agent_selected.connect(self.fleet_panel.select_agent)
        # The cascade monitor's events, live; the answer brings each stage's own confidence.
        cascade = self.cascade_panel
        service.questions.sig_started.connect(cascade.start_question)
        service.cascade.sig_scored.connect(cascade.add_score)
        service.cascade.sig_resolved.connect(cascade.resolve)
        service.questions.sig_answer.connect(cascade.add_answer)
        for signal in (service.cascade.sig_resolved, service.questions.sig_answer):     # after the panel took it in
            signal.connect(self._refresh_cascade_title)
        self.ask_panel.answer_view.sig_show_cascade.connect(self.show_cascade)
        # The gateway's stopped messages, live; any panel's "Open trace…" ends in the one trace view.
        self.gateway_panel.sig_counts_changed.connect(self._refresh_gateway_title)
        self.ask_panel.answer_view.sig_open_trace.connect(self.trace_view.open_trace)
        service.traces.sig_loaded.connect(self.trace_view.show_trace)
        service.traces.sig_failed.connect(self.trace_view.show_failure)
        # Memory and tool calls: their traces open in the same trace view; the titles count what needs a person.
        self.memory_panel.sig_open_trace.connect(self.trace_view.open_trace)
        self.tools_panel.sig_open_trace.connect(self.trace_view.open_trace)
        self.memory_panel.sig_counts_changed.connect(self._refresh_memory_title)
        self.tools_panel.sig_pending_changed.connect(self._refresh_tools_title)

        self.status_text = QLabel("Engine not started")
        self.progress = QProgressBar()
        self.progress.setFixedWidth(220)
        self.progress.setFormat("%v / %m agents")
        self.progress.hide()
        self.alerts_button = QToolButton()        # "⚠ 2 open alerts": hidden when none is open; opens the Alerts tab
        self.alerts_button.setAutoRaise(True)
        self.alerts_button.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextBesideIcon)
        self.alerts_button.setIcon(self.style().standardIcon(QStyle.StandardPixmap.SP_MessageBoxWarning))
        self.alerts_button.setStyleSheet(f"QToolButton {{ color: {style.RED.name()}; font-weight: bold; }}")
        self.alerts_button.setCursor(Qt.CursorShape.PointingHandCursor)
        self.alerts_button.setToolTip("Show the alerts")
        self.alerts_button.clicked.connect(self.show_alerts)
        self.alerts_button.hide()
        self.statusBar().addWidget(self.status_text, 1)
        self.statusBar().addPermanentWidget(self.alerts_button)
        self.statusBar().addPermanentWidget(self.progress)
        self.toast = Toast(self)
        self.ask_panel.question.setFocus()     # typing starts a question; the fleet table is for reading
        self._ready = False

        service.sig_starting.connect(self._on_starting)
        service.sig_ready.connect(self._on_ready)
        service.sig_error.connect(self.toast.show_message)
        service.sig_stopping.connect(self._on_stopping)
        service.sig_stopped.connect(lambda: self.status_text.setText("Engine stopped"))
        self.fleet_panel.sig_summary_changed.connect(self._on_fleet_summary)
        service.fleet.sig_agent_changed.connect(self._on_trust_standing)

    # --- fleet / approvals tabs ------------------------------------------------------------
    def show_approvals(self) -> None:
        self.top_tabs.setCurrentIndex(APPROVALS_TAB)

    def show_trust(self) -> None:
        self.top_tabs.setCurrentIndex(TRUST_TAB)

    def show_alerts(self) -> None:
        self.top_tabs.setCurrentIndex(ALERTS_TAB)
        self.alerts_panel.select_first_open()

    def show_cascade(self, answer: Answer | None = None) -> None:
        """Opens the Cascade tab, on `answer`'s stages when one is given."""
        if answer is not None:
            self.cascade_panel.show_answer(answer)
        self.top_tabs.setCurrentIndex(CASCADE_TAB)

    def show_gateway(self) -> None:
        self.top_tabs.setCurrentIndex(GATEWAY_TAB)

    def show_memory(self) -> None:
        self.top_tabs.setCurrentIndex(MEMORY_TAB)

    def show_tools(self) -> None:
        self.top_tabs.setCurrentIndex(TOOLS_TAB)

    def _on_top_tab_changed(self, tab: int) -> None:
        sizes = self.splitter.sizes()
        total = sum(sizes)
        self._top_heights[self._top_tab] = sizes[0]
        self._top_tab = tab
        top = min(self._top_heights.get(tab, sizes[0]), total - 200) if total > 400 else sizes[0]
        self.splitter.setSizes([top, total - top])

    def _on_pending_changed(self, pending: int) -> None:
        self.top_tabs.setTabText(APPROVALS_TAB, self.approvals_panel.tab_title())
        bar = self.top_tabs.tabBar()
        bar.setTabTextColor(APPROVALS_TAB, style.RED if pending else bar.palette().windowText().color())
        bar.setTabToolTip(APPROVALS_TAB, f"{pending} answer(s) wait for an operator" if pending
                          else "No answer waits for an operator")

    def _on_open_alerts_changed(self, open_count: int) -> None:
        self.top_tabs.setTabText(ALERTS_TAB, self.alerts_panel.tab_title())
        bar = self.top_tabs.tabBar()
        bar.setTabTextColor(ALERTS_TAB, style.RED if open_count else bar.palette().windowText().color())
        bar.setTabToolTip(ALERTS_TAB, f"{open_count} alert(s) not acknowledged yet" if open_count
                          else "Every alert is acknowledged")
        self.alerts_button.setText(f"{open_count} open alert{'s' if open_count != 1 else ''}")
        self.alerts_button.setVisible(open_count > 0)

    def _refresh_cascade_title(self, *_args) -> None:
        halted = self.cascade_panel.halted_count()
        self.top_tabs.setTabText(CASCADE_TAB, self.cascade_panel.tab_title())
        bar = self.top_tabs.tabBar()
        bar.setTabTextColor(CASCADE_TAB, style.RED if halted else bar.palette().windowText().color())

    def _refresh_gateway_title(self, blocked: int) -> None:
        self.top_tabs.setTabText(GATEWAY_TAB, self.gateway_panel.tab_title())
        bar = self.top_tabs.tabBar()
        bar.setTabTextColor(GATEWAY_TAB, style.RED if blocked else bar.palette().windowText().color())

    def _refresh_memory_title(self, _quarantined: int) -> None:
        self.top_tabs.setTabText(MEMORY_TAB, self.memory_panel.tab_title())     # not red: a quarantine is handled

    def _refresh_tools_title(self, pending: int) -> None:
        self.top_tabs.setTabText(TOOLS_TAB, self.tools_panel.tab_title())
        bar = self.top_tabs.tabBar()
        bar.setTabTextColor(TOOLS_TAB, style.RED if pending else bar.palette().windowText().color())
        bar.setTabToolTip(TOOLS_TAB, f"{pending} tool call(s) wait for an operator" if pending
                          else "Agents' tool calls; none waits for an operator")

    def _on_trust_standing(self, _view) -> None:
        self.top_tabs.setTabText(TRUST_TAB, self.trust_panel.tab_title())

    # --- status bar ------------------------------------------------------------------------
    def _on_starting(self, up: int, total: int) -> None:
        self.status_text.setText(f"Starting agents {up}/{total}… (models may take a minute to load the first time)")
        self.progress.setRange(0, max(total, 1))
        self.progress.setValue(up)
        self.progress.show()

    def _on_ready(self, _agents_up: int) -> None:
        self._ready = True
        self._service.trust.load()          # the stored score history and alerts, once; live from here on
        self._service.gateway.load()        # the gateway's stored decisions, likewise
        self.progress.hide()
        self._on_fleet_summary(self.fleet_panel.summary())

    def _on_fleet_summary(self, summary: str) -> None:
        if self._ready:                      # keeps "Ready — …" true when an agent goes down later
            self.status_text.setText(f"Ready — {summary}")

    def _on_stopping(self) -> None:
        self._ready = False
        self.status_text.setText("Shutting down: stopping the agents and flushing the store…")
        self.progress.setRange(0, 0)
        self.progress.show()

    # --- closing ---------------------------------------------------------------------------
    def allow_close(self) -> None:
        self._may_close = True

    def closeEvent(self, event: QCloseEvent) -> None:
        if self._may_close:
            event.accept()
            return
        event.ignore()
        if not self._close_requested:
            self._close_requested = True
            self.sig_close_requested.emit()
