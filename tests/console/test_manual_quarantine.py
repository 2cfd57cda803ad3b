"""Issue #11: "manual quarantine → the agent takes no part in the next question", end to end on the real
small fleet: the operator quarantines a retriever through the Fleet panel's reason dialog, asks a question
through the service, and the answer's agents do not include it while its row says quarantined."""
from __future__ import annotations

from PySide6.QtCore import Qt

from console import style
from console.panels.fleet import FLEET_COLUMNS, FleetPanel
from console.panels.trust_dialog import TrustAction
from console.service import EngineService, Phase
from engine import CallStatus, RiskTier

from .helpers import agent_processes_alive

START_TIMEOUT_MS = 60_000
ANSWER_TIMEOUT_MS = 30_000
STOP_TIMEOUT_MS = 20_000
COLUMN = {column.title: position for position, column in enumerate(FLEET_COLUMNS)}


def cell(panel, agent_id, title, role=Qt.ItemDataRole.DisplayRole):
    model = panel.model
    return model.data(model.index(model.row_of(agent_id), COLUMN[title]), role)


def test_a_retriever_quarantined_in_the_fleet_panel_takes_no_part_in_the_next_question(qtbot, qasync_loop, engine):
    service = EngineService(engine)
    service.operator = "tester"
    errors = []
    service.sig_error.connect(errors.append)
    panel = FleetPanel(service)
    qtbot.addWidget(panel)
    panel.resize(1280, 300)
    panel.show()
    with qtbot.waitSignal(service.sig_ready, timeout=START_TIMEOUT_MS):
        service.start()
    assert cell(panel, "ret-bm25", "State") == "up"

    # Before: a question asks every retriever, ret-bm25 among them.
    with qtbot.waitSignal(service.questions.sig_answer, timeout=ANSWER_TIMEOUT_MS) as first:
        service.questions.ask("What are the moons of Mars?", RiskTier.MEDIUM.value)
    assert "ret-bm25" in {o.agent_id for o in first.args[0].agents}
    qtbot.waitUntil(lambda: not service.questions.busy, timeout=ANSWER_TIMEOUT_MS)

    assert panel.select_agent("ret-bm25")
    dialog = panel.quarantine_selected()
    assert dialog is not None and dialog.action is TrustAction.QUARANTINE and dialog.agent_id == "ret-bm25"
    qtbot.keyClicks(dialog.reason, "returns passages from a stale index")
    with qtbot.waitSignal(dialog.sig_saved, timeout=ANSWER_TIMEOUT_MS):
        qtbot.keyClick(dialog.reason, Qt.Key.Key_Return)
    assert not dialog.isVisible()
    assert cell(panel, "ret-bm25", "State") == "quarantined"
    assert cell(panel, "ret-bm25", "State", Qt.ItemDataRole.ForegroundRole) == style.tones().bad
    assert panel.message.full_text() == "ret-bm25 quarantined by tester"

    with qtbot.waitSignal(service.questions.sig_answer, timeout=ANSWER_TIMEOUT_MS) as second:
        service.questions.ask("What are the moons of Mars?", RiskTier.MEDIUM.value)
    answer = second.args[0]
    asked = {o.agent_id for o in answer.agents}
    assert "ret-bm25" not in asked                                    # no part in it at all
    assert {"ret-e5", "ret-rogue", "gen-a", "gen-b"} <= asked          # the others still were
    assert all(o.status is CallStatus.OK for o in answer.agents if o.agent_id in ("ret-e5", "gen-a"))
    assert "Phobos" in answer.answer
    assert cell(panel, "ret-bm25", "State") == "quarantined"          # and its row still says so
    assert "no work" in cell(panel, "ret-bm25", "State", Qt.ItemDataRole.ToolTipRole)
    qtbot.waitUntil(lambda: not service.questions.busy, timeout=ANSWER_TIMEOUT_MS)

    shutdown = service.shutdown()
    qtbot.waitUntil(shutdown.done, timeout=STOP_TIMEOUT_MS)
    assert service.phase is Phase.STOPPED
    assert agent_processes_alive(engine) == []
    assert errors == []
