"""A claim beside the evidence sentence it aligns to: which names and numbers were substituted, and
whether two entities changed roles.

A careful liar keeps the sentence and changes one fact: a name or a number swapped for another one
from the same passage ("on 85 November 1971", "discovered by Percival Lowell"), or two names' roles
exchanged ("B defeated A"). Every word of such a lie is in the cited passage, so word coverage and
"is this name in the evidence" cannot see it. What gives it away is the sentence it mirrors: the
lie keeps that sentence's frame and puts another entity in one of its slots.

Entities are numbers (digits, number words) and names (capitalised words that are capitalised
mid-sentence somewhere in the claim or its evidence, so a sentence's first word is a name only when
the text treats it as one elsewhere). Consecutive names are one entity ("Percival Lowell").
"""
from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from difflib import SequenceMatcher
from enum import Enum
from typing import Iterable, Sequence

from ..text import STOPWORDS, sentences

_TOKEN = re.compile(r"\d+(?:[.,]\d+)*|[^\W\d_][\w'’\-]*", re.UNICODE)
_POSSESSIVE = re.compile(r"'s?$")
_SENTENCE_BREAK = re.compile(r"[.!?:;]\s*[\"'”’)]*\s*$")
NUMBER_WORDS = frozenset("""zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen
fifteen sixteen seventeen eighteen nineteen twenty thirty forty fifty sixty seventy eighty ninety hundred thousand
million billion first second third fourth fifth sixth seventh eighth ninth tenth dozen""".split())
# Words between two entities that make their order meaningless ("A and B won" = "B and A won").
_COORDINATION = frozenset({"and", "or", "nor", "&", "with", "plus", "versus", "vs"})


class EntityKind(str, Enum):
    NUMBER = "number"
    NAME = "name"


@dataclass(frozen=True)
class Token:
    text: str
    lower: str
    sentence_start: bool
    joined: bool = False       # only spaces separate it from the word before (no comma, bracket, dash)


@dataclass(frozen=True)
class Entity:
    kind: EntityKind
    start: int                 # token index of its first word
    end: int                   # one past its last word
    words: tuple[str, ...]     # lower-cased
    text: str                  # as written


class ConflictKind(str, Enum):
    SUBSTITUTED = "substituted"        # another entity in the slot the evidence sentence fills
    ROLES_EXCHANGED = "roles_exchanged"


@dataclass(frozen=True)
class Conflict:
    kind: ConflictKind
    claim_says: str
    evidence_says: str

    def describe(self) -> str:
        if self.kind is ConflictKind.ROLES_EXCHANGED:
            return f"roles exchanged: '{self.claim_says}' and '{self.evidence_says}' stand in each other's places"
        return f"'{self.claim_says}' where the evidence sentence says '{self.evidence_says}'"


def tokenize(text: str) -> list[Token]:
    tokens, last_end = [], 0
    for match in _TOKEN.finditer(text):
        gap = text[last_end:match.start()]
        start = not tokens or bool(_SENTENCE_BREAK.search(text[max(0, last_end - 1):match.start()])) \
            or "\n" in gap
        raw = match.group(0)
        lower = raw.lower().replace("’", "'")
        # A possessive names what its name names: "Neptune's largest moon" is about Neptune.
        lower = _POSSESSIVE.sub("", lower) or lower
        if raw[0].isdigit():
            lower = re.sub(r"(?<=\d)[,](?=\d)", "", lower)
        tokens.append(Token(raw, lower, start, bool(tokens) and not gap.strip()))
        last_end = match.end()
    return tokens


def mid_sentence_capitals(texts: Iterable[str]) -> frozenset[str]:
    """Words a text capitalises where no sentence starts: the names it uses."""
    return frozenset().union(*(_capitals_of(text) for text in texts))


@functools.lru_cache(maxsize=4096)
def _capitals_of(text: str) -> frozenset[str]:
    """One text's mid-sentence capitals. Kept: the same passages are read again for every claim checked
    against them and at every stage boundary, and tokenizing them was most of the cascade monitors' time."""
    return frozenset(t.lower for t in tokenize(text) if not t.sentence_start and t.text[0].isupper())


def entities(tokens: Sequence[Token], capitals: frozenset[str]) -> list[Entity]:
    found: list[Entity] = []
    i = 0
    while i < len(tokens):
        kind = _kind(tokens[i], capitals)
        if kind is None:
            i += 1
            continue
        j = i + 1
        if kind is EntityKind.NAME:
            # "Giuseppe Arimondi (Savigliano" and "Los Angeles, California" are two names each.
            while j < len(tokens) and tokens[j].joined and _kind(tokens[j], capitals) is EntityKind.NAME:
                j += 1
        found.append(Entity(kind, i, j, tuple(t.lower for t in tokens[i:j]), " ".join(t.text for t in tokens[i:j])))
        i = j
    return found


