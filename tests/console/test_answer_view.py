"""How an answer is shown, from Answer values built by hand (no fleet needed): header, citations,
the agents' calls; the evidence tabs have tests of their own (test_evidence_view.py)."""
from __future__ import annotations

import dataclasses

from PySide6.QtCore import Qt

from console import style
from console.panels.evidence import CANDIDATE_COLUMNS
from console.panels.answer import OUTCOME_COLUMNS, TAB_CITATIONS, TAB_GENERATORS, TAB_NAMES, AnswerView
from console.table_model import RecordTableModel
from engine import AgentOutcome, CallStatus, Role, Verdict

from .answers import CITATIONS, OUTCOMES, make_answer


def cell(model, row, column, role=Qt.ItemDataRole.DisplayRole):
    return model.data(model.index(row, column), role)


def make_view(qtbot, show: bool = False) -> AnswerView:
    view = AnswerView()
    qtbot.addWidget(view)
    if show:
        view.resize(1280, 480)
        view.show()
        qtbot.waitExposed(view)
    return view


def test_answered_shows_green_badge_answer_reason_and_trace(qtbot):
    view = make_view(qtbot)
    view.show_answer(make_answer(Verdict.ANSWERED, "Mars has two small moons, Phobos and Deimos.", suspects=()))
    header = view.header
    assert header.badge.text() == "ANSWERED"
    assert style.tones().badges[Verdict.ANSWERED][0].name() in header.badge.styleSheet()
    assert "Phobos" in header.answer.text()
    assert "competing answers" in header.reason.text() and "high risk" in header.reason.text()
    assert "0123456789abcdef" in header.trace.text()
    assert header.trace.textInteractionFlags() & Qt.TextInteractionFlag.TextSelectableByMouse
    assert header.suspects.isHidden()                     # nobody suspected: no warning line
    assert view.tabs.currentIndex() == TAB_CITATIONS


def test_abstained_shows_amber_badge_and_opens_every_position(qtbot):
    view = make_view(qtbot)
    view.show_answer(make_answer(Verdict.ABSTAINED, ""))
    assert view.header.badge.text() == "ABSTAINED"
    assert style.tones().badges[Verdict.ABSTAINED][0].name() in view.header.badge.styleSheet()
    assert "did not agree" in view.header.answer.text() and "Generators" in view.header.answer.text()
    assert view.tabs.currentIndex() == TAB_GENERATORS          # the positions are the answer now
    candidates = view.candidates_model
    answer_column = [c.title for c in CANDIDATE_COLUMNS].index("Answer")
    assert [(cell(candidates, r, 0), cell(candidates, r, 1), cell(candidates, r, answer_column)) for r in range(2)] == [
        ("gen-a", "100%", "Mars has two moons, Phobos and Deimos."), ("gen-liar", "0%", "Mars has three moons.")]


def test_no_answer_shows_grey_badge_and_an_empty_detail(qtbot):
    view = make_view(qtbot)
    view.show_answer(make_answer(Verdict.NO_ANSWER, "", citations=(), candidates=(), context=(), excluded=(),
                                 suspects=()))
    assert view.header.badge.text() == "NO ANSWER"
    assert style.tones().badges[Verdict.NO_ANSWER][0].name() in view.header.badge.styleSheet()
    assert view.citations_list.count() == 0
    assert view.detail.toPlainText() == ""
    assert view.detail.placeholderText() == "This answer cites no passage."
    assert view.tabs.tabText(1) == "Context && kept out (0 in, 0 out)"     # && shows as one &


def test_clicking_a_citation_shows_its_title_source_and_full_text(qtbot):
    view = make_view(qtbot, show=True)
    view.show_answer(make_answer())
    citations = view.citations_list
    assert [citations.item(i).text() for i in range(citations.count())] == [
        "Moons of Mars — Planetary Science Encyclopedia", "Phobos and Deimos — Space Agency Fact Sheet"]
    assert view.detail_box.title() == "Cited passage"
    assert "Asaph Hall" in view.detail.toPlainText()     # the first one is shown without a click

    second = citations.visualItemRect(citations.item(1)).center()
    qtbot.mouseClick(citations.viewport(), Qt.MouseButton.LeftButton, pos=second)
    shown = view.detail.toPlainText()
    assert "Phobos and Deimos" in shown and "Space Agency Fact Sheet" in shown
    assert "Deimos takes about 30 hours." in shown and "mars-moons-2#0" in shown
    assert "Asaph Hall" not in shown


