"""The window's shell: docks and their remembered layout, actions and shortcuts declared once, the cheat sheet,
the light and dark schemes, and every item model of every panel under qtmodeltester. No fleet: the real
EngineService over the fake engine (fakes.py) with recorded events."""
from __future__ import annotations

from PySide6.QtCore import QAbstractItemModel, QSize, Qt
from PySide6.QtGui import QKeySequence, QPalette

from console import style
from console.actions import ACTIONS
from console.docks import PANELS
from console.main_window import DEFAULT_SIZE, MainWindow, first_size
from console.table_model import RecordTableModel
from pytestqt.modeltest import ModelTester

from . import answers, recorded
from .fakes import FakeEngine, fake_service


def window_on_fake(qtbot, tmp_path, **engine_kwargs):
    views = recorded.fleet_views(tmp_path)
    engine = FakeEngine(views, reviews=[recorded.review_item(1), recorded.review_item(2, created_offset_s=60)],
                        alerts=recorded.ALERTS, **engine_kwargs)
    session = fake_service(qtbot, engine)
    window = MainWindow(session.service)
    qtbot.addWidget(window)
    window.show()
    window.activateWindow()                 # window-wide shortcuts need the active window
    qtbot.waitUntil(window.isActiveWindow, timeout=2_000)
    engine.emit(*recorded.agents_up(views))
    return session, window


def test_every_declared_action_is_bound_and_every_panel_has_a_dock_and_a_view_entry(qtbot, qasync_loop, tmp_path):
    _session, window = window_on_fake(qtbot, tmp_path)
    assert window.action_book.unbound() == []                      # a declared shortcut that does nothing is a bug
    assert set(window.docks) == {p.id for p in PANELS}
    view_menu = next(m for m in window.menuBar().findChildren(type(window.theme_menu)) if m.title() == "&View")
    listed = {a.objectName() for a in view_menu.actions()}
    assert {f"view.{p.id}" for p in PANELS} <= listed and "view.reset_layout" in listed
    keys = [s.shortcut for s in ACTIONS if s.shortcut and s.panel is None]
    assert len(keys) == len(set(keys))                         # no two window-wide actions share a key
    for panel in {s.panel for s in ACTIONS if s.panel}:
        scoped = [s.shortcut for s in ACTIONS if s.panel == panel and s.shortcut]
        assert len(scoped) == len(set(scoped)), panel


def test_question_mark_opens_the_cheat_sheet_listing_every_action_with_its_key(qtbot, qasync_loop, tmp_path):
    _session, window = window_on_fake(qtbot, tmp_path)
    window.fleet_panel.table.setFocus()
    qtbot.keyClick(window.fleet_panel.table, Qt.Key.Key_Question)
    sheet = window.shortcuts_sheet
    assert sheet is not None and sheet.isVisible() and not sheet.isModal()
    rows = sheet.rows()
    for spec in ACTIONS:
        key = QKeySequence(spec.shortcut).toString(QKeySequence.SequenceFormat.NativeText) if spec.shortcut else "—"
        assert any(row and row[0].split("  ")[0] == key and window.action_book[spec.id].text().replace("&", "") in row
                   for row in rows), spec.id
    assert any(row[0] == "?  F1" for row in rows if row)          # the other key for help is listed beside it
    sheet.close()
    qtbot.keyClick(window.fleet_panel.table, Qt.Key.Key_F1)
    assert sheet.isVisible()


def test_letters_act_only_in_their_panel_and_type_in_a_text_box(qtbot, qasync_loop, tmp_path):
    _session, window = window_on_fake(qtbot, tmp_path)
    approvals = window.approvals_panel
    qtbot.waitUntil(lambda: approvals.model.rowCount() == 2, timeout=2_000)
    question = window.ask_panel.question
    question.setFocus()
    qtbot.keyClicks(question, "ar")                           # A and R are the queue's, but here they are text
    assert question.text() == "ar" and not approvals.form.isVisible()

    qtbot.keyClick(question, Qt.Key.Key_3, Qt.KeyboardModifier.AltModifier)     # Alt+3: the approval queue
    assert window.is_front("approvals") and window.focusWidget() is approvals.focus_target()
    qtbot.keyClick(window.focusWidget(), Qt.Key.Key_A)
    assert approvals.form.isVisible()                          # now A approves
    qtbot.keyClick(window.focusWidget(), Qt.Key.Key_Escape)
    assert not approvals.form.isVisible()

    qtbot.keyClick(window.focusWidget(), Qt.Key.Key_L, Qt.KeyboardModifier.ControlModifier)   # back to the question
    assert window.focusWidget() is question and window.is_front("questions")


