"""Passages of the context that answer the question with another value than the chosen answer.

Generators may all quote one passage (often a planted one: it is written to match the question) while another
passage of the same context answers differently. Before an answer is given, the sentence of every other
passage that is closest to the question is read by the meaning verifier's answers task; one that answers the
question and states another fact about the same thing (engine.generation.consistency.contradicts) is a
competing position. With one, the engine does not pick: it abstains and names both positions with their
sources. (Sources of different dates are engine.verify.dated's: there a stated rule prefers the newer.)"""
from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Sequence

from ..text import closest_sentences, shorten
from ..types import Chunk
from ..verify.meaning import ANSWERS
from .consistency import contradicts
from .meaning_check import MeaningReader

MAX_SHOWN_CHARS = 160    # a position's sentence in the reason, cut here (the evidence view shows it whole)


@dataclass(frozen=True)
class Position:
    chunk_id: str
    text: str              # the passage's sentence that answers the question
    relevance: float       # P(it answers the question)


@dataclass(frozen=True)
class CompetingPositions:
    chosen: tuple[str, ...]            # the chunks the chosen answer cites
    chosen_text: str
    others: tuple[Position, ...]

    def describe(self) -> str:
        mine = ", ".join(f"[{c}]" for c in self.chosen)
        theirs = "; ".join(f"[{p.chunk_id}] says \"{shorten(p.text, MAX_SHOWN_CHARS)}\"" for p in self.others)
        return (f"the context answers with different values: {mine} says "
                f"\"{shorten(self.chosen_text, MAX_SHOWN_CHARS)}\"; {theirs}")


async def competing_positions(question: str, chosen_claims: Sequence[str], cited: Sequence[str],
                              context: Sequence[Chunk], model: MeaningReader, answers_at: float, *,
                              embedder=None, match: float = 0.7) -> CompetingPositions | None:
    """None when no passage the chosen answer does not cite answers the question with another fact."""
    if not chosen_claims:
        return None
    cited_ids = set(cited)
    closest = {chunk.id: closest_sentences(question, [chunk.text], 1) for chunk in context if chunk.id not in cited_ids}
    # The cheap comparison first: only a sentence that states another fact goes to the model.
    differing = {cid: text for cid, text in closest.items()
                 if text and contradicts(list(chosen_claims), [text], embedder, match)}
    if not differing:
        return None
    ids = list(differing)
    scores = await asyncio.to_thread(model.score, ANSWERS, [(question, differing[cid]) for cid in ids])
    others = tuple(Position(cid, differing[cid], round(p, 4)) for cid, p in zip(ids, scores) if p >= answers_at)
    if not others:
        return None
    return CompetingPositions(tuple(sorted(cited_ids)), " ".join(chosen_claims), others)
