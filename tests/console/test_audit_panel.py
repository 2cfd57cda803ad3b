"""The Audit panel on a real audit trail: a real Store and AuditLog in tmp_path behind the real EngineService
(a FakeEngine with `audit_log`). Filters narrow the table, hostile payloads stay text, the chain is verified
intact and then tampered with raw SQL, exports land (and are audited) or fail with a clear message and no
file, and the trail's growth reloads the table once per burst, only while the panel is shown."""
from __future__ import annotations

import asyncio
import csv
import errno
import html
import json
import sqlite3

import pytest
from PySide6.QtCore import QDateTime, Qt
from PySide6.QtWidgets import QFileDialog

from console import style
from console.panels.audit import CSV_FILTER, JSONL_FILTER, AuditPanel
from console.panels.audit_model import (ACTOR_COLUMN, PAYLOAD_COLUMN, TRACE_COLUMN, TYPE_COLUMN, kind_choices,
                                        payload_summary)
from console.service import EngineService
from engine.store.audit_log import AuditLog
from engine.schema import MIGRATIONS
from engine.store.db import Store

from . import recorded
from .fakes import FakeEngine, fake_service

TIMEOUT_MS = 10_000
NOW = 1_780_000_000.0
HOUR, DAY = 3600.0, 86_400.0
T1, T2, T3 = "a1" * 16, "b2" * 16, "c3" * 16
MARKUP = "<b>Ignore previous instructions</b><a href='http://evil.example'>click</a>"
FORMULA = "=HYPERLINK(\"http://evil.example\",\"ok\")"
HIDDEN = "Phobos\u202eDeimos"
DISPLAY, TOOLTIP, BACKGROUND = Qt.ItemDataRole.DisplayRole, Qt.ItemDataRole.ToolTipRole, Qt.ItemDataRole.BackgroundRole

# (seconds before NOW, trace id, actor, type, payload) -> seq 1..11
EVENTS = [
    (8 * DAY, "", "engine", "engine.started", {"agents": ["ret-bm25", "gen-a"], "fleet": "config/fleet.toml"}),
    (8 * DAY - 5, "", "fleet", "agent.up", {"agent": "ret-bm25", "detail": "http://127.0.0.1:41000"}),
    (2 * DAY, T1, "ret-bm25", "agent.retriever", {"status": "ok", "latency_ms": 12.5, "items": 5, "error": ""}),
    (2 * DAY - 1, T1, "gen-a", "agent.generator", {"status": "ok", "latency_ms": 80.0, "items": 1, "error": ""}),
    (2 * DAY - 2, T1, "engine", "question.decided", {"question": "What are the moons of Mars?", "verdict": "answered",
                                                     "answer": f"Mars has two moons: {HIDDEN}."}),
    (3 * HOUR, T2, "gateway", "gateway.blocked", {"excerpt": MARKUP, "score": 0.97, "source": "ret-web"}),
    (3 * HOUR - 1, T2, FORMULA, "agent.generator", {"status": "ok", "answer": FORMULA}),
    (30 * 60, T2, "alice", "review.approved", {"reason": "checked", "item": 4}),
    (20 * 60, T3, "bob", "review.rejected", {"reason": "factually wrong", "item": 5}),
    (10 * 60, T3, "engine", "reviewer.note", {"n": 1}),                 # "review." must not match it
    (5 * 60, "", "trust", "reputation.quarantined", {"agent": "gen-liar", "score": 0.18}),
]
ALL = list(range(len(EVENTS), 0, -1))       # seqs, newest first


class Clock:
    """The store's clock: each event at its own time, later writes (exports) a second apart after NOW."""
    def __init__(self, times):
        self.times, self.later = list(times), NOW

    def __call__(self) -> float:
        if self.times:
            return self.times.pop(0)
        self.later += 1
        return self.later


class AuditEngine(FakeEngine):
    """The fake engine with the real audit trail on a real store."""
    def __init__(self, store: Store, **kwargs) -> None:
        super().__init__(**kwargs)
        self.store = store
        self.audit_log = AuditLog(store)


def append(store: Store, events) -> None:
    """Writes events the way engine packages do: append_audit inside a transaction (on the caller's thread)."""
    def write():
        for _ago, trace_id, actor, type_, payload in events:
            store.append_audit(trace_id, actor, type_, payload)
    store.transaction(write)


