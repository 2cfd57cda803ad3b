"""The Gateway panel: messages the thought-virus gateway blocked, sanitised or escalated, live
(sig_gateway_flagged) and as stored (sig_gateway_loaded); its filter, plain-text details and "Open trace…";
the service's load_gateway / open_trace.

Unit tests emit the service's signals by hand with GatewayFlags and DecisionRows built here; the end-to-end
test runs the small fleet with a retriever that plants an instruction in its passages. The engine's gateway
runs the scanners that need no embedder (invisible, patterns, classifier), so these tests do not depend on
the seed-similarity scanner."""
from __future__ import annotations

import dataclasses
import html
import time

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QPlainTextEdit

from console import style
from console.main_window import MainWindow
from console.panels.gateway import GatewayPanel
from console.panels.gateway_model import (ACTION_COLUMN, CARRIER_COLUMN, EVIDENCE_COLUMN, EXCERPT_COLUMN, KIND_COLUMN,
                                          SCORE_COLUMN, TRUST_COLUMN, GatewayRow)
from console.service import EngineService, Phase
from engine import Engine, load_fleet, load_settings
from engine.events import GatewayFlagged
from engine.gateway.decision import Action
from engine.gateway.report import GatewayFlag
from engine.gateway.traces import DecisionRow
from engine.types import TrustLevel

from ..conftest import DATA, write_fleet
from .helpers import agent_processes_alive

START_TIMEOUT_MS = 60_000
ANSWER_TIMEOUT_MS = 30_000
STOP_TIMEOUT_MS = 20_000
DISPLAY, FOREGROUND, TOOLTIP = Qt.ItemDataRole.DisplayRole, Qt.ItemDataRole.ForegroundRole, Qt.ItemDataRole.ToolTipRole
QUESTION_ID = "a" * 32
HOSTILE = "<b>bold</b><a href='x'>link</a>"
EVIDENCE = ('patterns: override/ignore-previous (0.85): tells the reader to ignore or forget earlier instructions, '
            'rules or context: "ignore all previous instructions"', "classifier: 0.91 on window 2")
SCANNERS = ("invisible", "patterns", "classifier")
INJECTOR = """
[[agents]]
id = "ret-inject"
role = "retriever"
backend = "bm25"
fault = { kind = "inject", seed = 2 }
"""


@pytest.fixture
def gateway_engine(small_fleet_file, db_path, cache_dir) -> Engine:
    """A real engine on the small test fleet (not started), its gateway without the seed scanner."""
    yield _engine(small_fleet_file, db_path, cache_dir)


def _engine(fleet_file, db_path, cache_dir) -> Engine:
    settings = load_settings(DATA / "engine_fast.toml")
    settings = dataclasses.replace(settings, gateway=dataclasses.replace(settings.gateway, scanners=SCANNERS))
    return Engine(load_fleet(fleet_file), settings, db_path=db_path, cache_dir=cache_dir)


def flag(action: Action, n: int, *, source: str = "ret-web", kind: str = "passage", excerpt: str = "Voyager 1 ...",
         evidence: tuple[str, ...] = EVIDENCE, parent: str = QUESTION_ID, at: float | None = None,
         trust: TrustLevel = TrustLevel.EXTERNAL) -> GatewayFlag:
    return GatewayFlag(f"{n:032x}", parent, source, "engine", kind, trust, "data", action, 0.5 + n / 100, evidence,
                       excerpt, at if at is not None else time.time() + n, f"voyager#{n}")


def decision(row_id: int, f: GatewayFlag) -> DecisionRow:
    """The store's copy of a flag (as engine.gateway.traces.recent_decisions_sync returns it)."""
    return DecisionRow(row_id, f.trace_id, f.parent_trace_id, f.source, f.target, f.kind, f.trust.value, f.channel,
                       f.action.value, f.score, f.evidence, f.excerpt, f.at)


def cell(panel: GatewayPanel, row: int, column: int, role=DISPLAY):
    proxy = panel.proxy
    return proxy.data(proxy.index(row, column), role)


