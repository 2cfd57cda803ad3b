"""The Cascade panel (CHARM's stage scores), the answer view's stage line, and their wiring.

The engine does not emit cascade events yet: the panel is fed CascadeScored / CascadeResolved events and
Answers built by hand (tests/console/answers.py). Assertions read the panel's data (bar heights, labels,
table cells), not pixels."""
from __future__ import annotations

import time

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QPlainTextEdit

from console import style
from console.main_window import MainWindow
from console.panels.answer import AnswerView
from console.panels.cascade import EMPTY_HINT, MAX_QUESTIONS, THETA_DEFAULT, UNWATCHED_HINT, CascadePanel
from console.panels.cascade_model import STAGE_COLUMNS, STRIP_COLUMNS
from console.service import EngineService
from console.stage_text import stage_chain
from engine.cascade.types import CascadeOutcome
from engine.events import CascadeResolved, CascadeScored
from engine.stages.model import StageKind

from .answers import ROLLBACK_REASON, SCORES, STAGES, make_answer, rollback_outcome, score, stage, with_cascade

STRIP = {column.title: position for position, column in enumerate(STRIP_COLUMNS)}
STAGE = {column.title: position for position, column in enumerate(STAGE_COLUMNS)}
DISPLAY, BACKGROUND = Qt.ItemDataRole.DisplayRole, Qt.ItemDataRole.BackgroundRole
CLEAN = (score(StageKind.FORMULATE, 0, 0.0, 0.1, 0.1), score(StageKind.RETRIEVE, 1, 0.2, 0.1, 0.3),
         score(StageKind.SYNTHESIZE, 2, 0.1, 0.2, 0.2))
QUESTION = "What are the moons of Mars?"


def cell(model, row, title, columns, role=DISPLAY):
    return model.data(model.index(row, columns[title]), role)


def make_panel(qtbot, show: bool = False) -> CascadePanel:
    panel = CascadePanel()
    qtbot.addWidget(panel)
    if show:
        panel.resize(1200, 700)
        panel.show()
        qtbot.waitExposed(panel)
    return panel


def feed(panel: CascadePanel, trace_id: str, scores=SCORES, outcome: CascadeOutcome | None = None,
         question: str = QUESTION) -> None:
    """What the engine sends for one question: QuestionReceived, a CascadeScored per boundary, CascadeResolved."""
    panel.start_question(trace_id, question)
    for position, stage_score in enumerate(scores):
        panel.add_score(CascadeScored(stage_score, trace_id, time.time() + position))
    if outcome is not None:
        panel.resolve(CascadeResolved(outcome, trace_id, question, time.time()))


def clean_outcome() -> CascadeOutcome:
    return CascadeOutcome(False, scores=CLEAN)


def click_row(qtbot, table, row: int) -> None:
    rect = table.visualRect(table.model().index(row, 0))
    qtbot.mouseClick(table.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())


def test_an_empty_panel_says_what_will_appear(qtbot):
    panel = make_panel(qtbot)
    assert panel.plot_stack.currentWidget() is panel.hint
    assert panel.hint.text() == EMPTY_HINT
    assert panel.strip_model.rowCount() == 0 and panel.stages_model.rowCount() == 0
    assert panel.bar_heights() == {"SFV": [], "CSCT": [], "CPM": [], "CRT p": []}
    assert panel.tab_title() == "Cascade"


def test_scores_grow_the_bars_stage_by_stage_with_labelled_stages(qtbot):
    panel = make_panel(qtbot)
    panel.start_question("t-1", QUESTION)
    assert panel.selected == "t-1" and panel.plot_stack.currentWidget() is panel.hint    # waiting for stage 1
    for count, stage_score in enumerate(SCORES, start=1):
        panel.add_score(CascadeScored(stage_score, "t-1", time.time()))
        heights = panel.bar_heights()
        assert [len(h) for h in heights.values()] == [count] * 4
    assert panel.plot_stack.currentWidget() is panel.plot
    heights = panel.bar_heights()
    assert heights["SFV"] == [s.a_sfv for s in SCORES]
    assert heights["CSCT"] == [s.a_csct for s in SCORES]
    assert heights["CPM"] == [s.a_cpm for s in SCORES]
    assert heights["CRT p"] == [s.p for s in SCORES]
    assert panel.stage_labels() == ["1 formulate", "2 retrieve", "2 retrieve ↻", "3 reason ↻", "4 synthesize ↻"]
    # Four bars side by side per stage, centred on the stage's slot.
    xs = [list(bar.opts["x"]) for bar in panel.bars.values()]
    assert all(xs[0][i] < xs[1][i] < xs[2][i] < xs[3][i] for i in range(len(SCORES)))
    assert abs((xs[0][2] + xs[3][2]) / 2 - 2) < 1e-9
    assert panel.outcome_label.text() == "Running: 5 stage(s) scored so far"


