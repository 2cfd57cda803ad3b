"""Three honest generators that differ, so that agreement in the evaluation has to be earned.

- extractive: engine/agents/extractive.py's ExtractiveGenerator (the best sentence by rarity-weighted
  question words, over the whole context);
- focused-passage: first the passage (BM25-style over passage words, the question's words in the
  passage title counting double), then the sentence of that passage with the most question words;
  it often quotes the same sentence as the extractive one, and sometimes a different, true one;
- paraphrase: the extractive generator's sentence stated in other words (parentheticals become
  appositives, synonyms from a fixed table, a leading or trailing time phrase moved, a trivial
  passive turned active), keeping every number, name and negation, citing the same chunk.

Every generator only ever states what its cited sentence says: its claims are true by construction.
"""
from __future__ import annotations

import enum
import math
import re
from collections import Counter
from dataclasses import dataclass
from typing import Protocol, Sequence

from engine.agents.extractive import ExtractiveGenerator
from engine.text import STOPWORDS, content_words, sentences
from engine.types import Chunk, Claim, Generation


class HonestKind(str, enum.Enum):
    EXTRACTIVE = "extractive"
    FOCUSED = "focused-passage"
    PARAPHRASE = "paraphrase"


class HonestGenerator(Protocol):
    def generate(self, query: str, context: tuple[Chunk, ...]) -> Generation: ...


NO_ANSWER = Generation(answer="", reasoning=("No context sentence shares a content word with the question.",),
                       claims=(), confidence=0.0)


class FocusedPassageGenerator:
    """Passage first, sentence second: a different selection strategy from ExtractiveGenerator's."""

    K1 = 1.2             # BM25 term-frequency saturation
    TITLE_WEIGHT = 2.0   # a question word in the title names the entity the passage is about

    def generate(self, query: str, context: tuple[Chunk, ...]) -> Generation:
        wanted = set(content_words(query))
        if not context or not wanted:
            return NO_ANSWER
        bags = [Counter(content_words(c.text)) for c in context]
        idf = {w: math.log(1 + len(context) / (1 + sum(w in bag for bag in bags))) for w in wanted}

        def passage_score(chunk: Chunk, bag: Counter) -> float:
            body = sum(idf[w] * bag[w] * (self.K1 + 1) / (bag[w] + self.K1) for w in wanted if bag[w])
            title = sum(idf[w] for w in wanted & set(content_words(chunk.title)))
            return body + self.TITLE_WEIGHT * title

        scores = [passage_score(c, bag) for c, bag in zip(context, bags)]
        best = max(range(len(context)), key=lambda i: (scores[i], -i))
        if scores[best] <= 0:
            return NO_ANSWER
        chunk = context[best]
        units = sentences(chunk.text)
        if not units:
            return NO_ANSWER
        hits = [len(wanted & set(content_words(s))) for s in units]
        # No sentence shares a word: the lead sentence, which defines the passage's title entity.
        pick = max(range(len(units)), key=lambda i: (hits[i], -i))
        sentence = units[pick]
        reasoning = (f"The passage most about the question is [{chunk.id}] ({chunk.title or 'untitled'}).",
                     f"Its sentence {pick + 1} shares {hits[pick]} question word(s).",
                     "The answer is that sentence, quoted from the context.")
        return Generation(answer=sentence, reasoning=reasoning, claims=(Claim(sentence, (chunk.id,)),),
                          confidence=round(min(1.0, hits[pick] / len(wanted)), 3))


# ---- paraphrasing ------------------------------------------------------------------------------

class Edit(str, enum.Enum):
    PARENTHETICAL = "parenthetical"      # "(born 1966)" -> ", born 1966,"; "(CDP)" dropped
    SYNONYM = "synonym"
    MOVED_PHRASE = "moved-phrase"        # "In 1994, X did Y." <-> "X did Y in 1994."
    ACTIVE_VOICE = "active-voice"        # "X was directed by Y." -> "Y directed X."
    LEAD_IN = "lead-in"                  # nothing else applied: "Notably, ..."


@dataclass(frozen=True)
class Paraphrase:
    source: str
    text: str
    edits: tuple[Edit, ...]


# Lower-case words only (never inside a name), none a number or a negation.
SYNONYMS = {
    "film": "movie", "films": "movies", "located": "situated", "began": "started", "largest": "biggest",
    "approximately": "about", "established": "founded", "famous": "well known", "currently": "now",
    "television": "TV", "song": "track", "songs": "tracks", "novel": "book", "novels": "books",
    "author": "writer", "singer": "vocalist", "company": "firm", "often": "frequently", "several": "a number of",
    "popular": "well-liked", "died": "passed away", "known as": "called", "served as": "worked as",
    "best known for": "most famous for", "member of": "part of", "began his": "started his",
    "began her": "started her", "starring": "featuring", "released": "issued", "situated": "located",
    "written by": "authored by", "directed by": "helmed by", "named after": "called after", "debut": "first",
    "band": "group", "former": "one-time", "numerous": "many", "various": "several", "primarily": "mainly",
    "mostly": "largely", "originally": "at first", "later": "afterwards", "previously": "earlier",
    "award": "prize", "awards": "prizes", "founded": "set up", "created": "made", "premiered": "first aired",
    "current": "present", "including": "such as", "consists of": "is made up of", "highest": "top",
    "received": "got", "competed": "took part", "professional": "pro", "located in": "situated in",
}
_SYNONYM = re.compile(r"\b(" + "|".join(sorted((re.escape(k) for k in SYNONYMS), key=len, reverse=True)) + r")\b")
_PAREN = re.compile(r"\s+\(([^()]*)\)")        # after a space: "(CHOH)" inside a formula stays
_NESTED = re.compile(r"\([^()]*\(")
_ABBREVIATION = re.compile(r"^[A-Z][A-Z.&-]{1,7}$")
_LEADING_PHRASE = re.compile(r"^(In|On|During|By|After|Before|Since|As of) ([^,]{2,40}), (.+?)([.!?]?)$")
_TRAILING_YEAR = re.compile(r"^(.+?),? in (\d{4})([.!?]?)$")
_PASSIVE = re.compile(r"^(?P<subj>[^,()]+?) (?:was|were) (?P<verb>directed|written|produced|founded|created|designed|"
                      r"built|developed|published|composed|discovered|invented|painted|formed) by "
                      r"(?P<agent>[A-Z][\w.'’-]*(?:\s+(?:[A-Z][\w.'’-]*|of|de|van|von))*)(?P<end>[.!?]?)$")
