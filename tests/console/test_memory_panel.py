"""The Memory panel on a real engine's memory: namespaces and every entry version as stored, the operator's
quarantine, release, snapshot and rollback through the panel (and the service), "Who read it?", and an
agent's markup staying text.

The engine runs on the small test fleet without launching its agents (launch=False): memory needs only the
store and the gateway (its default scanners). Entries are written and read the way agents do, through
engine.memory."""
from __future__ import annotations

import asyncio
import html
import textwrap

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QDialogButtonBox, QPlainTextEdit

from console import style
from console.main_window import MainWindow
from console.panels.memory import MemoryPanel, ReasonDialog, RollbackDialog
from console.panels.memory_model import CONTENT_COLUMN, KEY_COLUMN, STATUS_COLUMN, VERSION_COLUMN
from console.service import EngineService, Phase
from engine import Engine, load_fleet, load_settings

from ..conftest import DATA, write_fleet

START_TIMEOUT_MS = 60_000
TIMEOUT_MS = 20_000
DISPLAY, FOREGROUND, TOOLTIP = Qt.ItemDataRole.DisplayRole, Qt.ItemDataRole.ForegroundRole, Qt.ItemDataRole.ToolTipRole
HOSTILE = "<b>x</b><a href='y'>z</a>"
PERMISSIONS = """
version = 1

[tools.send_email]
allowed_domains = ["example.org"]

[agents.gen-a]
allowed_tools = ["memory.write", "memory.read", "send_email"]
memory_access = "own"
approval_mode = true

[agents.gen-b]
allowed_tools = ["memory.write", "memory.read"]
memory_access = "own"
approval_mode = true
"""


def make_engine(tmp_path, db_path, cache_dir) -> Engine:
    """The small fleet with a permission matrix, not launched (memory and tools need only the store and the
    gateway, which runs its default scanners)."""
    (tmp_path / "permissions.toml").write_text(textwrap.dedent(PERMISSIONS))
    path = write_fleet(tmp_path)
    path.write_text(path.read_text().replace("version = 1\n", 'version = 1\npermissions = "permissions.toml"\n', 1))
    return Engine(load_fleet(path), load_settings(DATA / "engine_fast.toml"), db_path=db_path, cache_dir=cache_dir,
                  launch=False)


@pytest.fixture
def running(qtbot, qasync_loop, tmp_path, db_path, cache_dir):
    """(engine, service, window): the engine started (store open, no agent processes), the window built."""
    engine = make_engine(tmp_path, db_path, cache_dir)
    service = EngineService(engine)
    window = MainWindow(service)     # not qtbot.addWidget: pytest-qt would close it before the shutdown below
    # Ready, and the panels' first reads (empty) are in: none can land in the middle of a test.
    with qtbot.waitSignals([service.sig_ready, service.memory.sig_loaded, service.tools.sig_loaded],
                           timeout=START_TIMEOUT_MS):
        service.start()
    yield engine, service, window
    with qtbot.waitSignal(service.sig_stopped, timeout=TIMEOUT_MS):
        service.shutdown()
    assert service.phase is Phase.STOPPED
    window.allow_close()
    window.close()
    window.deleteLater()


def run(qtbot, coro):
    """Runs an engine coroutine on the test's qasync loop (as an agent's call would) and returns its result."""
    task = asyncio.ensure_future(coro)
    qtbot.waitUntil(task.done, timeout=TIMEOUT_MS)
    return task.result()


def write(qtbot, engine, agent: str, key: str, content: str, trace_id: str):
    result = run(qtbot, engine.parts.memory.write(agent, agent, key, content, trace_id))
    assert result.stored, result
    return result.entry


def reload(qtbot, service) -> None:
    with qtbot.waitSignal(service.memory.sig_loaded, timeout=TIMEOUT_MS):
        service.memory.load()


def cell(panel: MemoryPanel, row: int, column: int, role=DISPLAY):
    model = panel.entries
    return model.data(model.index(row, column), role)


