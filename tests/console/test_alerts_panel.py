"""The Alerts panel, its adapter and the desktop notifier: alerts listed with their severity as plain text,
acknowledged (one or many, with a comment, a refusal said in the form), silenced by kind or by agent (muted
alerts still listed, not counted, not notified), a silence's expiry on an injected clock and its early end,
the notifier's rate limit and backend choice, and every item model through qtmodeltester.

Panel tests run on the real EngineService over a FakeEngine that has the engine's whole alert surface in
memory (silences checked and matched by engine.alerts' own rules, the engine's events emitted); one
end-to-end test runs the small fleet with a retriever that plants instructions, so the real gateway
blocks them and the real alert book raises injection_blocked."""
from __future__ import annotations

import dataclasses
import html
import subprocess
from typing import Iterable

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication

from console import style
from console.main_window import MainWindow
from console.notify import (BODY_CHARS, LogBackend, Notifier, NotifySendBackend, TrayBackend, choose_backend,
                            notifies)
from console.panels.alerts import AGENT_COLUMN, MESSAGE_COLUMN, STATUS_COLUMN, AlertsPanel
from console.panels.alerts_forms import CUSTOM
from console.panels.alerts_model import (KIND_COLUMN, SEVERITY_COLUMN, TIME_COLUMN, TRACE_COLUMN, AlertsFilter,
                                         AlertsModel, SilencesModel)
from console.service import EngineService, Phase
from engine import Engine, load_fleet, load_settings
from engine.alerts import AlertRow, Severity, Silence
from engine.alerts.kinds import AlertKind

from ..conftest import DATA, write_fleet
from . import recorded
from .fakes import FakeEngine, fake_service
from .helpers import agent_processes_alive

DISPLAY, FOREGROUND, TOOLTIP = Qt.ItemDataRole.DisplayRole, Qt.ItemDataRole.ForegroundRole, Qt.ItemDataRole.ToolTipRole
T0 = recorded.T0
TRACE = recorded.TRACE
WAIT_MS = 3_000
HOUR = 3600.0


class Clock:
    def __init__(self, now: float = T0 + 1000) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


class FakeBackend:
    name = "fake"

    def __init__(self) -> None:
        self.shown: list[tuple[str, str]] = []

    def show(self, title: str, body: str) -> None:
        self.shown.append((title, body))


def alert(alert_id: int, kind: AlertKind, agent_id: str, message: str = "", at: float | None = None,
          trace_id: str = TRACE, **extra) -> AlertRow:
    return AlertRow(alert_id, kind.value, agent_id, message or f"{kind.value} about {agent_id or 'the engine'}",
                    trace_id, T0 + alert_id if at is None else at, **extra)


def session_with(qtbot, tmp_path, clock: Clock, alerts: Iterable[AlertRow] = (), silences: Iterable[Silence] = ()):
    engine = FakeEngine(recorded.fleet_views(tmp_path), alerts=alerts, silences=silences, clock=clock)
    session = fake_service(qtbot, engine)
    notifier = Notifier(FakeBackend(), clock=clock)
    session.service.alerts.sig_raised.connect(notifier.on_raised)
    panel = AlertsPanel(session.service, clock=clock)
    qtbot.addWidget(panel)
    panel.resize(1280, 420)
    return session, panel, notifier


def loaded(qtbot, panel: AlertsPanel) -> None:
    """Waits for the load the panel asked for when the engine was ready."""
    with qtbot.waitSignal(panel._service.alerts.sig_loaded, timeout=WAIT_MS):
        panel.reload()


def raise_and_show(qtbot, session, panel: AlertsPanel, *rows: AlertRow) -> tuple[AlertRow, ...]:
    """Raises alerts through the engine's event and waits for the panel's batch to show them."""
    marked = session.engine.raise_alerts(*rows)
    qtbot.waitUntil(lambda: all(panel.model.row_of(r.id) >= 0 for r in rows), timeout=WAIT_MS)
    return marked


def cell(panel: AlertsPanel, alert_id: int, column: int, role=DISPLAY):
    model = panel.model
    return model.data(model.index(model.row_of(alert_id), column), role)


def press(qtbot, widget, key) -> None:
    qtbot.keyClick(widget, key)


