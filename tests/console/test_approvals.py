"""The Approvals panel: a valid Qt model over real review items, the inline decision form, and, on the
real small fleet, a high-risk question that lands in the panel and is rejected from it."""
from __future__ import annotations

import asyncio
import dataclasses
import json

from PySide6.QtCore import Qt
from PySide6.QtGui import QTextDocument

from console import style, untrusted
from console.app import serve
from console.main_window import MainWindow
from console.panels.approvals import REVIEW_COLUMNS, DecisionForm, ReviewModel, claim_mark, item_html
from console.service import EngineService, Phase
from engine import RiskTier, Verdict
from engine.review import REJECT_REASONS, ReviewItem, ReviewQueue, ReviewStatus
from engine.schema import MIGRATIONS
from engine.store.db import Store

from .answers import make_answer
from .helpers import agent_processes_alive

START_TIMEOUT_MS = 60_000
ANSWER_TIMEOUT_MS = 30_000
STOP_TIMEOUT_MS = 20_000
COLUMN = {column.title: position for position, column in enumerate(REVIEW_COLUMNS)}


def text(model, row, title):
    return model.data(model.index(row, COLUMN[title]), Qt.ItemDataRole.DisplayRole)


def queued_items(db_path) -> list[ReviewItem]:
    """Three real items from the engine's queue: #1 and #2 pending, #3 rejected."""
    async def build() -> list[ReviewItem]:
        store = Store(db_path, MIGRATIONS)
        await store.open()
        queue = ReviewQueue(store)
        for n in (1, 2, 3):        # three questions (asked again while waiting, one would join the other's item)
            answer = make_answer(trace_id=f"t{n}")
            await queue.enqueue(dataclasses.replace(answer, question=f"{answer.question} ({n})"), "high-risk question")
        await queue.decide(3, False, "alice", "other", "three moons? <b>no</b>")
        items = await queue.items()
        await store.aclose()
        return items
    return asyncio.run(build())


def enqueue_sync(db_path, answer, why: str = "high-risk question") -> None:
    """Writes a pending item before the console starts (as an earlier session would have)."""
    store = Store(db_path, MIGRATIONS)
    store.open_sync()
    store.transaction(ReviewQueue(store).insert_in_transaction(answer, why))
    store.close_sync()


def test_review_model_passes_qt_model_tester_and_keeps_queue_order(qtmodeltester, db_path):
    pending_1, pending_2, rejected_3 = queued_items(db_path)
    model = ReviewModel()
    model.set_items([pending_1, rejected_3])
    qtmodeltester.check(model, force_py=True)
    assert [text(model, r, "#") for r in range(2)] == ["1", "3"]
    assert text(model, 0, "Status") == "pending" and text(model, 1, "Status") == "rejected"
    assert text(model, 0, "Tier") == "high" and text(model, 0, "Why") == "high-risk question"
    assert text(model, 0, "Question") == "What are the moons of Mars? (1)"
    assert text(model, 0, "Answer / verdict") == "Mars has two moons, Phobos and Deimos."
    tooltip = model.data(model.index(1, COLUMN["Status"]), Qt.ItemDataRole.ToolTipRole)
    assert tooltip == untrusted.tooltip("rejected by alice: other — three moons? <b>no</b>")     # shown literally

    # The tester stays connected and checks every change below (a second check() would connect it twice).
    assert model.upsert(pending_2) == 1                 # a new pending item goes after the pending ones
    assert [text(model, r, "#") for r in range(3)] == ["1", "2", "3"]
    approved = dataclasses.replace(pending_2, status=ReviewStatus.APPROVED, decided_by="bob",
                                   reason="matches operator knowledge", decided_at=2e9)
    assert model.upsert(approved) == 1                  # a decision replaces its row in place
    assert text(model, 1, "Status") == "approved" and model.count(ReviewStatus.PENDING) == 1

    model.set_items([pending_1, pending_2, rejected_3])  # a stale read does not undo a decision seen since
    assert model.record(model.row_of(2)).status is ReviewStatus.APPROVED
    qtmodeltester.check(model, force_py=True)


def page_text(page: str) -> str:
    """What the detail pane shows of a page: its plain text, as QTextBrowser renders it."""
    document = QTextDocument()
    document.setHtml(page)
    return document.toPlainText()


