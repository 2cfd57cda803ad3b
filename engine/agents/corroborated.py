"""An extractive generator that gives an answer only where a second passage corroborates it.

A planted passage written to answer one question usually stands alone: what it adds to the question
(the attacker's answer) appears in no other passage of the context. This generator looks at the best
few question-matching sentences in rank order and answers with the first one whose new words
another passage also carries; when none has that support it abstains rather than quote a lone
source. It trades answers for safety: the evaluation (`eval retrieval --answerer corroborated`)
measures both sides.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..text import content_words
from ..types import Chunk, Generation
from ..verify.sentences import ScoredSentence, answer_words, rank_sentences
from .extractive import ExtractiveGenerator


@dataclass(frozen=True)
class CorroborationSettings:
    candidates: int = 3          # best question-matching sentences considered, in rank order
    min_score_share: float = 0.5  # ... each at least this share of the best one's score
    carried_share: float = 0.5   # share of a sentence's new words another passage must contain


class CorroboratedGenerator:
    def __init__(self, settings: CorroborationSettings = CorroborationSettings()) -> None:
        self.settings = settings

    def generate(self, query: str, context: tuple[Chunk, ...]) -> Generation:
        ranked = rank_sentences(query, context)
        wanted = set(content_words(query))
        if not ranked or not wanted or not ranked[0].shared:
            return _abstain("No context sentence shares a content word with the question.")
        words_of = {chunk.id: set(content_words(chunk.text)) for chunk in context}
        for sentence in self._candidates(ranked):
            supporters = self._supporters(sentence, query, words_of)
            if supporters:
                generation = ExtractiveGenerator.answer_from(ranked, sentence, wanted)
                note = f"Passage(s) {', '.join(supporters)} also carry what it adds to the question."
                return Generation(answer=generation.answer, reasoning=generation.reasoning + (note,),
                                  claims=generation.claims, confidence=generation.confidence)
        return _abstain("No candidate answer is carried by a second passage: each rests on one source alone.")

    def _candidates(self, ranked: list[ScoredSentence]) -> list[ScoredSentence]:
        floor = self.settings.min_score_share * ranked[0].score
        return [s for s in ranked[:self.settings.candidates] if s.score >= floor]

    def _supporters(self, sentence: ScoredSentence, query: str, words_of: dict[str, set[str]]) -> list[str]:
        new = answer_words(sentence.text, query)
        if not new:
            return []
        needed = max(1.0, self.settings.carried_share * len(new))
        return [chunk_id for chunk_id, words in words_of.items()
                if chunk_id != sentence.chunk_id and len(new & words) >= needed]


def _abstain(reason: str) -> Generation:
    return Generation(answer="", reasoning=(reason,), claims=(), confidence=0.0)
