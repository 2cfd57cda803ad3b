"""Cross-answer consistency: do two answers agree on their core facts?

Claims are matched across answers by meaning (embedding cosine, or word overlap without an
embedder); matched claims must then agree exactly on numbers, names and polarity."""
from __future__ import annotations

from typing import Sequence

import numpy as np

from ..text import content_words, jaccard, negations, numbers
from ..verify.alignment import conflicts, same_entities


def _facts_agree(a: str, b: str) -> bool:
    """Same numbers, names and polarity, and no entity in another's role ("B defeated A")."""
    return numbers(a) == numbers(b) and negations(a) == negations(b) and same_entities(a, b) and not conflicts(a, b)


def _similarities(claims_a: Sequence[str], claims_b: Sequence[str], embedder) -> tuple[np.ndarray, float]:
    """Pairwise claim similarity, and the threshold relief for word overlap (coarser than embeddings)."""
    if embedder is not None:
        floor = getattr(embedder, "similarity_floor", 0.0)
        va = np.asarray(embedder.embed_passages(list(claims_a)))
        vb = np.asarray(embedder.embed_passages(list(claims_b)))
        return (va @ vb.T - floor) / (1.0 - floor), 1.0
    sims = np.array([[jaccard(set(content_words(a)), set(content_words(b))) for b in claims_b] for a in claims_a])
    return sims, 0.6


def _matches(claims_a: Sequence[str], claims_b: Sequence[str], sims: np.ndarray, match: float):
    """Per claim of a: None when b says nothing about it, else whether some claim of b about the
    same thing states the same facts (b may hold a similar sentence about something else too)."""
    for i, a in enumerate(claims_a):
        close = [j for j in np.argsort(-sims[i]) if sims[i, j] >= match]
        yield None if not close else any(_facts_agree(a, claims_b[j]) for j in close)


def _directional(claims_a: Sequence[str], claims_b: Sequence[str], sims: np.ndarray, match: float) -> float:
    agreed = 0
    for same in _matches(claims_a, claims_b, sims, match):
        if same is False:
            return 0.0
        agreed += bool(same)
    return agreed / len(claims_a)


def agreement(claims_a: Sequence[str], claims_b: Sequence[str], embedder=None, match: float = 0.7) -> float:
    """Share of a's claims that b states too, with the same numbers, names and polarity (0 if b
    contradicts any of them: one matched-but-different fact is a disagreement)."""
    if not claims_a or not claims_b:
        return 0.0
    sims, cap = _similarities(claims_a, claims_b, embedder)
    return _directional(claims_a, claims_b, sims, min(match, cap))


def mutual_agreement(claims_a: Sequence[str], claims_b: Sequence[str], embedder=None, match: float = 0.7) -> float:
    """Agreement that holds both ways (the smaller direction): an answer that repeats part of
    another while contradicting the rest does not agree with it. One similarity matrix serves both."""
    if not claims_a or not claims_b:
        return 0.0
    sims, cap = _similarities(claims_a, claims_b, embedder)
    match = min(match, cap)
    return min(_directional(claims_a, claims_b, sims, match), _directional(claims_b, claims_a, sims.T, match))


def contradicts(claims_a: Sequence[str], claims_b: Sequence[str], embedder=None, match: float = 0.7) -> bool:
    """Whether some claim of a and the claim of b about the same fact state different facts. Two
    answers that say different true things (a date and a place) do not contradict each other."""
    if not claims_a or not claims_b:
        return False
    sims, cap = _similarities(claims_a, claims_b, embedder)
    return any(same is False for same in _matches(claims_a, claims_b, sims, min(match, cap)))
