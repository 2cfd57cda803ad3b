"""Retrieval v1: merge retrievers' lists by cross-agent agreement.

A chunk enters the context only if at least two retrievers returned the very same text under the
same id (when three or more answered): one agent alone cannot put a passage in front of the
generators. Several texts under one id mean somebody edited it: the text most agents returned
wins and the others are recorded as disputes against the agents that sent them.
"""
from __future__ import annotations

import dataclasses
from collections import defaultdict
from dataclasses import dataclass

from ..config import RetrievalSettings
from ..corpus import content_hash
from ..types import Chunk, ContextChunk

MIN_WORDS = 3


@dataclass(frozen=True)
class MergeReport:
    context: tuple[ContextChunk, ...]
    quorum: int                                   # agents that had to agree on a chunk
    dropped: tuple[tuple[str, str, str], ...]     # (agent_id, chunk_id, why) for cleaned-out chunks
    disputes: tuple[tuple[str, str], ...]         # (agent_id, chunk_id): agent sent an edited text
    fallback: bool                                # no chunk met the quorum; best single-agent chunks used


def clean(agent_id: str, chunks: tuple[Chunk, ...], settings: RetrievalSettings,
          dropped: list[tuple[str, str, str]]) -> list[Chunk]:
    kept, seen = [], set()
    for chunk in chunks:
        if len(chunk.text.split()) < MIN_WORDS:
            dropped.append((agent_id, chunk.id, "near-empty text"))
        elif chunk.id in seen:
            dropped.append((agent_id, chunk.id, "duplicate id in one reply"))
        else:
            seen.add(chunk.id)
            if len(chunk.text) > settings.max_chunk_chars:
                dropped.append((agent_id, chunk.id, f"text cut to {settings.max_chunk_chars} characters"))
                chunk = dataclasses.replace(chunk, text=chunk.text[:settings.max_chunk_chars])
            kept.append(chunk)
    return kept


def merge(replies: dict[str, tuple[Chunk, ...]], settings: RetrievalSettings) -> MergeReport:
    dropped: list[tuple[str, str, str]] = []
    # chunk id -> text hash -> [(agent, rank, chunk)]
    variants: dict[str, dict[str, list[tuple[str, int, Chunk]]]] = defaultdict(lambda: defaultdict(list))
    for agent_id, chunks in replies.items():
        for rank, chunk in enumerate(clean(agent_id, chunks, settings, dropped)):
            variants[chunk.id][content_hash(chunk.text)].append((agent_id, rank, chunk))
    quorum = 2 if len(replies) >= 3 else 1
    scored: list[ContextChunk] = []
    disputes: list[tuple[str, str]] = []
    for chunk_id, by_text in variants.items():
        ordered = sorted(by_text.values(), key=lambda votes: (-len(votes), sum(r for _, r, _ in votes)))
        winner = ordered[0]
        losers = tuple(agent for votes in ordered[1:] for agent, _, _ in votes)
        disputes.extend((agent, chunk_id) for agent in losers)
        score = sum(1.0 / (settings.rrf_k + rank) for _, rank, _ in winner)
        best = min(winner, key=lambda vote: vote[1])[2]
        scored.append(ContextChunk(chunk=best, score=round(score, 6),
                                   supported_by=tuple(sorted(agent for agent, _, _ in winner)), disputed_by=losers))
    scored.sort(key=lambda c: (-c.score, c.chunk.id))
    agreed = [c for c in scored if len(c.supported_by) >= quorum and len(c.supported_by) > len(c.disputed_by)]
    fallback = not agreed and bool(scored)
    context = (agreed or scored)[:settings.context_k]
    return MergeReport(tuple(context), quorum, tuple(dropped), tuple(disputes), fallback)
