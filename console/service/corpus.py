"""Corpus adapter: the corpus index as the engine reports it (at start, and again at the operator's request).

The engine reads and embeds its corpus in a worker thread and sends CorpusIndexProgress on its loop, a few
times a second at most; each becomes sig_progress. A panel made after the start has begun reads where it is
with latest(). reindex() runs the same indexer again without blocking the window.
"""
from __future__ import annotations

import asyncio

from PySide6.QtCore import Signal

from engine import CorpusIndexProgress, IndexProgress

from .core import Adapter

__all__ = ["CorpusAdapter", "IndexProgress"]


class CorpusAdapter(Adapter):
    sig_progress = Signal(object)       # IndexProgress: reading, embedding (n / total), done or failed
    sig_finished = Signal(object)       # IndexProgress, done or failed (the audit trail has a corpus.indexed event)
    sig_refused = Signal(str)           # why a re-index was not started (not ready, one already under way)

    def latest(self) -> IndexProgress | None:
        """The index as last reported; None before the engine has read its corpus."""
        return self.engine.corpus.progress

    def on_progress(self, event: CorpusIndexProgress) -> None:
        self.sig_progress.emit(event.progress)
        if event.progress.finished:
            self.sig_finished.emit(event.progress)

    def reindex(self) -> asyncio.Task | None:
        """Reads the corpus folder again and embeds what changed: sig_progress as it goes (a failure is also
        said on sig_error), or sig_refused(why) when it cannot start."""
        if not self.core.require_ready("the corpus cannot be indexed again", self.sig_refused.emit):
            return None
        return self.core.spawn(self.core.attempt(lambda: self.engine.corpus.reindex(self.core.operator),
                                                 context="the corpus could not be indexed",
                                                 refused=self.sig_refused.emit, announce_refusal=False),
                               "corpus.reindex")