def shown(panel: MemoryPanel) -> list[tuple[str, str, str]]:
    """(key, version, status) of every entry row, as the table shows them."""
    return [(cell(panel, r, KEY_COLUMN), cell(panel, r, VERSION_COLUMN), cell(panel, r, STATUS_COLUMN))
            for r in range(panel.entries.rowCount())]


def confirm(qtbot, panel, reason: str, done_signal) -> None:
    """Types the reason in the panel's open dialog and presses its OK button; the dialog closes, and the
    service's answer comes."""
    dialog = panel.dialog
    dialog.reason.setText(reason)
    assert dialog.ok_button.isEnabled()
    with qtbot.waitSignal(done_signal, timeout=TIMEOUT_MS):
        qtbot.mouseClick(dialog.ok_button, Qt.MouseButton.LeftButton)
        assert panel.dialog is None


def test_namespaces_and_every_entry_version_are_listed_from_the_engines_memory(qtbot, running):
    engine, service, window = running
    panel = window.memory_panel
    assert panel.namespaces.rowCount() == 0 and window.dock_title("memory") == "Memory"
    first = write(qtbot, engine, "gen-a", "style", "Short answers with one citation worked best.", "t1")
    second = write(qtbot, engine, "gen-a", "style", "NASA fact sheets were the most reliable source.", "t2")
    write(qtbot, engine, "gen-a", "units", "Distances are given in kilometres.", "t2")
    write(qtbot, engine, "gen-b", "units", "Distances are given in miles.", "t3")
    reload(qtbot, service)

    names = panel.namespaces
    assert [(n.namespace, n.active, n.superseded) for n in names.records()] == [("gen-a", 2, 1), ("gen-b", 1, 0)]
    assert [names.data(names.index(0, c)) for c in range(5)] == ["gen-a", "2", "1", "0", "0"]
    assert panel.current_namespace() == "gen-a"          # the first namespace is selected
    assert shown(panel) == [("style", "v2", "active"), ("style", "v1", "superseded"), ("units", "v1", "active")]
    assert cell(panel, 0, STATUS_COLUMN, FOREGROUND) == style.tones().good
    assert cell(panel, 1, STATUS_COLUMN, FOREGROUND) == style.tones().muted
    assert cell(panel, 0, CONTENT_COLUMN) == "NASA fact sheets were the most reliable source."
    assert panel.current_entry().id == second.id
    details = panel.details.toPlainText()
    assert details.startswith(f"#{second.id} gen-a/style v2 · ACTIVE\nBy gen-a, ")
    assert "Trace t2" in details and details.endswith("NASA fact sheets were the most reliable source.")
    assert panel.summary.text() == (f"2 namespace(s) · 3 active · 0 quarantined · 0 rolled back · 0 snapshot(s) in all "
                                    f"· acting as {service.operator}")

    assert panel.select_namespace("gen-b")
    assert shown(panel) == [("units", "v1", "active")] and panel.snapshot_title.text() == "No snapshot of gen-b yet"
    assert panel.select_entry(first.id) and panel.current_namespace() == "gen-a"
    assert panel.current_entry().status.value == "superseded"
    assert panel.quarantine_button.isEnabled() and not panel.release_button.isEnabled()


