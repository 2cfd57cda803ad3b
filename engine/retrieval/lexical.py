"""Lexical near-duplicates: pairs of passages that share long runs of words in order (ROUGE-L F1 on word
tokens), whatever an embedder makes of them.

Texts written for one question share its n-grams: TrustRAG (Zhou et al. 2025) drops both texts of any pair above
ROUGE-L 0.25 for that reason. Secure retrieval takes the test as a second kind of near-duplicate link for its echo
groups ([retrieval] echo_rouge); the group is then judged like any echo (it must mirror the question, and an
independent passage may corroborate it), so honest passages that merely share words are not dropped on sight.
"""
from __future__ import annotations

import re
from collections import Counter
from typing import Sequence

import numpy as np

_TOKEN = re.compile(r"[0-9a-z]+")


def tokens(text: str) -> list[str]:
    return _TOKEN.findall(text.lower())


def lcs_length(a: Sequence[str], b: Sequence[str]) -> int:
    """Length of the longest common subsequence, bit-parallel over b (Hyyrö 2004): one big-int step per token of a."""
    if not a or not b:
        return 0
    masks: dict[str, int] = {}
    for position, token in enumerate(b):
        masks[token] = masks.get(token, 0) | (1 << position)
    full = (1 << len(b)) - 1
    row = full
    for token in a:
        match = masks.get(token, 0)
        if match:
            carry = row & match
            row = ((row + carry) | (row & ~match)) & full
    return len(b) - bin(row).count("1")


def _f1(common: int, a: int, b: int) -> float:
    return 0.0 if common == 0 else 2 * common / (a + b)


def rouge_links(texts: Sequence[str], threshold: float) -> np.ndarray:
    """A symmetric boolean matrix: ROUGE-L F1 of the two texts above `threshold`. A pair whose shared words (as a
    multiset, an upper bound of the LCS) cannot reach it is never aligned; a threshold of 1 or more links nothing."""
    n = len(texts)
    linked = np.zeros((n, n), dtype=bool)
    if threshold >= 1.0 or n < 2:
        return linked
    split = [tokens(t) for t in texts]
    bags = [Counter(t) for t in split]
    for i in range(n):
        for j in range(i + 1, n):
            a, b = split[i], split[j]
            if _f1(sum((bags[i] & bags[j]).values()), len(a), len(b)) <= threshold:
                continue
            if _f1(lcs_length(a, b), len(a), len(b)) > threshold:
                linked[i, j] = linked[j, i] = True
    return linked
