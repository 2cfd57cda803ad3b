"""End to end on the real small fleet, through MainWindow and its real shortcuts: a high-risk question is
escalated to the approval queue, the operator approves it with the keyboard alone (A, Enter), the decision
is an audit row, the item leaves the pending filter, and the agents behind the answer are credited."""
from __future__ import annotations

from PySide6.QtCore import Qt

from console.panels.approvals_model import ReviewFilter, StatusFilter
from console.service import EngineService, Phase
from engine import RiskTier
from engine.review import ReviewStatus
from engine.schema import MIGRATIONS
from engine.store.db import Store

from .helpers import agent_processes_alive, serve_window

START_TIMEOUT_MS = 60_000
ANSWER_TIMEOUT_MS = 30_000
STOP_TIMEOUT_MS = 20_000


def test_escalated_answer_is_approved_by_keyboard_audited_and_credits_its_agents(qtbot, qasync_loop, engine, db_path):
    service = EngineService(engine)
    service.operator = "tester"
    window, run, errors = serve_window(qtbot, qasync_loop, service, START_TIMEOUT_MS)
    panel = window.approvals_panel
    assert panel.model.rowCount() == 0

    window.ask_panel.question.setText("What are the moons of Mars?")
    window.ask_panel.tier.setCurrentText("high")
    with qtbot.waitSignal(service.questions.sig_answer, timeout=ANSWER_TIMEOUT_MS) as got:
        window.ask_panel.submit()
    answer = got.args[0]
    assert answer.tier is RiskTier.HIGH and "Phobos" in answer.answer
    item = panel.model.record(0)
    assert (item.trace_id, item.status) == (answer.trace_id, ReviewStatus.PENDING)
    credited = item.decision_counts_for
    assert credited and any(a.startswith("gen-") for a in credited)
    before = {agent: engine.parts.reputation.book.record(agent).score for agent in credited}

    window.show_approvals()                        # the focus goes to the queue's table
    panel.set_review_filter(ReviewFilter(StatusFilter.PENDING))
    window.activateWindow()
    qtbot.waitActive(window)
    panel.select_item(item.id)
    panel.focus_target().setFocus()
    assert "Candidate answers (3)" in panel.detail.toPlainText()
    qtbot.keyClick(panel.table, Qt.Key.Key_A)
    assert panel.form.isVisible() and window.focusWidget() is panel.form.reason
    with qtbot.waitSignal(service.trust.sig_updated, timeout=ANSWER_TIMEOUT_MS):
        with qtbot.waitSignal(service.reviews.sig_changed, timeout=ANSWER_TIMEOUT_MS) as changed:
            qtbot.keyClick(panel.form.reason, Qt.Key.Key_Return)     # the first reason: verified against the sources
    decided = changed.args[0]
    assert (decided.id, decided.status, decided.decided_by, decided.reason) == (
        item.id, ReviewStatus.APPROVED, "tester", "verified against the cited sources")
    assert panel.proxy.row_of(item.id) == -1 and panel.proxy.rowCount() == 0      # gone from the pending filter
    assert panel.model.record(panel.model.row_of(item.id)).status is ReviewStatus.APPROVED
    assert window.dock_title("approvals") == "Approvals"
    after = {agent: engine.parts.reputation.book.record(agent).score for agent in credited}
    assert all(after[agent] > before[agent] for agent in credited), (before, after)

    window.close()
    qtbot.waitUntil(run.done, timeout=STOP_TIMEOUT_MS)
    assert run.result() == 0 and service.phase is Phase.STOPPED
    assert agent_processes_alive(engine) == [] and errors == []

    store = Store(db_path, MIGRATIONS)
    store.open_sync()
    try:
        rows = list(store.query("SELECT actor, type, trace_id FROM audit WHERE type LIKE 'review.%' ORDER BY seq"))
        verified = store.verify_audit_sync()
    finally:
        store.close_sync()
    assert [(r["actor"], r["type"], r["trace_id"]) for r in rows] == [
        ("engine", "review.enqueued", answer.trace_id), ("tester", "review.approved", answer.trace_id)]
    assert verified > len(rows)
