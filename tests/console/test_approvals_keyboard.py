"""The Approvals panel by keyboard, against the fake engine: J/K/N move, A/R and the reason list decide and the
selection moves on to the next pending item; several items are decided at once and a partial failure is
reported item by item; filters by status, tier, age and text; the detail pane shows claims with their labels
and evidence, the cascade scores and the agents, and agents' text stays literal; the models pass the tester.

The panel sits in a host widget that binds the approval actions exactly as MainWindow does (console/actions.py
keys, scoped to the panel), so key presses go through the real shortcuts."""
from __future__ import annotations

import dataclasses
import json

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QVBoxLayout, QWidget

from engine import (AgentOutcome, CallStatus, Candidate, Claim, Generation, InputError, RiskTier, Role, Verdict,
                    to_jsonable)
from engine.types import ClaimCheck, ClaimLabel
from engine.review import DecisionOutcome, ReviewItem, ReviewStatus
from engine.review.payload import candidates_from_payload

from console.actions import ActionBook
from console.main_window import bind_approval_actions
from console.panels.approvals import ApprovalsPanel, outcomes_text
from console.panels.approvals_model import AgeFilter, ReviewFilter, ReviewFilterProxy, ReviewModel, StatusFilter

from . import answers, recorded
from .fakes import FakeEngine, fake_service

T0 = recorded.T0
HOUR = 3600.0


class BulkFakeEngine(FakeEngine):
    """The fake engine with Engine.decide_many's contract: each item decided as `decide` does, a refusal
    per item (with the item as the store has it), a bad reason refusing them all."""

    async def decide_many(self, item_ids, approve, operator, reason, note=""):
        self._record("decide_many", tuple(item_ids), approve, operator, reason, note)
        if not reason.strip():
            raise InputError("no reason is not a reason to decide")
        outcomes = []
        for item_id in dict.fromkeys(item_ids):
            try:
                outcomes.append(DecisionOutcome(item_id, await self.decide(item_id, approve, operator, reason, note)))
            except InputError as refused:
                outcomes.append(DecisionOutcome(item_id, self.review.by_id.get(int(item_id)), str(refused)))
        return tuple(outcomes)

    def decide_elsewhere(self, item_id: int, operator: str = "alice",
                         reason: str = "matches operator knowledge") -> None:
        """Another console (or `main.py review`) approved the item meanwhile: the store has it, the panel not yet."""
        item = self.review.by_id[item_id]
        self.review.by_id[item_id] = dataclasses.replace(item, status=ReviewStatus.APPROVED, decided_by=operator,
                                                         reason=reason, decided_at=self.clock())


class Clock:
    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def keyboard_panel(qtbot, session, clock=None) -> ApprovalsPanel:
    """The panel in a window of its own, its actions attached and bound as MainWindow does."""
    host = QWidget()
    panel = ApprovalsPanel(session.service, clock=clock or Clock(T0 + HOUR))
    QVBoxLayout(host).addWidget(panel)
    book = ActionBook(host)
    book.attach("approvals", panel)
    bind_approval_actions(book, panel)
    qtbot.addWidget(host)
    session.host = host          # qtbot holds widgets weakly: the session keeps the window alive
    host.resize(1280, 520)
    host.show()
    host.activateWindow()
    qtbot.waitActive(host)
    qtbot.waitUntil(lambda: panel.model.rowCount() == len(session.engine.review.by_id), timeout=2_000)
    panel.focus_target().setFocus()
    return panel


def ids_in_view(panel: ApprovalsPanel) -> list[int]:
    return [item.id for item in panel.proxy.records()]


def selected_ids(panel: ApprovalsPanel) -> list[int]:
    return [item.id for item in panel.selected_items()]


def press(qtbot, panel: ApprovalsPanel, key, modifier=Qt.KeyboardModifier.NoModifier) -> None:
    """A key where the operator's focus is."""
    qtbot.keyClick(panel.window().focusWidget(), key, modifier)


