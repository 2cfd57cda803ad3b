"""Corpus panel: the documents the built-in agents answer from, and their index.

    Corpus — 21 files · 164 passages (31 of code) · 2 skipped                        [Re-index]
    /home/me/papers
    [██████████░░░░░░ embedding 1,234 / 5,678 texts · 12 s]
    Indexed 2025-05-02 10:42 · last changed 2025-05-01 17:03 · 120 new, 5,558 from the cache, in 3.4 s
    File          Why it was skipped
    logo.md       binary (a NUL byte in its first 8 KiB)

The engine indexes its corpus when it starts (engine.ingest.index) and reports how far it is; "Indexed …
last changed …" is the record it keeps beside the embedding cache, so it also tells of a `main.py index` run
before. Re-index reads the folder again and embeds what changed, in the background. The folder, the file names
and the reasons come from the disk: plain text only (PlainText labels, model text, escaped tooltips).
"""
from __future__ import annotations

import time

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QHeaderView, QProgressBar, QPushButton, QVBoxLayout, QWidget

from engine import IndexPhase, IndexProgress, IndexRecord, Skipped

from .. import style
from ..layout import hbox, list_table
from ..service import EngineService
from ..table_model import Column, RecordTableModel
from ..untrusted import PlainLabel
from .base import EnginePanel
from .trust import ElidedLabel

NOT_READ = "Not read yet: the engine reads its corpus when it starts"
SKIPPED_COLUMNS: tuple[Column[Skipped], ...] = (
    Column("File", lambda s: s.path, tooltip=lambda s: s.path),
    Column("Why it was skipped", lambda s: s.reason, tooltip=lambda s: s.reason),
)


def when_text(at: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(at))


def counts_text(progress: IndexProgress | None) -> str:
    """'21 files · 164 passages (31 of code) · 2 skipped', once the folder has been read."""
    if progress is None or progress.phase is IndexPhase.READING or (progress.phase is IndexPhase.FAILED
                                                                    and not progress.passages):
        return ""
    return (f"{progress.files:,} file{'s' if progress.files != 1 else ''} · {progress.passages:,} passages "
            f"({progress.code_passages:,} of code) · {len(progress.skipped):,} skipped")


def bar_text(progress: IndexProgress) -> str:
    """'embedding 1,234 / 5,678 texts · 12 s' (the progress bar's own words)."""
    if progress.phase is IndexPhase.READING:
        return f"reading the folder · {progress.elapsed_s:.0f} s"
    return f"embedding {progress.done:,} / {progress.total:,} texts · {progress.elapsed_s:.0f} s"


def record_text(record: IndexRecord | None, *, previous: bool = False) -> str:
    """'Indexed <when> · last changed <when>'; 'Never indexed' without a record."""
    if record is None:
        return "Never indexed before" if previous else "Never indexed"
    return (f"{'Last indexed' if previous else 'Indexed'} {when_text(record.indexed_at)} · "
            f"last changed {when_text(record.changed_at)}")


def status_text(progress: IndexProgress | None) -> tuple[str, str]:
    """The line under the bar and its tone (a style.tones() name)."""
    if progress is None:
        return NOT_READ, "muted"
    if progress.phase is IndexPhase.FAILED:
        return f"Indexing failed: {progress.error}", "bad"
    if progress.phase is IndexPhase.DONE:
        return (f"{record_text(progress.record)} · {progress.new:,} new, {progress.cached:,} from the cache, "
                f"in {progress.elapsed_s:.1f} s"), "text"
    return record_text(progress.record, previous=True), "muted"


