"""The main window's own behaviour: start-up progress, live fleet status, error toasts, two-step close.

The service's signals are emitted by hand here; the end-to-end test drives them from a real fleet."""
from __future__ import annotations

import dataclasses

from PySide6.QtCore import Qt

from engine import AgentState

from console.main_window import TITLE, MainWindow, first_size
from console.service import EngineService


def make_window(qtbot, engine):
    service = EngineService(engine)
    window = MainWindow(service)
    qtbot.addWidget(window)
    window.show()
    qtbot.waitExposed(window)
    return service, window


def test_start_progress_then_live_fleet_status_in_the_status_bar(qtbot, engine):
    service, window = make_window(qtbot, engine)
    assert window.windowTitle() == TITLE
    assert window.size() == first_size(window.screen().availableGeometry().size()).expandedTo(window.minimumSizeHint())
    assert window.focusWidget() is window.ask_panel.question     # typing goes to the question
    assert not window.ask_panel.ask_button.isEnabled()

    service.sig_starting.emit(3, 6)
    assert window.status_text.text().startswith("Starting agents 3/6…")
    assert window.progress.isVisible()
    assert (window.progress.value(), window.progress.maximum()) == (3, 6)

    for view in engine.fleet.agents():
        service.fleet.sig_agent_changed.emit(dataclasses.replace(view, state=AgentState.UP))
    service.sig_ready.emit(6)
    assert not window.progress.isVisible()
    assert window.status_text.text() == "Ready — all 6 agents up"
    assert window.ask_panel.ask_button.isEnabled()

    service.fleet.sig_agent_changed.emit(dataclasses.replace(engine.fleet.agents()[0], state=AgentState.DOWN))
    qtbot.waitUntil(lambda: window.status_text.text() == "Ready — 5 of 6 agents up · 1 down", timeout=2_000)


def test_errors_show_as_a_toast_not_a_dialog(qtbot, engine):
    service, window = make_window(qtbot, engine)
    assert not window.toast.isVisible()
    service.sig_error.emit("agent gen-a: connection refused")
    assert window.toast.isVisible()
    assert window.toast.text() == "agent gen-a: connection refused"
    assert window.toast.geometry().bottom() < window.height() and window.toast.geometry().right() < window.width()
    qtbot.mouseClick(window.toast, Qt.MouseButton.LeftButton)
    assert not window.toast.isVisible()


def test_close_is_refused_until_shutdown_allows_it(qtbot, engine):
    _service, window = make_window(qtbot, engine)
    requests = []
    window.sig_close_requested.connect(lambda: requests.append(True))
    window.close()
    window.close()                      # an impatient second click asks only once
    assert window.isVisible()
    assert requests == [True]
    window.allow_close()
    window.close()
    assert not window.isVisible()