# --- keyboard flow ---------------------------------------------------------------------------------
def test_keyboard_only_flow_approves_and_rejects_and_moves_to_the_next_pending_item(qtbot, qasync_loop):
    engine = BulkFakeEngine(reviews=[recorded.review_item(1), recorded.review_item(2, tier=RiskTier.MEDIUM,
                                                                                   created_offset_s=60),
                                     recorded.review_item(3, status=ReviewStatus.REJECTED, created_offset_s=30),
                                     recorded.review_item(4, created_offset_s=120)])
    session = fake_service(qtbot, engine)
    panel = keyboard_panel(qtbot, session)
    operator = session.service.operator
    assert ids_in_view(panel) == [1, 2, 4, 3] and panel.current_item().id == 1
    assert panel.window().focusWidget() is panel.table

    press(qtbot, panel, Qt.Key.Key_J)
    assert panel.current_item().id == 2
    press(qtbot, panel, Qt.Key.Key_J)
    press(qtbot, panel, Qt.Key.Key_J)
    assert panel.current_item().id == 3
    press(qtbot, panel, Qt.Key.Key_K)
    assert panel.current_item().id == 4
    press(qtbot, panel, Qt.Key.Key_N)                    # the next pending one, wrapping round
    assert panel.current_item().id == 1
    press(qtbot, panel, Qt.Key.Key_N)
    assert panel.current_item().id == 2

    # A opens the form with the reason list focused; Escape cancels and gives the table the focus back.
    press(qtbot, panel, Qt.Key.Key_A)
    assert panel.form.isVisible() and panel.form.title.text() == "Approve #2 because"
    assert panel.window().focusWidget() is panel.form.reason
    press(qtbot, panel, Qt.Key.Key_Escape)
    assert not panel.form.isVisible() and panel.window().focusWidget() is panel.table
    assert engine.called("decide") == []

    # A, Down (the second reason), Enter: #2 approved, and the selection moves on to #4.
    press(qtbot, panel, Qt.Key.Key_A)
    press(qtbot, panel, Qt.Key.Key_Down)
    assert panel.form.reason.currentText() == "matches operator knowledge"
    with qtbot.waitSignal(session.service.reviews.sig_changed, timeout=2_000):
        press(qtbot, panel, Qt.Key.Key_Return)
    assert engine.called("decide") == [(2, True, operator, "matches operator knowledge", "")]
    assert panel.model.record(panel.model.row_of(2)).status is ReviewStatus.APPROVED
    assert panel.current_item().id == 4 and not panel.form.isVisible()
    assert f"#2 approved by {operator}: matches operator knowledge" in panel.message.text()
    assert panel.window().focusWidget() is panel.table

    # R, Enter: #4 rejected for the first reason; the next pending item is #1 (wrapping round).
    press(qtbot, panel, Qt.Key.Key_R)
    assert panel.form.title.text() == "Reject #4 because"
    with qtbot.waitSignal(session.service.reviews.sig_changed, timeout=2_000):
        press(qtbot, panel, Qt.Key.Key_Return)
    assert panel.current_item().id == 1

    # R, "other" (the last reason), a typed note, Enter.
    press(qtbot, panel, Qt.Key.Key_R)
    for _ in range(4):
        press(qtbot, panel, Qt.Key.Key_Down)
    assert panel.form.reason.currentText() == "other"
    press(qtbot, panel, Qt.Key.Key_Return)               # "other" without a note: nothing happens
    assert panel.form.isVisible() and not panel.form.saving
    qtbot.keyClicks(panel.window().focusWidget(), "made up Nyx")    # typed in the list, it lands in the note
    assert panel.form.note.text() == "made up Nyx"
    with qtbot.waitSignal(session.service.reviews.sig_changed, timeout=2_000):
        press(qtbot, panel, Qt.Key.Key_Return)
    assert engine.called("decide")[1:] == [(4, False, operator, "factually wrong", ""),
                                           (1, False, operator, "other", "made up Nyx")]
    assert panel.model.count(ReviewStatus.PENDING) == 0
    assert panel.tab_title() == "Approvals" and not panel.needs_attention()
    assert not panel.select_next_pending()                # nothing waits any more
    press(qtbot, panel, Qt.Key.Key_A)                     # on a decided item A opens nothing and says why
    assert not panel.form.isVisible() and "Nothing to decide" in panel.message.text()
    assert session.errors == []


def test_a_decision_refused_by_the_engine_keeps_the_form_and_says_why(qtbot, qasync_loop):
    engine = BulkFakeEngine(reviews=[recorded.review_item(1), recorded.review_item(2, created_offset_s=60)])
    session = fake_service(qtbot, engine)
    panel = keyboard_panel(qtbot, session)
    press(qtbot, panel, Qt.Key.Key_R)
    engine.decide_elsewhere(1)
    with qtbot.waitSignal(session.service.reviews.sig_changed, timeout=2_000):     # the refresh after the refusal
        press(qtbot, panel, Qt.Key.Key_Return)
    assert panel.model.record(panel.model.row_of(1)).status is ReviewStatus.APPROVED
    assert not panel.form.isVisible()
    assert "#1 was approved by alice: matches operator knowledge meanwhile" in panel.message.text()
    assert panel.current_item().id == 1                  # the operator sees what happened to it
    assert session.errors == []


