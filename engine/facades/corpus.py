"""The corpus folder the built-in agents read, as an operator indexes it (engine.ingest)."""
from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Awaitable, Callable

from ..errors import InputError
from ..events import Audit, CorpusIndexProgress, Emit
from ..ingest.index import IndexProgress, IndexReport, Throttled, index_corpus
from ..verify.embedders import CachedEmbedder

Spawn = Callable[[Awaitable], asyncio.Task]             # the engine's task keeper (aclose awaits its tasks)

SKIPPED_AUDITED = 50         # skipped files named in a corpus.indexed audit event (all are counted)


class CorpusFacade:
    def __init__(self, folder: Path, embedder: CachedEmbedder, cache_dir: Path, *, on_indexed: Callable[[IndexReport], None],
                 audit: Audit, emit: Emit, spawn: Spawn, clock: Callable[[], float]) -> None:
        """on_indexed: told of every finished index, in the worker thread (the engine swaps the passage hashes
        the gateway checks against: one reference, safe beside questions)."""
        self.folder = folder
        self._embedder, self._cache_dir, self._on_indexed = embedder, cache_dir, on_indexed
        self._audit, self._emit, self._spawn, self._clock = audit, emit, spawn, clock
        self._progress: IndexProgress | None = None   # the latest progress reported
        self._indexing = False                        # an index is under way (at start or reindex)

    @property
    def progress(self) -> IndexProgress | None:
        """The corpus index as last reported (None before the start reads the corpus, and on a fleet without
        built-in agents until an operator indexes it): for a listener that comes late."""
        return self._progress

    async def reindex(self, operator: str) -> IndexReport:
        """Reads the corpus folder again and embeds what changed, in a worker thread, with CorpusIndexProgress
        events as at start. The built-in agents read the folder when they start: a changed file reaches their
        answers when the fleet is started again. InputError while an index is under way."""
        if self._indexing:
            raise InputError("the corpus is being indexed already; wait until it is done")
        work = self.index_in_thread(operator)
        return await asyncio.shield(work)    # a cancelled caller leaves the thread to finish (aclose awaits it)

    def index_in_thread(self, actor: str) -> asyncio.Task:
        """Starts an index in a worker thread."""
        return self.busy_until(self._spawn(asyncio.to_thread(self.index_now, asyncio.get_running_loop(), actor)))

    def busy_until(self, work: asyncio.Task) -> asyncio.Task:
        """No other index starts until `work` (one that indexes, such as the engine's warm-up) is done."""
        self._indexing = True
        work.add_done_callback(lambda _task: setattr(self, "_indexing", False))
        return work

    def index_now(self, loop: asyncio.AbstractEventLoop, actor: str) -> IndexReport:
        """In a worker thread: its progress reaches listeners on the loop's thread, where they expect it, a few
        times a second; the end is audited as corpus.indexed. A folder that cannot be read raises."""
        show = Throttled(lambda progress: loop.call_soon_threadsafe(self._show, progress))
        report = index_corpus(self.folder, self._embedder, self._cache_dir, on_progress=show, clock=self._clock)
        self._on_indexed(report)
        loop.call_soon_threadsafe(self._audit_report, report, actor)
        return report

    def _show(self, progress: IndexProgress) -> None:
        self._progress = progress
        self._emit(CorpusIndexProgress(progress, self._clock()))

    def _audit_report(self, report: IndexReport, actor: str) -> None:
        self._spawn(self._audit(actor, "corpus.indexed", {
            "folder": report.folder, "fingerprint": report.fingerprint, "files": report.files,
            "passages": report.passages, "code_passages": report.code_passages, "texts": report.texts,
            "new": report.new, "cached": report.cached, "skipped_count": len(report.skipped),
            "skipped": [{"path": s.path, "reason": s.reason} for s in report.skipped[:SKIPPED_AUDITED]],
            "seconds": round(report.elapsed_s, 3)}))