def test_quarantine_release_snapshot_and_rollback_through_the_panel_change_the_shown_statuses(qtbot, running):
    engine, service, window = running
    panel = window.memory_panel
    errors = []
    service.sig_error.connect(errors.append)
    good = write(qtbot, engine, "gen-a", "mars", "Mars has two moons, Phobos and Deimos.", "t1")
    bad = write(qtbot, engine, "gen-a", "mars", "Mars has three moons.", "t2")
    write(qtbot, engine, "gen-b", "units", "Distances are given in kilometres.", "t1")
    reload(qtbot, service)
    assert panel.select_entry(bad.id)

    # Quarantine: a reason is required; then the bad version is out and the good one is active again.
    qtbot.mouseClick(panel.quarantine_button, Qt.MouseButton.LeftButton)
    dialog = panel.dialog
    assert isinstance(dialog, ReasonDialog) and dialog.isVisible()
    assert not dialog.ok_button.isEnabled()
    assert not panel.quarantine_button.isEnabled()          # one dialog at a time
    dialog.reason.setText("   ")
    assert not dialog.ok_button.isEnabled()
    confirm(qtbot, panel, "contradicts the corpus", service.memory.sig_loaded)
    assert shown(panel) == [("mars", "v2", "quarantined"), ("mars", "v1", "active")]
    assert cell(panel, 0, STATUS_COLUMN, FOREGROUND) == style.tones().bad
    assert panel.current_entry().id == bad.id                     # the selection stays on the entry
    assert f"quarantined by {service.operator}: contradicts the corpus" in panel.details.toPlainText()
    assert panel.message.text() == f"Entry #{bad.id} gen-a/mars is quarantined; #{good.id} (v1) is the active version."
    assert window.dock_title("memory") == "Memory (1 quarantined)"
    assert [e.content for e in run(qtbot, engine.parts.memory.read("gen-a", "gen-a", "mars", "t9"))] == [good.content]

    # Release it again, then take a snapshot of gen-a and roll back what is written after it.
    assert panel.release_button.isEnabled() and not panel.quarantine_button.isEnabled()
    qtbot.mouseClick(panel.release_button, Qt.MouseButton.LeftButton)
    confirm(qtbot, panel, "checked with the owner", service.memory.sig_loaded)
    assert shown(panel) == [("mars", "v2", "active"), ("mars", "v1", "superseded")]
    assert window.dock_title("memory") == "Memory"
    with qtbot.waitSignal(service.memory.sig_loaded, timeout=TIMEOUT_MS):
        panel.snapshot_action.trigger()
    assert panel.snapshots.rowCount() == 1 and panel.snapshots.record(0).last_entry_id == bad.id
    later = write(qtbot, engine, "gen-a", "mars", "Mars has no moons at all.", "t3")
    reload(qtbot, service)
    assert shown(panel)[0] == ("mars", "v3", "active")

    qtbot.mouseClick(panel.rollback_button, Qt.MouseButton.LeftButton)
    dialog = panel.dialog
    assert isinstance(dialog, RollbackDialog) and dialog.to_snapshot.isChecked()
    assert dialog.preview.text() == f"Rolls back 1 entry: #{later.id} mars v3."
    confirm(qtbot, panel, "poisoned in trace t3", service.memory.sig_loaded)
    assert shown(panel) == [("mars", "v3", "rolled back"), ("mars", "v2", "active"), ("mars", "v1", "superseded")]
    assert cell(panel, 0, STATUS_COLUMN, FOREGROUND) == style.tones().warn
    assert panel.message.text().startswith("Rolled gen-a back to snapshot #1: rolled back #")

    # Before a trace: the dialog offers the traces that wrote here; the other namespace never changes.
    qtbot.mouseClick(panel.rollback_button, Qt.MouseButton.LeftButton)
    dialog = panel.dialog
    dialog.before_trace.setChecked(True)
    assert [dialog.trace.itemText(i) for i in range(dialog.trace.count())] == ["t3", "t2", "t1"]
    dialog.trace.setEditText("no-such-trace")
    dialog.reason.setText("undo")
    assert not dialog.ok_button.isEnabled() and "wrote nothing" in dialog.hint.text()
    dialog.trace.setEditText("t2")
    assert dialog.preview.text() == f"Rolls back 1 entry: #{bad.id} mars v2."
    confirm(qtbot, panel, "undo trace t2", service.memory.sig_loaded)
    assert shown(panel) == [("mars", "v3", "rolled back"), ("mars", "v2", "rolled back"), ("mars", "v1", "active")]
    assert panel.select_namespace("gen-b") and shown(panel) == [("units", "v1", "active")]
    assert errors == []

    # Refusals reach the operator (sig_error, the panel's message) and change nothing.
    other = run(qtbot, engine.parts.memory.snapshot("gen-b", "x", "test"))
    with qtbot.waitSignal(service.memory.sig_failed, timeout=TIMEOUT_MS):
        service.memory.rollback("gen-a", snapshot_id=other.id, reason="wrong namespace")
    with qtbot.waitSignal(service.memory.sig_failed, timeout=TIMEOUT_MS):
        service.memory.quarantine(later.id, "already out")
    with qtbot.waitSignal(service.memory.sig_failed, timeout=TIMEOUT_MS):
        service.memory.quarantine(good.id, "  ")
    assert errors == [f"rollback refused: memory snapshot #{other.id} is not a snapshot of 'gen-a'",
                      f"quarantine refused: memory entry #{later.id} was rolled back; it is out of memory for good",
                      "quarantine refused: memory: an empty reason; say why you quarantine a memory entry, it goes "
                      "into the audit trail"]
    assert panel.message.text() == errors[-1]
    assert [e.status.value for e in run(qtbot, engine.parts.memory.history("gen-a", "mars"))] == [
        "active", "rolled_back", "rolled_back"]


