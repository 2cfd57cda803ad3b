"""Operator surfaces of the reputation book: the Trust plot, score and standing in the fleet table,
quarantine and release through the reason dialog, the Alerts list and its count in the status bar.

Unit tests feed the panels engine values by hand; the end-to-end tests run the real small fleet (one
with a quarantine floor so high that a single refuted claim quarantines the lying generator)."""
from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
import time
from pathlib import Path

from PySide6.QtCore import QPoint, QPointF, Qt
from PySide6.QtWidgets import QDialog

from console import style
from console.app import serve
from console.main_window import MainWindow
from console.panels.alerts import AGENT_COLUMN, MESSAGE_COLUMN, STATUS_COLUMN, AlertsModel, AlertsPanel
from console.panels.fleet import FLEET_COLUMNS, FleetModel
from console.panels.trust import PEN_STYLES, TrustPanel, point_text
from console.panels.trust_dialog import TrustAction, TrustActionDialog
from console.service import EngineService, Phase
from engine import AgentState, Engine, load_fleet, load_settings
from engine.alerts.row import AlertRow
from engine.reputation.store import ScorePoint
from engine.reputation.keeper import ReputationUpdate

from .helpers import agent_processes_alive, processes_mentioning

PROJECT_ROOT = Path(__file__).resolve().parents[2]
START_TIMEOUT_MS = 60_000
ANSWER_TIMEOUT_MS = 30_000
STOP_TIMEOUT_MS = 20_000
FLEET_COLUMN = {column.title: position for position, column in enumerate(FLEET_COLUMNS)}
DISPLAY, FOREGROUND = Qt.ItemDataRole.DisplayRole, Qt.ItemDataRole.ForegroundRole

# One refuted claim is enough to quarantine a generator (as in tests/engine/test_trust.py).
LOW_FLOOR = """version = 1
[reputation]
quarantine_floor = 0.7
probation_start = 0.72
"""


def fleet_cell(model, agent_id, title, role=DISPLAY):
    return model.data(model.index(model.row_of(agent_id), FLEET_COLUMN[title]), role)


def history(t0: float) -> list[ScorePoint]:
    """gen-liar falls through the 0.20 floor on its fourth point; gen-a climbs."""
    points = [ScorePoint("gen-a", 0.75, "active", "", "registered", t0),
              ScorePoint("gen-liar", 0.75, "active", "", "registered", t0)]
    for n, score in enumerate((0.62, 0.41, 0.18), start=1):
        state = "quarantined" if score < 0.2 else "active"
        points.append(ScorePoint("gen-liar", score, state, f"t{n}", "bad medium-risk question (claim refuted)",
                                 t0 + 60 * n))
        points.append(ScorePoint("gen-a", 0.75 + 0.01 * n, "active", f"t{n}", "good medium-risk question",
                                 t0 + 60 * n))
    return points


def start_window(qtbot, qasync_loop, engine):
    service = EngineService(engine)
    service.operator = "tester"
    window = MainWindow(service)
    qtbot.addWidget(window)
    errors = []
    service.sig_error.connect(errors.append)
    with qtbot.waitSignals([service.trust.sig_loaded, service.alerts.sig_loaded],
                           timeout=START_TIMEOUT_MS):          # read once the engine is ready
        run = qasync_loop.create_task(serve(window, service))
    qtbot.waitExposed(window)
    return service, window, run, errors


def close_window(qtbot, window, service, engine, run):
    window.close()
    qtbot.waitUntil(run.done, timeout=STOP_TIMEOUT_MS)
    assert run.result() == 0 and service.phase is Phase.STOPPED
    assert agent_processes_alive(engine) == []


# --- the Trust plot --------------------------------------------------------------------------------

