"""A deterministic extractive generator: no LLM, every word of its answer is in its context.

It picks the context sentence that shares the most content words with the question, answers with
it verbatim and cites the chunk it came from; a second sentence from another chunk that says the
same is added as a corroborating claim. A sentence that cannot stand alone is answered together with
its neighbour in the same passage (`companion`): both quoted verbatim, each its own claim.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from ..text import content_words, overlap, sentences, words
from ..types import Chunk, Claim, Generation
from ..verify.dated import dated_conflict
from ..verify.sentences import ScoredSentence, rank_sentences

# A sentence opening with one of these leans on the sentence before it for its subject or its sense.
POINTS_BACK = frozenset("""
it it's its this these those that they their them he his him she her such
however therefore thus hence moreover furthermore also instead otherwise consequently nevertheless similarly
""".split())
MIN_CONTENT_WORDS = 4       # fewer than this and a sentence says too little to stand alone ("It was a hit.")
_ENDS_SENTENCE = re.compile(r"[.!?:][\"')\]”’]*$")
_OPENS_PROSE = re.compile(r"[\w\"'“‘(]")     # not a markup character ("#", "|", "-", "*", ">", "`")
# A table row read as text (engine.ingest.markdown.table_row): "Header: cell; Header: cell."
_TABLE_ROW = re.compile(r"^[^:;]{1,40}: [^;]+(?:; [^:;]{1,40}: [^;]+)+$")


def is_code(chunk: Chunk) -> bool:
    """A code block of a document (engine.ingest): cited and shown, never quoted as an answer sentence."""
    return chunk.metadata.get("kind") == "code"


@dataclass(frozen=True)
class Companion:
    """The neighbour a sentence is answered with, and why the sentence could not stand alone."""
    text: str
    before: bool          # the neighbour comes before the sentence in its passage
    reason: str


def joinable(sentence: str) -> bool:
    """Running prose that can be quoted beside another sentence: one line that ends as a sentence does, not a
    heading-like fragment, a table row or a list marker."""
    return ("\n" not in sentence and len(sentence.split()) >= 3 and _ENDS_SENTENCE.search(sentence) is not None
            and _OPENS_PROSE.match(sentence) is not None and not _TABLE_ROW.match(sentence))


def companion(best: str, chunk: Chunk, wanted: set[str]) -> Companion | None:
    """The sentence of the same passage `best` needs beside it, if any: the one before when it points back, the one
    after when that one carries at least half the question words it lacks, the one before (else after) when it is
    short. (A sentence ending with a colon is always last in its passage: engine.text.sentences cuts only after
    . ! or ?, so what follows the colon is another passage, a list or code, and is never joined.)"""
    if chunk.metadata.get("kind") in ("code", "table") or not joinable(best):
        return None
    units = sentences(chunk.text)
    if best not in units:
        return None
    at = units.index(best)
    before = units[at - 1] if at > 0 and joinable(units[at - 1]) else None
    after = units[at + 1] if at + 1 < len(units) and joinable(units[at + 1]) else None
    opener = next(iter(words(best)), "")
    have = set(content_words(best))
    missing = wanted - have
    carried = missing & set(content_words(after or ""))
    if before and opener in POINTS_BACK:
        return Companion(before, True, f'It opens with "{best.split()[0].rstrip(",")}", which points back')
    if after and carried and 2 * len(carried) >= len(missing):
        return Companion(after, False,
                         f"The next sentence carries question words it lacks ({', '.join(sorted(carried))})")
    if len(have) < MIN_CONTENT_WORDS and (before or after):
        return Companion(before or after, before is not None,
                         f"It is short ({len(have)} content word{'s' if len(have) != 1 else ''})")
    return None


def stands_alone(sentence: str) -> bool:
    """Whether a sentence can be an answer at all: not one that announces what follows it ("To install
    Hypothesis:", a list or code comes next), nor a fragment of one or two words (a heading, a label)."""
    return not sentence.rstrip().endswith(":") and len(sentence.split()) >= 3


def _number(value) -> float:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0.0


def lead_first(ranked: list[ScoredSentence], context: tuple[Chunk, ...]) -> list[ScoredSentence]:
    """Among the sentences that share the best one's question words, a document's earlier passage first: a
    README says what a package is before how to test it, and "What is fsspec for?" shares one word with both.
    Passages of different documents keep their order (position is within a document)."""
    if not ranked:
        return ranked
    # Metadata is the retriever's word: a position that is no number (null, a string) counts as the opening.
    position = {c.id: _number(c.metadata.get("position")) for c in context}
    document = {c.id: c.metadata.get("doc_id", c.id) for c in context}
    top = ranked[0]
    rivals = [s for s in ranked if s.shared == top.shared and document.get(s.chunk_id) == document.get(top.chunk_id)]
    lead = min(rivals, key=lambda s: position.get(s.chunk_id, 0))     # min keeps the first of equals: rank order
    return [lead] + [s for s in ranked if s is not lead]


class ExtractiveGenerator:
    def generate(self, query: str, context: tuple[Chunk, ...]) -> Generation:
        wanted = set(content_words(query))
        ranked = lead_first([s for s in rank_sentences(query, tuple(c for c in context if not is_code(c)))
                             if stands_alone(s.text)], context)
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
            newer = next((s for s in ranked if s.chunk_id == conflict.newer.chunk_id and s.text == conflict.newer.text),
                         ScoredSentence(conflict.newer.text, conflict.newer.chunk_id, ranked[0].score, ranked[0].shared))
            generation = self.answer_from(ranked, newer, wanted, context)
            return Generation(answer=generation.answer, reasoning=generation.reasoning + (conflict.describe() + ".",),
                              claims=generation.claims, confidence=generation.confidence)
        return self.answer_from(ranked, ranked[0], wanted, context)

    @staticmethod
    def answer_from(ranked: list[ScoredSentence], best: ScoredSentence, wanted: set[str],
                    context: tuple[Chunk, ...] = ()) -> Generation:
        """The answer `best` gives; with the context, a sentence that cannot stand alone brings its neighbour.
        The first claim is always `best` (the liars of bench.evaluation.lies rewrite it)."""
        chunk = next((c for c in context if c.id == best.chunk_id and best.text in c.text), None)
        pair = companion(best.text, chunk, wanted) if chunk is not None else None
        claims = [Claim(best.text, (best.chunk_id,))]
        if pair is not None:
            claims.append(Claim(pair.text, (best.chunk_id,)))
        best_words = set(content_words(best.text))
        corroborated = 0
        for other in ranked:
            if other.chunk_id != best.chunk_id and other.score >= 0.6 * best.score \
                    and overlap(best_words, set(content_words(other.text))) >= 0.5:
                claims.append(Claim(other.text, (other.chunk_id,)))
                corroborated += 1
                break
        reasoning = (
            f"The question asks about: {', '.join(sorted(wanted))}.",
            f"The best matching sentence is in [{best.chunk_id}] and shares: {', '.join(best.shared) or 'title words'}.",
            f"{corroborated} other passage(s) say the same." if corroborated else "No other passage repeats it.",
        )
        if pair is None:
            answer = best.text
            reasoning += ("The answer is that sentence, quoted from the context.",)
        else:
            answer = f"{pair.text} {best.text}" if pair.before else f"{best.text} {pair.text}"
            where = "before" if pair.before else "after"
            reasoning += (f"{pair.reason}: the sentence {where} it in [{best.chunk_id}] is quoted with it.",
                          "The answer is those two sentences, quoted from the context.")
        confidence = min(1.0, len(best.shared) / max(1, len(wanted)))
        return Generation(answer=answer, reasoning=reasoning, claims=tuple(claims), confidence=round(confidence, 3))
