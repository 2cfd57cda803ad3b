"""The fake engine drives the real EngineService: typed events reach the adapters' signals through the one
routing table, and panels built on it behave as on a real engine (no fleet, no store)."""
from __future__ import annotations

from engine import AgentState, StoreChanged

from console.main_window import MainWindow
from console.service import EngineService

from . import recorded
from .fakes import FakeEngine, fake_service


def test_every_routed_event_type_reaches_its_signal(qtbot, qasync_loop, tmp_path):
    views = recorded.fleet_views(tmp_path)
    session = fake_service(qtbot, agents=views)
    service, engine = session.service, session.engine
    assert service.ready and engine.called("start") == [()]

    changed, started, enqueued, updated = [], [], [], []
    service.fleet.sig_agent_changed.connect(changed.append)
    service.questions.sig_started.connect(lambda trace, question: started.append((trace, question)))
    service.reviews.sig_changed.connect(enqueued.append)
    service.trust.sig_updated.connect(updated.append)
    item = recorded.review_item(7)
    engine.emit(*recorded.agents_up(views), recorded.question_received(), recorded.review_enqueued(item),
                recorded.trust_updated(recorded.score_points("gen-liar", [0.75, 0.4, 0.18], "quarantined")))
    assert [v.spec.id for v in changed] == [v.spec.id for v in views]
    assert started == [(recorded.TRACE, recorded.QUESTION)]
    assert enqueued == [item]
    assert [p.score for p in updated[0].points] == [0.75, 0.4, 0.18]
    assert session.errors == []


def test_a_window_on_the_fake_engine_fills_its_panels_from_recorded_events(qtbot, qasync_loop, tmp_path):
    views = recorded.fleet_views(tmp_path, state=AgentState.STARTING)
    engine = FakeEngine(views, reviews=[recorded.review_item(1)], alerts=recorded.ALERTS)
    session = fake_service(qtbot, engine)
    window = MainWindow(session.service)
    qtbot.addWidget(window)
    engine.emit(*recorded.agents_up(views), recorded.quarantined(views[-1]))
    window.approvals_panel.reload()
    qtbot.waitUntil(lambda: window.approvals_panel.model.rowCount() == 1, timeout=2_000)
    qtbot.waitUntil(lambda: window.fleet_panel.summary() == "all 6 agents up · 1 quarantined", timeout=2_000)
    assert window.dock_title("approvals") == "Approvals (1 pending)" and window.needs_attention("approvals")
    assert session.errors == []


def test_a_refusal_from_the_engine_reaches_the_operator_as_text(qtbot, qasync_loop, tmp_path):
    session = fake_service(qtbot, agents=recorded.fleet_views(tmp_path))
    failures = []
    session.service.reviews.sig_failed.connect(lambda item_id, why: failures.append((item_id, why)))
    with qtbot.waitSignal(session.service.reviews.sig_failed, timeout=2_000):
        session.service.reviews.decide(99, True, "matches operator knowledge")
    assert failures == [(99, "no review item #99")]
    assert session.engine.called("decide") == [(99, True, session.service.operator, "matches operator knowledge", "")]
    assert session.errors == []          # a refusal is the form's business, not a toast


def test_on_a_team_store_the_operator_is_the_signed_in_role(qtbot, qasync_loop, tmp_path):
    engine = FakeEngine(recorded.fleet_views(tmp_path))
    engine.signed_in = "alice"
    session = fake_service(qtbot, engine)
    assert session.service.operator == "alice"


def test_another_desks_change_reloads_the_panels_that_show_it(qtbot, qasync_loop, tmp_path):
    """A review item another desk enqueued reaches this desk's Approvals panel, without anyone refreshing."""
    views = recorded.fleet_views(tmp_path)
    engine = FakeEngine(views, reviews=[recorded.review_item(1)])
    session = fake_service(qtbot, engine)
    window = MainWindow(session.service)
    qtbot.addWidget(window)
    window.approvals_panel.reload()
    qtbot.waitUntil(lambda: window.approvals_panel.model.rowCount() == 1, timeout=2_000)
    engine.review.by_id[2] = recorded.review_item(2)         # written by the other desk
    with qtbot.waitSignal(session.service.reviews.sig_loaded, timeout=2_000):
        engine.emit(StoreChanged(frozenset({"approvals", "audit"}), 1.0))
    qtbot.waitUntil(lambda: window.approvals_panel.model.rowCount() == 2, timeout=2_000)
    assert session.errors == []


def approvals_of(qtbot, tmp_path, items) -> tuple:
    """A window on the fake engine whose queue holds `items`, its Approvals panel read: (session, panel)."""
    session = fake_service(qtbot, FakeEngine(recorded.fleet_views(tmp_path), reviews=items))
    window = MainWindow(session.service)
    qtbot.addWidget(window)
    panel = window.approvals_panel
    panel.reload()
    qtbot.waitUntil(lambda: panel.model.rowCount() == len(items), timeout=2_000)
    return session, panel


def test_an_operator_claims_an_item_and_sees_who_holds_the_others(qtbot, qasync_loop, tmp_path):
    import dataclasses
    import time
    held = dataclasses.replace(recorded.review_item(2), claimed_by="bob", claimed_until=time.time() + 600)
    session, panel = approvals_of(qtbot, tmp_path, [recorded.review_item(1), held])
    engine = session.engine
    panel.select_item(2)
    assert not panel.claim_button.isEnabled() and "claimed by bob until" in panel.claim_button.toolTip()
    panel.select_item(1)
    assert panel.claim_button.isEnabled() and panel.claim_button.text() == "Claim"
    with qtbot.waitSignal(session.service.reviews.sig_changed, timeout=2_000):
        panel.claim_button.click()
    assert engine.called("claim") == [(1, session.service.operator)]
    qtbot.waitUntil(lambda: panel.claim_button.text() == "Let go", timeout=2_000)
    assert panel.proxy.index(panel.proxy.row_of(1), 1).data() == f"pending · {session.service.operator}"
    assert session.errors == []