def _kind(token: Token, capitals: frozenset[str]) -> EntityKind | None:
    if token.text[0].isdigit() or token.lower in NUMBER_WORDS:
        return EntityKind.NUMBER
    if token.text[0].isupper() and token.lower not in STOPWORDS and (
            not token.sentence_start or token.lower in capitals):
        return EntityKind.NAME
    return None


def _cues(tokens: Sequence[Token], entity: Entity) -> tuple[str, str]:
    """The words just before and after an entity: the slot it fills in its sentence."""
    before = tokens[entity.start - 1].lower if entity.start > 0 else "^"
    after = tokens[entity.end].lower if entity.end < len(tokens) else "$"
    return before, after


def conflicts(claim: str, sentence: str, context: Sequence[str] = (), *,
              capitals: frozenset[str] | None = None) -> list[Conflict]:
    """What the claim changed in the sentence it mirrors (empty: no substitution, no exchange).

    - substituted: the claim has an entity the sentence lacks, in the slot (same word before or
      after it) where the sentence has an entity of the same kind that the claim lacks;
    - roles exchanged: two entities of the sentence occupy each other's slots in the claim, and
      nothing but a coordination ("and", "or") stands between them in the sentence.
    `capitals`: mid_sentence_capitals of the claim, the sentence and the context, when the caller
    compares one claim with several sentences of the same context and has them already.
    """
    if capitals is None:
        capitals = mid_sentence_capitals([claim, sentence, *context])
    claim_tokens, sentence_tokens = tokenize(claim), tokenize(sentence)
    claim_entities = entities(claim_tokens, capitals)
    sentence_entities = entities(sentence_tokens, capitals)
    found: list[Conflict] = []

    missing = _missing(sentence_entities, claim_entities)
    # An entity in the slot (the words just before and after it) where the sentence names another
    # entity that the claim lacks: it shares more of that slot's words than of its own slot in the
    # sentence (none, when the sentence does not name it).
    for new in claim_entities:
        cues = _cues(claim_tokens, new)
        own = max((_same_cues(cues, _cues(sentence_tokens, e)) for e in sentence_entities
                   if set(new.words) <= set(e.words)), default=0)
        for old in missing:
            if old.kind is new.kind and _same_cues(cues, _cues(sentence_tokens, old)) > own:
                found.append(Conflict(ConflictKind.SUBSTITUTED, new.text, old.text))
                break
    # Word by word, an entity of the claim standing where the sentence has another that the claim
    # lacks (also when the claim took that entity from elsewhere in the same sentence).
    matcher = SequenceMatcher(None, [t.lower for t in claim_tokens], [t.lower for t in sentence_tokens],
                              autojunk=False)
    said = {c.claim_says for c in found}
    present = {e.words for e in sentence_entities}
    for op, c1, c2, s1, s2 in matcher.get_opcodes():
        if op != "replace":
            continue
        for new in (e for e in claim_entities if c1 <= e.start < c2 and e.text not in said):
            # An entity the sentence names too, moved (a passive turned active: "Herschel discovered Uranus" for
            # "Uranus was discovered by ... Herschel on 13 March"), substitutes only in a slot of the same words.
            cues = _cues(claim_tokens, new)
            old = next((e for e in missing if s1 <= e.start < s2 and e.kind is new.kind
                        and (new.words not in present or _same_cues(cues, _cues(sentence_tokens, e)))), None)
            if old is not None:
                found.append(Conflict(ConflictKind.SUBSTITUTED, new.text, old.text))
                said.add(new.text)

    shared = {e.words: e for e in sentence_entities if e.words in {c.words for c in claim_entities}}
    in_claim = {e.words: e for e in claim_entities if e.words in shared}
    names = sorted(in_claim)
    for x, a in enumerate(names):
        for b in names[x + 1:]:
            if shared[a].kind is not shared[b].kind:
                continue
            sa, sb = _cues(sentence_tokens, shared[a]), _cues(sentence_tokens, shared[b])
            ca, cb = _cues(claim_tokens, in_claim[a]), _cues(claim_tokens, in_claim[b])
            if sa == sb or _coordinated(sentence_tokens, shared[a], shared[b]):
                continue
            if ca == sb and cb == sa:
                found.append(Conflict(ConflictKind.ROLES_EXCHANGED, in_claim[a].text, in_claim[b].text))
    return found


