"""Text that hides content from a human reader: invisible and format characters, bidi controls,
Unicode tag characters (which can smuggle ASCII), runs of variation selectors, and words that mix
Latin letters with Cyrillic or Greek look-alikes ("раypal").

`scan` says what was found and where; `sanitise` removes exactly what `scan` would flag, so a
sanitised text scans clean. Ordinary non-Latin text (a Chinese or Russian sentence, Hebrew with its
direction marks, emoji joined with ZWJ, Persian with ZWNJ) is not flagged.
"""
from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

from .base import Channel, Finding

# --- the characters ---------------------------------------------------------------------------

ZERO_WIDTH = frozenset({0x200B, 0x200C, 0x200D, 0x200E, 0x200F, 0x2060, 0x2061, 0x2062, 0x2063, 0x2064,
                        0xFEFF})
BIDI_OVERRIDE = frozenset({0x202D, 0x202E})                                   # LRO, RLO: reorder text
BIDI_OTHER = frozenset({0x202A, 0x202B, 0x202C, 0x2066, 0x2067, 0x2068, 0x2069})  # embeddings, isolates
TAG_FIRST, TAG_LAST = 0xE0000, 0xE007F
_JOINERS = frozenset({0x200C, 0x200D})          # ZWNJ / ZWJ: needed by emoji and several scripts
_DIRECTION_MARKS = frozenset({0x200E, 0x200F})  # LRM / RLM: normal beside right-to-left text


def _is_tag(cp: int) -> bool:
    return TAG_FIRST <= cp <= TAG_LAST


def _is_variation_selector(cp: int) -> bool:
    return 0xFE00 <= cp <= 0xFE0F or 0xE0100 <= cp <= 0xE01EF


# Look-alikes of Latin letters: Cyrillic and Greek letters a reader cannot tell apart from Latin ones.
_CONFUSABLES: dict[str, str] = {
    # Cyrillic lower case
    "а": "a", "в": "b", "с": "c", "ԁ": "d", "е": "e", "һ": "h", "і": "i", "ј": "j", "к": "k", "ӏ": "l",
    "м": "m", "н": "h", "о": "o", "р": "p", "ԛ": "q", "г": "r", "ѕ": "s", "т": "t", "у": "y", "ԝ": "w",
    "х": "x", "ү": "y", "ѵ": "v", "ё": "e", "ї": "i",
    # Cyrillic upper case
    "А": "A", "В": "B", "С": "C", "Е": "E", "Н": "H", "І": "I", "Ј": "J", "К": "K", "М": "M", "О": "O",
    "Р": "P", "Ѕ": "S", "Т": "T", "Х": "X", "У": "Y", "Ү": "Y", "Ԁ": "D", "Ԛ": "Q", "Ԝ": "W", "Ӏ": "I",
    # Greek lower case
    "α": "a", "β": "b", "ε": "e", "ι": "i", "κ": "k", "ν": "v", "ο": "o", "ρ": "p", "τ": "t", "υ": "u",
    "χ": "x", "γ": "y", "ϲ": "c", "ϳ": "j",
    # Greek upper case
    "Α": "A", "Β": "B", "Ε": "E", "Ζ": "Z", "Η": "H", "Ι": "I", "Κ": "K", "Μ": "M", "Ν": "N", "Ο": "O",
    "Ρ": "P", "Τ": "T", "Υ": "Y", "Χ": "X", "Ϲ": "C",
}
_CONFUSABLE_TABLE = str.maketrans(_CONFUSABLES)
_CYRILLIC_OR_GREEK = re.compile(r"[\u0370-\u03FF\u0400-\u052F\u1F00-\u1FFF]")
_WORD = re.compile(r"[^\W\d_]+")   # runs of letters
_LATIN_LETTER = re.compile(r"[A-Za-z\u00C0-\u024F]")


def _script(ch: str) -> str:
    cp = ord(ch)
    if ch.isascii() or 0x00C0 <= cp <= 0x024F:
        return "Latin"
    if 0x0400 <= cp <= 0x052F:
        return "Cyrillic"
    if 0x0370 <= cp <= 0x03FF or 0x1F00 <= cp <= 0x1FFF:
        return "Greek"
    return "other"


@dataclass(frozen=True)
class MixedWord:
    start: int
    word: str
    latin: str       # the word with its look-alikes mapped to Latin
    foreign: str     # "Cyrillic", "Greek" or "Cyrillic+Greek"
    swapped: str     # e.g. "р->p, а->a"