# --- listed as plain text ----------------------------------------------------------------------------
def test_raised_alerts_are_listed_newest_first_with_their_severity_as_plain_text(qtbot, qasync_loop, tmp_path):
    clock = Clock()
    session, panel, _ = session_with(qtbot, tmp_path, clock)
    opened, loud = [], []
    panel.sig_open_changed.connect(opened.append)
    panel.sig_loud_changed.connect(loud.append)
    markup = "gen-liar said <b>bold</b> <a href='https://evil.example'>click</a>"
    formula = '=HYPERLINK("https://evil.example","report")'
    raise_and_show(qtbot, session, panel,
                   alert(1, AlertKind.CASCADE_TRIGGERED, "ret-rogue", markup),
                   alert(2, AlertKind.INJECTION_BLOCKED, "ret-rogue", formula),
                   alert(3, AlertKind.CONSENSUS_FAILED, "", "abstained: 2 generators disagree", trace_id=""))

    assert [a.id for a in panel.visible_alerts()] == [3, 2, 1]                 # newest first
    assert [cell(panel, i, SEVERITY_COLUMN) for i in (1, 2, 3)] == ["warning", "critical", "warning"]
    assert cell(panel, 2, SEVERITY_COLUMN, FOREGROUND) == style.tones().bad
    assert cell(panel, 1, SEVERITY_COLUMN, FOREGROUND) == style.tones().warn
    assert [cell(panel, i, KIND_COLUMN) for i in (1, 2, 3)] == ["cascade", "injection blocked", "no consensus"]
    assert cell(panel, 3, AGENT_COLUMN) == "engine" and cell(panel, 3, TRACE_COLUMN) == ""
    assert cell(panel, 2, TRACE_COLUMN) == f"{TRACE[:8]}…" and cell(panel, 2, TIME_COLUMN)
    assert cell(panel, 1, MESSAGE_COLUMN) == markup and cell(panel, 2, MESSAGE_COLUMN) == formula   # literal
    assert html.escape(markup) in cell(panel, 1, MESSAGE_COLUMN, TOOLTIP)
    assert all(cell(panel, i, STATUS_COLUMN) == "open" for i in (1, 2, 3))

    assert panel.current_alert().id == 3                     # the newest is selected when nothing was
    panel.select_alert(1)
    assert panel.detail.textFormat() == Qt.TextFormat.PlainText
    assert markup in panel.detail.text() and f"Trace: {TRACE}" in panel.detail.text()
    panel.select_alert(2)
    assert formula in panel.detail.text()
    assert panel.tab_title() == "Alerts (3 open)" and panel.needs_attention()
    assert opened[-1] == 3 and loud[-1] == 3
    assert session.errors == []


def test_the_panel_reads_the_stored_alerts_and_silences_when_the_engine_is_ready(qtbot, qasync_loop, tmp_path):
    clock = Clock()
    silence = Silence(4, AlertKind.CASCADE_TRIGGERED, None, "night-shift", "known flaky retriever", T0, T0 + 2 * HOUR)
    session, panel, _ = session_with(qtbot, tmp_path, clock, alerts=recorded.ALERTS, silences=[silence])
    qtbot.waitUntil(lambda: panel.model.rowCount() == len(recorded.ALERTS), timeout=WAIT_MS)
    assert session.engine.called("alerts_list") == [(True, 2000), (False, 200)]
    assert cell(panel, 3, STATUS_COLUMN) == "muted by silence #4"                # marked by the engine
    assert cell(panel, 3, MESSAGE_COLUMN, FOREGROUND) == style.tones().muted     # greyed, still listed
    assert cell(panel, 4, STATUS_COLUMN).startswith("acknowledged by tester at ") and \
        cell(panel, 4, STATUS_COLUMN).endswith(": seen")
    assert panel.model.open_count() == 3 and panel.model.loud_count() == 2
    assert panel.tab_title() == "Alerts (2 open)"            # a muted alert does not count in the title
    assert panel.silences_model.rowCount() == 1 and panel.silences_title.text() == "Active silences (1)"
    assert panel.silences_model.data(panel.silences_model.index(0, 1)) == "cascade · any agent"
    assert panel.next_silence_end() == T0 + 2 * HOUR and panel.silence_timer.isActive()
    assert session.errors == []


