"""Which claims of an answer get checked: the generator's declared claims, and every atomic claim
the engine splits out of the answer itself, so an uncited statement cannot hide in the prose."""
from __future__ import annotations

import re

from ..text import content_words, jaccard, sentences
from ..types import Claim, Generation

MIN_WORDS = 2     # fewer content words than this is no factual claim ("Yes.", "In short:")


def atomic_claims(text: str) -> list[str]:
    """Sentences, further split at semicolons: each piece states one thing."""
    pieces = []
    for sentence in sentences(text):
        pieces.extend(p.strip() for p in re.split(r";\s+", sentence) if p.strip())
    return [p for p in pieces if len(content_words(p)) >= MIN_WORDS]


def claims_to_check(gen: Generation) -> list[tuple[Claim, str]]:
    """(claim, origin) pairs: declared claims first, then answer pieces no declared claim covers.
    A split piece is checked against everything the generator cited."""
    declared = [(claim, "declared") for claim in gen.claims]
    declared_words = [set(content_words(c.text)) for c in gen.claims]
    cited = tuple(dict.fromkeys(cid for claim in gen.claims for cid in claim.citations))
    split = []
    for piece in atomic_claims(gen.answer):
        words = set(content_words(piece))
        if not any(jaccard(words, d) >= 0.8 for d in declared_words):
            split.append((Claim(piece, cited), "split"))
    return declared + split