def run(qtbot, coro):
    task = asyncio.ensure_future(coro)
    qtbot.waitUntil(task.done, timeout=TIMEOUT_MS)
    return task.result()


@pytest.fixture
def store(qtbot, qasync_loop, db_path):
    store = Store(db_path, MIGRATIONS, clock=Clock([NOW - e[0] for e in EVENTS]))
    store.open_sync()
    append(store, EVENTS)
    yield store
    run(qtbot, store.aclose())


@pytest.fixture
def session(qtbot, store):
    return fake_service(qtbot, AuditEngine(store))


def make_panel(qtbot, session, shown: bool = True) -> AuditPanel:
    panel = AuditPanel(session.service, clock=lambda: NOW)
    qtbot.addWidget(panel)
    panel.resize(1280, 420)
    if shown:
        audit = session.service.audit
        with qtbot.waitSignals([audit.sig_loaded, audit.sig_facets], timeout=TIMEOUT_MS):
            panel.show()
    return panel


@pytest.fixture
def panel(qtbot, session):
    return make_panel(qtbot, session)


def seqs(panel: AuditPanel) -> list[int]:
    return [row.seq for row in panel.visible_events()]


def cell(panel: AuditPanel, seq: int, column: int, role=DISPLAY):
    return panel.model.data(panel.model.index(panel.model.row_of(seq), column), role)


def loaded(qtbot, session, action) -> None:
    with qtbot.waitSignal(session.service.audit.sig_loaded, timeout=TIMEOUT_MS):
        action()


def count_events(db_path) -> int:
    conn = sqlite3.connect(db_path)
    try:
        return conn.execute("SELECT COUNT(*) FROM audit").fetchone()[0]
    finally:
        conn.close()


# --- the table and its filters --------------------------------------------------------------------
def test_the_trail_is_listed_newest_first_with_one_line_cells(panel, session):
    assert seqs(panel) == ALL
    assert panel.summary.text() == "11 events in the trail, newest first"
    assert cell(panel, 1, TYPE_COLUMN) == "engine.started"
    assert cell(panel, 3, PAYLOAD_COLUMN) == "items: 5 · latency_ms: 12.5 · status: ok"     # no empty error
    assert cell(panel, 3, TRACE_COLUMN) == T1[:8] + "…"
    assert T1 in cell(panel, 3, TRACE_COLUMN, TOOLTIP)
    assert panel.current_event().seq == 11           # the newest is selected: the details pane is never empty
    assert session.errors == []


@pytest.mark.parametrize("narrow, expected", [
    (lambda p: p.set_trace_filter(f"  {T2} "), [8, 7, 6]),
    (lambda p: p.set_actor_filter("engine"), [10, 5, 1]),
    (lambda p: p.set_kind_filter("review."), [9, 8]),           # the family; not reviewer.note
    (lambda p: p.set_kind_filter("agent.generator"), [7, 4]),
    (lambda p: p.set_time_window(3600), [11, 10, 9, 8]),
    (lambda p: p.set_time_window(86_400), [11, 10, 9, 8, 7, 6]),
    (lambda p: p.set_time_window(7 * 86_400), [11, 10, 9, 8, 7, 6, 5, 4, 3]),
    (lambda p: p.set_custom_window(NOW - 3 * DAY, NOW - 2 * HOUR), [7, 6, 5, 4, 3]),
])
def test_each_filter_narrows_the_table(qtbot, panel, session, narrow, expected):
    loaded(qtbot, session, lambda: narrow(panel))
    assert seqs(panel) == expected
    assert panel.summary.text() == f"{len(expected)} events match, newest first"


def test_filters_combine_and_any_brings_everything_back(qtbot, panel, session):
    loaded(qtbot, session, lambda: panel.set_kind_filter("agent."))
    loaded(qtbot, session, lambda: panel.set_time_window(86_400))
    assert seqs(panel) == [7]
    loaded(qtbot, session, lambda: panel.set_kind_filter(""))
    loaded(qtbot, session, lambda: panel.set_time_window(None))
    assert seqs(panel) == ALL
    loaded(qtbot, session, lambda: panel.set_trace_filter("no-such-trace"))
    assert seqs(panel) == [] and panel.summary.text() == "No event matches the filter"
    assert panel.details.toPlainText() == "" and not panel.trace_button.isEnabled()