def test_the_store_banner_comes_when_the_team_store_goes_and_leaves_when_it_is_back(qtbot, qasync_loop, tmp_path):
    from engine import StoreLink
    session = fake_service(qtbot, agents=recorded.fleet_views(tmp_path))
    window = MainWindow(session.service)
    qtbot.addWidget(window)
    window.show()
    assert not window.store_banner.isVisible()
    session.engine.emit(StoreLink(False, "connection refused", 1.0))
    assert window.store_banner.isVisible()
    assert "cannot be reached (connection refused)" in window.store_banner_text.text()
    assert "decisions are refused" in window.store_banner_text.text()
    session.engine.emit(StoreLink(True, "reached again", 2.0))
    assert not window.store_banner.isVisible()
    assert session.errors == []


def test_select_all_takes_only_the_items_the_filters_show(qtbot, qasync_loop, tmp_path):
    from PySide6.QtCore import Qt
    from console.panels.approvals_model import ReviewFilter, StatusFilter
    from engine import RiskTier
    items = [recorded.review_item(1), recorded.review_item(2, tier=RiskTier.MEDIUM), recorded.review_item(3)]
    _, panel = approvals_of(qtbot, tmp_path, items)
    panel.set_review_filter(ReviewFilter(StatusFilter.PENDING, tier=RiskTier.HIGH))
    panel.table.setFocus()
    qtbot.keyClick(panel.table, Qt.Key.Key_A, Qt.KeyboardModifier.ControlModifier)
    assert sorted(i.id for i in panel.selected_items()) == [1, 3]
    assert panel.approve_button.text() == "Approve 2…"


def test_a_question_asked_again_shows_on_its_waiting_item(qtbot, qasync_loop, tmp_path):
    import dataclasses
    _, panel = approvals_of(qtbot, tmp_path, [dataclasses.replace(recorded.review_item(1), asked_times=3)])
    assert panel.proxy.index(0, 3).data().endswith("(×3)")
    panel.select_item(1)
    assert "asked 3 times while it waited: one decision for all" in panel.detail.toPlainText()


def test_an_items_approvals_toward_its_quorum_show_in_the_panel(qtbot, qasync_loop, tmp_path):
    import dataclasses
    counted = dataclasses.replace(recorded.review_item(1), quorum=2, approvals=("alice",))
    _, panel = approvals_of(qtbot, tmp_path, [counted])
    assert panel.proxy.index(0, 1).data() == "pending · 1/2"
    panel.select_item(1)
    assert "1 of 2 approvals (alice)" in panel.detail.toPlainText()


def test_a_viewer_desk_says_so_and_offers_no_act_it_may_not_do(qtbot, qasync_loop, tmp_path):
    from engine import StoreLink
    engine = FakeEngine(recorded.fleet_views(tmp_path), reviews=[recorded.review_item(1)])
    engine.signed_in, engine.read_only = "victor", True
    service = EngineService(engine)         # type: ignore[arg-type]
    errors: list[str] = []
    service.sig_error.connect(errors.append)
    window = MainWindow(service)
    qtbot.addWidget(window)
    window.show()
    with qtbot.waitSignal(service.sig_ready, timeout=5_000):
        service.start()
    assert window.store_banner.isVisible()
    assert window.store_banner_text.text().startswith("Signed in as victor, a viewer")
    assert not window.ask_panel.ask_button.isEnabled() and "a viewer" in window.ask_panel.ask_button.toolTip()
    assert not window.demo_controls.switch.isEnabled()
    panel = window.approvals_panel
    panel.reload()
    qtbot.waitUntil(lambda: panel.model.rowCount() == 1, timeout=2_000)
    panel.select_item(1)
    assert not panel.approve_button.isEnabled() and not panel.claim_button.isEnabled()
    assert "a viewer" in panel.approve_button.toolTip()
    engine.emit(StoreLink(False, "connection refused", 1.0))
    assert "cannot be reached (connection refused)" in window.store_banner_text.text()
    engine.emit(StoreLink(True, "reached again", 2.0))
    assert window.store_banner.isVisible() and "a viewer" in window.store_banner_text.text()
    assert errors == []


def test_the_approvals_panel_shows_each_reviewers_shift_with_every_read(qtbot, qasync_loop, tmp_path):
    import dataclasses
    from engine import ReviewStatus
    decided = dataclasses.replace(recorded.review_item(2), status=ReviewStatus.REJECTED, decided_by="alice",
                                  decided_at=2.0, reason="factually wrong")
    engine = FakeEngine(recorded.fleet_views(tmp_path), reviews=[recorded.review_item(1), decided])
    session = fake_service(qtbot, engine)
    window = MainWindow(session.service)
    qtbot.addWidget(window)
    with qtbot.waitSignal(session.service.reviews.sig_shift, timeout=2_000):
        window.approvals_panel.reload()
    assert window.approvals_panel.shift.text() == "Last 8 h — alice: 0 approved, 1 rejected"
    engine.review.by_id[1] = dataclasses.replace(recorded.review_item(1), status=ReviewStatus.APPROVED,
                                                 decided_by="bob", decided_at=3.0)      # at another desk
    with qtbot.waitSignal(session.service.reviews.sig_shift, timeout=2_000):
        engine.emit(StoreChanged(frozenset({"approvals"}), 4.0))
    assert window.approvals_panel.shift.text() == ("Last 8 h — alice: 0 approved, 1 rejected · "
                                                   "bob: 1 approved, 0 rejected")
    assert session.errors == []