def test_trust_panel_plots_a_trust_update_with_the_floor_quarantine_mark_hover_and_click(qtbot, engine):
    service = EngineService(engine)
    panel = TrustPanel(service)
    qtbot.addWidget(panel)
    panel.resize(1100, 420)
    panel.show()
    qtbot.waitExposed(panel)
    assert panel.floor == service.trust.quarantine_floor == 0.2
    assert panel.floor_line.value() == 0.2 and panel.floor_line.angle == 0
    assert panel.floor_line.label.toPlainText() == "quarantine floor 0.20"
    assert panel.floor_line.pen.style() == Qt.PenStyle.DashLine
    assert panel.agents_plotted() == []

    t0 = time.time() - 600
    points = history(t0)
    service.trust.sig_updated.emit(ReputationUpdate(points=tuple(points)))
    assert panel.agents_plotted() == ["gen-a", "gen-liar"]
    xs, ys = panel.curve("gen-liar").getData()
    assert list(ys) == [0.75, 0.62, 0.41, 0.18]
    assert list(xs) == [t0, t0 + 60, t0 + 120, t0 + 180]
    # The quarantined agent's line is dashed and a red mark sits where it was quarantined.
    assert panel.curve("gen-liar").opts["pen"].style() == PEN_STYLES["quarantined"]
    assert panel.curve("gen-a").opts["pen"].style() == Qt.PenStyle.SolidLine
    marks = panel.quarantine_marks.getData()
    assert (list(marks[0]), list(marks[1])) == ([t0 + 180], [0.18])
    assert "1 quarantined" in panel.title.text() and panel.tab_title() == "Trust (1 quarantined)"
    legend = panel.legend_model
    liar_row = legend.record(legend.row_of("gen-liar"))
    assert (liar_row.score, liar_row.state) == (0.18, "quarantined")

    # The same points again (loaded from the store after arriving live) change nothing; a new one extends the line.
    assert panel.load_history(points) == 0
    assert panel.add_points([ScorePoint("gen-a", 0.8, "active", "t4", "good", t0 + 240)]) == 1
    xs, ys = panel.curve("gen-liar").getData()
    assert list(xs)[-1] == t0 + 240 and list(ys)[-1] == 0.18      # flat on to the latest point

    # Hover near a point: agent, score and time (and every agent whose point is drawn on the same spot);
    # a click there selects the agent.
    qtbot.wait(50)
    target = panel.points("gen-liar")[2]
    spot = panel.plot.mapFromScene(panel.scene_pos(target)) + QPoint(3, -2)
    qtbot.mouseMove(panel.plot.viewport(), spot)
    qtbot.waitUntil(lambda: panel.hovered == target, timeout=2_000)
    assert panel.hover_label.full_text() == point_text(target)
    assert panel.hover_label.full_text().startswith("gen-liar · 0.41 at ")
    assert panel.hover_label.textFormat() == Qt.TextFormat.PlainText
    assert panel.hover_tip.isVisible() and panel.hover_tip.toPlainText().startswith("gen-liar\n0.41 at ")
    tip = panel.hover_tip.sceneBoundingRect()                  # drawn at screen size, beside the point, inside the plot
    assert tip.height() < 80 and panel.view_box.sceneBoundingRect().contains(tip)
    assert [p.agent_id for p in panel.coinciding(target)] == ["gen-liar"]
    with qtbot.waitSignal(panel.sig_agent_selected) as selected:
        qtbot.mouseClick(panel.plot.viewport(), Qt.MouseButton.LeftButton, pos=spot)
    assert selected.args == ["gen-liar"] and panel.selected == "gen-liar"
    assert panel.curve("gen-liar").opts["pen"].widthF() > panel.curve("gen-a").opts["pen"].widthF()
    assert legend.record(panel.legend.currentIndex().row()).agent_id == "gen-liar"
    # A click on a line between its points selects it too (a score holds from one change to the next: a step).
    panel.select_agent("gen-a")
    middle = panel.plot.mapFromScene(panel.view_box.mapViewToScene(QPointF(t0 + 90, 0.62)))
    assert panel.nearest_point(panel.plot.mapToScene(middle)) is None
    with qtbot.waitSignal(panel.sig_agent_selected) as selected:
        qtbot.mouseClick(panel.plot.viewport(), Qt.MouseButton.LeftButton, pos=middle)
    assert selected.args == ["gen-liar"] and panel.selected == "gen-liar"
    far = panel.plot.mapFromScene(panel.view_box.sceneBoundingRect().center())
    qtbot.mouseMove(panel.plot.viewport(), far + QPoint(0, -60))
    qtbot.waitUntil(lambda: panel.hovered is None, timeout=2_000)
    assert panel.hover_label.full_text().startswith("Hover a point") and not panel.hover_tip.isVisible()

    # Lines that run together (two liars punished alike) are all named at a shared point.
    twin = dataclasses.replace(target, agent_id="ret-rogue", why="its passages kept out")
    panel.add_points([twin])
    assert panel.coinciding(target) == [target, twin]
    panel.show_hover(target)
    assert panel.hover_label.full_text().startswith("gen-liar, ret-rogue · 0.41 at ")
    assert panel.hover_tip.toPlainText().startswith("gen-liar, ret-rogue\n")