def test_a_later_hop_and_a_second_rerun_are_labelled_as_such(qtbot):
    panel = make_panel(qtbot)
    feed(panel, "t-hop", (score(StageKind.RETRIEVE, 3, 0.1, 0.2, 0.3, hop=1),
                          score(StageKind.REASON, 4, 0.1, 0.2, 0.3, hop=1, attempt=2)))
    assert panel.stage_labels() == ["4 retrieve·h2", "5 reason·h2 ↻2"]
    assert cell(panel.stages_model, 0, "Stage", STAGE) == "4 retrieve·h2"
    assert stage_chain([stage(StageKind.REASON, 4, 0.5, attempt=2, hop=1)]) == "reason·h2 50% (re-run 2)"


def test_theta_is_a_dashed_red_line_at_the_threshold_and_follows_set_threshold(qtbot):
    panel = make_panel(qtbot)
    line = panel.theta_line
    assert panel.theta == THETA_DEFAULT == 0.55
    assert line.value() == 0.55 and line.angle == 0
    assert line.pen.style() == Qt.PenStyle.DashLine and line.pen.color() == style.tones().bad
    assert line.label.format == "θ 0.55" and panel.theta_legend.text() == "θ 0.55"
    assert line in panel.plot.getPlotItem().items

    panel.set_threshold(0.7)
    assert line.value() == 0.7
    assert line.label.format == "θ 0.70" and panel.theta_legend.text() == "θ 0.70"
    assert CascadePanel(theta=0.4).theta_line.value() == 0.4


def test_a_fired_stage_is_marked_and_spelled_out(qtbot):
    panel = make_panel(qtbot)
    feed(panel, "t-1", outcome=rollback_outcome())
    assert panel.fired_positions() == [1]                          # the red ▲ over stage 2
    assert list(panel.fired_tint.opts["x"]) == [1]                 # and its group tinted
    assert panel.fired_marks.opts["symbol"] == "t1"
    stages = panel.stages_model
    assert cell(stages, 1, "Stage", STAGE, BACKGROUND) == style.tones().bad_tint
    assert cell(stages, 0, "Stage", STAGE, BACKGROUND) is None
    # The fired stage is the one spelled out below the table.
    assert panel.stages_table.currentIndex().row() == 1
    detail = panel.stage_pane.toPlainText()
    assert detail.startswith("2 retrieve — fired: context poisoning")
    assert "CRT p 0.68 ≥ θ 0.55" in detail and "Suspect agents: ret-rogue" in detail
    assert panel.outcome_label.text() == "⚠ context poisoning at stage 2 (retrieve) · M4 rollback · resolved"
    assert panel.reason_label.text() == ROLLBACK_REASON


def test_the_strip_lists_questions_newest_first_with_their_outcome(qtbot):
    panel = make_panel(qtbot)
    feed(panel, "t-clean", CLEAN, clean_outcome(), question="How long is a day on Mars?")
    feed(panel, "t-halted", outcome=rollback_outcome(resolved=False))
    strip = panel.strip_model
    rows = [[cell(strip, r, title, STRIP) for title in ("Question", "Max p", "Fired", "Type", "Mitigation", "Outcome")]
            for r in range(strip.rowCount())]
    assert rows == [[QUESTION, "0.68", "yes", "context poisoning", "M4 rollback", "halted for review"],
                    ["How long is a day on Mars?", "0.18", "no", "—", "—", "clean"]]
    assert cell(strip, 0, "Outcome", STRIP, Qt.ItemDataRole.ForegroundRole) == style.tones().bad
    assert cell(strip, 0, "Time", STRIP)                             # HH:MM:SS of its first event
    assert panel.tab_title() == "Cascade (1 halted)"