def make_window(qtbot, engine):
    service = EngineService(engine)
    window = MainWindow(service)
    qtbot.addWidget(window)
    return service, window


def test_live_flags_show_newest_first_with_coloured_actions_and_the_blocked_count_in_the_tab(qtbot, gateway_engine):
    service, window = make_window(qtbot, gateway_engine)
    panel = window.gateway_panel
    assert window.dock_title("gateway") == "Gateway" and panel.model.rowCount() == 0
    assert not panel.trace_button.isEnabled()
    assert panel.details.placeholderText().startswith("Nothing stopped yet")

    flags = (flag(Action.BLOCK, 1), flag(Action.ESCALATE, 2, source="operator", kind="question", parent="",
                                         trust=TrustLevel.USER),
             flag(Action.SANITISE, 3, kind="memory_write"), flag(Action.BLOCK, 4, source="gen-b", kind="generation"))
    service.gateway.sig_flagged.emit(GatewayFlagged(flags, QUESTION_ID, time.time()))

    rows = panel.visible_rows()
    assert [r.trace_id for r in rows] == [f"{n:032x}" for n in (4, 3, 2, 1)]           # newest first
    assert [cell(panel, r, ACTION_COLUMN) for r in range(4)] == ["blocked", "sanitised", "escalated", "blocked"]
    assert [cell(panel, r, ACTION_COLUMN, FOREGROUND) for r in range(4)] == [style.tones().bad, style.tones().info, style.tones().warn,
                                                                             style.tones().bad]
    assert [cell(panel, r, CARRIER_COLUMN) for r in range(4)] == ["gen-b", "ret-web", "operator", "ret-web"]
    assert [cell(panel, r, KIND_COLUMN) for r in range(4)] == ["generation", "memory write", "question", "passage"]
    assert [cell(panel, r, TRUST_COLUMN) for r in range(4)] == ["EXTERNAL", "EXTERNAL", "USER", "EXTERNAL"]
    assert cell(panel, 0, SCORE_COLUMN) == "0.54"
    assert cell(panel, 0, EVIDENCE_COLUMN) == EVIDENCE[0]              # the first finding; details have them all
    assert window.dock_title("gateway") == "Gateway (2 blocked)"
    assert window.needs_attention("gateway")
    assert panel.summary.text().startswith("4 message(s) stopped or changed: 2 blocked · 1 escalated · 1 sanitised")

    # The first row is selected and spelled out; the selection stays put when a newer flag arrives.
    assert panel.current_row().trace_id == f"{4:032x}"
    details = panel.details.toPlainText()
    assert details.startswith("BLOCKED · generation voyager#4 · score 0.54 · carried by gen-b → engine")
    assert all(line in details for line in EVIDENCE) and f"question {QUESTION_ID}" in details
    service.gateway.sig_flagged.emit(GatewayFlagged((flag(Action.BLOCK, 5),), QUESTION_ID, time.time()))
    assert panel.current_row().trace_id == f"{4:032x}" and panel.visible_rows()[0].trace_id == f"{5:032x}"
    assert window.dock_title("gateway") == "Gateway (3 blocked)"