# --- the fleet table -------------------------------------------------------------------------------

def test_fleet_table_shows_trust_score_and_standing_in_colour(engine):
    model = FleetModel()
    views = list(engine.fleet.agents())
    assert fleet_cell_of(model, views, "gen-a", "Score") == "—"         # not scored before the book has it

    def up(agent_id, **standing):
        return dataclasses.replace(engine.parts.registry.get(agent_id), state=AgentState.UP, **standing)
    model.update_agent(up("gen-a", trust_score=0.7512, trust_state="active"))
    model.update_agent(up("gen-b", trust_score=0.45, trust_state="probation"))
    model.update_agent(up("gen-liar", trust_score=0.12, trust_state="quarantined"))
    assert fleet_cell(model, "gen-a", "Score") == "0.75" and fleet_cell(model, "gen-a", "State") == "up"
    assert fleet_cell(model, "gen-a", "Score", FOREGROUND) is None
    assert fleet_cell(model, "gen-b", "State") == "probation"
    assert fleet_cell(model, "gen-b", "State", FOREGROUND) == style.tones().warn
    assert fleet_cell(model, "gen-liar", "Score") == "0.12"
    assert fleet_cell(model, "gen-liar", "State") == "quarantined"
    assert fleet_cell(model, "gen-liar", "State", FOREGROUND) == style.tones().bad
    assert fleet_cell(model, "gen-liar", "Score", FOREGROUND) == style.tones().bad
    assert "no work" in fleet_cell(model, "gen-liar", "State", Qt.ItemDataRole.ToolTipRole)
    assert "trust level TOOL" in fleet_cell(model, "gen-a", "Kind", Qt.ItemDataRole.ToolTipRole)


def fleet_cell_of(model, views, agent_id, title):
    model.set_agents(views)
    return fleet_cell(model, agent_id, title)


# --- the reason dialog -----------------------------------------------------------------------------

def test_reason_dialog_needs_a_reason_says_what_happens_and_shows_a_refusal(qtbot, engine):
    service = EngineService(engine)                  # never started: the engine refuses, the dialog says why
    view = engine.parts.registry.get("gen-liar")
    dialog = TrustActionDialog(service, view, TrustAction.QUARANTINE)
    qtbot.addWidget(dialog)
    dialog.open()
    assert dialog.isVisible() and dialog.windowTitle() == "Quarantine gen-liar"
    assert "no work at all" in dialog.consequence.text() and "until an operator releases it" in dialog.consequence.text()
    assert dialog.ok_button.text() == "Quarantine"
    assert not dialog.ok_button.isEnabled()                 # no reason, no quarantine
    qtbot.keyClicks(dialog.reason, "   ")
    assert not dialog.ok_button.isEnabled()                 # blanks are not a reason
    qtbot.keyClick(dialog.reason, Qt.Key.Key_Return)
    assert dialog.isVisible() and not dialog.saving
    dialog.reason.clear()
    qtbot.keyClicks(dialog.reason, "made up a <b>survey</b>")
    assert dialog.ok_button.isEnabled() and dialog.reason_text() == "made up a <b>survey</b>"
    with qtbot.waitSignal(service.trust.sig_failed) as failed:
        qtbot.mouseClick(dialog.ok_button, Qt.MouseButton.LeftButton)
    assert failed.args[0] == "gen-liar"
    assert dialog.isVisible() and not dialog.saving and dialog.ok_button.isEnabled()    # try again later
    assert dialog.hint.text() == f"Not saved: {failed.args[1]}" and "idle" in dialog.hint.text()
    dialog.reject()

    release = TrustActionDialog(service, view, TrustAction.RELEASE)
    qtbot.addWidget(release)
    terms = release.consequence.text()           # the engine's own probation terms, with its numbers
    assert "low-risk work only" in terms and "at most 0.50" in terms and "20 good questions in a row" in terms
    assert "below 0.45 restarts there" in terms
    assert release.ok_button.text() == "Release"