def placed_elsewhere(claim: str, conflict: Conflict, others: Sequence[str], capitals: frozenset[str]) -> bool:
    """Whether a name's substitution is no swap: another sentence of the evidence names the claim's name amid the
    same words (at least three of the two words on each side, a content word among them), so the claim joins two
    sentences ("The names of the two moons of Mars are Phobos and Deimos" from "the two moons of Mars are tiny" and
    "Phobos, is named after the Greek word"). A name swapped in from elsewhere in the passage keeps the mirrored
    sentence's words around it, not its own. Numbers are never placed so: a date's neighbours ("on", "July",
    "1969") are the same in every date of a passage."""
    if conflict.kind is not ConflictKind.SUBSTITUTED:
        return False
    claim_tokens = tokenize(claim)
    mine = [_window(claim_tokens, e) for e in entities(claim_tokens, capitals)
            if e.text == conflict.claim_says and e.kind is EntityKind.NAME]
    for sentence in others:
        tokens = tokenize(sentence)
        for e in entities(tokens, capitals):
            if e.text != conflict.claim_says:
                continue
            theirs = _window(tokens, e)
            for window in mine:
                same = [a for a, b in zip(window, theirs) if a == b and a not in ("^", "$")]
                if len(same) >= 3 and any(w not in STOPWORDS for w in same):
                    return True
    return False


def moved_within(claim: str, evidence: Sequence[str]) -> bool:
    """Whether a claim's conflicts with its evidence are ones the words cannot settle: every name and number the
    claim states is named in its evidence, and no evidence sentence holds two of them in exchanged roles. An honest
    claim that joins what a passage says in two places ("Voyager 1 was launched in 1977" from "Voyager 2 was
    launched first, on 20 August 1977, and Voyager 1 followed on 5 September 1977") or names what its sentence
    calls "it" ("The Galileo spacecraft was deliberately plunged into Jupiter" from "On 21 September 2003 it was
    deliberately plunged into Jupiter") reads as a substitution slot by slot, as does a lie that moves a name
    within its passage; a lie that brings in a name or number from outside its evidence does not, and two names
    exchanged in one sentence are a swap. The first kind is read for meaning by a judge
    (engine.generation.judging.ClaimReader); the others stand refuted."""
    capitals = mid_sentence_capitals([claim, *evidence])
    if not entities(tokenize(claim), capitals) or not names_every_entity(claim, " ".join(evidence),
                                                                         capitals=capitals):
        return False
    return not any(c.kind is ConflictKind.ROLES_EXCHANGED for text in evidence for sentence in sentences(text)
                   for c in conflicts(claim, sentence, capitals=capitals))


def _window(tokens: Sequence[Token], entity: Entity) -> tuple[str, str, str, str]:
    """The two words before an entity and the two after it ("^" and "$" past the sentence's edges)."""
    def at(i: int) -> str:
        return tokens[i].lower if 0 <= i < len(tokens) else ("^" if i < 0 else "$")
    return at(entity.start - 2), at(entity.start - 1), at(entity.end), at(entity.end + 1)


def same_entities(a: str, b: str) -> bool:
    """Whether two texts name the same names and numbers (a sentence's first word counts as a name
    only where one of the texts capitalises it mid-sentence: "Notably, X" names what "X" names)."""
    capitals = mid_sentence_capitals([a, b])
    found = [{w for e in entities(tokenize(text), capitals) for w in e.words} for text in (a, b)]
    return found[0] == found[1]


def names_every_entity(claim: str, sentence: str, context: Sequence[str] = (), *,
                       capitals: frozenset[str] | None = None) -> bool:
    """Whether the sentence names every number and name the claim states."""
    if capitals is None:
        capitals = mid_sentence_capitals([claim, sentence, *context])
    words = {t.lower for t in tokenize(sentence)}
    return all(set(e.words) <= words for e in entities(tokenize(claim), capitals))


def _missing(sentence_entities: Sequence[Entity], claim_entities: Sequence[Entity]) -> list[Entity]:
    """The sentence's entities that no entity of the claim names, in full or in part ("Lowell" names
    "Percival Lowell"; "David Diamond" does not name "David Weissman"). A claim entity that the
    sentence names word for word is used up there: the "Oregon" of "University of Oregon" does not
    also name "Oregon State University"."""
    exact = {e.words for e in sentence_entities}
    named = {c.words for c in claim_entities}
    partial = [c for c in claim_entities if c.words not in exact]
    return [e for e in sentence_entities if e.words not in named
            and not any(_contains(e.words, c.words) or _contains(c.words, e.words) for c in partial)]


def _contains(outer: tuple[str, ...], inner: tuple[str, ...]) -> bool:
    n = len(inner)
    return any(outer[i:i + n] == inner for i in range(len(outer) - n + 1))


def _same_cues(a: tuple[str, str], b: tuple[str, str]) -> int:
    """Shared neighbouring words (a sentence edge is no word)."""
    return sum(x == y and x not in ("^", "$") for x, y in zip(a, b))


def _coordinated(tokens: Sequence[Token], a: Entity, b: Entity) -> bool:
    first, second = (a, b) if a.start < b.start else (b, a)
    between = {t.lower for t in tokens[first.end:second.start]}
    return bool(between) and between <= _COORDINATION
