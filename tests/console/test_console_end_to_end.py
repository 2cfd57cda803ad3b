"""The console as an operator uses it, on the real small fleet: window, question, answer, close."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from PySide6.QtCore import Qt

from console.app import serve
from console.main_window import TITLE, MainWindow, first_size
from console.panels.answer import TAB_PASSAGES
from console.service import EngineService, Phase

from .helpers import agent_processes_alive, processes_mentioning

PROJECT_ROOT = Path(__file__).resolve().parents[2]
START_TIMEOUT_MS = 60_000
ANSWER_TIMEOUT_MS = 30_000
STOP_TIMEOUT_MS = 20_000


def test_operator_asks_through_the_window_and_closing_stops_the_fleet(qtbot, qasync_loop, engine):
    service = EngineService(engine)
    window = MainWindow(service)
    qtbot.addWidget(window)
    errors = []
    service.sig_error.connect(errors.append)
    panel = window.ask_panel
    assert window.windowTitle() == TITLE
    assert window.size() == first_size(window.screen().availableGeometry().size()).expandedTo(window.minimumSizeHint())
    assert panel.tier.currentText() == "auto"               # the engine's risk rules decide unless the operator chooses

    run = qasync_loop.create_task(serve(window, service))     # shows the window, then starts the engine
    qtbot.waitExposed(window)
    assert not panel.ask_button.isEnabled()                   # not before the fleet is ready
    qtbot.waitUntil(lambda: "Starting agents" in window.status_text.text(), timeout=START_TIMEOUT_MS)
    with qtbot.waitSignal(service.sig_ready, timeout=START_TIMEOUT_MS):
        pass
    assert panel.ask_button.isEnabled()
    assert window.status_text.text() == "Ready — all 6 agents up"
    assert window.progress.isHidden()
    assert window.fleet_panel.title.text() == "Fleet — all 6 agents up"

    qtbot.keyClicks(panel.question, "What are the moons of Mars?")
    progress, strip = [], []
    service.questions.sig_progress.connect(progress.append)
    service.questions.sig_progress.connect(lambda _event: strip.append(panel.progress.text()))
    with qtbot.waitSignal(service.questions.sig_answer, timeout=ANSWER_TIMEOUT_MS):
        qtbot.keyClick(panel.question, Qt.Key.Key_Return)      # Enter submits
        assert not panel.ask_button.isEnabled()                # one question at a time
        assert panel.busy_bar.isVisible()
    assert not panel.busy_bar.isVisible()
    assert panel.ask_button.isEnabled()
    # Live progress: every stage started, then finished, in order, for this question only; the strip said so.
    assert progress[0].index == 0 and progress[0].kind is None
    finished = [e for e in progress if e.kind is not None]
    assert [e.kind.value for e in finished][0] == "formulate" and finished[-1].kind.value == "synthesize"
    assert len(finished) == progress[0].total and {e.trace_id for e in progress} == {progress[0].trace_id}
    assert any("running" in text for text in strip) and "synthesize ✓" in strip[-1]

    header = panel.answer_view.header
    assert header.badge.text() == "ANSWERED"
    assert "Phobos" in header.answer.text()
    assert "supported by" in header.reason.text()
    trace_id = header.trace.text().removeprefix("trace_id ")
    assert len(trace_id) == 32
    view = panel.answer_view
    assert view.citations_list.count() >= 1
    assert "Phobos" in view.detail.toPlainText()
    # The evidence: the tampering retriever's passages are kept out and it is named, in the header
    # and in the fleet table; the fabricating generator's claims fail their checks.
    kept_out = [row for row in view.passages_model.records() if row.kept_out]
    rogue_rows = [row for row in kept_out if "ret-rogue" in row.passage.supported_by]
    assert rogue_rows and all(row.flags for row in rogue_rows)
    assert all("ret-rogue" not in row.passage.supported_by for row in view.passages_model.records() if not row.kept_out)
    assert view.header.suspects.isVisible() and "ret-rogue" in view.header.suspects.text()
    fleet_model = window.fleet_panel.model
    assert "ret-rogue" in fleet_model.suspects()
    liar = next(c for c in view.candidates_model.records() if c.agent_id == "gen-liar")
    assert liar.checks and not any(check.supported for check in liar.checks)
    view.show_tab(TAB_PASSAGES)
    assert "KEPT OUT" in view.detail.toPlainText()          # opens on the first flagged passage
    outcomes = panel.answer_view.outcomes_model
    assert sorted(outcomes.record(r).agent_id for r in range(outcomes.rowCount())) == sorted(
        v.spec.id for v in engine.fleet.agents())
    fleet = window.fleet_panel.model
    assert all(view.calls >= 1 and view.last_latency_ms is not None for view in fleet.records())

    window.close()                                   # refused at first: shutdown runs while it stays up
    qtbot.waitUntil(run.done, timeout=STOP_TIMEOUT_MS)
    assert run.result() == 0
    assert service.phase is Phase.STOPPED
    assert not window.isVisible()
    assert agent_processes_alive(engine) == []
    assert errors == []


def test_screenshot_tool_runs_the_real_console_and_exits_cleanly(small_fleet_file, tmp_path):
    out = tmp_path / "console.png"
    result = subprocess.run(
        [sys.executable, "-m", "console.screenshot", str(out), "--fleet", str(small_fleet_file),
         "--db", str(tmp_path / "shot.db"), "--cache-dir", str(tmp_path / "cache"), "--timeout", "60",
         "--tab", "context"],
        cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=120,
        env={**os.environ, "QT_QPA_PLATFORM": "offscreen"})
    assert result.returncode == 0, result.stderr[-2000:]
    assert out.stat().st_size > 20_000                        # a real 1280x800 picture, not an empty file
    assert processes_mentioning(str(small_fleet_file)) == []   # every agent went down with the console


def test_screenshot_tool_refuses_an_unknown_tab_before_starting_anything(tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "console.screenshot", str(tmp_path / "x.png"), "--tab", "nonsense"],
        cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=60,
        env={**os.environ, "QT_QPA_PLATFORM": "offscreen"})
    assert result.returncode == 2
    assert "--tab 'nonsense': no such tab" in result.stderr and "Context & kept out" in result.stderr
    assert not (tmp_path / "x.png").exists()
