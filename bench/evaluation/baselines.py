"""Baselines that see the very same retriever outputs as the defence, each producing a top-K context.

Chunks are the same chunk when their texts are identical (whatever ids they came under), as in
secure retrieval. Ties are broken by best rank, then by first appearance in fleet order.

- naive: what a user with one retriever gets: one retriever picked at random per question. Reported as
  the exact expectation over that choice: every retriever's own top K is judged and the judgements
  are averaged per question (Byzantine retrievers are as likely to be picked as honest ones).
- union: every list merged, ranked by how many retrievers returned a text, then by best rank.
- majority: only texts returned by more than half of the retrievers, ranked like union.
- trustrag: TrustRAG's K-means stage (Zhou et al. 2025, "TrustRAG: Enhancing Robustness and
  Trustworthiness in RAG", arXiv:2501.00879), run per retriever list as the paper runs it on one
  retriever's top-k, following its code's steps (trustrag_filter): an n-gram gate, standardised
  embeddings, K-means (k = 2, deterministic starts, best inertia), the tight cluster dropped (cosine
  > 0.88), near-duplicate pairs (ROUGE-L > 0.25) removed within what is kept; the kept lists are then
  merged and ranked like union.
- trustrag-pooled: the same filter once over the union of all lists (this project's earlier variant).

Where the thresholds come from: the paper's first stage clusters the retrieved texts with K-means
(k = 2) and removes a cluster whose members are suspiciously similar, using an embedding-cosine test
and an n-gram (ROUGE-L) test. 0.88 (cosine) and 0.25 (ROUGE-L) are the values in its public code
(defend_module.py of HuichiZhou/TrustRAG, as copied in public forks; re-read for #29 together with the
StandardScaler step and the within-cluster ROUGE removal this baseline now has). TrustRAG's embedder
(a SimCSE-style model) differs from ours, so the cosine scale is only roughly comparable. TrustRAG's later stages (LLM self-assessment of conflicts) are not reproduced.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np

from engine.types import Chunk
from .textmatch import rouge_l_f1

BASELINES = ("naive", "union", "majority", "trustrag", "trustrag-pooled")
SIMPLE_BASELINES = ("naive", "union", "majority")   # what a user could run with no filter at all
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


def naive(replies: Mapping[str, Sequence[Chunk]], k: int) -> dict[str, list[Chunk]]:
    """Every choice a one-retriever user could make: agent -> its own top K (equally likely)."""
    return {agent: list(chunks)[:k] for agent, chunks in replies.items()}


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


def trustrag_filter(chunks: Sequence[Chunk], embedder, cosine_threshold: float = TRUSTRAG_COSINE,
                    rouge_threshold: float = TRUSTRAG_ROUGE) -> TrustRAGResult:
    """TrustRAG's K-means stage over one list of distinct texts, step by step as its code does it
    (defend_module.k_mean_filtering, read for #29; kept texts stay in the list's order):
    1. no pair of texts with ROUGE-L F1 above the n-gram threshold: nothing is filtered;
    2. the embeddings standardised per dimension (StandardScaler), scaled to unit length, K-means k = 2;
       each cluster's tightness is the mean pairwise cosine of its raw embeddings;
    3. a one-text cluster beside a tight one (> threshold): the tight one goes (both, when the single text
       is as close to the tight cluster's first text); beside a loose one, the single text goes;
    4. two clusters of two or more: both tight, everything goes; the tighter one tight, it goes and the
       other is kept; neither tight, both are kept; a kept cluster first loses every near-duplicate pair
       (ROUGE-L above the threshold, both texts of the pair: group_n_gram_filtering)."""
    chunks = list(chunks)
    texts = [c.text for c in chunks]
    if len(chunks) < 2 or not any(rouge_l_f1(texts[a], texts[b]) > rouge_threshold
                                  for a in range(len(texts)) for b in range(a + 1, len(texts))):
        return TrustRAGResult(chunks, [], float("nan"), float("nan"))
    raw = np.asarray(embedder.embed_passages(texts), dtype=np.float64)
    unit = _unit_rows(raw)
    spread = raw.std(axis=0)
    standard = (raw - raw.mean(axis=0)) / np.where(spread == 0, 1.0, spread)
    if not np.linalg.norm(standard, axis=1).any():
        return TrustRAGResult([], chunks, float("nan"), float("nan"))     # all one point: the code keeps nothing
    labels = kmeans(_unit_rows(standard), 2)
    clusters = [np.flatnonzero(labels == j).tolist() for j in (0, 1)]
    tight = [mean_pairwise(unit[m] @ unit[m].T) for m in clusters]
    keep: list[int]
    singles = [j for j in (0, 1) if len(clusters[j]) == 1]
    if singles:
        one, other = singles[0], 1 - singles[0]
        if len(clusters[other]) == 1 or not tight[other] > cosine_threshold:
            keep = clusters[other] if len(clusters[other]) > 1 else clusters[0] + clusters[1]
        elif float(unit[clusters[other][0]] @ unit[clusters[one][0]]) > cosine_threshold:
            keep = []
        else:
            keep = clusters[one]
        cosine = tight[other]
    else:
        hi = 0 if tight[0] >= tight[1] else 1
        lo = 1 - hi
        cosine = tight[hi]
        if tight[lo] > cosine_threshold:
            keep = []
        elif tight[hi] < cosine_threshold:
            keep = _without_near_duplicates(clusters[hi], texts, rouge_threshold) + \
                _without_near_duplicates(clusters[lo], texts, rouge_threshold)
        else:
            keep = _without_near_duplicates(clusters[lo], texts, rouge_threshold)
    tighter = clusters[int(np.nanargmax([t if not np.isnan(t) else -2.0 for t in tight]))]
    pair_rouge = [rouge_l_f1(texts[a], texts[b]) for i, a in enumerate(tighter) for b in tighter[i + 1:]]
    rouge = float(np.mean(pair_rouge)) if pair_rouge else float("nan")
    kept = set(keep)
    return TrustRAGResult([c for i, c in enumerate(chunks) if i in kept], [c for i, c in enumerate(chunks) if i not in kept],
                          round(cosine, 4) if not np.isnan(cosine) else cosine, round(rouge, 4) if not np.isnan(rouge) else rouge)


def _unit_rows(vectors: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors / np.where(norms == 0, 1.0, norms)


def _without_near_duplicates(members: Sequence[int], texts: Sequence[str], threshold: float) -> list[int]:
    """A cluster less every text that has a near-duplicate (ROUGE-L F1 above the threshold) after it, that
    near-duplicate, and every text as close to the first such text: TrustRAG removes both of a pair."""
    gone: set[int] = set()
    first: int | None = None
    for n, i in enumerate(members):
        if i in gone:
            continue
        for j in members[n + 1:]:
            if rouge_l_f1(texts[i], texts[j]) > threshold:
                gone.update((i, j))
                first = i if first is None else first
                break
        if first is not None and rouge_l_f1(texts[i], texts[first]) > threshold:
            gone.add(i)
    return [i for i in members if i not in gone]


def _distinct(chunks: Sequence[Chunk]) -> list[Chunk]:
    seen: set[str] = set()
    out = []
    for c in chunks:
        if c.text not in seen:
            seen.add(c.text)
            out.append(c)
    return out


@dataclass(frozen=True)
class PerListResult:
    context: list[Chunk]
    dropped: list[Chunk]
    per_agent: dict[str, TrustRAGResult]


def trustrag(replies: Mapping[str, Sequence[Chunk]], k: int, embedder,
             cosine_threshold: float = TRUSTRAG_COSINE, rouge_threshold: float = TRUSTRAG_ROUGE) -> PerListResult:
    """The filter on each retriever's list, then the kept lists merged union-style."""
    per_agent = {agent: trustrag_filter(_distinct(chunks), embedder, cosine_threshold, rouge_threshold)
                 for agent, chunks in replies.items()}
    kept = {agent: result.context for agent, result in per_agent.items()}
    dropped = _distinct([c for result in per_agent.values() for c in result.dropped])
    return PerListResult(union(kept, k), dropped, per_agent)


def trustrag_pooled(replies: Mapping[str, Sequence[Chunk]], k: int, embedder,
                    cosine_threshold: float = TRUSTRAG_COSINE, rouge_threshold: float = TRUSTRAG_ROUGE) -> TrustRAGResult:
    """The filter once over the union of every list (ranked union-style), cut to k."""
    result = trustrag_filter([c.chunk for c in candidates(replies)], embedder, cosine_threshold, rouge_threshold)
    return dataclasses.replace(result, context=result.context[:k])