def test_detail_shows_candidates_and_claims_escaped(qapp, db_path):
    rejected = queued_items(db_path)[2]
    page = item_html(rejected)
    shown = page_text(page)
    assert "gen-liar" in shown and "Mars has three moons." in shown
    assert "? not enough evidence According to a 2023 survey, Mars has a third moon. [survey-2023#0]" in shown
    assert "cites chunks not in the context: survey-2023#0" in shown and "Moons of Mars" in shown
    assert "✓ supported Mars has two small moons, Phobos and Deimos. [mars-moons#0]" in shown
    assert "evidence: “Both were discovered by Asaph Hall in 1877.”" in shown       # the sentence the claim is about
    liar = rejected.candidates_summary[1]
    assert [claim_mark(c)[0] for c in liar.claims] == ["?", "?"]       # not backed by their evidence
    assert claim_mark(dataclasses.replace(liar.claims[0], label="refuted"))[0] == "✗"
    assert "three moons? &lt;b&gt;no&lt;/b&gt;" in page and "<b>no</b>" not in page   # agents' and notes' text is data
    assert "three moons? <b>no</b>" in shown


def test_detail_says_whose_reading_set_an_answer_aside(qapp, db_path):
    item = queued_items(db_path)[0]
    honest, liar = item.candidates_summary
    read = (dataclasses.replace(honest, relevance=0.82, relevance_by="read by ver-judge"),
            dataclasses.replace(liar, relevance=0.12, off_topic=True, relevance_by="read by <i>judge</i>"))
    page = item_html(dataclasses.replace(item, candidates_summary=read))
    shown = page_text(page)
    assert "answers the question (P = 0.82, read by ver-judge)" in shown
    assert "does not answer the question (P = 0.12, read by <i>judge</i>)" in shown     # an id is text, not markup
    assert "<i>judge</i>" not in page


def test_decision_form_needs_a_note_for_other_and_cancels_on_escape(qtbot, db_path):
    item = queued_items(db_path)[0]
    form = DecisionForm()
    qtbot.addWidget(form)
    form.show()
    confirmed, cancelled = [], []
    form.sig_confirmed.connect(lambda *args: confirmed.append(args))
    form.sig_cancelled.connect(lambda: cancelled.append(True))
    form.open_for(item, approve=False)
    assert form.isVisible() and form.confirm.text() == "Reject" and form.title.text() == "Reject #1 because"
    assert [form.reason.itemText(i) for i in range(form.reason.count())] == list(REJECT_REASONS)
    assert form.focusWidget() is form.reason               # the reason list has the focus
    form.reason.setCurrentText("other")
    assert not form.confirm.isEnabled() and "needs a note" in form.hint.text()
    qtbot.keyClick(form.reason, Qt.Key.Key_Return)         # Enter without the note "other" needs does nothing
    assert confirmed == []
    qtbot.keyClicks(form.reason, "a made-up moon")          # typing in the list writes the note
    assert form.note.text() == "a made-up moon" and form.focusWidget() is form.note
    assert form.reason.currentText() == "other"
    assert form.confirm.isEnabled()
    qtbot.keyClick(form.note, Qt.Key.Key_Return)
    assert confirmed == [((item.id,), False, "other", "a made-up moon")]
    assert form.saving and not form.confirm.isEnabled() and not form.note.isEnabled()
    form.failed("review item #1 was already approved")
    assert not form.saving and form.confirm.isEnabled() and "already approved" in form.hint.text()
    qtbot.keyClick(form.note, Qt.Key.Key_Escape)
    assert not form.isVisible() and cancelled == [True]