# --- several items at once -------------------------------------------------------------------------
def test_bulk_reject_reports_the_item_decided_elsewhere_and_keeps_it_selected(qtbot, qasync_loop):
    engine = BulkFakeEngine(reviews=[recorded.review_item(n, created_offset_s=60 * n) for n in (1, 2, 3, 4)])
    session = fake_service(qtbot, engine)
    panel = keyboard_panel(qtbot, session)
    operator = session.service.operator
    press(qtbot, panel, Qt.Key.Key_J, Qt.KeyboardModifier.ShiftModifier)
    press(qtbot, panel, Qt.Key.Key_J, Qt.KeyboardModifier.ShiftModifier)
    assert selected_ids(panel) == [1, 2, 3]
    assert panel.reject_button.text() == "Reject 3…" and panel.selection.text().startswith("3 selected: 3 pending")

    press(qtbot, panel, Qt.Key.Key_R)
    form = panel.form
    assert form.title.text() == "Reject 3 items because" and form.item_ids == (1, 2, 3) and form.confirm.text() == "Reject 3"
    engine.decide_elsewhere(2)                         # alice approves #2 while the form is open
    with qtbot.waitSignal(session.service.reviews.sig_decided_many, timeout=2_000):
        press(qtbot, panel, Qt.Key.Key_Return)
    assert engine.called("decide_many") == [((1, 2, 3), False, operator, "factually wrong", "")]
    status = {item.id: item.status for item in panel.model.records()}
    assert status == {1: ReviewStatus.REJECTED, 2: ReviewStatus.APPROVED, 3: ReviewStatus.REJECTED,
                      4: ReviewStatus.PENDING}
    assert panel.message.text().endswith("2 rejected; #2 failed: already approved by alice</span>")
    assert selected_ids(panel) == [2] and not form.isVisible()        # the failed item stays selected
    assert session.errors == []

    # Ctrl+A selects everything: the decided items are skipped, and the form says so.
    panel.table.setFocus()
    press(qtbot, panel, Qt.Key.Key_A, Qt.KeyboardModifier.ControlModifier)
    assert selected_ids(panel) == [1, 2, 3, 4]
    press(qtbot, panel, Qt.Key.Key_A)
    assert form.title.text() == "Approve #4 because" and form.item_ids == (4,)
    assert form.skipped.text() == "Skipped, decided already: #1, #2, #3"
    with qtbot.waitSignal(session.service.reviews.sig_changed, timeout=2_000):
        press(qtbot, panel, Qt.Key.Key_Return)
    assert panel.model.count(ReviewStatus.PENDING) == 0


def test_bulk_approve_of_every_pending_item_moves_on_and_a_refused_batch_keeps_the_form(qtbot, qasync_loop):
    engine = BulkFakeEngine(reviews=[recorded.review_item(n, created_offset_s=60 * n) for n in (1, 2, 3)])
    session = fake_service(qtbot, engine)
    panel = keyboard_panel(qtbot, session)
    panel.table.selectAll()
    panel.open_form(approve=True)
    with qtbot.waitSignal(session.service.reviews.sig_many_failed, timeout=2_000):
        panel.form.sig_confirmed.emit((1, 2, 3), True, " ", "")      # a reason the engine refuses for the whole batch
    assert panel.form.isVisible() and "no reason" in panel.form.hint.text()
    assert panel.model.count(ReviewStatus.PENDING) == 3
    with qtbot.waitSignal(session.service.reviews.sig_decided_many, timeout=2_000):
        press(qtbot, panel, Qt.Key.Key_Return)
    assert panel.model.count(ReviewStatus.APPROVED) == 3
    assert "3 approved" in panel.message.text() and "failed" not in panel.message.text()
    assert session.errors == []


def test_outcomes_text_names_each_failure_and_skip():
    approved_by_alice = dataclasses.replace(recorded.review_item(12), status=ReviewStatus.APPROVED, decided_by="alice")
    outcomes = (DecisionOutcome(1, recorded.review_item(1)), DecisionOutcome(12, approved_by_alice, "was decided"),
                DecisionOutcome(99, None, "review item #99 does not exist"))
    skipped = [dataclasses.replace(recorded.review_item(4), status=ReviewStatus.REJECTED)]
    assert outcomes_text(outcomes, False, skipped) == ("1 rejected; #12 failed: already approved by alice; "
                                                       "#99 failed: review item #99 does not exist; "
                                                       "#4 skipped: already rejected")


