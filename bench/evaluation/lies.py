"""Lies a careful liar tells, built from the passage's own entities, and what each one changed.

A liar that knows how evidence checks work does not invent chunk ids, names or numbers: it takes
them from the very passage it cites, so every word of its lie is in the evidence. Each lie records
what it changed (`edits`) and what it planted, so a claim's truth comes from how it was made.

Headline lie kinds (one Byzantine generator each, unless the fleet says otherwise):
- swap-in-passage: one name or number of the honest answer sentence replaced by another of the same
  type from the same cited passage;
- role-swap: two names of the sentence exchanged (the set of names is unchanged);
- true-irrelevant: a true context sentence, correctly cited, from a passage HotpotQA marks as not
  supporting the answer, not containing the gold answer;
- wrong-relevant: the gold answer replaced, in the sentence that states it, by another entity of its
  type from the context (the other option of a comparison question first), citing that sentence's chunk;
- splice: the start of the answer sentence joined to the end of the most question-like sentence of another
  passage, citing both passages (every word is in the evidence, the whole is in neither).
The legacy kinds (engine.agents.faults: fabricate, contradict, tamper, bias, uncited, omit-best) are
kept for comparison; their false claims are the ones the fault rewrote.
"""
from __future__ import annotations

import enum
import random
import re
from dataclasses import dataclass
from typing import Sequence

from engine.types import Chunk, Claim, Generation
from .attack_text import STOPWORDS, content_words, sentences
from .lie_text import proper_names, ranked_sentences
from .textmatch import contains_answer, normalize_tokens, text_key


class LieKind(str, enum.Enum):
    SWAP_IN_PASSAGE = "swap-in-passage"
    ROLE_SWAP = "role-swap"
    TRUE_IRRELEVANT = "true-irrelevant"
    WRONG_RELEVANT = "wrong-relevant"
    SPLICE = "splice"
    LLM_REWRITE = "llm-rewrite"       # wrong-relevant, rewritten by an LLM in its own words (llm_lies.py)
    # legacy: engine.agents.faults rules (and the server's omit-best)
    FABRICATE = "fabricate"
    CONTRADICT = "contradict"
    TAMPER = "tamper"
    BIAS = "bias"
    UNCITED = "uncited"
    OMIT_BEST = "omit-best"

    @property
    def legacy(self) -> bool:
        return self not in HEADLINE_KINDS


HEADLINE_KINDS = (LieKind.SWAP_IN_PASSAGE, LieKind.ROLE_SWAP, LieKind.TRUE_IRRELEVANT, LieKind.WRONG_RELEVANT,
                  LieKind.SPLICE, LieKind.LLM_REWRITE)


class EntityType(str, enum.Enum):
    YEAR = "year"
    NUMBER = "number"
    DEMONYM = "demonym"           # one capitalised word that reads as a nationality ("American", "British")
    NAME = "name"                 # one capitalised word ("Lowell", "Animorphs")
    MULTI_NAME = "multi-word name"


@dataclass(frozen=True)
class Entity:
    text: str
    type: EntityType


@dataclass(frozen=True)
class Change:
    """One replacement the liar made: `old` became `new` (every occurrence in the sentence)."""
    old: str
    new: str


@dataclass(frozen=True)
class Lie:
    kind: LieKind
    generation: Generation
    source: str                       # the true sentence (or honest answer) the lie was made from
    chunk_id: str                     # the chunk the lie cites
    changes: tuple[Change, ...] = ()
    planted: tuple[str, ...] = ()     # texts the liar put in: a claim stating one of them is false
    honest_pieces: frozenset[str] = frozenset()   # legacy kinds: claims left as the honest generator made them

    @property
    def text(self) -> str:
        return self.generation.answer

    def is_false(self, claim: str) -> bool:
        """Truth from construction: a headline lie's claim is false when it states a planted value;
        a legacy lie's claim is false when the fault rewrote it (omit-best rewrites nothing)."""
        if self.kind.legacy:
            return self.kind is not LieKind.OMIT_BEST and text_key(claim) not in self.honest_pieces
        return any(_mentions(claim, value) for value in self.planted)


@dataclass(frozen=True)
class Skip:
    kind: LieKind
    reason: str


# ---- entities ----------------------------------------------------------------------------------

