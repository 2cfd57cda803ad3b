"""The main window: every panel a dock (console/docks.py), every action declared once (console/actions.py),
the engine's state, the unacknowledged alerts and the demo traffic in the status bar.

Docks can be moved, tabbed, floated and closed; View reopens any of them (Alt+1…) and resets the layout.
Where the operator put them and the window's geometry are remembered in QSettings (layout only: data
stays in the engine's store); the first start fills the screen at 1280×800 and above. Each dock's title
counts what needs a person (pending approvals, unacknowledged alerts, blocked messages, ...).

Selecting an agent in the fleet table, on the trust plot or through an alert selects it in the others;
any panel's "Open trace…" ends in the one trace view the window owns (a window of its own). When the
engine is ready the stored score history, alerts and gateway decisions are read once; from then on the
panels grow live.

Closing is two-step: the first close request is refused and announced with sig_close_requested,
so the app can shut the engine down while the window still says what is happening; the app then
calls allow_close() and closes it for real (saving the layout first).
"""
from __future__ import annotations

from typing import Callable

from PySide6.QtCore import QByteArray, QSettings, QSize, Qt, Signal
from PySide6.QtGui import QAction, QActionGroup, QCloseEvent, QGuiApplication
from PySide6.QtWidgets import (QDockWidget, QInputDialog, QMainWindow, QProgressBar, QStyle, QTabBar,
                               QSizePolicy, QTabWidget, QToolBar, QToolButton, QWidget)

from engine import Answer

from . import style
from .actions import ActionBook
from .batch import Coalescer
from .docks import PANELS, Area, panel as panel_spec
from .panels.alerts import AlertsPanel
from .panels.approvals import ApprovalsPanel
from .panels.ask import AskPanel
from .panels.demo_controls import DemoControls
from .panels.audit import AuditPanel
from .panels.cascade import CascadePanel
from .panels.corpus import CorpusPanel
from .panels.fleet import FleetPanel
from .panels.gateway import GatewayPanel
from .panels.memory import MemoryPanel
from .panels.tool_calls import ToolCallsPanel
from .panels.trace_view import TraceView
from .panels.trust import TrustPanel
from .service import EngineService
from .settings import console_settings
from .notify import Notifier
from .shortcuts_sheet import ShortcutsSheet
from .toast import Toast
from .untrusted import PlainLabel

TITLE = "Quorum — operations console"
DEFAULT_SIZE = QSize(1280, 800)
SCREEN_SHARE = 0.9           # of the available screen, when it is larger than DEFAULT_SIZE
TOP_SHARE = 0.36             # of the window's height the top docks (fleet, trust, cascade, corpus) start with
LAYOUT_VERSION = 1           # bump when the panels change so much that an old saved layout misleads
GEOMETRY_KEY, STATE_KEY, THEME_KEY = "window/geometry", "window/state", "window/theme"
DEMO_ON_KEY, DEMO_RATE_KEY = "demo/enabled", "demo/rate"      # also console/settings.py: use_scratch_settings
# On the built-in fleet a first start feeds one round of the demo questions at this rate (about 40 s; the
# machine keeps up with it), so a new operator sees trust move, liars quarantined and the queue fill within a
# minute; turning it off is remembered. Continuous traffic is the operator's choice: it fills the real store.
DEMO_FIRST_RATE = 1.0


def first_size(available: QSize | None) -> QSize:
    """The window's size at first start: 1280×800 on a screen of that size, 90 % of a larger one in each
    direction, the whole of a smaller one."""
    if available is None or available.isEmpty():
        return QSize(DEFAULT_SIZE)
    if available.width() <= DEFAULT_SIZE.width() or available.height() <= DEFAULT_SIZE.height():
        return available.boundedTo(DEFAULT_SIZE)
    return QSize(max(DEFAULT_SIZE.width(), int(available.width() * SCREEN_SHARE)),
                 max(DEFAULT_SIZE.height(), int(available.height() * SCREEN_SHARE)))


def bind_approval_actions(book: ActionBook, approvals: ApprovalsPanel) -> None:
    """The approval queue's keys (J, K, N, A, R, Shift+J/K, /) on the panel's methods."""
    book.bind("approvals.next", approvals.select_next)
    book.bind("approvals.previous", approvals.select_previous)
    book.bind("approvals.next_pending", approvals.select_next_pending)
    book.bind("approvals.approve", lambda: approvals.open_form(approve=True))
    book.bind("approvals.reject", lambda: approvals.open_form(approve=False))
    book.bind("approvals.filter", approvals.focus_filter)
    book.bind("approvals.extend_next", approvals.extend_next)
    book.bind("approvals.extend_previous", approvals.extend_previous)


