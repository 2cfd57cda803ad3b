"""`main.py index [DIR]`: read a corpus folder (default: the fleet file's) and embed its passages and their
sentences into the engine's cache ahead of any question.

The engine warms the same cache when it starts, in the background; a question asked before that is done
embeds what it meets while the operator waits. Indexing first moves that work out of the way: a question then
pays only for text the corpus does not hold (what agents return from elsewhere, claims in other words). The
cache is keyed by each text's content hash, so indexing again computes only passages and sentences that are
new or changed. Prints files read, passages, code passages, files skipped and why, texts embedded and taken
from the cache, and the time. Exit codes: 0 ok, 2 bad input (no such folder, no readable file).
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from .cli_common import EXIT_BAD_INPUT, EXIT_OK

BATCH = 64


def add_parser(sub) -> None:
    index = sub.add_parser("index", help="read a corpus folder and embed its passages and sentences ahead of questions")
    index.add_argument("dir", nargs="?", type=Path, help="the corpus folder (default: the fleet file's corpus)")
    index.add_argument("--fleet", type=Path, default=argparse.SUPPRESS, help="fleet file (default: config/fleet.toml)")
    index.add_argument("--settings", type=Path, default=argparse.SUPPRESS,
                       help="engine settings file: its [retrieval] embedder (default: config/engine.toml)")


def _progress(done: int, total: int, started: float) -> None:
    width = 30
    filled = int(width * done / total) if total else width
    sys.stderr.write(f"\rembedding [{'#' * filled}{'.' * (width - filled)}] {done:,}/{total:,} texts "
                     f"{time.perf_counter() - started:5.1f} s")
    sys.stderr.flush()


def run(args) -> int:
    from .config import load_fleet, load_settings
    from .corpus import embedding_texts, load_corpus
    from .engine import default_cache_dir
    from .errors import ConfigError
    from .verify.embedders import EMBEDDERS, CachedEmbedder

    started = time.perf_counter()
    try:
        folder = args.dir or load_fleet(getattr(args, "fleet", None)).corpus_dir
        settings = load_settings(getattr(args, "settings", None))
        corpus = load_corpus(folder)
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    files = {c.metadata["doc_id"] for c in corpus.chunks}
    code = sum(c.metadata.get("kind") == "code" for c in corpus.chunks)
    print(f"{corpus.root}: {len(files)} files read, {len(corpus.chunks)} passages ({code} of code), "
          f"{len(corpus.skipped)} skipped, in {time.perf_counter() - started:.1f} s")
    for skipped in corpus.skipped:
        print(f"  skipped {skipped.path}: {skipped.reason}")
    texts = embedding_texts(corpus.chunks)
    embedder = CachedEmbedder(EMBEDDERS[settings.retrieval.embedder](), default_cache_dir() / "engine")
    began = time.perf_counter()
    try:
        for start in range(0, len(texts), BATCH):
            embedder.embed_passages(texts[start:start + BATCH])
            _progress(min(start + BATCH, len(texts)), len(texts), began)
    finally:
        embedder.close()
    sys.stderr.write("\n")
    print(f"embedded {embedder.misses:,} new texts, {embedder.hits:,} already in the cache "
          f"({settings.retrieval.embedder}), in {time.perf_counter() - began:.1f} s; total "
          f"{time.perf_counter() - started:.1f} s")
    return EXIT_OK
