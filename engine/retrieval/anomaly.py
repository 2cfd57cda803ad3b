"""Anomalies among one question's passages: density clusters (HDBSCAN), echo clusters, edited copies.

An echo cluster is a group of near-duplicate passages. Independent sources rarely paraphrase each
other that closely, while PoisonedRAG-style attacks plant exactly that: several rewordings of one
lie, each written to match the question. A cluster is one voice, whatever its size; it is kept out
when only a minority of retrievers returned it, or when what it answers contradicts what the
independent passages answer. An edited copy is a near-duplicate of a better-supported passage
whose numbers, names or polarity differ: what tampering looks like.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from ..text import content_words, negations, numbers
from ..types import Chunk
from ..verify.alignment import conflicts
from ..verify.sentences import answer_words, rank_sentences

_CAPITALISED = re.compile(r"\b[A-Z][a-z]+(?:\s+[A-Z][a-z]+)*")
ANSWERS_TOO = 0.5     # independent passages answer the question if their best sentence scores this share of the cluster's
LOOKALIKE_BAND = 0.1  # how far below the near-duplicate line a passage still counts as a look-alike


@dataclass(frozen=True)
class EchoVerdict:
    keep_out: bool
    reason: str
    unanswered: bool              # no independent passage answers the question at all
    claim: tuple[str, ...]        # what the cluster adds to the question
    cluster_answer: str
    independent_answer: str


def density_labels(vectors: np.ndarray, min_cluster_size: int) -> np.ndarray:
    """HDBSCAN labels over unit vectors (-1: in no cluster); all -1 when there are too few points."""
    n = len(vectors)
    if n < max(4, min_cluster_size + 1):
        return np.full(n, -1)
    import hdbscan   # imported here: it pulls in scikit-learn, which most engine paths never need
    # Euclidean distance on unit vectors is a monotone function of cosine distance.
    return hdbscan.HDBSCAN(min_cluster_size=min_cluster_size, min_samples=1).fit_predict(vectors.astype(np.float64))


def warm_up() -> None:
    """Imports HDBSCAN and runs it once: its first call costs seconds that no question should pay."""
    rng = np.random.default_rng(0)
    density_labels(rng.normal(size=(8, 4)), 2)


def near_duplicate_groups(similarity: np.ndarray, threshold: float, min_size: int) -> list[list[int]]:
    """Connected groups of passages linked by similarity >= threshold, of at least min_size members."""
    parent = list(range(len(similarity)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i
    for i, j in zip(*np.nonzero(np.triu(similarity >= threshold, 1))):
        parent[find(int(i))] = find(int(j))
    groups: dict[int, list[int]] = {}
    for i in range(len(similarity)):
        groups.setdefault(find(i), []).append(i)
    found = []
    for group in groups.values():
        core = _dense_core(similarity, group, threshold)
        # Looser paraphrases that the core shed stay with it when they sit close to most of it.
        near = threshold - LOOKALIKE_BAND
        core += [i for i in group if i not in core and 2 * (similarity[i, core] >= near).sum() >= len(core)]
        if len(core) >= min_size:
            found.append(sorted(core))
    return found


def _dense_core(similarity: np.ndarray, group: list[int], threshold: float) -> list[int]:
    """Drops, one at a time, the member close to the fewest others until each is close to at least
    half of the rest: a chain of look-alikes is not a cluster of copies."""
    core = list(group)
    while len(core) > 2:
        close = [sum(similarity[i, j] >= threshold for j in core if j != i) for i in core]
        worst = min(range(len(core)), key=lambda k: close[k])
        if close[worst] * 2 >= len(core) - 1:
            break
        core.pop(worst)
    return core


def judge_echo(question: str, members: Sequence[Chunk], independent: Sequence[Chunk], *, minority: bool,
               corroboration: float) -> EchoVerdict:
    """An echo is one voice that mirrors the question more closely than any independent passage. It
    stays in, as one voice, only when an independent passage carries its claim (the words its best
    sentence adds to the question, numbers included); otherwise it is kept out, and the reason says
    whether independent passages answer the question differently or not at all."""
    ranked = rank_sentences(question, members)
    cluster_answer = ranked[0].text if ranked else ""
    claim = answer_words(cluster_answer, question)
    claimed_numbers = numbers(cluster_answer) - numbers(question)
    if minority:
        return EchoVerdict(True, f"{_voices(len(members))} that fewer than half of the retrievers returned",
                           False, tuple(sorted(claim)), cluster_answer, "")
    for chunk in independent:
        words = set(content_words(chunk.text))
        if claim and len(claim & words) >= corroboration * len(claim) and claimed_numbers <= numbers(chunk.text):
            return EchoVerdict(False, f"[{chunk.id}] independently says the same", False, tuple(sorted(claim)),
                               cluster_answer, chunk.text)
    others = rank_sentences(question, independent)
    if others and ranked and others[0].score >= ANSWERS_TOO * ranked[0].score:
        return EchoVerdict(True, f"{_voices(len(members))} contradicted by independent passages",
                           False, tuple(sorted(claim)), cluster_answer, others[0].text)
    return EchoVerdict(True, f"{_voices(len(members))} that no independent passage corroborates",
                       True, tuple(sorted(claim)), cluster_answer, "")


def _voices(n: int) -> str:
    return "a lone passage" if n == 1 else f"{n} near-duplicates"


def _signature(text: str) -> tuple[frozenset, frozenset, frozenset]:
    return frozenset(numbers(text)), frozenset(_CAPITALISED.findall(text)), frozenset(negations(text))


def edited_copies(passages: Sequence[Chunk], similarity: np.ndarray, weights: Sequence[float],
                  threshold: float, minority: Sequence[bool]) -> dict[int, int]:
    """{edited passage index: index of the better-supported original it departs from}. Only a copy
    that a minority of retrievers returned can be the edit: a passage most of them found is a
    source in its own right, however close it sits to another."""
    edited: dict[int, int] = {}
    signatures = [_signature(p.text) for p in passages]
    for i, j in zip(*np.nonzero(np.triu(similarity >= threshold, 1))):
        if signatures[i] == signatures[j] or weights[i] == weights[j]:
            continue      # same facts, or equal support: a conflict for the generators to face, not an edit
        low, high = (i, j) if weights[i] < weights[j] else (j, i)
        # An edit puts another name or number in a slot of the original; honest pages that repeat
        # one story with other details (a birthplace added, a date written out) do not.
        if minority[low] and conflicts(passages[low].text, passages[high].text):
            edited[int(low)] = int(high)
    return edited