def mixed_script_words(text: str) -> list[MixedWord]:
    """Words that mix Latin letters with Cyrillic/Greek look-alikes. A whole Cyrillic or Greek word is
    ordinary text and is left alone; so is scientific notation such as "TNFα" (upper-case Latin
    followed by a Greek symbol)."""
    if not _CYRILLIC_OR_GREEK.search(text):
        return []
    out: list[MixedWord] = []
    for m in _WORD.finditer(text):
        word = m.group()
        if not _LATIN_LETTER.search(word) or not _CYRILLIC_OR_GREEK.search(word):
            continue
        scripts = {_script(c) for c in word}
        if "other" in scripts:
            continue
        foreign = sorted(scripts - {"Latin"})
        lookalikes = [c for c in word if _script(c) != "Latin" and c in _CONFUSABLES]
        if not lookalikes:
            continue                       # a letter with no Latin twin cannot fool a reader
        latin_part = "".join(c for c in word if _script(c) == "Latin")
        if foreign == ["Greek"] and (latin_part.isupper() or len(latin_part) <= 1):
            continue                       # TNFα, ERβ, pH-like symbols: notation, not disguise
        swapped = ", ".join(dict.fromkeys(f"{c}->{_CONFUSABLES[c]}" for c in lookalikes))
        out.append(MixedWord(m.start(), word, word.translate(_CONFUSABLE_TABLE), "+".join(foreign), swapped))
    return out


# --- which format characters are hiding something ----------------------------------------------

def _is_visible_letter_or_mark(ch: str) -> bool:
    return unicodedata.category(ch)[0] in "LMN"


def _needs_joiner(ch: str) -> bool:
    """Scripts and symbols that use ZWJ/ZWNJ on purpose: emoji, Arabic, Persian, Indic, and so on."""
    if not ch:
        return False
    cp = ord(ch)
    if cp >= 0x1F000 or 0x2600 <= cp <= 0x27BF or 0xFE00 <= cp <= 0xFE0F:
        return True                        # emoji, dingbats, and the selector of an emoji sequence
    return cp >= 0x0590 and _script(ch) == "other" and unicodedata.category(ch)[0] in "LM"


def _script_format(cp: int) -> bool:
    """Format characters that belong to one script (Arabic, Syriac, Mongolian, Kaithi, Egyptian, ...)."""
    return (0x0600 <= cp <= 0x08FF or cp in (0x180E, 0x110BD, 0x110CD) or 0x13430 <= cp <= 0x1345F
            or 0x1BCA0 <= cp <= 0x1BCA3 or 0x1D173 <= cp <= 0x1D17A)


def _is_rtl(ch: str) -> bool:
    return bool(ch) and unicodedata.bidirectional(ch) in ("R", "AL", "AN")


@dataclass(frozen=True)
class _Hidden:
    kind: str
    positions: tuple[int, ...]


class _Neighbours:
    """The nearest characters before and after a position that are not format characters. Found in one pass
    over the text when first asked: walking out from each position was quadratic in a run of zero-width
    characters (20,000 took 75 s)."""

    def __init__(self, text: str) -> None:
        self.text = text
        self._before: list[int] | None = None
        self._after: list[int] = []

    def __call__(self, i: int) -> tuple[str, str]:
        text = self.text
        if self._before is None:
            visible = [unicodedata.category(c) != "Cf" for c in text]
            self._before, last = [], -1
            for k, seen in enumerate(visible):
                self._before.append(last)
                last = k if seen else last
            self._after, last = [0] * len(text), len(text)
            for k in range(len(text) - 1, -1, -1):
                self._after[k] = last
                last = k if visible[k] else last
        j, k = self._before[i], self._after[i]
        return (text[j] if j >= 0 else "", text[k] if k < len(text) else "")


_EMOJI_FLAG = re.compile("\U0001F3F4([\U000E0030-\U000E0039\U000E0061-\U000E007A]{2,6})\U000E007F")


def _emoji_flag_tags(text: str) -> set[int]:
    """Positions of tag characters that spell a subdivision flag emoji (🏴 + "gbsct" + cancel tag):
    the one ordinary use of tag characters."""
    out: set[int] = set()
    for m in _EMOJI_FLAG.finditer(text):
        out.update(range(m.start() + 1, m.end()))
    return out