def test_an_agents_markup_and_hidden_characters_stay_literal_in_table_details_and_tooltips(qtbot, gateway_engine):
    service = EngineService(gateway_engine)
    panel = GatewayPanel(service)
    qtbot.addWidget(panel)
    hostile = flag(Action.BLOCK, 1, source=f"ret-{HOSTILE}", excerpt=f"Voyager {HOSTILE}\u202eevil\u200b",
                   evidence=(f"patterns: quoted {HOSTILE}",))
    service.gateway.sig_flagged.emit(GatewayFlagged((hostile,), QUESTION_ID, time.time()))

    # Hidden characters are named in a cell, never obeyed (the override would reverse the rest of the row).
    assert cell(panel, 0, EXCERPT_COLUMN) == f"Voyager {HOSTILE}⟨U+202E RIGHT-TO-LEFT OVERRIDE⟩evil⟨U+200B ZERO WIDTH SPACE⟩"
    assert cell(panel, 0, EVIDENCE_COLUMN) == f"patterns: quoted {HOSTILE}"
    assert cell(panel, 0, CARRIER_COLUMN) == f"ret-{HOSTILE}"
    for column in (EXCERPT_COLUMN, EVIDENCE_COLUMN, CARRIER_COLUMN):
        tooltip = cell(panel, 0, column, TOOLTIP)
        assert html.escape(HOSTILE) in tooltip and "<b>bold" not in tooltip and "<a href" not in tooltip
    assert isinstance(panel.details, QPlainTextEdit) and panel.details.isReadOnly()
    details = panel.details.toPlainText()
    assert f"Voyager {HOSTILE}⟨U+202E RIGHT-TO-LEFT OVERRIDE⟩evil⟨U+200B ZERO WIDTH SPACE⟩" in details
    assert f"  • patterns: quoted {HOSTILE}" in details and "\u202e" not in details


def test_stored_rows_merge_with_live_ones_and_the_filter_keeps_one_action_or_some_text(qtbot, gateway_engine):
    service = EngineService(gateway_engine)
    panel = GatewayPanel(service)
    qtbot.addWidget(panel)
    live = flag(Action.BLOCK, 3)
    service.gateway.sig_flagged.emit(GatewayFlagged((live,), QUESTION_ID, time.time()))
    stored = (decision(12, live), decision(11, flag(Action.ESCALATE, 2, source="operator", kind="question")),
              decision(10, flag(Action.SANITISE, 1, source="ret-e5")))
    service.gateway.sig_loaded.emit(stored)
    rows = panel.visible_rows()
    assert [(r.action, r.stored_id) for r in rows] == [("block", 12), ("escalate", 11), ("sanitise", 10)]
    assert rows[0].item == "voyager#3"           # the live flag's item stays (the store does not keep it)
    assert rows[1] == GatewayRow.of_decision(stored[1])

    panel.set_action_filter("escalate")
    assert [r.action for r in panel.visible_rows()] == ["escalate"]
    assert panel.current_row().action == "escalate"       # the details follow what is shown
    assert panel.details.toPlainText().startswith("ESCALATED")
    panel.set_action_filter("")
    panel.text_filter.setText("RET-E5")
    assert [r.source for r in panel.visible_rows()] == ["ret-e5"]
    panel.set_action_filter("block")
    assert panel.visible_rows() == [] and panel.current_row() is None
    assert panel.details.placeholderText() == "No message matches the filter." and not panel.trace_button.isEnabled()
    panel.text_filter.clear()
    assert [r.action for r in panel.visible_rows()] == ["block"]
    assert panel.tab_title() == "Gateway (1 blocked)"       # counts every row, whatever the filter shows


def test_open_trace_asks_the_service_for_the_selected_messages_question(qtbot, gateway_engine):
    service = EngineService(gateway_engine)
    calls = []
    service.traces.open = calls.append
    panel = GatewayPanel(service)
    qtbot.addWidget(panel)
    passage = flag(Action.BLOCK, 2)
    question = flag(Action.ESCALATE, 1, source="operator", kind="question", parent="")   # the question itself
    service.gateway.sig_flagged.emit(GatewayFlagged((question, passage), QUESTION_ID, time.time()))
    assert panel.current_row().trace_id == passage.trace_id
    qtbot.mouseClick(panel.trace_button, Qt.MouseButton.LeftButton)
    assert calls == [QUESTION_ID]                    # the parent (question), not the passage's own id
    panel.table.doubleClicked.emit(panel.proxy.index(1, 0))     # the question's own row: its own trace
    assert panel.current_row().trace_id == question.trace_id
    assert calls == [QUESTION_ID, question.trace_id]