# --- filters ---------------------------------------------------------------------------------------
def filter_items() -> list[ReviewItem]:
    now = T0 + 3 * 24 * HOUR
    return [recorded.review_item(1, created_offset_s=0),                                      # 3 days old, high
            recorded.review_item(2, tier=RiskTier.MEDIUM, created_offset_s=now - T0 - 0.5 * HOUR,
                                 question="How many moons does Saturn have?"),               # 30 min, medium
            recorded.review_item(3, tier=RiskTier.LOW, created_offset_s=now - T0 - 5 * HOUR),   # 5 h, low
            recorded.review_item(4, status=ReviewStatus.APPROVED, created_offset_s=HOUR),      # decided, high
            recorded.review_item(5, tier=RiskTier.MEDIUM, status=ReviewStatus.REJECTED,
                                 created_offset_s=now - T0 - 2 * HOUR)]


def test_filters_by_status_tier_age_and_text_with_counts_in_the_summary(qtbot, qasync_loop):
    engine = BulkFakeEngine(reviews=filter_items())
    session = fake_service(qtbot, engine)
    clock = Clock(T0 + 3 * 24 * HOUR)
    panel = keyboard_panel(qtbot, session, clock)
    assert ids_in_view(panel) == [1, 3, 2, 5, 4]          # pending oldest first, then decisions newest first
    assert panel.summary.text().startswith("<b>3 pending</b> · 2 decided · deciding as")

    panel.status_filter.setCurrentIndex(panel.status_filter.findData(StatusFilter.PENDING))
    assert ids_in_view(panel) == [1, 3, 2]
    assert panel.summary.text().startswith("<b>3 pending</b> · 2 decided (0 shown)")
    panel.tier_filter.setCurrentIndex(panel.tier_filter.findData(RiskTier.MEDIUM))
    assert ids_in_view(panel) == [2]
    assert panel.summary.text().startswith("<b>3 pending</b> (1 shown) · 2 decided (0 shown)")
    assert panel.current_item().id == 2                   # the only item in view is the current one

    with qtbot.waitSignal(session.service.reviews.sig_loaded, timeout=2_000):    # older decisions are read
        panel.status_filter.setCurrentIndex(panel.status_filter.findData(StatusFilter.DECIDED))
    assert ids_in_view(panel) == [5]
    panel.tier_filter.setCurrentIndex(panel.tier_filter.findData(None))
    assert ids_in_view(panel) == [5, 4]

    panel.status_filter.setCurrentIndex(panel.status_filter.findData(StatusFilter.ALL))
    panel.age_filter.setCurrentIndex(panel.age_filter.findData(AgeFilter.UNDER_HOUR))
    assert ids_in_view(panel) == [2]
    panel.age_filter.setCurrentIndex(panel.age_filter.findData(AgeFilter.UNDER_DAY))
    assert ids_in_view(panel) == [3, 2, 5]
    panel.age_filter.setCurrentIndex(panel.age_filter.findData(AgeFilter.OVER_DAY))
    assert ids_in_view(panel) == [1, 4]
    clock.now += 20 * HOUR                                # time passes: #3 (now 25 h old) ages into the view
    panel.proxy.refresh_ages()
    assert ids_in_view(panel) == [1, 3, 4]

    # "/" puts the cursor in the text filter; Enter gives the focus back to the table.
    panel.set_review_filter(ReviewFilter())
    press(qtbot, panel, Qt.Key.Key_Slash)
    assert panel.window().focusWidget() is panel.search
    qtbot.keyClicks(panel.search, "saturn")
    assert ids_in_view(panel) == [2]
    press(qtbot, panel, Qt.Key.Key_Return)
    assert panel.window().focusWidget() is panel.table
    panel.search.setText("#5")
    assert ids_in_view(panel) == [5]
    assert engine.called("decide") == [] and session.errors == []