class MainWindow(QMainWindow):
    sig_close_requested = Signal()

    def __init__(self, service: EngineService, parent: QWidget | None = None, *,
                 settings: QSettings | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle(TITLE)
        self.setObjectName("quorum-main-window")
        self._service = service
        self._settings = settings if settings is not None else console_settings()
        self._may_close = False
        self._close_requested = False
        self._ready = False

        self.action_book = ActionBook(self)
        self._make_panels(service)
        self.docks: dict[str, QDockWidget] = {}
        self._make_docks()
        self._make_status_bar()
        self._make_store_banner()
        self._make_menus()
        self._bind_actions()
        self._connect(service)

        self._lay_out_default()
        self._default_state = QByteArray()     # taken at the first show, once the docks have their sizes
        self._restore_geometry()
        self._refresh_titles()
        self.ask_panel.question.setFocus()     # typing starts a question; the tables are for reading

    # --- panels and docks -------------------------------------------------------------------
    def _make_panels(self, service: EngineService) -> None:
        self.fleet_panel = FleetPanel(service)
        self.ask_panel = AskPanel(service)
        self.approvals_panel = ApprovalsPanel(service)
        self.alerts_panel = AlertsPanel(service)
        self.trust_panel = TrustPanel(service)
        self.cascade_panel = CascadePanel(theta=service.cascade.threshold)
        self.gateway_panel = GatewayPanel(service)
        self.memory_panel = MemoryPanel(service)
        self.tools_panel = ToolCallsPanel(service)
        self.audit_panel = AuditPanel(service)
        self.corpus_panel = CorpusPanel(service)
        self.trace_view = TraceView(service, self)
        self.panels: dict[str, QWidget] = {
            "fleet": self.fleet_panel, "questions": self.ask_panel, "approvals": self.approvals_panel,
            "alerts": self.alerts_panel, "trust": self.trust_panel, "cascade": self.cascade_panel,
            "gateway": self.gateway_panel, "memory": self.memory_panel, "tools": self.tools_panel,
            "audit": self.audit_panel, "corpus": self.corpus_panel,
        }

    def _make_docks(self) -> None:
        # A placeholder central widget (Qt requires one); hidden, so the docks share the whole window.
        placeholder = QWidget()
        placeholder.setMaximumSize(0, 0)
        self.setCentralWidget(placeholder)
        placeholder.hide()
        self.setDockNestingEnabled(True)
        self.setTabPosition(Qt.DockWidgetArea.AllDockWidgetAreas, QTabWidget.TabPosition.North)
        self.setDockOptions(QMainWindow.DockOption.AllowTabbedDocks | QMainWindow.DockOption.AllowNestedDocks
                            | QMainWindow.DockOption.AnimatedDocks)
        for spec in PANELS:
            widget = self.panels.get(spec.id)
            if widget is None:          # declared but not built in this window (yet)
                continue
            dock = QDockWidget(spec.title, self)
            dock.setObjectName(spec.id)
            dock.setWidget(widget)
            dock.setToolTip(spec.tip)
            dock.setFeatures(QDockWidget.DockWidgetFeature.DockWidgetMovable
                             | QDockWidget.DockWidgetFeature.DockWidgetFloatable
                             | QDockWidget.DockWidgetFeature.DockWidgetClosable)
            self.action_book.attach(spec.id, dock)
            set_shown = getattr(widget, "set_shown", None)
            if callable(set_shown):      # Qt keeps a dock behind another tab "visible": tell the panel itself
                dock.visibilityChanged.connect(set_shown)
            self.docks[spec.id] = dock

    def _lay_out_default(self) -> None:
        """Top: fleet, trust, cascade, corpus; bottom: questions and the rest; the first of each in front."""
        groups: dict[Area, list[QDockWidget]] = {Area.TOP: [], Area.BOTTOM: []}
        for spec in PANELS:
            dock = self.docks.get(spec.id)
            if dock is None:
                continue
            dock.setFloating(False)
            dock.show()
            area = Qt.DockWidgetArea.TopDockWidgetArea if spec.area is Area.TOP else Qt.DockWidgetArea.BottomDockWidgetArea
            group = groups[spec.area]
            if group:
                self.tabifyDockWidget(group[0], dock)     # straight into the tabs: never side by side, even briefly
            else:
                self.addDockWidget(area, dock)
            group.append(dock)
        for docks in groups.values():
            if docks:
                docks[0].raise_()
        self.resize(self._first_size())
        self._first_docks = (groups[Area.TOP][0], groups[Area.BOTTOM][0])

    def _size_default_docks(self) -> None:
        """The top group gets about a third of the height (the whole fleet table fits), the work the rest."""
        top_dock, bottom_dock = self._first_docks
        height = self.height()
        top = max(self.fleet_panel.fitting_height() + 30, int(height * TOP_SHARE))
        self.resizeDocks([top_dock, bottom_dock], [top, max(height - top, 200)], Qt.Orientation.Vertical)

    def showEvent(self, event) -> None:
        super().showEvent(event)
        if self._default_state.isEmpty():      # the first show: sizes are real now
            self._size_default_docks()
            self._default_state = self.saveState(LAYOUT_VERSION)
            self._restore_state()

    def _first_size(self) -> QSize:
        screen = self.screen() or QGuiApplication.primaryScreen()
        return first_size(screen.availableGeometry().size() if screen is not None else None)

    def _restore_geometry(self) -> None:
        geometry = self._settings.value(GEOMETRY_KEY)
        if isinstance(geometry, QByteArray) and not geometry.isEmpty():
            self.restoreGeometry(geometry)

    def _restore_state(self) -> bool:
        state = self._settings.value(STATE_KEY)
        if isinstance(state, QByteArray) and not state.isEmpty():
            return self.restoreState(state, LAYOUT_VERSION)      # a layout of another version is ignored
        return False

    def save_layout(self) -> None:
        self._settings.setValue(GEOMETRY_KEY, self.saveGeometry())
        self._settings.setValue(STATE_KEY, self.saveState(LAYOUT_VERSION))
        self._settings.sync()

    def reset_layout(self) -> None:
        """Every panel back where the first start put it (closed ones reopened)."""
        for dock in self.docks.values():
            dock.show()
        if self._default_state.isEmpty():        # never shown yet: the default is what is there
            return
        self.restoreState(self._default_state, LAYOUT_VERSION)
        for spec_id in ("fleet", "questions"):
            if spec_id in self.docks:
                self.docks[spec_id].raise_()
        self.save_layout()

    def show_panel(self, panel_id: str, focus: bool = True) -> QWidget:
        """Shows the panel's dock (reopened if closed, brought to the front of its tabs) and focuses it."""
        dock = self.docks[panel_id]
        dock.show()
        dock.raise_()
        if self.toast.isVisible():
            self.toast.raise_()          # a raised dock must not cover the message on top of it
        widget = self.panels[panel_id]
        if focus:
            target = getattr(widget, "focus_target", None)
            (target() if callable(target) else widget).setFocus(Qt.FocusReason.ShortcutFocusReason)
        return widget

    # Named shortcuts for callers that knew the tabs (the screenshot tool, tests).
    def show_approvals(self) -> None:
        self.show_panel("approvals")

    def show_trust(self) -> None:
        self.show_panel("trust")

    def show_alerts(self) -> None:
        self.show_panel("alerts")
        self.alerts_panel.select_first_open()

    def show_cascade(self, answer: Answer | None = None) -> None:
        """Opens the Cascade panel, on `answer`'s stages when one is given."""
        if answer is not None:
            self.cascade_panel.show_answer(answer)
        self.show_panel("cascade")

    def show_gateway(self) -> None:
        self.show_panel("gateway")

    def show_memory(self) -> None:
        self.show_panel("memory")

    def show_tools(self) -> None:
        self.show_panel("tools")

    def _refresh_titles(self, *_args) -> None:
        for panel_id, dock in self.docks.items():
            title = getattr(self.panels[panel_id], "tab_title", None)
            dock.setWindowTitle(title() if callable(title) else panel_spec(panel_id).title)
        self._paint_tabs()

    def needs_attention(self, panel_id: str) -> bool:
        """Something in the panel waits for a person (pending approvals, open alerts, blocked messages, ...)."""
        check = getattr(self.panels[panel_id], "needs_attention", None)
        return bool(check()) if callable(check) else False

    def _paint_tabs(self) -> None:
        """Tabs of docks that need a person read in the 'bad' tone. Qt owns the dock tab bars; a tab shows
        its dock's title, which is unique, so the title finds the tab."""
        attention = {dock.windowTitle(): self.needs_attention(pid) for pid, dock in self.docks.items()}
        for bar in self.findChildren(QTabBar):
            if bar.parent() is not self:
                continue        # a panel's own tabs, not the docks'
            for index in range(bar.count()):
                wanted = attention.get(bar.tabText(index))
                if wanted is not None:
                    bar.setTabTextColor(index, style.tones().bad if wanted else bar.palette().windowText().color())

    def dock_title(self, panel_id: str) -> str:
        """The dock's title as it stands (a refresh still waiting in the batch is done first)."""
        self._titles.flush_now()
        return self.docks[panel_id].windowTitle()

    def is_front(self, panel_id: str) -> bool:
        """The panel's dock is shown and not hidden behind another tab."""
        dock = self.docks[panel_id]
        return dock.isVisible() and not dock.visibleRegion().isEmpty()

    # --- menus and actions ------------------------------------------------------------------
    def _make_menus(self) -> None:
        a = self.action_book
        bar = self.menuBar()
        file_menu = bar.addMenu("&File")
        file_menu.addAction(a["trace.open"])
        file_menu.addSeparator()
        file_menu.addAction(a["app.quit"])
        view = bar.addMenu("&View")
        for spec in PANELS:
            if spec.id in self.docks:
                view.addAction(a[f"view.{spec.id}"])
        view.addSeparator()
        view.addAction(a["view.reset_layout"])
        self.theme_menu = view.addMenu("&Theme")
        self._theme_group = QActionGroup(self)
        current = self.theme_choice()
        for choice in style.ThemeChoice:
            action = QAction(choice.value.capitalize(), self)
            action.setCheckable(True)
            action.setChecked(choice is current)
            action.setData(choice.value)
            action.triggered.connect(lambda _c=False, ch=choice: self.set_theme(ch))
            self._theme_group.addAction(action)
            self.theme_menu.addAction(action)
        fleet = bar.addMenu("F&leet")
        fleet.addAction(a["fleet.quarantine"])
        fleet.addAction(a["fleet.release"])
        fleet.addSeparator()
        fleet.addAction(a["demo.toggle"])
        fleet.addSeparator()
        fleet.addAction(a["fleet.start"])
        fleet.addAction(a["fleet.stop"])
        fleet.addSeparator()
        fleet.addAction(a["corpus.reindex"])
        review = bar.addMenu("&Review")
        for action_id in ("approvals.approve", "approvals.reject", "approvals.next", "approvals.previous",
                          "approvals.next_pending", "approvals.extend_next", "approvals.extend_previous",
                          "approvals.filter"):
            review.addAction(a[action_id])
        alerts = bar.addMenu("&Alerts")
        for action_id in ("alerts.acknowledge", "alerts.silence", "alerts.next", "alerts.previous", "alerts.trace"):
            alerts.addAction(a[action_id])
        audit_menu = bar.addMenu("A&udit")
        audit_menu.addAction(a["audit.verify"])
        audit_menu.addAction(a["audit.export"])
        help_menu = bar.addMenu("&Help")
        help_menu.addAction(a["help.shortcuts"])
        self.shortcuts_sheet: ShortcutsSheet | None = None

    def _bind_actions(self) -> None:
        a = self.action_book
        a.bind("help.shortcuts", self.show_shortcuts)
        a.bind("question.focus", self.focus_question)
        a.bind("trace.open", self.ask_trace_id)
        a.bind("app.quit", self.close)
        for spec in PANELS:
            if spec.id in self.docks:
                a.bind(f"view.{spec.id}", lambda pid=spec.id: self.show_panel(pid))
        a.bind("view.reset_layout", self.reset_layout)
        fleet = self.fleet_panel
        a.bind("fleet.quarantine", fleet.quarantine_selected)
        a.bind("fleet.release", fleet.release_selected)
        a.bind("fleet.start", fleet.start_fleet)
        a.bind("demo.toggle", self.demo_controls.set_running)
        # The stop asks first, inline in the Fleet panel: bring it forward.
        a.bind("fleet.stop", lambda: (self.show_panel("fleet"), fleet.stop_fleet()))
        a.bind("corpus.reindex", lambda: (self.show_panel("corpus", focus=False), self.corpus_panel.reindex()))
        bind_approval_actions(a, self.approvals_panel)
        audit = self.audit_panel       # Ctrl+E works anywhere: the panel comes forward, its result line is there
        a.bind("audit.verify", lambda: (self.show_panel("audit", focus=False), audit.verify_chain()))
        a.bind("audit.export", lambda: (self.show_panel("audit", focus=False), audit.export_dialog()))
        alerts = self.alerts_panel
        a.bind("alerts.acknowledge", alerts.acknowledge_selected)
        a.bind("alerts.silence", alerts.silence_selected)
        a.bind("alerts.next", alerts.select_next)
        a.bind("alerts.previous", alerts.select_previous)
        a.bind("alerts.trace", alerts.open_selected_trace)

    def show_shortcuts(self) -> ShortcutsSheet:
        if self.shortcuts_sheet is None:
            self.shortcuts_sheet = ShortcutsSheet(self.action_book, self)
        self.shortcuts_sheet.show()
        self.shortcuts_sheet.raise_()
        return self.shortcuts_sheet

    def focus_question(self) -> None:
        self.show_panel("questions", focus=False)
        self.ask_panel.question.setFocus(Qt.FocusReason.ShortcutFocusReason)
        self.ask_panel.question.selectAll()

    def ask_trace_id(self) -> QInputDialog:
        """A small non-modal prompt for a trace id (no nested event loop): the trace view opens it."""
        dialog = QInputDialog(self)
        dialog.setWindowTitle("Open trace")
        dialog.setLabelText("Trace id (32 hex characters, from an answer, an alert or the audit trail):")
        dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        dialog.textValueSelected.connect(self.trace_view.open_trace)
        dialog.open()
        return dialog

    def theme_choice(self) -> style.ThemeChoice:
        try:
            return style.ThemeChoice(str(self._settings.value(THEME_KEY, style.ThemeChoice.SYSTEM.value)))
        except ValueError:
            return style.ThemeChoice.SYSTEM

    def set_theme(self, choice: style.ThemeChoice) -> None:
        self._settings.setValue(THEME_KEY, choice.value)
        style.set_scheme(style.resolve(choice))
        for action in self._theme_group.actions():
            action.setChecked(action.data() == choice.value)

    # --- live state -------------------------------------------------------------------------
    def _connect(self, service: EngineService) -> None:
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
        self.ask_panel.answer_view.sig_show_cascade.connect(self.show_cascade)
        # Any panel's "Open trace…" ends in the one trace view.
        self.ask_panel.answer_view.sig_open_trace.connect(self.trace_view.open_trace)
        self.memory_panel.sig_open_trace.connect(self.trace_view.open_trace)
        self.tools_panel.sig_open_trace.connect(self.trace_view.open_trace)
        self.audit_panel.sig_open_trace.connect(self.trace_view.open_trace)
        service.traces.sig_loaded.connect(self.trace_view.show_trace)
        service.traces.sig_failed.connect(self.trace_view.show_failure)
        # Titles count what needs a person.
        self._titles = Coalescer(lambda _ticks: self._refresh_titles(), parent=self)   # demo traffic: many a second
        title_changes: tuple[Callable, ...] = (
            self.approvals_panel.sig_pending_changed, self.alerts_panel.sig_open_changed,
            self.gateway_panel.sig_counts_changed, self.memory_panel.sig_counts_changed,
            self.tools_panel.sig_pending_changed, service.cascade.sig_resolved, service.questions.sig_answer,
            self.fleet_panel.sig_summary_changed, self.audit_panel.sig_chain_checked,
            self.alerts_panel.sig_loud_changed, self.corpus_panel.sig_state_changed)
        for signal in title_changes:
            signal.connect(lambda *_args: self._titles.add(True))
        self.alerts_panel.sig_open_changed.connect(self._on_open_alerts_changed)
        # A desktop notification (and the toast) for every new critical alert no silence mutes.
        self.notifier = Notifier(parent=self)
        service.alerts.sig_raised.connect(self.notifier.on_raised)
        self.notifier.sig_notified.connect(self.toast.show_message)

        demo = self.demo_controls
        demo.sig_running_changed.connect(self.action_book["demo.toggle"].setChecked)
        demo.sig_switched.connect(lambda on: self._settings.setValue(DEMO_ON_KEY, on))
        demo.sig_rate_chosen.connect(lambda rate: self._settings.setValue(DEMO_RATE_KEY, rate))

        service.sig_starting.connect(self._on_starting)
        service.sig_ready.connect(self._on_ready)
        service.sig_error.connect(self.toast.show_message)
        service.sig_store_link.connect(self._on_store_link)
        service.sig_stopping.connect(self._on_stopping)
        service.sig_stopped.connect(lambda: self.status_text.setText("Engine stopped"))
        self.fleet_panel.sig_summary_changed.connect(self._on_fleet_summary)

    def _make_status_bar(self) -> None:
        self.status_text = PlainLabel("Engine not started")
        self.progress = QProgressBar()
        self.progress.setFixedWidth(220)
        self.progress.setFormat("%v / %m agents")
        self.progress.hide()
        self.alerts_button = QToolButton()        # "⚠ 2 unacknowledged alerts": hidden when none; opens Alerts
        self.alerts_button.setAutoRaise(True)
        self.alerts_button.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextBesideIcon)
        self.alerts_button.setIcon(self.style().standardIcon(QStyle.StandardPixmap.SP_MessageBoxWarning))
        self.alerts_button.setCursor(Qt.CursorShape.PointingHandCursor)
        self.alerts_button.setToolTip("Show the alerts")
        self.alerts_button.clicked.connect(self.show_alerts)
        self.alerts_button.hide()
        self._style_alerts_button()
        style.theme_signals().sig_changed.connect(self._style_alerts_button)
        self.demo_controls = DemoControls(self._service, rate=float(self._settings.value(DEMO_RATE_KEY, DEMO_FIRST_RATE)))
        self.statusBar().addWidget(self.status_text, 1)
        self.statusBar().addPermanentWidget(self.demo_controls)
        self.statusBar().addPermanentWidget(self.alerts_button)
        self.statusBar().addPermanentWidget(self.progress)
        self.toast = Toast(self)

    def _make_store_banner(self) -> None:
        """Across the top while a team store's server cannot be reached: what the desk shows is what it had read,
        and every decision is refused until the server is back (the engine reaches it again by itself)."""
        self._store_away = False            # the team store's server cannot be reached (the red banner)
        self.store_banner = QToolBar("Store")
        self.store_banner.setObjectName("store-banner")
        self.store_banner.setMovable(False)
        self.store_banner.setFloatable(False)
        self.store_banner.toggleViewAction().setEnabled(False)
        self.store_banner_text = PlainLabel()
        self.store_banner_text.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Preferred)
        self.store_banner.addWidget(self.store_banner_text)
        self.addToolBar(Qt.ToolBarArea.TopToolBarArea, self.store_banner)
        self.store_banner.hide()
        self._style_store_banner()
        style.theme_signals().sig_changed.connect(self._style_store_banner)

    def _style_store_banner(self, *_args) -> None:
        if self._service.reads_only and not self._store_away:
            self.store_banner.setStyleSheet(f"QToolBar {{ {style.bg('warn_tint')}; }} QLabel {{ padding: 4px; }}")
            return
        self.store_banner.setStyleSheet(f"QToolBar {{ {style.bg('bad_tint')}; }} QLabel {{ {style.fg('bad')}; "
                                        "font-weight: bold; padding: 4px; }")

    def _show_viewer_banner(self) -> None:
        self.store_banner_text.setText(self._service.viewer_text() + ".")
        self._style_store_banner()
        self.store_banner.show()

    def _on_store_link(self, online: bool, why: str) -> None:
        self._store_away = not online
        if online and self._service.reads_only:
            self._show_viewer_banner()
            self.toast.show_message("The team store is back: the panels read it again")
            return
        if online:
            self.store_banner.hide()
            self.toast.show_message("The team store is back: the panels read it again, decisions are taken again")
            return
        self.store_banner_text.setText(f"The team store cannot be reached ({why}). Showing what this desk had read; "
                                       "decisions are refused until it is back, and nothing is kept to send later. "
                                       "Trying again by itself.")
        self._style_store_banner()
        self.store_banner.show()

    def _style_alerts_button(self, *_args) -> None:
        self.alerts_button.setStyleSheet(f"QToolButton {{ {style.fg('bad')}; font-weight: bold; }}")

    def _on_open_alerts_changed(self, open_count: int) -> None:
        self.alerts_button.setText(f"{open_count} unacknowledged alert{'s' if open_count != 1 else ''}")
        self.alerts_button.setVisible(open_count > 0)

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
        if self._service.reads_only:        # a viewer's desk: said across the top, and no demo traffic to ask
            self._show_viewer_banner()
            return
        demo = self._service.demo
        if demo.on_demo_fleet() and not demo.running and self._settings.value(DEMO_ON_KEY, True, type=bool):
            demo.start(self.demo_controls.rate_value(), limit=demo.round_size())

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
            self.save_layout()
            event.accept()
            return
        event.ignore()
        if not self._close_requested:
            self._close_requested = True
            self.sig_close_requested.emit()
