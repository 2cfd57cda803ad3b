"""Anomalies among one question's passages: density clusters (HDBSCAN), echo clusters, edited copies.

An echo cluster is a group of near-duplicate passages that push one claim no independent passage
corroborates: what PoisonedRAG's texts look like. An edited copy is a near-duplicate of a better
supported passage whose numbers, names or polarity differ: what tampering looks like.
"""
from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass

import numpy as np

from ..text import content_words, negations, numbers
from .features import Passage

_CAPITALISED = __import__("re").compile(r"\b[A-Z][a-z]+(?:\s+[A-Z][a-z]+)*")


@dataclass(frozen=True)
class EchoCluster:
    members: tuple[int, ...]        # passage indices
    claim: tuple[str, ...]          # words most members carry that the question does not
    corroboration: float            # best share of the claim carried by an independent passage
    corroborated: bool


def density_labels(vectors: np.ndarray, min_cluster_size: int) -> np.ndarray:
    """HDBSCAN labels over unit vectors (-1: in no cluster); all -1 when there are too few points."""
    n = len(vectors)
    if n < max(4, min_cluster_size + 1):
        return np.full(n, -1)
    import hdbscan   # imported here: it pulls in scikit-learn, which most engine paths never need
    # Euclidean distance on unit vectors is a monotone function of cosine distance.
    return hdbscan.HDBSCAN(min_cluster_size=min_cluster_size, min_samples=1).fit_predict(vectors.astype(np.float64))


def _components(adjacent: np.ndarray) -> list[list[int]]:
    parent = list(range(len(adjacent)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i
    for i, j in zip(*np.nonzero(np.triu(adjacent, 1))):
        parent[find(i)] = find(j)
    groups: dict[int, list[int]] = {}
    for i in range(len(adjacent)):
        groups.setdefault(find(i), []).append(i)
    return list(groups.values())


def echo_clusters(passages: list[Passage], similarity: np.ndarray, question: str, *, threshold: float,
                  core_share: float, corroboration: float, min_size: int) -> list[EchoCluster]:
    asked = set(content_words(question))
    word_sets = [set(content_words(p.chunk.text)) for p in passages]
    clusters = []
    for members in _components(similarity >= threshold):
        if len(members) < min_size:
            continue
        counts = Counter(w for i in members for w in word_sets[i] - asked)
        claim = tuple(sorted(w for w, c in counts.items() if c >= math.ceil(core_share * len(members))))
        if not claim:
            continue      # near-duplicates that push nothing beyond the question are no echo
        outsiders = [i for i in range(len(passages)) if i not in members]
        best = 0.0
        if claim:
            for i in outsiders:
                best = max(best, len(word_sets[i] & set(claim)) / len(claim))
        clusters.append(EchoCluster(tuple(members), claim, round(best, 3), best >= corroboration))
    return clusters


def _signature(text: str) -> tuple[frozenset, frozenset, frozenset]:
    return frozenset(numbers(text)), frozenset(_CAPITALISED.findall(text)), frozenset(negations(text))


def edited_copies(passages: list[Passage], similarity: np.ndarray, weights: list[float], threshold: float) -> dict[int, int]:
    """{edited passage index: index of the better-supported original it departs from}."""
    edited: dict[int, int] = {}
    signatures = [_signature(p.chunk.text) for p in passages]
    for i, j in zip(*np.nonzero(np.triu(similarity >= threshold, 1))):
        if signatures[i] == signatures[j]:
            continue
        if weights[i] == weights[j]:
            continue          # equal support: a conflict for the generators to face, not an edit to remove
        low, high = (i, j) if weights[i] < weights[j] else (j, i)
        edited[int(low)] = int(high)
    return edited