# --- acknowledging -------------------------------------------------------------------------------------
def test_one_alert_is_acknowledged_with_a_comment_through_the_inline_form(qtbot, qasync_loop, tmp_path):
    clock = Clock()
    session, panel, _ = session_with(qtbot, tmp_path, clock)
    panel.show()
    raise_and_show(qtbot, session, panel, alert(1, AlertKind.AUTO_QUARANTINE, "gen-liar"),
                   alert(2, AlertKind.AGENT_DOWN, "gen-b"))
    panel.select_alert(1)

    panel.acknowledge_selected()                             # what the A shortcut runs
    form = panel.ack_form
    assert form.isVisible() and panel.action_row.isHidden() and form.title.text() == "Acknowledge #1"
    press(qtbot, form.comment, Qt.Key.Key_Escape)            # Escape cancels: nothing is sent
    assert not form.isVisible() and panel.action_row.isVisible()
    assert session.engine.called("acknowledge_alert") == []

    panel.acknowledge_selected()
    qtbot.keyClicks(form.comment, "replaced the build <b>v2</b>")
    with qtbot.waitSignal(session.service.alerts.sig_acknowledge_done, timeout=WAIT_MS):
        press(qtbot, form.comment, Qt.Key.Key_Return)
    operator = session.service.operator
    assert session.engine.called("acknowledge_alert") == [(1, operator, "replaced the build <b>v2</b>")]
    assert not form.isVisible() and panel.action_row.isVisible()
    assert panel.message.text() == f"Acknowledged #1 as {operator}."
    status = cell(panel, 1, STATUS_COLUMN)
    assert status.startswith(f"acknowledged by {operator} at ") and status.endswith(": replaced the build <b>v2</b>")
    assert cell(panel, 1, AGENT_COLUMN, FOREGROUND) == style.tones().muted
    assert panel.model.open_count() == 1 and panel.tab_title() == "Alerts (1 open)"
    assert not panel.acknowledge_button.isEnabled()          # the selected alert is acknowledged now
    assert session.errors == []


def test_several_alerts_are_acknowledged_at_once_and_a_refusal_keeps_the_form_on_it(qtbot, qasync_loop, tmp_path):
    clock = Clock()
    session, panel, _ = session_with(qtbot, tmp_path, clock)
    panel.show()
    raise_and_show(qtbot, session, panel, *(alert(i, AlertKind.INJECTION_BLOCKED, "ret-rogue") for i in (1, 2, 3)))
    del session.engine.trust.tables.alert_rows[2]           # gone from the store meanwhile: the engine refuses it
    failed = []
    session.service.alerts.sig_failed.connect(lambda alert_id, why: failed.append((alert_id, why)))

    panel.select_alerts([3, 2, 1])
    assert panel.acknowledge_button.text() == "Acknowledge 3…"
    panel.acknowledge_selected()
    form = panel.ack_form
    assert form.title.text() == "Acknowledge 3 alerts (#3, #2, #1)"
    qtbot.keyClicks(form.comment, "blocked at the firewall")
    with qtbot.waitSignal(session.service.alerts.sig_acknowledge_done, timeout=WAIT_MS) as done:
        press(qtbot, form.comment, Qt.Key.Key_Return)
    assert done.args == [(3, 1), {2: "no alert #2"}]
    assert failed == [(2, "no alert #2")]
    assert [a.id for a in panel.model.records() if not a.open] == [3, 1]
    assert form.isVisible() and form.ids == (2,) and form.title.text() == "Acknowledge #2"
    assert form.hint.text() == "2 acknowledged. Not acknowledged: #2: no alert #2"
    assert form.confirm.isEnabled()                           # the operator may try again or cancel
    press(qtbot, form.comment, Qt.Key.Key_Escape)
    assert not form.isVisible()
    assert session.errors == []                               # a refusal is the form's business, not a toast


# --- silencing ------------------------------------------------------------------------------------------
def open_silence_form(panel: AlertsPanel, alert_id: int | None):
    if alert_id is not None:
        panel.select_alert(alert_id)
    panel.silence_selected()                                  # what the S shortcut runs
    return panel.silence_form


def confirm_silence(qtbot, session, form, comment: str) -> None:
    qtbot.keyClicks(form.comment, comment)
    with qtbot.waitSignal(session.service.alerts.sig_silences, timeout=WAIT_MS):
        press(qtbot, form.comment, Qt.Key.Key_Return)


