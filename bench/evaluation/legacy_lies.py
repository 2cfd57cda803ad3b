"""The legacy lies: the old fault rules of the built-in agents (engine.agents.faults), kept for comparison with
the headline lies of lies.py. They are the product's own fault injector, so unlike lies.py they may share its
reading of a text (the extractive generator's sentence ranking for omit-best)."""
from __future__ import annotations

import re

from engine.agents.extractive import ExtractiveGenerator
from engine.agents.faults import FaultInjector
from engine.text import content_words
from engine.types import Chunk, FaultKind, FaultProfile, Generation
from engine.verify.sentences import rank_sentences

from .textmatch import text_key
from .lies import Lie, LieKind


def legacy_lie(kind: LieKind, question: str, honest: Generation, context: tuple[Chunk, ...], seed: int = 0) -> Lie:
    """The old fault rules (engine.agents.faults), for comparison with the headline lies."""
    if kind is LieKind.OMIT_BEST:   # engine/agents/server.py: answer from the second-best sentence
        ranked = rank_sentences(question, context)
        gen = (ExtractiveGenerator.answer_from(ranked, ranked[1], set(content_words(question)))
               if len(ranked) > 1 else honest)
    else:
        gen = FaultInjector(FaultProfile(kind=FaultKind(kind.value), seed=seed)).corrupt_generation(
            question, honest, context)
    pieces = {text_key(c.text) for c in honest.claims} | {text_key(honest.answer)}
    pieces |= {text_key(p) for c in honest.claims for p in re.split(r";\s+", c.text)}
    cited = gen.claims[0].citations[0] if gen.claims and gen.claims[0].citations else ""
    return Lie(kind, gen, honest.answer, cited, honest_pieces=frozenset(pieces))