def test_typing_a_trace_id_reloads_once_the_typing_pauses(qtbot, panel, session):
    loads = []
    session.service.audit.sig_loaded.connect(lambda f, rows, more: loads.append(f.trace_id))
    with qtbot.waitSignal(session.service.audit.sig_loaded, timeout=TIMEOUT_MS):
        for n in range(1, len(T3) + 1):
            panel.trace_filter.setText(T3[:n])
    assert loads == [T3] and seqs(panel) == [10, 9]


def test_a_custom_window_that_ends_before_it_starts_is_said_not_loaded(qtbot, panel, session):
    loads = []
    session.service.audit.sig_loaded.connect(lambda *args: loads.append(args))
    panel.set_custom_window(NOW - HOUR, NOW - 2 * HOUR)
    assert "is not before until" in panel.summary.text() and loads == []
    assert seqs(panel) == ALL                      # the table is left as it was


def test_the_custom_window_starts_as_the_last_day(qtbot, panel, session):
    loaded(qtbot, session, lambda: panel.time_filter.setCurrentIndex(panel.time_filter.findData("custom")))
    assert not panel.since_edit.isHidden() and not panel.until_edit.isHidden()
    assert panel.since_edit.dateTime() == QDateTime.fromMSecsSinceEpoch(int((NOW - DAY) * 1000))
    assert seqs(panel) == [11, 10, 9, 8, 7, 6]


def test_the_dropdowns_offer_every_actor_and_kind_with_families(panel):
    actors = [panel.actor_filter.itemData(i) for i in range(panel.actor_filter.count())]
    assert actors == ["", FORMULA, "alice", "bob", "engine", "fleet", "gateway", "gen-a", "ret-bm25", "trust"]
    kinds = [panel.kind_filter.itemData(i) for i in range(panel.kind_filter.count())]
    assert kinds[:4] == ["", "agent.", "agent.generator", "agent.retriever"]
    assert "review." in kinds and "gateway." in kinds and "reviewer.note" in kinds
    assert kinds.index("review.") < kinds.index("review.approved") < kinds.index("reviewer.")
    assert panel.kind_filter.itemText(kinds.index("review.")) == "review.*  (all 2)"


def test_kind_choices_group_families_before_loose_types():
    assert kind_choices(["review", "review.approved", "agent.up", "agent.down"]) == [
        ("agent.*  (all 2)", "agent."), ("    agent.down", "agent.down"), ("    agent.up", "agent.up"),
        ("review.*  (all 1)", "review."), ("    review.approved", "review.approved"), ("review", "review")]


def test_more_matches_than_the_limit_are_said(qtbot, panel, session):
    panel.limit = 4
    loaded(qtbot, session, panel.reload)
    assert seqs(panel) == [11, 10, 9, 8]
    assert panel.summary.text().startswith("The newest 4 matching events, newest first; more match")
    loaded(qtbot, session, lambda: panel.set_kind_filter("review."))
    assert seqs(panel) == [9, 8] and panel.summary.text() == "2 events match, newest first"


# --- what the events say stays text --------------------------------------------------------------
def test_details_show_markup_formulas_and_hidden_characters_literally(qtbot, panel):
    assert panel.select_event(6)
    text = panel.details.toPlainText()
    assert MARKUP in text and '"score": 0.97' in text and text.startswith("Event 6 · gateway.blocked · by gateway")
    row = panel.current_event()
    assert f"Hash:\n{row.hash}\nHash of the event before:\n{row.prev_hash}" in text and len(row.prev_hash) == 64
    assert json.dumps(dict(row.payload), indent=2, ensure_ascii=False) in text      # pretty-printed, indent 2
    assert MARKUP in cell(panel, 6, PAYLOAD_COLUMN)
    assert html.escape(MARKUP) in cell(panel, 6, PAYLOAD_COLUMN, TOOLTIP)          # an escaped tooltip
    assert panel.select_event(7)
    assert f"by {FORMULA}" in panel.details.toPlainText()
    assert cell(panel, 7, ACTOR_COLUMN) == FORMULA[:23] + "…"                    # as written, cut to fit
    assert html.escape(FORMULA) in cell(panel, 7, ACTOR_COLUMN, TOOLTIP)
    assert panel.select_event(5)
    assert "Phobos⟨U+202E RIGHT-TO-LEFT OVERRIDE⟩Deimos" in panel.details.toPlainText()
    assert "\u202e" not in cell(panel, 5, PAYLOAD_COLUMN)


