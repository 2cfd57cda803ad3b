"""Text → a sparse hashed feature vector (words, word pairs, character 3-5-grams), and the pieces a text
is scored in. Numpy only: the classifier that reads these ships as a small artifact.

Pieces: an instruction hidden in a long page is one sentence or line among many, and a fixed-length
window dilutes it (the vector is l2-normalised, so forty words of e-mail around it drown it out). A
text is therefore scored in overlapping windows of WINDOW_WORDS words *and* in its own sentences and
lines (segments); the detector is trained on benign windows and benign sentences alike.

Hashing is vectorised (a polynomial rolling hash over code points, then a 64-bit mixer), so a
kilobyte of text costs well under a millisecond; the buckets are the same on every platform and
Python run (no salted `hash`).
"""
from __future__ import annotations

import re
import unicodedata
import zlib

import numpy as np

DIM = 1 << 16
WINDOW_WORDS = 60          # an injection diluted in a long page is scored in windows this long
STRIDE_WORDS = 30
SEGMENT_MIN_WORDS = 2      # shorter sentences ("Thanks,") are scored only inside their windows
_CJK = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
# a word is a run of letters/digits (a CJK character is a word of its own) or one punctuation mark
_WORD = re.compile(rf"[{_CJK}]|[^\W{_CJK}]+|[^\w\s]", re.UNICODE)
_INVISIBLE = re.compile("[\u00ad\u200b-\u200f\u2060-\u2064\ufeff\u202a-\u202e\u2066-\u2069]")
# sentence ends: . ! ? followed by a space, or a CJK full stop / exclamation / question mark
_SENTENCE = re.compile(r"(?<=[.!?])\s+|(?<=[。！？；])")

_M64 = np.uint64(0xFFFFFFFFFFFFFFFF)
_P = np.uint64(0x100000001B3)            # FNV prime as the polynomial base
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)    # splitmix64 finaliser constants
_MIX2 = np.uint64(0x94D049BB133111EB)
_TAG_WORD, _TAG_PAIR = np.uint64(0x9E3779B97F4A7C15), np.uint64(0xC2B2AE3D27D4EB4F)
_TAG_SHAPE = np.uint64(0xD6E8FEB86659FD93)
_TAG_CHAR = {n: np.uint64(0x165667B19E3779F9 * n & 0xFFFFFFFFFFFFFFFF) for n in (3, 4, 5)}
_MASK = np.uint64(DIM - 1)


def normalise(text: str) -> str:
    text = unicodedata.normalize("NFKC", text)
    return " ".join(_INVISIBLE.sub("", text).lower().split())


def _mix(h: np.ndarray) -> np.ndarray:
    h = h ^ (h >> np.uint64(30))
    h = h * _MIX1
    h = h ^ (h >> np.uint64(27))
    h = h * _MIX2
    return h ^ (h >> np.uint64(31))


def buckets(norm: str) -> np.ndarray:
    """The hashed bucket of every token of an already normalised text (one entry per occurrence):
    word unigrams and bigrams (CJK: characters and character pairs), character 3-5-grams, and the
    piece's shape: its first word and first two words (an order opens with its verb), how it ends (".",
    "?", ":", a word) and its length in words (by powers of two)."""
    parts = []
    words = _WORD.findall(norm)
    if words:
        wh = np.fromiter((zlib.crc32(w.encode("utf-8")) for w in words), dtype=np.uint64, count=len(words))
        parts.append(wh ^ _TAG_WORD)
        if len(words) > 1:
            parts.append((wh[:-1] * _P + wh[1:]) ^ _TAG_PAIR)
        parts.append(np.fromiter((zlib.crc32(t.encode("utf-8")) for t in _shape(words)), dtype=np.uint64)
                     ^ _TAG_SHAPE)
    cp = np.frombuffer(norm.encode("utf-32-le"), dtype=np.uint32).astype(np.uint64)
    with np.errstate(over="ignore"):
        for n in (3, 4, 5):
            if len(cp) < n:
                break
            count = len(cp) - n + 1
            h = cp[:count].copy()
            for k in range(1, n):
                h = h * _P + cp[k:k + count]
            parts.append(h ^ _TAG_CHAR[n])
    if not parts:
        return np.zeros(0, dtype=np.int64)
    with np.errstate(over="ignore"):
        return (_mix(np.concatenate(parts)) & _MASK).astype(np.int64)


def _shape(words: list[str]) -> list[str]:
    alnum = [w for w in words if w[0].isalnum()]
    out = [f"end:{words[-1] if not words[-1][0].isalnum() else 'word'}", f"len:{min(len(alnum).bit_length(), 7)}"]
    if alnum:
        out.append(f"first:{alnum[0]}")
        if len(alnum) > 1:
            out.append(f"first2:{alnum[0]} {alnum[1]}")
    return out


def vector(text: str) -> tuple[np.ndarray, np.ndarray]:
    """(indices, values): l2-normalised log counts of the hashed tokens."""
    found = buckets(normalise(text))
    if not len(found):
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
    idx, counts = np.unique(found, return_counts=True)
    val = np.log1p(counts.astype(np.float32))
    return idx, val / np.linalg.norm(val)


def windows(text: str) -> list[str]:
    """The text itself when short, else overlapping windows of WINDOW_WORDS words."""
    words = text.split()
    if len(words) <= WINDOW_WORDS:
        return [text]
    return [" ".join(words[i:i + WINDOW_WORDS]) for i in range(0, len(words) - STRIDE_WORDS, STRIDE_WORDS)]


def segments(text: str) -> list[str]:
    """The text's lines and sentences with at least SEGMENT_MIN_WORDS words (a sentence longer than a
    window is left to the windows)."""
    out = []
    for line in text.splitlines():
        for part in _SENTENCE.split(line):
            part = part.strip()
            n = sum(1 for w in _WORD.findall(part) if w[0].isalnum())
            if part and SEGMENT_MIN_WORDS <= n and len(part.split()) <= WINDOW_WORDS:
                out.append(part)
    return out


def pieces(text: str) -> list[str]:
    """What a text is scored in (its score is the highest piece's): its windows, and its segments when
    it has more than one; duplicates once."""
    found = windows(text)
    parts = segments(text)
    if len(parts) > 1:
        found = found + parts
    return list(dict.fromkeys(p for p in found if p.strip())) or [text]