def test_quarantine_and_release_from_the_fleet_table_through_the_reason_dialog(qtbot, qasync_loop, engine):
    service, window, run, errors = start_window(qtbot, qasync_loop, engine)
    fleet = window.fleet_panel
    assert fleet_cell(fleet.model, "gen-b", "Score") == "0.75"          # the book's start score
    assert fleet_cell(fleet.model, "gen-b", "State") == "up"            # up, and active in the book
    assert not fleet.quarantine_button.isEnabled()                        # nothing selected yet
    assert fleet.select_agent("gen-b")
    assert fleet.quarantine_button.isEnabled() and not fleet.release_button.isEnabled()
    assert window.trust_panel.selected == "gen-b"                          # one selection everywhere

    # The table's context menu offers the same, for the row under the pointer (built, not popped up: offscreen
    # Qt warns about popups).
    menu = fleet.context_menu(fleet.model.row_of("gen-b"))
    assert {a.text(): a.isEnabled() for a in menu.actions()} == {"Quarantine gen-b…": True, "Release gen-b…": False}
    next(a for a in menu.actions() if a.text() == "Quarantine gen-b…").trigger()
    menu.close()
    assert fleet.dialog is not None and fleet.dialog.isVisible() and fleet.dialog.action is TrustAction.QUARANTINE
    fleet.dialog.reject()

    qtbot.mouseClick(fleet.quarantine_button, Qt.MouseButton.LeftButton)
    dialog = fleet.dialog
    assert dialog is not None and dialog.isVisible() and dialog.agent_id == "gen-b"
    assert dialog.windowModality() == Qt.WindowModality.WindowModal
    assert not dialog.ok_button.isEnabled()                               # an empty reason keeps OK disabled
    qtbot.keyClicks(dialog.reason, "answers drift since the last deploy")
    with qtbot.waitSignal(service.trust.sig_updated, timeout=ANSWER_TIMEOUT_MS) as updated:
        qtbot.mouseClick(dialog.ok_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: not dialog.isVisible(), timeout=5_000)
    assert dialog.result() == QDialog.DialogCode.Accepted
    quarantined = [e for e in updated.args[0].events if type(e).__name__ == "AgentQuarantined"]
    assert [(e.agent_id, e.reason, e.actor, e.automatic) for e in quarantined] == [
        ("gen-b", "answers drift since the last deploy", "tester", False)]
    assert engine.parts.registry.get("gen-b").trust_state == "quarantined"
    assert fleet_cell(fleet.model, "gen-b", "State") == "quarantined"
    assert fleet_cell(fleet.model, "gen-b", "State", FOREGROUND) == style.tones().bad
    assert fleet.message.full_text() == "gen-b quarantined by tester"
    assert not fleet.quarantine_button.isEnabled() and fleet.release_button.isEnabled()
    assert "1 quarantined" in window.status_text.text()
    trust = window.trust_panel
    assert trust.points("gen-b")[-1].state == "quarantined" and trust.state("gen-b") == "quarantined"
    assert window.dock_title("trust") == "Trust (1 quarantined)"

    # Release: the dialog explains probation; the agent comes back on it.
    qtbot.mouseClick(fleet.release_button, Qt.MouseButton.LeftButton)
    release = fleet.dialog
    assert release is not dialog and release.action is TrustAction.RELEASE and not release.ok_button.isEnabled()
    qtbot.keyClicks(release.reason, "redeployed the fixed build")
    with qtbot.waitSignal(release.sig_saved, timeout=ANSWER_TIMEOUT_MS):
        qtbot.keyClick(release.reason, Qt.Key.Key_Return)
    assert not release.isVisible()
    assert fleet_cell(fleet.model, "gen-b", "State") == "probation"
    assert fleet_cell(fleet.model, "gen-b", "State", FOREGROUND) == style.tones().warn
    assert fleet.quarantine_button.isEnabled() and not fleet.release_button.isEnabled()
    assert window.dock_title("trust") == "Trust"

    # A release of an agent that is not quarantined is refused by the engine and said in the panel.
    with qtbot.waitSignal(service.trust.sig_failed, timeout=ANSWER_TIMEOUT_MS):
        service.trust.release("gen-a", "by mistake")
    assert fleet.message.full_text().startswith("gen-a: gen-a is not quarantined")
    close_window(qtbot, window, service, engine, run)
    assert errors == []


