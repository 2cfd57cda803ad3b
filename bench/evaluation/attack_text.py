"""The attack builders' own text helpers: sentences, words, content words, stopwords, word overlap.

Written apart from the defence's text module (engine.text), which the monitors and verifiers read text with,
and never compared with it: a lie made with the defence's own reading of a text (where a sentence ends, which
words carry its content) would be built to the rule that checks it (DESIGN.md §9). An import-linter contract
in pyproject.toml keeps the lie and attack builders away from engine.text.

Plain rules, no model:
- a sentence ends at ".", "!" or "?" (with any closing quotes or brackets) followed by white space and a
  capital, a digit or an opening quote, or at a blank line; not after a title ("Dr.", "St."), a single
  letter ("J. R. R. Tolkien"), a short form followed by a number ("No. 5", "c. 1500"), an elision mark
  ("[...]"), and, after a dotted acronym
  ("U.S.") or a company suffix ("Inc."), only when the next word is a function word ("... in the U.S. The
  next year") and not a name ("the U.S. Army"). A decimal point ("3.5") never ends one (no space follows it).
- a word is a run of letters and digits, with inner apostrophes ("O'Brien") and a number's decimal point
  or thousands comma ("1,200", "3.5") kept inside it.
- content words: the lower-cased words, possessive "'s" dropped, minus STOPWORDS (English function words).
"""
from __future__ import annotations

import re

# English function words: articles and determiners, pronouns, prepositions, conjunctions, auxiliary and modal
# verbs, question words, and the commonest adverbs that carry no topic. Written for this module.
STOPWORDS = frozenset("""
a an the this that these those some any each every either neither both all no none such other another own
same
i me my mine myself we us our ours ourselves you your yours yourself yourselves he him his himself she her
hers herself it its itself they them their theirs themselves one ones
who whom whose which what whatever whichever whoever when whenever where wherever why how
am is are was were be been being have has had having do does did doing done
will would shall should can could may might must ought
of in on at by for with without within to from into onto upon out off over under above below up down
about around across along among amongst against between beyond through throughout during before after
since until till toward towards via per than as like unlike near behind beside besides despite except
inside outside
and or but nor so yet if then else because although though while whereas unless whether once
not also too very just only even still already again ever never here there now thus hence however
more most less least much many few several quite rather
don't doesn't didn't isn't aren't wasn't weren't won't wouldn't can't cannot couldn't shouldn't
it's that's there's he's she's they're we're i'm you're i've we've they've i'd he'd she'd they'd
""".split())

# Short forms that stand before a name: a period after one never ends the sentence.
_TITLES = frozenset("""mr mrs ms mx dr prof st mt ft gen col lt sgt capt cmdr adm maj gov sen rep rev hon
pres supt insp fr br sra srta mme mlle messrs""".split())
# Short forms that stand before a number ("No. 5", "c. 1500", "Jan. 12"): never end a sentence before a digit.
_BEFORE_NUMBERS = frozenset("""no nos vol vols fig figs pp p c ca approx est op ch chap art sec para ed eds
jan feb mar apr jun jul aug sep sept oct nov dec""".split())
# Short forms that often end a sentence too ("... Apple Inc. The firm ..."; "Sammy Davis Jr. He"): end one only
# before a function word.
_ENDINGS = frozenset("inc ltd co corp plc llc bros jr sr al vs cf viz".split())

_END = re.compile(r"[.!?]+[\"'”’)\]]*")
_NEXT = re.compile(r"\s+([\"'“‘(\[]?)(\S*)")
_PARAGRAPH = re.compile(r"\n[ \t]*\n\s*")
_WORD = re.compile(r"\d+(?:[.,]\d+)+|[^\W_]+(?:['’][^\W_]+)*")
_INITIAL = re.compile(r"[A-Za-z]")     # "J." of "J. R. R. Tolkien", "b." of "Eleazar b. Hisma"
_ACRONYM = re.compile(r"(?:[A-Za-z]{1,2}\.)+[A-Za-z]{1,2}")   # "U.S" "Ph.D" "e.g" "a.m" (its last period is the end)
_POSSESSIVE = re.compile(r"['’]s$")


def sentences(text: str) -> list[str]:
    """The text's sentences, in order, each a verbatim (edge-trimmed) slice of the text; none for blank text."""
    out: list[str] = []
    for block in _blocks(text):
        start = 0
        for end in _ends(block):
            piece = block[start:end].strip()
            if piece:
                out.append(piece)
            start = end
        rest = block[start:].strip()
        if rest:
            out.append(rest)
    return out


def _blocks(text: str) -> list[str]:
    return [b for b in _PARAGRAPH.split(text) if b.strip()]


def _ends(block: str) -> list[int]:
    ends = []
    for match in _END.finditer(block):
        if block[match.start() - 1:match.start()] in ("[", "("):
            continue           # an elision mark, "[...]", ends no sentence
        after = _NEXT.match(block, match.end())
        if after is None:      # no white space after it: a decimal point, a dotted acronym's inner period, the end
            continue
        opener, following = after.group(1), after.group(2)
        if not following and not opener:
            continue
        first = (following[:1] or "")
        if not (first.isupper() or first.isdigit() or opener):
            continue           # "approx. twenty", "e.g. the", "U.S. and"
        if "." in match.group(0)[:1] and not _period_ends(block[:match.start()], following):
            continue
        ends.append(match.end())
    return ends


def _period_ends(before: str, following: str) -> bool:
    """Whether a period after `before` ends the sentence, given the word that follows it."""
    token = re.search(r"(\S*)$", before).group(1).lstrip("\"'“‘([")
    if not token:
        return True
    bare = token.lower()
    next_word = re.sub(r"[^\w'’]", "", following).lower()
    if bare in _TITLES or _INITIAL.fullmatch(token):
        return False
    if bare in _BEFORE_NUMBERS:
        return not following[:1].isdigit()
    if bare in _ENDINGS or _ACRONYM.fullmatch(token):
        return next_word in STOPWORDS
    return True


def words(text: str) -> list[str]:
    """The text's words as written (case kept), in order: letters and digits, inner apostrophes and a number's
    decimal point or thousands comma kept ("O'Brien", "3.5", "1,200"); hyphens and other marks split."""
    return _WORD.findall(text)


def content_words(text: str) -> list[str]:
    """The words that carry the text's content: lower-cased, possessive "'s" dropped, minus STOPWORDS, in order
    (repeats kept)."""
    out = []
    for word in words(text):
        lowered = word.lower().replace("’", "'")
        if lowered in STOPWORDS:
            continue
        lowered = _POSSESSIVE.sub("", lowered)
        if lowered and lowered not in STOPWORDS:
            out.append(lowered)
    return out


def share_of_words(wanted_text: str, text: str) -> float:
    """The share of wanted_text's distinct content words that the text holds among its own content words, from
    0.0 to 1.0; 0.0 when wanted_text has no content word (nothing is wanted, so nothing is found)."""
    wanted = set(content_words(wanted_text))
    if not wanted:
        return 0.0
    return len(wanted & set(content_words(text))) / len(wanted)
