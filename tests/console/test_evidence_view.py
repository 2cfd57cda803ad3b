"""The evidence tabs: passages in context and kept out (flags, notes, detail), every generator's
candidate with its claim checks, and the suspects line; from hand-built answers."""
from __future__ import annotations

import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QColor

from console import style
from console.panels.answer import TAB_GENERATORS, TAB_PASSAGES, AnswerView
from console.panels.evidence import (CANDIDATE_COLUMNS, CHECK_COLUMNS, PASSAGE_COLUMNS, PASSAGE_FLAGS_COLUMN,
                                     diff_html, kept_out_background, passage_rows)
from console.table_model import VALUE_ROLE, RecordTableModel

from .answers import (CANDIDATES, CONTEXT, ECHO, ECHO_NOTE, ECHO_TEXT, EXCLUDED, FABRICATED_REASON, LONELY, MOONS,
                      SUSPECT_REASON, TAMPERED, WEAK_REASON, make_answer)

PASSAGE = {column.title: position for position, column in enumerate(PASSAGE_COLUMNS)}
CANDIDATE = {column.title: position for position, column in enumerate(CANDIDATE_COLUMNS)}
CHECK = {column.title: position for position, column in enumerate(CHECK_COLUMNS)}


def cell(model, row, column, role=Qt.ItemDataRole.DisplayRole):
    return model.data(model.index(row, column), role)


def make_view(qtbot) -> AnswerView:
    view = AnswerView()
    qtbot.addWidget(view)
    view.resize(1280, 480)
    view.show()
    qtbot.waitExposed(view)
    return view


def row_of(model, predicate) -> int:
    return next(r for r in range(model.rowCount()) if predicate(model.record(r)))


def click_row(qtbot, table, row: int, column: int = 0) -> None:
    table.scrollTo(table.model().index(row, column))
    point = table.visualRect(table.model().index(row, column)).center()
    qtbot.mouseClick(table.viewport(), Qt.MouseButton.LeftButton, pos=point)


@pytest.mark.parametrize("columns, records, tint", [
    (PASSAGE_COLUMNS, passage_rows(CONTEXT, EXCLUDED), kept_out_background),
    (CANDIDATE_COLUMNS, CANDIDATES, None),
    (CHECK_COLUMNS, CANDIDATES[1].checks, None),
], ids=["passages", "candidates", "claim-checks"])
def test_evidence_models_pass_qt_model_tester(qtmodeltester, columns, records, tint):
    # A model of its own: the view's are deleted with the view before the tester's teardown runs.
    # (Each check() connects the tester once more, so a reset after a second check() would be
    # reported twice: two checks per model.)
    model = RecordTableModel(columns, row_background=tint)
    model.set_records(records)
    qtmodeltester.check(model, force_py=True)
    model.set_records(())
    qtmodeltester.check(model, force_py=True)


def test_passages_list_the_context_then_flagged_then_unsupported_kept_out(qtbot):
    view = make_view(qtbot)
    view.show_answer(make_answer())
    model = view.passages_model
    assert [(r.status, r.passage.chunk.id, r.flags) for r in model.records()] == [
        ("in context", "mars-moons#0", ()), ("in context", "mars-moons-2#0", ()),
        ("kept out", "mars-third-moon#0", ("echo",)), ("kept out", "mars-moons#0", ("disputed", "tampered")),
        ("kept out", "olympus-mons#0", ())]
    assert [model.headerData(c, Qt.Orientation.Horizontal) for c in range(model.columnCount())] == [
        "Status", "Flags", "Chunk", "Support", "Returned by", "Title", "Score", "Kinds", "Metadata", "Note"]
    assert [cell(model, 0, c) for c in range(model.columnCount())] == [
        "in context", "", "mars-moons#0", "78%", "ret-a, ret-b, ret-c", "Moons of Mars", "0.046",
        "bm25, dense-minilm", "0.80", ""]


def test_an_echo_passage_kept_out_shows_its_flag_note_and_a_suspect_warning(qtbot):
    view = make_view(qtbot)
    view.show_answer(make_answer())
    model = view.passages_model
    echo = row_of(model, lambda r: r.passage is ECHO)
    assert cell(model, echo, PASSAGE["Status"]) == "kept out"
    assert cell(model, echo, PASSAGE["Status"], Qt.ItemDataRole.ForegroundRole) == style.tones().bad
    assert cell(model, echo, PASSAGE["Flags"]) == "echo"
    assert cell(model, echo, PASSAGE["Flags"], VALUE_ROLE) == ("echo",)          # what the chips are drawn from
    assert "PoisonedRAG" in cell(model, echo, PASSAGE["Flags"], Qt.ItemDataRole.ToolTipRole)
    assert cell(model, echo, PASSAGE["Returned by"]) == "ret-rogue"
    assert cell(model, echo, PASSAGE["Support"]) == "22%"
    assert cell(model, echo, PASSAGE["Note"]) == ECHO_NOTE
    # Kept-out rows are tinted across every column; rows in the context are not.
    assert all(cell(model, echo, c, Qt.ItemDataRole.BackgroundRole) == style.tones().bad_tint
               for c in range(model.columnCount()))
    assert cell(model, 0, PASSAGE["Note"], Qt.ItemDataRole.BackgroundRole) is None

    suspects = view.header.suspects
    assert suspects.isVisible()
    assert "⚠ Suspected:" in suspects.text() and "ret-rogue" in suspects.text() and SUSPECT_REASON in suspects.text()
    suspects.linkActivated.emit("#kept-out")             # "show the kept-out passages"
    assert view.tabs.currentIndex() == TAB_PASSAGES