def test_a_decision_under_the_pending_filter_leaves_the_view_and_the_next_item_is_selected(qtbot, qasync_loop):
    engine = BulkFakeEngine(reviews=[recorded.review_item(n, created_offset_s=60 * n) for n in (1, 2, 3)])
    session = fake_service(qtbot, engine)
    panel = keyboard_panel(qtbot, session)
    panel.set_review_filter(ReviewFilter(StatusFilter.PENDING))
    panel.select_item(2)
    panel.table.setFocus()
    press(qtbot, panel, Qt.Key.Key_A)
    with qtbot.waitSignal(session.service.reviews.sig_changed, timeout=2_000):
        press(qtbot, panel, Qt.Key.Key_Return)
    assert ids_in_view(panel) == [1, 3] and panel.current_item().id == 3
    assert panel.summary.text().startswith("<b>2 pending</b> · 1 decided (0 shown)")
    assert session.errors == []


@pytest.mark.parametrize("checked", ["model", "proxy"])
def test_the_models_pass_the_qt_model_tester_through_changes_and_filters(qtmodeltester, checked):
    model = ReviewModel()
    clock = Clock(T0 + 3 * 24 * HOUR)
    proxy = ReviewFilterProxy(model, clock)
    model.set_items(filter_items()[:3])
    # One tester per model (it stays connected and checks every change below).
    qtmodeltester.check(model if checked == "model" else proxy, force_py=True)
    for item in filter_items()[3:]:
        model.upsert(item)
    model.upsert(dataclasses.replace(model.record(model.row_of(1)), status=ReviewStatus.REJECTED,
                                     decided_by="bob", reason="policy", decided_at=T0 + 10))
    assert model.record(model.row_of(1)).status is ReviewStatus.REJECTED
    model.upsert(recorded.review_item(1))                  # a stale pending copy does not undo the decision
    assert model.record(model.row_of(1)).status is ReviewStatus.REJECTED
    proxy.set_filter(ReviewFilter(StatusFilter.PENDING))
    assert [i.id for i in proxy.records()] == [3, 2]
    proxy.set_filter(ReviewFilter(StatusFilter.ALL, RiskTier.HIGH, AgeFilter.OVER_DAY))
    assert [i.id for i in proxy.records()] == [1, 4]
    proxy.set_filter(ReviewFilter(text="saturn"))
    assert [i.id for i in proxy.records()] == [2]
    model.set_items(filter_items())
    assert proxy.row_of(4) == -1 and proxy.row_of(2) == 0


# --- the detail ------------------------------------------------------------------------------------
def item_from(answer, item_id: int, why: str = "high-risk question", **fields) -> ReviewItem:
    """A review item as the engine stores it: the whole Answer as its JSON payload."""
    payload = json.loads(json.dumps(to_jsonable(answer)))
    return ReviewItem(item_id, answer.trace_id, answer.question, answer.tier, answer.verdict, ReviewStatus.PENDING,
                      why, T0 + 60 * item_id, answer.answer, candidates_from_payload(payload), payload=payload,
                      **fields)


def two_positions_answer():
    """An abstention: gen-a and gen-c say two moons, gen-b says three, each supported by its own evidence."""
    two = Claim("Mars has two small moons, Phobos and Deimos.", ("mars-moons#0",))
    three = Claim("Mars has three moons.", ("mars-moons-2#0",))

    def candidate(agent, claim, agreeing, credibility):
        return Candidate(agent, Generation(claim.text, claims=(claim,)),
                         (ClaimCheck(claim, True, 1.0, "all its words in the evidence", ClaimLabel.SUPPORTED),),
                         1.0, agreeing, credibility)
    candidates = (candidate("gen-a", two, ("gen-c",), 0.8), candidate("gen-b", three, (), 0.79),
                  candidate("gen-c", two, ("gen-a",), 0.78))
    return answers.make_answer(Verdict.ABSTAINED, "", candidates=candidates, trace_id="abstained0001",
                               reason="no consistent conclusion: 2 supported answers disagree")