# --- the alerts list -------------------------------------------------------------------------------

def test_alert_messages_are_plain_text_and_acknowledged_ones_are_greyed(qtbot):
    model = AlertsModel()
    hostile = AlertRow(2, "score_drop", "gen-liar", "gen-liar lost 0.30 <img src=x onerror=1><b>bold</b>", "t2",
                       time.time())
    older = AlertRow(1, "auto_quarantine", "ret-rogue", "ret-rogue quarantined", "t1", time.time() - 60)
    model.set_alerts([older, hostile])
    assert [model.record(r).id for r in range(2)] == [2, 1]                  # newest first
    index = model.index(0, MESSAGE_COLUMN)
    assert model.data(index, DISPLAY) == hostile.message                    # shown as text by the view
    assert "&lt;b&gt;bold&lt;/b&gt;" in model.data(index, Qt.ItemDataRole.ToolTipRole)
    assert model.open_count() == 2
    acked = dataclasses.replace(older, acknowledged_by="tester", acknowledged_at=time.time())
    model.upsert(acked)
    assert model.open_count() == 1
    assert model.data(model.index(1, AGENT_COLUMN), FOREGROUND) == style.tones().muted
    assert model.data(model.index(1, STATUS_COLUMN), DISPLAY).startswith("acknowledged by tester at ")
    model.set_alerts([older])                                              # a stale read does not reopen it
    assert not model.record(model.row_of(1)).open


def test_alerts_panel_detail_is_plain_text(qtbot, engine):
    panel = AlertsPanel(EngineService(engine))
    qtbot.addWidget(panel)
    panel.show_alert(AlertRow(7, "behaviour_shift", "gen-a", "gen-a: <b>latency</b> 2400 ms", "", time.time()))
    assert panel.detail.textFormat() == Qt.TextFormat.PlainText
    assert "gen-a: <b>latency</b> 2400 ms" in panel.detail.text()
    assert panel.tab_title() == "Alerts (1 open)"
    assert not panel.acknowledge_button.isEnabled()           # the engine is not ready


