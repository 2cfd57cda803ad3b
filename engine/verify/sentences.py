"""Which sentence of some passages answers a question, and whether two answers say the same thing.

Shared by the extractive generator (to answer), secure retrieval (to compare what an echo cluster
claims with what independent passages say) and trusted generation (to compare answers).
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Sequence

from ..text import content_words, sentences
from ..types import Chunk

# "In what year ...": the word names the kind of value asked for, not what the answer is about; a sentence that
# says "it took more than a year" is no nearer the launch date for sharing it.
_ASKED_KIND = re.compile(r"\b(?:what|which)\s+(year|date|day|month|century|decade)\b", re.IGNORECASE)


def asked_kind(query: str) -> set[str]:
    """The words of a question that name the kind of value it asks for ("year" in "In what year ...?")."""
    return {m.group(1).lower() for m in _ASKED_KIND.finditer(query)}


@dataclass(frozen=True)
class ScoredSentence:
    text: str
    chunk_id: str
    score: float
    shared: tuple[str, ...]
    share: float = 0.0     # of the query's weight, what the sentence carries (its title's words at half weight)


def rank_sentences(query: str, context: Sequence[Chunk]) -> list[ScoredSentence]:
    """Scores each context sentence by the question words it shares, rarer words weighing more; the word that
    names the kind of value asked for (asked_kind) is no topic to share."""
    wanted = set(content_words(query)) - asked_kind(query)
    units = [(rank, chunk, sentence, set(content_words(sentence)))
             for rank, chunk in enumerate(context) for sentence in sentences(chunk.text)]
    weight = {w: math.log(1 + len(units) / (1 + sum(w in have for *_, have in units))) for w in wanted}
    possible = sum(weight.values())
    ranked = []
    for rank, chunk, sentence, have in units:
        title = set(content_words(chunk.title))
        shared = wanted & have
        # Title words count half: they tell what the passage is about, not what it says.
        carried = sum(weight[w] for w in shared) + 0.5 * sum(weight[w] for w in (wanted & title) - have)
        ranked.append(ScoredSentence(sentence, chunk.id, carried + 0.1 / (1 + rank), tuple(sorted(shared)),
                                     round(carried / possible, 3) if possible else 0.0))
    ranked.sort(key=lambda s: -s.score)
    return ranked


def best_sentence(query: str, context: Sequence[Chunk]) -> str:
    ranked = rank_sentences(query, context)
    return ranked[0].text if ranked else ""


def answer_words(answer: str, question: str) -> set[str]:
    """What an answer adds to its question: its content words minus the question's."""
    return set(content_words(answer)) - set(content_words(question))
