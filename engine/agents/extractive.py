"""A deterministic extractive generator: no LLM, every word of its answer is in its context.

It picks the context sentence that shares the most content words with the question, answers with
it verbatim and cites the chunk it came from; a second sentence from another chunk that says the
same is added as a corroborating claim.
"""
from __future__ import annotations

from ..text import content_words, overlap
from ..types import Chunk, Claim, Generation
from ..verify.dated import dated_conflict
from ..verify.sentences import ScoredSentence, rank_sentences


def is_code(chunk: Chunk) -> bool:
    """A code block of a document (engine.ingest): cited and shown, never quoted as an answer sentence."""
    return chunk.metadata.get("kind") == "code"


class ExtractiveGenerator:
    def generate(self, query: str, context: tuple[Chunk, ...]) -> Generation:
        wanted = set(content_words(query))
        ranked = rank_sentences(query, tuple(c for c in context if not is_code(c)))
        if not ranked or not wanted or not ranked[0].shared:
            code = rank_sentences(query, tuple(c for c in context if is_code(c)))
            if code and wanted and code[0].shared:
                return Generation(answer=f"Only code answers this: see [{code[0].chunk_id}].",
                                  reasoning=(f"No prose sentence shares a content word with the question; the code "
                                             f"in [{code[0].chunk_id}] does ({', '.join(code[0].shared)}).",),
                                  claims=(), confidence=0.0)
            return Generation(answer="", reasoning=("No context sentence shares a content word with the question.",),
                              claims=(), confidence=0.0)
        conflict = dated_conflict(query, context)
        if conflict is not None and ranked[0].chunk_id != conflict.newer.chunk_id:
            # Sources of different dates give different values: answer from the newest authoritative one.
            newer = next(s for s in ranked if s.chunk_id == conflict.newer.chunk_id and s.text == conflict.newer.text)
            generation = self.answer_from(ranked, newer, wanted)
            return Generation(answer=generation.answer, reasoning=generation.reasoning + (conflict.describe() + ".",),
                              claims=generation.claims, confidence=generation.confidence)
        return self.answer_from(ranked, ranked[0], wanted)

    @staticmethod
    def answer_from(ranked: list[ScoredSentence], best: ScoredSentence, wanted: set[str]) -> Generation:
        claims = [Claim(best.text, (best.chunk_id,))]
        best_words = set(content_words(best.text))
        for other in ranked:
            if other.chunk_id != best.chunk_id and other.score >= 0.6 * best.score \
                    and overlap(best_words, set(content_words(other.text))) >= 0.5:
                claims.append(Claim(other.text, (other.chunk_id,)))
                break
        reasoning = (
            f"The question asks about: {', '.join(sorted(wanted))}.",
            f"The best matching sentence is in [{best.chunk_id}] and shares: {', '.join(best.shared) or 'title words'}.",
            f"{len(claims) - 1} other passage(s) say the same." if len(claims) > 1 else "No other passage repeats it.",
            "The answer is that sentence, quoted from the context.",
        )
        confidence = min(1.0, len(best.shared) / max(1, len(wanted)))
        return Generation(answer=best.text, reasoning=reasoning, claims=tuple(claims), confidence=round(confidence, 3))