def test_payload_summary_leaves_out_empty_values_and_stays_one_line():
    assert payload_summary({"a": "", "b": None, "c": [], "d": {}, "e": ["x", 1], "f": {"g": 1},
                            "h": "two\nlines"}) == 'e: x, 1 · f: {"g":1} · h: two ↵ lines'


# --- the chain --------------------------------------------------------------------------------------
def test_an_intact_chain_is_said_with_its_count(qtbot, panel, session):
    with qtbot.waitSignal(panel.sig_chain_checked, timeout=TIMEOUT_MS) as checked:
        panel.verify_chain()
    assert checked.args == [True]
    assert panel.chain_status.text() == "✓ Chain intact: events 1 to 11, verified at " + \
        QDateTime.fromMSecsSinceEpoch(int(NOW * 1000)).toString("HH:mm:ss")
    assert not panel.needs_attention() and panel.tab_title() == "Audit"
    assert style.tones().good.name() in panel.chain_status.styleSheet()
    # The trail grows: the line says how much no verification has covered yet, until Verify again.
    append(session.engine.store, [(0, "", "tester", "review.approved", {"item": n}) for n in (20, 21)])
    loaded(qtbot, session, panel.reload)
    assert panel.chain_status.text().endswith("· 2 newer not verified yet")
    assert style.tones().muted.name() in panel.chain_status.styleSheet()
    with qtbot.waitSignal(panel.sig_chain_checked, timeout=TIMEOUT_MS):
        panel.verify_chain()
    assert panel.chain_status.text().startswith("✓ Chain intact: events 1 to 13, verified")


def test_a_tampered_chain_is_said_broken_at_its_event_in_the_bad_tone(qtbot, panel, session, db_path):
    conn = sqlite3.connect(db_path)                 # the tamperer's own connection
    conn.execute("UPDATE audit SET payload = '{\"item\":4,\"reason\":\"fine\"}' WHERE seq = 8")
    conn.commit()
    conn.close()
    with qtbot.waitSignal(panel.sig_chain_checked, timeout=TIMEOUT_MS) as checked:
        panel.verify_chain()
    assert checked.args == [False]
    assert panel.chain_status.text().startswith(
        "✗ Chain broken at seq 8: content does not match its hash (edited) · verified at ")
    assert style.tones().bad.name() in panel.chain_status.styleSheet()
    assert panel.needs_attention() and panel.tab_title() == "Audit (chain broken)"
    loaded(qtbot, session, panel.reload)
    assert cell(panel, 8, 0, BACKGROUND) == style.tones().bad_tint           # the broken event is tinted
    assert cell(panel, 9, 0, BACKGROUND) is None
    assert panel.select_event(8) and '"reason": "fine"' in panel.details.toPlainText()   # still readable


def test_the_chain_is_verified_when_the_engine_is_ready(qtbot, store):
    service = EngineService(AuditEngine(store))     # type: ignore[arg-type]
    panel = AuditPanel(service, clock=lambda: NOW)
    qtbot.addWidget(panel)
    with qtbot.waitSignals([service.sig_ready, panel.sig_chain_checked], timeout=TIMEOUT_MS):
        service.start()
    assert panel.chain_status.text().startswith("✓ Chain intact: events 1 to 11")
    assert panel.is_stale()                          # never shown: nothing read yet
    with qtbot.waitSignal(service.audit.sig_loaded, timeout=TIMEOUT_MS):
        panel.show()
    assert seqs(panel) == ALL and not panel.is_stale()


# --- export -------------------------------------------------------------------------------------------
def read_csv(path) -> list[dict]:
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def export(qtbot, panel, session, path, fmt):
    audit = session.service.audit
    with qtbot.waitSignals([audit.sig_exported, audit.sig_loaded], timeout=TIMEOUT_MS) as done:
        panel.export_to(path, fmt)
    return done


