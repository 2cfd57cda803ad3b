"""Untrusted text at the operator's desk (issue #15): a hostile corpus and a hostile generator push markup, links,
images, bidi overrides, ANSI escapes, formulas and forged lines through the real console on a real fleet; then
every widget of the main window is walked and must show all of it as text."""
from __future__ import annotations


import pytest
from PySide6.QtCore import Qt, QUrl
from PySide6.QtGui import QTextDocument
from PySide6.QtWidgets import QAbstractItemView, QApplication, QHeaderView, QTextBrowser, QWidget

from console.app import serve
from console.main_window import MainWindow
from console.service import EngineService
from console.untrusted import PlainLabel, PlainPane, SafeBrowser, cell, html_text, tooltip
from engine import Engine, load_fleet, load_settings

from ..conftest import FAST_SETTINGS
from ..hostile import (ANSWER, BIDI, CANARIES, MARKUP, QUESTION, hostile_markup, hostile_text,
                       shown_literally, start_hostile_generator, write_hostile_corpus,
                       write_hostile_fleet)
from ..serving import free_port
from .walk import Shown, rendered, shown

START_TIMEOUT_MS = 60_000
ANSWER_TIMEOUT_MS = 30_000
STOP_TIMEOUT_MS = 20_000
ROWS_SELECTED = 8                  # per table: enough to reach every hostile row of this one question


@pytest.fixture
def hostile_engine(tmp_path, db_path, cache_dir):
    port = free_port()
    generator = start_hostile_generator(port)
    corpus = write_hostile_corpus(tmp_path / "corpus")
    fleet = write_hostile_fleet(tmp_path, port, corpus)
    engine = Engine(load_fleet(fleet), load_settings(FAST_SETTINGS), db_path=db_path, cache_dir=cache_dir)
    try:
        yield engine
    finally:
        generator.kill()
        generator.wait()
        generator.stdout.close()


CONSOLE_MARKUP = ("<b>", "</b>", "<span style='")     # what the console's own HTML is made of


def problems_in(pieces: list[Shown]) -> list[str]:
    """Every piece that shows a canary without its tag, or a character that acts; any label left to Qt's
    AutoText guess that shows untrusted text (it would render a reply that starts with a tag); and the other way
    round, the console's own HTML shown as text (a line it builds in HTML put in a plain label)."""
    out = [f"{p.where} ({p.kind}): {problem}" for p in pieces for problem in shown_literally(p.text)]
    out += [f"{p.where}: untrusted text in a label left in AutoText" for p in pieces
            if p.kind == "auto-label" and any(word in p.source for word in CANARIES)]
    out += [f"{p.where} ({p.kind}): the console's HTML shown as text: {p.text[:80]!r}" for p in pieces
            if any(tag in p.text for tag in CONSOLE_MARKUP)]
    return out


def panel_of(widget: QWidget) -> QWidget:
    """The panel (or view) a widget belongs to: what a selection in it can change."""
    while widget.parentWidget() is not None and not type(widget).__name__.endswith(("Panel", "View")):
        widget = widget.parentWidget()
    return widget


def select_each_row(window: MainWindow) -> list[Shown]:
    """Selects each row of each table that lists hostile text, in turn (detail panes fill from the selection),
    and collects what its panel shows then."""
    pieces = []
    for view in window.findChildren(QAbstractItemView):
        model = view.model()
        if model is None or view.selectionModel() is None or isinstance(view, QHeaderView):
            continue
        if not any(word in piece.text for piece in shown(view) for word in CANARIES):
            continue
        for row in range(min(model.rowCount(), ROWS_SELECTED)):
            view.setCurrentIndex(model.index(row, 0))
            QApplication.processEvents()
            pieces += shown(panel_of(view))
    return pieces


