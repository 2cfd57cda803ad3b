"""Intermediate reasoning without a model: the sentence of the hop's passages that answers its
sub-question, quoted and cited, and the bridge entity the next hop asks about."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from ..text import content_words
from ..types import Chunk, Claim
from ..verify.sentences import rank_sentences
from ..verify.verifier import names


@dataclass(frozen=True)
class Conclusion:
    claim: Claim | None          # the quoted sentence and the passage it is from (None: nothing answers)
    bridge: str                  # what the next hop asks about ("" when nothing names it)
    local_confidence: float      # the reasoner's own selection score: the share of the sub-question's weight
                                 # its sentence carries (rank_sentences), never the monitors' formula


def conclude(sub_question: str, evidence: Sequence[Chunk], question: str = "") -> Conclusion:
    ranked = rank_sentences(sub_question, evidence)
    wanted = set(content_words(sub_question))
    if not ranked or not wanted or not ranked[0].shared:
        return Conclusion(None, "", 0.0)
    best = ranked[0]
    chunk = next(c for c in evidence if c.id == best.chunk_id)
    return Conclusion(Claim(best.text, (chunk.id,)), bridge_entity(best.text, chunk, question or sub_question),
                      min(1.0, best.share))


def bridge_entity(sentence: str, chunk: Chunk, question: str) -> str:
    """The passage's own subject when the question does not name it (HotpotQA's bridge is usually a
    page title), else the first name in the sentence the question does not hold."""
    asked = set(content_words(question))
    title_words = set(content_words(chunk.title))
    if chunk.title and title_words and not title_words <= asked:
        return chunk.title.split(" (")[0]
    # In the order the sentence names them (names() is a set).
    for name in sorted(names(sentence), key=lambda n: (sentence.find(n), n)):
        if not set(content_words(name)) <= asked:
            return name
    return ""