def test_the_service_refuses_traces_before_the_engine_is_ready_and_empty_ids(qtbot, qasync_loop, gateway_engine):
    service = EngineService(gateway_engine)
    errors, failed = [], []
    service.sig_error.connect(errors.append)
    service.traces.sig_failed.connect(lambda trace_id, why: failed.append((trace_id, why)))
    assert service.traces.open(QUESTION_ID) is None and service.gateway.load() is None
    assert service.traces.open("   ") is None
    assert failed == [(QUESTION_ID, "traces cannot be read while the engine is idle"),
                      ("", "no trace id given: paste the 32-hex trace id an answer, an alert or the Gateway tab shows")]
    assert errors == [why for _, why in failed]


def test_a_planted_instruction_is_blocked_listed_stored_and_traced_end_to_end(qtbot, qasync_loop, tmp_path,
                                                                               db_path, cache_dir):
    engine = _engine(write_fleet(tmp_path, extra=INJECTOR), db_path, cache_dir)
    service, window = make_window(qtbot, engine)
    panel = window.gateway_panel
    errors, flagged = [], []
    service.sig_error.connect(errors.append)
    service.gateway.sig_flagged.connect(flagged.append)
    try:
        with qtbot.waitSignal(service.gateway.sig_loaded, timeout=START_TIMEOUT_MS) as loaded:   # when ready
            service.start()
        assert loaded.args == [()] and panel.model.rowCount() == 0

        with qtbot.waitSignal(service.questions.sig_answer, timeout=ANSWER_TIMEOUT_MS) as got:
            service.questions.ask("When did Voyager 1 launch?", "medium")
        answer = got.args[0]
        assert [event.trace_id for event in flagged] == [answer.trace_id]
        rows = panel.visible_rows()
        assert rows and {(r.source, r.kind, r.action, r.parent_trace_id) for r in rows} == {
            ("ret-inject", "passage", "block", answer.trace_id)}
        assert window.dock_title("gateway") == f"Gateway ({len(rows)} blocked)"
        assert "ignore" in panel.details.toPlainText().lower()

        with qtbot.waitSignal(service.gateway.sig_loaded, timeout=ANSWER_TIMEOUT_MS):     # the store has them too
            service.gateway.load()
        assert [(r.trace_id, r.action) for r in panel.visible_rows()] == [(r.trace_id, r.action) for r in rows]
        assert all(r.stored_id is not None for r in panel.visible_rows())

        with qtbot.waitSignal(service.traces.sig_loaded, timeout=ANSWER_TIMEOUT_MS) as traced:
            qtbot.mouseClick(panel.trace_button, Qt.MouseButton.LeftButton)
        assert traced.args[0] == answer.trace_id
        view = window.trace_view
        assert view.isVisible() and view.trace_id == answer.trace_id
        kinds = [line.kind for line in view.lines]
        assert kinds[0] == "question" and "message" in kinds and "audit" in kinds
        current = view.current_line()           # the blocked passage is selected
        assert current.source == "ret-inject" and current.data["action"] == "block"
        assert current.trace_id == panel.current_row().trace_id
        view.close()

        with qtbot.waitSignal(service.traces.sig_failed, timeout=ANSWER_TIMEOUT_MS) as failed:
            service.traces.open("no-such-trace")
        assert failed.args[0] == "no-such-trace" and failed.args[1].startswith("no trace 'no-such-trace' in the store")
        assert errors == [failed.args[1]]
    finally:
        with qtbot.waitSignal(service.sig_stopped, timeout=STOP_TIMEOUT_MS):
            service.shutdown()
    assert service.phase is Phase.STOPPED and agent_processes_alive(engine) == []


def test_the_gateway_model_and_its_filter_pass_qt_model_tester(qtbot, qtmodeltester, gateway_engine):
    panel = GatewayPanel(EngineService(gateway_engine))
    qtbot.addWidget(panel)
    panel.add_flags((flag(Action.BLOCK, 1), flag(Action.ESCALATE, 2), flag(Action.SANITISE, 3)))
    qtmodeltester.check(panel.model)
    panel.set_action_filter("block")
    qtmodeltester.check(panel.proxy)