def _hidden_positions(text: str) -> dict[str, list[int]]:
    """kind -> positions of the characters to flag (and that `sanitise` removes)."""
    suspects = {c for c in set(text)
                if unicodedata.category(c) == "Cf" or _is_variation_selector(ord(c))}
    if not suspects:
        return {}
    flag_tags = _emoji_flag_tags(text) if any(_is_tag(ord(c)) for c in suspects) else set()
    neighbours = _Neighbours(text)
    found: dict[str, list[int]] = {}
    for i, ch in enumerate(text):
        if ch not in suspects:
            continue
        cp = ord(ch)
        if _is_tag(cp):
            if i in flag_tags:
                continue
            kind = "tag"
        elif cp in BIDI_OVERRIDE:
            kind = "bidi override"
        elif cp in BIDI_OTHER:
            kind = "bidi isolate/embedding"
        elif _is_variation_selector(cp):
            prev = text[i - 1] if i else ""
            in_run = (prev and _is_variation_selector(ord(prev))) or \
                (i + 1 < len(text) and _is_variation_selector(ord(text[i + 1])))
            if not in_run and prev and not _is_variation_selector(ord(prev)):
                continue                   # a single selector after a character: ordinary emoji/CJK use
            kind = "variation selectors"
        elif cp in ZERO_WIDTH:
            before, after = neighbours(i)
            if cp == 0xFEFF and i == 0:
                continue                   # a byte-order mark at the very start
            if cp in _JOINERS and (_needs_joiner(before) or _needs_joiner(after)):
                continue
            if cp in _DIRECTION_MARKS and (_is_rtl(before) or _is_rtl(after)):
                continue
            inside = bool(before) and bool(after) and _is_visible_letter_or_mark(before) \
                and _is_visible_letter_or_mark(after)
            kind = "zero-width inside a word" if inside else "zero-width"
        else:
            if cp == 0x00AD and i and text[i - 1].isalpha() and i + 1 < len(text) and text[i + 1].isalpha():
                kind = "soft hyphen inside a word"
            elif _script_format(cp) and any(c and not c.isascii() for c in neighbours(i)):
                continue                   # Arabic number signs, Syriac marks, ...: used by their own script
            else:
                kind = "other format character"
        found.setdefault(kind, []).append(i)
    _move_runs(found, ("zero-width", "zero-width inside a word"), "zero-width run", 4)
    return found


def _move_runs(found: dict[str, list[int]], kinds: tuple[str, ...], run_kind: str, min_run: int) -> None:
    """Consecutive zero-width characters (4 or more) can encode a whole message in bits: a kind of its own."""
    positions = sorted(p for k in kinds for p in found.get(k, ()))
    runs: list[list[int]] = []
    for p in positions:
        if runs and p == runs[-1][-1] + 1:
            runs[-1].append(p)
        else:
            runs.append([p])
    moved = {p for run in runs if len(run) >= min_run for p in run}
    if not moved:
        return
    for k in kinds:
        if k in found:
            found[k] = [p for p in found[k] if p not in moved]
            if not found[k]:
                del found[k]
    found[run_kind] = sorted(moved)


# --- scoring ------------------------------------------------------------------------------------

# kind -> (weight of one occurrence, weight cap reached with several)
_WEIGHTS: dict[str, tuple[float, float]] = {
    "tag": (0.9, 0.97),
    "bidi override": (0.85, 0.95),
    "bidi isolate/embedding": (0.6, 0.8),
    "variation selectors": (0.6, 0.85),
    "zero-width run": (0.8, 0.9),
    "zero-width inside a word": (0.6, 0.85),
    "homoglyph word": (0.6, 0.85),
    "zero-width": (0.2, 0.45),
    "soft hyphen inside a word": (0.15, 0.4),
    "other format character": (0.2, 0.5),
}


def _kind_weight(kind: str, count: int) -> float:
    one, cap = _WEIGHTS[kind]
    return min(cap, 1.0 - (1.0 - one) ** count)


def _positions_text(positions: list[int], limit: int = 6) -> str:
    """Character offsets as runs: "4, 10-37, 52"."""
    runs: list[tuple[int, int]] = []
    for p in positions:
        if runs and p == runs[-1][1] + 1:
            runs[-1] = (runs[-1][0], p)
        else:
            runs.append((p, p))
    shown = ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in runs[:limit])
    return shown + (f" and {len(runs) - limit} more places" if len(runs) > limit else "")