def test_every_widget_shows_a_hostile_answer_and_corpus_as_text(qtbot, qasync_loop, hostile_engine):
    service = EngineService(hostile_engine)
    window = MainWindow(service)
    qtbot.addWidget(window)
    run = qasync_loop.create_task(serve(window, service))
    try:
        with qtbot.waitSignal(service.sig_ready, timeout=START_TIMEOUT_MS):
            pass
        panel = window.ask_panel
        panel.tier.setCurrentText("high")                 # high risk: the answer also waits in the approval queue
        qtbot.keyClicks(panel.question, QUESTION)
        with qtbot.waitSignal(service.questions.sig_answer, timeout=ANSWER_TIMEOUT_MS):
            qtbot.keyClick(panel.question, Qt.Key.Key_Return)
        header = panel.answer_view.header
        assert header.answer.text() == ANSWER                                 # the hostile sentence was the answer
        qtbot.waitUntil(lambda: window.approvals_panel.model.rowCount() >= 1, timeout=10_000)
        qtbot.waitUntil(lambda: window.gateway_panel.model.rowCount() >= 1, timeout=10_000)
        window.audit_panel.reload()
        qtbot.waitUntil(lambda: window.audit_panel.model.rowCount() >= 5, timeout=10_000)
        window.trace_view.open_trace(header.trace.text().removeprefix("trace_id "))
        qtbot.waitUntil(lambda: window.trace_view.tree.topLevelItemCount() >= 1, timeout=10_000)
        for panel_id in ("approvals", "alerts", "gateway", "audit", "corpus", "tools", "memory", "cascade", "trust"):
            window.show_panel(panel_id, focus=False)
        QApplication.processEvents()

        pieces = shown(window, window.trace_view) + select_each_row(window)
        problems = problems_in(pieces)
        assert not problems, "\n".join(sorted({p.split("[")[0] + " :: " + p.split(": ", 1)[-1][:90] for p in problems}))
        # It cannot pass by showing nothing: the hostile text reached the answer and its evidence, the queue, the
        # cascade's stages, the tool calls, the gateway's record, the audit trail, the trace and the corpus panel.
        def places_showing(word: str) -> str:
            return " ".join(p.where for p in pieces if word in p.text)
        for place in ("AnswerView", "ApprovalsPanel", "AuditPanel", "CascadePanel", "MemoryPanel", "ToolCallsPanel",
                      "TraceView"):
            assert place in places_showing("QZSTYLED"), place
        for place in ("GatewayPanel", "ToolCallsPanel"):                  # the bidi override named, not obeyed
            assert place in places_showing("⟨U+202E RIGHT-TO-LEFT OVERRIDE⟩QZBIDI"), place
        assert "CorpusPanel" in places_showing(f"{MARKUP[3][0]}{MARKUP[3][1]}.txt")      # a skipped file's name
    finally:
        window.close()                  # also when an assertion failed: the fleet goes down with the window
        qtbot.waitUntil(run.done, timeout=STOP_TIMEOUT_MS)
    assert run.result() == 0


# --- the helpers, one by one -------------------------------------------------------------------------------
def test_a_plain_label_shows_markup_as_text_and_names_what_would_reorder_it(qtbot):
    label = PlainLabel(hostile_text("Lead. "))
    qtbot.addWidget(label)
    assert label.textFormat() == Qt.TextFormat.PlainText
    assert shown_literally(label.text()) == []
    label.setText(f"{BIDI}exe.txt")
    assert label.text() == "⟨U+202E RIGHT-TO-LEFT OVERRIDE⟩exe.txt"


def test_a_plain_pane_keeps_line_breaks_and_names_escapes(qtbot):
    pane = PlainPane()
    qtbot.addWidget(pane)
    pane.setPlainText("one\ntwo\x1b[31m")
    assert pane.isReadOnly() and pane.toPlainText() == "one\ntwo⟨U+001B⟩[31m"


def test_html_text_tooltips_and_cells_render_as_their_own_characters():
    text = hostile_text("Lead. ")
    assert shown_literally(rendered(html_text(text), True)) == []
    assert shown_literally(rendered(tooltip(text), True)) == []
    assert rendered(tooltip("two\nlines <b>x</b>"), True) == "two\nlines <b>x</b>"
    line = cell(text)
    assert "\n" not in line and "↵" in line and shown_literally(line) == []
    assert tooltip("") == ""


def test_the_safe_browser_follows_no_link_and_loads_no_image(qtbot, tmp_path):
    image = tmp_path / "secret.png"
    image.write_bytes(b"\x89PNG\r\n\x1a\n")
    browser = SafeBrowser()
    qtbot.addWidget(browser)
    assert isinstance(browser, QTextBrowser) and not browser.openLinks() and not browser.openExternalLinks()
    # A plain QTextBrowser reads a local file an <img> names; the safe one reads nothing, whatever it is asked.
    plain = QTextBrowser()
    qtbot.addWidget(plain)
    url = QUrl(image.as_uri())
    assert plain.loadResource(QTextDocument.ResourceType.ImageResource.value, url) is not None
    for kind in QTextDocument.ResourceType:
        assert browser.loadResource(kind.value, url) is None
    browser.setHtml(f'<img src="{image.as_uri()}"><a href="{image.as_uri()}">x</a>')
    browser.anchorClicked.emit(url)                  # a click on the link: nothing is opened or navigated
    assert browser.source().isEmpty()
    browser.setHtml(f"<p>{html_text(hostile_markup())}</p>")
    assert shown_literally(browser.toPlainText()) == []
    assert browser.source().isEmpty()