MONTHS = frozenset("January February March April May June July August September October November December".split())
_DEMONYM = re.compile(r"^[A-Z][a-z]+(?:an|ish|ese|ic|i)$")
_NUMBER = re.compile(r"(?<![\w.,])\d{1,3}(?:,\d{3})+(?![\w,]\d)|(?<![\w.,])\d+(?:\.\d+)?(?![\w])")


def _mentions(text: str, value: str) -> bool:
    return contains_answer(text, value)


def number_type(text: str) -> EntityType:
    return EntityType.YEAR if re.fullmatch(r"1[0-9]{3}|20[0-9]{2}", text) else EntityType.NUMBER


def name_type(name: str) -> EntityType:
    if len(name.split()) > 1:
        return EntityType.MULTI_NAME
    return EntityType.DEMONYM if _DEMONYM.match(name) else EntityType.NAME


def _fragment(sentence: str, name: str) -> bool:
    """A piece of a longer name, which a liar would not swap on its own: `proper_names()` skips a sentence's
    first word ("Kingston Morning is ..." yields "Morning") and all-caps words ("DC Comics" yields
    "Comics", "NCAA Division I" yields "Division")."""
    at = whole_word(name).search(sentence)
    if not at:
        return False
    before, after = sentence[:at.start()], sentence[at.end():]
    word_before = re.search(r"(\S+) $", before)
    word_after = re.match(r" (\S+)", after)
    return bool((word_before and word_before.group(1)[:1].isupper())
                or (word_after and word_after.group(1)[:1].isupper()))


def entities(text: str) -> list[Entity]:
    """Numbers (years apart) and names (`proper_names()`, the capitalised runs not opening a sentence, months
    left out: they belong to dates), in order of first appearance, each once."""
    found: dict[str, tuple[int, Entity]] = {}
    for sentence in sentences(text):
        for match in _NUMBER.finditer(sentence):
            found.setdefault(match.group(0), (text.find(match.group(0)), Entity(match.group(0),
                                                                                number_type(match.group(0)))))
        for name in proper_names(sentence):
            whole = whole_word(name).search(sentence) is not None    # "Ph" of "PhD" is no name
            function_word = name.lower() in STOPWORDS                # "That" opening a quoted title
            if not whole or function_word or any(w in MONTHS for w in name.split()) or _fragment(sentence, name):
                continue
            found.setdefault(name, (text.find(name), Entity(name, name_type(name))))
    return [e for _, e in sorted(found.values(), key=lambda pair: pair[0])]


def whole_word(value: str) -> re.Pattern:
    """The value as a whole word: not inside "PhD" or "Doyle-Murray"."""
    return re.compile(r"(?<![\w'’-])" + re.escape(value) + r"(?![\w'’-])")


def replace_all(sentence: str, old: str, new: str) -> str:
    return whole_word(old).sub(lambda _m: new, sentence)


def _same_or_nested(a: str, b: str) -> bool:
    ta, tb = normalize_tokens(a), normalize_tokens(b)
    return ta == tb or contains_answer(a, b) or contains_answer(b, a)


def _is_gold(value: str, gold: Sequence[str]) -> bool:
    return any(_same_or_nested(value, g) for g in gold)


def _lie_generation(sentence: str, chunk_id: str, reasoning: tuple[str, ...]) -> Generation:
    return Generation(answer=sentence, reasoning=reasoning, claims=(Claim(sentence, (chunk_id,)),), confidence=0.9)


def _targets(sentence: str, question: str, gold: Sequence[str]) -> list[Entity]:
    """What a liar who wants to change the answer changes first: the gold answer's entity, then
    entities the question does not already name, then the rest."""
    found = entities(sentence)
    return sorted(found, key=lambda e: (not _is_gold(e.text, gold), _mentions(question, e.text)))


# ---- the headline lies -------------------------------------------------------------------------

def swap_in_passage(question: str, sentence: str, chunk: Chunk, gold: Sequence[str], rng: random.Random,
                    kind: LieKind = LieKind.SWAP_IN_PASSAGE) -> Lie | Skip:
    for target in _targets(sentence, question, gold):
        pool = [e for e in entities(chunk.text) if e.type is target.type and not _same_or_nested(e.text, target.text)
                and not whole_word(e.text).search(sentence) and not _is_gold(e.text, gold)]
        if not pool:
            continue
        new = rng.choice(pool).text
        lie = replace_all(sentence, target.text, new)
        if lie == sentence:
            continue
        reasoning = (f"The answer is in [{chunk.id}].", f"It names {new}.")
        return Lie(kind, _lie_generation(lie, chunk.id, reasoning), sentence, chunk.id,
                   (Change(target.text, new),), (new,))
    return Skip(kind, "no second name or number of the same type in the cited passage")