class CorpusPanel(EnginePanel):
    sig_state_changed = Signal()             # the index finished or failed: the dock title may change

    def __init__(self, service: EngineService, parent: QWidget | None = None) -> None:
        super().__init__(service, parent)
        self._progress: IndexProgress | None = None
        self._reindexing = False
        self._tone = "muted"
        self.title = PlainLabel("Corpus")
        self.title.setFont(style.scaled_font(self.font(), 1.15, bold=True))
        self.counts = PlainLabel()
        self.reindex_button = QPushButton("Re-index")
        self.reindex_button.setToolTip("Read the corpus folder again and embed what changed, in the background "
                                       "(the built-in agents read the folder when the fleet starts)")
        self.reindex_button.clicked.connect(self.reindex)
        self.folder = ElidedLabel()
        self.folder.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.bar = QProgressBar()
        self.bar.setTextVisible(True)
        self.bar.hide()
        self.status = PlainLabel(NOT_READ)
        self.status.setWordWrap(True)
        self.skipped_title = PlainLabel()
        self.skipped_model: RecordTableModel[Skipped] = RecordTableModel(SKIPPED_COLUMNS, self)
        self.skipped_table = list_table(self.skipped_model)
        self.skipped_table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        self.skipped_table.horizontalHeader().setStretchLastSection(True)
        self.skipped_table.setColumnWidth(0, 260)

        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.setSpacing(4)
        layout.addLayout(hbox(self.title, (self.counts, 1), self.reindex_button))
        layout.addWidget(self.folder)
        layout.addWidget(self.bar)
        layout.addWidget(self.status)
        layout.addWidget(self.skipped_title)
        layout.addWidget(self.skipped_table, 1)
        layout.addStretch(0)            # takes the slack instead of the table while no file is skipped
        self._layout = layout

        corpus = service.corpus
        corpus.sig_progress.connect(self.show_progress)
        corpus.sig_refused.connect(self._on_refused)
        style.theme_signals().sig_changed.connect(self._restyle)
        self.show_progress(corpus.latest())

    # --- what it shows ---------------------------------------------------------------------------
    def progress(self) -> IndexProgress | None:
        return self._progress

    def show_progress(self, progress: IndexProgress | None) -> None:
        finished_now = progress is not None and progress.finished and progress != self._progress
        self._progress = progress
        running = progress is not None and not progress.finished
        self.counts.setText(counts_text(progress))
        self.folder.set_full_text(progress.folder if progress is not None else "")
        self.bar.setVisible(running)
        if running:
            # Not Qt's busy bar while reading: it would hide the text.
            self.bar.setRange(0, max(progress.total, 1) if progress.phase is IndexPhase.EMBEDDING else 1)
            self.bar.setValue(progress.done)
            self.bar.setFormat(bar_text(progress))        # numbers only: no % for Qt to expand
        text, self._tone = status_text(progress)
        self.status.setText(text)
        skipped = progress.skipped if progress is not None else ()
        if tuple(self.skipped_model.records()) != skipped:
            self.skipped_model.set_records(skipped)
        self.skipped_table.setVisible(bool(skipped))
        self._layout.setStretch(self._layout.count() - 1, 0 if skipped else 1)
        self.skipped_title.setText(f"Skipped files ({len(skipped):,}): not read, each with why" if skipped
                                   else "Skipped files: none")
        self.skipped_title.setVisible(bool(counts_text(progress)))     # nothing to say before the folder is read
        if finished_now:
            self._reindexing = False
        self._restyle()
        self.refresh_buttons()
        if finished_now:
            self.sig_state_changed.emit()

    def tab_title(self) -> str:
        return "Corpus (failed)" if self.needs_attention() else "Corpus"

    def needs_attention(self) -> bool:
        return self._progress is not None and self._progress.phase is IndexPhase.FAILED

    # --- re-index --------------------------------------------------------------------------------
    def reindex(self) -> None:
        """Runs the indexer again through the service; its progress comes back as events."""
        self._reindexing = True
        if self._service.corpus.reindex() is None:
            self._reindexing = False
        self.refresh_buttons()

    def _on_refused(self, why: str) -> None:
        self._reindexing = False
        self.status.setText(f"Not re-indexed: {why}")
        self._tone = "warn"
        self._restyle()
        self.refresh_buttons()

    def refresh_buttons(self, *_args) -> None:
        running = self._progress is not None and not self._progress.finished
        self.reindex_button.setEnabled(self._service.ready and not running and not self._reindexing)

    def _restyle(self, *_args) -> None:
        self.status.setStyleSheet(style.fg(self._tone))
        muted = style.fg("muted")
        self.folder.setStyleSheet(muted)
        self.skipped_title.setStyleSheet(muted)
