"""Built-in retrievers over one corpus: two dense (different models) and one keyword (BM25)."""
from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Protocol

import numpy as np

from ..corpus import Corpus
from ..text import content_words
from ..verify.embedders import EMBEDDERS, CachedEmbedder


class Retriever(Protocol):
    def retrieve(self, query: str, k: int) -> list: ...


def _ranked(corpus: Corpus, scores: np.ndarray, k: int) -> list:
    order = np.argsort(-scores, kind="stable")[:k]
    return [dataclasses.replace(corpus.chunks[i], score=round(float(scores[i]), 6)) for i in order]


class DenseRetriever:
    def __init__(self, corpus: Corpus, embedder: CachedEmbedder) -> None:
        self.corpus = corpus
        self.embedder = embedder
        self.matrix = embedder.embed_passages([c.text for c in corpus.chunks])
        # Load the model now even when every passage came from the cache: the agent says it is ready
        # only once its first query will be fast.
        embedder.embed_query("warm-up")

    def retrieve(self, query: str, k: int) -> list:
        return _ranked(self.corpus, self.matrix @ self.embedder.embed_query(query), k)


class BM25Retriever:
    def __init__(self, corpus: Corpus) -> None:
        import bm25s
        self.corpus = corpus
        # Title words count too: a passage about "Olympus Mons" may not repeat its name.
        texts = [f"{c.title} {c.text}" for c in corpus.chunks]
        self.index = bm25s.BM25()
        self.index.index([content_words(t) for t in texts], show_progress=False)

    def retrieve(self, query: str, k: int) -> list:
        tokens = content_words(query)
        if not tokens:
            return []
        scores = np.asarray(self.index.get_scores(tokens), dtype=np.float32)
        return [c for c in _ranked(self.corpus, scores, k) if c.score > 0]


def build_retriever(backend: str, corpus: Corpus, cache_dir: Path) -> Retriever:
    if backend == "bm25":
        return BM25Retriever(corpus)
    return DenseRetriever(corpus, CachedEmbedder(EMBEDDERS[backend](), cache_dir))
