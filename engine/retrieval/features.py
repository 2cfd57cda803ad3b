"""Per-passage features: who returned it, how trustworthy its metadata looks, whether it contradicts itself."""
from __future__ import annotations

import datetime as dt
import math
from dataclasses import dataclass

from ..text import content_words, jaccard, negations, numbers, sentences
from ..types import Chunk

NEUTRAL = 0.5
FRESHNESS_HALF_LIFE_YEARS = 10.0


@dataclass(frozen=True)
class Passage:
    """One distinct text returned for this question, with every (agent, rank) that returned it."""
    key: str                                  # content hash
    chunk: Chunk                              # representative (the id most agents used)
    returned_by: tuple[tuple[str, int], ...]  # (agent_id, rank)

    @property
    def agents(self) -> tuple[str, ...]:
        return tuple(sorted({agent for agent, _ in self.returned_by}))


def metadata_confidence(chunk: Chunk, today: dt.date) -> float:
    """Authority, freshness and position (an opening passage states what a document is about)."""
    try:
        authority = min(1.0, max(0.0, float(chunk.metadata.get("authority", NEUTRAL))))
    except (TypeError, ValueError):
        authority = NEUTRAL
    freshness = NEUTRAL
    date = chunk.metadata.get("date")
    if isinstance(date, str) and date:
        try:
            age_years = max(0.0, (today - dt.date.fromisoformat(date)).days / 365.25)
            freshness = math.exp(-age_years * math.log(2) / FRESHNESS_HALF_LIFE_YEARS)
        except ValueError:
            pass
    position = chunk.metadata.get("position")
    position_score = NEUTRAL if not isinstance(position, int) else (1.0 if position == 0 else 0.7)
    return round(0.5 * authority + 0.25 * freshness + 0.25 * position_score, 4)


def internally_consistent(text: str) -> bool:
    """False when two sentences of one passage say nearly the same thing with different numbers or polarity."""
    parts = [(set(content_words(s)), numbers(s), negations(s)) for s in sentences(text)]
    for i in range(len(parts)):
        for j in range(i + 1, len(parts)):
            (wi, ni, gi), (wj, nj, gj) = parts[i], parts[j]
            if len(wi) >= 4 and jaccard(wi, wj) >= 0.6 and ((ni and nj and ni != nj) or gi != gj):
                return False
    return True
