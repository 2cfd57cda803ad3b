"""Which claims of an answer get checked: the generator's declared claims, and every atomic claim
the engine splits out of the answer itself, so an uncited statement cannot hide in the prose."""
from __future__ import annotations

import re

from ..text import content_words, jaccard, sentences
from ..types import Claim, ClaimOrigin, Generation

MIN_WORDS = 2     # fewer content words than this is no factual claim ("Yes.", "In short:")


def atomic_claims(text: str) -> list[str]:
    """Sentences, further split at semicolons: each piece states one thing."""
    pieces = []
    for sentence in sentences(text):
        pieces.extend(p.strip() for p in re.split(r";\s+", sentence) if p.strip())
    return [p for p in pieces if len(content_words(p)) >= MIN_WORDS]


YES_NO = frozenset({"yes", "no"})


def claims_to_check(gen: Generation, whole_answer: bool = False) -> list[tuple[Claim, ClaimOrigin]]:
    """(claim, origin) pairs: declared claims first, then answer pieces no declared claim covers.
    A split piece is checked against everything the generator cited.

    whole_answer (an LLM's reply): an answer too short to split ("1,400", "Asaph Hall") that no declared claim
    states is checked itself, so true claims cannot carry an answer they do not say (SmolLM2 once paired two
    true claims with "10.1.2.1.1.1..."). A bare yes or no is left to the claims: it states nothing alone."""
    declared = [(claim, ClaimOrigin.DECLARED) for claim in gen.claims]
    declared_words = [set(content_words(c.text)) for c in gen.claims]
    cited = tuple(dict.fromkeys(cid for claim in gen.claims for cid in claim.citations))
    split = []
    for piece in atomic_claims(gen.answer):
        words = set(content_words(piece))
        if not any(jaccard(words, d) >= 0.8 for d in declared_words):
            split.append((Claim(piece, cited), ClaimOrigin.SPLIT))
    if whole_answer and not split and gen.answer.strip():
        words = set(content_words(gen.answer))
        stated = any(words <= d for d in declared_words) and words
        if not stated and (words - YES_NO or not words):
            split.append((Claim(gen.answer.strip(), cited), ClaimOrigin.ANSWER))
    return declared + split