def printable(s: str, limit: int = 80) -> str:
    """Plain text for evidence: one line, printable characters only, at most `limit` characters."""
    s = "".join(c if c.isprintable() else " " for c in s)
    s = re.sub(r"\s+", " ", s).strip()
    return s if len(s) <= limit else s[: limit - 3] + "..."


def decode_tags(text: str) -> str:
    """The ASCII smuggled in Unicode tag characters (U+E0020..U+E007E map to ' '..'~')."""
    return "".join(chr(ord(c) - TAG_FIRST) for c in text if 0xE0020 <= ord(c) <= 0xE007E)


def _decode_selectors(text: str, positions: list[int]) -> str:
    """Bytes hidden in variation selectors (VS1-16 -> 0-15, VS17-256 -> 16-255), when they read as text."""
    out = bytearray()
    for p in positions:
        cp = ord(text[p])
        out.append(cp - 0xFE00 if cp <= 0xFE0F else cp - 0xE0100 + 16)
    decoded = out.decode("utf-8", errors="replace")
    return decoded if sum(c.isprintable() for c in decoded) >= 0.8 * max(1, len(decoded)) else ""


class InvisibleCharacters:
    """Flags text that hides content from a human reader."""

    name = "invisible"

    def scan(self, text: str, channel: Channel) -> Finding:
        hidden = _hidden_positions(text)
        mixed = mixed_script_words(text)
        weights: list[float] = []
        evidence: list[str] = []
        for kind in ("tag", "bidi override", "bidi isolate/embedding", "variation selectors",
                     "zero-width run", "zero-width inside a word", "zero-width", "soft hyphen inside a word",
                     "other format character"):
            positions = hidden.get(kind)
            if not positions:
                continue
            weights.append(_kind_weight(kind, len(positions)))
            line = f"{kind}: {len(positions)} at offset {_positions_text(positions)}"
            if kind == "tag":
                smuggled = decode_tags(text)
                if smuggled.strip():
                    line += f'; hidden ASCII reads "{printable(smuggled)}"'
            elif kind == "variation selectors":
                smuggled = _decode_selectors(text, positions)
                if smuggled.strip():
                    line += f'; hidden bytes read "{printable(smuggled)}"'
            else:
                names = sorted({unicodedata.name(text[p], f"U+{ord(text[p]):04X}") for p in positions})
                line += " (" + ", ".join(names[:4]) + (", ..." if len(names) > 4 else "") + ")"
            evidence.append(line)
        if mixed:
            weights.append(_kind_weight("homoglyph word", len(mixed)))
            for w in mixed[:5]:
                evidence.append(f'homoglyph word: "{printable(w.word, 40)}" at {w.start} mixes Latin with '
                                f'{w.foreign} look-alikes ({w.swapped}); reads as "{printable(w.latin, 40)}"')
            if len(mixed) > 5:
                evidence.append(f"homoglyph word: {len(mixed) - 5} more")
        score = 1.0
        for w in weights:
            score *= 1.0 - w
        return Finding(self.name, round(1.0 - score, 4) if weights else 0.0, tuple(evidence))


def sanitise(text: str) -> str:
    """The text without what `scan` flags: hidden format characters, bidi controls and tag characters
    removed, runs of variation selectors removed, and look-alikes in mixed-script words mapped to Latin."""
    hidden = _hidden_positions(text)
    while hidden:     # a removal can orphan a selector that stood after the character removed: go again
        drop = {p for positions in hidden.values() for p in positions}
        text = "".join(c for i, c in enumerate(text) if i not in drop)
        hidden = _hidden_positions(text)
    mixed = mixed_script_words(text)
    if mixed:
        parts: list[str] = []
        last = 0
        for w in mixed:
            parts.append(text[last:w.start])
            parts.append(w.latin)
            last = w.start + len(w.word)
        parts.append(text[last:])
        text = "".join(parts)
    return text


def map_lookalikes(text: str) -> str:
    """Same length as `text`, with the look-alikes of mixed-script words mapped to Latin (for matching)."""
    mixed = mixed_script_words(text)
    if not mixed:
        return text
    chars = list(text)
    for w in mixed:
        chars[w.start: w.start + len(w.word)] = w.latin
    return "".join(chars)