MAX_SYNONYMS = 3
PAST_TENSE = {"written": "wrote"}     # the other passive participles of _PASSIVE are their past tense too


def _lower_first(text: str) -> str:
    """Lower-cases the first word when it is a function word ("The", "It"): a name keeps its capital."""
    first = text.split(" ", 1)[0]
    return text[0].lower() + text[1:] if first.lower() in STOPWORDS else text


def _upper_first(text: str) -> str:
    return text[:1].upper() + text[1:]


def _parentheticals(text: str) -> str:
    if _NESTED.search(text) or text.count("(") != text.count(")"):
        return text      # nested or broken brackets: no rewrite is sure to keep every fact in place
    def repl(match: re.Match) -> str:
        inner = match.group(1).strip()
        if not inner or _ABBREVIATION.match(inner):   # an abbreviation repeats the name before it
            return ""
        # A semicolon outside brackets would split the sentence into separate claims.
        return f", {inner.replace(';', ',')},"
    out = _PAREN.sub(repl, text)
    out = re.sub(r",\s*,", ",", out)
    return re.sub(r",\s*([.!?;:])", r"\1", out).replace(" ,", ",")


def _synonyms(text: str) -> tuple[str, int]:
    count = 0

    def repl(match: re.Match) -> str:
        nonlocal count
        word = match.group(1)
        if count >= MAX_SYNONYMS or SYNONYMS[word] == word:
            return word
        count += 1
        return SYNONYMS[word]
    return _SYNONYM.sub(repl, text), count


def _move_phrase(text: str) -> str | None:
    lead = _LEADING_PHRASE.match(text)
    if lead:
        word, phrase, rest, end = lead.groups()
        return f"{_upper_first(rest)} {word.lower()} {phrase}{end or '.'}"
    trail = _TRAILING_YEAR.match(text)
    if trail and "," not in trail.group(1)[-3:]:
        rest, year, end = trail.groups()
        return f"In {year}, {_lower_first(rest)}{end or '.'}"
    return None


def _active_voice(text: str) -> str | None:
    match = _PASSIVE.match(text)
    if not match:
        return None
    agent, end = match["agent"], match["end"]
    if agent.endswith(".") and not end:     # the sentence's full stop, not an initial
        agent, end = agent[:-1], "."
    verb = PAST_TENSE.get(match["verb"], match["verb"])
    return f"{agent} {verb} {_lower_first(match['subj'])}{end or '.'}"


def paraphrase(sentence: str) -> Paraphrase:
    """The sentence in other words; every edit is meaning-preserving, and which ones applied is recorded."""
    text, edits = sentence.strip(), []
    changed = _parentheticals(text)
    if changed != text:
        text, edits = changed, edits + [Edit.PARENTHETICAL]
    active = _active_voice(text)
    if active:
        text, edits = active, edits + [Edit.ACTIVE_VOICE]
    else:
        moved = _move_phrase(text)
        if moved:
            text, edits = moved, edits + [Edit.MOVED_PHRASE]
    text, swapped = _synonyms(text)
    if swapped:
        edits.append(Edit.SYNONYM)
    if not edits:
        text, edits = f"Notably, {_lower_first(text)}", [Edit.LEAD_IN]
    return Paraphrase(sentence, " ".join(text.split()), tuple(edits))


class ParaphraseGenerator:
    """ExtractiveGenerator's selection, each claim restated by `paraphrase`, citations unchanged."""

    def __init__(self, selector: ExtractiveGenerator | None = None) -> None:
        self.selector = selector or ExtractiveGenerator()

    def generate(self, query: str, context: tuple[Chunk, ...]) -> Generation:
        quoted = self.selector.generate(query, context)
        if not quoted.answer:
            return quoted
        claims = tuple(Claim(paraphrase(c.text).text, c.citations) for c in quoted.claims)
        # Sentence by sentence: an extractive answer may be two sentences that belong together.
        return Generation(answer=" ".join(paraphrase(s).text for s in sentences(quoted.answer)),
                          reasoning=quoted.reasoning[:-1] + ("The answer restates that sentence in other words.",),
                          claims=claims, confidence=quoted.confidence)


def honest_fleet() -> dict[HonestKind, HonestGenerator]:
    return {HonestKind.EXTRACTIVE: ExtractiveGenerator(), HonestKind.FOCUSED: FocusedPassageGenerator(),
            HonestKind.PARAPHRASE: ParaphraseGenerator()}


def generate_all(query: str, context: Sequence[Chunk]) -> dict[HonestKind, Generation]:
    return {kind: gen.generate(query, tuple(context)) for kind, gen in honest_fleet().items()}
