"""Builds or updates a corpus's index: reads the folder, embeds its passages and their sentences in batches into
the embedding cache, says how far it is as it goes, and records when it was done (engine.ingest.manifest).

`main.py index` and the engine (at start, in the background, and when an operator asks again) both run it.
The cache is keyed by each text's content hash, so an index again embeds only the passages and sentences that
are new or changed; the rest is counted as cached. Progress goes to a callback as frozen IndexProgress values:
reading, then embedding (once before the first batch and after each), then done or failed.
"""
from __future__ import annotations

import dataclasses
import enum
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from ..text import content_hash
from .corpus import Corpus, Skipped, embedding_texts, load_corpus
from .manifest import IndexRecord, next_record, read_record, write_record

if TYPE_CHECKING:
    from ..verify.embedders import CachedEmbedder

BATCH = 64                   # texts per embedding call: small enough for progress, large enough for the model
PROGRESS_EVERY_S = 0.25      # Throttled: at most four progress reports a second


class IndexPhase(enum.Enum):
    READING = "reading"
    EMBEDDING = "embedding"
    DONE = "done"
    FAILED = "failed"


@dataclass(frozen=True)
class IndexProgress:
    folder: str
    phase: IndexPhase
    files: int = 0                        # files read (that gave at least one passage)
    passages: int = 0
    code_passages: int = 0
    skipped: tuple[Skipped, ...] = ()     # files not read, each with why
    done: int = 0                         # texts embedded or found in the cache so far
    total: int = 0                        # texts to embed: the passages and their sentences, each once
    new: int = 0                          # of done: embedded now
    cached: int = 0                       # of done: already in the cache
    elapsed_s: float = 0.0                # since the index began
    error: str = ""                       # FAILED: why
    record: IndexRecord | None = None     # the folder's last index: the one before until DONE, then this one

    @property
    def finished(self) -> bool:
        return self.phase in (IndexPhase.DONE, IndexPhase.FAILED)


@dataclass(frozen=True)
class IndexReport:
    """A finished index: what was read and embedded, how long each part took, and the record kept of it."""
    folder: str
    fingerprint: str
    files: int
    passages: int
    code_passages: int
    skipped: tuple[Skipped, ...]
    texts: int
    new: int
    cached: int
    read_s: float
    embed_s: float
    elapsed_s: float
    record: IndexRecord
    corpus: Corpus                       # what was read: callers that go on with its passages need not read again

    @property
    def passage_hashes(self) -> dict[str, str]:
        """Chunk id → content hash of its text (the gateway tells a document's own text by it)."""
        return {c.id: content_hash(c.text) for c in self.corpus.chunks}


Progress = Callable[[IndexProgress], None]


def index_corpus(folder: Path, embedder: "CachedEmbedder", cache_dir: Path, *, on_progress: Progress | None = None,
                 clock: Callable[[], float] = time.time, monotonic: Callable[[], float] = time.perf_counter,
                 batch: int = BATCH) -> IndexReport:
    """Indexes `folder` through `embedder` (whose cache lives in cache_dir, where the record goes too). A folder
    that cannot be read raises its ConfigError, and anything the embedder raises passes on, after a FAILED
    progress saying why. clock stamps the record; monotonic times the work."""
    report = on_progress or (lambda _progress: None)
    began = monotonic()
    folder = Path(folder).resolve()
    progress = IndexProgress(str(folder), IndexPhase.READING, record=read_record(cache_dir, folder))
    report(progress)
    try:
        corpus = load_corpus(folder)
        progress = dataclasses.replace(
            progress, phase=IndexPhase.EMBEDDING, files=len({c.metadata["doc_id"] for c in corpus.chunks}),
            passages=len(corpus.chunks), code_passages=sum(c.metadata.get("kind") == "code" for c in corpus.chunks),
            skipped=corpus.skipped, elapsed_s=monotonic() - began)
        read_s = progress.elapsed_s
        texts = embedding_texts(corpus.chunks)
        progress = dataclasses.replace(progress, total=len(texts))
        report(progress)
        for start in range(0, len(texts), batch):
            part = texts[start:start + batch]
            misses = embedder.misses
            embedder.embed_passages(part)
            # The counters are the embedder's, shared with whatever else embeds meanwhile: bounded to this batch.
            new = min(max(embedder.misses - misses, 0), len(part))
            progress = dataclasses.replace(progress, done=progress.done + len(part), new=progress.new + new,
                                           cached=progress.cached + len(part) - new, elapsed_s=monotonic() - began)
            report(progress)
    except Exception as exc:     # noqa: BLE001 - said as FAILED, then raised as it was
        report(dataclasses.replace(progress, phase=IndexPhase.FAILED, error=str(exc) or type(exc).__name__,
                                   elapsed_s=monotonic() - began))
        raise
    record = next_record(progress.record, folder=str(folder), fingerprint=corpus.fingerprint, files=progress.files,
                         passages=progress.passages, code_passages=progress.code_passages,
                         skipped=len(corpus.skipped), texts=len(texts), embedder=embedder.name, indexed_at=clock())
    write_record(cache_dir, record)
    elapsed_s = monotonic() - began
    report(dataclasses.replace(progress, phase=IndexPhase.DONE, elapsed_s=elapsed_s, record=record))
    return IndexReport(folder=str(folder), fingerprint=corpus.fingerprint, files=progress.files,
                       passages=progress.passages, code_passages=progress.code_passages, skipped=corpus.skipped,
                       texts=len(texts), new=progress.new, cached=progress.cached, read_s=read_s,
                       embed_s=elapsed_s - read_s, elapsed_s=elapsed_s, record=record, corpus=corpus)


class Throttled:
    """Passes progress on at most every `interval_s`, but always the first of each phase and the end, so a
    listener sees the index start, move a few times a second, and finish."""

    def __init__(self, send: Progress, interval_s: float = PROGRESS_EVERY_S,
                 monotonic: Callable[[], float] = time.monotonic) -> None:
        self._send = send
        self._interval_s = interval_s
        self._monotonic = monotonic
        self._phase: IndexPhase | None = None
        self._sent_at = float("-inf")

    def __call__(self, progress: IndexProgress) -> None:
        now = self._monotonic()
        if progress.phase is self._phase and not progress.finished and now - self._sent_at < self._interval_s:
            return
        self._phase, self._sent_at = progress.phase, now
        self._send(progress)
