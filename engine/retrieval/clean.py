"""Pre-cleaning of retrievers' replies: drop what cannot be evidence, cap what is too long, say why."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from ..config import RetrievalSettings
from ..types import Chunk

MIN_WORDS = 3


@dataclass(frozen=True)
class Dropped:
    agent_id: str
    chunk_id: str
    reason: str


def clean(agent_id: str, chunks: tuple[Chunk, ...], settings: RetrievalSettings,
          dropped: list[Dropped]) -> list[Chunk]:
    kept, seen = [], set()
    for chunk in chunks:
        if len(chunk.text.split()) < MIN_WORDS:
            dropped.append(Dropped(agent_id, chunk.id, "near-empty text"))
        elif chunk.id in seen:
            dropped.append(Dropped(agent_id, chunk.id, "duplicate id in one reply"))
        else:
            seen.add(chunk.id)
            if len(chunk.text) > settings.max_chunk_chars:
                dropped.append(Dropped(agent_id, chunk.id, f"text cut to {settings.max_chunk_chars} characters"))
                chunk = dataclasses.replace(chunk, text=chunk.text[:settings.max_chunk_chars])
            kept.append(chunk)
    return kept