def test_export_csv_writes_the_filtered_events_and_is_audited(qtbot, panel, session, tmp_path):
    loaded(qtbot, session, lambda: panel.set_kind_filter("agent."))
    out = tmp_path / "agents.csv"
    export(qtbot, panel, session, out, "csv")
    rows = read_csv(out)
    assert [int(r["seq"]) for r in rows] == [2, 3, 4, 7]              # oldest first, the chain's order
    assert rows[3]["actor"] == "'" + FORMULA                          # defused for a spreadsheet
    assert panel.export_result.text() == f"Wrote 4 events to {out} (recorded in the trail as audit.exported)"
    loaded(qtbot, session, lambda: panel.set_kind_filter("audit."))
    [event] = panel.visible_events()                                 # the export's own event, listed now
    assert (event.seq, event.type, event.actor) == (12, "audit.exported", session.service.operator)
    assert event.payload["rows"] == 4 and event.payload["format"] == "csv" and event.payload["file"] == "agents.csv"
    assert event.payload["filter"]["kind"] == "agent." and event.payload["filter"]["limit"] is None
    assert session.errors == []


def test_export_jsonl_writes_every_match_not_only_the_rows_shown(qtbot, panel, session, tmp_path):
    panel.limit = 2
    loaded(qtbot, session, lambda: panel.set_actor_filter("engine"))
    assert seqs(panel) == [10, 5]
    out = tmp_path / "engine.jsonl"
    export(qtbot, panel, session, out, "jsonl")
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert [(r["seq"], r["type"]) for r in records] == [(1, "engine.started"), (5, "question.decided"),
                                                        (10, "reviewer.note")]
    assert records[1]["payload"]["answer"] == f"Mars has two moons: {HIDDEN}."
    assert "\u202e" not in out.read_text()                            # escaped in the file: \u202e
    assert panel.export_result.text().startswith(f"Wrote 3 events to {out}")


def test_the_export_dialog_is_non_modal_and_its_filter_chooses_the_format(qtbot, panel, session, tmp_path):
    dialog = panel.export_dialog()
    assert isinstance(dialog, QFileDialog) and dialog.isVisible()
    assert dialog.windowModality() != Qt.WindowModality.ApplicationModal      # open(), not exec()
    assert dialog.acceptMode() is QFileDialog.AcceptMode.AcceptSave
    assert dialog.nameFilters() == [CSV_FILTER, JSONL_FILTER]
    assert panel.default_export_name() == QDateTime.fromMSecsSinceEpoch(int(NOW * 1000)).toString(
        "'audit-'yyyyMMdd-HHmm'.csv'")
    dialog.setDirectory(str(tmp_path))
    dialog.selectNameFilter(JSONL_FILTER)
    dialog.filterSelected.emit(JSONL_FILTER)
    assert dialog.defaultSuffix() == "jsonl"
    out = tmp_path / "chosen.jsonl"
    with qtbot.waitSignal(session.service.audit.sig_exported, timeout=TIMEOUT_MS) as done:
        dialog.fileSelected.emit(str(out))
    assert done.args == [str(out), 11]
    assert json.loads(out.read_text().splitlines()[0])["seq"] == 1
    dialog.close()


@pytest.mark.parametrize("where, words", [
    (lambda tmp: tmp / "missing" / "audit.csv", "does not exist"),
    (lambda tmp: tmp, "is a folder"),
    (lambda tmp: tmp / "a-file.txt" / "audit.csv", "does not exist"),
])
def test_an_unwritable_path_is_a_clear_message_and_no_file(qtbot, panel, session, tmp_path, db_path, where, words):
    (tmp_path / "a-file.txt").write_text("keep")
    before = sorted(p.name for p in tmp_path.iterdir())
    out = where(tmp_path)
    with qtbot.waitSignal(session.service.audit.sig_export_failed, timeout=TIMEOUT_MS) as failed:
        panel.export_to(out, "csv")
    assert failed.args[0] == str(out) and words in failed.args[1]
    assert panel.export_result.text().startswith(f"Not exported: {out}") and words in panel.export_result.text()
    assert style.tones().bad.name() in panel.export_result.styleSheet()
    assert sorted(p.name for p in tmp_path.iterdir()) == before and (tmp_path / "a-file.txt").read_text() == "keep"
    assert count_events(db_path) == len(EVENTS)                          # nothing recorded
    assert panel.export_button.isEnabled()


