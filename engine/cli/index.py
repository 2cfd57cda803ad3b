"""`main.py index [DIR]`: read a corpus folder (default: the fleet file's) and embed its passages and their
sentences into the engine's cache ahead of any question.

The engine warms the same cache when it starts, in the background; a question asked before that is done
embeds what it meets while the operator waits. Indexing first moves that work out of the way: a question then
pays only for text the corpus does not hold (what agents return from elsewhere, claims in other words). The
cache is keyed by each text's content hash, so indexing again computes only passages and sentences that are
new or changed. Prints files read, passages, code passages, files skipped and why, texts embedded and taken
from the cache, and the time; the work itself is engine.ingest.index's, which also records when the folder was
indexed (the console's Corpus panel shows it). It then fills the fleet's dense retrievers' and verifier's own
caches (engine.agents.caches), which they would otherwise fill while the fleet starts. Exit codes: 0 ok, 2 bad input (no such folder, no readable file).
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from engine.ingest.index import IndexPhase, IndexProgress
from engine.untrusted import quoted

from .exit_codes import ExitCode


def add_parser(sub) -> None:
    index = sub.add_parser("index", help="read a corpus folder and embed its passages and sentences ahead of questions")
    index.add_argument("dir", nargs="?", type=Path, help="the corpus folder (default: the fleet file's corpus)")
    index.add_argument("--fleet", type=Path, default=argparse.SUPPRESS, help="fleet file (default: config/fleet.toml)")
    index.add_argument("--settings", type=Path, default=argparse.SUPPRESS,
                       help="engine settings file: its [retrieval] embedder (default: config/engine.toml)")


class _Printer:
    """What the shared indexer reports, as this command shows it: the folder's counts and skipped files once
    reading is done, then a progress bar on stderr."""

    def __init__(self) -> None:
        self._read = False

    def __call__(self, progress: IndexProgress) -> None:
        if progress.phase is not IndexPhase.EMBEDDING:
            return
        if not self._read:
            self._read = True
            print(f"{quoted(str(progress.folder))}: {progress.files} files read, {progress.passages} passages "
                  f"({progress.code_passages} of code), {len(progress.skipped)} skipped, in {progress.elapsed_s:.1f} s")
            for skipped in progress.skipped:      # a file's name can hold anything, a line break too
                print(f"  skipped {quoted(str(skipped.path))}: {quoted(skipped.reason)}")
            sys.stdout.flush()
            return
        _draw_bar("embedding", progress.done, progress.total, progress.elapsed_s)


def _draw_bar(label: str, done: int, total: int, elapsed_s: float, width: int = 30) -> None:
    """One progress line on stderr, redrawn in place."""
    filled = int(width * done / total) if total else width
    sys.stderr.write(f"\r{label} [{'#' * filled}{'.' * (width - filled)}] {done:,}/{total:,} texts {elapsed_s:5.1f} s")
    sys.stderr.flush()


def run(args) -> int:
    from engine.config import load_fleet, load_settings
    from engine.engine import default_cache_dir
    from engine.errors import ConfigError
    from engine.ingest.index import index_corpus
    from engine.verify.embedders import EMBEDDERS, CachedEmbedder

    try:
        fleet = load_fleet(getattr(args, "fleet", None))
        folder = args.dir or fleet.corpus_dir
        settings = load_settings(getattr(args, "settings", None))
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return ExitCode.BAD_INPUT
    cache_dir = default_cache_dir() / "engine"        # the engine's own cache and index record
    embedder = CachedEmbedder(EMBEDDERS[settings.retrieval.embedder](), cache_dir)
    try:
        report = index_corpus(folder, embedder, cache_dir, on_progress=_Printer())
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return ExitCode.BAD_INPUT
    finally:
        embedder.close()
    sys.stderr.write("\n")
    print(f"embedded {report.new:,} new texts, {report.cached:,} already in the cache "
          f"({settings.retrieval.embedder}), in {report.embed_s:.1f} s; total {report.elapsed_s:.1f} s")
    _fill_agent_caches(fleet, report.corpus.chunks)
    return ExitCode.OK


def _fill_agent_caches(fleet, chunks) -> None:
    """The fleet's dense retrievers and verifier embed the corpus when they start: done here instead, into the
    caches they read, so the next fleet start on this folder is quick."""
    from engine.engine import default_cache_dir
    from engine.agents import caches as agent_caches
    began = time.perf_counter()
    work = agent_caches.plan(fleet.agents, chunks)

    def bar(model: str, done: int, total: int) -> None:
        _draw_bar(f"agents' {model}", done, total, time.perf_counter() - began)
    for cache in agent_caches.fill(work, default_cache_dir(), bar):
        sys.stderr.write("\n")
        print(f"agents' cache {cache.model} ({', '.join(cache.agents)}): {cache.new:,} new of {cache.texts:,} texts")
    print(f"agents' caches filled in {time.perf_counter() - began:.1f} s")