def test_the_layout_is_remembered_and_reset_brings_every_panel_back(qtbot, qasync_loop, tmp_path):
    session, window = window_on_fake(qtbot, tmp_path)
    window.docks["audit"].close()
    window.docks["alerts"].setFloating(True)
    # Within the offscreen screen: Qt restores a window as wide as the screen 2 px narrower (not to go full screen).
    screen = window.screen().availableGeometry().size()
    size = QSize(max(window.minimumSizeHint().width(), min(window.width(), screen.width() - 10)),
                 window.minimumSizeHint().height() + 20)
    window.resize(size)
    window.allow_close()
    window.close()                                            # saves geometry and dock state

    again = MainWindow(session.service)
    qtbot.addWidget(again)
    again.show()
    qtbot.waitExposed(again)
    assert not again.docks["audit"].isVisible() and again.docks["alerts"].isFloating()
    assert again.size() == size

    again.show_panel("audit")                                  # View → Audit (Alt+0) reopens a closed dock
    assert again.is_front("audit")
    again.docks["audit"].close()
    again.reset_layout()
    assert again.docks["audit"].isVisible() and not again.docks["alerts"].isFloating()
    assert again.is_front("fleet") and again.is_front("questions")


def test_first_size_fills_a_screen_sensibly():
    assert first_size(QSize(1280, 800)) == DEFAULT_SIZE
    assert first_size(QSize(1024, 700)) == QSize(1024, 700)            # a small screen: all of it
    assert first_size(QSize(2560, 1440)) == QSize(2304, 1296)          # a large one: 90 %
    assert first_size(None) == DEFAULT_SIZE


def test_dark_and_light_schemes_recolour_the_palette_and_the_tones(qtbot, qasync_loop, tmp_path):
    _session, window = window_on_fake(qtbot, tmp_path)
    try:
        window.set_theme(style.ThemeChoice.DARK)
        qtbot.wait(10)                      # the application palette reaches widgets through the event loop
        assert style.scheme() is style.Scheme.DARK
        base = window.palette().color(QPalette.ColorRole.Base)
        assert base.lightness() < 80 and style.tones().bad.lightness() > style.LIGHT.bad.lightness()
        assert style.tones().bad.name() in window.alerts_button.styleSheet()
        window.set_theme(style.ThemeChoice.LIGHT)
        qtbot.wait(10)
        assert style.scheme() is style.Scheme.LIGHT and window.palette().color(QPalette.ColorRole.Base).lightness() > 200
        assert window.theme_choice() is style.ThemeChoice.LIGHT         # remembered
    finally:
        style.set_scheme(style.Scheme.LIGHT)


def test_every_item_model_of_every_panel_passes_the_model_tester(qtbot, qasync_loop, tmp_path, request):
    session, window = window_on_fake(qtbot, tmp_path, answers=[answers.make_answer()])
    engine = session.engine
    engine.emit(recorded.trust_updated(recorded.score_points("gen-liar", [0.75, 0.4, 0.18], "quarantined"),
                                       recorded.ALERTS[:1]), recorded.alerts_raised(*recorded.ALERTS[1:3]))
    window.ask_panel.question.setText("What are the moons of Mars?")
    with qtbot.waitSignal(session.service.questions.sig_answer, timeout=2_000):
        window.ask_panel.submit()
    qtbot.waitUntil(lambda: window.approvals_panel.model.rowCount() == 2, timeout=2_000)
    models = {m for m in window.findChildren(QAbstractItemModel)
              if isinstance(m, RecordTableModel) or type(m).__module__.startswith("console.")}
    filled = [m for m in models if m.rowCount() > 0]
    assert len(models) >= 15 and len(filled) >= 8
    # One tester per model: each stays connected and checks every later change of its model too.
    testers = [ModelTester(request.config) for _ in models]
    try:
        for tester, model in zip(testers, sorted(models, key=lambda m: type(m).__name__)):
            tester.check(model, force_py=True)
        engine.emit(*recorded.agents_up(recorded.fleet_views(tmp_path)), recorded.alerts_raised(recorded.ALERTS[3]))
        qtbot.wait(300)                      # the batched updates land while the testers watch
    finally:
        for tester in testers:
            tester._cleanup()
    assert session.errors == []