def test_a_new_question_is_shown_live_unless_the_operator_picked_an_older_one(qtbot):
    panel = make_panel(qtbot, show=True)
    feed(panel, "t-1", CLEAN, clean_outcome())
    feed(panel, "t-2", outcome=rollback_outcome())
    assert panel.selected == "t-2" and panel.following_latest()

    click_row(qtbot, panel.strip, 1)                                # the operator looks at the older question
    assert panel.selected == "t-1" and not panel.following_latest()
    assert panel.bar_heights()["CRT p"] == [s.p for s in CLEAN]
    assert panel.stage_labels() == ["1 formulate", "2 retrieve", "3 synthesize"]

    feed(panel, "t-3", CLEAN[:1])                                   # a new question does not take the plot away
    assert [r.trace_id for r in panel.questions()] == ["t-3", "t-2", "t-1"]
    assert panel.selected == "t-1" and panel.strip.currentIndex().row() == 2
    assert panel.bar_heights()["CRT p"] == [s.p for s in CLEAN]

    click_row(qtbot, panel.strip, 0)                                # back on the newest: follow live again
    assert panel.selected == "t-3" and panel.following_latest()
    feed(panel, "t-4", SCORES[:2])
    assert panel.selected == "t-4" and panel.stage_labels() == ["1 formulate", "2 retrieve"]
    assert panel.strip.currentIndex().row() == 0


def test_the_strip_keeps_the_latest_questions_only(qtbot):
    panel = make_panel(qtbot)
    for n in range(MAX_QUESTIONS + 3):
        feed(panel, f"t-{n}", CLEAN[:1])
    assert panel.strip_model.rowCount() == MAX_QUESTIONS
    assert panel.questions()[0].trace_id == f"t-{MAX_QUESTIONS + 2}"
    assert panel.questions()[-1].trace_id == "t-3"
    assert panel.record("t-0") is None
    assert panel.selected == f"t-{MAX_QUESTIONS + 2}"


def test_show_answer_plots_the_answers_cascade_with_each_stages_confidence(qtbot):
    panel = make_panel(qtbot)
    feed(panel, "t-other", CLEAN, clean_outcome())
    panel.show_answer(with_cascade("t-answer"))
    assert panel.selected == "t-answer"
    assert panel.bar_heights()["CRT p"] == [s.p for s in SCORES]
    assert panel.fired_positions() == [1]
    assert [cell(panel.stages_model, r, "Conf.", STAGE) for r in range(len(STAGES))] == [
        "100%", "90%", "80%", "75%", "85%"]
    assert panel.title.full_text() == f"Cascade — {QUESTION}"
    assert cell(panel.strip_model, 0, "Mitigation", STRIP) == "M4 rollback"

    # Live events already seen, then the answer: each boundary counts once.
    feed(panel, "t-live", outcome=rollback_outcome())
    panel.add_answer(with_cascade("t-live"))
    assert len(panel.record("t-live").scores) == len(SCORES)


def test_an_answer_the_monitor_did_not_watch_says_so(qtbot):
    panel = make_panel(qtbot)
    panel.show_answer(make_answer(trace_id="t-plain"))
    assert panel.plot_stack.currentWidget() is panel.hint and panel.hint.text() == UNWATCHED_HINT
    assert cell(panel.strip_model, 0, "Outcome", STRIP) == "not watched"