def test_who_read_it_lists_readers_and_traces_and_opens_a_trace(qtbot, running):
    engine, service, window = running
    panel = window.memory_panel
    entry = write(qtbot, engine, "gen-a", "mars", "Mars has three moons.", "t-write")
    run(qtbot, engine.parts.memory.read("gen-a", "gen-a", None, "t-read-1"))
    write(qtbot, engine, "gen-a", "summary", "Three moons orbit Mars.", "t-read-1")     # copied on
    run(qtbot, engine.parts.memory.read("gen-a", "gen-a", "mars", "t-read-2"))
    reload(qtbot, service)
    assert panel.select_entry(entry.id)

    with qtbot.waitSignal(service.memory.sig_spread, timeout=TIMEOUT_MS):
        qtbot.mouseClick(panel.spread_button, Qt.MouseButton.LeftButton)
    text = panel.spread_text()
    assert text.startswith(f"Who read #{entry.id} (mars v1)? 2 read(s) by gen-a in 2 trace(s); they wrote 1 entry "
                           f"after it there.\n")
    lines = [(line.kind, line.agent, line.trace_id) for line in panel.spread_model.records()]
    assert lines == [("read", "gen-a", "t-read-1"), ("wrote", "gen-a", "t-read-1"), ("read", "gen-a", "t-read-2")]
    assert "Three moons orbit Mars." in text

    # A read's trace, then the trace that wrote the entry: both in the window's one trace view.
    panel.spread_table.setCurrentIndex(panel.spread_model.index(2, 0))
    with qtbot.waitSignal(service.traces.sig_loaded, timeout=TIMEOUT_MS) as traced:
        qtbot.mouseClick(panel.spread_trace_button, Qt.MouseButton.LeftButton)
    assert traced.args[0] == "t-read-2" and window.trace_view.trace_id == "t-read-2"
    window.trace_view.close()        # (raising an open window warns on the offscreen platform)
    with qtbot.waitSignal(service.traces.sig_loaded, timeout=TIMEOUT_MS) as traced:
        qtbot.mouseClick(panel.trace_button, Qt.MouseButton.LeftButton)
    assert traced.args[0] == "t-write" and window.trace_view.trace_id == "t-write"
    assert any(line.summary.startswith("memory.written") for line in window.trace_view.lines)
    window.trace_view.close()


