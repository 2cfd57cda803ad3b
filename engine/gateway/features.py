"""Text → a sparse hashed feature vector (words, word pairs, character 3-5-grams), and the windows a
long text is scored in. Numpy only: the classifier that reads these ships as a small artifact."""
from __future__ import annotations

import hashlib
import re
import unicodedata

import numpy as np

DIM = 1 << 16
WINDOW_WORDS = 60          # an injection diluted in a long page is scored in windows this long
STRIDE_WORDS = 30
_WORD = re.compile(r"\w+|[^\w\s]", re.UNICODE)
_INVISIBLE = re.compile("[\u200b-\u200f\u2060-\u2064\ufeff\u202a-\u202e\u2066-\u2069]")


def normalise(text: str) -> str:
    text = unicodedata.normalize("NFKC", text)
    return " ".join(_INVISIBLE.sub("", text).lower().split())


def _bucket(token: str) -> int:
    return int.from_bytes(hashlib.blake2b(token.encode("utf-8"), digest_size=4).digest(), "little") % DIM


def tokens(text: str) -> list[str]:
    """Word unigrams and bigrams (CJK text: single characters and pairs) and character 3-5-grams."""
    norm = normalise(text)
    words = _WORD.findall(norm)
    out = [f"w:{w}" for w in words] + [f"b:{a} {b}" for a, b in zip(words, words[1:])]
    for n in (3, 4, 5):
        out += [f"c:{norm[i:i + n]}" for i in range(max(0, len(norm) - n + 1))]
    return out


def vector(text: str) -> tuple[np.ndarray, np.ndarray]:
    """(indices, values): l2-normalised log counts of the hashed tokens."""
    counts: dict[int, float] = {}
    for token in tokens(text):
        at = _bucket(token)
        counts[at] = counts.get(at, 0.0) + 1.0
    if not counts:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
    idx = np.fromiter(counts.keys(), dtype=np.int64)
    val = np.log1p(np.fromiter(counts.values(), dtype=np.float32))
    return idx, val / np.linalg.norm(val)


def windows(text: str) -> list[str]:
    """The text itself when short, else overlapping windows of WINDOW_WORDS words."""
    words = text.split()
    if len(words) <= WINDOW_WORDS:
        return [text]
    return [" ".join(words[i:i + WINDOW_WORDS]) for i in range(0, len(words) - STRIDE_WORDS, STRIDE_WORDS)]