def test_the_context_tab_opens_on_the_first_flagged_passage_and_a_click_shows_another(qtbot):
    view = make_view(qtbot)
    view.show_answer(make_answer())
    view.show_tab(TAB_PASSAGES)
    assert view.passages_table.currentIndex().row() == 2          # the echo: what needs attention first
    assert view.detail_box.title() == "Passage"
    shown = view.detail.toPlainText()
    assert ECHO_TEXT in shown and "Stargazers Forum" in shown and "mars-third-moon#0" in shown
    assert "KEPT OUT" in shown and "echo" in shown and ECHO_NOTE in shown

    click_row(qtbot, view.passages_table, row_of(view.passages_model, lambda r: r.passage is LONELY))
    shown = view.detail.toPlainText()
    assert "Olympus Mons is the largest volcano on Mars." in shown and "below quorum" in shown
    click_row(qtbot, view.passages_table, 0)
    shown = view.detail.toPlainText()
    assert "IN CONTEXT" in shown and MOONS.chunk.text in shown and "ret-a, ret-b, ret-c" in shown


def test_a_tampered_copy_is_shown_against_the_passage_it_edits(qtbot):
    view = make_view(qtbot)
    view.show_answer(make_answer())
    view.show_tab(TAB_PASSAGES)
    click_row(qtbot, view.passages_table, row_of(view.passages_model, lambda r: r.passage is TAMPERED))
    html = view.detail.toHtml()
    shown = view.detail.toPlainText()
    assert "tampered" in shown and "disputed" in shown and "a near-copy of [mars-moons#0]" in shown
    assert "Changes from the text in context" in shown
    assert "1877" in shown and "1926" in shown                    # the original number struck, the edit marked
    assert "line-through" in html


def test_diff_marks_removed_and_inserted_words():
    marked = diff_html("discovered in 1877 by Hall", "discovered in 1926 by Hall")
    assert marked.startswith("discovered in <s")
    assert "1877</s>" in marked and "1926</span>" in marked and marked.endswith("by Hall")


def test_flag_chips_are_painted_in_their_colours(qtbot):
    view = make_view(qtbot)
    view.show_answer(make_answer())
    view.show_tab(TAB_PASSAGES)
    table = view.passages_table
    table.clearSelection()                     # selection colour would hide the chip
    table.setCurrentIndex(table.model().index(0, 0))
    qtbot.wait(10)
    image = table.viewport().grab().toImage()
    rect = table.visualRect(table.model().index(row_of(view.passages_model, lambda r: r.passage is ECHO),
                                                PASSAGE_FLAGS_COLUMN))
    echo_colour = style.flag_chip_colours("echo")[0]
    colours = {QColor(image.pixel(x, rect.center().y())).name() for x in range(rect.left(), rect.right())}
    assert echo_colour.name() in colours


def test_selecting_a_candidate_lists_its_claim_checks_and_a_failed_claim_shows_why(qtbot):
    view = make_view(qtbot)
    view.show_answer(make_answer())
    view.show_tab(TAB_GENERATORS)
    candidates = view.candidates_model
    liar = row_of(candidates, lambda c: c.agent_id == "gen-liar")
    assert view.candidates_table.currentIndex().row() == liar      # the unsupported one is selected first
    assert cell(candidates, liar, CANDIDATE["Support"]) == "0%"
    assert cell(candidates, liar, CANDIDATE["Support"], Qt.ItemDataRole.ForegroundRole) == style.tones().bad
    assert cell(candidates, liar, CANDIDATE["Claims backed"]) == "0 of 2"
    assert cell(candidates, liar, CANDIDATE["Credibility"]) == "0.13"
    assert cell(candidates, liar, CANDIDATE["Agrees with"]) == "no one"
    assert cell(candidates, liar, CANDIDATE["Agent"], Qt.ItemDataRole.BackgroundRole) == style.tones().bad_tint

    click_row(qtbot, view.candidates_table, row_of(candidates, lambda c: c.agent_id == "gen-a"))
    checks = view.checks_model
    assert view.checks_box.title() == "Claim checks of gen-a"
    assert [(cell(checks, r, CHECK[""]), cell(checks, r, CHECK["Claim"])) for r in range(checks.rowCount())] == [
        ("✓", "Mars has two small moons, Phobos and Deimos.")]
    assert cell(candidates, 0, CANDIDATE["Agrees with"]) == "gen-b"

    click_row(qtbot, view.candidates_table, liar)
    assert view.checks_box.title() == "Claim checks of gen-liar"
    assert view.detail_box.title() == "Generator"
    assert "Mars has three moons." in view.detail.toPlainText() and "A recent survey was found." in view.detail.toPlainText()
    rows = [[cell(checks, r, c) for c in range(checks.columnCount())] for r in range(checks.rowCount())]
    assert rows == [["✗", "not enough evidence", "According to a 2023 survey, Mars has a third moon.", "0%",
                     FABRICATED_REASON, "survey-2023#0"],
                    ["✗", "not enough evidence", "Deimos was discovered in 1926.", "40%", WEAK_REASON,
                     "mars-moons#0"]]
    assert cell(checks, 0, CHECK[""], Qt.ItemDataRole.ForegroundRole) == style.tones().bad

    click_row(qtbot, view.checks_table, 0)
    assert view.detail_box.title() == "Claim check"
    shown = view.detail.toPlainText()
    assert "✗ NOT SUPPORTED" in shown and FABRICATED_REASON in shown
    assert "[survey-2023#0] was not among the passages the fleet retrieved" in shown
    click_row(qtbot, view.checks_table, 1)
    shown = view.detail.toPlainText()
    assert WEAK_REASON in shown and "coverage 40%" in shown
    assert MOONS.chunk.text in shown            # the cited passage (the context's copy, not the tampered one)