def test_a_lying_generator_is_quarantined_automatically_and_the_alert_is_acknowledged(qtbot, qasync_loop,
                                                                                       small_fleet_file, db_path,
                                                                                       cache_dir, tmp_path):
    settings_file = tmp_path / "engine.toml"
    settings_file.write_text(LOW_FLOOR, encoding="utf-8")
    engine = Engine(load_fleet(small_fleet_file), load_settings(settings_file), db_path=db_path, cache_dir=cache_dir)
    service, window, run, errors = start_window(qtbot, qasync_loop, engine)
    alerts, trust = window.alerts_panel, window.trust_panel
    assert trust.floor == 0.7 and trust.floor_line.label.toPlainText() == "quarantine floor 0.70"
    assert alerts.model.rowCount() == 0 and window.alerts_button.isHidden()
    assert window.dock_title("alerts") == "Alerts"
    assert set(trust.agents_plotted()) == {v.spec.id for v in engine.fleet.agents()}     # registered, from the store

    window.ask_panel.question.setText("What are the moons of Mars?")
    with qtbot.waitSignal(service.questions.sig_answer, timeout=ANSWER_TIMEOUT_MS):
        window.ask_panel.submit()
    qtbot.waitUntil(lambda: not service.questions.busy, timeout=ANSWER_TIMEOUT_MS)
    # Alerts arrive batched (one redraw per burst).
    qtbot.waitUntil(lambda: any(a.agent_id == "gen-liar" for a in alerts.model.records()), timeout=5_000)
    # The fleet table, the plot, the alerts and the status bar all say it, without a refresh.
    assert fleet_cell(window.fleet_panel.model, "gen-liar", "State") == "quarantined"
    assert trust.state("gen-liar") == "quarantined"
    assert any(p.agent_id == "gen-liar" for p in trust.quarantine_marks.data["data"])
    liar_alerts = [a for a in alerts.model.records() if a.agent_id == "gen-liar"]
    assert [a.kind for a in liar_alerts] == ["auto_quarantine"]
    opened = alerts.model.open_count()
    assert opened >= 1
    assert window.dock_title("alerts") == f"Alerts ({opened} open)"
    assert window.needs_attention("alerts")
    assert window.alerts_button.isVisible()
    assert window.alerts_button.text() == f"{opened} unacknowledged alert{'s' if opened != 1 else ''}"

    qtbot.mouseClick(window.alerts_button, Qt.MouseButton.LeftButton)      # the status bar opens the list
    assert window.is_front("alerts")
    liar = liar_alerts[0]
    assert window.fleet_panel.current_view() is None            # the list's own first selection picks no agent
    rect = alerts.table.visualRect(alerts.proxy.mapFromSource(alerts.model.index(alerts.model.row_of(liar.id), AGENT_COLUMN)))
    qtbot.mouseClick(alerts.table.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())
    assert alerts.current_alert().id == liar.id and "gen-liar quarantined" in alerts.detail.text()
    assert window.fleet_panel.current_view().spec.id == "gen-liar"        # the operator's click does
    assert trust.selected == "gen-liar"
    qtbot.mouseClick(alerts.acknowledge_button, Qt.MouseButton.LeftButton)     # opens the comment form
    with qtbot.waitSignal(service.alerts.sig_acknowledge_done, timeout=ANSWER_TIMEOUT_MS):
        qtbot.keyClick(alerts.ack_form.comment, Qt.Key.Key_Return)
    row = alerts.model.alert(liar.id)
    assert (row.id, row.acknowledged_by, row.open) == (liar.id, "tester", False)
    position = alerts.model.row_of(liar.id)
    assert alerts.model.data(alerts.model.index(position, AGENT_COLUMN), FOREGROUND) == style.tones().muted
    assert alerts.model.open_count() == opened - 1
    assert not alerts.acknowledge_button.isEnabled()
    if opened == 1:
        assert window.alerts_button.isHidden() and window.dock_title("alerts") == "Alerts"
    else:
        assert window.alerts_button.text().startswith(f"{opened - 1} unacknowledged alert")
    close_window(qtbot, window, service, engine, run)
    assert errors == []

    # A restart fills the plot and the list from the store: the acknowledgement and the quarantine are kept.
    engine = Engine(load_fleet(small_fleet_file), load_settings(settings_file), db_path=db_path, cache_dir=cache_dir)
    service, window, run, errors = start_window(qtbot, qasync_loop, engine)
    alerts, trust = window.alerts_panel, window.trust_panel
    assert not alerts.model.record(alerts.model.row_of(liar.id)).open
    assert alerts.model.open_count() == opened - 1
    assert trust.state("gen-liar") == "quarantined" and trust.points("gen-liar")[-1].state == "quarantined"
    assert window.dock_title("fleet") == "Fleet"
    close_window(qtbot, window, service, engine, run)
    assert errors == []


def test_screenshot_tool_opens_the_trust_tab_after_several_questions(small_fleet_file, tmp_path):
    out = tmp_path / "trust.png"
    result = subprocess.run(
        [sys.executable, "-m", "console.screenshot", str(out), "--fleet", str(small_fleet_file),
         "--db", str(tmp_path / "shot.db"), "--cache-dir", str(tmp_path / "cache"), "--timeout", "60",
         "--tab", "trust", "--repeat", "2", "--select", "gen-liar"],
        cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=120,
        env={**os.environ, "QT_QPA_PLATFORM": "offscreen"})
    assert result.returncode == 0, result.stderr[-2000:]
    assert out.stat().st_size > 20_000
    assert processes_mentioning(str(small_fleet_file)) == []