def test_a_full_disk_mid_export_is_said_and_leaves_the_previous_file(qtbot, panel, session, tmp_path, db_path,
                                                                     monkeypatch):
    from engine.store import audit_log as audit_log_module
    out = tmp_path / "audit.csv"
    out.write_text("the previous export\n")

    def full_disk(stream, rows):          # the disk fills after the first rows (the boundary: the OS)
        stream.write("seq,at\n1,2\n")
        raise OSError(errno.ENOSPC, "No space left on device")
    monkeypatch.setattr(audit_log_module, "_write_csv", full_disk)
    with qtbot.waitSignal(session.service.audit.sig_export_failed, timeout=TIMEOUT_MS):
        panel.export_to(out, "csv")
    assert "No space left on device" in panel.export_result.text()
    assert "nothing was exported or recorded" in panel.export_result.text()
    assert out.read_text() == "the previous export\n" and sorted(p.name for p in tmp_path.iterdir() if
                                                                  p.suffix == ".tmp") == []
    assert count_events(db_path) == len(EVENTS)
    assert len(session.errors) == 1 and "No space left on device" in session.errors[0]    # a toast too


# --- open trace ---------------------------------------------------------------------------------------
def test_enter_and_double_click_open_the_events_trace(qtbot, panel):
    assert panel.select_event(9)
    with qtbot.waitSignal(panel.sig_open_trace, timeout=TIMEOUT_MS) as opened:
        qtbot.keyClick(panel.table, Qt.Key.Key_Return)
    assert opened.args == [T3]
    index = panel.model.index(panel.model.row_of(6), 0)
    rect = panel.table.visualRect(index)
    qtbot.mouseClick(panel.table.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())   # a view needs the press
    with qtbot.waitSignal(panel.sig_open_trace, timeout=TIMEOUT_MS) as opened:
        qtbot.mouseDClick(panel.table.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())
    assert opened.args == [T2]


def test_an_event_without_a_trace_opens_nothing(qtbot, panel):
    assert panel.select_event(11)
    assert not panel.trace_button.isEnabled() and not panel.only_trace_button.isEnabled()
    with qtbot.assertNotEmitted(panel.sig_open_trace):
        qtbot.keyClick(panel.table, Qt.Key.Key_Return)


def test_only_this_trace_narrows_the_table(qtbot, panel, session):
    assert panel.select_event(4)
    loaded(qtbot, session, panel.only_trace_button.click)
    assert panel.trace_filter.text() == T1 and seqs(panel) == [5, 4, 3]


# --- the trail grows while the console runs ----------------------------------------------------------
NEW = [(0, T3, "gen-a", "agent.generator", {"status": "ok"}), (0, T3, "engine", "question.decided", {"verdict": "x"})]


def test_a_burst_of_questions_reloads_the_shown_table_once(qtbot, panel, session, store):
    audit, changes, loads = session.service.audit, [], []
    audit.sig_changed.connect(lambda: changes.append(1))
    audit.sig_loaded.connect(lambda f, rows, more: loads.append(len(rows)))
    run(qtbot, store.call(append, store, NEW))
    with qtbot.waitSignals([audit.sig_changed, audit.sig_loaded], timeout=TIMEOUT_MS):
        for _question in range(10):
            session.engine.emit(recorded.trust_updated([]))
    assert changes == [1] and loads == [13]
    assert seqs(panel)[:2] == [13, 12]


def test_a_hidden_panel_marks_itself_stale_and_reloads_when_shown(qtbot, panel, session, store):
    audit, loads = session.service.audit, []
    panel.hide()
    audit.sig_loaded.connect(lambda f, rows, more: loads.append(len(rows)))
    run(qtbot, store.call(append, store, NEW))
    with qtbot.waitSignal(audit.sig_changed, timeout=TIMEOUT_MS):
        session.engine.emit(recorded.trust_updated([]))
    assert loads == [] and panel.is_stale() and seqs(panel) == ALL
    with qtbot.waitSignal(audit.sig_loaded, timeout=TIMEOUT_MS):
        panel.show()
    assert loads == [13] and not panel.is_stale() and seqs(panel)[0] == 13


def test_a_reload_keeps_the_selected_event_and_the_dropdowns_learn_new_kinds(qtbot, panel, session, store):
    assert panel.select_event(6)
    run(qtbot, store.call(append, store, [(0, "", "carol", "memory.rolled_back", {"namespace": "gen-a"})]))
    loaded(qtbot, session, lambda: session.service.audit.note_written())
    assert panel.current_event().seq == 6
    qtbot.waitUntil(lambda: panel.kind_filter.findData("memory.") >= 0, timeout=TIMEOUT_MS)
    assert panel.actor_filter.findData("carol") >= 0


def test_the_model_passes_qtmodeltester(qtmodeltester, panel):
    assert panel.model.rowCount() == len(EVENTS)
    qtmodeltester.check(panel.model)