def test_a_silence_by_kind_mutes_matching_alerts_which_stay_listed_and_do_not_notify(qtbot, qasync_loop, tmp_path):
    clock = Clock()
    session, panel, notifier = session_with(qtbot, tmp_path, clock)
    panel.show()
    raise_and_show(qtbot, session, panel, alert(1, AlertKind.INJECTION_BLOCKED, "ret-rogue"),
                   alert(2, AlertKind.AGENT_DOWN, "gen-b"))
    assert len(notifier.backend.shown) == 2                  # both critical and loud

    form = open_silence_form(panel, 1)
    assert form.isVisible() and form.chosen_kind() == "injection_blocked" and form.chosen_agent() == "ret-rogue"
    form.agent.setCurrentIndex(form.agent.findData(None))    # any agent: the kind alone
    form.duration.setCurrentText("4h")
    assert not form.confirm.isEnabled() and form.hint.text().startswith("Say why")     # a comment is required
    confirm_silence(qtbot, session, form, "red-team exercise until noon")
    assert session.engine.called("silence_alerts") == [
        ("injection_blocked", None, 4 * HOUR, session.service.operator, "red-team exercise until noon")]
    assert not form.isVisible() and panel.message.text().startswith("Silence #1 mutes injection blocked · any agent")
    assert panel.silences_model.rowCount() == 1
    assert cell(panel, 1, STATUS_COLUMN) == "muted by silence #1"        # re-marked at once, still listed
    assert panel.model.open_count() == 2 and panel.model.loud_count() == 1

    marked = raise_and_show(qtbot, session, panel, alert(3, AlertKind.INJECTION_BLOCKED, "ret-e5"),
                            alert(4, AlertKind.AUTO_QUARANTINE, "ret-e5"))
    assert [a.silenced_by for a in marked] == [1, None]
    assert cell(panel, 3, STATUS_COLUMN) == "muted by silence #1"
    assert cell(panel, 3, SEVERITY_COLUMN, FOREGROUND) == style.tones().muted
    assert [title for title, _ in notifier.backend.shown[2:]] == ["Quorum: quarantined — ret-e5"]   # not #3
    assert panel.model.open_count() == 4 and panel.model.loud_count() == 2
    assert panel.tab_title() == "Alerts (2 open)"
    assert panel.summary.text().startswith("2 open · 2 muted · 0 acknowledged")
    assert session.errors == []


def test_a_silence_by_agent_mutes_every_kind_from_that_agent_only(qtbot, qasync_loop, tmp_path):
    clock = Clock()
    session, panel, notifier = session_with(qtbot, tmp_path, clock)
    panel.show()
    raise_and_show(qtbot, session, panel, alert(1, AlertKind.AGENT_DOWN, "gen-b"))
    form = open_silence_form(panel, 1)
    form.kind.setCurrentIndex(form.kind.findData(None))      # any kind: the agent alone
    confirm_silence(qtbot, session, form, "gen-b is being redeployed")
    assert session.engine.called("silence_alerts")[0][:3] == (None, "gen-b", HOUR)      # 1h is the default
    raise_and_show(qtbot, session, panel, alert(2, AlertKind.AUTO_QUARANTINE, "gen-b"),
                   alert(3, AlertKind.AUTO_QUARANTINE, "gen-a"))
    assert [a.id for a in panel.model.records() if a.muted] == [2, 1]
    assert [title for title, _ in notifier.backend.shown] == ["Quorum: agent down — gen-b",
                                                             "Quorum: quarantined — gen-a"]
    assert panel.model.loud_count() == 1 and panel.needs_attention()
    assert session.errors == []


def test_an_expired_silence_stops_muting_and_the_next_matching_alert_notifies(qtbot, qasync_loop, tmp_path):
    clock = Clock()
    session, panel, notifier = session_with(qtbot, tmp_path, clock)
    loud = []
    panel.sig_loud_changed.connect(loud.append)
    raise_and_show(qtbot, session, panel, alert(1, AlertKind.INJECTION_BLOCKED, "ret-rogue"))
    with qtbot.waitSignal(session.service.alerts.sig_silences, timeout=WAIT_MS):
        session.service.alerts.silence("injection_blocked", "ret-rogue", 15 * 60, "known planted text")
    assert cell(panel, 1, STATUS_COLUMN) == "muted by silence #1" and loud[-1] == 0
    assert panel.next_silence_end() == clock.now + 15 * 60 and panel.silence_timer.isActive()
    raise_and_show(qtbot, session, panel, alert(2, AlertKind.INJECTION_BLOCKED, "ret-rogue"))
    assert len(notifier.backend.shown) == 1                  # only #1, from before the silence

    clock.now += 15 * 60                                     # the silence ends: the timer's call re-marks
    panel.refresh_muting()
    assert [cell(panel, i, STATUS_COLUMN) for i in (1, 2)] == ["open", "open"]
    assert panel.silences_model.rowCount() == 0 and not panel.silence_timer.isActive()
    assert loud[-1] == 2 and panel.tab_title() == "Alerts (2 open)"
    clock.now += 61                                          # past the notifier's minute for this kind and agent
    raise_and_show(qtbot, session, panel, alert(3, AlertKind.INJECTION_BLOCKED, "ret-rogue"))
    assert cell(panel, 3, STATUS_COLUMN) == "open"
    assert len(notifier.backend.shown) == 2 and "injection_blocked about ret-rogue" in notifier.backend.shown[1][1]
    assert session.errors == []


