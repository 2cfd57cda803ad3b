"""Built-in retrievers over one corpus: two dense (different models) and three lexical (BM25, BM25 with
the title boosted, TF-IDF cosine), so a fleet of up to five retrievers needs no duplicate model."""
from __future__ import annotations

import dataclasses
import math
from collections import Counter
from pathlib import Path
from typing import Protocol

import numpy as np

from ..ingest.corpus import Corpus
from ..text import content_words
from ..verify.embedders import EMBEDDERS, CachedEmbedder

LEXICAL_BACKENDS = ("bm25", "bm25-title", "tfidf")
TITLE_BOOST = 3      # bm25-title: the title is indexed this many times, so a passage named for the entity ranks up


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
    """bm25s over content words of title + text. `title_boost` > 1 repeats the title (bm25-title)."""

    def __init__(self, corpus: Corpus, title_boost: int = 1) -> None:
        import bm25s
        self.corpus = corpus
        # Title words count too: a passage about "Olympus Mons" may not repeat its name.
        texts = [" ".join([c.title] * title_boost + [c.text]) for c in corpus.chunks]
        self.index = bm25s.BM25()
        self.index.index([content_words(t) for t in texts], show_progress=False)

    def retrieve(self, query: str, k: int) -> list:
        tokens = content_words(query)
        if not tokens:
            return []
        scores = np.asarray(self.index.get_scores(tokens), dtype=np.float32)
        return [c for c in _ranked(self.corpus, scores, k) if c.score > 0]


def ngrams(text: str) -> list[str]:
    """Content-word unigrams and bigrams (bigrams joined by a space)."""
    words = content_words(text)
    return words + [f"{a} {b}" for a, b in zip(words, words[1:])]


class TfidfRetriever:
    """TF-IDF cosine over title + text: word unigrams and bigrams, sublinear tf (1 + log tf), smooth
    idf (log((1 + n) / (1 + df)) + 1), rows l2-normalised. Numpy only."""

    def __init__(self, corpus: Corpus) -> None:
        self.corpus = corpus
        counts = [Counter(ngrams(f"{c.title} {c.text}")) for c in corpus.chunks]
        df = Counter(term for row in counts for term in row)
        self.vocabulary = {term: i for i, term in enumerate(sorted(df))}
        n = len(counts)
        self.idf = np.array([math.log((1 + n) / (1 + df[t])) + 1.0 for t in sorted(df)], dtype=np.float32)
        self.matrix = np.stack([self._vector(row) for row in counts]) if counts else np.zeros((0, len(df)))

    def _vector(self, counts: Counter) -> np.ndarray:
        vector = np.zeros(len(self.vocabulary), dtype=np.float32)
        for term, tf in counts.items():
            at = self.vocabulary.get(term)
            if at is not None:
                vector[at] = (1.0 + math.log(tf)) * self.idf[at]
        norm = float(np.linalg.norm(vector))
        return vector / norm if norm else vector

    def retrieve(self, query: str, k: int) -> list:
        query_vector = self._vector(Counter(ngrams(query)))
        if not query_vector.any() or not len(self.matrix):
            return []
        return [c for c in _ranked(self.corpus, self.matrix @ query_vector, k) if c.score > 0]


def lexical_retriever(backend: str, corpus: Corpus) -> Retriever:
    if backend == "bm25":
        return BM25Retriever(corpus)
    if backend == "bm25-title":
        return BM25Retriever(corpus, title_boost=TITLE_BOOST)
    if backend == "tfidf":
        return TfidfRetriever(corpus)
    raise ValueError(f"unknown lexical backend {backend!r}")


def build_retriever(backend: str, corpus: Corpus, cache_dir: Path) -> Retriever:
    if backend in LEXICAL_BACKENDS:
        return lexical_retriever(backend, corpus)
    return DenseRetriever(corpus, CachedEmbedder(EMBEDDERS[backend](), cache_dir))