def test_the_detail_shows_claims_evidence_cascade_scores_and_agents(qtbot, qasync_loop):
    refuted = Claim("Deimos was discovered in 1926.", ("mars-moons#0",))
    cascade = answers.with_cascade("cascade00001")
    liar = dataclasses.replace(cascade.candidates[1], checks=(
        ClaimCheck(refuted, False, 0.6, "numbers differ: 1926 where the evidence says 1877", ClaimLabel.REFUTED),))
    cascade = dataclasses.replace(cascade, candidates=(cascade.candidates[0], liar))
    engine = BulkFakeEngine(reviews=[item_from(cascade, 1, "a cascade fired on this question: rollback"),
                                     item_from(two_positions_answer(), 2, "high-risk question")])
    session = fake_service(qtbot, engine)
    panel = keyboard_panel(qtbot, session)
    shown = panel.detail.toPlainText()
    assert "Waits because: a cascade fired on this question: rollback" in shown
    assert "✓ supported Mars has two small moons, Phobos and Deimos. [mars-moons#0]" in shown
    assert "evidence: “Mars has two small moons, Phobos and Deimos.”" in shown
    assert "✗ refuted Deimos was discovered in 1926. [mars-moons#0]" in shown
    assert "numbers differ: 1926 where the evidence says 1877" in shown
    assert "context poisoning at stage 2 (retrieve) · M4 rollback · resolved" in shown
    rows = [line for line in shown.splitlines()]
    stage = rows.index("2 retrieve")                   # the fired stage's row: SFV, CSCT, CPM, p, fired
    assert rows[stage + 1:stage + 6] == ["0.90", "0.50", "0.60", "0.68", "fired: context poisoning"]
    assert "↳ 2 retrieve: " + answers.POISON_REASON in shown and "2 retrieve ↻" in shown
    assert "down: connection refused" in shown and "gave the answer · support 100%" in shown
    assert "A decision counts for gen-a, ret-a, ret-b, ret-c" in shown
    assert "Competing positions" not in shown          # it answered

    press(qtbot, panel, Qt.Key.Key_J)
    shown = panel.detail.toPlainText()
    assert "Competing positions (2)" in shown
    assert "gen-a, gen-c support 100% · credibility 0.80" in shown and "gen-b support 100% · credibility 0.79" in shown
    assert "A decision counts for ret-a, ret-b, ret-c:" in shown      # no generator gave an answer to credit
    assert session.errors == []


def test_agents_text_stays_literal_in_the_detail_and_the_table(qtbot, qasync_loop):
    hostile = "<script>alert(1)</script> =cmd|' /C calc'!A0 <b>bold</b>"
    claim = Claim(f"Mars {hostile}", ("mars-moons#0",))
    candidate = Candidate("gen-<i>x</i>", Generation(hostile, claims=(claim,)),
                          (ClaimCheck(claim, False, 0.1, f"reason {hostile}", ClaimLabel.NOT_ENOUGH),), 0.0, (), 0.1)
    answer = dataclasses.replace(answers.make_answer(candidates=(candidate,), text=hostile, reason=hostile),
                                 question=f"Q {hostile}",
                                 agents=(AgentOutcome("gen-<i>x</i>", Role.GENERATOR, CallStatus.DOWN, 1.0,
                                                      error=hostile),))
    engine = BulkFakeEngine(reviews=[item_from(answer, 1, f"why {hostile}")])
    session = fake_service(qtbot, engine)
    panel = keyboard_panel(qtbot, session)
    shown, page = panel.detail.toPlainText(), panel.detail.toHtml()
    assert f"Question: Q {hostile}" in shown and f"Mars {hostile}" in shown and f"reason {hostile}" in shown
    assert f"why {hostile}" in shown and "gen-<i>x</i>" in shown and f"down: {hostile}" in shown
    assert "<script>" not in page and "<b>bold</b>" not in page and "<i>x</i>" not in page
    for column in (3, 4, 5):                               # question, answer, why: tooltips are literal too
        tooltip = panel.proxy.data(panel.proxy.index(0, column), Qt.ItemDataRole.ToolTipRole)
        assert "&lt;script&gt;" in tooltip and "<script>" not in tooltip
    assert panel.proxy.data(panel.proxy.index(0, 3)) == f"Q {hostile}"      # the cell is plain text
    assert session.errors == []


def test_the_detail_is_redrawn_in_the_new_tones_when_the_theme_changes(qtbot, qasync_loop):
    from console import style
    engine = BulkFakeEngine(reviews=[item_from(answers.with_cascade("cascade00001"), 1)])
    session = fake_service(qtbot, engine)
    panel = keyboard_panel(qtbot, session)
    light_bad = style.tones().bad.name()
    assert light_bad in panel.detail.toHtml()
    style.set_scheme(style.Scheme.DARK)
    try:
        dark_bad = style.tones().bad.name()
        assert dark_bad != light_bad
        assert dark_bad in panel.detail.toHtml() and light_bad not in panel.detail.toHtml()
        panel.open_form(approve=False)
        assert dark_bad in panel.form.styleSheet()
    finally:
        style.set_scheme(style.Scheme.LIGHT)
    assert light_bad in panel.detail.toHtml() and light_bad in panel.form.styleSheet()
    assert session.errors == []