def test_ending_a_silence_early_lets_its_alerts_notify_again(qtbot, qasync_loop, tmp_path):
    clock = Clock()
    silence = Silence(1, None, "gen-b", "night-shift", "redeploying", clock.now - 60, clock.now + HOUR)
    session, panel, _ = session_with(qtbot, tmp_path, clock, silences=[silence])
    loaded(qtbot, panel)
    raise_and_show(qtbot, session, panel, alert(1, AlertKind.AGENT_DOWN, "gen-b"))
    assert cell(panel, 1, STATUS_COLUMN) == "muted by silence #1" and not panel.needs_attention()
    assert not panel.end_silence_button.isEnabled()          # no silence selected yet
    panel.silences_table.setCurrentIndex(panel.silences_model.index(0, 0))
    assert panel.end_silence_button.isEnabled()
    with qtbot.waitSignal(session.service.alerts.sig_silences, timeout=WAIT_MS):
        qtbot.mouseClick(panel.end_silence_button, Qt.MouseButton.LeftButton)
    assert session.engine.called("end_silence") == [(1, session.service.operator)]
    assert panel.silences_model.rowCount() == 0 and panel.silences_title.text().startswith("No active silence")
    assert cell(panel, 1, STATUS_COLUMN) == "open" and panel.needs_attention()

    with qtbot.waitSignal(session.service.alerts.sig_silence_failed, timeout=WAIT_MS) as refused:
        session.service.alerts.end_silence(1)                # ended already: the engine refuses
    assert refused.args == [1, "silence #1 has already ended"]
    assert panel.message.text() == "Silence #1: silence #1 has already ended"
    assert session.errors == []


def test_the_silence_form_says_what_is_missing_and_what_the_engine_refused(qtbot, qasync_loop, tmp_path):
    clock = Clock()
    session, panel, _ = session_with(qtbot, tmp_path, clock)
    panel.show()
    raise_and_show(qtbot, session, panel, alert(1, AlertKind.CONSENSUS_FAILED, ""),
                   alert(2, AlertKind.AGENT_DOWN, "ret-gone"))         # an agent no longer in the fleet
    form = open_silence_form(panel, 1)
    assert form.chosen_kind() == "consensus_failed" and form.chosen_agent() is None      # the engine's own alert
    form.kind.setCurrentIndex(0)
    assert form.hint.text().startswith("Choose a kind, an agent or both")
    form.kind.setCurrentIndex(form.kind.findData("consensus_failed"))
    form.duration.setCurrentText(CUSTOM)
    assert form.custom.isVisible() and form.hint.text() == "Type a duration, like 30m, 2h or 1d."
    qtbot.keyClicks(form.custom, "2x")
    assert "write it as a number and a unit" in form.hint.text() and not form.confirm.isEnabled()
    form.custom.setText("45d")
    assert form.hint.text().startswith("At most 30d")
    form.custom.setText("2h30m")
    qtbot.keyClicks(form.comment, "known disagreement")
    assert form.confirm.isEnabled() and form.duration_s() == 9000
    assert form.hint.text().startswith("Mutes no consensus from any agent until ")
    press(qtbot, form.comment, Qt.Key.Key_Escape)
    assert not form.isVisible() and session.engine.called("silence_alerts") == []

    form = open_silence_form(panel, 2)
    assert form.chosen_agent() == "ret-gone"
    with qtbot.waitSignal(session.service.alerts.sig_silence_failed, timeout=WAIT_MS):
        qtbot.keyClicks(form.comment, "decommissioned")
        press(qtbot, form.comment, Qt.Key.Key_Return)
    assert form.isVisible() and form.hint.text() == "no agent 'ret-gone' in the fleet"
    assert form.confirm.isEnabled() and panel.silences_model.rowCount() == 0
    assert session.errors == []


