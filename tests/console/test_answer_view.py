"""How an answer is shown, from Answer values built here (no fleet needed)."""
from __future__ import annotations

from PySide6.QtCore import Qt

from console import style
from console.panels.answer import OUTCOME_COLUMNS, POSITION_COLUMNS, AnswerView
from console.table_model import RecordTableModel
from engine import (AgentOutcome, Answer, CallStatus, Candidate, Citation, Generation, RiskTier, Role, Verdict)

CITATIONS = (
    Citation("mars-moons#0", "Planetary Science Encyclopedia", "Moons of Mars",
             "Mars has two small moons, Phobos and Deimos. Both were discovered by Asaph Hall in 1877."),
    Citation("mars-moons-2#0", "Space Agency Fact Sheet", "Phobos and Deimos",
             "Phobos orbits Mars three times a day; Deimos takes about 30 hours."),
)
OUTCOMES = (
    AgentOutcome("ret-a", Role.RETRIEVER, CallStatus.OK, 41.6, n_items=8),
    AgentOutcome("ret-dead", Role.RETRIEVER, CallStatus.DOWN, 2.0, error="connection refused"),
    AgentOutcome("gen-a", Role.GENERATOR, CallStatus.OK, 25.0, n_items=1),
    AgentOutcome("gen-b", Role.GENERATOR, CallStatus.OK, 30.0, n_items=1),
)
CANDIDATES = (
    Candidate("gen-a", Generation("Mars has two moons, Phobos and Deimos."), (), 1.0, ("gen-b",), 0.9),
    Candidate("gen-b", Generation("Mars has three moons."), (), 0.0, (), 0.1),
)


def make_answer(verdict: Verdict, text: str = "", citations=CITATIONS, candidates=CANDIDATES) -> Answer:
    return Answer(trace_id="0123456789abcdef", question="What are the moons of Mars?", tier=RiskTier.HIGH,
                  verdict=verdict, answer=text, reason="competing answers", citations=citations,
                  agents=OUTCOMES, context=(), candidates=candidates, timings_ms={"retrieve": 40.0}, asked_at=0.0)


def cell(model, row, column, role=Qt.ItemDataRole.DisplayRole):
    return model.data(model.index(row, column), role)


def test_answered_shows_green_badge_answer_reason_trace_and_hides_positions(qtbot):
    view = AnswerView()
    qtbot.addWidget(view)
    view.show_answer(make_answer(Verdict.ANSWERED, "Mars has two small moons, Phobos and Deimos."))
    header = view.header
    assert header.badge.text() == "ANSWERED"
    assert style.VERDICT_BADGES[Verdict.ANSWERED][0] in header.badge.styleSheet()
    assert "Phobos" in header.answer.text()
    assert "competing answers" in header.reason.text() and "high risk" in header.reason.text()
    assert "0123456789abcdef" in header.trace.text()
    assert header.trace.textInteractionFlags() & Qt.TextInteractionFlag.TextSelectableByMouse
    assert view.positions_box.isHidden()


def test_abstained_shows_amber_badge_and_every_position(qtbot):
    view = AnswerView()
    qtbot.addWidget(view)
    view.show_answer(make_answer(Verdict.ABSTAINED))
    assert view.header.badge.text() == "ABSTAINED"
    assert style.VERDICT_BADGES[Verdict.ABSTAINED][0] in view.header.badge.styleSheet()
    assert "did not agree" in view.header.answer.text() and "Positions" in view.header.answer.text()
    assert not view.positions_box.isHidden()
    positions = view.positions_model
    assert [(cell(positions, r, 0), cell(positions, r, 1), cell(positions, r, 2)) for r in range(2)] == [
        ("gen-a", "100%", "Mars has two moons, Phobos and Deimos."), ("gen-b", "0%", "Mars has three moons.")]


def test_answer_table_models_pass_qt_model_tester(qtmodeltester):
    # Models of their own: the view's are deleted with it before the tester's teardown runs.
    for columns, records in ((OUTCOME_COLUMNS, OUTCOMES), (POSITION_COLUMNS, CANDIDATES)):
        model = RecordTableModel(columns)
        model.set_records(records)
        qtmodeltester.check(model, force_py=True)
        model.set_records(records[:1])
        qtmodeltester.check(model, force_py=True)


def test_no_answer_shows_grey_badge(qtbot):
    view = AnswerView()
    qtbot.addWidget(view)
    view.show_answer(make_answer(Verdict.NO_ANSWER, citations=(), candidates=()))
    assert view.header.badge.text() == "NO ANSWER"
    assert style.VERDICT_BADGES[Verdict.NO_ANSWER][0] in view.header.badge.styleSheet()
    assert view.citations.list.count() == 0
    assert view.citations.detail.toPlainText() == ""


def test_clicking_a_citation_shows_its_title_source_and_full_text(qtbot):
    view = AnswerView()
    qtbot.addWidget(view)
    view.show()
    view.show_answer(make_answer(Verdict.ANSWERED, "Two: Phobos and Deimos."))
    citations = view.citations
    assert [citations.list.item(i).text() for i in range(citations.list.count())] == [
        "Moons of Mars — Planetary Science Encyclopedia", "Phobos and Deimos — Space Agency Fact Sheet"]
    assert "Asaph Hall" in citations.detail.toPlainText()     # the first one is shown without a click

    second = citations.list.visualItemRect(citations.list.item(1)).center()
    qtbot.mouseClick(citations.list.viewport(), Qt.MouseButton.LeftButton, pos=second)
    shown = citations.detail.toPlainText()
    assert "Phobos and Deimos" in shown and "Space Agency Fact Sheet" in shown
    assert "Deimos takes about 30 hours." in shown and "mars-moons-2#0" in shown
    assert "Asaph Hall" not in shown


def test_agent_outcomes_table_lists_every_call_with_its_status(qtbot):
    view = AnswerView()
    qtbot.addWidget(view)
    view.show_answer(make_answer(Verdict.ANSWERED, "x"))
    model = view.outcomes_model
    rows = [[cell(model, r, c) for c in range(model.columnCount())] for r in range(model.rowCount())]
    assert rows[0] == ["ret-a", "retriever", "ok", "42", "8", ""]
    assert rows[1] == ["ret-dead", "retriever", "down", "2", "0", "connection refused"]
    assert cell(model, 0, 2, Qt.ItemDataRole.ForegroundRole) == style.GREEN
    assert cell(model, 1, 2, Qt.ItemDataRole.ForegroundRole) == style.RED