def test_untrusted_text_is_shown_literally(qtbot):
    panel = make_panel(qtbot, show=True)
    bold, formula = "<b>x</b>", '=HYPERLINK("http://evil.example","click")'
    question = f"Which moon is {bold}? " * 12                       # long: the title is elided, with a tooltip
    poisoned = score(StageKind.RETRIEVE, 1, 0.9, 0.9, 0.9, fired=True, reasons=(bold, formula))
    outcome = CascadeOutcome(True, 1, None, rollback_outcome().mitigation, False, f"halted: {bold} {formula}",
                             (poisoned,))
    feed(panel, "t-evil", (poisoned,), outcome, question=question)

    for label in (panel.reason_label, panel.outcome_label, panel.title, panel.hint):
        assert label.textFormat() == Qt.TextFormat.PlainText
    assert isinstance(panel.stage_pane, QPlainTextEdit)            # no rich text at all
    assert bold in panel.stage_pane.toPlainText() and formula in panel.stage_pane.toPlainText()
    assert panel.reason_label.text() == f"halted: {bold} {formula}"
    assert cell(panel.stages_model, 0, "Reasons", STAGE) == f"{bold}; {formula}"
    assert cell(panel.strip_model, 0, "Question", STRIP) == question.strip()       # one line, trimmed
    assert panel.title.full_text() == f"Cascade — {question}"
    assert "&lt;b&gt;x&lt;/b&gt;" in panel.title.toolTip()          # escaped: the tooltip shows it literally


def test_the_answer_view_lists_the_stages_and_the_cascade_outcome(qtbot):
    view = AnswerView()
    qtbot.addWidget(view)
    view.show_answer(with_cascade())
    header = view.header
    assert header.stages.text() == ("Stages: formulate 100% → retrieve 90% → retrieve 80% (re-run) → "
                                    "reason 75% (re-run) → synthesize 85% (re-run)")
    assert header.cascade.text() == "⚠ Cascade: context poisoning at stage 2 (retrieve) · M4 rollback · resolved"
    assert header.stages.textFormat() == header.cascade.textFormat() == Qt.TextFormat.PlainText
    assert not header.stages.isHidden() and not header.cascade.isHidden()

    view.show_answer(with_cascade(resolved=False))
    assert header.cascade.text().endswith("M4 rollback · halted for review")
    assert style.tones().bad.name() in header.cascade.styleSheet()

    view.show_answer(make_answer(stages=STAGES, cascade=CascadeOutcome(False, scores=CLEAN)))
    assert not header.stages.isHidden() and header.cascade.isHidden()     # clean: no cascade line
    view.show_answer(make_answer())
    assert header.stages.isHidden() and header.cascade.isHidden() and header.cascade_button.isHidden()


def test_the_service_turns_cascade_events_into_signals(qtbot, engine):
    service = EngineService(engine)
    scored = CascadeScored(SCORES[1], "t-1", time.time())
    resolved = CascadeResolved(rollback_outcome(), "t-1", QUESTION, time.time())
    with qtbot.waitSignal(service.cascade.sig_scored) as got:
        engine._emit(scored)
    assert got.args == [scored]
    with qtbot.waitSignal(service.cascade.sig_resolved) as got:
        engine._emit(resolved)
    assert got.args == [resolved]


def test_the_main_window_has_a_live_cascade_tab(qtbot, engine):
    service = EngineService(engine)
    window = MainWindow(service)
    qtbot.addWidget(window)
    window.show()
    qtbot.waitExposed(window)
    panel = window.cascade_panel
    assert window.panels["cascade"] is panel and window.dock_title("cascade") == "Cascade"

    service.questions.sig_started.emit("t-1", QUESTION)
    for stage_score in SCORES:
        service.cascade.sig_scored.emit(CascadeScored(stage_score, "t-1", time.time()))
    service.cascade.sig_resolved.emit(CascadeResolved(rollback_outcome(resolved=False), "t-1", QUESTION, time.time()))
    assert panel.bar_heights()["CRT p"] == [s.p for s in SCORES]
    assert window.dock_title("cascade") == "Cascade (1 halted)"
    assert window.needs_attention("cascade")

    answer = with_cascade("t-2")
    service.questions.sig_answer.emit(answer)                                 # the ask panel shows it; the strip has it
    assert panel.record("t-2") is not None
    window.show_trust()
    header = window.ask_panel.answer_view.header
    assert header.cascade_button.isVisible()
    qtbot.mouseClick(header.cascade_button, Qt.MouseButton.LeftButton)
    assert window.is_front("cascade") and panel.selected == "t-2"
