"""Small, dependency-free text helpers shared by the generator and the evidence checks."""
from __future__ import annotations

import functools
import hashlib
import re
from typing import Sequence

STOPWORDS = frozenset("""
a an the and or but if of to in on at by for with from as is are was were be been being it its this that
these those which who whom whose what when where why how do does did done has have had having
so than too very can could should would may might must will shall about into over under after before
between during through there their them they he she his her him we our you your i me my mine ours also
such only own same then once any each few more most other some all both just s t one first many much
""".split())

_WORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9'\-\.]*[A-Za-z0-9]|[A-Za-z0-9]")
_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(])")


def content_hash(text: str) -> str:
    """A passage text's identity: the same text hashes the same on every agent and in every corpus."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def words(text: str) -> list[str]:
    return list(_words(text))


def content_words(text: str) -> list[str]:
    """Lower-cased words without stop words; the unit of overlap and coverage checks."""
    return list(_content_words(text))


# The same passages and claims are split again by every check of a question (evidence, consistency, the
# cascade monitors at each stage boundary): their words are kept, and callers get their own list.
@functools.lru_cache(maxsize=8192)
def _words(text: str) -> tuple[str, ...]:
    return tuple(w.lower().strip(".'") for w in _WORD.findall(text))


@functools.lru_cache(maxsize=8192)
def _content_words(text: str) -> tuple[str, ...]:
    return tuple(w for w in _words(text) if w and w not in STOPWORDS)


NEGATIONS = frozenset({"not", "no", "nor", "never", "none", "neither", "cannot", "without"})


def negations(text: str) -> set[str]:
    found = {w for w in words(text) if w in NEGATIONS}
    if "n't" in text.lower() or "n’t" in text.lower():
        found.add("not")
    return found


def negation_count(text: str) -> int:
    """How many negations a text holds: an added 'not' shows even beside a "Don't" already there."""
    lowered = text.lower()
    return sum(w in NEGATIONS for w in words(text)) + lowered.count("n't") + lowered.count("n’t")


def numbers(text: str) -> set[str]:
    return {n.replace(",", "") for n in _NUMBER.findall(text)}


_SPELLED = {w: str(i) for i, w in enumerate(
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
    "seventeen eighteen nineteen twenty".split())}
_SPELLED.update({w: str(10 * i) for i, w in enumerate("thirty forty fifty sixty seventy eighty ninety".split(), 3)})


def spelled_numbers(text: str) -> set[str]:
    """The numbers a text writes out in words ("four" -> "4"; zero to twenty and the tens), as digits: an
    answer of 4 is in a passage that says "four large moons"."""
    return {_SPELLED[w] for w in words(text) if w in _SPELLED}


# A full stop after these does not end a sentence ("Dr. Smith", "Mt. Everest", "Fig. 3").
_ABBREVIATIONS = frozenset({"dr", "mr", "mrs", "ms", "prof", "st", "mt", "vs", "jr", "sr", "fig", "approx", "cf",
                            "al", "gen", "lt", "col", "sgt", "capt", "vol", "pp", "eds"})
_LAST_WORD = re.compile(r"(\S+)\.$")
_INITIAL = re.compile(r"(?:^|[\s(])(?:[A-Z]\.)+$")          # "J." or "U.S." closing a piece: a name goes on
_LIST_MARKER = re.compile(r"^(?:\d{1,3}[.)]|[a-z]\))$")      # "1." or "b)" alone: a list marker, no sentence


def sentences(text: str) -> list[str]:
    """Sentences of running text, each a verbatim piece of it. A piece that ends in an abbreviation or an initial
    joins the next one; a list marker left alone ("1.") is dropped; decimals, versions, file names and URLs never
    split (a split needs white space after the stop and a capital, digit or quote after that)."""
    text = text.strip()
    cuts = [0] + [m.end() for m in _SENTENCE_END.finditer(text)] + [len(text)]
    out: list[str] = []
    begin = None                       # where the piece being carried into the next one starts
    for lo, hi in zip(cuts, cuts[1:]):
        piece = text[lo:hi].strip()
        if not piece:
            continue
        if begin is None and _LIST_MARKER.match(piece):
            continue
        begin = lo if begin is None else begin
        whole = text[begin:hi].strip()
        tail = whole[-24:]           # only the end decides, and a regex over a huge word must not run to its start
        last = _LAST_WORD.search(tail)
        if hi < len(text) and ((last and last.group(1).lower().lstrip("(") in _ABBREVIATIONS)
                               or _INITIAL.search(tail)):
            continue
        out.append(whole)
        begin = None
    return out


def coverage(claim: str, evidence: str) -> float:
    """Share of a claim's content words that the evidence text contains (0 for a claim with none); a digit
    the evidence spells out ("4" for "four") is contained."""
    wanted = set(content_words(claim))
    return len(wanted & (set(content_words(evidence)) | spelled_numbers(evidence))) / len(wanted) if wanted else 0.0


def jaccard(a: set[str], b: set[str]) -> float:
    if not a and not b:
        return 1.0
    return len(a & b) / len(a | b)


def closest_sentences(claim: str, passages: Sequence[str], limit: int = 1) -> str:
    """The `limit` sentences of the passages that share the most content words with the claim (Jaccard; the
    earlier one among equals), joined in passage order; "" when none shares a word with it."""
    wanted = set(content_words(claim))
    scored = []
    for p, passage in enumerate(passages):
        for s, sentence in enumerate(sentences(passage)):
            got = set(content_words(sentence))
            if wanted & got:
                scored.append((jaccard(wanted, got), p, s, sentence))
    best = sorted(scored, key=lambda item: -item[0])[:limit]
    return " ".join(sentence for _, _, _, sentence in sorted(best, key=lambda item: (item[1], item[2])))


def aligned_evidence(claim: str, cited: Sequence[str]) -> str:
    """From each cited passage (once each, in citation order) the sentence closest to the claim; "" if none
    shares a word with it. A claim spliced from two passages is so read against both of its sources."""
    closest = (closest_sentences(claim, [passage], 1) for passage in dict.fromkeys(cited))
    return " ".join(sentence for sentence in closest if sentence)


def overlap(a: set[str], b: set[str]) -> float:
    """Share of the smaller set found in the other: 1.0 when one answer contains the other."""
    if not a or not b:
        return 0.0
    return len(a & b) / min(len(a), len(b))


def shorten(text: str, limit: int) -> str:
    """One line of at most `limit` characters, whitespace collapsed, "…" where it was cut."""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit - 1] + "…"
