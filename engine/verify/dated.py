"""Honest sources that disagree because one is newer: "more than 140 moons" (2023) beside "274"
(2025). When the sentences that best answer a question come from passages of different dates and
state different values, the newest authoritative one is preferred and the disagreement is said.
"""
from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass
from typing import Sequence

from ..text import numbers
from ..types import Chunk
from .sentences import answer_words, rank_sentences

NEAR_BEST = 0.85        # a sentence answers as well as the best one when it scores this share of it
MIN_AUTHORITY = 0.5     # below this a source is not preferred for being newer (a blog, a forum)
AUTHORITY_SLACK = 0.1   # the newer source may be this much less authoritative than the most authoritative
SAME_FACT_WORDS = 2     # words beyond the question's that two statements of one fact share
_VALUE_QUESTION = re.compile(r"\b(how (many|much|long|far|old|big|large|tall|high|deep|heavy|fast|often)|when|"
                             r"(what|which) (year|date|day|month)|in what year)\b", re.IGNORECASE)


@dataclass(frozen=True)
class DatedStatement:
    chunk_id: str
    text: str
    date: dt.date
    authority: float
    values: frozenset[str]


@dataclass(frozen=True)
class DatedConflict:
    newer: DatedStatement
    older: tuple[DatedStatement, ...]

    def describe(self) -> str:
        older = "; ".join(f"[{s.chunk_id}] ({s.date.isoformat()}) says {', '.join(sorted(s.values))}"
                          for s in self.older)
        return (f"sources differ: {older}; the newer [{self.newer.chunk_id}] ({self.newer.date.isoformat()}) "
                f"says {', '.join(sorted(self.newer.values))} and is preferred")


def _statement(chunk: Chunk, text: str) -> DatedStatement | None:
    raw = chunk.metadata.get("date")
    try:
        date = dt.date.fromisoformat(str(raw)) if raw else None
        authority = float(chunk.metadata.get("authority", 0.5))
    except (TypeError, ValueError):
        return None
    if date is None:
        return None
    # The year a passage was written in is when it spoke, not what it says.
    values = frozenset(numbers(text) - {str(date.year)})
    return DatedStatement(chunk.id, text, date, authority, values)


def _differ(a: DatedStatement, b: DatedStatement) -> bool:
    """Other figures, and not merely a more precise one ("14 January 2005" against "January 2005")."""
    raw_a, raw_b = numbers(a.text), numbers(b.text)
    return not a.values & b.values and not raw_a <= raw_b and not raw_b <= raw_a


def _same_fact(question: str, a: str, b: str) -> bool:
    """Two statements of one fact share words beyond the question's ("astronomers announced ... moons
    of Saturn"); a sentence about another discovery that happens to match the question does not."""
    return len(answer_words(a, question) & answer_words(b, question)) >= SAME_FACT_WORDS


def asks_for_value(question: str) -> bool:
    """A question whose answer is a number or a date: only then do different figures disagree."""
    return _VALUE_QUESTION.search(question) is not None


def dated_conflict(question: str, context: Sequence[Chunk]) -> DatedConflict | None:
    """For a question that asks for a number or a date: the newest authoritative statement among
    the best answers, and the older ones that give other values; None when they agree, carry no
    values or no dates, or the question asks for something else ("Who discovered Pluto?")."""
    if not asks_for_value(question):
        return None
    ranked = rank_sentences(question, context)
    if not ranked or ranked[0].score <= 0:
        return None
    by_id = {c.id: c for c in context}
    best: dict[str, DatedStatement] = {}
    for scored in ranked:
        if scored.score < NEAR_BEST * ranked[0].score:
            break
        if scored.chunk_id not in best:
            statement = _statement(by_id[scored.chunk_id], scored.text)
            if statement is not None and statement.values:
                best[scored.chunk_id] = statement
    statements = list(best.values())
    if len(statements) < 2:
        return None
    floor = max(MIN_AUTHORITY, max(s.authority for s in statements) - AUTHORITY_SLACK)
    trusted = [s for s in statements if s.authority >= floor]
    if not trusted:
        return None
    newer = max(trusted, key=lambda s: (s.date, s.authority))
    older = tuple(sorted((s for s in statements if s.date < newer.date and _differ(s, newer)
                          and _same_fact(question, s.text, newer.text)),
                         key=lambda s: s.date, reverse=True))
    return DatedConflict(newer, older) if older else None
