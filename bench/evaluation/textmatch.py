"""Answer matching and ROUGE-L, on normalised token sequences (no dependencies).

Normalisation: Unicode accents folded, lower case, apostrophes and separators inside numbers
removed ("1,000" → "1000"), every other non-alphanumeric character a token boundary, articles
dropped. A target matches when its whole token sequence occurs contiguously in the text, so
"no" never matches "not" and "Paris" never matches "Parisian".
"""
from __future__ import annotations

import re
import unicodedata

ARTICLES = frozenset({"a", "an", "the"})


def text_key(text: str) -> str:
    """A text with its runs of whitespace made one space: two copies of a sentence compare equal."""
    return " ".join(text.split())

_APOSTROPHE = re.compile(r"['’`]")
_NUMBER_SEPARATOR = re.compile(r"(?<=\d)[,.](?=\d)")
_NON_ALNUM = re.compile(r"[^0-9a-z]+")


def tokens(text: str) -> list[str]:
    folded = unicodedata.normalize("NFKD", text)
    folded = "".join(ch for ch in folded if not unicodedata.combining(ch)).lower()
    folded = _NUMBER_SEPARATOR.sub("", _APOSTROPHE.sub("", folded))
    return [t for t in _NON_ALNUM.split(folded) if t]


def normalize_tokens(text: str) -> tuple[str, ...]:
    raw = tokens(text)
    kept = [t for t in raw if t not in ARTICLES]
    return tuple(kept or raw)


def contains_answer(text: str, answer: str) -> bool:
    """True when the answer's normalised tokens occur, contiguously and whole, in the text."""
    target = normalize_tokens(answer)
    if not target:
        return False
    have = normalize_tokens(text)
    n = len(target)
    return any(have[i:i + n] == target for i in range(len(have) - n + 1))


def lcs_length(a: list[str] | tuple[str, ...], b: list[str] | tuple[str, ...]) -> int:
    if not a or not b:
        return 0
    if len(b) > len(a):
        a, b = b, a
    previous = [0] * (len(b) + 1)
    for x in a:
        current = [0]
        for j, y in enumerate(b, start=1):
            current.append(previous[j - 1] + 1 if x == y else max(previous[j], current[j - 1]))
        previous = current
    return previous[-1]


def rouge_l_f1(candidate: str, reference: str) -> float:
    """ROUGE-L F1 (beta = 1) on lower-cased word tokens: 2PR / (P + R) with P, R from the LCS."""
    a, b = tokens(candidate), tokens(reference)
    lcs = lcs_length(a, b)
    if lcs == 0:
        return 0.0
    precision, recall = lcs / len(a), lcs / len(b)
    return 2 * precision * recall / (precision + recall)