# --- moving around -----------------------------------------------------------------------------------------
def test_filters_order_and_the_keyboard_methods_main_window_binds(qtbot, qasync_loop, tmp_path):
    clock = Clock()
    session, panel, _ = session_with(qtbot, tmp_path, clock)
    opened_traces, agents = [], []
    session.service.traces.open = opened_traces.append
    panel.sig_agent_selected.connect(agents.append)
    raise_and_show(qtbot, session, panel,
                   alert(1, AlertKind.AUTO_QUARANTINE, "gen-liar", acknowledged_by="tester", acknowledged_at=T0 + 9),
                   alert(2, AlertKind.SCORE_DROP, "gen-liar"),
                   alert(3, AlertKind.INJECTION_BLOCKED, "ret-rogue"),
                   alert(4, AlertKind.BEHAVIOUR_SHIFT, "", trace_id=""))
    assert [a.id for a in panel.visible_alerts()] == [4, 3, 2, 1]
    panel.critical_first.setChecked(True)
    assert [a.id for a in panel.visible_alerts()] == [3, 1, 4, 2]
    panel.critical_first.setChecked(False)
    panel.open_only.setChecked(True)
    assert [a.id for a in panel.visible_alerts()] == [4, 3, 2]
    panel.severity_filter.setCurrentIndex(panel.severity_filter.findData(Severity.WARNING))
    assert [a.id for a in panel.visible_alerts()] == [4, 2]
    panel.agent_filter.setCurrentIndex(panel.agent_filter.findData("gen-liar"))
    assert [a.id for a in panel.visible_alerts()] == [2]
    assert panel.agent_filter.itemText(panel.agent_filter.findData("")) == "engine"
    panel.clear_filters()
    panel.kind_filter.setCurrentIndex(panel.kind_filter.findData("injection_blocked"))
    assert [a.id for a in panel.visible_alerts()] == [3]
    assert panel.current_alert().id == 3                      # a shown row is always current
    panel.clear_filters()

    panel.select_alert(4)
    assert panel.focus_target() is panel.table
    panel.select_next()
    assert panel.current_alert().id == 3 and agents[-1] == "ret-rogue"     # J moves and picks the agent
    panel.open_selected_trace()
    assert opened_traces == [TRACE]
    panel.select_previous()
    panel.open_selected_trace()                               # #4 names no trace: said, not asked
    assert opened_traces == [TRACE] and panel.message.text() == "Alert #4 names no trace: no question raised it."
    panel.select_alert(1)
    panel.select_first_open()                                 # the status bar's link: the newest loud one
    assert panel.current_alert().id == 4 and agents == ["ret-rogue"]     # the panel's own choice picks no agent
    panel.show()
    qtbot.waitExposed(panel)
    rect = panel.table.visualRect(panel.proxy.index(3, AGENT_COLUMN))
    qtbot.mouseClick(panel.table.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())
    assert panel.current_alert().id == 1 and agents[-1] == "gen-liar"     # the operator's click does
    assert session.errors == []


def test_a_burst_of_raised_alerts_is_shown_in_one_batch(qtbot, qasync_loop, tmp_path):
    clock = Clock()
    session, panel, _ = session_with(qtbot, tmp_path, clock)
    opened = []
    panel.sig_open_changed.connect(opened.append)
    for n in range(1, 201):
        session.engine.raise_alerts(alert(n, AlertKind.CASCADE_TRIGGERED, "ret-rogue"))
    assert panel.model.rowCount() == 0                       # nothing drawn while the burst arrives
    qtbot.waitUntil(lambda: panel.model.rowCount() == 200, timeout=WAIT_MS)
    assert opened == [200]                                   # one update for the whole burst
    assert panel.tab_title() == "Alerts (200 open)" and panel.current_alert().id == 200
    panel.select_alert(150)
    for n in range(201, 211):                                # a small batch goes in row by row
        session.engine.raise_alerts(alert(n, AlertKind.SCORE_DROP, "gen-b"))
    qtbot.waitUntil(lambda: panel.model.rowCount() == 210, timeout=WAIT_MS)
    assert opened == [200, 210] and panel.current_alert().id == 150       # the selection stayed put
    assert [a.id for a in panel.visible_alerts()[:2]] == [210, 209]
    assert session.errors == []


# --- the notifier ------------------------------------------------------------------------------------------
def test_the_notifier_sends_one_per_kind_and_agent_a_minute_and_counts_the_rest(qtbot):
    clock = Clock(0.0)
    backend = FakeBackend()
    notifier = Notifier(backend, clock=clock, max_per_window=10)
    toasts = []
    notifier.sig_notified.connect(toasts.append)
    burst = [alert(n, AlertKind.INJECTION_BLOCKED, "ret-web", f"blocked message {n}") for n in range(1, 6)]
    notifier.on_raised(burst)
    assert backend.shown == [("Quorum: injection blocked — ret-web", "blocked message 5 (and 4 more)")]
    assert toasts == ["Quorum: injection blocked — ret-web: blocked message 5 (and 4 more)"]

    notifier.on_raised([alert(6, AlertKind.INJECTION_BLOCKED, "ret-web", "blocked message 6"),
                        alert(7, AlertKind.INJECTION_BLOCKED, "ret-web", "blocked message 7"),
                        alert(8, AlertKind.AGENT_DOWN, "ret-web", "ret-web failed 3 calls"),      # another kind
                        alert(9, AlertKind.SCORE_DROP, "ret-web"),                              # a warning
                        alert(10, AlertKind.AGENT_DOWN, "gen-a", silenced_by=3),                # muted
                        alert(11, AlertKind.AGENT_DOWN, "gen-b", acknowledged_by="x", acknowledged_at=1.0)])
    notifier.on_raised(burst[:1])                             # delivered twice: notifies once
    assert backend.shown[1:] == [("Quorum: agent down — ret-web", "ret-web failed 3 calls")]
    assert notifier.held() == 2 and notifier._timer.isActive()
    clock.now = 30.0
    notifier.flush_due()
    assert len(backend.shown) == 2                            # the minute is not over
    clock.now = 60.0
    notifier.flush_due()
    assert backend.shown[2] == ("Quorum: injection blocked — ret-web", "blocked message 7 (and 1 more)")
    assert notifier.held() == 0 and not notifier._timer.isActive() and len(toasts) == 3