def test_high_risk_question_lands_in_the_panel_and_is_rejected_with_an_audit_event(qtbot, qasync_loop, engine,
                                                                                    db_path):
    # An item left pending by an earlier session is read from the database when the engine is ready.
    enqueue_sync(db_path, dataclasses.replace(make_answer(Verdict.ABSTAINED, "", trace_id="earlier"),
                                              tier=RiskTier.MEDIUM), "no consistent conclusion on a medium-risk question")
    service = EngineService(engine)
    service.operator = "tester"
    window = MainWindow(service)
    qtbot.addWidget(window)
    errors, failures = [], []
    service.sig_error.connect(errors.append)
    service.reviews.sig_failed.connect(lambda item_id, message: failures.append((item_id, message)))
    panel = window.approvals_panel
    assert window.dock_title("fleet") == "Fleet" and window.dock_title("approvals") == "Approvals"

    run = qasync_loop.create_task(serve(window, service))
    qtbot.waitExposed(window)
    with qtbot.waitSignal(service.reviews.sig_loaded, timeout=START_TIMEOUT_MS):
        pass
    assert panel.model.rowCount() == 1 and window.dock_title("approvals") == "Approvals (1 pending)"
    assert window.needs_attention("approvals")

    window.ask_panel.question.setText("What are the moons of Mars?")
    window.ask_panel.tier.setCurrentText("high")
    with qtbot.waitSignal(service.questions.sig_answer, timeout=ANSWER_TIMEOUT_MS) as got:
        window.ask_panel.submit()
    answer = got.args[0]
    assert answer.tier is RiskTier.HIGH and "Phobos" in answer.answer
    assert window.dock_title("approvals") == "Approvals (2 pending)"
    row = panel.model.row_of(2)
    assert row == 0          # before the earlier medium-risk item: its 30 minutes fall due before that one's 4 hours
    item = panel.model.record(row)
    assert (item.trace_id, item.status, item.why) == (answer.trace_id, ReviewStatus.PENDING, "high-risk question")

    window.show_approvals()
    assert window.is_front("approvals")
    assert window.docks["approvals"].height() >= 300        # the queue gets room for the detail and the form
    assert panel.select_item(2)
    assert "gen-liar" in panel.detail.toPlainText() and "Candidate answers (3)" in panel.detail.toPlainText()
    assert panel.approve_button.isEnabled() and panel.reject_button.isEnabled()

    qtbot.mouseClick(panel.reject_button, Qt.MouseButton.LeftButton)
    form = panel.form
    assert form.isVisible() and form.item_id == 2 and not panel.action_row.isVisible()    # the form takes their place
    form.reason.setCurrentText("other")
    assert not form.confirm.isEnabled()                      # "other" needs a note
    form.reason.setCurrentText("factually wrong")
    with qtbot.waitSignal(service.reviews.sig_changed, timeout=ANSWER_TIMEOUT_MS) as changed:
        qtbot.mouseClick(form.confirm, Qt.MouseButton.LeftButton)
    decided = changed.args[0]
    assert (decided.id, decided.status, decided.decided_by, decided.reason) == (
        2, ReviewStatus.REJECTED, "tester", "factually wrong")
    assert panel.model.row_of(2) == row and panel.model.record(row).status is ReviewStatus.REJECTED   # in place
    assert text(panel.model, row, "Status") == "rejected"
    assert panel.current_item().id == 1                     # the selection moved on to the item still waiting
    assert not form.isVisible() and panel.action_row.isVisible()
    assert panel.approve_button.isEnabled() and panel.reject_button.isEnabled()
    assert "#2 rejected by tester: factually wrong" in panel.message.text()
    assert window.dock_title("approvals") == "Approvals (1 pending)"

    # A second decision on the same item is refused by the engine; the panel says so and the row stays rejected.
    with qtbot.waitSignal(service.reviews.sig_failed, timeout=ANSWER_TIMEOUT_MS):
        service.reviews.decide(2, True, "matches operator knowledge")
    assert failures == [(2, "review item #2 was already rejected by tester (factually wrong); a decision is final")]
    assert "already rejected" in panel.message.text()
    qtbot.waitUntil(lambda: not any(t.get_name() == "review.decide" for t in asyncio.all_tasks(qasync_loop)),
                    timeout=5_000)
    assert panel.model.record(row).status is ReviewStatus.REJECTED

    window.close()
    qtbot.waitUntil(run.done, timeout=STOP_TIMEOUT_MS)
    assert run.result() == 0 and service.phase is Phase.STOPPED
    assert agent_processes_alive(engine) == []
    assert errors == []

    store = Store(db_path, MIGRATIONS)
    store.open_sync()
    try:
        count = store.verify_audit_sync()
        rows = list(store.query("SELECT actor, type, payload, trace_id FROM audit WHERE type LIKE 'review.%' "
                                   "ORDER BY seq"))
        status = store.execute("SELECT status, decided_by, reason FROM approvals WHERE id = 2").fetchone()
    finally:
        store.close_sync()
    assert count > len(rows)
    assert [(r["actor"], r["type"], r["trace_id"]) for r in rows] == [
        ("engine", "review.enqueued", "earlier"), ("engine", "review.enqueued", answer.trace_id),
        ("tester", "review.rejected", answer.trace_id)]
    assert json.loads(rows[-1]["payload"]) == {"id": 2, "reason": "factually wrong", "note": ""}
    assert status == ("rejected", "tester", "factually wrong")
