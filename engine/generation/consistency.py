"""Cross-answer consistency: do two answers agree on their core facts?

Claims are matched across answers by meaning (embedding cosine, or word overlap without an
embedder); matched claims must then agree exactly on numbers, names and polarity."""
from __future__ import annotations

from typing import Sequence

import numpy as np

from ..text import content_words, jaccard, negations, numbers
from ..verify.verifier import names


def _facts_agree(a: str, b: str) -> bool:
    return numbers(a) == numbers(b) and names(a) == names(b) and negations(a) == negations(b)


def agreement(claims_a: Sequence[str], claims_b: Sequence[str], embedder=None, match: float = 0.7) -> float:
    """Share of a's claims that b states too, with the same numbers, names and polarity (0 if b
    contradicts any of them: one matched-but-different fact is a disagreement)."""
    if not claims_a or not claims_b:
        return 0.0
    if embedder is not None:
        floor = getattr(embedder, "similarity_floor", 0.0)
        va = np.asarray(embedder.embed_passages(list(claims_a)))
        vb = np.asarray(embedder.embed_passages(list(claims_b)))
        sims = (va @ vb.T - floor) / (1.0 - floor)
    else:
        sims = np.array([[jaccard(set(content_words(a)), set(content_words(b))) for b in claims_b] for a in claims_a])
        match = min(match, 0.6)
    agreed = 0
    for i, a in enumerate(claims_a):
        j = int(np.argmax(sims[i]))
        if sims[i, j] < match:
            continue
        if not _facts_agree(a, claims_b[j]):
            return 0.0
        agreed += 1
    return agreed / len(claims_a)