def role_swap(question: str, sentence: str, chunk: Chunk) -> Lie | Skip:
    found = [e for e in entities(sentence) if e.type in (EntityType.NAME, EntityType.MULTI_NAME)]
    # Two names of one type (two multi-word names, not a person and a nationality).
    # A pair listed together ("designed by A and B") says the same in either order: exchanging it is
    # no lie, so such pairs are not used.
    pairs = [(a, b) for i, a in enumerate(found) for b in found[i + 1:]
             if a.type is b.type and not _same_or_nested(a.text, b.text) and not _listed_together(sentence, a, b)]
    if not pairs:
        return Skip(LieKind.ROLE_SWAP, "fewer than two distinct names of one type in the answer sentence "
                                       "that are not merely listed together")
    # Multi-word names first (people, places, works), then a pair the question does not name both of.
    pairs.sort(key=lambda p: (p[0].type is not EntityType.MULTI_NAME,
                              _mentions(question, p[0].text) and _mentions(question, p[1].text)))
    a, b = pairs[0]
    marker = "\u0000"
    lie = replace_all(replace_all(replace_all(sentence, a.text, marker), b.text, a.text), marker, b.text)
    if lie == sentence:
        return Skip(LieKind.ROLE_SWAP, "the two names could not be exchanged")
    reasoning = (f"The answer is in [{chunk.id}].",)
    return Lie(LieKind.ROLE_SWAP, _lie_generation(lie, chunk.id, reasoning), sentence, chunk.id,
               (Change(a.text, b.text), Change(b.text, a.text)), (a.text, b.text))


def splice(question: str, sentence: str, chunk: Chunk, context: Sequence[Chunk]) -> Lie | Skip:
    """The answer sentence's start, then the end of another passage's most question-like sentence; the claim
    cites both passages. Cut at a comma where there is one, else at the middle word."""
    others = [r for r in ranked_sentences(question, context)
              if r.chunk_id != chunk.id and len(r.text.split()) >= 8 and text_key(r.text) != text_key(sentence)]
    if len(sentence.split()) < 8 or not others:
        return Skip(LieKind.SPLICE, "no second passage with a sentence long enough to splice")
    other = others[0]
    head, tail = _halves(sentence)[0], _halves(other.text)[1]
    lie = f"{head} {tail}"
    if not tail or text_key(lie) in (text_key(sentence), text_key(other.text)):
        return Skip(LieKind.SPLICE, "the splice says what one of its sentences says")
    reasoning = (f"The answer is in [{chunk.id}] and [{other.chunk_id}].",)
    generation = Generation(answer=lie, reasoning=reasoning, claims=(Claim(lie, (chunk.id, other.chunk_id)),),
                            confidence=0.9)
    return Lie(LieKind.SPLICE, generation, sentence, chunk.id, (Change(sentence[len(head):].strip(), tail),), (tail,))