def test_tabs_are_named_with_counts_and_alarms_in_red(qtbot):
    view = make_view(qtbot)
    view.show_answer(make_answer())
    assert [view.tabs.tabText(i).replace("&&", "&") for i in range(view.tabs.count())] == [
        f"Citations ({len(CITATIONS)})", "Context & kept out (2 in, 3 out)", "Generators (2, 1 unsupported)",
        "Agents (4, 1 failed)"]
    assert all(view.tabs.tabText(i).replace("&&", "&").startswith(name) for i, name in enumerate(TAB_NAMES))
    bar = view.tabs.tabBar()
    assert bar.tabTextColor(TAB_CITATIONS) != style.tones().bad
    assert [bar.tabTextColor(i) == style.tones().bad for i in (1, 2, 3)] == [True, True, True]


def test_agent_outcomes_tab_lists_every_call_with_its_status(qtbot):
    view = make_view(qtbot)
    view.show_answer(make_answer())
    model = view.outcomes_model
    rows = [[cell(model, r, c) for c in range(model.columnCount())] for r in range(model.rowCount())]
    assert rows[0] == ["ret-a", "retriever", "ok", "42", "8", "", ""]
    assert rows[1] == ["ret-dead", "retriever", "down", "2", "0", "", "connection refused"]
    assert cell(model, 0, 2, Qt.ItemDataRole.ForegroundRole) == style.tones().good
    assert cell(model, 1, 2, Qt.ItemDataRole.ForegroundRole) == style.tones().bad


def test_an_llms_late_call_and_reply_form_are_shown(qtbot):
    """Issue #13: a late call is amber like a timeout, and an LLM's reply form has its own column."""
    answer = make_answer()
    late = AgentOutcome("gen-llm", Role.GENERATOR, CallStatus.LATE, 30000.0,
                        "no reply by the question's 30 s deadline: decided without it", mode="json-schema")
    view = make_view(qtbot)
    view.show_answer(dataclasses.replace(answer, agents=answer.agents + (late,)))
    model = view.outcomes_model
    row = model.rowCount() - 1
    assert [cell(model, row, c) for c in range(model.columnCount())] == [
        "gen-llm", "generator", "late", "30,000", "0", "json-schema",
        "no reply by the question's 30 s deadline: decided without it"]
    assert cell(model, row, 2, Qt.ItemDataRole.ForegroundRole) == style.tones().warn
    view.show_tab(3)
    view.outcomes_table.setCurrentIndex(model.index(row, 0))
    assert "reply form json-schema" in view.detail.toPlainText()

    view.show_tab(3)
    view.outcomes_table.setCurrentIndex(model.index(1, 0))
    assert view.detail_box.title() == "Agent call"
    assert "connection refused" in view.detail.toPlainText()


def test_outcome_model_passes_qt_model_tester(qtmodeltester):
    # A model of its own: the view's are deleted with it before the tester's teardown runs.
    model = RecordTableModel(OUTCOME_COLUMNS)
    model.set_records(OUTCOMES)
    qtmodeltester.check(model, force_py=True)
    model.set_records(OUTCOMES[:1])
    qtmodeltester.check(model, force_py=True)


def test_a_new_answer_replaces_the_last_one_everywhere(qtbot):
    view = make_view(qtbot)
    view.show_answer(make_answer())
    view.show_answer(make_answer(candidates=(), context=(), excluded=(), suspects=(), citations=CITATIONS[:1],
                                 trace_id="feedfacefeedface"))
    assert view.citations_list.count() == 1
    assert view.passages_model.rowCount() == 0
    assert view.candidates_model.rowCount() == 0 and view.checks_model.rowCount() == 0
    assert view.header.suspects.isHidden()
    assert "feedfacefeedface" in view.header.trace.text()


def test_an_answer_that_starts_with_a_tag_is_shown_as_its_text_never_as_markup(qtbot):
    # Issue #15's first case: the header label was left to Qt's AutoText, which drew this green and hid a word.
    hostile = ('<span style="color:green">Verified by every agent.</span> <span style="font-size:1px">hidden</span> '
               'Voyager 2 was first.')
    view = make_view(qtbot)
    view.show_answer(make_answer(Verdict.ANSWERED, hostile, reason="<b>trust me</b>", suspects=()))
    header = view.header
    assert header.answer.textFormat() == Qt.TextFormat.PlainText and header.answer.text() == hostile
    assert "&lt;b&gt;trust me&lt;/b&gt;" in header.reason.text()       # the reason's agent words are escaped
    for label in (header.badge, header.answer, header.trace, header.stages, header.cascade):
        assert label.textFormat() == Qt.TextFormat.PlainText