def test_an_agents_markup_in_memory_shows_literally_in_cells_details_tooltips_and_spread(qtbot, running):
    engine, service, window = running
    panel = window.memory_panel
    entry = write(qtbot, engine, "gen-a", f"note {HOSTILE}", f"Note: {HOSTILE} appeared in a passage.", "t1")
    run(qtbot, engine.parts.memory.read("gen-a", "gen-a", None, "t2"))
    reload(qtbot, service)
    assert panel.current_entry().id == entry.id

    assert cell(panel, 0, KEY_COLUMN) == f"note {HOSTILE}"
    assert cell(panel, 0, CONTENT_COLUMN) == f"Note: {HOSTILE} appeared in a passage."
    for column in (KEY_COLUMN, CONTENT_COLUMN):
        tooltip = cell(panel, 0, column, TOOLTIP)
        assert html.escape(HOSTILE) in tooltip and "<b>x" not in tooltip and "<a href" not in tooltip
    assert isinstance(panel.details, QPlainTextEdit) and panel.details.isReadOnly()
    assert f"Note: {HOSTILE} appeared in a passage." in panel.details.toPlainText()
    assert f"gen-a/note {HOSTILE} v1" in panel.details.toPlainText()

    with qtbot.waitSignal(service.memory.sig_spread, timeout=TIMEOUT_MS):
        panel.ask_spread()
    assert panel.spread_title.textFormat() == Qt.TextFormat.PlainText
    assert panel.spread_title.text().startswith(f"Who read #{entry.id} (note {HOSTILE} v1)? 1 read(s) by gen-a")

    qtbot.mouseClick(panel.quarantine_button, Qt.MouseButton.LeftButton)
    dialog = panel.dialog
    assert dialog.heading.textFormat() == Qt.TextFormat.PlainText and HOSTILE in dialog.heading.text()
    assert dialog.consequence.textFormat() == Qt.TextFormat.PlainText
    dialog.buttons.button(QDialogButtonBox.StandardButton.Cancel).click()
    assert panel.dialog is None and panel.quarantine_button.isEnabled()


def test_memory_and_tool_calls_are_read_again_after_each_answer(qtbot, running):
    engine, service, window = running
    entry = write(qtbot, engine, "gen-a", "style", "Short answers with one citation worked best.", "t1")     # no reload asked for
    assert window.memory_panel.namespaces.rowCount() == 0
    # The agents are not launched: the answer is "no answer", but it is an answer, and it comes quickly.
    with qtbot.waitSignals([service.questions.sig_answer, service.memory.sig_loaded, service.tools.sig_loaded],
                           timeout=TIMEOUT_MS):
        service.questions.ask("What are the moons of Mars?", "low")
    assert [e.id for e in window.memory_panel.visible_entries()] == [entry.id]


def test_memory_and_tool_actions_are_refused_before_the_engine_is_ready(qtbot, qasync_loop, tmp_path, db_path,
                                                                       cache_dir):
    engine = make_engine(tmp_path, db_path, cache_dir)
    service = EngineService(engine)
    panel = MemoryPanel(service)
    qtbot.addWidget(panel)
    errors, failed = [], []
    service.sig_error.connect(errors.append)
    service.memory.sig_failed.connect(lambda action, why: failed.append(action))
    assert service.memory.load() is None and service.tools.load() is None
    assert service.memory.quarantine(1, "why") is None and service.memory.spread(1) is None
    assert service.tools.decide(1, True, "why") is None
    assert errors == ["memory cannot be changed while the engine is idle", "memory cannot be read while the engine is idle",
                      "tool calls cannot be decided while the engine is idle"]
    assert failed == ["quarantine", "spread"]
    assert not panel.snapshot_button.isEnabled() and not panel.refresh_button.isEnabled()
    assert panel.details.placeholderText().startswith("No agent has written memory yet")
    with qtbot.waitSignal(service.sig_stopped, timeout=TIMEOUT_MS):
        service.shutdown()


def test_the_memory_models_pass_qt_model_tester(qtbot, qtmodeltester, running):
    engine, service, window = running
    panel = window.memory_panel
    write(qtbot, engine, "gen-a", "style", "Short answers with one citation worked best.", "t1")
    write(qtbot, engine, "gen-a", "style", "Distances in miles only.", "t2")
    reload(qtbot, service)
    with qtbot.waitSignal(service.memory.sig_spread, timeout=TIMEOUT_MS):
        panel.ask_spread()
    for model in (panel.namespaces, panel.entries, panel.snapshots, panel.spread_model):
        qtmodeltester.check(model)