def test_the_notifier_caps_notifications_in_all_and_makes_messages_plain_and_short(qtbot):
    clock = Clock(0.0)
    backend = FakeBackend()
    notifier = Notifier(backend, clock=clock, max_per_window=2)
    hostile = "\x1b[31mIgnore previous instructions\u202e " + "x" * 1000
    notifier.on_raised([alert(n, AlertKind.AGENT_DOWN, f"gen-{n}", hostile) for n in range(1, 5)])
    assert [title for title, _ in backend.shown] == ["Quorum: agent down — gen-1", "Quorum: agent down — gen-2"]
    body = backend.shown[0][1]
    assert body.startswith("Ignore previous instructions x") and len(body) <= BODY_CHARS
    assert "\x1b" not in body and "\u202e" not in body and body.endswith("…")
    assert notifier.held() == 2
    clock.now = 60.0
    notifier.flush_due()
    assert [title for title, _ in backend.shown[2:]] == ["Quorum: agent down — gen-3", "Quorum: agent down — gen-4"]
    assert notifies(alert(1, AlertKind.INJECTION_BLOCKED, "a")) and not notifies(alert(1, AlertKind.SCORE_DROP, "a"))


def test_the_backend_is_the_tray_then_notify_send_then_a_log_line(qtbot, caplog):
    assert isinstance(choose_backend(tray_available=True, which=lambda _name: None), TrayBackend)
    chosen = choose_backend(tray_available=False, which=lambda name: f"/usr/bin/{name}")
    assert isinstance(chosen, NotifySendBackend) and chosen.program == "/usr/bin/notify-send"
    assert isinstance(choose_backend(tray_available=False, which=lambda _name: None), LogBackend)

    started = []

    class Process:
        def poll(self):
            return 0

    def run(args, **kwargs):
        started.append((args, kwargs))
        return Process()
    backend = NotifySendBackend("/usr/bin/notify-send", run=run)
    backend.show("Quorum: injection blocked — ret-web", "--help <a href='x'>here</a> & more")
    args, kwargs = started[0]
    assert args == ["/usr/bin/notify-send", "--app-name=Quorum", "--urgency=critical", "--",
                    "Quorum: injection blocked — ret-web", "--help &lt;a href='x'&gt;here&lt;/a&gt; &amp; more"]
    assert kwargs["stdout"] is subprocess.DEVNULL and kwargs["start_new_session"] and "shell" not in kwargs

    def fail(args, **kwargs):
        raise FileNotFoundError(2, "No such file", args[0])
    NotifySendBackend("/gone/notify-send", run=fail).show("t", "b")          # said, never raised
    assert any("notify-send could not be started" in r.getMessage() for r in caplog.records)


# --- models ---------------------------------------------------------------------------------------------------
def test_every_alerts_model_passes_qt_model_tester(qtbot, qtmodeltester, monkeypatch):
    model = AlertsModel()
    model.set_alerts([*recorded.ALERTS, alert(9, AlertKind.AGENT_DOWN, "gen-b", silenced_by=2)])
    model.upsert(alert(10, AlertKind.SCORE_DROP, "gen-a", at=T0 + 150))
    qtmodeltester.check(model)
    proxy = AlertsFilter()
    proxy.setSourceModel(model)
    proxy.set_filter(open_only=True, severity=Severity.CRITICAL)
    proxy.set_critical_first(True)
    qtmodeltester.check(proxy)
    silences = SilencesModel()
    silences.set_silences([Silence(1, AlertKind.AGENT_DOWN, "gen-b", "tester", "redeploy", T0, T0 + HOUR),
                           Silence(2, None, "ret-web", "tester", "external source", T0 + 5, T0 + 2 * HOUR)])
    qtmodeltester.check(silences)
    assert [silences.record(r).id for r in range(2)] == [2, 1] and silences.next_end() == T0 + HOUR
    critical = model.index(model.row_of(1), SEVERITY_COLUMN)
    assert model.data(critical, FOREGROUND) == style.LIGHT.bad
    monkeypatch.setattr(style, "_current", style.DARK)       # tones are read when drawn, not baked in
    assert model.data(critical, FOREGROUND) == style.DARK.bad


