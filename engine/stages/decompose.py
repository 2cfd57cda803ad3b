"""Rule-based multi-hop question decomposition (no model): which shape a question has, and its hops.

- COMPARISON: two named entities asked the same thing ("Who is older, A or B?", "Are A and B both
  from X?"); one hop per entity, each asking the property of that entity alone.
- BRIDGE: the question is about something described by a nested phrase: a relative clause ("the
  woman who portrayed X"), a relational "of" ("the director of X"), a possessive ("X's country"),
  a participle ("a film starring X"), a contact clause ("the city X was born in") or a name before
  a role ("the It'll Be Me singer"). Hop 0 asks for that thing; the next hop is the question with
  "#1" in its place (MuSiQue's convention). The inner question is decomposed again, so chains of
  nested phrases give 3 or 4 hops.
- SINGLE: everything else. When no rule is sure, SINGLE is the answer: it is today's working path.

It works on tokens and their capitalisation (a run of capitalised words is a name), so all-lower-case
questions mostly stay SINGLE. Deterministic; tens of microseconds per question.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Mapping

from ..errors import InputError
from .model import Decomposition, QuestionShape, SubQuestion

MAX_HOPS = 4
MAX_TOKENS = 80          # longer texts are not questions the rules were written for: SINGLE

WH = frozenset("what which who whom whose when where why how".split())
BE = frozenset("is was are were".split())
DO = frozenset("do does did".split())
AUX = BE | DO | frozenset("has have had can could will would should may might shall".split())
DETS = frozenset("the a an this another".split())
REL = frozenset("who whom whose which that where".split())
PREPS = frozenset("in at on by for from of to with into near during under through after before about "
                  "as over upon within along between".split())
# A subject of a subordinate clause starts after these: "when the area where X is located became ...".
SUBORDINATORS = frozenset("when while after before until since because if".split())
# Lower-case words allowed inside a name when a capitalised word follows ("Journal of X", "Kiss and Tell").
CONNECT = frozenset("of the for de del la le von van der du da y in on a an at to v upon".split())
STOP = WH | AUX | DETS | PREPS | frozenset("and or not no it its these those both".split())
NOT_NAME = WH | AUX | DETS | frozenset("both and or it its these those".split())
# "the R of Y" is a bridge only for relational heads (director, capital); "the city of X" is a name.
PEOPLE = frozenset("""director author writer creator founder co-founder cofounder producer composer
performer singer songwriter lyricist publisher owner president leader captain coach manager spouse
wife husband father mother son daughter brother sister child children parent sibling successor
predecessor designer architect developer manufacturer inventor host editor chairman ceo player
drummer guitarist bassist vocalist frontman narrator illustrator king queen ruler governor mayor
sponsor operator painter sculptor actor actress screenwriter star""".split())
PERSONS = PEOPLE | frozenset("woman man person individual people girl boy lady guy musician politician "
                             "footballer artist athlete".split())
THINGS = frozenset("birthplace hometown capital headquarters mouth source mascot alma".split())
PLACES = frozenset("country city state county town place area region continent nationality team club "
                   "company school university band group home location".split())
CONTACT_HEADS = PLACES - frozenset({"nationality", "home", "location"})
TIME_HEADS = frozenset("year time day date month moment period era season century".split())
VACUOUS = frozenset("name title term type kind sort".split())
PARTICIPLES = frozenset("""born made held built written known found won sung drawn sold taken given seen
begun grown brought bought fought taught sent spent kept located based led used""".split())
PAST = frozenset("became began came went took gave made won lost got saw had held led left fell grew "
                 "rose ran wrote sang met".split())
NAMING = frozenset("known called named titled entitled nicknamed dubbed".split())
OF_SUFFIXES = frozenset("birth death origin citizenship residence".split())

_TOKEN = re.compile(r'"[^"]+"|“[^”]+”|[\w][\w\-\'’&]*[\w]|\w|\S')


class _Tok:
    """One token, with the facts the rules ask about it computed once."""
    __slots__ = ("text", "start", "end", "low", "quoted", "word", "cap", "lower_word")

    def __init__(self, text: str, start: int, end: int) -> None:
        self.text, self.start, self.end, self.low = text, start, end, text.lower()
        self.quoted = text[0] in "\"“"
        self.word = text[0].isalnum() or self.quoted
        self.cap = self.word and (text[0].isupper() or text[0].isdigit() or self.quoted)
        self.lower_word = self.word and not self.cap


def decompose(question: str) -> Decomposition:
    text = " ".join((question or "").split())
    if not any(ch.isalnum() for ch in text):
        raise InputError("the question is empty: there is nothing to decompose")
    if len(_TOKEN.findall(text)) > MAX_TOKENS:
        return Decomposition(QuestionShape.SINGLE, (SubQuestion(text, 0),), "too long to decompose")
    compared = _comparison(text)
    if compared is not None:
        return compared
    chain = _chain(text, MAX_HOPS)
    if len(chain) == 1:
        return Decomposition(QuestionShape.SINGLE, (SubQuestion(text, 0),), "no nested phrase")
    rules = " + ".join(rule for _, rule in chain[1:])
    return Decomposition(QuestionShape.BRIDGE, tuple(SubQuestion(t, i) for i, (t, _) in enumerate(chain)),
                         f"bridge: {rules}")


def fill(sub: SubQuestion, answers: Mapping[int, str]) -> str:
    """The sub-question with "#n" (1-based, MuSiQue's way) replaced by the answer of hop n-1."""
    def put(m: re.Match[str]) -> str:
        hop = int(m.group(1)) - 1
        return answers[hop] if hop in answers else m.group(0)
    return re.sub(r"#(\d+)", put, sub.text)


# ---------------------------------------------------------------- tokens and names

class _Question:
    """The tokens of one question and the facts every rule asks about them."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.toks = [_Tok(m.group(0), m.start(), m.end()) for m in _TOKEN.finditer(text)]
        self.n = len(self.toks)
        self.last = self.n - 1 if self.n and self.toks[-1].text in "?." else self.n
        lead = 1 if self.n > 1 and self.toks[0].low in PREPS else 0
        self.asks = self.n > lead and (self.toks[lead].low in WH | AUX | {"what's", "who's"})
        self.focus = self._focus()
        self.frame, self.frame_end = self._frame_start(), self.last
        if self.last >= 3 and self.low(self.last - 1) in {"who", "what"} and self.low(self.last - 2) in BE:
            self.frame, self.frame_end = 0, self.last - 2     # "The director of X is who?"

    def _focus(self) -> int:
        """The interrogative word when it is not in front: "X is in a country that has how many ...?".
        "what" and "how" are never relative pronouns; otherwise the last wh-word of a statement is it."""
        asking = [j for j, t in enumerate(self.toks) if t.low in {"what", "how", "what's"}]
        if asking:
            return asking[0]
        if self.asks:
            return -1
        # A relative pronoun follows its noun ("an industrialist who"); an interrogative follows a
        # preposition or a verb ("a role as whom", "the banks of which river").
        candidates = [j for j, t in enumerate(self.toks) if t.low in WH and j > 0 and (
            self.toks[j - 1].low in PREPS | AUX or not self.toks[j - 1].word or _verb(self.toks[j - 1]))]
        return candidates[-1] if candidates else -1

    def low(self, j: int) -> str:
        return self.toks[j].low if 0 <= j < self.n else ""

    def span(self, i: int, end: int) -> str:
        return self.text[self.toks[i].start:self.toks[end - 1].end] if end > i else ""

    def _frame_start(self) -> int:
        """Where the answer's description starts in "What/Who is NP?", past a vacuous "the name of"."""
        if self.low(0) in {"what's", "who's"}:
            start = 1
        elif self.low(0) in {"what", "who", "which"} and self.low(1) in BE:
            start = 2
        else:
            return -1
        while True:
            head = _head(self, start)
            if head is None or self.low(head) not in VACUOUS or head != start + 1 or self.low(head + 1) != "of":
                return start
            start = head + 2


def _name_start(q: _Question, i: int) -> bool:
    t = q.toks[i]
    return t.cap and t.low not in WH | AUX | {"both"} and (t.low not in STOP or i > 0)


def _name_end(q: _Question, i: int, allow_and: bool = True) -> int:
    """End of the run of capitalised words (with inner connectors) starting at i; i when there is none."""
    if i >= q.n or not _name_start(q, i):
        return i
    j = i + 1
    while j < q.n:
        if q.toks[j].cap:
            j += 1
            continue
        g = j            # connectors, and the dot of "Mt." or "v.", glue two capitalised words
        while g < q.n and g < j + 3 and (q.low(g) in CONNECT or (allow_and and q.low(g) in {"and", "&"})
                                         or q.toks[g].text in {"'", "’", "-"}
                                         or (q.toks[g].text == "." and len(q.toks[g - 1].text) <= 3)):
            g += 1
        if g > j and g < q.n and q.toks[g].cap:
            j = g + 1
            continue
        break
    run = q.toks[i:j]
    if not any(t.word and t.low not in NOT_NAME for t in run) or (len(run) == 1 and run[0].low in STOP):
        return i
    return j


def _possessive(t: _Tok) -> bool:
    return t.low.endswith(("'s", "’s"))


def _participle(q: _Question, j: int) -> bool:
    """A participle opening a reduced relative: "named for", "sold by", "starring X", "ruling the"."""
    if j + 1 >= q.n or not q.toks[j].lower_word or q.low(j) in STOP:
        return False
    word, nxt = q.low(j), q.toks[j + 1]
    if len(word) > 4 and word.endswith("ing"):
        return nxt.low in DETS or nxt.cap or (nxt.lower_word and nxt.low not in STOP)
    if word in PARTICIPLES or (len(word) > 4 and word.endswith("ed")):
        return (nxt.low in PREPS or nxt.low in DETS) and nxt.low != "of"
    return False


def _verb(t: _Tok) -> bool:
    return t.lower_word and (t.low in AUX or t.low in PARTICIPLES or t.low in PAST or t.low.endswith("ed"))


def _sentence_end(q: _Question, j: int) -> bool:
    t = q.toks[j]
    if t.text in "?!;:":
        return True
    # A full stop ends a sentence, not "Mr." or "v.".
    return t.text == "." and (j == q.n - 1 or (q.toks[j - 1].lower_word and len(q.toks[j - 1].text) > 1))


def _base(word: str) -> str:
    return word[:-1] if word.endswith("s") and not word.endswith("ss") and word not in THINGS else word


def _plural(word: str) -> bool:
    return word.endswith("s") and not word.endswith(("ss", "series")) and word not in THINGS


# ---------------------------------------------------------------- bridge

@dataclass(frozen=True)
class _Phrase:
    """A nested phrase: tokens [start, end), its head noun, the rule and where its relative word is."""
    start: int
    end: int
    head: int
    kind: str
    rel: int = -1


def _chain(text: str, budget: int) -> list[tuple[str, str]]:
    """[(sub-question, rule), ...]: innermost hop first, the question itself last."""
    q = _Question(text)
    found = _find_bridge(q) if budget > 1 else None
    if found is None:
        return [(text, "")]
    inner, outer, rule = found
    inner_chain = _chain(inner, budget - 1)
    return inner_chain + [(outer.replace("#1", f"#{len(inner_chain)}"), rule)]


def _find_bridge(q: _Question) -> tuple[str, str, str] | None:
    for i in range(q.n):
        phrase = _phrase_at(q, i)
        if phrase is None or phrase.end <= phrase.start:
            continue
        # The answer's own description ("Who is the spouse of ...?") is not a hop: look inside it.
        if i == q.frame and phrase.end >= q.frame_end:
            continue
        if i == 0 and phrase.end >= q.last:
            continue
        built = _build(q, phrase)
        if built is not None:
            return built[0], built[1], phrase.kind
    return None


def _head(q: _Question, i: int) -> int | None:
    """The head noun of a determiner phrase at i: "the [Name] [adjectives] head"."""
    if q.low(i) not in DETS:
        return None
    if i + 2 < q.n and q.toks[i + 1].cap and _base(q.low(i + 1)) in PEOPLE and q.low(i + 2) == "of":
        return i + 1                          # "the Captain of ...", "The Leader of ..."
    j, head = _name_end(q, i + 1), None
    while j < q.n and j < i + 8:
        t = q.toks[j]
        if (not t.word or t.quoted or t.low in STOP or t.low in REL or _possessive(t)
                or (head is not None and _participle(q, j))):
            break
        if t.lower_word:
            head = j
        j += 1
    if head is None and j > i + 1 and q.toks[j - 1].cap and (
            q.low(j) in REL or (q.low(j) == "," and q.low(j + 1) in REL)):
        head = j - 1                          # a name before a relative clause: "the Senator who ..."
    return head


def _phrase_at(q: _Question, i: int) -> _Phrase | None:
    if q.low(i) in DETS:
        return _determiner_phrase(q, i)
    if _name_start(q, i) and (i == 0 or not q.toks[i - 1].cap):
        end = _name_end(q, i)
        if end > i and _possessive(q.toks[end - 1]):
            return _possessed(q, i, end)
    return None


def _determiner_phrase(q: _Question, i: int) -> _Phrase | None:
    h = _head(q, i)
    if h is None:
        return None
    head, k, prev = q.low(h), h + 1, q.low(i - 1)
    be_support = prev in BE and i != q.frame           # "When was the clock built ...?"
    subject = (i == 0 or prev in AUX or prev in SUBORDINATORS) and i != q.frame
    named_end = _name_end(q, i + 1)
    if named_end >= i + 3 or (named_end == i + 2 and q.toks[i + 1].quoted):
        for role in (named_end, named_end + 1):          # "the It'll Be Me singer", "the X bass player"
            if role < q.n and q.toks[role].lower_word and _base(q.low(role)) in PEOPLE - {"star"} \
                    and all(t.lower_word for t in q.toks[named_end:role]):
                return _Phrase(i, role + 1, role, "name before a role")
    if q.low(k) == "," and q.low(k + 1) in {"that", "which", "who"} and k + 1 != q.focus:
        k += 1                                       # "the festival, that is presented by ..., held?"
    nxt = q.low(k)
    if nxt == "of" and q.low(i) == "the" and (_base(head) in PEOPLE or head in THINGS):
        end = _object_end(q, k + 1)
        if prev in DO and end >= q.last and end - 1 > k + 1 and q.toks[end - 1].lower_word:
            end -= 1                                 # "does the Captain of X play?": "play" is the main verb
        return _Phrase(i, end, h, "relational of") if end > k + 1 else None
    if head in TIME_HEADS:
        return None
    if (nxt in REL and k != q.focus) or (nxt in PREPS and q.low(k + 1) in {"which", "whom"} and k + 1 != q.focus):
        rel = k if nxt in REL else k + 1
        verb_first = q.low(rel) in {"who", "which", "that"}
        return _Phrase(i, _clause_end(q, rel + 1, subject, prev, verb_first), h, "relative clause", rel)
    naming = q.low(k) in NAMING and (q.toks[k + 1].cap or q.low(k + 1) == "as")   # "a plan known as X"
    if _participle(q, k) and not naming and not (be_support and not q.low(k).endswith("ing")):
        return _Phrase(i, _clause_end(q, k, subject, prev), h, "participle")
    if head in CONTACT_HEADS:
        name_end = _name_end(q, k + 1 if nxt in DETS else k)
        if name_end > k and name_end < q.n and _verb(q.toks[name_end]):
            return _Phrase(i, _clause_end(q, k, subject, prev), h, "contact clause")
    return None


def _possessed(q: _Question, start: int, j: int) -> _Phrase | None:
    """ "X's [adjectives] country [of birth]", with a relational head."""
    head = None
    while j < q.n and j < start + 8 and q.toks[j].lower_word and q.low(j) not in STOP:
        head, j = j, j + 1
    if head is None:
        return None
    word = q.low(head)
    if not ({word, _base(word)} & (PEOPLE | THINGS | PLACES)):
        return None
    if q.low(j) == "of" and q.low(j + 1) in OF_SUFFIXES:
        j += 2
    return _Phrase(start, j, head, "possessive")


def _object_end(q: _Question, k: int) -> int:
    """End of the object of a relational "of": a name, or a determiner phrase (maybe nested itself)."""
    if q.low(k) in DETS:
        nested = _phrase_at(q, k)
        if nested is not None:
            return nested.end
        h = _head(q, k)
        j = h + 1 if h is not None else k + 1
        named = _name_end(q, j)
        if named > j:
            return named
        if h is None:
            return _name_end(q, k + 1)
        tail = _name_end(q, j + 1) if q.low(j) == "of" else j      # "the episode guest stars of The Hard Easy"
        return tail if tail > j + 1 else j
    end = _name_end(q, k)
    if end > k and _possessive(q.toks[end - 1]):
        nested = _possessed(q, k, end)
        return nested.end if nested else end
    return end


def _clause_end(q: _Question, k: int, subject: bool, prev: str, verb_first: bool = True) -> int:
    """Where a clause starting at k stops: a sentence end, a comma, or (for a subject) the main verb."""
    j, verb_seen, nested = k, False, False
    while j < q.n:
        t = q.toks[j]
        if _sentence_end(q, j):
            break
        if t.text == "," and not (0 < j < q.n - 1 and q.toks[j - 1].cap and q.toks[j + 1].cap):
            break
        if subject and verb_seen and not nested and j > k:
            before = q.toks[j - 1]
            after_name = before.cap and not _possessive(before)
            if t.lower_word and t.low in AUX:
                break                                        # "The arena where X played ... can seat"
            if _verb(t) and (after_name or (_verb(before) and before.low not in AUX)):
                break                                        # "who recruited X managed", "is located became"
            if prev in DO and after_name and t.lower_word and t.low not in STOP:
                break                                        # "did the man who prepared "X" use"
        if t.low in REL and j > k:
            nested = True                                    # a clause inside: its verbs are not ours
        if _verb(t) or (verb_first and j == k and t.lower_word and t.low not in DETS):
            verb_seen = True
        j += 1
    at_end = j >= q.last
    if subject and at_end and j - 1 > k + 1 and q.toks[j - 1].lower_word:
        if prev in DO or (prev in BE and _verb(q.toks[j - 1])):
            j -= 1                                           # "When did <clause> start?", "Where is <clause> based?"
    return j


def _build(q: _Question, p: _Phrase) -> tuple[str, str] | None:
    """(hop 0, the question with "#1") for a nested phrase, or None when it cannot be asked alone."""
    text, toks = q.text, q.toks
    start_c, end_c = toks[p.start].start, toks[p.end - 1].end
    head = q.low(p.head)
    who = "Who" if head in PERSONS or _base(head) in PERSONS else "What"
    be = "are" if _plural(head) else "is"
    holds_focus = p.start <= q.focus < p.end
    subject_relative = (p.kind == "relative clause" and q.low(p.rel) in {"who", "which", "that"}
                        and p.rel + 1 < q.n and toks[p.rel + 1].lower_word and q.low(p.rel + 1) not in DETS)
    if holds_focus:
        if not subject_relative:
            return None
        # "X is in a country that has how many ...?": hop 0 is the main clause, hop 1 the relative one.
        described = q.span(p.start + 1, p.head + 1)
        inner = text[:start_c] + f"which {described}?"
        outer = "#1 " + text[toks[p.rel + 1].start:]
        return _tidy(inner), _tidy(outer)
    if p.kind == "name before a role":
        named_end = _name_end(q, p.start + 1)
        inner = f"Who {be} the {q.span(named_end, p.end)} of {q.span(p.start + 1, named_end)}?"
    elif p.kind == "possessive":
        owner_end = next(j for j in range(p.start, p.end) if _possessive(toks[j]))
        owner = re.sub(r"['’]s$", "", q.span(p.start, owner_end + 1))
        inner = f"{who} {be} the {q.span(owner_end + 1, p.end)} of {owner}?"
    elif subject_relative:
        rest = text[toks[p.rel + 1].start:end_c]
        asker = "Who" if q.low(p.rel) == "who" or who == "Who" else "What " + q.span(p.start + 1, p.head + 1)
        inner = f"{asker} {rest}?"
    else:
        span = text[start_c:end_c]
        inner = f"{who} {be} {span[0].lower() + span[1:] if q.low(p.start) in DETS else span}?"
    outer = text[:start_c] + "#1" + text[end_c:]
    return _tidy(inner), _tidy(outer)


def _tidy(text: str) -> str:
    text = re.sub(r"#(\d+)\s*,\s*(?=[a-z])", r"#\1 ", text)     # "#1, become" -> "#1 become"
    text = re.sub(r"\s+([?,])", r"\1", text)
    text = re.sub(r"[?.]*\?$", "?", " ".join(text.split()))
    return text[0].upper() + text[1:] if text and text[0].islower() else text


# ---------------------------------------------------------------- comparison

def _comparison(text: str) -> Decomposition | None:
    q = _Question(text)
    return _either_or(q) or _both_and(q)


def _entity(q: _Question, i: int, end: int) -> str:
    while i < end and q.low(i) in DETS | {"both"}:
        i += 1
    return q.span(i, end).strip(" ,")


def _either_or(q: _Question) -> Decomposition | None:
    """ "Who is older, A or B?" and "Is the A or the B the genus of more species?"."""
    if not q.asks:
        return None
    for o in (j for j, t in enumerate(q.toks) if t.low == "or"):
        b_start = o + 1 + (q.low(o + 1) in DETS)
        b_end = _name_end(q, b_start)
        while b_end < q.n - 1 and q.toks[b_end].text == "," and _name_end(q, b_end + 1) >= q.last - 1 \
                and _name_end(q, b_end + 1) > b_end + 1:
            b_end = _name_end(q, b_end + 1)                         # "McFarland, USA"
        if b_end == b_start:
            continue
        if b_end < q.last and q.toks[b_end].text == "." and b_end + 1 >= q.last:
            b_end += 1                                             # "Paramount Pictures, Inc."
        comma = max((j for j in range(o) if q.toks[j].text == ","), default=-1)
        if comma >= 0 and b_end >= q.last and all(t.word or t.text in ".'’-" for t in q.toks[comma + 1:o]):
            a_start, prop = comma + 1, q.text[:q.toks[comma].start]
        else:
            a_start = o
            while a_start > 0 and (q.toks[a_start - 1].cap or q.low(a_start - 1) in CONNECT):
                a_start -= 1
            while a_start < o and not _name_start(q, a_start):
                a_start += 1
            if a_start == o or _name_end(q, a_start) < o:
                continue
            prop = q.text[:q.toks[a_start].start] + " " + q.text[q.toks[b_end - 1].end:]
        entities = [_entity(q, a_start, o), _entity(q, o + 1, b_end)]
        return _compare(entities, prop, "either-or comparison")
    return None


def _both_and(q: _Question) -> Decomposition | None:
    """ "Are A and B both from X?", "Were A and B of the same nationality?", "Where are A and B located?"."""
    for o in (j for j, t in enumerate(q.toks) if t.low == "and" and j > 0):
        b_start = o + 1 + (q.low(o + 1) in DETS)
        b_end = _name_end(q, b_start, allow_and=False)
        if b_end - b_start > 1 and b_end >= q.last and re.search(r"(an|ese|ish|ch|ic)$", q.low(b_end - 1)):
            b_end -= 1                        # "Are A and Ed Wood American?": the last word is the property
        a_end = o - 1 if q.toks[o - 1].text == "," else o
        a_start = a_end
        while a_start > 0 and (q.toks[a_start - 1].cap or (q.low(a_start - 1) in CONNECT | {"."} and a_start > 1
                                                           and q.toks[a_start - 2].cap)):
            a_start -= 1
        while a_start < a_end and not _name_start(q, a_start):
            a_start += 1
        if b_end == b_start or a_start == a_end or _name_end(q, a_start, allow_and=False) < a_end:
            continue
        before = [t.low for t in q.toks[:a_start] if t.low not in DETS | {"both"}]
        after = " ".join(t.low for t in q.toks[b_end:])
        # "Is Pride and Prejudice a novel?" names one title: ask for a plural verb or a comparing word.
        marked = re.search(r"\b(both|same|different|in common|similar)\b", after) is not None
        if not (marked or q.low(0) == "both" or (before and before[-1] in {"are", "were", "do", "have"})):
            continue
        prop = q.text[:q.toks[a_start].start] + " ~ " + (q.text[q.toks[b_end].start:] if b_end < q.n else "")
        return _compare([_entity(q, a_start, a_end), _entity(q, b_start, b_end)], prop, "both-and comparison")
    return None


_SINGULAR = {"are": "is", "were": "was", "do": "does", "have": "has"}
_PROPERTY_TEMPLATES = (
    (r"\b(older|younger|oldest|youngest|born (first|earlier|later|before|after))\b", "When was {e} born?"),
    (r"\b(died|death|passed away)\b", "When did {e} die?"),
    (r"\b(taller|shorter|height)\b", "How tall is {e}?"),
    (r"\b(?:more|fewer|most|less)\s+(?:individual\s+)?([a-z]+)", "How many {1} does {e} have?"),
    (r"\b(?:higher|lower|larger|bigger|greater|smaller|longer)\s+([a-z][a-z ]*?)(?:,|$| than)",
     "What is the {1} of {e}?"),
    (r"\bthe same ([a-z][a-z ]*?)(?:\?|,|$| as)", "What is the {1} of {e}?"),
    (r"\bdifferent ([a-z][a-z ]*?)(?:\?|,|$)", "What is the {1} of {e}?"),
    (r"\b(?:was|were|is)\s+([a-z]+(?:ed|en|t))\b.*\b(first|earlier|later|recently|before)\b", "When was {e} {1}?"),
    (r"\bcame out\b", "When did {e} come out?"),
    (r"\b(first|earlier|later|recently|newer|older)\b", "When was {e}?"),
)


def _ask(prop: str, entity: str) -> str:
    """One entity's sub-question: a template for a known property, else the question around the entity."""
    low = " ".join(prop.lower().replace("?", " ").split())
    for pattern, template in _PROPERTY_TEMPLATES:
        m = re.search(pattern, low)
        if m:
            return template.replace("{e}", entity).replace("{1}", (m.group(1) or "").strip() if m.groups() else "")
    words = [w for w in prop.replace("?", " ").split() if w.lower() != "both"]
    if "~" in words and words[0] != "~" and words[0].lower() in AUX | WH | PREPS:
        pair = words.index("~")                          # "Are ~ from X?" -> "Is Local H from X?"
        verb = next((i for i in range(pair) if words[i].lower() in _SINGULAR), None)
        if verb is not None:
            singular = _SINGULAR[words[verb].lower()]
            words[verb] = singular.capitalize() if verb == 0 else singular
        return _tidy(" ".join(words).replace("~", entity) + "?")
    return _tidy(f"{entity} " + " ".join(w for w in words if w != "~").strip(" ,."))


def _compare(entities: list[str], prop: str, reason: str) -> Decomposition:
    hops = tuple(SubQuestion(_ask(prop, e), i, e) for i, e in enumerate(entities))
    return Decomposition(QuestionShape.COMPARISON, hops, reason)
