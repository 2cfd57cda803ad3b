"""Baselines that see the very same retriever outputs as the defence, each producing a top-K context.

Chunks are the same chunk when their texts are identical (whatever ids they came under), as in
secure retrieval. Ties are broken by best rank, then by first appearance in fleet order.

- naive: the first retriever's top K (the first retriever is always honest in an evaluation run).
- union: every list merged, ranked by how many retrievers returned a text, then by best rank.
- majority: only texts returned by more than half of the retrievers, ranked like union.
- trustrag: TrustRAG-style (Zhou et al. 2025) K-means (k = 2, deterministic starts, best inertia) over
  the union's embeddings; the tighter
  cluster is dropped when its mean pairwise cosine > 0.88 and its mean pairwise ROUGE-L F1 > 0.25;
  the rest is ranked like union.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np

from ..types import Chunk
from .textmatch import rouge_l_f1

BASELINES = ("naive", "union", "majority", "trustrag")
TRUSTRAG_COSINE = 0.88
TRUSTRAG_ROUGE = 0.25


@dataclass(frozen=True)
class Candidate:
    chunk: Chunk          # the first chunk seen with this text
    count: int            # retrievers that returned this text
    best_rank: int
    first_seen: int


def candidates(replies: Mapping[str, Sequence[Chunk]]) -> list[Candidate]:
    """Distinct texts over all lists, ranked union-style (count desc, best rank asc, first seen)."""
    found: dict[str, list] = {}
    order = 0
    for chunks in replies.values():
        agents_text: set[str] = set()
        for rank, chunk in enumerate(chunks):
            if chunk.text in agents_text:
                continue
            agents_text.add(chunk.text)
            if chunk.text not in found:
                found[chunk.text] = [chunk, 0, rank, order]
                order += 1
            entry = found[chunk.text]
            entry[1] += 1
            entry[2] = min(entry[2], rank)
    ranked = [Candidate(*entry) for entry in found.values()]
    ranked.sort(key=lambda c: (-c.count, c.best_rank, c.first_seen))
    return ranked


def naive(replies: Mapping[str, Sequence[Chunk]], k: int) -> list[Chunk]:
    first = next(iter(replies.values()), ())
    return list(first)[:k]


def union(replies: Mapping[str, Sequence[Chunk]], k: int) -> list[Chunk]:
    return [c.chunk for c in candidates(replies)[:k]]


def majority(replies: Mapping[str, Sequence[Chunk]], k: int) -> list[Chunk]:
    n = len(replies)
    return [c.chunk for c in candidates(replies) if 2 * c.count > n][:k]


def kmeans(vectors: np.ndarray, k: int = 2, iterations: int = 100, starts: int = 32) -> np.ndarray:
    """Lloyd's K-means, deterministic: each of the first `starts` rows in turn seeds a farthest-point
    start (that row, then each next centre the row farthest from the chosen ones); the run with the
    lowest inertia wins (ties: the earliest start). Returns a label per row."""
    x = np.asarray(vectors, dtype=np.float64)
    n = len(x)
    if n == 0:
        return np.zeros(0, dtype=int)
    k = min(k, n)
    best: tuple[float, np.ndarray] | None = None
    for first in range(min(n, starts)):
        labels, inertia = _lloyd(x, _farthest_point_start(x, first, k), iterations)
        if best is None or inertia < best[0] - 1e-12:
            best = (inertia, labels)
    return best[1]


def _farthest_point_start(x: np.ndarray, first: int, k: int) -> np.ndarray:
    centres = [x[first]]
    for _ in range(1, k):
        distance = np.min([np.sum((x - c) ** 2, axis=1) for c in centres], axis=0)
        centres.append(x[int(np.argmax(distance))])
    return np.array(centres)


def _lloyd(x: np.ndarray, centres: np.ndarray, iterations: int) -> tuple[np.ndarray, float]:
    labels = np.full(len(x), -1)
    for _ in range(iterations):
        distance = ((x[:, None, :] - centres[None, :, :]) ** 2).sum(axis=2)
        new = np.argmin(distance, axis=1)
        if np.array_equal(new, labels):
            break
        labels = new
        for j in range(len(centres)):
            if np.any(labels == j):
                centres[j] = x[labels == j].mean(axis=0)
    inertia = float(((x - centres[labels]) ** 2).sum())
    return labels, inertia


def mean_pairwise(values: np.ndarray) -> float:
    n = len(values)
    if n < 2:
        return float("nan")
    return float((values.sum() - np.trace(values)) / (n * (n - 1)))


@dataclass(frozen=True)
class TrustRAGResult:
    context: list[Chunk]
    dropped: list[Chunk]
    cosine: float          # mean pairwise cosine of the tighter cluster (nan when it has one member)
    rouge: float           # mean pairwise ROUGE-L F1 of the tighter cluster


def trustrag(replies: Mapping[str, Sequence[Chunk]], k: int, embedder,
             cosine_threshold: float = TRUSTRAG_COSINE, rouge_threshold: float = TRUSTRAG_ROUGE) -> TrustRAGResult:
    ranked = candidates(replies)
    if len(ranked) < 3:
        return TrustRAGResult([c.chunk for c in ranked[:k]], [], float("nan"), float("nan"))
    vectors = np.asarray(embedder.embed_passages([c.chunk.text for c in ranked]), dtype=np.float64)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    vectors = vectors / np.where(norms == 0, 1.0, norms)
    labels = kmeans(vectors, 2)
    tightness = []
    for j in (0, 1):
        members = np.flatnonzero(labels == j)
        sub = vectors[members]
        tightness.append((mean_pairwise(sub @ sub.T), j, members))
    scored = [t for t in tightness if not np.isnan(t[0])]
    if not scored:
        return TrustRAGResult([c.chunk for c in ranked[:k]], [], float("nan"), float("nan"))
    cosine, _, members = max(scored, key=lambda t: (t[0], -t[1]))
    texts = [ranked[i].chunk.text for i in members]
    rouge_matrix = np.zeros((len(texts), len(texts)))
    for a in range(len(texts)):
        for b in range(a + 1, len(texts)):
            rouge_matrix[a, b] = rouge_matrix[b, a] = rouge_l_f1(texts[a], texts[b])
    rouge = mean_pairwise(rouge_matrix)
    drop = set(members.tolist()) if cosine > cosine_threshold and rouge > rouge_threshold else set()
    kept = [c.chunk for i, c in enumerate(ranked) if i not in drop]
    return TrustRAGResult(kept[:k], [ranked[i].chunk for i in sorted(drop)], round(cosine, 4), round(rouge, 4))