def test_the_model_keeps_acknowledgements_and_remarks_only_open_alerts(qtbot):
    model = AlertsModel()
    model.set_alerts(recorded.ALERTS)
    acknowledged = model.alert(4)
    model.upsert(dataclasses.replace(acknowledged, acknowledged_by=None, acknowledged_at=None))   # a stale row
    assert not model.alert(4).open
    silence = Silence(7, None, "ret-rogue", "tester", "noisy", T0, T0 + HOUR)
    assert model.remark([silence], T0 + 10)
    assert [a.id for a in model.records() if a.muted] == [2, 3]
    assert not model.remark([silence], T0 + 20)               # nothing changed: no repaint
    assert model.remark([silence], T0 + HOUR)                 # expired
    assert not any(a.muted for a in model.records())
    assert [model.row_of(a.id) for a in model.records()] == [0, 1, 2, 3] and model.row_of(99) == -1


# --- end to end ------------------------------------------------------------------------------------------------
INJECTOR = """
[[agents]]
id = "ret-inject"
role = "retriever"
backend = "bm25"
fault = { kind = "inject", seed = 2 }
"""
SCANNERS = ("invisible", "patterns", "classifier")


def test_a_blocked_injection_is_raised_silenced_and_acknowledged_on_the_real_fleet(qtbot, qasync_loop, tmp_path,
                                                                                  db_path, cache_dir):
    settings = load_settings(DATA / "engine_fast.toml")
    settings = dataclasses.replace(settings, gateway=dataclasses.replace(settings.gateway, scanners=SCANNERS))
    engine = Engine(load_fleet(write_fleet(tmp_path, extra=INJECTOR)), settings, db_path=db_path, cache_dir=cache_dir)
    service = EngineService(engine)
    service.operator = "tester"
    window = MainWindow(service)
    qtbot.addWidget(window)
    panel = window.alerts_panel
    notifier = Notifier(FakeBackend())
    service.alerts.sig_raised.connect(notifier.on_raised)
    errors = []
    service.sig_error.connect(errors.append)
    try:
        with qtbot.waitSignal(service.alerts.sig_loaded, timeout=60_000):
            service.start()
        with qtbot.waitSignal(service.alerts.sig_raised, timeout=30_000) as raised:
            service.questions.ask("When did Voyager 1 launch?", "medium")
        injections = [a for a in raised.args[0] if a.kind == "injection_blocked"]
        assert [a.agent_id for a in injections] == ["ret-inject"] and not injections[0].muted
        qtbot.waitUntil(lambda: panel.model.row_of(injections[0].id) >= 0, timeout=WAIT_MS)
        assert notifier.backend.shown[0][0] == "Quorum: injection blocked — ret-inject"

        form = open_silence_form(panel, injections[0].id)
        assert (form.chosen_kind(), form.chosen_agent()) == ("injection_blocked", "ret-inject")
        confirm_silence(qtbot, service_session(service), form, "planted texts under study")
        assert panel.model.alert(injections[0].id).muted and panel.silences_model.rowCount() == 1
        with qtbot.waitSignal(service.alerts.sig_raised, timeout=30_000) as again:
            service.questions.ask("When did Voyager 1 launch?", "medium")
        muted = [a for a in again.args[0] if a.kind == "injection_blocked"]
        assert muted and all(a.silenced_by == panel.silences_model.record(0).id for a in muted)
        assert len([t for t, _ in notifier.backend.shown if "ret-inject" in t]) == 1      # the muted ones did not

        panel.select_alert(injections[0].id)
        panel.acknowledge_selected()
        qtbot.keyClicks(panel.ack_form.comment, "seen")
        with qtbot.waitSignal(service.alerts.sig_acknowledge_done, timeout=WAIT_MS):
            press(qtbot, panel.ack_form.comment, Qt.Key.Key_Return)
        stored = engine.parts.alerts.alerts_sync()
        first = next(a for a in stored if a.id == injections[0].id)
        assert (first.acknowledged_by, first.ack_comment) == ("tester", "seen")
        assert errors == []
    finally:
        with qtbot.waitSignal(service.sig_stopped, timeout=20_000):
            service.shutdown()
    assert service.phase is Phase.STOPPED and agent_processes_alive(engine) == []


def service_session(service: EngineService):
    """confirm_silence takes a session; the end-to-end test has only the service."""
    return type("Session", (), {"service": service})()


@pytest.fixture(autouse=True)
def _light_scheme():
    """Colours are compared with the light tones; a dark test elsewhere must not leak into these."""
    style.set_scheme(style.Scheme.LIGHT, QApplication.instance())
    yield
    style.set_scheme(style.Scheme.LIGHT, QApplication.instance())