def _halves(sentence: str) -> tuple[str, str]:
    """(start, end) of a sentence: at its first comma past a quarter of it, else at the middle word."""
    text = sentence.rstrip(".")
    comma = text.find(", ", len(text) // 4)
    if 0 < comma < len(text) * 3 // 4:
        return text[:comma], text[comma + 2:] + "."
    words = text.split()
    cut = len(words) // 2
    while 0 < cut < len(words) - 1 and words[cut - 1][:1].isupper() and words[cut][:1].isupper():
        cut += 1        # never inside a name ("Clyde | Tombaugh")
    return " ".join(words[:cut]), " ".join(words[cut:]) + "."


def _listed_together(sentence: str, a: "Entity", b: "Entity") -> bool:
    """Only a comma, "and", "or" or "&" stands between the two names."""
    first, second = sorted((a.text, b.text), key=sentence.find)
    start = sentence.find(first) + len(first)
    between = sentence[start:sentence.find(second, start)] if sentence.find(second, start) >= 0 else "?"
    return re.fullmatch(r"\s*(,|,?\s*and|,?\s*or|&)?\s*", between) is not None


def true_irrelevant(question: str, context: Sequence[Chunk], supporting: frozenset[str], gold: Sequence[str],
                    honest_answers: Sequence[str]) -> Lie | Skip:
    """The most question-like sentence of a passage HotpotQA marks as not supporting the answer, and none the
    honest generators said (honest_answers: their answers and each of their claims, since an answer may be two
    sentences)."""
    said = {text_key(a) for a in honest_answers}
    for scored in ranked_sentences(question, context):
        if scored.chunk_id in supporting or text_key(scored.text) in said:
            continue
        if any(_mentions(scored.text, g) for g in gold) or len(content_words(scored.text)) < 3:
            continue
        reasoning = (f"The answer is in [{scored.chunk_id}].",)
        return Lie(LieKind.TRUE_IRRELEVANT, _lie_generation(scored.text, scored.chunk_id, reasoning), scored.text,
                   scored.chunk_id)
    return Skip(LieKind.TRUE_IRRELEVANT, "no sentence of a non-supporting passage in the context")


def gold_entity(answer: str) -> Entity | None:
    """The gold answer as an entity a liar could swap for another one: a leading number ("3,677
    seated" -> 3,677), or a name (every word capitalised but connectors); None for yes/no or a phrase."""
    answer = answer.strip()
    number = re.match(r"\d[\d,]*(?:\.\d+)?(?=\s|$)", answer)
    if number:
        return Entity(number.group(0), number_type(number.group(0)))
    words = answer.split()
    connectors = {"of", "the", "and", "de", "van", "von", "for", "in"}
    if words and all(w[:1].isupper() or w in connectors for w in words) and words[0][:1].isupper():
        return Entity(answer, name_type(answer))
    return None


def wrong_relevant(question: str, honest_sentence: str, honest_chunk: str, context: Sequence[Chunk],
                   supporting: frozenset[str], gold: Sequence[str], rng: random.Random,
                   comparison: bool = False) -> Lie | Skip:
    """`comparison`: the question names the options (HotpotQA type "comparison"); the other one is the
    most plausible wrong answer. Otherwise another passage's entity, preferring passage titles (entities
    the context is about), then this passage's."""
    target = next((e for e in map(gold_entity, gold) if e is not None), None)
    if target is None:
        return Skip(LieKind.WRONG_RELEVANT, "the gold answer is no name or number (yes/no, a phrase)")
    answer, wanted = target.text, target.type
    by_id = {c.id: c for c in context}
    frames = [(honest_sentence, honest_chunk)] + [(s.text, s.chunk_id) for s in ranked_sentences(question, context)
                                                  if s.chunk_id in supporting] + \
             [(s.text, s.chunk_id) for s in ranked_sentences(question, context)]
    frame = next(((s, cid) for s, cid in frames if cid in by_id and whole_word(answer).search(s)), None)
    if frame is None:
        return Skip(LieKind.WRONG_RELEVANT, "no context sentence states the gold answer")
    sentence, chunk_id = frame

    def candidates(found: Sequence[Entity]) -> list[str]:
        return [e.text for e in found if e.type is wanted and not _is_gold(e.text, gold)
                and not whole_word(e.text).search(sentence)]
    titles = [Entity(t, name_type(t)) for t in (re.sub(r"\s*\(.*\)$", "", c.title) for c in context) if t]
    others = [e for c in context if c.id != chunk_id for e in entities(c.text)]
    pool = ((candidates(entities(question)) if comparison else []) or candidates(titles) or candidates(others)
            or candidates(entities(by_id[chunk_id].text)))
    if not pool:
        return Skip(LieKind.WRONG_RELEVANT, f"no other {wanted.value} in the context")
    new = rng.choice(sorted(set(pool)))
    lie = replace_all(sentence, answer, new)
    if lie == sentence or any(_mentions(lie, g) for g in gold):
        return Skip(LieKind.WRONG_RELEVANT, "the sentence states the gold answer in another form too")
    reasoning = (f"The answer is in [{chunk_id}].", f"It is {new}.")
    return Lie(LieKind.WRONG_RELEVANT, _lie_generation(lie, chunk_id, reasoning), sentence, chunk_id,
               (Change(answer, new),), (new,))


def with_true_quote(lie: Lie) -> Lie:
    """challenge-liar: the same lie, its reasoning quoting the real sentence it came from, which is
    what it shows when asked for its evidence."""
    quote = (f"[{lie.chunk_id}] \"{lie.source}\"",)
    return Lie(lie.kind, Generation(lie.generation.answer, quote + lie.generation.reasoning, lie.generation.claims,
                                    lie.generation.confidence), lie.source, lie.chunk_id, lie.changes, lie.planted)


# ---- legacy ------------------------------------------------------------------------------------
